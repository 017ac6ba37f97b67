//! The approval queue: a request over a limit of a profile that allows escalation waits
//! for a person; an approval lets the same agent's same request pass once, until it
//! expires; nobody decides their own request; every step is in the audit trail.

use crate::cases::profiles::{code, give, profile, run};
use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::approvals::{
    Approval, ApprovalStatus, DecideApprovalRequest, Decision, GetApprovalRequest, ListApprovalsRequest,
};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::{AcquireLockRequest, CheckEditRequest, CheckLocksRequest, CheckLocksResult};
use coord_domain::profiles::Permission;
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::ops::{approvals as ops, audit, locks};
use serde_json::json;
use std::sync::Arc;

pub(crate) async fn check(h: &Harness, who: &Caller, file: &str) -> CoordResult<CheckLocksResult> {
    run::<locks::CheckLocks>(
        h,
        who,
        CheckLocksRequest {
            file_paths: Some(vec![file.into()]),
        },
    )
    .await
}

/// The refusal of a request that asked for approval: its approval id.
pub(crate) fn awaiting(e: CoordError) -> String {
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded, "{e:?}");
    let v = e.to_value();
    assert_eq!(v["approval_required"], true, "{v}");
    assert_eq!(v["limit"], "max_api_calls", "{v}");
    v["approval_id"].as_str().expect("approval_id").to_string()
}

async fn get(h: &Harness, id: &str) -> Approval {
    run::<ops::GetApproval>(h, &agent("anyone"), GetApprovalRequest { approval_id: id.into() })
        .await
        .expect("get_approval")
        .approval
}

async fn decide(h: &Harness, who: &Caller, id: &str, d: Decision, minutes: Option<i64>) -> CoordResult<Approval> {
    run::<ops::DecideApproval>(
        h,
        who,
        DecideApprovalRequest {
            approval_id: id.into(),
            decision: d,
            note: Some("checked".into()),
            valid_minutes: minutes,
        },
    )
    .await
    .map(|r| r.approval)
}

/// Two agents whose profile allows two calls per session, with escalation.
pub(crate) async fn limited(h: &Harness) -> (Caller, Caller) {
    let mut p = profile(
        "two-calls",
        2,
        &[Permission::Read, Permission::Write],
        json!({"max_api_calls": 2}),
    );
    p.escalation = true;
    give(h, p.clone(), "asker").await;
    give(h, p, "other").await;
    let (asker, other) = (Caller::new("asker", "claude_code"), Caller::new("other", "claude_code"));
    for who in [&asker, &other] {
        for _ in 0..2 {
            check(h, who, "src/warmup.rs").await.expect("within the limit");
        }
    }
    (asker, other)
}

pub async fn approvals_grant_once_for_that_agent_and_request(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (asker, other) = limited(&h).await;

    // Over the limit: refused, with a pending request; asking again joins it.
    let a = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    assert_eq!(awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err()), a);
    let item = get(&h, &a).await;
    assert_eq!(
        (
            item.status,
            item.agent_id.as_str(),
            item.operation.as_str(),
            item.error.as_str()
        ),
        (
            ApprovalStatus::Pending,
            "asker",
            "check_locks",
            "resource_limit_exceeded"
        )
    );
    assert_eq!(item.parameters, json!({"file_paths": ["src/a.rs"]}));
    assert_eq!(item.params_hash.len(), 64);

    // Below trust 4 nobody decides; nobody decides their own request, whatever their
    // trust. (Through HTTP the suite holds an operator key, which decides as whoever it
    // names: the asker's own request is still not theirs to decide.)
    let by_asker = code(decide(&h, &asker, &a, Decision::Approve, None).await);
    if h.door == Door::Http {
        assert_eq!(by_asker, ErrorCode::CannotApproveOwnRequest);
    } else {
        assert_eq!(by_asker, ErrorCode::InsufficientTrustLevel);
        assert_eq!(
            code(decide(&h, &agent("trust-3"), &a, Decision::Approve, None).await),
            ErrorCode::InsufficientTrustLevel
        );
    }
    let mut admin = profile("limited-admin", 4, &[Permission::Read], json!({"max_api_calls": 1}));
    admin.escalation = true;
    give(&h, admin, "lead").await;
    let lead = Caller::new("lead", "claude_code");
    check(&h, &lead, "src/warmup.rs").await.expect("within the limit");
    let own = awaiting(check(&h, &lead, "src/a.rs").await.unwrap_err());
    assert_eq!(
        code(decide(&h, &lead, &own, Decision::Approve, None).await),
        ErrorCode::CannotApproveOwnRequest
    );
    let approved = decide(&h, &operator("boss"), &a, Decision::Approve, Some(30))
        .await
        .unwrap();
    assert_eq!(approved.status, ApprovalStatus::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("boss"));
    assert_eq!(
        code(decide(&h, &operator("boss"), &a, Decision::Deny, None).await),
        ErrorCode::ApprovalNotPending
    );

    // Another agent's same request, and the asker's different request, are not granted.
    let b_id = awaiting(check(&h, &other, "src/a.rs").await.unwrap_err());
    assert_ne!(b_id, a);
    let c_id = awaiting(check(&h, &asker, "src/c.rs").await.unwrap_err());
    assert_ne!(c_id, a);

    // The same request passes once; the grant is then used.
    check(&h, &asker, "src/a.rs").await.expect("the approval lets it pass");
    let used = get(&h, &a).await;
    assert_eq!(used.status, ApprovalStatus::Used);
    assert!(used.used_at.is_some());
    let d = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    assert_ne!(d, a, "a second use asks again");

    // The audit trail says which grant let the call through, and who decided.
    let log = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("asker".into()),
            operation: Some("check_locks".into()),
            limit: Some(50),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let passed: Vec<_> = log
        .entries
        .iter()
        .filter(|e| e.result["approval_used"] == a.as_str())
        .collect();
    assert_eq!(passed.len(), 1, "{:?}", log.entries);
    assert!(passed[0].success);
    let refused = log
        .entries
        .iter()
        .filter(|e| e.error_code.as_deref() == Some("resource_limit_exceeded"))
        .count();
    assert_eq!(refused, 4, "every refusal is audited");
    let decisions = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            operation: Some("decide_approval".into()),
            success: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(decisions.entries.len(), 1);
    assert_eq!(decisions.entries[0].agent_id, "boss");

    // Listing: by requester and by status.
    let pending = run::<ops::ListApprovals>(
        &h,
        &asker,
        ListApprovalsRequest {
            status: Some(ApprovalStatus::Pending),
            requested_by: Some("asker".into()),
            limit: None,
        },
    )
    .await
    .unwrap();
    let ids: Vec<&str> = pending.approvals.iter().map(|x| x.approval_id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&c_id.as_str()) && ids.contains(&d.as_str()), "{ids:?}");
    assert_eq!(
        code(
            run::<ops::GetApproval>(
                &h,
                &asker,
                GetApprovalRequest {
                    approval_id: "apr_nope".into()
                }
            )
            .await
        ),
        ErrorCode::NotFound
    );
}

pub async fn approvals_expire_and_denials_stick(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (asker, _) = limited(&h).await;
    let a = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    decide(&h, &operator("boss"), &a, Decision::Approve, Some(5))
        .await
        .unwrap();
    h.advance(6);
    let again = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    assert_ne!(again, a, "an expired approval grants nothing");
    assert_eq!(get(&h, &a).await.status, ApprovalStatus::Expired);
    assert_eq!(
        code(decide(&h, &operator("boss"), &a, Decision::Approve, None).await),
        ErrorCode::ApprovalNotPending
    );
    let denied = decide(&h, &operator("boss"), &again, Decision::Deny, None)
        .await
        .unwrap();
    assert_eq!(denied.status, ApprovalStatus::Denied);
    assert_eq!(denied.note.as_deref(), Some("checked"));
    let after = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    assert_ne!(after, again);
    // A request nobody decides expires too.
    h.advance(coord_domain::approvals::PENDING_MINUTES + 1);
    assert_eq!(get(&h, &after).await.status, ApprovalStatus::Expired);
    let expired = run::<ops::ListApprovals>(
        &h,
        &operator("boss"),
        ListApprovalsRequest {
            status: Some(ApprovalStatus::Expired),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(expired.approvals.len(), 2, "{:?}", expired.approvals);
}

/// An approved file over the limit stays usable: refreshing its lock and the edit guard's
/// question about it add nothing, so they are not over the limit.
pub async fn approvals_an_approved_file_stays_usable(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let mut p = profile(
        "one-file",
        2,
        &[Permission::Read, Permission::Write],
        json!({"max_file_modifications": 1}),
    );
    p.escalation = true;
    give(&h, p, "filer").await;
    let filer = Caller::new("filer", "claude_code");
    let lock = |path: &'static str| {
        run::<locks::AcquireLock>(
            &h,
            &filer,
            AcquireLockRequest {
                file_path: path.into(),
                ..Default::default()
            },
        )
    };
    assert!(lock("src/a.rs").await.unwrap().success);
    let e = lock("src/b.rs").await.unwrap_err();
    assert_eq!(e.to_value()["limit"], "max_file_modifications");
    let id = e.to_value()["approval_id"]
        .as_str()
        .expect("approval requested")
        .to_string();
    decide(&h, &operator("boss"), &id, Decision::Approve, None)
        .await
        .unwrap();
    assert!(lock("src/b.rs").await.unwrap().success, "approved once");
    assert!(lock("src/b.rs").await.unwrap().success, "refreshing adds nothing");
    run::<locks::CheckEdit>(
        &h,
        &filer,
        CheckEditRequest {
            paths: vec!["src/b.rs".into(), "src/a.rs".into()],
        },
    )
    .await
    .expect("editing counted files adds nothing");
    // A directory lock covers any number of files: refused under a finite limit.
    let e = lock("src/").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded, "{e:?}");
    let e = lock("src/c.rs").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
}

/// Eight concurrent uses of one approval: exactly one passes.
pub async fn approvals_are_spent_once_under_concurrency(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (asker, _) = limited(&h).await;
    let a = awaiting(check(&h, &asker, "src/a.rs").await.unwrap_err());
    decide(&h, &operator("boss"), &a, Decision::Approve, None)
        .await
        .unwrap();
    let h = Arc::new(h);
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (h, asker) = (h.clone(), asker.clone());
            tokio::spawn(async move { check(&h, &asker, "src/a.rs").await })
        })
        .collect();
    let mut passed = 0;
    for r in racers {
        match r.await.unwrap() {
            Ok(_) => passed += 1,
            Err(e) => {
                awaiting(e);
            }
        }
    }
    assert_eq!(passed, 1);
    assert_eq!(get(&h, &a).await.status, ApprovalStatus::Used);
}
