//! Two worktrees of one real git repository share one coordination space (docs/worktrees.md):
//! a lock taken in the main checkout refuses the same path from a linked worktree —
//! through the CLI and through the Write hook — `coord init` in the worktree joins the
//! main checkout's store instead of creating one, and sessions are listed with their
//! worktree and branch.

mod support;

use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::git;

const BIN: &str = env!("CARGO_BIN_EXE_coord");

fn coord(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORD_AGENT_ID")
        .env_remove("COORD_AGENT_TYPE")
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("COORDINATION_API_URL")
        .env("COORD_LOCAL_SERVER", "off")
        .output()
        .unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = coord(dir, &all);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{args:?}: {out:?}"))
}

#[test]
fn worktrees_of_one_repository_share_locks_sessions_and_the_store() {
    let base = tempfile::tempdir().unwrap();
    let main = base.path().join("main");
    std::fs::create_dir_all(main.join("src")).unwrap();
    std::fs::write(main.join("src/a.rs"), "fn a() {}\n").unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    git(&main, &["add", "."]);
    git(&main, &["commit", "-q", "-m", "init"]);
    let wt = base.path().join("wt2");
    git(&main, &["worktree", "add", "-q", "-b", "feature", wt.to_str().unwrap()]);

    let init = coord(&main, &["init"]);
    assert!(init.status.success(), "{init:?}");
    let v = json(&main, &["--agent-id", "alice", "lock", "acquire", "src/a.rs"]);
    assert_eq!(v["action"], "acquired", "{v}");

    // The linked worktree joins the main checkout's store: no second database.
    let joined = coord(&wt, &["init"]);
    let text = String::from_utf8_lossy(&joined.stdout);
    assert!(
        joined.status.success() && text.contains("joined the coordination space"),
        "{text}"
    );
    assert!(!wt.join(".coord").exists(), "no second store in the worktree");
    let v = json(&wt, &["--agent-id", "bob", "lock", "acquire", "./src//a.rs"]);
    assert_eq!(
        (v["success"].as_bool(), v["action"].as_str()),
        (Some(false), Some("blocked")),
        "{v}"
    );
    assert_eq!(v["locked_by"], "alice", "{v}");

    // The Write hook in the worktree refuses the path alice holds.
    let payload = serde_json::json!({
        "session_id": "2f0e8f8c-5b1e-4c7a-9a57-0f9b7c1d2e3f",
        "cwd": wt.display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": wt.join("src/a.rs").display().to_string(), "content": "x"},
    });
    let mut hook = Command::new(BIN)
        .args(["hook", "PreToolUse"])
        .current_dir(&wt)
        .env_remove("COORD_DATABASE_URL")
        .env("COORD_AGENT_ID", "bob-claude")
        .env("CLAUDECODE", "1")
        .env("COORD_LOCAL_SERVER", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny", "{out:?}");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("alice")),
        "{answer}"
    );

    // Sessions say where their agents work.
    json(&main, &["--agent-id", "alice", "agents", "register"]);
    json(&wt, &["--agent-id", "bob", "agents", "register"]);
    let agents = json(&wt, &["agents", "discover"]);
    let place = |id: &str| {
        let a = agents["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent_id"] == id)
            .unwrap_or_else(|| panic!("{id} in {agents}"));
        (
            a["worktree"]
                .as_str()
                .map(|w| w.rsplit('/').next().unwrap().to_string()),
            a["branch"].as_str().map(String::from),
        )
    };
    assert_eq!(place("alice"), (Some("main".into()), Some("main".into())));
    assert_eq!(place("bob"), (Some("wt2".into()), Some("feature".into())));
    let table = String::from_utf8_lossy(&coord(&main, &["agents", "discover"]).stdout).into_owned();
    assert!(table.contains("wt2 (feature)"), "{table}");
    let status = String::from_utf8_lossy(&coord(&wt, &["status"]).stdout).into_owned();
    assert!(status.contains("sharing the coordination space of"), "{status}");

    // Opting out: an explicit store wins, once `coord init` has made it (a named store in
    // a directory that does not exist is refused as a typo).
    let own = wt.join(".coord-own/coord.db");
    let typo = json(&wt, &["--db", own.to_str().unwrap(), "lock", "list"]);
    assert_eq!(typo["error"], "invalid_argument", "{typo}");
    let made = json(&wt, &["--db", own.to_str().unwrap(), "init"]);
    assert_eq!(made["success"], true, "{made}");
    let v = json(
        &wt,
        &[
            "--db",
            own.to_str().unwrap(),
            "--agent-id",
            "bob",
            "lock",
            "acquire",
            "src/a.rs",
        ],
    );
    assert_eq!(v["action"], "acquired", "{v}");
}
