//! Requirement "Audit Trail": the hash chain and its verification (tampering by direct
//! SQL as a superuser is found and the first bad row named), linear under concurrent
//! writers, retention by prune with a signed checkpoint, and who may read what.

use crate::cases::profiles::run;
use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::audit::{AuditOutcome, AuditQueryRequest, AuditQueryResult};
use coord_domain::audit_chain::{
    ChainHead, PruneAuditRequest, PruneAuditResult, VerifyAuditRequest, VerifyAuditResult,
};
use coord_domain::locks::AcquireLockRequest;
use coord_domain::sessions::HeartbeatRequest;
use coord_domain::{Caller, CoordResult, ErrorCode};
use coord_service::CoordinationExt as _;
use coord_service::ops::audit;

async fn verify(h: &Harness, expect_head: Option<ChainHead>) -> VerifyAuditResult {
    run::<audit::VerifyAudit>(h, &operator("auditor"), VerifyAuditRequest { expect_head })
        .await
        .expect("verify_audit answers")
}

async fn prune(h: &Harness, who: &Caller, days: Option<i64>, dry_run: bool) -> CoordResult<PruneAuditResult> {
    run::<audit::PruneAudit>(
        h,
        who,
        PruneAuditRequest {
            older_than_days: days,
            dry_run: Some(dry_run),
        },
    )
    .await
}

async fn rows(h: &Harness, req: AuditQueryRequest) -> AuditQueryResult {
    run::<audit::QueryAudit>(h, &operator("auditor"), req).await.unwrap()
}

/// Some traffic from two agents: successes and refusals.
async fn traffic(h: &Harness) {
    let (a, b) = (agent("agent-a"), agent("agent-b"));
    for i in 0..3 {
        h.lock(&a, &format!("src/{i}.rs"), Some(30)).await;
        h.lock(&b, &format!("src/{i}.rs"), None).await; // blocked
    }
    h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
}

/// Lifts the stores' append-only triggers, as a database superuser can.
async fn unguard(h: &Harness) {
    for sql in [
        "DROP TRIGGER IF EXISTS audit_log_no_update",
        "DROP TRIGGER IF EXISTS audit_log_no_delete",
        "DROP TRIGGER IF EXISTS audit_checkpoints_no_update",
        "ALTER TABLE audit_log DISABLE TRIGGER USER",
        "ALTER TABLE audit_checkpoints DISABLE TRIGGER USER",
    ] {
        // Each statement is one store's dialect; the other store refuses it.
        let _ = h.raw.execute(sql).await;
    }
}

async fn id_at(h: &Harness, seq: i64) -> i64 {
    rows(
        h,
        AuditQueryRequest {
            limit: Some(10_000),
            ..Default::default()
        },
    )
    .await
    .entries
    .iter()
    .find(|e| e.chain.as_ref().is_some_and(|c| c.seq == seq))
    .map(|e| e.id)
    .expect("a row at that position")
}

/// What is done, the statements, the kind of problem, the first bad position, and the
/// position the named row had before.
type Tamper<'a> = (&'a str, &'a [&'a str], &'a str, Option<i64>, Option<i64>);

pub async fn audit_chain_verifies_and_names_the_first_tampered_row(b: &dyn Backend) {
    let tampering: [Tamper; 5] = [
        (
            "edit a row",
            &["UPDATE audit_log SET operation = 'forged' WHERE chain_seq = 3"],
            "edited",
            Some(3),
            Some(3),
        ),
        (
            "edit a result",
            &["UPDATE audit_log SET success = (1 = 1) WHERE chain_seq = 4"],
            "edited",
            Some(4),
            Some(4),
        ),
        (
            "delete a row",
            &["DELETE FROM audit_log WHERE chain_seq = 2"],
            "missing",
            Some(3),
            Some(3),
        ),
        (
            "reorder two rows",
            &[
                "UPDATE audit_log SET chain_seq = -chain_seq WHERE chain_seq IN (2, 3)",
                "UPDATE audit_log SET chain_seq = CASE chain_seq WHEN -2 THEN 3 ELSE 2 END WHERE chain_seq IN (-2, -3)",
            ],
            "edited",
            Some(2),
            Some(3),
        ),
        (
            "insert a row",
            &[
                "INSERT INTO audit_log (\"timestamp\", agent_id, agent_type, operation, parameters, result, success, \
               error_code, duration_ms) SELECT \"timestamp\", agent_id, agent_type, 'forged', parameters, result, \
               success, error_code, duration_ms FROM audit_log WHERE chain_seq = 2",
            ],
            "inserted",
            None,
            None,
        ),
    ];
    for (name, sql, kind, seq, was_at) in tampering {
        let h = Harness::new(b).await;
        traffic(&h).await;
        let clean = verify(&h, None).await;
        assert!(clean.intact, "{name}: before tampering {clean:?}");
        assert!(clean.rows_checked >= 7, "{clean:?}");
        assert_eq!(clean.unchained_rows, 0);
        let expected_id = match was_at {
            Some(s) => Some(id_at(&h, s).await),
            None => None,
        };
        unguard(&h).await;
        for s in sql {
            h.raw.execute(s).await.unwrap_or_else(|e| panic!("{name}: {s}: {e}"));
        }
        let r = verify(&h, None).await;
        assert!(!r.intact, "{name}: {r:?}");
        let p = r.problem.expect("a problem");
        assert_eq!((p.kind.as_str(), p.seq), (kind, seq), "{name}: {}", p.message);
        if expected_id.is_some() {
            assert_eq!(p.id, expected_id, "{name}: names the row: {}", p.message);
        } else {
            assert!(p.id.is_some(), "{name}: names the inserted row");
        }
    }
}

pub async fn audit_chain_detects_rows_cut_from_the_end(b: &dyn Backend) {
    let h = Harness::new(b).await;
    traffic(&h).await;
    let before = verify(&h, None).await;
    let head = before.head.clone().expect("a head");
    // The verify itself was audited after the head it printed: the head is still there.
    assert!(verify(&h, Some(head.clone())).await.intact);
    unguard(&h).await;
    h.raw
        .execute(&format!("DELETE FROM audit_log WHERE chain_seq >= {}", head.seq))
        .await
        .unwrap();
    assert!(verify(&h, None).await.intact, "a cut tail alone looks whole");
    let r = verify(&h, Some(head.clone())).await;
    assert_eq!(
        r.problem.map(|p| p.kind),
        Some("missing".into()),
        "but not against a recorded head"
    );
    let e = run::<audit::VerifyAudit>(
        &h,
        &operator("auditor"),
        VerifyAuditRequest {
            expect_head: Some(ChainHead {
                seq: 0,
                hash: "nothex".into(),
            }),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("expect_head"));
}

pub async fn audit_chain_stays_linear_under_concurrent_writers(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let mut tasks = Vec::new();
    for w in 0..8 {
        let coord = h.coord.clone();
        tasks.push(tokio::spawn(async move {
            let who = agent(&format!("writer-{w}"));
            for i in 0..10 {
                let req = AcquireLockRequest {
                    file_path: format!("w{w}/{i}.rs"),
                    reason: None,
                    ttl_minutes: Some(5),
                };
                coord.acquire_lock(&who, req).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let r = verify(&h, None).await;
    assert!(r.intact, "{r:?}");
    assert!(r.rows_checked >= 80, "{r:?}");
    let all = rows(
        &h,
        AuditQueryRequest {
            after_id: Some(0),
            limit: Some(10_000),
            ..Default::default()
        },
    )
    .await;
    let mut seqs: Vec<i64> = all
        .entries
        .iter()
        .filter_map(|e| e.chain.as_ref().map(|c| c.seq))
        .collect();
    seqs.sort();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "positions without gaps or repeats"
    );
}

pub async fn audit_prune_leaves_a_signed_checkpoint(b: &dyn Backend) {
    let h = Harness::new(b).await;
    traffic(&h).await;
    let old = rows(
        &h,
        AuditQueryRequest {
            limit: Some(10_000),
            ..Default::default()
        },
    )
    .await
    .entries
    .len() as i64;
    h.advance(100 * 24 * 60);
    h.coord.heartbeat(&agent("agent-a"), HeartbeatRequest {}).await.unwrap();

    // Only an administrator prunes (through HTTP the suite holds an operator key, which
    // administers whoever it names); bad input is refused.
    if h.door != Door::Http {
        let e = prune(&h, &agent("agent-a"), None, true).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }
    let e = prune(&h, &operator("op"), Some(0), false).await.unwrap_err();
    assert_eq!(e.field.as_deref(), Some("older_than_days"));

    let dry = prune(&h, &operator("op"), None, true).await.unwrap();
    assert!(dry.dry_run && dry.checkpoint.is_none());
    // The rows counted before, plus the query that counted them.
    assert_eq!(dry.pruned_rows, old + 1, "{dry:?}");
    let done = prune(&h, &operator("op"), None, false).await.unwrap();
    assert_eq!(done.pruned_rows, dry.pruned_rows);
    let cp = done.checkpoint.clone().expect("a checkpoint");
    assert_eq!(cp.body.key_id, Harness::audit_key().id());
    assert_eq!(
        prune(&h, &operator("op"), None, false).await.unwrap().pruned_rows,
        0,
        "nothing left to prune"
    );

    let r = verify(&h, None).await;
    assert!(r.intact, "{r:?}");
    assert_eq!(
        (r.first_seq, r.checkpoints, r.signatures.as_str()),
        (Some(cp.body.through_seq + 1), 1, "verified")
    );
    let left = rows(
        &h,
        AuditQueryRequest {
            limit: Some(10_000),
            ..Default::default()
        },
    )
    .await;
    assert!(
        left.entries.iter().all(|e| e.timestamp >= done.cutoff),
        "only rows inside retention remain"
    );
    assert!(left.entries.iter().any(|e| e.operation == "heartbeat"));

    // A prune that removes every row: ids are never given twice, and the chain goes on
    // from the checkpoint.
    let newest = left.entries.iter().map(|e| e.id).max().expect("rows");
    h.advance(100 * 24 * 60);
    let all = prune(&h, &operator("op"), None, false).await.unwrap();
    assert!(all.pruned_rows >= left.entries.len() as i64, "{all:?}");
    let after = rows(
        &h,
        AuditQueryRequest {
            limit: Some(10_000),
            ..Default::default()
        },
    )
    .await;
    assert!(!after.entries.is_empty());
    assert!(
        after.entries.iter().all(|e| e.id > newest),
        "ids after {newest} only: {:?}",
        after.entries.iter().map(|e| e.id).collect::<Vec<_>>()
    );
    let r = verify(&h, None).await;
    assert!(r.intact, "{r:?}");
    assert_eq!(r.checkpoints, 2);

    // Rows the checkpoint does not cover stay append-only, whoever asks.
    for sql in ["DELETE FROM audit_log", "UPDATE audit_checkpoints SET pruned_rows = 0"] {
        assert!(h.raw.execute(sql).await.is_err(), "{sql} must be refused");
    }
    // A forged checkpoint (a superuser's copy with other numbers) is found.
    unguard(&h).await;
    h.raw
        .execute(
            "INSERT INTO audit_checkpoints (created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, \
             signature) SELECT created_at, through_seq + 1, through_hash, cutoff, pruned_rows + 1, key_id, signature \
             FROM audit_checkpoints",
        )
        .await
        .unwrap();
    let r = verify(&h, None).await;
    assert_eq!(r.problem.map(|p| p.kind), Some("bad_checkpoint".into()));
}

pub async fn audit_query_scopes_filters_and_pages(b: &dyn Backend) {
    let h = Harness::new(b).await;
    traffic(&h).await;
    let a = agent("agent-a");
    // An agent sees its own rows, and may not ask for another's (through HTTP the suite
    // holds an operator key, which reads as an administrator whoever it names; bound
    // keys are scoped: see coord-http's access matrix).
    if h.door != Door::Http {
        scoped_to_own_rows(&h, &a).await;
    }

    let of = |outcome| AuditQueryRequest {
        operation: Some("acquire_lock".into()),
        result: Some(outcome),
        ..Default::default()
    };
    let allowed = rows(&h, of(AuditOutcome::Allowed)).await;
    let refused = rows(&h, of(AuditOutcome::Refused)).await;
    assert_eq!((allowed.entries.len(), refused.entries.len()), (3, 3));
    assert!(allowed.entries.iter().all(|e| e.success && e.agent_id == "agent-a"));
    assert!(refused.entries.iter().all(|e| !e.success && e.agent_id == "agent-b"));
    assert!(rows(&h, of(AuditOutcome::Error)).await.entries.is_empty());

    // Paging forward from an id: oldest first, no row twice, none skipped.
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let page = rows(
            &h,
            AuditQueryRequest {
                after_id: Some(after),
                limit: Some(2),
                ..Default::default()
            },
        )
        .await;
        seen.extend(page.entries.iter().map(|e| e.id));
        // A short page is the end: every page read is itself audited, so a reader that
        // waited for an empty page would chase its own rows forever.
        match page.entries.last() {
            Some(last) if page.entries.len() == 2 => after = last.id,
            _ => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "ascending, without repeats");
    assert!(seen.len() >= 7);
    let e = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            after_id: Some(-1),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("after_id"));
}

/// An agent reads its own rows only; asking for another's, or verifying, is refused.
async fn scoped_to_own_rows(h: &Harness, a: &Caller) {
    let mine = run::<audit::QueryAudit>(h, a, AuditQueryRequest::default())
        .await
        .unwrap();
    assert!(!mine.entries.is_empty());
    assert!(mine.entries.iter().all(|e| e.agent_id == "agent-a"));
    let e = run::<audit::QueryAudit>(
        h,
        a,
        AuditQueryRequest {
            agent_id: Some("agent-b".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    let e = run::<audit::VerifyAudit>(h, a, VerifyAuditRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
}

/// Values the stores give back differently from how they were written (jsonb rewrites
/// exponents and reorders keys; floats must parse back exactly; deep nesting) still
/// verify: a legitimate row must never look tampered.
pub async fn audit_chain_verifies_awkward_values(b: &dyn Backend) {
    use coord_domain::queue::{ListTasksRequest, SubmitWorkRequest};
    let h = Harness::new(b).await;
    let mut deep = serde_json::json!("bottom");
    for _ in 0..70 {
        deep = serde_json::json!([deep]);
    }
    let input = serde_json::json!({
        "z": 117.63331139400017, "y": 4.4737164812014446e192, "x": 1e300, "w": 1e18, "v": 3.0,
        "u": -0.0, "t": 9007199254740993_i64, "s": 18446744073709551615_u64, "r": 0.1,
        "unicode": "é ✓ \u{1F600}", "deep": deep
    });
    let a = agent("agent-a");
    let submitted = h
        .coord
        .submit_work(
            &a,
            SubmitWorkRequest {
                task_type: "t".into(),
                task_description: "awkward values".into(),
                input_data: Some(input),
                priority: None,
                depends_on: None,
            },
        )
        .await;
    assert!(submitted.is_ok(), "{submitted:?}");
    h.coord.list_tasks(&a, ListTasksRequest::default()).await.unwrap(); // echoes input_data
    let r = verify(&h, None).await;
    assert!(r.intact, "{r:?}");
    assert!(r.rows_checked >= 2);
}
