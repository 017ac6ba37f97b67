//! Requirement "Verification Gateway", scenario "GitHub webhook processing": a push
//! delivered by GitHub becomes a changeset of the branch's agent, routed to
//! verification; deliveries are recorded first (a redelivery is a duplicate, one left
//! unprocessed is acted on later) and refused when they do not read.

use crate::cases::profiles::run;
use crate::{Backend, Harness, agent, operator};
use coord_domain::github::{Delivery, DeliveryStatus, GithubDeliveryRequest, GithubDeliveryResult};
use coord_domain::verification::{ChangesetStatus, GetVerificationRequest, RunStatus, VerificationPolicy};
use coord_domain::{Caller, CoordResult, ErrorCode};
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
    assert_eq!(issue.status, DeliveryStatus::Ignored);
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
