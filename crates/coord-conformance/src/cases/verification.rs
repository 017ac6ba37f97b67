//! Requirements "Verification Gateway" and "Verification Policies": policies as data
//! (trust 4), changesets routed to every policy covering their files with the
//! submitter's trust applied, a person's review through the approval queue, and
//! resubmissions answered with the recorded changeset.

use crate::cases::profiles::{give, profile, run};
use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::approvals::{DecideApprovalRequest, Decision};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::profiles::Permission;
use coord_domain::verification::{
    ChangesetStatus, ClaimVerificationRunRequest, ClaimedRun, DeleteVerificationPolicyRequest, Executor,
    GetVerificationRequest, ReportVerificationRunRequest, RunStatus, SubmitChangesetRequest, VerificationPolicy,
    VerificationResult,
};
use coord_domain::{Caller, CoordResult, Empty, ErrorCode};
use coord_service::ops::{approvals, audit, verification as ops};
use serde_json::{Value, json};

fn policy(v: Value) -> VerificationPolicy {
    serde_json::from_value(v).expect("a policy the case spells right")
}

fn policies() -> Vec<VerificationPolicy> {
    vec![
        policy(
            json!({"name": "lint", "tier": 0, "executor": "inline", "patterns": ["**/*.rs"],
                      "exclude_patterns": ["vendor/**"], "command": ["cargo", "clippy"]}),
        ),
        policy(
            json!({"name": "unit", "tier": 1, "executor": "github_actions", "patterns": ["src/**"],
                      "workflow": "ci.yml"}),
        ),
        policy(
            json!({"name": "integration", "tier": 2, "executor": "local", "patterns": ["src/db/**"],
                      "command": ["make", "integration"], "required_env": ["DATABASE_URL"]}),
        ),
        policy(json!({"name": "security", "tier": 4, "executor": "manual", "patterns": ["src/auth/**"]})),
    ]
}

async fn submit(h: &Harness, who: &Caller, req: Value) -> CoordResult<VerificationResult> {
    run::<ops::SubmitChangeset>(h, who, serde_json::from_value::<SubmitChangesetRequest>(req).unwrap()).await
}

async fn get(h: &Harness, who: &Caller, id: &str) -> CoordResult<VerificationResult> {
    run::<ops::GetVerification>(
        h,
        who,
        GetVerificationRequest {
            changeset_id: id.into(),
            diff: false,
        },
    )
    .await
}

fn statuses(r: &VerificationResult) -> Vec<(&str, RunStatus)> {
    r.runs.iter().map(|run| (run.policy.as_str(), run.status)).collect()
}

async fn decide(h: &Harness, who: &Caller, approval_id: &str, decision: Decision) -> CoordResult<()> {
    run::<approvals::DecideApproval>(
        h,
        who,
        DecideApprovalRequest {
            approval_id: approval_id.into(),
            decision,
            note: Some("read the diff".into()),
            valid_minutes: None,
        },
    )
    .await
    .map(|_| ())
}

/// A trust-2 agent: verified at every tier.
async fn standard(h: &Harness, name: &str) -> Caller {
    let p = profile(
        &format!("std-{name}"),
        2,
        &[Permission::Read, Permission::Write, Permission::Coordinate],
        json!({}),
    );
    give(h, p, name).await;
    agent(name)
}

pub async fn verification_policies_route_changesets(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let root = operator("root");
    // Only trust 4 manages policies (the cases' agents are trust 3; through HTTP the
    // suite holds an operator key, which administers whoever it names).
    if h.door != Door::Http {
        let e = run::<ops::SetVerificationPolicy>(&h, &agent("dev"), policies()[0].clone())
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
    }
    for p in policies() {
        let set = run::<ops::SetVerificationPolicy>(&h, &root, p.clone()).await.unwrap();
        assert_eq!((set.policy.policy, set.policy.updated_by.as_str()), (p, "root"));
    }
    // A policy that does not check out is refused whole, naming the field.
    let mut bad = policies()[0].clone();
    bad.name = "broken".into();
    bad.exclude_patterns = vec!["src/[a".into()];
    let e = run::<ops::SetVerificationPolicy>(&h, &root, bad).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("exclude_patterns[0]"))
    );
    let listed = run::<ops::ListVerificationPolicies>(&h, &agent("dev"), Empty {})
        .await
        .unwrap();
    let names: Vec<&str> = listed.policies.iter().map(|r| r.policy.name.as_str()).collect();
    assert_eq!(names, ["integration", "lint", "security", "unit"]);

    // A trust-2 agent's change goes to every policy covering it, by tier.
    let dev2 = standard(&h, "dev2").await;
    let first = submit(
        &h,
        &dev2,
        json!({"files": ["src/auth/login.rs", "./src/db/pool.rs", "README.md", "vendor/x/y.rs"],
               "removed": ["src/auth/old.rs"], "branch": "agent/dev2/42", "commit": "9FCEB02D",
               "description": "argon2 passwords", "diff": "--- a\n+++ b\n"}),
    )
    .await
    .unwrap();
    let id = first.changeset.changeset_id.clone();
    assert!(!first.existing);
    assert_eq!(
        (
            first.changeset.agent_id.as_str(),
            first.changeset.trust_level,
            first.changeset.commit.as_deref()
        ),
        ("dev2", 2, Some("9fceb02d"))
    );
    assert!(first.changeset.has_diff);
    assert_eq!(
        statuses(&first),
        [
            ("lint", RunStatus::Pending),
            ("unit", RunStatus::Pending),
            ("integration", RunStatus::Pending),
            ("security", RunStatus::AwaitingApproval),
        ]
    );
    assert_eq!(first.status, ChangesetStatus::Pending);
    assert_eq!(
        first.runs[0].files,
        ["src/auth/login.rs", "src/auth/old.rs", "src/db/pool.rs"]
    );
    assert_eq!(first.runs[2].files, ["src/db/pool.rs"]);
    assert_eq!(first.runs[3].executor, Executor::Manual);
    assert_eq!(first.runs[3].files, ["src/auth/login.rs", "src/auth/old.rs"]);
    let review = first.runs[3].approval_id.clone().expect("a review request");

    // The same branch and commit again: the recorded changeset, nothing routed twice.
    let again = submit(
        &h,
        &dev2,
        json!({"files": ["src/other.rs"], "branch": "agent/dev2/42", "commit": "9fceb02d"}),
    )
    .await
    .unwrap();
    assert!(again.existing);
    assert_eq!(again.changeset.changeset_id, id);
    assert_eq!(statuses(&again), statuses(&first));

    // The review is the submitter's request: a trust-4 someone else decides it.
    let e = decide(&h, &dev2, &review, Decision::Approve).await.unwrap_err();
    if h.door == Door::Http {
        assert_eq!(e.code, ErrorCode::CannotApproveOwnRequest);
    } else {
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }
    let own = submit(&h, &root, json!({"files": ["src/auth/admin.rs"]}))
        .await
        .unwrap();
    let own_review = own.runs.last().unwrap().approval_id.clone().unwrap();
    let e = decide(&h, &root, &own_review, Decision::Approve).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::CannotApproveOwnRequest);
    let pending = run::<approvals::ListApprovals>(&h, &root, Default::default())
        .await
        .unwrap();
    let item = pending
        .approvals
        .iter()
        .find(|a| a.approval_id == review)
        .expect("listed in the approval queue");
    assert_eq!(
        (item.operation.as_str(), item.agent_id.as_str()),
        ("verify_changeset", "dev2")
    );
    assert_eq!(item.parameters["changeset_id"], json!(id));
    decide(&h, &root, &review, Decision::Approve).await.unwrap();
    let read = get(&h, &agent("observer"), &id).await.unwrap();
    assert_eq!(read.runs[3].status, RunStatus::Passed);
    assert_eq!(read.runs[3].reason.as_deref(), Some("approved by root: read the diff"));
    assert_eq!(
        read.status,
        ChangesetStatus::Pending,
        "the executors' runs are still pending"
    );
    assert_eq!(read.diff, None);
    let with_diff = run::<ops::GetVerification>(
        &h,
        &dev2,
        GetVerificationRequest {
            changeset_id: id.to_uppercase().replace("CS_", "cs_"),
            diff: true,
        },
    )
    .await
    .unwrap();
    assert_eq!(with_diff.diff.as_deref(), Some("--- a\n+++ b\n"));

    // Denied: the changeset failed.
    let denied = submit(&h, &dev2, json!({"files": ["src/auth/token.rs"]}))
        .await
        .unwrap();
    decide(
        &h,
        &root,
        denied.runs.last().unwrap().approval_id.as_deref().unwrap(),
        Decision::Deny,
    )
    .await
    .unwrap();
    let denied = get(&h, &dev2, &denied.changeset.changeset_id).await.unwrap();
    assert_eq!(denied.runs.last().unwrap().status, RunStatus::Failed);
    assert_eq!(denied.status, ChangesetStatus::Failed);

    // Nobody reviews it before the request expires (a day): timed out.
    let waits = submit(&h, &dev2, json!({"files": ["src/auth/mfa.rs"]})).await.unwrap();
    h.advance(24 * 60 + 1);
    let waits = get(&h, &dev2, &waits.changeset.changeset_id).await.unwrap();
    assert_eq!(waits.runs.last().unwrap().status, RunStatus::TimedOut);

    // Trust 3 skips tiers 0 and 1, and says so; nothing left means passed.
    let trusted = submit(&h, &agent("senior"), json!({"files": ["src/lib.rs"]}))
        .await
        .unwrap();
    assert_eq!(
        statuses(&trusted),
        [("lint", RunStatus::Skipped), ("unit", RunStatus::Skipped)]
    );
    assert_eq!(
        trusted.runs[0].reason.as_deref(),
        Some("trust level 3 skips tiers 0 and 1")
    );
    assert_eq!(trusted.status, ChangesetStatus::Passed);

    // No policy covers it.
    let docs = submit(&h, &dev2, json!({"files": ["docs/guide.md"]})).await.unwrap();
    assert_eq!((docs.runs.len(), docs.status), (0, ChangesetStatus::NotRequired));

    // Bad input and unknown ids.
    for (req, field) in [
        (json!({"files": []}), "files"),
        (json!({"files": ["../etc/passwd"]}), "files[0]"),
        (json!({"files": ["a.rs"], "branch": "a..b"}), "branch"),
        (json!({"files": ["a.rs"], "commit": "nothex!"}), "commit"),
    ] {
        let e = submit(&h, &dev2, req.clone()).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some(field), "{req}: {e:?}");
    }
    let e = get(&h, &dev2, "cs_00000000000000000000000000000000").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let e = get(&h, &dev2, "42").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);

    // A deleted policy routes nothing new; runs already routed keep it.
    run::<ops::DeleteVerificationPolicy>(&h, &root, DeleteVerificationPolicyRequest { name: "lint".into() })
        .await
        .unwrap();
    let e = run::<ops::DeleteVerificationPolicy>(&h, &root, DeleteVerificationPolicyRequest { name: "lint".into() })
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let later = submit(&h, &dev2, json!({"files": ["src/db/pool.rs"]})).await.unwrap();
    assert_eq!(
        statuses(&later),
        [("unit", RunStatus::Pending), ("integration", RunStatus::Pending)]
    );
    assert_eq!(get(&h, &dev2, &id).await.unwrap().runs[0].policy, "lint");

    // Submissions, refused ones included, are in the audit trail.
    let audited = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("dev2".into()),
            operation: Some("submit_changeset".into()),
            limit: Some(100),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(audited.entries.len(), 6 + 4, "submissions and the refused inputs");
    assert_eq!(audited.entries.iter().filter(|e| !e.success).count(), 4);
}

/// The same agent's branch and commit submitted many times at once: one changeset,
/// one review request.
pub async fn verification_concurrent_resubmissions_record_one_changeset(b: &dyn Backend) {
    let h = Harness::new(b).await;
    run::<ops::SetVerificationPolicy>(&h, &operator("root"), policies()[3].clone())
        .await
        .unwrap();
    let dev = standard(&h, "racer").await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let coord = h.coord.clone();
        let who = dev.clone();
        tasks.push(tokio::spawn(async move {
            let req = serde_json::from_value::<SubmitChangesetRequest>(
                json!({"files": ["src/auth/a.rs"], "branch": "agent/racer/1", "commit": "abcdef0123"}),
            )
            .unwrap();
            coord_service::call::<ops::SubmitChangeset, _>(&*coord, &coord_domain::access::Principal::local(who), req)
                .await
                .unwrap()
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    let first = &results[0].changeset.changeset_id;
    assert!(results.iter().all(|r| &r.changeset.changeset_id == first));
    assert_eq!(results.iter().filter(|r| !r.existing).count(), 1);
    let approvals = run::<approvals::ListApprovals>(&h, &operator("root"), Default::default())
        .await
        .unwrap();
    assert_eq!(
        approvals
            .approvals
            .iter()
            .filter(|a| a.operation == "verify_changeset")
            .count(),
        1
    );
}

async fn claim(h: &Harness, who: &Caller, executors: &[Executor]) -> CoordResult<Option<ClaimedRun>> {
    run::<ops::ClaimVerificationRun>(
        h,
        who,
        ClaimVerificationRunRequest {
            executors: executors.to_vec(),
            commit: None,
        },
    )
    .await
    .map(|r| r.run)
}

async fn report(h: &Harness, who: &Caller, claimed: &ClaimedRun, status: RunStatus) -> CoordResult<VerificationResult> {
    run::<ops::ReportVerificationRun>(
        h,
        who,
        ReportVerificationRunRequest {
            changeset_id: claimed.changeset_id.clone(),
            policy: claimed.policy.name.clone(),
            attempt: Some(claimed.attempt),
            status,
            exit_code: Some(if status == RunStatus::Passed { 0 } else { 2 }),
            duration_ms: Some(1500),
            output_tail: Some("test result: ok".into()),
            reason: None,
            external_id: None,
            external_url: None,
        },
    )
    .await
}

/// Workers claim runs of the executors they run (never of their own changeset), report
/// what happened, and take over a run whose worker stopped reporting.
pub async fn verification_workers_claim_and_report(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let root = operator("root");
    let mut all = policies();
    all.push(policy(
        json!({"name": "deploy", "tier": 3, "executor": "e2b", "patterns": ["deploy/**"], "command": ["make", "e2e"],
                           "template": "t", "requires_approval": true}),
    ));
    for p in all {
        run::<ops::SetVerificationPolicy>(&h, &root, p).await.unwrap();
    }
    let own = submit(&h, &root, json!({"files": ["src/db/x.rs"]})).await.unwrap();
    assert_eq!(
        statuses(&own),
        [
            ("lint", RunStatus::Skipped),
            ("unit", RunStatus::Skipped),
            ("integration", RunStatus::Pending)
        ]
    );
    let dev2 = standard(&h, "dev2").await;
    let cs = submit(
        &h,
        &dev2,
        json!({"files": ["src/db/pool.rs", "deploy/app.yaml"], "commit": "abcdef1"}),
    )
    .await
    .unwrap();
    let id = cs.changeset.changeset_id.clone();
    if h.door != Door::Http {
        let e = claim(&h, &dev2, &[]).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }
    // A worker checked out elsewhere claims nothing of a changeset at another commit.
    let elsewhere = |commit: &str| ClaimVerificationRunRequest {
        executors: vec![],
        commit: Some(commit.into()),
    };
    let other = run::<ops::ClaimVerificationRun>(&h, &root, elsewhere("1111111aaaa"))
        .await
        .unwrap();
    assert_eq!(other.run, None);
    // Oldest first, never the worker's own changeset; what it needs comes with it.
    let first = run::<ops::ClaimVerificationRun>(&h, &root, elsewhere("ABCDEF1234567"))
        .await
        .unwrap()
        .run
        .expect("a run to do");
    assert_eq!(
        (first.changeset_id.as_str(), first.policy.name.as_str()),
        (id.as_str(), "integration")
    );
    assert_eq!(first.policy.command, ["make", "integration"]);
    assert_eq!(first.policy.required_env, ["DATABASE_URL"]);
    assert_eq!(
        (first.files.clone(), first.commit.as_deref()),
        (vec!["src/db/pool.rs".to_string()], Some("abcdef1"))
    );
    let second = claim(&h, &root, &[Executor::Inline, Executor::Local])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (second.changeset_id.as_str(), second.policy.name.as_str()),
        (id.as_str(), "lint")
    );
    assert_eq!(
        claim(&h, &root, &[]).await.unwrap(),
        None,
        "its own changeset's run is not its to verify"
    );
    let read = get(&h, &dev2, &id).await.unwrap();
    assert_eq!(read.runs[0].status, RunStatus::Running);
    assert!(read.runs[0].started_at.is_some());

    // A run waiting for approval is claimable once approved.
    let worker = operator("worker");
    assert_eq!(claim(&h, &worker, &[Executor::E2b]).await.unwrap(), None);
    let deploy_review = cs
        .runs
        .iter()
        .find(|r| r.policy == "deploy")
        .unwrap()
        .approval_id
        .clone()
        .unwrap();
    decide(&h, &root, &deploy_review, Decision::Approve).await.unwrap();
    assert_eq!(
        get(&h, &dev2, &id)
            .await
            .unwrap()
            .runs
            .iter()
            .find(|r| r.policy == "deploy")
            .unwrap()
            .status,
        RunStatus::Pending,
        "approved: waiting for its executor"
    );
    let deploy = claim(&h, &worker, &[Executor::E2b]).await.unwrap().unwrap();
    assert_eq!(deploy.policy.name, "deploy");

    // Only the claiming worker reports.
    let e = report(&h, &worker, &first, RunStatus::Passed).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden, "{e:?}");
    let after = report(&h, &root, &second, RunStatus::Passed).await.unwrap();
    assert_eq!(after.status, ChangesetStatus::Pending);
    let after = report(&h, &root, &first, RunStatus::Failed).await.unwrap();
    assert_eq!(after.status, ChangesetStatus::Failed);
    let integration = after.runs.iter().find(|r| r.policy == "integration").unwrap();
    assert_eq!(
        (
            integration.status,
            integration.exit_code,
            integration.duration_ms,
            integration.output_tail.as_deref()
        ),
        (RunStatus::Failed, Some(2), Some(1500), Some("test result: ok"))
    );
    assert!(integration.finished_at.is_some());
    let e = report(&h, &root, &first, RunStatus::Passed).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden, "a finished run stays as reported");
    let mut ghost = first.clone();
    ghost.policy.name = "nothing".into();
    assert_eq!(
        report(&h, &root, &ghost, RunStatus::Passed).await.unwrap_err().code,
        ErrorCode::NotFound
    );

    // A worker that stops reporting loses its claim after the timeout and a minute.
    h.advance(5);
    assert_eq!(
        claim(&h, &root, &[Executor::E2b]).await.unwrap(),
        None,
        "still the worker's"
    );
    h.advance(2);
    let taken = claim(&h, &root, &[Executor::E2b]).await.unwrap().unwrap();
    assert_eq!(taken.policy.name, "deploy");
    assert_eq!(
        report(&h, &worker, &deploy, RunStatus::Passed).await.unwrap_err().code,
        ErrorCode::Forbidden
    );
    report(&h, &root, &taken, RunStatus::Passed).await.unwrap();
    // Another worker verifies root's change.
    let theirs = claim(&h, &worker, &[]).await.unwrap().unwrap();
    assert_eq!(theirs.changeset_id, own.changeset.changeset_id);
}

/// Workers racing for runs: each run is claimed once.
pub async fn verification_concurrent_workers_claim_each_run_once(b: &dyn Backend) {
    let h = Harness::new(b).await;
    run::<ops::SetVerificationPolicy>(&h, &operator("root"), policies()[2].clone())
        .await
        .unwrap();
    let dev = standard(&h, "dev").await;
    for i in 0..6 {
        submit(&h, &dev, json!({"files": [format!("src/db/{i}.rs")]}))
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..4 {
        let coord = h.coord.clone();
        tasks.push(tokio::spawn(async move {
            let me = coord_domain::access::Principal::local(operator(&format!("worker-{w}")));
            let mut got = Vec::new();
            while let Some(run) = coord_service::call::<ops::ClaimVerificationRun, _>(&*coord, &me, Default::default())
                .await
                .unwrap()
                .run
            {
                got.push(run.changeset_id);
            }
            got
        }));
    }
    let mut claimed = Vec::new();
    for t in tasks {
        claimed.extend(t.await.unwrap());
    }
    claimed.sort();
    let before = claimed.len();
    claimed.dedup();
    assert_eq!((before, claimed.len()), (6, 6), "every run claimed, none twice");
}
