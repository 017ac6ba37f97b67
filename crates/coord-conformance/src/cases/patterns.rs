//! Locks on directories and globs: what they cover, what they block, how they are named
//! and released, and that overlapping acquisitions racing each other never both win.

use crate::{Backend, Harness, agent};
use coord_domain::ErrorCode;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::{
    AcquireLockRequest, CheckEditRequest, CheckLocksRequest, LockAction, LockInfo, LockStatusRequest,
    ReleaseLockRequest,
};
use coord_domain::messages::SendMessageRequest;
use coord_domain::target::LockTarget;
use coord_service::CoordinationExt as _;
use coord_service::ops::locks::{CheckEdit, LockStatus};
use coord_service::ops::messages::SendMessage;
use std::sync::Arc;

/// Files, directories and globs that overlap each other in many ways (the races here and
/// in coord-cli's multi-process test draw from them).
pub const PATTERNS: [&str; 14] = [
    "src/",
    "src/a/",
    "src/a/x.rs",
    "src/b/y.rs",
    "src/**/*.rs",
    "**/*.md",
    "src/a/*.rs",
    "docs/",
    "docs/x.md",
    "src/b/",
    "src/*/z.rs",
    "README.md",
    "src/a/x.md",
    "**",
];

fn check(paths: &[&str]) -> CheckLocksRequest {
    CheckLocksRequest {
        file_paths: Some(paths.iter().map(|p| p.to_string()).collect()),
    }
}

fn keys(locks: &[LockInfo]) -> Vec<&str> {
    locks.iter().map(|l| l.file_path.as_str()).collect()
}

pub async fn patterns_directory_lock_covers_everything_below(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let dir = h.lock(&a, "src/auth/", Some(30)).await;
    assert_eq!((dir.success, dir.file_path.as_str()), (true, "src/auth/"));

    // Files below it, the directory's parent and a glob reaching into it are blocked;
    // a sibling with a similar name is not.
    for (path, blocked) in [
        ("src/auth/login.rs", true),
        ("src/auth/deep/x/y.rs", true),
        ("src/", true),
        ("src/**/*.rs", true),
        ("src/authz.rs", false),
        ("lib/auth/", false),
    ] {
        let got = h.lock(&bb, path, Some(5)).await;
        assert_eq!(got.action == LockAction::Blocked, blocked, "{path}: {got:?}");
        if blocked {
            assert_eq!(got.file_path, path, "the answer names what was asked for");
            assert_eq!(got.locked_path.as_deref(), Some("src/auth/"), "{path}");
            assert_eq!(got.locked_by.as_deref(), Some("agent-a"));
            assert!(got.hint.as_deref().unwrap().contains("holders:src/auth/"), "{got:?}");
        }
    }
    // The holder's own locks never block it.
    let own = h.lock(&a, "src/auth/login.rs", None).await;
    assert_eq!(own.action, LockAction::Acquired);
    assert_eq!(
        h.lock(&a, "src/auth/**", None).await.action,
        LockAction::Refreshed,
        "dir/** is dir/"
    );

    // Every reader sees the directory lock over the files it covers.
    let listed = h.coord.check_locks(&bb, check(&["src/auth/deep/x.rs"])).await.unwrap();
    assert_eq!(keys(&listed.locks), ["src/auth/"]);
    let listed = h.coord.check_locks(&bb, check(&["src/auth/"])).await.unwrap();
    assert_eq!(keys(&listed.locks), ["src/auth/", "src/auth/login.rs"]);
    let status = h
        .coord
        .op::<LockStatus>(
            &bb,
            LockStatusRequest {
                file_path: "src/auth/deep/x.rs".into(),
            },
        )
        .await
        .unwrap();
    assert!(status.locked);
    assert_eq!(status.file_path, "src/auth/deep/x.rs");
    assert_eq!(status.lock.unwrap().file_path, "src/auth/");
    let edit = |paths: &[&str]| CheckEditRequest {
        paths: paths.iter().map(|p| p.to_string()).collect(),
    };
    let refused = h
        .coord
        .op::<CheckEdit>(&bb, edit(&["README.md", "src/auth/new.rs"]))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::FileLocked);
    assert_eq!(refused.details["file_path"], "src/auth/");
    assert!(h.coord.op::<CheckEdit>(&a, edit(&["src/auth/new.rs"])).await.is_ok());
    assert!(h.coord.op::<CheckEdit>(&bb, edit(&["src/authz.rs"])).await.is_ok());

    // Released by the name it was taken under (either spelling of the directory).
    let wrong = h
        .coord
        .release_lock(
            &a,
            ReleaseLockRequest {
                file_path: "src/auth".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        wrong.code,
        ErrorCode::LockNotHeld,
        "src/auth is a file, not the directory"
    );
    h.coord
        .release_lock(
            &a,
            ReleaseLockRequest {
                file_path: "src/auth/**".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        h.lock(&bb, "src/auth/other.rs", None).await.action,
        LockAction::Acquired
    );
    assert_eq!(
        h.lock(&bb, "src/auth/login.rs", None).await.locked_path.as_deref(),
        Some("src/auth/login.rs"),
        "a's file lock inside is still held"
    );
}

pub async fn patterns_glob_locks_overlap_conservatively(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    assert!(h.lock(&a, "src/**/*.rs", None).await.success);
    for (path, blocked) in [
        ("src/main.rs", true),
        ("src/a/b/c.rs", true),
        ("src/*/x.rs", true),
        ("src/a/", true),
        ("**/*.rs", true),
        ("src/main.py", false),
        ("**/*.py", false),
        ("lib/x.rs", false),
        ("src/*.toml", false),
    ] {
        let got = h.lock(&bb, path, Some(5)).await;
        assert_eq!(got.action == LockAction::Blocked, blocked, "{path}: {got:?}");
    }
    // check_locks takes globs too; B's locks from above are there.
    let listed = h.coord.check_locks(&a, check(&["**/*.py"])).await.unwrap();
    assert_eq!(keys(&listed.locks), ["**/*.py", "src/main.py"]);
    // A Next.js route is a file name, not a class: a glob lock also covers its own
    // spelling, and an edit of that file is checked literally.
    assert!(h.lock(&a, "app/[id]/page.tsx", None).await.success);
    let refused = h
        .coord
        .op::<CheckEdit>(
            &bb,
            CheckEditRequest {
                paths: vec!["app/[id]/page.tsx".into()],
            },
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::FileLocked);
}

pub async fn patterns_bad_spellings_are_refused_and_audited(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    for bad in [
        "src/{a,b/c}.rs",
        "src/a**/x",
        "src/[z-a].rs",
        "src/{a,b.rs",
        "../*.rs",
        "./",
    ] {
        let e = h
            .coord
            .acquire_lock(
                &a,
                AcquireLockRequest {
                    file_path: bad.into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidPath, "{bad}");
        assert_eq!(e.field.as_deref(), Some("file_path"), "{bad}");
        let e = h.coord.check_locks(&a, check(&["ok.rs", bad])).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidPath, "{bad}");
    }
    assert!(
        h.coord
            .check_locks(&a, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .is_empty()
    );
    let log = h
        .coord
        .query_audit(
            &a,
            AuditQueryRequest {
                operation: Some("acquire_lock".into()),
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log.entries.len(), 6, "every refusal is audited");
    assert!(
        log.entries
            .iter()
            .all(|e| !e.success && e.error_code.as_deref() == Some("invalid_path"))
    );
}

pub async fn patterns_message_the_holders_of_a_directory(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, c) = (agent("agent-a"), agent("agent-b"), agent("agent-c"));
    h.lock(&a, "src/auth/login.rs", None).await;
    h.lock(&bb, "src/**/*.toml", None).await;
    h.lock(&c, "docs/", None).await;
    let sent = h
        .coord
        .op::<SendMessage>(
            &c,
            SendMessageRequest {
                to: "holders:src/auth/".into(),
                subject: "who is in auth?".into(),
                body: "I need to change the session check".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // src/**/*.toml can match src/auth/x.toml: its holder is asked too.
    assert_eq!(sent.recipients, ["agent-a", "agent-b"]);
    let to = |to: &str| SendMessageRequest {
        to: to.into(),
        subject: "s".into(),
        body: "b".into(),
        ..Default::default()
    };
    let sent = h
        .coord
        .op::<SendMessage>(&a, to("holders:docs/guide.md"))
        .await
        .unwrap();
    assert_eq!(sent.recipients, ["agent-c"]);
    let e = h.coord.op::<SendMessage>(&c, to("holders:lib/")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NoRecipients);
}

/// Many agents race for random overlapping targets at once; afterwards no two live locks
/// of different agents overlap, every refusal names a lock that overlaps what was asked
/// and is held by someone else, and every grant is listed.
pub async fn patterns_racing_overlapping_acquirers_never_both_win(b: &dyn Backend) {
    let h = Arc::new(Harness::new(b).await);
    for round in 0..3u64 {
        let mut tasks = Vec::new();
        for i in 0..12u64 {
            let h = h.clone();
            tasks.push(tokio::spawn(async move {
                let me = agent(&format!("r{round}-racer-{i}"));
                let mut seed = round * 7919 + i * 104_729 + 1;
                let mut got = Vec::new();
                for _ in 0..3 {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let path = PATTERNS[(seed >> 33) as usize % PATTERNS.len()];
                    got.push((me.agent_id.clone(), path, h.lock(&me, path, None).await));
                }
                got
            }));
        }
        let mut answers = Vec::new();
        for t in tasks {
            answers.extend(t.await.unwrap());
        }
        let live = h
            .coord
            .check_locks(&agent("observer"), CheckLocksRequest::default())
            .await
            .unwrap()
            .locks;
        for x in &live {
            for y in &live {
                if x.locked_by != y.locked_by {
                    let (tx, ty) = (LockTarget::from_key(&x.file_path), LockTarget::from_key(&y.file_path));
                    assert!(!tx.overlaps(&ty), "round {round}: {x:?} and {y:?} both live");
                }
            }
        }
        for (who, path, got) in &answers {
            let asked = LockTarget::parse(path, None).unwrap();
            if got.success {
                assert!(
                    live.iter().any(|l| l.file_path == got.file_path && &l.locked_by == who),
                    "round {round}: {who}'s grant of {path} is not listed"
                );
            } else {
                let held = got.locked_path.as_deref().unwrap();
                assert_ne!(got.locked_by.as_deref(), Some(who.as_str()));
                assert!(asked.overlaps(&LockTarget::from_key(held)), "{path} blocked by {held}");
            }
        }
        assert!(answers.iter().any(|(_, _, g)| g.success));
        // Clear the board for the next round.
        h.advance(121);
    }
}
