//! The confined file tools through every door: reads and writes beneath the workspace
//! root only (the attack table), atomic and fenced writes (a holder whose lock was taken
//! over writes nothing), the profile's lock_before_write and limits, and spec 000's
//! audit events on every outcome.

use crate::cases::profiles::{code, give, profile, run};
use crate::{Backend, Harness, agent, operator};
use coord_domain::audit::{AuditEntry, AuditQueryRequest};
use coord_domain::files::{Encoding, ReadFileRequest, ReadFileResult, WriteFileRequest, WriteFileResult};
use coord_domain::profiles::Permission;
use coord_domain::{Caller, CoordResult, ErrorCode};
use coord_service::ops::{audit, files};
use serde_json::json;
use std::os::unix::fs::symlink;

async fn read(h: &Harness, who: &Caller, path: &str) -> CoordResult<ReadFileResult> {
    run::<files::ReadFile>(
        h,
        who,
        ReadFileRequest {
            path: path.into(),
            ..Default::default()
        },
    )
    .await
}

fn write_req(path: &str, content: &str, token: Option<i64>) -> WriteFileRequest {
    WriteFileRequest {
        path: path.into(),
        content: content.into(),
        fencing_token: token,
        ..Default::default()
    }
}

async fn write(
    h: &Harness,
    who: &Caller,
    path: &str,
    content: &str,
    token: Option<i64>,
) -> CoordResult<WriteFileResult> {
    run::<files::WriteFile>(h, who, write_req(path, content, token)).await
}

async fn rows(h: &Harness, operation: &str) -> Vec<AuditEntry> {
    run::<audit::QueryAudit>(
        h,
        &operator("auditor"),
        AuditQueryRequest {
            operation: Some(operation.into()),
            limit: Some(500),
            ..Default::default()
        },
    )
    .await
    .expect("query_audit")
    .entries
}

fn content_of(h: &Harness, rel: &str) -> String {
    std::fs::read_to_string(h.ws(rel)).unwrap()
}

pub async fn files_read_write_round_trip_with_audit_events(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let me = agent("writer");
    std::fs::create_dir(h.ws("src")).unwrap();
    let w = write(&h, &me, "src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n", None)
        .await
        .unwrap();
    assert_eq!((w.created, w.bytes, w.fencing_token), (true, 30, None), "{w:?}");
    assert!(w.atomic_temp.starts_with(".coord-write-"), "{w:?}");
    let again = write(&h, &me, "src/lib.rs", "fn a() {}\nfn b() {}\n", None)
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(content_of(&h, "src/lib.rs"), "fn a() {}\nfn b() {}\n");

    let r = read(&h, &me, "src/lib.rs").await.unwrap();
    // An absolute path inside the repository (as agents send them) names the same file.
    let abs = format!("{}/src/lib.rs", Harness::ROOT);
    assert_eq!(read(&h, &me, &abs).await.unwrap().path, "src/lib.rs");
    let sneaky = format!("{}/../src/lib.rs", Harness::ROOT);
    assert_eq!(code(read(&h, &me, &sneaky).await), ErrorCode::PathOutsideWorkspace);
    assert_eq!(
        (r.content.as_str(), r.total_lines, r.bytes),
        ("fn a() {}\nfn b() {}\n", 2, 20)
    );
    let window = run::<files::ReadFile>(
        &h,
        &me,
        ReadFileRequest {
            path: "src/lib.rs".into(),
            offset: Some(2),
            limit: Some(1),
        },
    )
    .await
    .unwrap();
    assert_eq!((window.content.as_str(), window.truncated), ("fn b() {}\n", false));

    // Binary content round-trips in base64.
    let bin = WriteFileRequest {
        path: "logo.bin".into(),
        content: "AJ+SlgD/".into(),
        encoding: Some(Encoding::Base64),
        ..Default::default()
    };
    run::<files::WriteFile>(&h, &me, bin).await.unwrap();
    assert_eq!(std::fs::read(h.ws("logo.bin")).unwrap(), vec![0, 159, 146, 150, 0, 255]);
    let r = read(&h, &me, "logo.bin").await.unwrap();
    // The audit trail by file: its write and its read, nothing else.
    let by_path = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            path: Some("logo.bin".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let ops: Vec<&str> = by_path.entries.iter().map(|e| e.operation.as_str()).collect();
    assert_eq!(ops, ["read_file", "write_file"], "newest first");
    assert_eq!((r.encoding, r.content.as_str()), (Encoding::Base64, "AJ+SlgD/"));

    // create_only never replaces.
    let e = run::<files::WriteFile>(
        &h,
        &me,
        WriteFileRequest {
            create_only: Some(true),
            ..write_req("src/lib.rs", "gone", None)
        },
    )
    .await;
    assert_eq!(code(e), ErrorCode::FileExists);
    assert_eq!(content_of(&h, "src/lib.rs"), "fn a() {}\nfn b() {}\n");

    // Spec 000's events, with their fields and never the content.
    assert_eq!(
        code(read(&h, &me, "../etc/passwd").await),
        ErrorCode::PathOutsideWorkspace
    );
    let reads = rows(&h, "read_file").await;
    let ok = reads.iter().find(|r| r.success).unwrap();
    assert_eq!(ok.result["event"], "file_read_success", "{:?}", ok.result);
    assert_eq!(ok.result["content"], "[redacted]");
    assert_eq!(ok.result["size_limit"], 1024 * 1024);
    assert!(ok.result["bytes"].is_u64());
    let denied = reads.iter().find(|r| !r.success).unwrap();
    assert_eq!(
        (
            &denied.result["event"],
            &denied.result["reason"],
            &denied.parameters["path"]
        ),
        (
            &json!("file_read_denied"),
            &json!("path_outside_workspace"),
            &json!("../etc/passwd")
        )
    );
    let writes = rows(&h, "write_file").await;
    let ok = writes.iter().find(|r| r.success).unwrap();
    assert_eq!(ok.result["event"], "file_write_success");
    assert!(ok.result["atomic_temp"].as_str().unwrap().starts_with(".coord-write-"));
    assert_eq!(ok.parameters["content"], "[redacted]");
    // What was written is described by size and digest, never kept.
    for w in writes.iter().filter(|r| r.success) {
        assert_eq!(
            w.parameters["content_sha256"].as_str().map(str::len),
            Some(64),
            "{:?}",
            w.parameters
        );
        assert!(w.parameters["content_bytes"].is_u64());
    }
    let refused = writes.iter().find(|r| !r.success).unwrap();
    assert_eq!(
        (&refused.result["event"], &refused.result["reason"]),
        (&json!("file_write_denied"), &json!("file_exists"))
    );
    for r in reads.iter().chain(&writes) {
        let text = format!("{} {}", r.parameters, r.result);
        assert!(
            !text.contains("fn a()") && !text.contains("AJ+S"),
            "content in the audit trail: {text}"
        );
    }
}

/// Every escape and special file, refused with its code and audited, through every
/// door; the outside is never read or changed.
pub async fn files_attack_table(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.protected_paths = vec!["state/coord.db".into()]).await;
    let me = agent("attacker");
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path();
    std::fs::write(out.join("secret.txt"), "SECRET").unwrap();
    std::fs::create_dir(h.ws("sub")).unwrap();
    std::fs::write(h.ws("ok.txt"), "inside").unwrap();
    symlink(out.join("secret.txt"), h.ws("link_file")).unwrap();
    symlink(out.join("created.txt"), h.ws("dangling")).unwrap();
    symlink(out, h.ws("link_dir")).unwrap();
    symlink("ok.txt", h.ws("inner_link")).unwrap();
    symlink(
        format!("/proc/self/root{}/secret.txt", out.display()),
        h.ws("proc_link"),
    )
    .unwrap();
    std::fs::hard_link(out.join("secret.txt"), h.ws("hardlink")).unwrap();
    std::fs::File::create(h.ws("huge")).unwrap().set_len(2 << 30).unwrap();
    let fifo = std::process::Command::new("mkfifo").arg(h.ws("fifo")).status().unwrap();
    assert!(fifo.success());
    std::fs::create_dir(h.ws(".git")).unwrap();
    std::fs::write(h.ws(".git/config"), "[remote]").unwrap();
    std::fs::create_dir_all(h.ws("vendor/lib/.git")).unwrap();
    std::fs::write(h.ws("vendor/lib/.git/config"), "[core]").unwrap();
    std::fs::create_dir(h.ws("state")).unwrap();
    std::fs::write(h.ws("state/coord.db"), "SQLite format 3").unwrap();
    let abs = format!("{}/secret.txt", out.display());
    let cases: &[(&str, ErrorCode)] = &[
        ("../secret.txt", ErrorCode::PathOutsideWorkspace),
        ("sub/../ok.txt", ErrorCode::PathOutsideWorkspace),
        (&abs, ErrorCode::PathOutsideWorkspace),
        ("/etc/passwd", ErrorCode::PathOutsideWorkspace),
        ("link_file", ErrorCode::SymlinkDenied),
        ("dangling", ErrorCode::SymlinkDenied),
        ("link_dir/secret.txt", ErrorCode::SymlinkDenied),
        ("inner_link", ErrorCode::SymlinkDenied),
        ("proc_link", ErrorCode::SymlinkDenied),
        ("hardlink", ErrorCode::HardlinkDenied),
        ("fifo", ErrorCode::NotARegularFile),
        ("sub", ErrorCode::NotARegularFile),
        ("ok.txt/", ErrorCode::InvalidPath),
        ("", ErrorCode::InvalidPath),
        (".git/config", ErrorCode::PermissionDenied),
        (".coord/coord.db", ErrorCode::PermissionDenied),
        ("vendor/lib/.git/config", ErrorCode::PermissionDenied),
        ("state/coord.db", ErrorCode::PermissionDenied),
        ("a\\b.txt", ErrorCode::InvalidPath),
        ("OK.TXT", ErrorCode::NotFound),
        ("..%2fsecret.txt", ErrorCode::NotFound),
    ];
    for (path, want) in cases {
        assert_eq!(code(read(&h, &me, path).await), *want, "read {path:?}");
        let wrote = write(&h, &me, path, "pwned", None).await;
        let want_write = match (*path, *want) {
            // Writing a new name next to a missing one is fine; these exist or escape.
            ("OK.TXT" | "..%2fsecret.txt", _) => None,
            _ => Some(*want),
        };
        match want_write {
            Some(w) => assert_eq!(code(wrote), w, "write {path:?}"),
            None => assert!(wrote.is_ok(), "write {path:?}: {wrote:?}"),
        }
    }
    assert_eq!(code(read(&h, &me, "huge").await), ErrorCode::FileTooLarge);
    let big = "x".repeat(1024 * 1024 + 1);
    let e = write(&h, &me, "big.txt", &big, None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::FileTooLarge, "{e:?}");
    assert_eq!(code(write(&h, &me, "nope/x.txt", "x", None).await), ErrorCode::NotFound);

    assert_eq!(std::fs::read_to_string(out.join("secret.txt")).unwrap(), "SECRET");
    assert!(!out.join("created.txt").exists());
    let names: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "nothing new outside: {names:?}");
    assert_eq!(content_of(&h, "ok.txt"), "inside");
    assert_eq!(content_of(&h, ".git/config"), "[remote]");
    assert_eq!(content_of(&h, "state/coord.db"), "SQLite format 3");
    assert_eq!(temp_files(h.workspace.path()), Vec::<String>::new());
    // Every refusal is audited as denied, with its reason.
    let denied = rows(&h, "read_file").await.into_iter().filter(|r| !r.success).count();
    assert_eq!(denied, cases.len() + 1);
}

pub async fn files_fenced_writes(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bee) = (agent("a"), agent("b"));
    std::fs::write(h.ws("shared.rs"), "v0").unwrap();
    let ta = h.lock(&a, "shared.rs", Some(10)).await.fencing_token.unwrap();
    let w = write(&h, &a, "shared.rs", "v1 by a", Some(ta)).await.unwrap();
    assert_eq!(w.fencing_token, Some(ta));
    // Another agent cannot write a file a holds.
    let e = write(&h, &bee, "shared.rs", "v1 by b", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::FileLocked);
    assert_eq!(e.to_value()["locked_by"], "a");
    // a's lock expires and b takes the file: a's token is stale, a writes nothing.
    h.advance(11);
    let tb = h.lock(&bee, "shared.rs", None).await.fencing_token.unwrap();
    assert!(tb > ta);
    let e = write(&h, &a, "shared.rs", "late write by a", Some(ta))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::StaleFencingToken);
    // The old holder learns who holds the file now, not the new holder's token.
    let v = e.to_value();
    assert_eq!(
        (v["locked_by"].as_str(), v.get("current_token")),
        (Some("b"), None),
        "{v}"
    );
    assert_eq!(
        code(write(&h, &a, "shared.rs", "late write by a", None).await),
        ErrorCode::FileLocked
    );
    assert_eq!(content_of(&h, "shared.rs"), "v1 by a");
    write(&h, &bee, "shared.rs", "v2 by b", Some(tb)).await.unwrap();
    assert_eq!(content_of(&h, "shared.rs"), "v2 by b");
    // A lock that expired with nobody taking over: its token is stale all the same (the
    // holder must re-acquire, and re-read what it is about to overwrite).
    h.advance(200);
    assert_eq!(
        code(write(&h, &bee, "shared.rs", "v3 by b", Some(tb)).await),
        ErrorCode::StaleFencingToken
    );
    assert_eq!(content_of(&h, "shared.rs"), "v2 by b");
    // A directory lock covers its files; a token of a lock never held is stale.
    std::fs::create_dir(h.ws("dir")).unwrap();
    let td = h.lock(&a, "dir/", None).await.fencing_token.unwrap();
    write(&h, &a, "dir/f.txt", "x", Some(td)).await.unwrap();
    assert_eq!(
        code(write(&h, &bee, "dir/f.txt", "y", None).await),
        ErrorCode::FileLocked
    );
    assert_eq!(
        code(write(&h, &a, "other.txt", "y", Some(td)).await),
        ErrorCode::StaleFencingToken
    );
    assert!(!h.ws("other.txt").exists());
}

/// The fence under a race: the holder writes with its token from many tasks while its
/// lock expires and another agent takes the file over and writes. Every write of the
/// old holder either committed before the takeover (the audit trail's order says so) or
/// was refused as stale; the file ends with the new holder's content.
pub async fn files_fence_holds_while_the_lock_is_taken_over(b: &dyn Backend) {
    let h = std::sync::Arc::new(Harness::new(b).await);
    std::fs::write(h.ws("hot.txt"), "start").unwrap();
    let (a, bee) = (agent("a"), agent("b"));
    let ta = h.lock(&a, "hot.txt", Some(1)).await.fencing_token.unwrap();
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let (h, a) = (h.clone(), a.clone());
            tokio::spawn(async move { write(&h, &a, "hot.txt", &format!("a{i}-").repeat(4000), Some(ta)).await })
        })
        .collect();
    tokio::task::yield_now().await;
    h.advance(2);
    let took = h.lock(&bee, "hot.txt", None).await;
    assert!(took.success, "{took:?}");
    let tb = took.fencing_token.unwrap();
    write(&h, &bee, "hot.txt", "b wins", Some(tb)).await.unwrap();
    let mut landed = 0;
    for w in writers {
        match w.await.unwrap() {
            Ok(_) => landed += 1,
            Err(e) => assert_eq!(e.code, ErrorCode::StaleFencingToken, "{e:?}"),
        }
    }
    assert_eq!(content_of(&h, "hot.txt"), "b wins");
    let takeover = rows(&h, "acquire_lock")
        .await
        .into_iter()
        .find(|r| r.agent_id == "b")
        .unwrap()
        .id;
    let writes = rows(&h, "write_file").await;
    let by_a: Vec<_> = writes.iter().filter(|r| r.agent_id == "a" && r.success).collect();
    assert_eq!(by_a.len(), landed);
    assert!(
        by_a.iter().all(|r| r.id < takeover),
        "a write of the old holder landed after the takeover"
    );
    assert_eq!(
        writes.iter().filter(|r| r.agent_id == "a" && !r.success).count(),
        16 - landed
    );
    assert_eq!(temp_files(h.workspace.path()), Vec::<String>::new());
}

/// Concurrent writers without locks: the file is always one whole version.
pub async fn files_concurrent_writers_never_tear_a_file(b: &dyn Backend) {
    let h = std::sync::Arc::new(Harness::new(b).await);
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move {
                let me = agent(&format!("w{i}"));
                for round in 0..3 {
                    write(&h, &me, "hot.txt", &format!("{i}-{round}-").repeat(3000), None)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let last = content_of(&h, "hot.txt");
    let unit = last.split_inclusive('-').take(2).collect::<String>();
    assert_eq!(last, unit.repeat(3000), "the file is one whole version");
    assert_eq!(rows(&h, "write_file").await.iter().filter(|r| r.success).count(), 24);
    assert_eq!(temp_files(h.workspace.path()), Vec::<String>::new());
}

/// Temporary files of writes anywhere below `dir`.
fn temp_files(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".coord-write-") {
            found.push(e.path().display().to_string());
        }
        if e.file_type().unwrap().is_dir() {
            found.extend(temp_files(&e.path()));
        }
    }
    found
}

pub async fn files_profiles_decide_who_reads_and_writes(b: &dyn Backend) {
    let h = Harness::new(b).await;
    std::fs::write(h.ws("a.txt"), "a").unwrap();
    std::fs::write(h.ws("b.txt"), "b").unwrap();
    std::fs::write(h.ws("c.txt"), "c").unwrap();
    // lock_before_write (the web implementer's and Codex Cloud's guardrail).
    let mut careful = profile(
        "careful",
        3,
        &[Permission::Read, Permission::Write],
        json!({"max_file_reads": 2}),
    );
    careful.guardrails = vec!["lock_before_write".into()];
    give(&h, careful, "careful").await;
    let me = agent("careful");
    let e = write(&h, &me, "a.txt", "new", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::LockRequired);
    let t = h.lock(&me, "a.txt", None).await.fencing_token;
    write(&h, &me, "a.txt", "new", t).await.unwrap();
    assert_eq!(content_of(&h, "a.txt"), "new");
    // max_file_reads counts distinct files: a third file is refused, re-reading is not.
    read(&h, &me, "a.txt").await.unwrap();
    read(&h, &me, "b.txt").await.unwrap();
    read(&h, &me, "a.txt").await.unwrap();
    let e = read(&h, &me, "c.txt").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
    assert!(e.to_value().get("content").is_none());
    // max_file_modifications: the write over the limit never reaches the file.
    give(
        &h,
        profile(
            "one-file",
            3,
            &[Permission::Read, Permission::Write],
            json!({"max_file_modifications": 1}),
        ),
        "frugal",
    )
    .await;
    let frugal = agent("frugal");
    write(&h, &frugal, "b.txt", "b2", None).await.unwrap();
    let e = write(&h, &frugal, "c.txt", "c2", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
    assert_eq!(content_of(&h, "c.txt"), "c", "a write over the limit changed the file");
    write(&h, &frugal, "b.txt", "b3", None).await.unwrap();
    std::fs::write(h.ws("b.txt"), "b").unwrap();
    // Unknown agents are least privilege: they may read, not write; the refusal is a
    // tool_execution_denied.
    let stranger = Caller::new("stranger", "unknown_runtime");
    read(&h, &stranger, "b.txt").await.unwrap();
    let e = write(&h, &stranger, "b.txt", "pwned", None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    assert_eq!(content_of(&h, "b.txt"), "b");
    let denied = rows(&h, "write_file").await;
    let row = denied.iter().find(|r| r.agent_id == "stranger").unwrap();
    assert_eq!(
        (&row.result["event"], &row.result["tool"], &row.result["reason"]),
        (
            &json!("tool_execution_denied"),
            &json!("write_file"),
            &json!("insufficient_trust_level")
        )
    );
    // Credential files wait for a person.
    let e = write(&h, &agent("writer"), "prod.env", "KEY=1", None)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CredentialFileProtected);
    assert!(!h.ws("prod.env").exists());
    let queued = rows(&h, "write_file").await;
    let row = queued.iter().find(|r| r.parameters["path"] == "prod.env").unwrap();
    assert_eq!(
        (&row.result["event"], &row.result["reason"]),
        (&json!("file_write_denied"), &json!("credential_file_protected"))
    );
}
