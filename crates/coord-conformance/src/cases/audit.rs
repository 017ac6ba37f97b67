//! Requirement "Audit Trail", identity checks, status, and storage failure.

use crate::{Backend, Harness, agent, operator};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::handoffs::WriteHandoffRequest;
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, ReleaseLockRequest};
use coord_domain::sessions::HeartbeatRequest;
use coord_domain::{Caller, ErrorCode};
use coord_service::CoordinationExt as _;

fn acquire(path: &str, ttl: Option<i64>) -> AcquireLockRequest {
    AcquireLockRequest {
        file_path: path.into(),
        reason: None,
        ttl_minutes: ttl,
    }
}

pub async fn audit_records_every_operation_including_refusals(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, admin) = (agent("agent-a"), agent("agent-b"), operator("admin"));
    h.coord.acquire_lock(&a, acquire("a.rs", Some(30))).await.unwrap(); // success
    h.coord.acquire_lock(&bb, acquire("a.rs", None)).await.unwrap(); // blocked
    h.coord
        .release_lock(
            &bb,
            ReleaseLockRequest {
                file_path: "a.rs".into(),
            },
        )
        .await
        .unwrap_err(); // not owner
    h.coord.acquire_lock(&bb, acquire("b.rs", Some(999))).await.unwrap_err(); // refused before the store
    h.coord.check_locks(&bb, CheckLocksRequest::default()).await.unwrap(); // a read

    let log = h
        .coord
        .query_audit(
            &admin,
            AuditQueryRequest {
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let rows: Vec<_> = log.entries.iter().rev().collect();
    assert_eq!(rows.len(), 5, "every operation is audited: {rows:#?}");
    let summary: Vec<_> = rows
        .iter()
        .map(|e| {
            (
                e.agent_id.as_str(),
                e.operation.as_str(),
                e.success,
                e.error_code.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("agent-a", "acquire_lock", true, None),
            ("agent-b", "acquire_lock", false, None),
            ("agent-b", "release_lock", false, Some("not_lock_owner")),
            ("agent-b", "acquire_lock", false, Some("ttl_out_of_range")),
            ("agent-b", "check_locks", true, None),
        ]
    );
    let first = rows[0];
    assert_eq!(first.agent_type, crate::harness::AGENT_TYPE);
    assert_eq!(first.timestamp, h.now());
    assert_eq!(first.parameters["file_path"], "a.rs");
    assert_eq!(first.parameters["ttl_minutes"], 30);
    assert_eq!(first.result["action"], "acquired");
    assert!(first.duration_ms.is_finite() && first.duration_ms >= 0.0 && first.duration_ms < 60_000.0);
    assert_eq!(rows[1].result["action"], "blocked");
    assert_eq!(rows[2].result["error"], "not_lock_owner");
    assert!(
        rows.windows(2).all(|w| w[0].id < w[1].id),
        "ids increase in commit order"
    );
}

pub async fn audit_query_filters(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, admin) = (agent("agent-a"), agent("agent-b"), operator("admin"));
    let t0 = h.now();
    h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
    h.advance(10);
    let t1 = h.now();
    h.coord.heartbeat(&bb, HeartbeatRequest {}).await.unwrap();
    h.coord
        .write_handoff(&bb, WriteHandoffRequest::default())
        .await
        .unwrap_err();
    h.advance(10);
    h.coord.acquire_lock(&a, acquire("x.rs", None)).await.unwrap();

    let q = |req: AuditQueryRequest| {
        let coord = &h.coord;
        let admin = admin.clone();
        async move {
            coord
                .query_audit(&admin, req)
                .await
                .unwrap()
                .entries
                .into_iter()
                .filter(|e| e.operation != "query_audit")
                .map(|e| format!("{}:{}", e.agent_id, e.operation))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        q(AuditQueryRequest {
            agent_id: Some("agent-a".into()),
            ..Default::default()
        })
        .await,
        ["agent-a:acquire_lock", "agent-a:heartbeat"],
        "newest first"
    );
    assert_eq!(
        q(AuditQueryRequest {
            operation: Some("heartbeat".into()),
            ..Default::default()
        })
        .await,
        ["agent-b:heartbeat", "agent-a:heartbeat"]
    );
    assert_eq!(
        q(AuditQueryRequest {
            success: Some(false),
            ..Default::default()
        })
        .await,
        ["agent-b:write_handoff"]
    );
    assert_eq!(
        q(AuditQueryRequest {
            since: Some(t1),
            until: Some(t1 + chrono::Duration::minutes(5)),
            ..Default::default()
        })
        .await,
        ["agent-b:write_handoff", "agent-b:heartbeat"]
    );
    assert_eq!(
        q(AuditQueryRequest {
            until: Some(t1),
            ..Default::default()
        })
        .await,
        ["agent-a:heartbeat"]
    );
    assert_eq!(
        q(AuditQueryRequest {
            since: Some(t0),
            operation: Some("heartbeat".into()),
            limit: Some(1),
            ..Default::default()
        })
        .await,
        ["agent-b:heartbeat"]
    );
    // The excluded type's rows go, the others stay (the cases' agents are all
    // claude_code, the operator a cli whose rows here are its queries).
    let others = q(AuditQueryRequest {
        exclude_agent_type: Some(crate::AGENT_TYPE.into()),
        ..Default::default()
    })
    .await;
    assert_eq!(others, Vec::<String>::new(), "only the operator's own queries are left");
    assert_eq!(
        q(AuditQueryRequest {
            exclude_agent_type: Some("cli".into()),
            operation: Some("heartbeat".into()),
            ..Default::default()
        })
        .await,
        ["agent-b:heartbeat", "agent-a:heartbeat"]
    );
    let e = h
        .coord
        .query_audit(
            &admin,
            AuditQueryRequest {
                since: Some(t1),
                until: Some(t0),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("until"));
}

pub async fn audit_rows_are_append_only(b: &dyn Backend) {
    let h = Harness::new(b).await;
    h.coord.heartbeat(&agent("a"), HeartbeatRequest {}).await.unwrap();
    for sql in ["UPDATE audit_log SET operation = 'forged'", "DELETE FROM audit_log"] {
        let r = h.raw.execute(sql).await;
        assert!(r.is_err(), "{sql} must be rejected, got {r:?}");
    }
    let log = h
        .coord
        .query_audit(&operator("admin"), AuditQueryRequest::default())
        .await
        .unwrap();
    assert!(log.entries.iter().any(|e| e.operation == "heartbeat"));
    assert!(log.entries.iter().all(|e| e.operation != "forged"));
}

pub async fn identity_is_validated(b: &dyn Backend) {
    let h = Harness::new(b).await;
    for bad in [
        Caller::new("", "t"),
        Caller::new("a", " "),
        Caller::new("x".repeat(200), "t"),
        Caller::new("a\u{7}", "t"),
    ] {
        let e = h.coord.acquire_lock(&bad, acquire("a.rs", None)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidIdentity, "{bad:?}");
    }
    assert!(
        h.coord
            .check_locks(&agent("a"), CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .is_empty()
    );
    let log = h
        .coord
        .query_audit(&operator("admin"), AuditQueryRequest::default())
        .await
        .unwrap();
    assert_eq!(
        log.entries
            .iter()
            .filter(|e| e.error_code.as_deref() == Some("invalid_identity"))
            .count(),
        4,
        "refused identities are audited too"
    );
}

pub async fn status_summarises(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (me, other) = (agent("me"), agent("other"));
    h.coord.heartbeat(&me, HeartbeatRequest {}).await.unwrap();
    h.lock(&me, "mine.rs", None).await;
    h.lock(&other, "theirs.rs", None).await;
    let t1 = h.submit(&other, "t", 1, &[]).await;
    h.submit(&other, "t", 5, &[&t1]).await;
    h.submit(&other, "t", 5, &[]).await;
    assert_eq!(h.claimed_id(&me).await, t1);
    h.coord
        .write_handoff(
            &other,
            WriteHandoffRequest {
                summary: "latest".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let s = h.coord.status(&me).await.unwrap();
    assert!(s.success);
    assert_eq!(s.identity.agent_id, "me");
    assert_eq!(s.live_locks, 2);
    assert_eq!(s.my_locks.len(), 1);
    assert_eq!(s.my_locks[0].file_path, "mine.rs");
    assert_eq!((s.tasks.pending, s.tasks.waiting, s.tasks.claimed), (2, 1, 1));
    assert_eq!(s.my_tasks.len(), 1);
    assert_eq!(s.agents.active, 1);
    assert_eq!(s.latest_handoff.unwrap().summary, "latest");
    assert_eq!(s.backend, h.store.backend());
}

pub async fn storage_failure_is_database_unavailable(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    h.lock(&a, "before.rs", None).await;
    h.raw.break_store().await;
    let e = h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
    let e = h
        .coord
        .write_handoff(
            &a,
            WriteHandoffRequest {
                summary: "s".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
    let e = h.coord.acquire_lock(&a, acquire("during.rs", None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
    let v = e.to_value();
    assert_eq!(v["success"], false);
    assert_eq!(v["error"], "database_unavailable");
    h.raw.heal_store().await;
    // The store recovers by itself, and nothing half-written is left behind.
    let locks = h.coord.check_locks(&a, CheckLocksRequest::default()).await.unwrap();
    let paths: Vec<_> = locks.locks.iter().map(|l| l.file_path.as_str()).collect();
    assert_eq!(paths, ["before.rs"]);
    h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
}
