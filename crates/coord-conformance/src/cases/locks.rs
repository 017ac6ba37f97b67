//! Requirement "File Locking".

use crate::{Backend, Harness, agent, operator};
use coord_domain::ErrorCode;
use coord_domain::locks::{AcquireLockRequest, CheckEditRequest, CheckLocksRequest, LockAction, ReleaseLockRequest};
use coord_service::CoordinationExt as _;
use std::collections::HashSet;
use std::sync::Arc;

fn release(path: &str) -> ReleaseLockRequest {
    ReleaseLockRequest { file_path: path.into() }
}

pub async fn locks_acquire_then_other_is_blocked(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let got = h
        .coord
        .acquire_lock(
            &a,
            AcquireLockRequest {
                file_path: "src/main.rs".into(),
                reason: Some("refactor".into()),
                ttl_minutes: None,
            },
        )
        .await
        .unwrap();
    assert!(got.success);
    assert_eq!(got.action, LockAction::Acquired);
    assert_eq!(got.file_path, "src/main.rs");
    assert_eq!(
        got.expires_at,
        h.now() + chrono::Duration::minutes(120),
        "default TTL is 120 minutes"
    );
    assert_eq!(got.reason.as_deref(), Some("refactor"));
    assert!(got.fencing_token.is_some());

    let blocked = h.lock(&bb, "src/main.rs", Some(30)).await;
    assert!(!blocked.success);
    assert_eq!(blocked.action, LockAction::Blocked);
    assert_eq!(blocked.locked_by.as_deref(), Some("agent-a"));
    assert_eq!(
        blocked.expires_at, got.expires_at,
        "blocked answer carries the holder's expiry"
    );
    assert_eq!(blocked.lock_reason.as_deref(), Some("refactor"));
    assert_eq!(blocked.fencing_token, None);

    let v = serde_json::to_value(&blocked).unwrap();
    assert_eq!(v["success"], false);
    assert_eq!(v["action"], "blocked");
    assert_eq!(v["locked_by"], "agent-a");
}

pub async fn locks_holder_refreshes_and_keeps_token(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let first = h.lock(&a, "a.rs", Some(10)).await;
    assert_eq!(first.action, LockAction::Acquired);
    h.advance(5);
    let again = h.lock(&a, "a.rs", Some(60)).await;
    assert!(again.success);
    assert_eq!(again.action, LockAction::Refreshed);
    assert_eq!(
        again.fencing_token, first.fencing_token,
        "a refresh continues the same lease"
    );
    assert_eq!(again.expires_at, h.now() + chrono::Duration::minutes(60));
    // Once its own lease has run out, the same agent starts a new lease with a new token.
    h.advance(60);
    let renewed = h.lock(&a, "a.rs", Some(10)).await;
    assert_eq!(renewed.action, LockAction::Acquired);
    assert!(renewed.fencing_token.unwrap() > again.fencing_token.unwrap());
}

pub async fn locks_release_frees_for_others(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let first = h.lock(&a, "a.rs", None).await;
    assert_eq!(first.action, LockAction::Acquired);
    let r = h.coord.release_lock(&a, release("a.rs")).await.unwrap();
    assert!(r.success && r.released);
    assert_eq!(serde_json::to_value(&r).unwrap()["released"], true);
    let second = h.lock(&bb, "a.rs", None).await;
    assert_eq!(second.action, LockAction::Acquired);
    assert!(second.fencing_token.unwrap() > first.fencing_token.unwrap());
    let listed = h.coord.check_locks(&a, CheckLocksRequest::default()).await.unwrap();
    assert_eq!(listed.locks.len(), 1);
    assert_eq!(listed.locks[0].locked_by, "agent-b");
}

pub async fn locks_release_refusals(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    h.lock(&a, "a.rs", None).await;
    let e = h.coord.release_lock(&bb, release("a.rs")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotLockOwner);
    assert_eq!(e.details["locked_by"], "agent-a");
    let e = h.coord.release_lock(&a, release("free.rs")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::LockNotHeld);
    let e = h.coord.release_lock(&a, release("../up.rs")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidPath);
    // The refused release changed nothing.
    let still = h.lock(&bb, "a.rs", None).await;
    assert_eq!(still.action, LockAction::Blocked);
}

pub async fn locks_ttl_bounds(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    for bad in [0, -1, 481, 100_000] {
        let e = h
            .coord
            .acquire_lock(
                &a,
                AcquireLockRequest {
                    file_path: "a.rs".into(),
                    reason: None,
                    ttl_minutes: Some(bad),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::TtlOutOfRange, "ttl {bad}");
        assert_eq!(e.field.as_deref(), Some("ttl_minutes"));
    }
    assert!(
        h.coord
            .check_locks(&a, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .is_empty()
    );
    let one = h.lock(&a, "one.rs", Some(1)).await;
    assert_eq!(one.expires_at, h.now() + chrono::Duration::minutes(1));
    let max = h.lock(&a, "max.rs", Some(480)).await;
    assert_eq!(max.expires_at, h.now() + chrono::Duration::minutes(480));
}

pub async fn locks_expire_with_the_clock(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let held = h.lock(&a, "a.rs", Some(10)).await;
    assert_eq!(held.action, LockAction::Acquired);
    h.advance(9);
    assert_eq!(h.lock(&bb, "a.rs", None).await.action, LockAction::Blocked);
    assert_eq!(
        h.coord
            .check_locks(&a, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .len(),
        1
    );
    h.advance(1);
    // Exactly at expires_at the lease is over.
    assert!(
        h.coord
            .check_locks(&a, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .is_empty()
    );
    let e = h.coord.release_lock(&a, release("a.rs")).await.unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::LockNotHeld,
        "an expired lock is no longer the holder's"
    );
    let taken = h.lock(&bb, "a.rs", None).await;
    assert_eq!(taken.action, LockAction::Acquired);
    assert!(taken.fencing_token.unwrap() > held.fencing_token.unwrap());
    // The former holder re-acquiring its own expired lock gets a new lease, not a refresh.
    h.advance(200);
    let back = h.lock(&a, "a.rs", None).await;
    assert_eq!(back.action, LockAction::Acquired);
    assert!(back.fencing_token.unwrap() > taken.fencing_token.unwrap());
}

pub async fn locks_fencing_tokens_increase_across_expiry_release_and_sweep(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let who = [agent("agent-a"), agent("agent-b")];
    let mut last = 0;
    for round in 0..6 {
        let me = &who[round % 2];
        let got = h.lock(me, "hot.rs", Some(1)).await;
        assert_eq!(got.action, LockAction::Acquired, "round {round}");
        let token = got.fencing_token.unwrap();
        assert!(token > last, "round {round}: token {token} after {last}");
        last = token;
        match round % 3 {
            0 => {
                h.coord.release_lock(me, release("hot.rs")).await.unwrap();
            }
            1 => h.advance(2),
            _ => {
                h.advance(2);
                let swept = h.sweep().await.unwrap();
                assert_eq!(swept.expired_locks_deleted, 1, "the sweep deletes the expired row");
            }
        }
    }
}

pub async fn locks_check_lists_live_locks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    assert!(
        h.coord
            .check_locks(&a, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .is_empty()
    );
    h.lock(&a, "b.rs", Some(5)).await;
    h.lock(&bb, "a.rs", Some(60)).await;
    h.lock(&a, "c.rs", Some(60)).await;
    let all = h.coord.check_locks(&a, CheckLocksRequest::default()).await.unwrap();
    let paths: Vec<_> = all.locks.iter().map(|l| l.file_path.as_str()).collect();
    assert_eq!(paths, ["a.rs", "b.rs", "c.rs"], "sorted by path");
    let a_rs = &all.locks[0];
    assert_eq!(
        (a_rs.locked_by.as_str(), a_rs.agent_type.as_str()),
        ("agent-b", crate::harness::AGENT_TYPE)
    );
    assert_eq!(a_rs.locked_at, h.now());
    let some = h
        .coord
        .check_locks(
            &a,
            CheckLocksRequest {
                file_paths: Some(vec!["./c.rs".into(), "free.rs".into(), "b.rs".into()]),
            },
        )
        .await
        .unwrap();
    let paths: Vec<_> = some.locks.iter().map(|l| l.file_path.as_str()).collect();
    assert_eq!(paths, ["b.rs", "c.rs"]);
    h.advance(5);
    let live = h.coord.check_locks(&a, CheckLocksRequest::default()).await.unwrap();
    assert_eq!(live.locks.len(), 2, "expired b.rs is not listed");
    let e = h
        .coord
        .check_locks(
            &a,
            CheckLocksRequest {
                file_paths: Some(vec!["../x".into()]),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidPath, Some("file_paths"))
    );
}

pub async fn locks_paths_are_normalised(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let got = h.lock(&a, "./src//lib/../main.rs", None).await;
    assert_eq!(got.file_path, "src/main.rs");
    for alias in ["src/main.rs", "src\\main.rs", "/work/repo/src/main.rs"] {
        let r = h.lock(&bb, alias, None).await;
        assert_eq!(r.action, LockAction::Blocked, "{alias} names the same file");
        assert_eq!(r.file_path, "src/main.rs");
    }
    for bad in ["../secret", "/etc/passwd", "", "src/../../x"] {
        let e = h
            .coord
            .acquire_lock(
                &a,
                AcquireLockRequest {
                    file_path: bad.into(),
                    reason: None,
                    ttl_minutes: None,
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidPath, "{bad:?}");
    }
    h.coord
        .release_lock(&a, release("/work/repo/src/main.rs"))
        .await
        .unwrap();
}

pub async fn locks_concurrent_acquirers_get_one_winner(b: &dyn Backend) {
    let h = Arc::new(Harness::new(b).await);
    for round in 0..5 {
        let path = format!("race-{round}.rs");
        let mut tasks = Vec::new();
        for i in 0..16 {
            let h = h.clone();
            let path = path.clone();
            tasks.push(tokio::spawn(async move {
                (i, h.lock(&agent(&format!("racer-{i}")), &path, None).await)
            }));
        }
        let mut winners = HashSet::new();
        for t in tasks {
            let (i, r) = t.await.unwrap();
            if r.success {
                winners.insert(i);
            } else {
                assert_eq!(r.action, LockAction::Blocked);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let listed = h
            .coord
            .check_locks(
                &agent("x"),
                CheckLocksRequest {
                    file_paths: Some(vec![path]),
                },
            )
            .await
            .unwrap();
        let winner = winners.into_iter().next().unwrap();
        assert_eq!(listed.locks[0].locked_by, format!("racer-{winner}"));
    }
}

pub async fn locks_release_my_locks_frees_only_mine(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    h.lock(&a, "one.rs", None).await;
    h.lock(&a, "two.rs", None).await;
    h.lock(&a, "short.rs", Some(1)).await;
    h.lock(&bb, "theirs.rs", None).await;
    h.advance(2);
    let r = h.coord.release_my_locks(&a).await.unwrap();
    assert!(r.success);
    assert_eq!(
        r.released,
        ["one.rs", "two.rs"],
        "expired locks are not reported as released"
    );
    let left = h.coord.check_locks(&bb, CheckLocksRequest::default()).await.unwrap();
    let paths: Vec<_> = left.locks.iter().map(|l| l.file_path.as_str()).collect();
    assert_eq!(paths, ["theirs.rs"]);
    assert!(
        h.coord.release_my_locks(&a).await.unwrap().released.is_empty(),
        "idempotent"
    );
}

/// The same rules with the database's own clock (no injected time): leases are measured
/// from the database's now, which is close to this machine's.
pub async fn locks_and_leases_on_the_database_clock(b: &dyn Backend) {
    let h = Harness::with_database_clock(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let before = chrono::Utc::now() - chrono::Duration::minutes(1);
    let got = h.lock(&a, "a.rs", Some(30)).await;
    assert_eq!(got.action, LockAction::Acquired);
    let after = chrono::Utc::now() + chrono::Duration::minutes(1);
    let listed = h.coord.check_locks(&a, CheckLocksRequest::default()).await.unwrap();
    let lock = &listed.locks[0];
    assert_eq!(lock.expires_at - lock.locked_at, chrono::Duration::minutes(30));
    assert!(
        lock.locked_at > before && lock.locked_at < after,
        "locked_at {} is the database's now",
        lock.locked_at
    );
    assert_eq!(h.lock(&bb, "a.rs", None).await.action, LockAction::Blocked);
    let again = h.lock(&a, "a.rs", Some(1)).await;
    assert_eq!(again.action, LockAction::Refreshed);
    h.coord.release_lock(&a, release("a.rs")).await.unwrap();
    assert_eq!(h.lock(&bb, "a.rs", Some(1)).await.action, LockAction::Acquired);
}

/// `check_edit`, the decision behind the edit and commit guards: your own locks never
/// block you (whatever spacing your id arrives with), another agent's live lock does,
/// with who, until when and why; expired locks block nobody; the refusal is audited.
pub async fn locks_check_edit_blocks_only_foreign_live_locks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    h.lock(&a, "src/a.rs", Some(10)).await;
    let edit = |paths: &[&str]| CheckEditRequest {
        paths: paths.iter().map(|p| p.to_string()).collect(),
    };
    let mine = h
        .coord
        .check_edit(&a, edit(&["src/a.rs", "src/free.rs"]))
        .await
        .unwrap();
    assert_eq!(
        (mine.allowed, mine.paths.clone()),
        (true, vec!["src/a.rs".to_string(), "src/free.rs".into()])
    );
    // The same agent with stray spaces is still the same agent.
    let spaced = coord_domain::Caller::new(" agent-a ", crate::harness::AGENT_TYPE);
    assert!(
        h.coord
            .check_edit(&spaced, edit(&["./src/a.rs"]))
            .await
            .unwrap()
            .allowed
    );
    let e = h
        .coord
        .check_edit(&bb, edit(&["src/free.rs", "/work/repo/src/a.rs"]))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::FileLocked);
    assert_eq!(e.details["locked_by"], "agent-a");
    assert_eq!(e.details["file_path"], "src/a.rs");
    assert_eq!(e.details["blocked"].as_array().map(Vec::len), Some(1));
    assert!(
        e.message.contains("agent-a") && e.message.contains("src/a.rs"),
        "{}",
        e.message
    );
    for bad in [edit(&[]), edit(&["../outside.rs"])] {
        let e = h.coord.check_edit(&bb, bad).await.unwrap_err();
        assert!(
            matches!(e.code, ErrorCode::InvalidArgument | ErrorCode::InvalidPath),
            "{e:?}"
        );
    }
    h.advance(11);
    assert!(
        h.coord.check_edit(&bb, edit(&["src/a.rs"])).await.unwrap().allowed,
        "expired locks block nobody"
    );
    let log = h
        .coord
        .query_audit(
            &operator("auditor"),
            coord_domain::audit::AuditQueryRequest {
                agent_id: Some("agent-b".into()),
                operation: Some("check_edit".into()),
                success: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log.entries.len(), 3, "the denial and the two bad requests are audited");
}
