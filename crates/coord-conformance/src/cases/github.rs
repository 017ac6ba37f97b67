//! Requirement "Verification Gateway", scenario "GitHub webhook processing": a push
//! delivered by GitHub becomes a changeset of the branch's agent, routed to
//! verification; deliveries are recorded first (a redelivery is a duplicate, one left
//! unprocessed is acted on later) and refused when they do not read.

use crate::cases::profiles::run;
use crate::{Backend, Harness, agent, operator};
use coord_domain::verification::{ChangesetStatus, GetVerificationRequest, RunStatus, VerificationPolicy};
use coord_domain::{Caller, CoordResult, ErrorCode};
use coord_github::webhook::{Delivery, DeliveryStatus, GithubDeliveryRequest, GithubDeliveryResult};
use coord_service::CoordinationExt as _;
use coord_service::ops::{github as ops, verification};
use coord_store::OpCtx;
use serde_json::{Value, json};

/// Deliveries reach the coordinator itself: their only door is `POST /webhook/github`
/// (tested with signed deliveries in coord-http), not MCP or an API route.
async fn deliver(h: &Harness, id: &str, event: &str, payload: Value) -> CoordResult<GithubDeliveryResult> {
    coord_service::call::<ops::ReceiveGithubDelivery, _>(
        &h.local,
        &coord_domain::access::Principal::local(webhook()),
        GithubDeliveryRequest {
            delivery_id: id.into(),
            event: event.into(),
            payload,
        },
    )
    .await
}

/// The webhook door calls as an operator; locally, the person at the terminal.
fn webhook() -> Caller {
    operator("github-webhook")
}

fn push(branch: &str, after: &str) -> Value {
    json!({
        "ref": format!("refs/heads/{branch}"), "before": "0000000000000000000000000000000000000000", "after": after,
        "created": false, "deleted": false, "forced": false,
        "commits": [
            {"id": after, "distinct": true, "added": ["src/auth/mfa.rs"], "removed": ["docs/old.md"],
             "modified": ["src/main.rs"]}
        ],
        "head_commit": {"id": after}, "pusher": {"name": "octocat", "email": "octocat@github.com"},
        "sender": {"login": "octocat", "id": 1}, "repository": {"id": 1296269, "full_name": "octocat/Hello-World"}
    })
}

pub async fn github_pushes_become_changesets(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let root = operator("root");
    for p in [
        json!({"name": "lint", "tier": 0, "executor": "inline", "patterns": ["**/*.rs"], "command": ["cargo", "clippy"]}),
        json!({"name": "security", "tier": 4, "executor": "manual", "patterns": ["src/auth/**"]}),
    ] {
        let p: VerificationPolicy = serde_json::from_value(p).unwrap();
        run::<verification::SetVerificationPolicy>(&h, &root, p).await.unwrap();
    }
    let ping = deliver(
        &h,
        "d-ping",
        "ping",
        json!({"zen": "Design for failure.", "hook_id": 1}),
    )
    .await
    .unwrap();
    assert_eq!((ping.status, ping.duplicate), (DeliveryStatus::Ignored, false));

    let sha = "9fceb02d0ae598e95dc970b74767f19372d61af8";
    let first = deliver(&h, "d-1", "push", push("agent/claude-1/42", sha))
        .await
        .unwrap();
    assert_eq!(first.status, DeliveryStatus::Processed, "{first:?}");
    let id = first.changeset_id.clone().expect("a changeset");
    let cs = run::<verification::GetVerification>(
        &h,
        &agent("observer"),
        GetVerificationRequest {
            changeset_id: id.clone(),
            diff: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (
            cs.changeset.agent_id.as_str(),
            cs.changeset.source.as_str(),
            cs.changeset.branch.as_deref()
        ),
        ("github:octocat", "github", Some("agent/claude-1/42"))
    );
    assert_eq!(cs.changeset.commit.as_deref(), Some(sha));
    let files: Vec<(&str, &str)> = cs
        .changeset
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                if f.change == coord_domain::verification::Change::Removed {
                    "removed"
                } else {
                    "changed"
                },
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            ("docs/old.md", "removed"),
            ("src/auth/mfa.rs", "changed"),
            ("src/main.rs", "changed")
        ]
    );
    // Pushed, not submitted by a profiled agent: trust 0, every tier runs — even when
    // the sender's name has a profile.
    assert_eq!(cs.changeset.trust_level, 0);
    let runs: Vec<(&str, RunStatus)> = cs.runs.iter().map(|r| (r.policy.as_str(), r.status)).collect();
    assert_eq!(
        runs,
        [("lint", RunStatus::Pending), ("security", RunStatus::AwaitingApproval)]
    );
    assert_eq!(cs.status, ChangesetStatus::Pending);
    // GitHub hears each run as a commit status; a person's review is the security run's.
    let queued = sent(&h).await;
    let states: Vec<(&str, &str)> = queued
        .iter()
        .map(|q| {
            (
                q.request.body["context"].as_str().unwrap_or(""),
                q.request.body["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(states, [("coord/lint", "pending"), ("coord/security", "pending")]);
    let approval = cs.runs[1].approval_id.clone().expect("a review");
    run::<coord_service::ops::approvals::DecideApproval>(
        &h,
        &operator("reviewer"),
        coord_domain::approvals::DecideApprovalRequest {
            approval_id: approval,
            decision: coord_domain::approvals::Decision::Approve,
            note: Some("read it".into()),
            valid_minutes: None,
        },
    )
    .await
    .unwrap();
    let queued = sent(&h).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(
        (
            queued[0].request.path.as_str(),
            queued[0].request.body["context"].as_str(),
            queued[0].request.body["state"].as_str()
        ),
        (
            format!("/repos/octocat/Hello-World/statuses/{sha}").as_str(),
            Some("coord/security"),
            Some("success")
        )
    );

    // The same delivery again: a duplicate, nothing done twice.
    let again = deliver(&h, "d-1", "push", push("agent/claude-1/42", sha))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(
        (again.status, again.changeset_id.as_deref()),
        (DeliveryStatus::Processed, Some(id.as_str()))
    );
    // The same push under another delivery id: the recorded changeset.
    let other = deliver(&h, "d-2", "push", push("agent/claude-1/42", sha))
        .await
        .unwrap();
    assert_eq!(other.changeset_id.as_deref(), Some(id.as_str()));

    // The agent's own earlier submission of the same commit does not stand for the push.
    let own = run::<verification::SubmitChangeset>(
        &h,
        &agent("claude-1"),
        serde_json::from_value(
            json!({"files": ["README.md"], "branch": "agent/claude-1/43", "commit": "abcdef0123456789"}),
        )
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(own.status, ChangesetStatus::NotRequired);
    let pushed = deliver(&h, "d-3", "push", push("agent/claude-1/43", "abcdef0123456789"))
        .await
        .unwrap();
    assert_ne!(pushed.changeset_id.unwrap(), own.changeset.changeset_id);
    // A forced push may list too few files: every policy runs.
    let mut forced = push("main", "fedcba9876543210");
    forced["forced"] = json!(true);
    forced["commits"] = json!([{"modified": ["README.md"]}]);
    let forced = deliver(&h, "d-8", "push", forced).await.unwrap();
    let forced = run::<verification::GetVerification>(
        &h,
        &agent("observer"),
        GetVerificationRequest {
            changeset_id: forced.changeset_id.unwrap(),
            diff: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(forced.runs.len(), 2, "{forced:?}");
    assert!(forced.runs[0].reason.as_deref().unwrap().contains("a forced push"));
    // Nothing to do, or not readable: recorded with why.
    let tag = deliver(&h, "d-4", "push", json!({"ref": "refs/tags/v1", "commits": []}))
        .await
        .unwrap();
    assert_eq!(tag.status, DeliveryStatus::Ignored);
    let broken = deliver(&h, "d-5", "push", json!({"commits": "nope"})).await.unwrap();
    assert_eq!(broken.status, DeliveryStatus::Failed);
    assert!(broken.note.unwrap().starts_with("not a push payload"));
    let escape = deliver(
        &h,
        "d-6",
        "push",
        json!({"ref": "refs/heads/x", "after": "abcdef1",
        "commits": [{"modified": ["../../etc/passwd"]}]}),
    )
    .await
    .unwrap();
    assert_eq!(escape.status, DeliveryStatus::Failed, "{escape:?}");
    let issue = deliver(&h, "d-7", "issues", json!({"action": "opened"})).await.unwrap();
    assert_eq!(issue.status, DeliveryStatus::Failed);
    assert!(issue.note.unwrap().starts_with("not an issues payload"));
    let e = deliver(&h, "bad id", "push", json!({})).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("delivery_id"))
    );

    // Recorded but not acted on (the coordinator stopped in between): acted on later.
    let left = Delivery {
        delivery_id: "d-left".into(),
        event: "push".into(),
        action: None,
        payload: push("agent/codex-2/7", "1234567890abcdef"),
    };
    let ctx = OpCtx::internal(
        Some(h.now()),
        webhook().validate().unwrap(),
        "receive_github_delivery",
        json!({}),
    );
    let recorded = h.store.record_github_delivery(ctx, left).await.unwrap();
    assert_eq!(recorded.status, DeliveryStatus::Received);
    let resume = || coord_service::ops::github::resume_deliveries(&h.local, Some(h.now()));
    // Not while it may still be in hand (a minute), then once.
    assert_eq!(resume().await.unwrap(), 0);
    h.advance(2);
    assert_eq!(resume().await.unwrap(), 1);
    assert_eq!(resume().await.unwrap(), 0);
    let seen = deliver(&h, "d-left", "push", json!({})).await.unwrap();
    assert!(seen.duplicate);
    assert_eq!(seen.status, DeliveryStatus::Processed);
    assert!(seen.note.unwrap().starts_with("changeset of github:octocat"));
}

fn issue_event(action: &str, labels: &[&str], updated_at: &str, state: &str, body: &str) -> Value {
    json!({
        "action": action,
        "issue": {
            "number": 12, "title": "Harden the login form", "body": body, "state": state,
            "state_reason": if state == "closed" { json!("completed") } else { Value::Null },
            "updated_at": updated_at, "html_url": "https://github.com/octocat/Hello-World/issues/12",
            "labels": labels.iter().map(|l| json!({"id": 1, "name": l, "color": "ededed"})).collect::<Vec<_>>(),
            "user": {"login": "octocat"}
        },
        "label": {"name": labels.last().copied().unwrap_or("")},
        "repository": {"id": 1296269, "full_name": "octocat/Hello-World"},
        "sender": {"login": "octocat"}
    })
}

/// What `coord serve` would send GitHub now, marked sent (GitHub took it).
async fn sent(h: &Harness) -> Vec<coord_github::sync::QueuedRequest> {
    let due = h.store.take_due_github_requests(Some(h.now()), 10).await.unwrap();
    for q in &due {
        h.store
            .record_github_request(Some(h.now()), q.id, Ok(()), 0)
            .await
            .unwrap();
    }
    due
}

/// An `issues` delivery, answered.
async fn on_issue(h: &Harness, id: &str, payload: Value) -> GithubDeliveryResult {
    deliver(h, id, "issues", payload).await.unwrap()
}

/// Live locks as (path, holder), sorted.
async fn locks(h: &Harness) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = h
        .coord
        .check_locks(
            &agent("observer"),
            coord_domain::locks::CheckLocksRequest { file_paths: None },
        )
        .await
        .unwrap()
        .locks
        .into_iter()
        .map(|l| (l.file_path, l.locked_by))
        .collect();
    all.sort();
    all
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// Requirement "GitHub-Mediated Coordination", its three scenarios: a `locked:` label on
/// an agent's issue locks the file for that agent; `agent:` + `status:assigned` makes a
/// task only that agent claims, closing the issue ends it; a push to
/// `agent/<id>/<task>` locks its files to the agent until the branch is deleted. The
/// coordinator's existing lock wins, and GitHub is told by a comment or a commit status.
pub async fn github_issues_and_branches_become_locks_and_tasks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let claude = agent("claude-web-1");
    let codex = agent("codex-2");
    // codex holds src/api.rs in coord already.
    assert!(h.lock(&codex, "src/api.rs", Some(480)).await.success);

    let labels = ["agent:claude-web-1", "locked:src/auth/login.ts", "locked:src/api.rs"];
    let r = on_issue(
        &h,
        "i-1",
        issue_event("labeled", &labels, "2026-11-26T10:00:00Z", "open", ""),
    )
    .await;
    assert_eq!(r.status, DeliveryStatus::Processed, "{r:?}");
    assert_eq!(
        locks(&h).await,
        pairs(&[("src/api.rs", "codex-2"), ("src/auth/login.ts", "claude-web-1")])
    );
    // The contested label is told on the issue, once.
    let queued = sent(&h).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].request.path, "/repos/octocat/Hello-World/issues/12/comments");
    // The issue's link is what `coord serve` reads back from GitHub once it is quiet.
    let hour = chrono::Duration::hours(1);
    let due = h.store.github_issue_links_due(h.now() + hour, 10).await.unwrap();
    assert_eq!(
        due.iter()
            .map(|l| (l.key.as_str(), l.locks.clone()))
            .collect::<Vec<_>>(),
        [("issue:12", vec!["src/auth/login.ts".to_string()])]
    );
    assert!(
        h.store
            .github_issue_links_due(h.now() - hour, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let comment = queued[0].request.body["body"].as_str().unwrap();
    assert!(comment.contains("`src/api.rs` is locked by codex-2"), "{comment}");
    let again = on_issue(
        &h,
        "i-1b",
        issue_event("edited", &labels, "2026-11-26T10:00:00Z", "open", ""),
    )
    .await;
    assert_eq!(again.status, DeliveryStatus::Processed);
    h.advance(10);
    assert!(
        h.store
            .take_due_github_requests(Some(h.now()), 10)
            .await
            .unwrap()
            .is_empty(),
        "told once"
    );
    // Acts as the agent: audited as acquire_lock under claude-web-1 with the delivery.
    let audited = h
        .coord
        .query_audit(
            &operator("root"),
            coord_domain::audit::AuditQueryRequest {
                agent_id: Some("claude-web-1".into()),
                operation: Some("acquire_lock".into()),
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        audited.entries.iter().any(|e| e.parameters["delivery_id"] == "i-1"),
        "{audited:?}"
    );

    // Assigned: a task only claude-web-1 claims.
    let labels2 = [
        "agent:claude-web-1",
        "locked:src/auth/login.ts",
        "status:assigned",
        "priority:2",
    ];
    let r = on_issue(
        &h,
        "i-2",
        issue_event("labeled", &labels2, "2026-11-26T10:05:00Z", "open", "Use MFA."),
    )
    .await;
    assert_eq!(r.status, DeliveryStatus::Processed, "{r:?}");
    assert!(!h.claim(&codex).await.success, "the issue's task is not codex's");
    let task = h.claim(&claude).await;
    assert!(task.success, "{task:?}");
    let task_id = task.task_id.clone().unwrap();
    let info = h.task(&task_id).await;
    assert_eq!(
        (info.task_type.as_str(), info.assigned_to.as_deref(), info.priority),
        ("github_issue", Some("claude-web-1"), 2)
    );
    assert_eq!(info.task_description, "Harden the login form");
    assert_eq!(info.input_data.as_ref().unwrap()["issue"], 12);
    // The label src/api.rs was removed: nothing held for it (it was codex's anyway).
    assert_eq!(
        locks(&h).await,
        pairs(&[("src/api.rs", "codex-2"), ("src/auth/login.ts", "claude-web-1")])
    );

    // A comment on the issue renews its locks (8 hours from now), changing nothing else.
    h.advance(7 * 60);
    let mut comment = issue_event("created", &labels2, "2026-11-26T10:30:00Z", "open", "Use MFA.");
    comment["comment"] = json!({"id": 1, "body": "still on it"});
    let renewed = deliver(&h, "i-2c", "issue_comment", comment).await.unwrap();
    assert_eq!(renewed.status, DeliveryStatus::Processed, "{renewed:?}");
    assert!(
        h.lock(&codex, "src/api.rs", Some(480)).await.success,
        "codex renews its own"
    );
    h.advance(2 * 60);
    assert_eq!(locks(&h).await.len(), 2, "renewed by the comment");
    assert_eq!(h.task(&task_id).await.status, coord_domain::queue::TaskStatus::Claimed);
    // A late delivery of an older state changes nothing.
    let late = on_issue(
        &h,
        "i-0",
        issue_event("unlabeled", &["agent:claude-web-1"], "2026-11-26T09:00:00Z", "open", ""),
    )
    .await;
    assert_eq!(late.status, DeliveryStatus::Ignored, "{late:?}");
    assert_eq!(locks(&h).await.len(), 2);

    // Closed as completed: the lock released, the claimed task completed.
    let closed = on_issue(
        &h,
        "i-3",
        issue_event("closed", &labels2, "2026-11-26T11:00:00Z", "closed", ""),
    )
    .await;
    assert_eq!(closed.status, DeliveryStatus::Processed, "{closed:?}");
    assert_eq!(locks(&h).await, pairs(&[("src/api.rs", "codex-2")]));
    assert_eq!(
        h.task(&task_id).await.status,
        coord_domain::queue::TaskStatus::Completed
    );

    // Two agent labels: nobody's locks.
    let two = deliver(
        &h,
        "i-4",
        "issues",
        json!({
            "action": "labeled",
            "issue": {"number": 13, "title": "t", "state": "open", "updated_at": "2026-11-26T12:00:00Z",
                      "labels": [{"name": "agent:a"}, {"name": "agent:b"}, {"name": "locked:src/x.rs"}]},
            "repository": {"id": 1296269, "full_name": "octocat/Hello-World"}
        }),
    )
    .await
    .unwrap();
    assert!(two.note.unwrap().contains("2 agent: labels"));
    assert_eq!(locks(&h).await.len(), 1);

    // A push to claude-web-1's branch: its files are locked to claude-web-1, except the
    // one codex holds (a failing coord/locks status on the head says so).
    let sha = "1111111111111111111111111111111111111111";
    let mut p = push("agent/claude-web-1/99", sha);
    p["commits"] = json!([{"added": ["src/new.rs"], "modified": ["src/api.rs"], "removed": ["docs/old.md"]}]);
    let pushed = deliver(&h, "b-1", "push", p).await.unwrap();
    assert_eq!(pushed.status, DeliveryStatus::Processed, "{pushed:?}");
    assert_eq!(
        locks(&h).await,
        pairs(&[
            ("docs/old.md", "claude-web-1"),
            ("src/api.rs", "codex-2"),
            ("src/new.rs", "claude-web-1")
        ])
    );
    let queued = sent(&h).await;
    let status = queued
        .iter()
        .find(|q| q.request.path == format!("/repos/octocat/Hello-World/statuses/{sha}"))
        .expect("a commit status");
    assert_eq!(
        (
            status.request.body["state"].as_str(),
            status.request.body["context"].as_str()
        ),
        (Some("failure"), Some("coord/locks"))
    );
    // Deleted: released.
    let gone = deliver(
        &h,
        "b-2",
        "delete",
        json!({"ref": "agent/claude-web-1/99", "ref_type": "branch",
               "repository": {"id": 1296269, "full_name": "octocat/Hello-World"}}),
    )
    .await
    .unwrap();
    assert_eq!(gone.status, DeliveryStatus::Processed, "{gone:?}");
    assert_eq!(locks(&h).await, pairs(&[("src/api.rs", "codex-2")]));
}

fn workflow_run(id: i64, action: &str, conclusion: Option<&str>) -> Value {
    json!({
        "action": action,
        "workflow_run": {
            "id": id, "name": "verify", "display_title": "coord cs",
            "status": if action == "completed" { "completed" } else { "in_progress" },
            "conclusion": conclusion, "html_url": format!("https://github.com/octocat/Hello-World/actions/runs/{id}"),
            "head_branch": "feature", "event": "workflow_dispatch"
        },
        "repository": {"id": 1296269, "full_name": "octocat/Hello-World"}
    })
}

/// Requirement "Verification Gateway" with a `github_actions` policy: a pushed changeset
/// gets pending commit statuses; the worker that dispatched the workflow records the
/// run's id (a later worker sees it and follows, never dispatching again); GitHub's
/// `workflow_run` webhook finishes the run by that id, and the result goes back to the
/// commit as a `coord/<policy>` status.
pub async fn github_actions_runs_finish_by_webhook(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let root = operator("root");
    let p: VerificationPolicy = serde_json::from_value(json!({
        "name": "ci", "tier": 2, "executor": "github_actions", "patterns": ["src/**"],
        "workflow": "verify.yml", "timeout_seconds": 600
    }))
    .unwrap();
    run::<verification::SetVerificationPolicy>(&h, &root, p).await.unwrap();
    let sha = "2222222222222222222222222222222222222222";
    let pushed = deliver(&h, "w-1", "push", push("feature", sha)).await.unwrap();
    let id = pushed.changeset_id.expect("a changeset");
    let queued = sent(&h).await;
    let statuses: Vec<(&str, &str, &str)> = queued
        .iter()
        .map(|q| {
            (
                q.request.path.as_str(),
                q.request.body["context"].as_str().unwrap_or(""),
                q.request.body["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let path = format!("/repos/octocat/Hello-World/statuses/{sha}");
    assert_eq!(statuses, [(path.as_str(), "coord/ci", "pending")]);

    let worker = || async {
        run::<verification::ClaimVerificationRun>(
            &h,
            &root,
            coord_domain::verification::ClaimVerificationRunRequest {
                executors: vec![coord_domain::verification::Executor::GithubActions],
                commit: None,
            },
        )
        .await
        .unwrap()
        .run
    };
    let claimed = worker().await.expect("the ci run");
    assert_eq!(
        (
            claimed.repository.as_deref(),
            claimed.external_id.as_deref(),
            claimed.branch.as_deref()
        ),
        (Some("octocat/Hello-World"), None, Some("feature"))
    );
    let attach = |status: RunStatus, external: Option<&str>| coord_domain::verification::ReportVerificationRunRequest {
        changeset_id: id.clone(),
        policy: "ci".into(),
        attempt: Some(1),
        status,
        exit_code: None,
        duration_ms: None,
        output_tail: None,
        reason: None,
        external_id: external.map(str::to_string),
        external_url: external.map(|e| format!("https://github.com/octocat/Hello-World/actions/runs/{e}")),
    };
    // Running only with the executor's id.
    let e = run::<verification::ReportVerificationRun>(&h, &root, attach(RunStatus::Running, None))
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("status"));
    let attached = run::<verification::ReportVerificationRun>(&h, &root, attach(RunStatus::Running, Some("30433642")))
        .await
        .unwrap();
    assert_eq!(attached.runs[0].status, RunStatus::Running);
    assert_eq!(
        attached.runs[0].external_url.as_deref(),
        Some("https://github.com/octocat/Hello-World/actions/runs/30433642")
    );
    // The worker stops; past the lease another worker takes the run over — and is told
    // which GitHub run to follow.
    assert!(worker().await.is_none(), "the lease runs from the dispatch");
    h.advance(12);
    let again = worker().await.expect("taken over");
    assert_eq!(again.external_id.as_deref(), Some("30433642"));

    // Not completed yet, or not coord's: nothing happens.
    let requested = deliver(&h, "w-2", "workflow_run", workflow_run(30433642, "in_progress", None))
        .await
        .unwrap();
    assert_eq!(requested.status, DeliveryStatus::Ignored);
    let stranger = deliver(
        &h,
        "w-3",
        "workflow_run",
        workflow_run(999, "completed", Some("success")),
    )
    .await
    .unwrap();
    assert_eq!(stranger.status, DeliveryStatus::Ignored, "{stranger:?}");
    // Completed: the run follows its conclusion.
    let done = deliver(
        &h,
        "w-4",
        "workflow_run",
        workflow_run(30433642, "completed", Some("failure")),
    )
    .await
    .unwrap();
    assert_eq!(done.status, DeliveryStatus::Processed, "{done:?}");
    let v = run::<verification::GetVerification>(
        &h,
        &agent("observer"),
        GetVerificationRequest {
            changeset_id: id.clone(),
            diff: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (v.runs[0].status, v.status),
        (RunStatus::Failed, ChangesetStatus::Failed)
    );
    assert!(v.runs[0].reason.as_deref().unwrap().contains("concluded failure"));
    // The worker following it learns it is over: its report is refused.
    let late = run::<verification::ReportVerificationRun>(&h, &root, attach(RunStatus::Passed, None))
        .await
        .unwrap_err();
    assert_eq!(late.code, ErrorCode::Forbidden);
    // The dispatch linked the pending status to the run; the conclusion followed.
    let queued = sent(&h).await;
    let states: Vec<(Option<&str>, Option<&str>, Option<&str>)> = queued
        .iter()
        .map(|q| {
            (
                q.request.body["context"].as_str(),
                q.request.body["state"].as_str(),
                q.request.body["target_url"].as_str(),
            )
        })
        .collect();
    let page = Some("https://github.com/octocat/Hello-World/actions/runs/30433642");
    assert_eq!(
        states,
        [
            (Some("coord/ci"), Some("pending"), page),
            (Some("coord/ci"), Some("failure"), page)
        ]
    );
    // A redelivery finishes nothing twice.
    let twice = deliver(
        &h,
        "w-5",
        "workflow_run",
        workflow_run(30433642, "completed", Some("success")),
    )
    .await
    .unwrap();
    assert_eq!(twice.status, DeliveryStatus::Ignored);
    // The figures of `coord stats` and /metrics: one run judged, failed, twelve minutes
    // after the push.
    let stats = run::<coord_service::ops::audit::GetStats>(&h, &root, coord_domain::Empty {})
        .await
        .unwrap();
    let v = &stats.verification;
    assert_eq!((v.passed, v.failed, v.timed_out, v.error), (0, 1, 0, 0));
    assert_eq!(v.pass_rate(), Some(0.0));
    assert_eq!((v.time_to_verify.count, v.time_to_verify.sum_seconds), (1, 720.0));
    // What `coord github outbox` lists: nothing waits; with --sent, the three statuses.
    assert!(h.store.github_outbox(false, 10).await.unwrap().is_empty());
    let all = h.store.github_outbox(true, 10).await.unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(
        all.iter()
            .all(|r| r.sent_at.is_some() && r.attempts == 1 && r.last_error.is_none())
    );
    assert!(all[0].id > all[2].id, "newest first");
    // A month on, the sweeper prunes the deliveries acted on and the requests sent.
    h.advance(31 * 24 * 60);
    assert_eq!(h.sweep().await.unwrap().github_rows_pruned, 5 + 3);
    assert_eq!(h.sweep().await.unwrap().github_rows_pruned, 0);
    let again = deliver(&h, "w-1", "ping", json!({"zen": "again"})).await.unwrap();
    assert!(!again.duplicate, "a pruned delivery id is new again");
}

/// What GitHub does not get to undo: a lock the agent took in coord stays when a label
/// naming it comes and goes, a deleted comment does not close its issue, and deliveries
/// racing for one issue (GitHub sends one `labeled` per label of an edit) make one task.
pub async fn github_races_and_coord_locks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let alice = agent("alice");
    assert!(h.lock(&alice, "src/own.rs", Some(480)).await.success);
    let with = ["agent:alice", "locked:src/own.rs", "locked:src/new.rs"];
    let r = on_issue(
        &h,
        "r-1",
        issue_event("labeled", &with, "2026-11-26T10:00:00Z", "open", ""),
    )
    .await;
    assert_eq!(r.status, DeliveryStatus::Processed, "{r:?}");
    let r = on_issue(
        &h,
        "r-2",
        issue_event("unlabeled", &["agent:alice"], "2026-11-26T10:01:00Z", "open", ""),
    )
    .await;
    assert_eq!(r.status, DeliveryStatus::Processed, "{r:?}");
    assert_eq!(
        locks(&h).await,
        pairs(&[("src/own.rs", "alice")]),
        "the label's lock went, alice's own stayed"
    );

    // Assigned, then a comment deleted: the task stays.
    let assigned = ["agent:alice", "status:assigned"];
    on_issue(
        &h,
        "r-3",
        issue_event("labeled", &assigned, "2026-11-26T10:02:00Z", "open", ""),
    )
    .await;
    let mut gone = issue_event("deleted", &assigned, "2026-11-26T10:03:00Z", "open", "");
    gone["comment"] = json!({"id": 9, "body": "spam"});
    let r = deliver(&h, "r-4", "issue_comment", gone).await.unwrap();
    assert_eq!(r.status, DeliveryStatus::Processed, "{r:?}");
    let task = h.claim(&alice).await;
    assert!(task.success, "the task is still alice's to claim: {task:?}");

    // Six deliveries for a new issue at once: one task.
    let racing: Vec<_> = (0..6)
        .map(|i| {
            let mut e = issue_event("labeled", &assigned, "2026-11-26T11:00:00Z", "open", "");
            e["issue"]["number"] = json!(40);
            let coord = h.local.clone();
            tokio::spawn(async move {
                coord_service::call::<ops::ReceiveGithubDelivery, _>(
                    &coord,
                    &coord_domain::access::Principal::local(webhook()),
                    GithubDeliveryRequest {
                        delivery_id: format!("race-{i}"),
                        event: "issues".into(),
                        payload: e,
                    },
                )
                .await
            })
        })
        .collect();
    for r in racing {
        assert_eq!(r.await.unwrap().unwrap().status, DeliveryStatus::Processed);
    }
    let tasks = h
        .coord
        .list_tasks(
            &agent("observer"),
            coord_domain::queue::ListTasksRequest {
                status: Some(coord_domain::queue::TaskStatus::Pending),
                task_type: Some("github_issue".into()),
                limit: None,
            },
        )
        .await
        .unwrap()
        .tasks;
    let for_40: Vec<_> = tasks
        .iter()
        .filter(|t| t.input_data.as_ref().is_some_and(|i| i["issue"] == 40))
        .collect();
    assert_eq!(for_40.len(), 1, "{tasks:#?}");
}
