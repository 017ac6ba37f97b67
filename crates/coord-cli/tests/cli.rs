//! Black-box tests of the `coord` binary: real processes, real SQLite files. The
//! scenarios that do not depend on where the database is run twice: locally, and in
//! remote mode against a running `coord serve` (`COORDINATION_API_URL`).

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use support::BIN;
const REMOTE_KEY: &str = "cli-remote-key";

struct Repo {
    dir: tempfile::TempDir,
    /// In remote mode: the server and its address.
    server: Option<(Child, String)>,
}

impl Drop for Repo {
    fn drop(&mut self) {
        if let Some((child, _)) = self.server.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Repo {
    /// A scratch git repository (a `.git` directory is all `coord` looks for).
    fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        Repo { dir, server: None }
    }

    /// The same repository, with every command going to a `coord serve` over HTTP.
    fn remote() -> Repo {
        let mut repo = Repo::new();
        let mut child = Command::new(BIN)
            .args(["serve", "--port", "0"])
            .current_dir(repo.root())
            .env("COORDINATION_API_KEYS", REMOTE_KEY)
            .env_remove("COORD_DATABASE_URL")
            .env_remove("API_PORT")
            .env_remove("API_HOST")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let url = support::served_address(&mut child);
        repo.server = Some((child, url));
        repo
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.root())
            .env_remove("COORD_DATABASE_URL")
            .env_remove("COORD_AGENT_ID")
            .env_remove("COORD_AGENT_TYPE")
            .env_remove("AGENT_TYPE")
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env_remove("COORDINATION_API_URL")
            .env_remove("COORDINATION_API_KEY")
            .env("COORD_SQLITE_BUSY_TIMEOUT_MS", "300")
            // The audit anchor (`coord audit verify`) goes to the user's state directory.
            .env("XDG_STATE_HOME", self.root().join(".state"))
            // The user's configuration file: a scratch one (a developer's own stays out).
            .env("XDG_CONFIG_HOME", self.root().join(".config"))
            .env_remove("COORD_AUDIT_ANCHOR");
        if let Some((_, url)) = &self.server {
            c.env("COORDINATION_API_URL", url)
                .env("COORDINATION_API_KEY", REMOTE_KEY);
        }
        c
    }

    fn run_in(&self, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.command(args);
        c.current_dir(cwd);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(self.root(), args, &[])
    }

    /// Runs with `--json` as `agent` and parses stdout; returns (json, exit code).
    fn json_as(&self, agent: &str, args: &[&str]) -> (Value, i32) {
        let mut all = vec!["--json", "--agent-id", agent];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let text = String::from_utf8_lossy(&out.stdout);
        let v = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}): {text:?} stderr {:?}", stderr(&out)));
        (v, out.status.code().unwrap())
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

#[test]
fn init_creates_the_default_database_in_the_git_root() {
    let repo = Repo::new();
    let sub = repo.root().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = repo.run_in(&sub, &["init"], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let db = repo.root().join(".coord/coord.db");
    assert!(
        stdout(&out).contains(&db.display().to_string()),
        "init prints where: {}",
        stdout(&out)
    );
    assert!(db.exists());
    let ignore = std::fs::read_to_string(repo.root().join(".coord/.gitignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "*"),
        "the state directory keeps itself out of git"
    );
    let (v, rc) = repo.json_as("a", &["init"]);
    assert_eq!(rc, 0);
    assert_eq!(v["backend"], "sqlite");
}

#[test]
fn outside_a_repository_the_working_directory_holds_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--json", "init"])
        .current_dir(dir.path())
        .env_remove("COORD_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(dir.path().join(".coord/coord.db").exists());
}

fn locks_through_the_cli(repo: &Repo) {
    let (v, rc) = repo.json_as(
        "alice",
        &["lock", "acquire", "src/main.rs", "--reason", "refactor", "--ttl", "30"],
    );
    assert_eq!(rc, 0);
    assert_eq!(v["success"], true);
    assert_eq!(v["action"], "acquired");
    assert_eq!(v["file_path"], "src/main.rs");
    assert!(v["expires_at"].as_str().unwrap().ends_with('Z'));
    assert!(v["fencing_token"].as_i64().unwrap() >= 1);

    let (v, rc) = repo.json_as("bob", &["lock", "acquire", "./src//main.rs"]);
    assert_eq!(rc, 1, "blocked is exit code 1");
    assert_eq!(v["success"], false);
    assert_eq!(v["action"], "blocked");
    assert_eq!(v["locked_by"], "alice");
    assert_eq!(v["lock_reason"], "refactor");

    let human = repo.run(&["--agent-id", "bob", "lock", "acquire", "src/main.rs"]);
    assert_eq!(code(&human), 1);
    assert!(stdout(&human).contains("locked by alice"), "{}", stdout(&human));

    let (v, rc) = repo.json_as("bob", &["lock", "release", "src/main.rs"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("not_lock_owner")));

    let (v, _) = repo.json_as("carol", &["lock", "list"]);
    assert_eq!(v["locks"].as_array().unwrap().len(), 1);
    assert_eq!(v["locks"][0]["locked_by"], "alice");
    let table = repo.run(&["lock", "list"]);
    assert!(stdout(&table).contains("src/main.rs") && stdout(&table).contains("alice"));

    // Another agent's lock: an agent cannot release it, a person can. (Remote, the CLI
    // holds the server's operator key, which administers as whoever it names.)
    if repo.server.is_none() {
        let (v, rc) = repo.json_as("bob", &["--agent-type", "claude_code", "lock", "break", "src/main.rs"]);
        assert_eq!(
            (rc != 0, v["error"].as_str()),
            (true, Some("insufficient_trust_level")),
            "{v}"
        );
    }
    let (v, rc) = repo.json_as("ops", &["lock", "break", "src/main.rs", "--reason", "alice is gone"]);
    assert_eq!((rc, v["locked_by"].as_str()), (0, Some("alice")), "{v}");
    let human = repo.run(&["--agent-id", "ops", "lock", "break", "src/main.rs"]);
    assert!(stdout(&human).contains("not locked") || String::from_utf8_lossy(&human.stderr).contains("not locked"));
    let (v, rc) = repo.json_as("alice", &["lock", "release", "src/main.rs"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("lock_not_held")));
    let (v, _) = repo.json_as("carol", &["lock", "list", "src/main.rs"]);
    assert_eq!(v["locks"], serde_json::json!([]));
}

fn paths_are_taken_relative_to_the_working_directory(repo: &Repo) {
    let sub = repo.root().join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let out = repo.run_in(&sub, &["--json", "--agent-id", "a", "lock", "acquire", "main.rs"], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["file_path"], "src/main.rs");
    let abs = repo.root().join("src/main.rs");
    let (v, rc) = repo.json_as("b", &["lock", "acquire", abs.to_str().unwrap()]);
    assert_eq!((rc, v["action"].as_str()), (1, Some("blocked")));
    let (v, rc) = repo.json_as("a", &["lock", "acquire", "../outside.rs"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("invalid_path")));
    let (v, rc) = repo.json_as("a", &["lock", "acquire", "/etc/passwd"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("invalid_path")));
}

fn global_flags_go_before_or_after_the_subcommand(repo: &Repo) {
    let before = repo.run(&[
        "--json",
        "--agent-id",
        "x",
        "--agent-type",
        "codex",
        "lock",
        "acquire",
        "a.rs",
    ]);
    assert_eq!(code(&before), 0, "{}", stderr(&before));
    let after = repo.run(&["lock", "list", "--json", "--agent-id", "y"]);
    let v: Value = serde_json::from_str(&stdout(&after)).unwrap();
    assert_eq!(v["locks"][0]["locked_by"], "x");
    assert_eq!(v["locks"][0]["agent_type"], "codex");
}

#[test]
fn identity_and_database_come_from_the_environment() {
    let repo = Repo::new();
    let db = repo.root().join("elsewhere/c.db");
    let env = [
        ("COORD_AGENT_ID", "env-agent"),
        ("COORD_AGENT_TYPE", "aider"),
        ("COORD_DATABASE_URL", db.to_str().unwrap()),
    ];
    // A named store in a directory that does not exist is a typo until `coord init`
    // creates it: refused, nothing created.
    let typo = repo.run_in(repo.root(), &["--json", "status"], &env);
    assert_eq!(code(&typo), 2, "{}", stdout(&typo));
    let v: Value = serde_json::from_str(&stdout(&typo)).unwrap();
    assert_eq!(
        (v["error"].as_str(), v["field"].as_str()),
        (Some("invalid_argument"), Some("db")),
        "{v}"
    );
    assert!(!repo.root().join("elsewhere").exists());
    assert_eq!(code(&repo.run_in(repo.root(), &["init"], &env)), 0);
    let out = repo.run_in(repo.root(), &["--json", "status"], &env);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["identity"]["agent_id"], "env-agent");
    assert_eq!(v["identity"]["agent_type"], "aider");
    assert_eq!(v["database"], db.display().to_string());
    assert!(db.exists());
    assert!(
        !repo.root().join(".coord").exists(),
        "the default location was not used"
    );
    let url = format!("sqlite:{}", db.display());
    let out = repo.run(&["--db", &url, "--json", "lock", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Without a configured identity, a default one is used and shown.
    let out = repo.run(&["status"]);
    assert!(stdout(&out).contains("(cli)"), "{}", stdout(&out));
}

fn exit_codes_and_error_shapes(repo: &Repo) {
    let usage = repo.run(&["lock", "frobnicate"]);
    assert_eq!(code(&usage), 2);
    let (v, rc) = repo.json_as("a", &["lock", "acquire", "a.rs", "--ttl", "481"]);
    assert_eq!(rc, 2);
    assert_eq!(v["success"], false);
    assert_eq!(v["error"], "ttl_out_of_range");
    assert_eq!(v["field"], "ttl_minutes");
    assert!(v["message"].as_str().unwrap().contains("480"));
    let (v, rc) = repo.json_as("a", &["work", "submit", "t", "d", "--input", "{nope"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("invalid_json")));
    let (v, rc) = repo.json_as("a", &["work", "claim"]);
    assert_eq!(rc, 1);
    assert_eq!(v, serde_json::json!({"success": false, "reason": "no_tasks_available"}));
    let (v, rc) = repo.json_as("a", &["work", "show", "00000000-0000-4000-8000-000000000000"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("task_not_found")));
    let missing_outcome = repo.run(&["work", "complete", "00000000-0000-4000-8000-000000000000"]);
    assert_eq!(code(&missing_outcome), 2, "--success or --failed is required");
    let human = repo.run(&["lock", "acquire", "a.rs", "--ttl", "0"]);
    assert!(stderr(&human).contains("ttl_out_of_range"), "{}", stderr(&human));
    // A negative number is a value, refused by the range check that says what is allowed.
    let (v, rc) = repo.json_as("a", &["lock", "acquire", "a.rs", "--ttl", "-5"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("ttl_out_of_range")), "{v}");
    // A command line the grammar refuses is JSON too under --json (clap's text without).
    let (v, rc) = repo.json_as("a", &["lock", "acquire", "a.rs", "--no-such-flag"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("--no-such-flag"), "{v}");
    let plain = repo.run(&["lock", "acquire"]);
    assert_eq!((code(&plain), stdout(&plain).as_str()), (2, ""));
    assert!(stderr(&plain).contains("<PATH>"), "{}", stderr(&plain));
    // A group command given nothing is clap's help; under --json, a refusal wherever
    // the flag is written.
    for args in [&["--json", "lock"][..], &["lock", "--json"][..]] {
        let out = repo.run(args);
        let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(
            (code(&out), v["error"].as_str()),
            (2, Some("invalid_argument")),
            "{args:?}"
        );
        assert!(v["usage"].as_str().unwrap().starts_with("coord lock"), "{v}");
    }
    let help = repo.run(&["--json", "lock", "acquire", "--help"]);
    assert_eq!(code(&help), 0);
    assert!(stdout(&help).contains("Usage: coord lock acquire"), "{}", stdout(&help));
}

#[test]
fn an_unusable_database_is_exit_code_3() {
    let repo = Repo::new();
    let not_a_db = repo.root().join("dir.db");
    std::fs::create_dir(&not_a_db).unwrap();
    for target in [not_a_db.to_str().unwrap(), "/proc/c.db"] {
        let out = repo.run(&["--db", target, "--json", "lock", "list"]);
        assert_eq!(code(&out), 3, "{target}: {}", stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["error"], "database_unavailable", "{target}");
        assert!(!stderr(&out).contains("panicked"));
    }
    let garbage = repo.root().join("garbage.db");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    let out = repo.run(&["--db", garbage.to_str().unwrap(), "status"]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("database_unavailable"), "{}", stderr(&out));
    let bad_url = repo.run(&["--db", "mysql://x/y", "status"]);
    assert_eq!(code(&bad_url), 2);
}

#[test]
fn a_database_locked_by_another_process_is_unavailable_not_a_hang() {
    let repo = Repo::new();
    assert_eq!(code(&repo.run(&["init"])), 0);
    let db = repo.root().join(".coord/coord.db");
    let holder = hold_write_lock(&db);
    let out = repo.run(&["--json", "lock", "acquire", "a.rs"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"], "database_unavailable");
    drop(holder);
    assert_eq!(code(&repo.run(&["lock", "acquire", "a.rs"])), 0);
}

/// Holds SQLite's write lock from this (test) process until dropped.
fn hold_write_lock(db: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute_batch("BEGIN EXCLUSIVE").unwrap();
    c
}

fn work_queue_through_the_cli(repo: &Repo) {
    let (v, rc) = repo.json_as(
        "boss",
        &[
            "work",
            "submit",
            "build",
            "build it",
            "--priority",
            "2",
            "--input",
            r#"{"target":"x"}"#,
        ],
    );
    assert_eq!(rc, 0);
    assert_eq!(v["success"], true);
    let build = v["task_id"].as_str().unwrap().to_string();
    let (v, _) = repo.json_as("boss", &["work", "submit", "deploy", "ship it", "--depends-on", &build]);
    let deploy = v["task_id"].as_str().unwrap().to_string();
    let (v, rc) = repo.json_as("w", &["work", "claim", "--type", "deploy"]);
    assert_eq!(
        (rc, v["reason"].as_str()),
        (1, Some("no_tasks_available")),
        "deploy waits on build"
    );
    let (v, rc) = repo.json_as("w", &["work", "claim"]);
    assert_eq!(rc, 0);
    assert_eq!(v["task_id"], build.as_str());
    assert_eq!(v["task_type"], "build");
    assert_eq!(v["task_description"], "build it");
    assert_eq!(v["input_data"], serde_json::json!({"target": "x"}));
    assert_eq!(v["priority"], 2);
    let (v, rc) = repo.json_as("intruder", &["work", "complete", &build, "--success"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("not_task_owner")));
    let (v, rc) = repo.json_as(
        "w",
        &["work", "complete", &build, "--success", "--result", r#"{"ok":true}"#],
    );
    assert_eq!(rc, 0);
    assert_eq!(
        v,
        serde_json::json!({"success": true, "task_id": build, "status": "completed"})
    );
    let (v, _) = repo.json_as("w", &["work", "show", &build]);
    assert_eq!(v["task"]["result"], serde_json::json!({"ok": true}));
    let (v, _) = repo.json_as("w", &["work", "claim"]);
    assert_eq!(v["task_id"], deploy.as_str());
    let (v, _) = repo.json_as("w", &["work", "complete", &deploy, "--failed", "--error", "boom"]);
    assert_eq!(v["status"], "failed");
    let (v, _) = repo.json_as("w", &["work", "list", "--status", "failed"]);
    assert_eq!(v["tasks"][0]["error_message"], "boom");
    let (v, _) = repo.json_as("w", &["work", "list", "--type", "build"]);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 1);
    let table = repo.run(&["work", "list"]);
    assert!(
        stdout(&table).contains("completed") && stdout(&table).contains("failed"),
        "{}",
        stdout(&table)
    );
    // The table shows whole ids: the ones `work show`, `work complete` and `--depends-on` take.
    assert!(
        stdout(&table).contains(&build) && stdout(&table).contains(&deploy),
        "{}",
        stdout(&table)
    );
    let shown = repo.run(&["work", "show", &deploy]);
    assert!(stdout(&shown).contains("boom"), "{}", stdout(&shown));
    // ... or a unique prefix of them, as git takes a short hash.
    let (v, rc) = repo.json_as("w", &["work", "show", &deploy[..8]]);
    assert_eq!((rc, v["task"]["task_id"].as_str()), (0, Some(deploy.as_str())), "{v}");
    let (all, _) = repo.json_as("w", &["work", "list"]);
    let ids: Vec<&str> = all["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["task_id"].as_str())
        .collect();
    let absent = ["ffff", "0000"]
        .into_iter()
        .find(|p| !ids.iter().any(|id| id.starts_with(p)))
        .unwrap();
    let (v, rc) = repo.json_as("w", &["work", "show", absent]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("task_not_found")), "{v}");

    // A person's overrides: requeue a claim, cancel a task (the CLI's default type is a
    // person's, `cli`).
    let (v, _) = repo.json_as("boss", &["work", "submit", "lint", "lint it"]);
    let lint = v["task_id"].as_str().unwrap().to_string();
    let (v, _) = repo.json_as("w", &["work", "claim", "--type", "lint"]);
    assert_eq!(v["task_id"], lint.as_str());
    let (v, rc) = repo.json_as("boss", &["work", "requeue", &lint[..8]]);
    assert_eq!(
        (rc, v["status"].as_str(), v["claimed_by"].as_str()),
        (0, Some("pending"), Some("w")),
        "{v}"
    );
    let shown = repo.run(&["--agent-id", "boss", "work", "cancel", &lint, "--reason", "not needed"]);
    assert!(stdout(&shown).contains("cancelled (was pending)"), "{}", stdout(&shown));
    let (v, rc) = repo.json_as("boss", &["work", "cancel", &lint]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("task_ended")), "{v}");
}

fn agents_handoffs_audit_and_status_through_the_cli(repo: &Repo) {
    let (v, rc) = repo.json_as(
        "alice",
        &[
            "agents",
            "register",
            "--capability",
            "coding",
            "--capability",
            "review",
            "--task",
            "auth",
        ],
    );
    assert_eq!(rc, 0);
    let session = v["session_id"].as_str().unwrap().to_string();
    let (v, _) = repo.json_as("alice", &["agents", "heartbeat"]);
    assert_eq!(v, serde_json::json!({"success": true, "session_id": session}));
    let (v, _) = repo.json_as(
        "bob",
        &["agents", "discover", "--capability", "review", "--status", "active"],
    );
    assert_eq!(v["agents"][0]["agent_id"], "alice");
    assert_eq!(v["agents"][0]["capabilities"], serde_json::json!(["coding", "review"]));
    assert_eq!(v["agents"][0]["current_task"], "auth");
    let (v, _) = repo.json_as("bob", &["agents", "discover", "--capability", "flying"]);
    assert_eq!(v, serde_json::json!({"agents": []}));
    let (v, rc) = repo.json_as("bob", &["agents", "cleanup", "--stale-minutes", "15"]);
    assert_eq!((rc, v["agents_cleaned"].as_i64()), (0, Some(0)));

    let (v, rc) = repo.json_as(
        "alice",
        &[
            "handoff",
            "write",
            "Auth half done",
            "--completed",
            "login",
            "--next",
            "logout",
            "--file",
            "src/auth.rs",
        ],
    );
    assert_eq!(rc, 0);
    let handoff = v["handoff_id"].as_str().unwrap().to_string();
    let (v, _) = repo.json_as("alice", &["handoff", "read"]);
    assert_eq!(v["handoffs"][0]["id"], handoff.as_str());
    assert_eq!(v["handoffs"][0]["next_steps"], serde_json::json!(["logout"]));
    let (v, _) = repo.json_as("bob", &["handoff", "read"]);
    assert_eq!(v, serde_json::json!({"handoffs": []}), "bob has written none");
    let (v, _) = repo.json_as("bob", &["handoff", "read", "--agent", "alice"]);
    assert_eq!(v["handoffs"].as_array().unwrap().len(), 1);
    let (v, _) = repo.json_as("bob", &["handoff", "read", "--all", "--limit", "5"]);
    assert_eq!(v["handoffs"].as_array().unwrap().len(), 1);
    let (_, rc) = repo.json_as("bob", &["handoff", "write", " "]);
    assert_eq!(rc, 2, "a blank summary is an input error");

    let (v, rc) = repo.json_as("admin", &["audit", "--agent", "alice", "--since", "1h"]);
    assert_eq!(rc, 0);
    let ops: Vec<_> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["read_handoff", "write_handoff", "heartbeat", "register_session"]);
    let (v, _) = repo.json_as("admin", &["audit", "--result", "failure"]);
    assert_eq!(v["entries"][0]["error_code"], "invalid_argument");
    let (_, rc) = repo.json_as("admin", &["audit", "--since", "last tuesday"]);
    assert_eq!(rc, 2);
    let table = repo.run(&["audit", "--limit", "3"]);
    assert!(stdout(&table).contains("OPERATION"), "{}", stdout(&table));

    let status = repo.run(&["--agent-id", "alice", "status"]);
    let text = stdout(&status);
    assert!(
        text.contains("alice (cli)") && text.contains("Auth half done"),
        "{text}"
    );
}

/// The audit trail as a new user meets it: verify prints the head, export writes JSON
/// Lines with chain links, prune needs nothing old, a row edited by SQL is found.
#[test]
fn audit_verify_export_prune_and_tampering() {
    let repo = Repo::new();
    for i in 0..3 {
        repo.run(&["--agent-id", "alice", "lock", "acquire", &format!("src/{i}.rs")]);
    }
    let verify = repo.run(&["audit", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let text = stdout(&verify);
    assert!(text.contains("audit trail intact") && text.contains("head:"), "{text}");

    let (v, rc) = repo.json_as("admin", &["audit", "verify"]);
    assert_eq!((rc, v["intact"].as_bool()), (0, Some(true)), "{v}");
    let head = format!("{}:{}", v["head"]["seq"], v["head"]["hash"].as_str().unwrap());
    let (v, rc) = repo.json_as("admin", &["audit", "verify", "--expect-head", &head]);
    assert_eq!((rc, v["intact"].as_bool()), (0, Some(true)), "{v}");
    let (_, rc) = repo.json_as("admin", &["audit", "verify", "--expect-head", "nonsense"]);
    assert_eq!(rc, 2);

    let file = repo.root().join("audit.jsonl");
    let export = repo.run(&[
        "audit",
        "export",
        "--operation",
        "acquire_lock",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines.windows(2).all(|w| w[0]["id"].as_i64() < w[1]["id"].as_i64()),
        "oldest first"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["chain"]["hash"].as_str().is_some_and(|h| h.len() == 64))
    );

    let (v, rc) = repo.json_as("admin", &["audit", "prune", "--dry-run"]);
    assert_eq!(
        (rc, v["pruned_rows"].as_i64()),
        (0, Some(0)),
        "nothing is 90 days old: {v}"
    );
    let key = repo.root().join(".coord/audit.key");
    assert!(key.exists(), "pruning creates the audit key beside the database");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    let (v, _) = repo.json_as("alice", &["--agent-type", "claude_code", "audit", "prune"]);
    assert_eq!(v["error"], "insufficient_trust_level", "{v}");

    // A superuser's edit, made under the triggers: found and named.
    let db = repo.root().join(".coord/coord.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "DROP TRIGGER audit_log_no_update;
         UPDATE audit_log SET agent_id = 'mallory' WHERE chain_seq = 2;",
    )
    .unwrap();
    drop(c);
    let tampered = repo.run(&["audit", "verify"]);
    assert_eq!(tampered.status.code(), Some(1));
    let text = stdout(&tampered);
    assert!(
        text.contains("TAMPERED (edited)") && text.contains("first bad position: 2"),
        "{text}"
    );
}

/// The security review's rewrite (issue 57, finding 6): in one transaction, with the
/// triggers dropped, a row is edited, another deleted, and the whole chain recomputed —
/// the chain alone verifies again. The head `coord audit verify` recorded outside the
/// store earlier is no longer in it: the rewrite is caught, and the anchor keeps the head
/// that proves it.
#[test]
fn a_rewritten_chain_is_caught_by_the_head_kept_outside_the_store() {
    use coord_domain::audit::AuditEntry;
    use coord_domain::audit_chain::entry_hash;
    let repo = Repo::new();
    for i in 0..4 {
        repo.run(&["--agent-id", "alice", "lock", "acquire", &format!("src/{i}.rs")]);
    }
    let first = repo.run(&["audit", "verify"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(stderr(&first).contains("recorded in"), "{}", stderr(&first));
    let anchors: Vec<_> = std::fs::read_dir(repo.root().join(".state/coord/anchors"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(anchors.len(), 1);

    // The rewrite, as someone who can write the database would do it.
    let file = repo.root().join("all.jsonl");
    let export = repo.run(&["audit", "export", "-o", file.to_str().unwrap()]);
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let mut rows: Vec<AuditEntry> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let gone = rows.remove(3).id;
    rows[1].agent_id = "mallory".into();
    let mut prev = "0".repeat(64);
    for (i, row) in rows.iter_mut().enumerate() {
        let link = row.chain.as_mut().unwrap();
        link.seq = i as i64 + 1;
        link.prev_hash = prev.clone();
        prev = entry_hash(row).unwrap();
        row.chain.as_mut().unwrap().hash = prev.clone();
    }
    let c = rusqlite::Connection::open(repo.root().join(".coord/coord.db")).unwrap();
    c.execute_batch("BEGIN; DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;")
        .unwrap();
    c.execute("DELETE FROM audit_log WHERE id = ?1", [gone]).unwrap();
    // The export's own row (and anything after it) goes too: this rewrite is its end.
    let last = rows.last().unwrap().id;
    c.execute("DELETE FROM audit_log WHERE id > ?1", [last]).unwrap();
    for row in &rows {
        let link = row.chain.as_ref().unwrap();
        c.execute(
            "UPDATE audit_log SET agent_id = ?1, chain_seq = ?2, prev_hash = ?3, row_hash = ?4 WHERE id = ?5",
            rusqlite::params![row.agent_id, link.seq, link.prev_hash, link.hash, row.id],
        )
        .unwrap();
    }
    c.execute_batch("COMMIT;").unwrap();
    drop(c);
    // Without the anchor, the rewritten chain checks out: hashes alone prove nothing here.
    let (v, rc) = repo.json_as("admin", &["audit", "verify", "--no-anchor"]);
    assert_eq!((rc, v["intact"].as_bool()), (0, Some(true)), "{v}");
    // With it (the default), it does not; and a tampered chain does not move the anchor.
    for _ in 0..2 {
        let tampered = repo.run(&["audit", "verify"]);
        assert_eq!(tampered.status.code(), Some(1), "{}", stdout(&tampered));
        assert!(stdout(&tampered).contains("TAMPERED"), "{}", stdout(&tampered));
    }
}

/// A real HTTP server on loopback playing the security webhook: answers `status` to
/// every request and hands each request body to the test.
fn webhook(status: &'static str) -> (String, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks/security", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, rx)
}

/// An elevated operation reaches the security webhook: listed, delivered once by
/// `coord notification deliver`, and a webhook that refuses leaves it undelivered with why.
#[test]
fn elevated_operations_reach_the_security_webhook() {
    let repo = Repo::new();
    let file = repo.root().join("profiles.yaml");
    std::fs::write(
        &file,
        "pusher:\n  agent_type: claude_code\n  trust_level: 3\n  allowed_operations: [read, write]\n  elevated_operations: [force_push]\n",
    )
    .unwrap();
    assert_eq!(
        repo.json_as("admin", &["profile", "apply", file.to_str().unwrap()]).1,
        0
    );
    assert_eq!(
        repo.json_as("admin", &["profile", "assign", "pusher", "--agent", "senior"])
            .1,
        0
    );
    let push = |agent: &str| {
        repo.json_as(
            agent,
            &[
                "--agent-type",
                "claude_code",
                "guard",
                "check",
                "--",
                "git push --force origin feature",
            ],
        )
    };
    let (v, rc) = push("senior");
    assert_eq!((rc, v["elevated"].as_bool()), (0, Some(true)), "{v}");

    // Without a webhook set, delivery says what to do; the notification waits.
    let (v, rc) = repo.json_as("admin", &["notifications", "deliver"]);
    assert_eq!(
        (rc, v["field"].as_str()),
        (2, Some("COORD_SECURITY_WEBHOOK_URL")),
        "{v}"
    );
    let (v, _) = repo.json_as("admin", &["notifications", "list", "--undelivered"]);
    assert_eq!(v["notifications"].as_array().unwrap().len(), 1, "{v}");

    // A webhook that refuses: nothing lost, the reason recorded.
    let (refusing, _) = webhook("503 Service Unavailable");
    let out = repo.run_in(
        repo.root(),
        &["notifications", "deliver"],
        &[("COORD_SECURITY_WEBHOOK_URL", &refusing)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (v, _) = repo.json_as("admin", &["notifications", "list", "--undelivered"]);
    let n = &v["notifications"][0];
    assert!(n["last_error"].as_str().unwrap().contains("503"), "{v}");

    // A second elevated push, then a webhook that accepts: the new one goes now, the
    // failed one after its backoff.
    push("senior");
    let (url, received) = webhook("200 OK");
    let out = repo.run_in(
        repo.root(),
        &["notifications", "deliver"],
        &[("COORD_SECURITY_WEBHOOK_URL", &url)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("delivered 1"), "{}", stdout(&out));
    let body = received.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(
        (
            body["channel"].as_str(),
            body["kind"].as_str(),
            body["agent_id"].as_str()
        ),
        (Some("security"), Some("elevated_operation"), Some("senior")),
        "{body}"
    );
    assert_eq!(body["details"]["operations"], serde_json::json!(["force_push"]));
    let table = repo.run(&["notifications", "list"]);
    assert!(
        stdout(&table).contains("elevated_operation") && stdout(&table).contains("503"),
        "{}",
        stdout(&table)
    );
    let (_, rc) = repo.json_as("senior", &["--agent-type", "claude_code", "notifications", "list"]);
    assert_eq!(rc, 1, "administrators only");
}

#[test]
fn help_explains_commands_and_exit_codes() {
    let repo = Repo::new();
    let top = stdout(&repo.run(&["--help"]));
    for needle in [
        "lock",
        "work",
        "agents",
        "handoff",
        "audit",
        "status",
        "Exit codes",
        "--db",
        "--json",
    ] {
        assert!(top.contains(needle), "--help lacks {needle}: {top}");
    }
    let acquire = stdout(&repo.run(&["lock", "acquire", "--help"]));
    assert!(acquire.contains("1-480") && acquire.contains("--reason"), "{acquire}");
    let version = stdout(&repo.run(&["--version"]));
    assert!(version.starts_with("coord "));
}

fn racing_cli_processes_get_one_lock(repo: &Repo) {
    repo.run(&["lock", "list"]);
    for round in 0..3 {
        let path = format!("shared-{round}.rs");
        let children: Vec<_> = (0..8)
            .map(|i| {
                repo.command(&["--json", "--agent-id", &format!("p{i}"), "lock", "acquire", &path])
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let codes: Vec<i32> = children
            .into_iter()
            .map(|c| code(&c.wait_with_output().unwrap()))
            .collect();
        assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "round {round}: {codes:?}");
        assert_eq!(codes.iter().filter(|c| **c == 1).count(), 7, "round {round}: {codes:?}");
    }
}

/// `coord call` reaches every operation with JSON in and out; its refusals are audited
/// and keep their exit codes; `coord ops` lists the registry.
fn every_operation_through_coord_call(repo: &Repo) {
    let (v, rc) = repo.json_as("alice", &["call", "acquire_lock", r#"{"file_path": "src/a.rs"}"#]);
    assert_eq!((rc, v["action"].as_str()), (0, Some("acquired")), "{v}");
    let (v, rc) = repo.json_as("bob", &["call", "check_edit", r#"{"paths": ["src/a.rs"]}"#]);
    assert_eq!(
        (rc, v["error"].as_str(), v["locked_by"].as_str()),
        (1, Some("file_locked"), Some("alice")),
        "{v}"
    );
    let (v, rc) = repo.json_as(
        "bob",
        &["call", "acquire_lock", r#"{"file_path": "x", "ttl_minutes": "soon"}"#],
    );
    assert_eq!(
        (rc, v["error"].as_str(), v["field"].as_str()),
        (2, Some("invalid_argument"), Some("ttl_minutes")),
        "{v}"
    );
    let (v, rc) = repo.json_as("bob", &["call", "acquire_lock", "{not json"]);
    assert_eq!((rc, v["error"].as_str()), (2, Some("invalid_json")), "{v}");
    let (v, rc) = repo.json_as("bob", &["call", "drop_database"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("unknown_operation")), "{v}");
    let file = repo.root().join("end.json");
    std::fs::write(&file, r#"{"handoff": {"summary": "done"}}"#).unwrap();
    let (v, rc) = repo.json_as("alice", &["call", "end_session", &format!("@{}", file.display())]);
    assert_eq!((rc, v["released"].clone()), (0, serde_json::json!(["src/a.rs"])), "{v}");
    // The request's fields as flags, read by their types from the request's schema.
    let (v, rc) = repo.json_as(
        "carol",
        &[
            "call",
            "acquire_lock",
            "--file-path",
            "src/b.rs",
            "--ttl-minutes",
            "30",
            "--reason=flags",
        ],
    );
    assert_eq!((rc, v["action"].as_str()), (0, Some("acquired")), "{v}");
    let (v, rc) = repo.json_as(
        "bob",
        &["call", "check_edit", "--paths", "src/c.rs", "--paths", "src/b.rs"],
    );
    assert_eq!((rc, v["locked_by"].as_str()), (1, Some("carol")), "{v}");
    let (v, rc) = repo.json_as(
        "bob",
        &["call", "acquire_lock", "--file-path", "x", "--ttl-minutes", "soon"],
    );
    assert_eq!(
        (rc, v["error"].as_str(), v["field"].as_str()),
        (2, Some("invalid_argument"), Some("ttl_minutes")),
        "{v}"
    );
    let (v, rc) = repo.json_as(
        "carol",
        &["call", "acquire_lock", r#"{"file_path": "x"}"#, "--nope", "1"],
    );
    assert_eq!((rc, v["field"].as_str()), (2, Some("nope")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("--ttl-minutes"), "{v}");
    let help = repo.run(&["call", "acquire_lock", "--help"]);
    assert_eq!(code(&help), 0);
    for word in [
        "--file-path",
        "required",
        "--ttl-minutes",
        "integer",
        "POST /locks/acquire",
    ] {
        assert!(stdout(&help).contains(word), "{word} in {}", stdout(&help));
    }
    let (v, _) = repo.json_as(
        "auditor",
        &["call", "query_audit", r#"{"agent_id": "bob", "success": false}"#],
    );
    let refused: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["operation"].as_str().unwrap())
        .collect();
    // Locally the unreadable request is audited too; in remote mode it never left this
    // machine (the server saw no operation).
    let want: &[&str] = if repo.server.is_some() {
        &["check_edit", "acquire_lock", "check_edit"]
    } else {
        &[
            "acquire_lock",
            "check_edit",
            "acquire_lock",
            "acquire_lock",
            "check_edit",
        ]
    };
    assert_eq!(refused, want, "{v}");
}

#[test]
fn ops_lists_the_registry() {
    let repo = Repo::new();
    let out = repo.run(&["ops"]);
    assert_eq!(code(&out), 0);
    for name in ["acquire_lock", "check_edit", "end_session", "POST /locks/acquire"] {
        assert!(stdout(&out).contains(name), "{name} in {}", stdout(&out));
    }
    let (v, rc) = repo.json_as("a", &["ops"]);
    assert_eq!(rc, 0);
    let ops = v["operations"].as_array().unwrap();
    assert_eq!(ops.len(), coord_service::ops().len());
    assert!(ops.iter().all(|o| o["request_schema"]["type"] == "object"), "{v}");
}

/// A malformed PORT_ALLOC_* breaks the port commands only: locks and the edit guard
/// keep working.
#[test]
fn a_bad_port_setting_breaks_only_ports() {
    let repo = Repo::new();
    let bad = [("PORT_ALLOC_BASE", "65500"), ("PORT_ALLOC_RANGE", "100")];
    let out = repo.run_in(repo.root(), &["--agent-id", "a", "lock", "acquire", "src/a.rs"], &bad);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = repo.run_in(
        repo.root(),
        &["--agent-id", "a", "call", "allocate_ports", r#"{"session_id": "s"}"#],
        &bad,
    );
    assert_eq!(code(&out), 2, "{} {}", stdout(&out), stderr(&out));
}

/// Profiles from YAML, a limit that asks for approval, and the approval queue from the
/// shell: the same request passes once after a person approves it.
fn profiles_and_approvals_through_the_cli(repo: &Repo) {
    let file = repo.root().join("profiles.yaml");
    std::fs::write(
        &file,
        "two-calls:\n  agent_type: claude_code\n  trust_level: 2\n  allowed_operations: [read, write]\n  resource_limits:\n    max_api_calls: 2\n  escalation: true\n",
    )
    .unwrap();
    let (v, rc) = repo.json_as("admin", &["profile", "apply", file.to_str().unwrap()]);
    assert_eq!(rc, 0, "{v}");
    assert_eq!(
        repo.json_as("admin", &["profile", "assign", "two-calls", "--agent", "worker"])
            .1,
        0
    );
    let worker = |args: &[&str]| {
        let mut all = vec!["--agent-type", "claude_code"];
        all.extend_from_slice(args);
        repo.json_as("worker", &all)
    };
    // Calls until the limit refuses one, with an approval request.
    let refused = (0..5)
        .map(|_| worker(&["lock", "list", "src/a.rs"]))
        .find(|(_, rc)| *rc != 0)
        .expect("the limit refuses a call")
        .0;
    assert_eq!(refused["error"], "resource_limit_exceeded", "{refused}");
    assert_eq!(refused["approval_required"], true);
    let id = refused["approval_id"].as_str().unwrap().to_string();
    let (pending, _) = repo.json_as("admin", &["approvals", "list"]);
    assert_eq!(pending["approvals"][0]["approval_id"], id.as_str(), "{pending}");
    let table = repo.run(&["approvals", "list"]);
    assert!(
        stdout(&table).contains(&id) && stdout(&table).contains("check_locks"),
        "{}",
        stdout(&table)
    );
    let (own, rc) = worker(&["approvals", "approve", &id]);
    assert_eq!(rc, 1, "{own}");
    assert!(
        own["error"] == "insufficient_trust_level" || own["error"] == "cannot_approve_own_request",
        "{own}"
    );
    let (ok, rc) = repo.json_as(
        "admin",
        &["approvals", "approve", &id, "--note", "fine", "--valid-minutes", "5"],
    );
    assert_eq!((rc, ok["approval"]["status"].as_str()), (0, Some("approved")), "{ok}");
    assert_eq!(worker(&["approvals", "wait", &id, "--timeout", "2s"]).1, 0);
    assert_eq!(
        worker(&["lock", "list", "src/a.rs"]).1,
        0,
        "the approval lets it pass once"
    );
    let (shown, _) = repo.json_as("admin", &["approvals", "show", &id]);
    assert_eq!(shown["approval"]["status"], "used");
    let (again, rc) = worker(&["lock", "list", "src/a.rs"]);
    assert_eq!(rc, 1);
    let second = again["approval_id"].as_str().unwrap().to_string();
    assert_ne!(second, id);
    assert_eq!(repo.json_as("admin", &["approvals", "deny", &second]).1, 0);
    let (denied, rc) = worker(&["approvals", "wait", &second, "--timeout", "2s"]);
    assert_eq!((rc, denied["approval"]["status"].as_str()), (1, Some("denied")));
    let bad = repo.run(&["approvals", "list", "--status", "nope"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    let unknown = repo.run(&["approvals", "show", "apr_nope"]);
    assert_eq!(code(&unknown), 1, "{}", stderr(&unknown));
}

/// The guardrails from the shell: a destructive command is blocked with an approval
/// request; once approved, the same command passes once.
fn guardrails_through_the_cli(repo: &Repo) {
    let ok = repo.run(&["--agent-id", "dev", "guard", "check", "--", "git status && cargo test"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(stdout(&ok).starts_with("allowed"), "{}", stdout(&ok));
    let (blocked, rc) = repo.json_as("dev", &["guard", "check", "--", "git push --force origin main"]);
    assert_eq!(
        (rc, blocked["error"].as_str()),
        (1, Some("destructive_operation_blocked")),
        "{blocked}"
    );
    assert_eq!(blocked["operation"], "force_push");
    let id = blocked["approval_id"].as_str().unwrap().to_string();
    let human = repo.run(&[
        "--agent-id",
        "dev",
        "guard",
        "check",
        "--",
        "git push --force origin main",
    ]);
    assert_eq!(code(&human), 1);
    assert!(
        stderr(&human).contains(&format!("approval requested: {id}")),
        "{}",
        stderr(&human)
    );
    assert_eq!(repo.json_as("admin", &["approvals", "approve", &id]).1, 0);
    // Several words are one command line, as a shell tool sends it.
    let once = repo.run(&[
        "--agent-id",
        "dev",
        "guard",
        "check",
        "--",
        "git",
        "push",
        "--force",
        "origin",
        "main",
    ]);
    assert_eq!(code(&once), 0, "{} {}", stdout(&once), stderr(&once));
    assert!(
        stdout(&once).contains(&format!("allowed once by approval {id}")),
        "{}",
        stdout(&once)
    );
    let (again, rc) = repo.json_as("dev", &["guard", "check", "--", "git push --force origin main"]);
    assert_eq!(rc, 1, "{again}");
    let (cred, rc) = repo.json_as("dev", &["guard", "check", "--files", "config/.env"]);
    assert_eq!((rc, cred["requires"].as_str()), (1, Some("manual_review")), "{cred}");
    let empty = repo.run(&["guard", "check"]);
    assert_eq!(code(&empty), 2, "{}", stderr(&empty));
}

/// The pattern registry from the shell: listed by anyone, changed by an administrator,
/// applied by the next check.
/// `npm run NAME`, `make TARGET` and a script run by path are judged by the code the
/// repository holds for them (read beneath the directory by coord-files), not their names.
fn entry_points_are_judged_by_their_code(repo: &Repo) {
    let dir = repo.root();
    std::fs::write(
        dir.join("package.json"),
        r#"{"scripts": {"build": "echo built", "ship": "npm run build && vercel --prod", "release:notes": "echo notes"}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("Makefile"), "all:\n\techo ok\nnuke: all\n\trm -rf src\n").unwrap();
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("scripts/reset.sh"),
        "#!/bin/sh\ngit reset --hard origin/main\n",
    )
    .unwrap();
    let check = |cmd: &str| repo.json_as("dev", &["guard", "check", "--", cmd]);
    for (cmd, refused_as) in [
        ("npm run build", None),
        ("npm run release:notes", None),
        ("make", None),
        ("npm run ship", Some("deploy")),
        ("make nuke", Some("recursive_delete")),
        ("./scripts/reset.sh", Some("hard_reset")),
        ("bash scripts/reset.sh", Some("hard_reset")),
        // Not in the repository: judged by its name.
        ("./scripts/deploy.sh prod", Some("deploy")),
    ] {
        let (answer, rc) = check(cmd);
        match refused_as {
            None => assert_eq!(rc, 0, "{cmd}: {answer}"),
            Some(op) => assert_eq!((rc, answer["operation"].as_str()), (1, Some(op)), "{cmd}: {answer}"),
        }
    }
    for f in ["package.json", "Makefile", "scripts/reset.sh"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
}

fn guardrail_rules_through_the_cli(repo: &Repo) {
    let (all, rc) = repo.json_as("dev", &["guard", "rules", "list"]);
    assert_eq!(rc, 0, "{all}");
    assert!(all["guardrails"].as_array().unwrap().len() >= 80, "{all}");
    let table = repo.run(&["guard", "rules", "list", "--program", "kubectl"]);
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    assert!(stdout(&table).contains("kubectl-mutate"), "{}", stdout(&table));
    assert!(!stdout(&table).contains("terraform"), "{}", stdout(&table));

    let check = |cmd: &str| code(&repo.run(&["--agent-id", "dev", "guard", "check", "--", cmd]));
    assert_eq!(check("make upload"), 0);
    let file = repo.dir.path().join("make-upload.json");
    std::fs::write(
        &file,
        r#"{"program": "make", "words": ["upload"], "operation": "deploy", "category": "production_deployment",
            "action": "block", "reason": "make upload ships to production; ask for approval"}"#,
    )
    .unwrap();
    let (set, rc) = repo.json_as(
        "admin",
        &["guard", "rules", "set", "make-upload", "--file", file.to_str().unwrap()],
    );
    assert_eq!((rc, set["guardrail"]["source"].as_str()), (0, Some("custom")), "{set}");
    assert_eq!(check("make upload"), 1);
    let (changed, _) = repo.json_as("dev", &["guard", "rules", "list", "--changed"]);
    assert_eq!(changed["guardrails"].as_array().unwrap().len(), 1, "{changed}");
    assert_eq!(
        repo.json_as("admin", &["guard", "rules", "disable", "make-upload"]).1,
        0
    );
    assert_eq!(check("make upload"), 0);
    assert_eq!(repo.json_as("admin", &["guard", "rules", "enable", "make-upload"]).1, 0);
    assert_eq!(check("make upload"), 1);
    let (reset, rc) = repo.json_as("admin", &["guard", "rules", "reset", "make-upload"]);
    assert_eq!((rc, reset["builtin_restored"].as_bool()), (0, Some(false)), "{reset}");
    assert_eq!(check("make upload"), 0);

    // Refusals: not JSON (2), an invalid pattern (2, nothing stored), an agent (1).
    let bad = repo.run(&["guard", "rules", "set", "x", "--pattern", "{not json"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    let (invalid, rc) = repo.json_as(
        "admin",
        &["guard", "rules", "set", "x", "--pattern", r#"{"program": "[x"}"#],
    );
    assert_eq!(
        (rc, invalid["error"].as_str()),
        (2, Some("invalid_guardrail")),
        "{invalid}"
    );
    let none = repo.run(&["guard", "rules", "set", "x"]);
    assert_eq!(code(&none), 2, "{}", stderr(&none));
    if repo.server.is_none() {
        // (Remote, the CLI holds the server's operator key.)
        let agent_args = [
            "--agent-type",
            "claude_code",
            "guard",
            "rules",
            "disable",
            "ansible-playbook",
        ];
        let (agent, rc) = repo.json_as("worker", &agent_args);
        assert_eq!(
            (rc, agent["error"].as_str()),
            (1, Some("insufficient_trust_level")),
            "{agent}"
        );
    }
    let (missing, rc) = repo.json_as("admin", &["guard", "rules", "reset", "never-set"]);
    assert_eq!((rc, missing["error"].as_str()), (1, Some("not_found")), "{missing}");
}

fn files_through_the_cli(repo: &Repo) {
    std::fs::create_dir_all(repo.root().join("src")).unwrap();
    let (v, rc) = repo.json_as("alice", &["file", "write", "src/a.txt", "--text", "hello\nworld\n"]);
    assert_eq!(
        (rc, v["created"].as_bool(), v["bytes"].as_u64()),
        (0, Some(true), Some(12)),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root().join("src/a.txt")).unwrap(),
        "hello\nworld\n"
    );
    // People get the bytes themselves; from a subdirectory, paths are relative to it.
    let out = repo.run_in(
        &repo.root().join("src"),
        &["file", "read", "a.txt", "--offset", "2"],
        &[],
    );
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "world\n"), "{}", stderr(&out));
    // Bytes that are not UTF-8 go through base64 and come back exactly.
    let bin = repo.root().join("blob.in");
    std::fs::write(&bin, [0u8, 159, 146, 150, 255]).unwrap();
    let (v, rc) = repo.json_as("alice", &["file", "write", "src/blob", "--from", bin.to_str().unwrap()]);
    assert_eq!(rc, 0, "{v}");
    let out = repo.run(&["file", "read", "src/blob"]);
    assert_eq!(out.stdout, vec![0u8, 159, 146, 150, 255]);
    // Refusals: exit code and the stable code; nothing written.
    repo.json_as("bob", &["lock", "acquire", "src/a.txt"]);
    let (v, rc) = repo.json_as("alice", &["file", "write", "src/a.txt", "--text", "mine"]);
    assert_eq!((rc, v["error"].as_str()), (1, Some("file_locked")), "{v}");
    let (v, rc) = repo.json_as(
        "alice",
        &["file", "write", "src/a.txt", "--text", "x", "--fencing-token", "999"],
    );
    assert_eq!((rc, v["error"].as_str()), (1, Some("stale_fencing_token")), "{v}");
    assert_eq!(
        std::fs::read_to_string(repo.root().join("src/a.txt")).unwrap(),
        "hello\nworld\n"
    );
    let (v, rc) = repo.json_as("alice", &["file", "read", "/etc/passwd"]);
    assert_ne!(rc, 0);
    assert_eq!(v["error"], "path_outside_workspace", "{v}");
    let (v, _) = repo.json_as("alice", &["file", "read", ".coord/coord.db"]);
    assert_eq!(v["error"], "permission_denied", "{v}");
    let human = repo.run(&["file", "read", "nope.txt"]);
    assert!(stderr(&human).contains("[not_found]"), "{}", stderr(&human));
    // An empty pipe writes nothing; a backslash is refused as typed, not turned into '/'.
    let empty = repo
        .command(&["--json", "file", "write", "src/a.txt"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&empty), 2, "{}", stdout(&empty));
    assert!(
        stdout(&empty).contains("standard input was empty"),
        "{}",
        stdout(&empty)
    );
    assert_eq!(
        std::fs::read_to_string(repo.root().join("src/a.txt")).unwrap(),
        "hello\nworld\n"
    );
    let (v, _) = repo.json_as("alice", &["file", "write", "src\\a.txt", "--text", "x"]);
    assert_eq!(v["error"], "invalid_path", "{v}");
}

/// A bad workspace setting turns the file tools off, saying why, and nothing else.
#[test]
fn a_bad_workspace_turns_only_the_file_tools_off() {
    let repo = Repo::new();
    std::fs::create_dir(repo.root().join("docs")).unwrap();
    std::fs::write(repo.root().join("docs/a.md"), "# a").unwrap();
    std::fs::write(repo.root().join("b.md"), "# b").unwrap();
    let (v, rc) = repo.json_as("a", &["--workspace", "/etc", "lock", "acquire", "b.md"]);
    assert_eq!((rc, v["success"].as_bool()), (0, Some(true)), "{v}");
    let (v, _) = repo.json_as("a", &["--workspace", "/etc", "file", "read", "b.md"]);
    assert_eq!(v["error"], "confinement_unavailable", "{v}");
    assert!(v["message"].as_str().unwrap().contains("outside the repository"), "{v}");
    // A workspace narrows what the tools reach (relative to the repository root).
    let out = repo.run_in(
        &repo.root().join("docs"),
        &["--json", "file", "read", "a.md"],
        &[("COORD_WORKSPACES", "docs")],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let out = repo.run_in(
        repo.root(),
        &["--json", "file", "read", "b.md"],
        &[("COORD_WORKSPACES", "docs")],
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"], "path_outside_workspace", "{v}");
    // An empty variable is the default.
    let out = repo.run_in(
        repo.root(),
        &["--json", "file", "read", "b.md"],
        &[("COORD_WORKSPACES", "")],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

/// `coord key issue` asked for a key longer than a day (issued keys are short-lived),
/// with a profile to assign first.
const TOO_LONG_KEY: [&str; 10] = [
    "--agent-type",
    "codex_cloud",
    "keys",
    "issue",
    "--task",
    "T",
    "--ttl",
    "25h",
    "--profile",
    "worker-write",
];

/// A request a command cannot even build (a flag that is not JSON, an unknown level, a
/// file that does not parse) is refused through the pipeline: audited as the operation it
/// was meant for, like every other refusal. (In remote mode such a request never leaves
/// the machine, as with `coord call`.)
#[test]
fn requests_the_command_line_cannot_build_are_refused_and_audited() {
    let repo = Repo::new();
    let bad_policy = repo.root().join("policy.yaml");
    std::fs::write(&bad_policy, "nonsense: [").unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["work", "submit", "test", "x", "--input", "{bad"],
            "submit_work",
            "invalid_json",
        ),
        (
            &[
                "work",
                "complete",
                "00000000-0000-0000-0000-000000000001",
                "--success",
                "--result",
                "{bad",
            ],
            "complete_work",
            "invalid_json",
        ),
        (
            &["msg", "send", "bob", "hi", "--importance", "mega"],
            "send_message",
            "invalid_argument",
        ),
        (
            &["approval", "list", "--status", "maybe"],
            "list_approvals",
            "invalid_argument",
        ),
        (
            &["verify", "apply", bad_policy.to_str().unwrap()],
            "set_verification_policy",
            "invalid_argument",
        ),
    ];
    for (args, operation, error) in cases {
        let (v, rc) = repo.json_as("zed", args);
        assert_eq!((rc, v["error"].as_str()), (2, Some(*error)), "{args:?}: {v}");
        let (audit, _) = repo.json_as(
            "auditor",
            &[
                "call",
                "query_audit",
                &serde_json::json!({"agent_id": "zed", "operation": operation}).to_string(),
            ],
        );
        let rows = audit["entries"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{args:?}: {audit}");
        assert_eq!(
            (rows[0]["success"].as_bool(), rows[0]["error_code"].as_str()),
            (Some(false), Some(*error))
        );
    }
    // A key `coord key issue` may not mint (longer than a day) is refused as
    // create_api_key before its profile is assigned.
    let long = repo.run(&TOO_LONG_KEY);
    assert_eq!(code(&long), 2, "{}", stderr(&long));
    let (audit, _) = repo.json_as(
        "auditor",
        &[
            "call",
            "query_audit",
            r#"{"operation": "create_api_key", "success": false}"#,
        ],
    );
    let rows = audit["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{audit}");
    assert_eq!(rows[0]["result"]["field"], "expires_in_minutes", "{audit}");
    let (assigned, _) = repo.json_as(
        "auditor",
        &["call", "query_audit", r#"{"operation": "assign_profile"}"#],
    );
    assert_eq!(assigned["entries"], serde_json::json!([]), "{assigned}");
}

/// After `coord call OPERATION` every word is the request's, wherever it stands:
/// `--agent-id` there is query_audit's filter, never the caller; coord's own options go
/// before `call`. An operation's help opens no coordinator.
#[test]
fn the_words_after_the_operation_are_the_requests() {
    let repo = Repo::new();
    let (v, rc) = repo.json_as("alice", &["call", "acquire_lock", "--file-path", "a.rs"]);
    assert_eq!(rc, 0, "{v}");
    for args in [
        &["call", "query_audit", "--agent-id", "alice", "--limit", "5"][..],
        &["call", "query_audit", "--limit", "5", "--agent-id", "alice"][..],
    ] {
        let (v, rc) = repo.json_as("carol", args);
        let agents: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["agent_id"].as_str().unwrap())
            .collect();
        assert_eq!((rc, agents), (0, vec!["alice"]), "{args:?}: {v}");
    }
    // Carol asked both times: her own rows say so.
    let (v, _) = repo.json_as("auditor", &["call", "query_audit", "--agent-id", "carol"]);
    assert_eq!(v["entries"].as_array().unwrap().len(), 2, "{v}");
    let (v, rc) = repo.json_as("carol", &["call", "check_locks", "{}", "--json"]);
    assert_eq!((rc, v["field"].as_str()), (2, Some("json")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("put it before `call`"), "{v}");
    let (v, rc) = repo.json_as(
        "carol",
        &["call", "acquire_lock", "--file-path", "a", "--file-path", "b"],
    );
    assert_eq!((rc, v["field"].as_str()), (2, Some("file_path")), "{v}");
    // Help, in a directory with no coordinator: printed, nothing created.
    let bare = tempfile::tempdir().unwrap();
    for help in ["--help", "-h"] {
        let out = repo.run_in(bare.path(), &["call", "list_tasks", help], &[]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains("pending | claimed"), "{}", stdout(&out));
    }
    assert!(!bare.path().join(".coord").exists());
}

/// Each shared scenario, locally and through `coord serve`.
macro_rules! local_and_remote {
    ($($name:ident),* $(,)?) => {
        mod local {
            $(#[test] fn $name() { super::$name(&super::Repo::new()) })*
        }
        mod remote {
            $(#[test] fn $name() { super::$name(&super::Repo::remote()) })*
        }
    };
}

local_and_remote!(
    locks_through_the_cli,
    paths_are_taken_relative_to_the_working_directory,
    global_flags_go_before_or_after_the_subcommand,
    exit_codes_and_error_shapes,
    work_queue_through_the_cli,
    agents_handoffs_audit_and_status_through_the_cli,
    racing_cli_processes_get_one_lock,
    every_operation_through_coord_call,
    profiles_and_approvals_through_the_cli,
    guardrails_through_the_cli,
    guardrail_rules_through_the_cli,
    entry_points_are_judged_by_their_code,
    files_through_the_cli,
    verification_through_the_cli,
    verification_workers_through_the_cli,
    github_actions_workers_through_the_cli,
    e2b_workers_through_the_cli,
);

/// `coord verify run --once`: the policies' commands run in the sandbox (bubblewrap) in
/// this repository, and their outcomes are recorded.
fn verification_workers_through_the_cli(repo: &Repo) {
    git(repo, &["init", "-q"]);
    git(repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    std::fs::write(
        repo.root().join("policies.yaml"),
        "check: {tier: 2, executor: local, patterns: ['src/**'], required_env: [FOO],\n  command: [sh, -c, 'test -f src/main.rs && echo checked $FOO && echo oops > /dev/stderr']}\nslow: {tier: 2, executor: inline, patterns: ['slow/**'], command: [sleep, '30'], timeout_seconds: 1}\n",
    )
    .unwrap();
    let out = repo.run(&["verify", "apply", "policies.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::create_dir_all(repo.root().join("src")).unwrap();
    std::fs::create_dir_all(repo.root().join("slow")).unwrap();
    std::fs::write(repo.root().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(repo.root().join("slow/x"), "x\n").unwrap();
    // A worker checks the changeset's commit in a clean tree (coord's own .coord aside).
    git(repo, &["add", "src", "slow", "policies.yaml"]);
    git(repo, &["commit", "-q", "-m", "work"]);
    let submit = [
        "--agent-type",
        "claude_code",
        "verify",
        "submit",
        "--git",
        base.as_str(),
    ];
    let (v, c) = repo.json_as("dev", &submit);
    assert_eq!(c, 0, "{v}");
    let id = v["changeset"]["changeset_id"].as_str().unwrap().to_string();

    // Without FOO the check cannot judge; the slow one is stopped at its timeout.
    let out = repo.run_in(
        repo.root(),
        &["--agent-id", "ci", "verify", "run", "--once"],
        &[("FOO", "")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (v, _) = repo.json_as("dev", &["verify", "status", &id]);
    let runs: Vec<(&str, &str)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(runs, [("check", "passed"), ("slow", "timed_out")], "{v}");
    assert_eq!(v["status"], "failed");
    let check = &v["runs"][0];
    assert_eq!(check["exit_code"], 0);
    let tail = check["output_tail"].as_str().unwrap();
    // Both streams are kept (FOO is empty: the shell drops the unquoted word).
    assert!(tail.contains("checked\n") && tail.contains("oops"), "{tail}");
    assert!(
        tail.contains("enforced: the proxy is the only way out"),
        "ran in the sandbox: {tail}"
    );

    // A new commit: FOO unset is an error naming it; the human table shows why.
    std::fs::write(repo.root().join("src/main.rs"), "fn main() { println!(); }\n").unwrap();
    git(repo, &["commit", "-q", "-am", "more"]);
    let (v, _) = repo.json_as("dev", &submit);
    let second = v["changeset"]["changeset_id"].as_str().unwrap().to_string();
    let mut cmd = repo.command(&["--agent-id", "ci", "verify", "run", "--once", "--executor", "local"]);
    let out = cmd.env_remove("FOO").output().unwrap();
    assert!(
        stdout(&out).contains("check on ") && stdout(&out).contains("error: missing environment variables: FOO"),
        "{}",
        stdout(&out)
    );
    let out = repo.run(&["verify", "status", &second]);
    assert!(stdout(&out).contains(": failed ("), "{}", stdout(&out));
    // The submitter's own worker does not verify its own change.
    std::fs::write(repo.root().join("src/main.rs"), "fn main() { println!(\"x\"); }\n").unwrap();
    git(repo, &["commit", "-q", "-am", "again"]);
    let (v, _) = repo.json_as("dev", &submit);
    let third = v["changeset"]["changeset_id"].as_str().unwrap().to_string();
    let out = repo.run_in(
        repo.root(),
        &["--agent-id", "dev", "verify", "run", "--once"],
        &[("FOO", "x")],
    );
    assert!(stdout(&out).contains("0 runs done"), "{}", stdout(&out));
    // The second changeset's inline run is left from before: the tree is no longer at
    // its commit, so this worker does not take it (it stays pending for one that is).
    let out = repo.run_in(
        repo.root(),
        &["--agent-id", "ci", "verify", "run", "--once"],
        &[("FOO", "bar")],
    );
    assert!(stdout(&out).contains("2 runs done"), "{}", stdout(&out));
    let (v, _) = repo.json_as("dev", &["verify", "status", &second]);
    assert_eq!(v["runs"][1]["status"], "pending", "{v}");
    // A change beside the commit: the run is an error, not a check of other code.
    std::fs::write(repo.root().join("src/stray.rs"), "\n").unwrap();
    std::fs::write(repo.root().join("src/main.rs"), "fn main() { println!(\"y\"); }\n").unwrap();
    git(repo, &["commit", "-q", "-m", "y", "src/main.rs"]);
    let (v, _) = repo.json_as("dev", &submit);
    let fourth = v["changeset"]["changeset_id"].as_str().unwrap().to_string();
    let out = repo.run_in(
        repo.root(),
        &["--agent-id", "ci", "verify", "run", "--once", "--executor", "local"],
        &[("FOO", "bar")],
    );
    assert!(
        stdout(&out).contains(&format!(
            "check on {fourth}: error: the working tree has changes beside commit"
        )),
        "{}",
        stdout(&out)
    );
    let (v, _) = repo.json_as("dev", &["verify", "status", &third]);
    assert!(
        v["runs"][0]["output_tail"].as_str().unwrap().contains("checked bar"),
        "{v}"
    );
}

fn git(repo: &Repo, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(repo.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

fn verification_through_the_cli(repo: &Repo) {
    // A file with one bad policy stores nothing.
    std::fs::write(
        repo.root().join("bad.yaml"),
        "policies:\n  - {name: lint, tier: 0, executor: inline, patterns: ['**/*.rs'], command: [cargo, clippy]}\n  - {name: oops, tier: 4, executor: inline, patterns: ['a'], command: [a]}\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("user", &["verify", "apply", "bad.yaml"]);
    assert_ne!(c, 0);
    assert_eq!(
        (v["error"].as_str(), v["field"].as_str()),
        (Some("invalid_argument"), Some("policies[1].executor")),
        "{v}"
    );
    let out = repo.run(&["verify", "policies"]);
    assert!(stdout(&out).contains("no verification policies"), "{}", stdout(&out));
    std::fs::write(
        repo.root().join("policies.yaml"),
        "lint: {tier: 0, executor: inline, patterns: ['**/*.rs'], command: [cargo, clippy]}\nsecurity: {tier: 4, executor: manual, patterns: ['src/auth/**']}\n",
    )
    .unwrap();
    let out = repo.run(&["verify", "apply", "policies.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("stored 2 verification policies: lint, security"),
        "{}",
        stdout(&out)
    );

    // The change from git: files, branch, commit.
    git(repo, &["init", "-q"]);
    git(repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    git(repo, &["checkout", "-q", "-b", "agent/dev/1"]);
    std::fs::create_dir_all(repo.root().join("src/auth")).unwrap();
    std::fs::write(repo.root().join("src/auth/login.rs"), "fn main() {}\n").unwrap();
    std::fs::write(repo.root().join("src/main.rs"), "fn main() {}\n").unwrap();
    git(repo, &["add", "src"]);
    git(repo, &["commit", "-q", "-m", "login"]);
    let head = git(repo, &["rev-parse", "HEAD"]);
    let submit = [
        "--agent-type",
        "claude_code",
        "verify",
        "submit",
        "--git",
        base.as_str(),
    ];
    let (v, c) = repo.json_as("dev", &submit);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["changeset"]["branch"], "agent/dev/1");
    assert_eq!(v["changeset"]["commit"].as_str(), Some(head.as_str()));
    assert_eq!(v["changeset"]["files"].as_array().unwrap().len(), 2, "{v}");
    let runs: Vec<(&str, &str)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        runs,
        [("lint", "skipped"), ("security", "awaiting_approval")],
        "trust 3"
    );
    let id = v["changeset"]["changeset_id"].as_str().unwrap().to_string();
    let review = v["runs"][1]["approval_id"].as_str().unwrap().to_string();
    let (again, _) = repo.json_as("dev", &submit);
    assert_eq!(
        (again["existing"].as_bool(), again["changeset"]["changeset_id"].as_str()),
        (Some(true), Some(id.as_str()))
    );

    // A person approves the review; the changeset passes.
    let out = repo.run(&["--agent-id", "lead", "approvals", "approve", &review]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("changeset {id}'s run of policy security follows it")),
        "{}",
        stdout(&out)
    );
    let out = repo.run(&["verify", "status", &id]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains(": passed ("), "{}", stdout(&out));
    assert!(stdout(&out).contains("approved by lead"), "{}", stdout(&out));
    let (v, c) = repo.json_as("dev", &["verify", "status", "cs_00000000000000000000000000000000"]);
    assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{v}");
    let out = repo.run(&["verify", "delete", "lint"]);
    assert!(
        stdout(&out).contains("verification policy lint deleted"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn remote_mode_refuses_database_commands_and_reports_an_unreachable_server() {
    let repo = Repo::remote();
    let init = repo.run(&["init"]);
    assert_eq!(code(&init), 2);
    assert!(stderr(&init).contains("remote mode"), "{}", stderr(&init));
    assert!(!repo.root().join(".coord/other.db").exists());
    let down = repo
        .command(&["--json", "lock", "list"])
        .env("COORDINATION_API_URL", "http://127.0.0.1:1")
        .output()
        .unwrap();
    assert_eq!(code(&down), 3);
    let v: Value = serde_json::from_slice(&down.stdout).unwrap();
    assert_eq!(v["error"], "database_unavailable");
    let no_key = repo
        .command(&["--json", "lock", "acquire", "a"])
        .env_remove("COORDINATION_API_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&no_key), 1);
    let v: Value = serde_json::from_slice(&no_key.stdout).unwrap();
    assert_eq!(v["error"], "unauthorized");
}

#[test]
fn remote_keys_bind_cloud_agents() {
    let repo = Repo::remote();
    let created = repo
        .command(&[
            "--json",
            "--agent-id",
            "cloud-1",
            "--agent-type",
            "codex_cloud",
            "keys",
            "create",
            "--expires-in",
            "2h",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&created), 0, "{}", stderr(&created));
    let v: Value = serde_json::from_slice(&created.stdout).unwrap();
    let key = v["api_key"].as_str().unwrap().to_string();
    // A cloud agent with only COORDINATION_API_URL/KEY (and AGENT_TYPE) acts as the key's identity.
    let as_cloud = |args: &[&str], extra: &[(&str, &str)]| {
        let mut c = repo.command(args);
        c.env("COORDINATION_API_KEY", &key);
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = as_cloud(
        &["--json", "lock", "acquire", "src/x.rs"],
        &[("AGENT_TYPE", "codex_cloud")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let locks = repo.json_as("observer", &["lock", "list"]).0;
    assert_eq!(locks["locks"][0]["locked_by"], "cloud-1");
    let spoof = as_cloud(&["--json", "--agent-id", "someone-else", "lock", "list"], &[]);
    assert_eq!(code(&spoof), 1);
    let v: Value = serde_json::from_slice(&spoof.stdout).unwrap();
    assert_eq!(v["error"], "forbidden");
    let listed = repo.json_as("admin", &["keys", "list"]).0;
    assert_eq!(listed["keys"][0]["agent_id"], "cloud-1");
    let key_id = listed["keys"][0]["key_id"].as_str().unwrap().to_string();
    assert_eq!(repo.json_as("admin", &["keys", "revoke", &key_id]).1, 0);
    let revoked = as_cloud(&["--json", "lock", "list"], &[]);
    assert_eq!(code(&revoked), 1, "a revoked key no longer authenticates");
}

/// `coord cloud env` issues a key for one task and prints what the cloud agent needs;
/// the agent's audit rows name the task.
#[test]
fn cloud_env_issues_a_task_key_and_the_environment() {
    let repo = Repo::remote();
    // Without --agent-id: the key's identity is `<type>-<task or session>`.
    let json = |args: &[&str]| -> (Value, i32) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = repo.run(&all);
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        (v, code(&out))
    };
    let (env, rc) = json(&[
        "--agent-type",
        "codex_cloud",
        "cloud",
        "env",
        "--task",
        "T-1",
        "--ttl",
        "2h",
    ]);
    assert_eq!(rc, 0, "{env}");
    assert_eq!(env["env"]["AGENT_TYPE"], "codex_cloud");
    assert_eq!(env["agent_id"], "codex_cloud-T-1");
    assert_eq!(env["task_id"], "T-1");
    assert_eq!(env["profile"], "codex-cloud-worker");
    assert_eq!(env["allowlist"][0], "127.0.0.1", "{env}");
    let key = env["env"]["COORDINATION_API_KEY"].as_str().unwrap().to_string();
    let out = repo
        .command(&["--json", "lock", "acquire", "src/y.rs"])
        .env("COORDINATION_API_KEY", &key)
        .env("AGENT_TYPE", "codex_cloud")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (audit, _) = repo.json_as(
        "admin",
        &["audit", "--agent", "codex_cloud-T-1", "--operation", "acquire_lock"],
    );
    assert_eq!(audit["entries"][0]["origin"]["task_id"], "T-1", "{audit}");
    // For people: exports to paste, and the allowlist.
    let human = repo.run(&["--agent-type", "claude_code_web", "cloud", "env", "--session", "S-9"]);
    assert_eq!(code(&human), 0, "{}", stderr(&human));
    let text = stdout(&human);
    assert!(text.contains("export COORDINATION_API_KEY=coord_"), "{text}");
    assert!(text.contains("export AGENT_TYPE=claude_code_web"), "{text}");
    assert!(text.contains("profile claude-code-web-reviewer"), "{text}");
    // Issued keys are short-lived and need a type and one session or task.
    let long = repo.run(&TOO_LONG_KEY);
    assert_eq!(code(&long), 2, "{}", stderr(&long));
    assert!(stderr(&long).contains("at most 24h"), "{}", stderr(&long));
    let untyped = repo.run(&["keys", "issue", "--task", "T"]);
    assert_eq!(code(&untyped), 2, "{}", stderr(&untyped));
    // The refused key left no profile assignment behind.
    let (explained, _) = repo.json_as(
        "admin",
        &["call", "explain_profile", r#"{"target_agent_id": "codex_cloud-T"}"#],
    );
    assert_ne!(explained["profile"]["name"], "worker-write", "{explained}");
    let neither = repo.run(&["--agent-type", "codex_cloud", "keys", "issue"]);
    assert_eq!(code(&neither), 2, "{}", stderr(&neither));
    // A blank session names no work: never a long-lived key bound to `codex_cloud-`.
    let blank = repo.run(&[
        "--agent-type",
        "codex_cloud",
        "keys",
        "issue",
        "--session",
        " ",
        "--ttl",
        "300d",
    ]);
    assert_eq!(code(&blank), 2, "{}", stderr(&blank));
    assert!(
        stderr(&blank).contains("name the session or task"),
        "{}",
        stderr(&blank)
    );
    let (issued, rc) = json(&[
        "--agent-type",
        "claude_code_web",
        "keys",
        "issue",
        "--session",
        "S-1",
        "--profile",
        "claude-code-web-implementer",
    ]);
    assert_eq!(
        (rc, issued["profile"].as_str()),
        (0, Some("claude-code-web-implementer")),
        "{issued}"
    );
    // The operator's own identity in the environment never becomes the key's.
    let out = repo
        .command(&[
            "--json",
            "--agent-type",
            "codex_cloud",
            "keys",
            "issue",
            "--task",
            "T-2",
        ])
        .env("COORD_AGENT_ID", "alice")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agent_id"], "codex_cloud-T-2");
    let out = repo
        .command(&["--json", "keys", "issue", "--task", "T-3"])
        .env("COORD_AGENT_TYPE", "codex_cloud")
        .output()
        .unwrap();
    assert_eq!(
        code(&out),
        2,
        "a type only from the environment is not the agent's: {}",
        stdout(&out)
    );
}

/// The port allocator needs no database: `coord port` neither opens nor creates one, and
/// works while the configured database is unreachable.
#[test]
fn ports_need_no_database() {
    let repo = Repo::new();
    let state = repo.root().join("ports-state.json");
    let state = state.to_str().unwrap();
    let env = [
        ("COORD_PORTS_STATE", state),
        (
            "COORD_DATABASE_URL",
            "postgres://nobody@127.0.0.1:1/nothing?connect_timeout=1",
        ),
    ];
    let out = repo.run_in(repo.root(), &["--json", "ports", "allocate", "wt-1"], &env);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["allocation"]["db_port"], 10000);
    let out = repo.run_in(repo.root(), &["ports", "release", "wt-1"], &env[..1]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !repo.root().join(".coord").exists(),
        "no database was created for ports"
    );
}

#[test]
fn network_commands_check_change_and_log() {
    let repo = Repo::new();
    // The person at the terminal (local-operator): full_access, but never a reserved address.
    let out = repo.run(&["network", "check", "https://Docs.Python.org./3/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("allowed: docs.python.org:443 (policy full_access"),
        "{}",
        stdout(&out)
    );
    let (v, c) = repo.json_as("user", &["network", "check", "http://2130706433:5432/"]);
    assert_eq!(c, 1);
    assert_eq!(
        (v["error"].as_str(), v["domain"].as_str()),
        (Some("domain_blocked"), Some("127.0.0.1"))
    );
    let (v, c) = repo.json_as("user", &["network", "check", "allowed.com@evil.com"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")));

    std::fs::write(
        repo.root().join("team.yaml"),
        "name: team\ndefault: deny\nallow: [\"@package_managers\"]\n",
    )
    .unwrap();
    let out = repo.run(&["network", "set", "team.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::write(
        repo.root().join("bad.yaml"),
        "name: team\ndefault: deny\nallow: [\"*\"]\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("user", &["network", "set", "bad.yaml"]);
    assert_eq!((c, v["field"].as_str()), (2, Some("allow[0]")), "{v}");
    let (v, _) = repo.json_as("user", &["network", "policies"]);
    let team = v["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "team")
        .unwrap();
    assert_eq!(team["allow"], serde_json::json!(["@package_managers"]));
    // A stranger (no profile) is refused; an agent reading another's log is refused.
    let (_, c) = repo.json_as("stranger", &["--agent-type", "nobody", "network", "check", "pypi.org"]);
    assert_eq!(c, 1);
    let (v, c) = repo.json_as(
        "stranger",
        &["--agent-type", "nobody", "network", "log", "--agent", "user"],
    );
    assert_eq!((c, v["error"].as_str()), (1, Some("forbidden")), "{v}");
    let (v, c) = repo.json_as("user", &["network", "log", "--refused"]);
    assert_eq!(c, 0);
    let hosts: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["pypi.org", "127.0.0.1"], "newest first, refusals only");
    let out = repo.run(&["network", "reset", "team"]);
    assert!(stdout(&out).contains("network policy team removed"), "{}", stdout(&out));

    // A profile naming a policy that does not exist is applied, with a warning.
    std::fs::write(
        repo.root().join("p.yaml"),
        "profiles:\n  - {name: lost, agent_type: t, trust_level: 1, network_policy: no_such_policy}\n  - {name: fine, agent_type: t, trust_level: 1, network_policy: deny_all}\n",
    )
    .unwrap();
    let out = repo.run(&["profile", "apply", "p.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("profile lost names network policy no_such_policy, which does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("profile fine"), "{}", stderr(&out));
}

#[test]
fn agent_definitions_are_listed_checked_and_turned_into_flags() {
    let repo = Repo::new();
    let dir = repo.root().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash\n---\nYou review.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("helper.md"),
        "---\nname: helper\ndescription: x\ntools: Read, Frobnicate\npermissionMode: bypassPermissions\n---\n",
    )
    .unwrap();
    // The list shows both; the invalid one with every error, and the exit code says so.
    let (v, c) = repo.json_as("user", &["agent", "list"]);
    assert_eq!(c, 2, "{v}");
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["definition"]["profile"], "read_only");
    let fields: Vec<&str> = agents[1]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["permissionMode", "tools[1]"]);
    let (v, c) = repo.json_as("user", &["agent", "show", "helper"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(2), "{v}");
    let (v, c) = repo.json_as("user", &["agent", "show", "nobody"]);
    assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{v}");
    // The exact plan: tools restricted, nothing but coord's server, the task after `--`.
    let (v, c) = repo.json_as("user", &["agent", "flags", "code-reviewer", "--task=--review"]);
    assert_eq!(c, 0, "{v}");
    let argv: Vec<&str> = v["plan"]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let after = |flag: &str| argv[argv.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(after("--tools"), "Read,Grep,Glob,Bash");
    assert_eq!(after("--permission-mode"), "dontAsk");
    assert_eq!(argv[argv.len() - 2..], ["--", "--review"]);
    for runtime in ["codex", "aider"] {
        let (v, c) = repo.json_as("user", &["agent", "flags", "code-reviewer", "--runtime", runtime]);
        assert_eq!((c, v["plan"]["runtime"].as_str()), (0, Some(runtime)), "{v}");
    }
    let (v, c) = repo.json_as("user", &["agent", "flags", "code-reviewer", "--runtime", "vim"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    let out = repo.run(&["agent", "flags", "code-reviewer"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("--strict-mcp-config"), "{}", stdout(&out));
    // A launch is refused before anything starts or is registered: an unknown agent, an
    // empty task, no validation choice, a program that is not there, a zero deadline.
    let (v, c) = repo.json_as("user", &["agent", "run", "nobody", "x"]);
    assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{v}");
    let (v, c) = repo.json_as("user", &["agent", "run", "code-reviewer", " "]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    let (v, c) = repo.json_as(
        "user",
        &["agent", "run", "code-reviewer", "x", "--program", "/nope/claude"],
    );
    assert_eq!((c, v["field"].as_str()), (2, Some("validator")), "{v}");
    let refused: &[&[&str]] = &[
        &["--no-validation", "--program", "/nope/claude"],
        &["--no-validation", "--program", "/"],
        &["--no-validation", "--program", "/bin/true", "--timeout", "0s"],
        // No readable version: not one coord's plans were verified on.
        &["--no-validation", "--program", "/bin/true"],
    ];
    for flags in refused {
        let mut all = vec!["agent", "run", "code-reviewer", "x"];
        all.extend_from_slice(flags);
        let (v, c) = repo.json_as("user", &all);
        assert_eq!(
            (c, v["error"].as_str()),
            (2, Some("invalid_argument")),
            "{flags:?}: {v}"
        );
    }
    // The spawn operations answer clear errors too (real launches: agents_e2e).
    let (v, c) = repo.json_as("user", &["agent", "spawn", "nobody", "--task", "x"]);
    assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{v}");
    let (v, c) = repo.json_as(
        "user",
        &["agent", "spawn", "code-reviewer", "--task", "x", "--runtime", "aider"],
    );
    assert_eq!(
        (c, v["field"].as_str()),
        (2, Some("runtime")),
        "no such runtime here: {v}"
    );
    let (v, c) = repo.json_as("user", &["agent", "spawn", "--profile", "root", "--task", "x"]);
    assert_eq!((c, v["field"].as_str()), (2, Some("profile")), "{v}");
    for cmd in ["status", "output", "stop"] {
        let (v, c) = repo.json_as("user", &["agent", cmd, "nobody-000000000000"]);
        assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{cmd}: {v}");
    }
    let (v, _) = repo.json_as("user", &["work", "list"]);
    assert_eq!(v["tasks"].as_array().map(Vec::len), Some(0), "no task registered: {v}");
    let (v, _) = repo.json_as("user", &["keys", "list"]);
    assert_eq!(v["keys"].as_array().map(Vec::len), Some(0), "nothing registered: {v}");
    // Two files naming one agent: both invalid in the list, and refused by name.
    std::fs::write(
        dir.join("zz.md"),
        "---\nname: code-reviewer\ndescription: A shadow\ntools: Read\n---\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("user", &["agent", "list"]);
    assert_eq!(c, 2);
    let invalid = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["valid"] == false)
        .count();
    assert_eq!(invalid, 3, "{v}");
    let (v, c) = repo.json_as("user", &["agent", "show", "code-reviewer"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
}

/// Spec 002's registry: agents.json beside the .md files, `coord agent list|show`
/// (its `/agents`), `coord run --agent` (its `--agent`), field errors with their path.
#[test]
fn the_agent_registry_reads_agents_json_and_runs_an_agent_by_id() {
    let repo = Repo::new();
    let dir = repo.root().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("lead.md"),
        "---\nname: lead\ndescription: Leads\ntools: Read, Grep\ndelegatesTo: [researcher]\n---\nYou lead.\n",
    )
    .unwrap();
    std::fs::write(
        repo.root().join("agents.json"),
        r#"[
  {"id": "researcher", "name": "Researcher", "description": "Reads and summarises", "tools": ["Read", "Grep"],
   "system_prompt": "You research.", "parent_id": "lead", "runtime": "codex"},
  {"id": "coder", "name": "Senior Engineer", "description": "Expert Python/JS developer.", "tools": ["all"]},
  {"id": "scout", "description": "x", "tools": ["google_search"], "delegates_to": ["ghost"]}
]"#,
    )
    .unwrap();
    let (v, c) = repo.json_as("user", &["agents", "list"]);
    assert_eq!(c, 2, "one invalid entry: {v}");
    let rows = v["agents"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{v}");
    assert_eq!(rows[1]["at"], "agents[0]");
    assert_eq!(rows[1]["definition"]["prompt"], "You research.");
    assert_eq!(rows[2]["definition"]["profile"], "write", "coder writes (spec 003)");
    let fields: Vec<&str> = rows[3]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["agents[2].tools[0]"], "{v}");
    let (v, c) = repo.json_as("user", &["agents", "show", "lead"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["definition"]["children"], serde_json::json!(["researcher"]));
    assert_eq!(v["definition"]["delegates_to"], serde_json::json!(["researcher"]));
    let (v, c) = repo.json_as("user", &["agents", "show", "scout"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    assert_eq!(v["file"], "agents.json agents[2]", "{v}");
    let out = repo.run(&["agents", "list"]);
    assert!(
        stdout(&out).contains("Read,Grep,Glob,Edit,Write,NotebookEdit,Bash"),
        "{}",
        stdout(&out)
    );
    // `coord run --agent` is `coord agent run`: the same checks before anything starts.
    let (v, c) = repo.json_as("user", &["run", "--agent", "nobody", "x"]);
    assert_eq!((c, v["error"].as_str()), (1, Some("not_found")), "{v}");
    let (v, c) = repo.json_as(
        "user",
        &[
            "run",
            "--agent",
            "researcher",
            "x",
            "--no-validation",
            "--program",
            "/nope/codex",
        ],
    );
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_argument")), "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("/nope/codex"),
        "the definition's runtime: {v}"
    );
    let (v, _) = repo.json_as("user", &["work", "list"]);
    assert_eq!(v["tasks"].as_array().map(Vec::len), Some(0), "nothing registered: {v}");
}

/// `coord workflow` and `coord team` from the shell: files checked with every error's
/// path, a workflow created and moved on by completions, a team file against the
/// registry (bringing a team up spawns real agents: agents_e2e).
#[test]
fn workflows_and_team_files_from_the_shell() {
    let repo = Repo::new();
    std::fs::write(
        repo.root().join("fix.yaml"),
        "name: fix-and-review\nnodes:\n  - {id: test, task: Run the tests, task_type: test}\n  - {id: fix, task: Fix them, task_type: fix}\n  - {id: review, task: Review, task_type: review, join: any}\nedges:\n  - {from: test, to: fix, when: failure}\n  - {from: test, to: review, if: 'result.status == \"passed\"'}\n  - {from: fix, to: review}\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("lead", &["workflow", "validate", "fix.yaml"]);
    assert_eq!(
        (c, &v["order"]),
        (0, &serde_json::json!(["test", "fix", "review"])),
        "{v}"
    );
    std::fs::write(
        repo.root().join("bad.yaml"),
        "name: bad\nnodes: [{id: a, task: x}, {id: b, task: y}]\nedges: [{from: a, to: b, if: 'reslt.ok'}, {from: a, to: c}]\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("lead", &["workflow", "validate", "bad.yaml"]);
    assert_eq!(c, 2, "{v}");
    let fields: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["edges[0].if", "edges[1].to"], "{v}");
    let (v, c) = repo.json_as("lead", &["workflow", "create", "bad.yaml"]);
    assert_eq!(
        (c, v["field"].as_str()),
        (2, Some("edges[0].if")),
        "refused by the operation too: {v}"
    );
    let (v, c) = repo.json_as("lead", &["workflow", "create", "fix.yaml"]);
    assert_eq!(c, 0, "{v}");
    let id = v["workflow_id"].as_str().unwrap().to_string();
    let (v, _) = repo.json_as("tester", &["work", "claim", "--type", "test"]);
    let task = v["task_id"].as_str().unwrap().to_string();
    let (v, c) = repo.json_as(
        "tester",
        &["work", "complete", &task, "--failed", "--error", "2 tests failed"],
    );
    assert_eq!(c, 0, "{v}");
    let (v, _) = repo.json_as("lead", &["workflow", "status", &id]);
    let status: Vec<&str> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["failed", "running", "waiting"], "{v}");
    let out = repo.run(&["workflow", "status", &id]);
    assert!(
        stdout(&out).contains("fix-and-review") && stdout(&out).contains("waiting"),
        "{}",
        stdout(&out)
    );
    let (v, _) = repo.json_as("lead", &["workflow", "list"]);
    assert_eq!(v["workflows"][0]["workflow_id"], id.as_str());
    let (v, c) = repo.json_as("lead", &["workflow", "status", "nope"]);
    assert_eq!((c, v["field"].as_str()), (2, Some("workflow_id")), "{v}");

    let dir = repo.root().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: Reviews\ntools: Read, Grep\n---\n",
    )
    .unwrap();
    std::fs::write(
        repo.root().join("teams.yaml"),
        "name: backend\nagents:\n  - {name: reviewer, role: reviewer, capabilities: [review], definition: code-reviewer}\n  - {name: coder, capabilities: [coding, deploy], profile: write}\n  - {name: ghost, role: x, definition: nobody}\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("lead", &["team", "validate", "teams.yaml"]);
    assert_eq!(c, 2, "{v}");
    let fields: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["agents[1].role", "agents[1].capabilities[1]", "agents[2].definition"],
        "{v}"
    );
    let out = repo.run(&["team", "validate", "teams.yaml"]);
    assert!(stderr(&out).contains("agents[1].role: missing"), "{}", stderr(&out));
    std::fs::write(
        repo.root().join("teams.yaml"),
        "name: backend\nagents:\n  - {name: reviewer, role: reviewer, capabilities: [review], definition: code-reviewer}\n",
    )
    .unwrap();
    let (v, c) = repo.json_as("lead", &["team", "validate", "teams.yaml"]);
    assert_eq!(
        (c, v["team"]["members"][0]["definition"].as_str()),
        (0, Some("code-reviewer")),
        "{v}"
    );
    let (v, c) = repo.json_as("lead", &["team", "up", "teams.yaml"]);
    assert_eq!(
        (c, v["members"][0]["state"].as_str()),
        (0, Some("defined")),
        "nothing to run: {v}"
    );
    let (v, c) = repo.json_as("lead", &["team", "status", "teams.yaml"]);
    assert_eq!((c, v["members"][0]["status"].as_str()), (0, Some("not running")), "{v}");
}

#[test]
fn github_lock_labels_fit_githubs_limit() {
    let repo = Repo::new();
    let out = repo.run(&["github", "label", "./src//auth/login.ts"]);
    assert_eq!((code(&out), stdout(&out).trim()), (0, "locked:src/auth/login.ts"));
    let long = "src/services/authentication/oauth/callback_handler.ts";
    let (v, c) = repo.json_as("user", &["github", "label", long]);
    assert_eq!(c, 0);
    // What `printf %s "$path" | sha256sum | cut -c1-8` prints.
    assert_eq!(v["label"], "locked:oauth/callback_handler.ts#af80f26f", "{v}");
    assert_eq!(v["hashed"], true);
    let abs = repo.root().join("docs/a.md");
    let out = repo.run(&["github", "label", abs.to_str().unwrap()]);
    assert_eq!(stdout(&out).trim(), "locked:docs/a.md");
    let (v, c) = repo.json_as("user", &["github", "label", "../outside.rs"]);
    assert_eq!((c, v["error"].as_str()), (2, Some("invalid_path")), "{v}");
}

/// A repository on branch `feature` with the policies applied and one commit adding
/// `src/main.rs`, submitted by `dev` (`verify submit --git`); answers the changeset id.
fn submitted_on_branch(repo: &Repo, policies: &str) -> String {
    git(repo, &["init", "-q", "-b", "feature"]);
    git(repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.root().join("policies.yaml"), policies).unwrap();
    let out = repo.run(&["verify", "apply", "policies.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::create_dir_all(repo.root().join("src")).unwrap();
    std::fs::write(repo.root().join("src/main.rs"), "fn main() {}\n").unwrap();
    git(repo, &["add", "src"]);
    git(repo, &["commit", "-q", "-m", "work"]);
    let (v, c) = repo.json_as("dev", &["verify", "submit", "--git", base.as_str()]);
    assert_eq!(c, 0, "{v}");
    v["changeset"]["changeset_id"].as_str().unwrap().to_string()
}

/// Serves `app` on a loopback port from its own thread; answers its base URL.
fn serve_on_loopback(app: axum::Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

/// What the fake GitHub was sent.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, String, Value)>>>;

/// A fake GitHub (a real HTTP server on loopback, recording what it is sent): workflow
/// `ci` dispatches answer the run's id; workflow `flaky` dispatches answer 502 but start
/// a run anyway (listed with its title); run 501 is in progress once, then succeeds; run
/// 502 fails. Answers its base URL and what it was sent (method, path, body).
fn fake_github() -> (String, Seen) {
    use axum::extract::{Request, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    #[derive(Clone, Default)]
    struct Fake {
        seen: Seen,
        listed: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    }
    async fn handle(State(f): State<Fake>, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let path = parts.uri.path().to_string();
        let polls = {
            let mut seen = f.seen.lock().unwrap();
            seen.push((parts.method.to_string(), path.clone(), body.clone()));
            seen.iter().filter(|(_, p, _)| p == &path).count()
        };
        let json = |code: StatusCode, v: Value| (code, axum::Json(v)).into_response();
        if path.ends_with("/dispatches") {
            let id = body["inputs"]["changeset_id"].as_str().unwrap_or("").to_string();
            return match body["inputs"]["policy"].as_str() {
                Some("ci") => json(
                    StatusCode::OK,
                    serde_json::json!({"workflow_run_id": 501,
                        "run_url": "http://fake/repos/octocat/app/actions/runs/501",
                        "html_url": "https://github.com/octocat/app/actions/runs/501"}),
                ),
                _ => {
                    f.listed.lock().unwrap().push(serde_json::json!({"id": 502,
                        "display_title": format!("coord {id} flaky"), "status": "queued",
                        "html_url": "https://github.com/octocat/app/actions/runs/502"}));
                    (StatusCode::BAD_GATEWAY, "upstream timed out").into_response()
                }
            };
        }
        if path.ends_with("/runs") {
            let runs = f.listed.lock().unwrap().clone();
            return json(
                StatusCode::OK,
                serde_json::json!({"total_count": runs.len(), "workflow_runs": runs}),
            );
        }
        if path.ends_with("/runs/501") {
            let (status, conclusion) = if polls == 1 {
                ("in_progress", Value::Null)
            } else {
                ("completed", "success".into())
            };
            return json(
                StatusCode::OK,
                serde_json::json!({"id": 501, "status": status, "conclusion": conclusion,
                "html_url": "https://github.com/octocat/app/actions/runs/501"}),
            );
        }
        if path.ends_with("/runs/502") {
            return json(
                StatusCode::OK,
                serde_json::json!({"id": 502, "status": "completed", "conclusion": "failure",
                "html_url": "https://github.com/octocat/app/actions/runs/502"}),
            );
        }
        json(StatusCode::NOT_FOUND, serde_json::json!({"message": "Not Found"}))
    }
    let fake = Fake::default();
    let seen = fake.seen.clone();
    let app = axum::Router::new().fallback(handle).with_state(fake);
    (serve_on_loopback(app), seen)
}

/// `coord verify run --executor github_actions`: each policy's workflow is dispatched
/// once on the changeset's branch (a dispatch without a clear answer is found among
/// the workflow's runs, never dispatched again), followed to its conclusion, and the
/// run's page recorded.
fn github_actions_workers_through_the_cli(repo: &Repo) {
    let id = submitted_on_branch(
        repo,
        "ci: {tier: 2, executor: github_actions, patterns: ['src/**'], workflow: verify.yml}\nflaky: {tier: 2, executor: github_actions, patterns: ['src/**'], workflow: verify.yml}\n",
    );

    let worker = [
        "--agent-id",
        "ci",
        "verify",
        "run",
        "--once",
        "--executor",
        "github_actions",
    ];
    // No token: said before anything is claimed.
    let mut cmd = repo.command(&worker);
    let out = cmd
        .env_remove("COORD_GITHUB_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .output()
        .unwrap();
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("COORD_GITHUB_TOKEN"), "{}", stderr(&out));

    let (api, seen) = fake_github();
    let mut args = worker.to_vec();
    args.extend(["--repository", "octocat/app", "--actions-poll", "0.01"]);
    let out = repo.run_in(
        repo.root(),
        &args,
        &[("COORD_GITHUB_TOKEN", "t0ken"), ("COORD_GITHUB_API_URL", api.as_str())],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let (v, _) = repo.json_as("dev", &["verify", "status", &id]);
    let runs: Vec<(&str, &str, &str)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["policy"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
                r["external_url"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("ci", "passed", "https://github.com/octocat/app/actions/runs/501"),
            ("flaky", "failed", "https://github.com/octocat/app/actions/runs/502")
        ],
        "{v}"
    );
    let seen = seen.lock().unwrap().clone();
    let dispatches: Vec<&Value> = seen
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/repos/octocat/app/actions/workflows/verify.yml/dispatches")
        .map(|(_, _, b)| b)
        .collect();
    assert_eq!(dispatches.len(), 2, "one dispatch per policy, none repeated: {seen:?}");
    assert_eq!(dispatches[0]["ref"], "feature");
    assert_eq!(dispatches[0]["inputs"]["changeset_id"], id.as_str());
    assert_eq!(dispatches[0]["return_run_details"], true);
    assert!(
        seen.iter().filter(|(_, p, _)| p.ends_with("/runs/501")).count() >= 2,
        "followed by polling"
    );
}

/// A fake E2B (control plane and envd on one loopback server, recording what it is
/// sent): sandboxes are created for key `e2b-key`; a command with `fail` in it writes
/// to stderr and exits 1, `hang` never answers, anything else prints and exits 0.
fn fake_e2b() -> (String, Seen) {
    use axum::extract::{Request, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    fn frame(flags: u8, v: Value) -> Vec<u8> {
        let body = serde_json::to_vec(&v).unwrap();
        let mut out = vec![flags];
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend(body);
        out
    }
    async fn handle(State(seen): State<Seen>, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
        let path = parts.uri.path().to_string();
        let header = |n: &str| {
            parts
                .headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        if path == "/process.Process/Start" {
            // One Connect envelope: flags, length, the JSON request.
            let request: Value = serde_json::from_slice(bytes.get(5..).unwrap_or_default()).unwrap_or_default();
            let mut recorded = request.clone();
            recorded["sandbox"] = header("e2b-sandbox-id").into();
            recorded["token"] = header("x-access-token").into();
            seen.lock().unwrap().push(("POST".into(), path, recorded));
            let args = request["process"].to_string();
            if args.contains("hang") {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            let (data, code) = if args.contains("fail") {
                (serde_json::json!({"stderr": "Ym9vbQo="}), 1) // "boom\n"
            } else {
                (serde_json::json!({"stdout": "Y2hlY2tlZAo="}), 0) // "checked\n"
            };
            let mut out = frame(0, serde_json::json!({"event": {"start": {"pid": 7}}}));
            out.extend(frame(0, serde_json::json!({"event": {"data": data}})));
            out.extend(frame(
                0,
                serde_json::json!({"event": {"end": {"exitCode": code, "exited": true}}}),
            ));
            out.extend(frame(2, serde_json::json!({})));
            return (StatusCode::OK, [("content-type", "application/connect+json")], out).into_response();
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let mut recorded = body;
        recorded["key"] = header("x-api-key").into();
        let n = {
            let mut s = seen.lock().unwrap();
            s.push((parts.method.to_string(), path.clone(), recorded));
            s.len()
        };
        if parts.method == "POST" && path == "/sandboxes" {
            if header("x-api-key") != "e2b-key" {
                return (StatusCode::UNAUTHORIZED, "bad key").into_response();
            }
            return (
                StatusCode::CREATED,
                axum::Json(
                    serde_json::json!({"sandboxID": format!("sbx{n}"), "envdAccessToken": "envd-token",
                    "domain": "e2b.test", "templateID": "rust"}),
                ),
            )
                .into_response();
        }
        StatusCode::NO_CONTENT.into_response()
    }
    let seen = Seen::default();
    let state = seen.clone();
    let app = axum::Router::new().fallback(handle).with_state(state);
    (serve_on_loopback(app), seen)
}

/// `coord verify run --executor e2b`: each run's command runs in a new sandbox of the
/// policy's template, with the required variables and the changeset in its environment;
/// exit code and output are recorded, a run past its timeout is timed out, and every
/// sandbox is deleted.
fn e2b_workers_through_the_cli(repo: &Repo) {
    let id = submitted_on_branch(
        repo,
        "e2e: {tier: 3, executor: e2b, patterns: ['src/**'], template: rust, command: [make, e2e], required_env: [E2E_TOKEN]}\n\
         e2e-fail: {tier: 3, executor: e2b, patterns: ['src/**'], template: rust, command: [sh, -c, fail]}\n\
         e2e-slow: {tier: 3, executor: e2b, patterns: ['src/**'], template: rust, command: [hang], timeout_seconds: 1}\n",
    );

    let worker = ["--agent-id", "ci", "verify", "run", "--once", "--executor", "e2b"];
    let mut cmd = repo.command(&worker);
    let out = cmd.env_remove("E2B_API_KEY").output().unwrap();
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("E2B_API_KEY"), "{}", stderr(&out));

    let (url, seen) = fake_e2b();
    let out = repo.run_in(
        repo.root(),
        &worker,
        &[
            ("E2B_API_KEY", "e2b-key"),
            ("E2B_API_URL", url.as_str()),
            ("E2B_ENVD_URL", url.as_str()),
            ("E2E_TOKEN", "s3cret"),
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let (v, _) = repo.json_as("dev", &["verify", "status", &id]);
    let runs: Vec<(&str, &str, Value, &str)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["policy"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
                r["exit_code"].clone(),
                r["output_tail"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("e2e", "passed", Value::from(0), "checked\n"),
            ("e2e-fail", "failed", Value::from(1), "boom\n"),
            ("e2e-slow", "timed_out", Value::Null, "")
        ],
        "{v}"
    );
    let seen = seen.lock().unwrap().clone();
    let created: Vec<&Value> = seen
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/sandboxes")
        .map(|(_, _, b)| b)
        .collect();
    assert_eq!(created.len(), 3, "{seen:?}");
    assert_eq!(created[0]["templateID"], "rust");
    assert_eq!(created[0]["envVars"]["E2E_TOKEN"], "s3cret");
    assert_eq!(created[0]["envVars"]["COORD_CHANGESET_ID"], id.as_str());
    assert_eq!(created[0]["allow_internet_access"], false);
    let started: Vec<&Value> = seen
        .iter()
        .filter(|(_, p, _)| p == "/process.Process/Start")
        .map(|(_, _, b)| b)
        .collect();
    assert_eq!(started[0]["process"]["cmd"], "make");
    assert_eq!(started[0]["token"], "envd-token");
    let deleted = seen
        .iter()
        .filter(|(m, p, _)| m == "DELETE" && p.starts_with("/sandboxes/"))
        .count();
    assert_eq!(deleted, 3, "every sandbox deleted, the timed-out one too: {seen:?}");
}

/// `coord github outbox` and `coord github send`: what waits for GitHub, sent with the
/// token, and what GitHub answered when it refused.
#[test]
fn the_github_outbox_through_the_cli() {
    let repo = Repo::new();
    // codex holds the file; an issue labels it for claude: coord's lock wins and the
    // issue is to be told.
    assert_eq!(
        code(&repo.run(&["--agent-id", "codex", "lock", "acquire", "src/a.rs"])),
        0
    );
    let delivery = serde_json::json!({
        "delivery_id": "d-1", "event": "issues",
        "payload": {"action": "labeled",
            "issue": {"number": 3, "state": "open", "updated_at": "2026-11-26T10:00:00Z",
                      "labels": [{"name": "agent:claude"}, {"name": "locked:src/a.rs"}]},
            "repository": {"id": 7, "full_name": "octocat/app"}}
    });
    let (v, c) = repo.json_as(
        "github-webhook",
        &["call", "receive_github_delivery", &delivery.to_string()],
    );
    assert_eq!(c, 0, "{v}");
    let (v, c) = repo.json_as("ops", &["github", "outbox"]);
    assert_eq!(c, 0, "{v}");
    let requests = v["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1, "{v}");
    assert_eq!(requests[0]["path"], "/repos/octocat/app/issues/3/comments");
    // The fake GitHub knows no such issue: the send fails, the error is kept.
    let (api, _) = fake_github();
    let out = repo.run_in(
        repo.root(),
        &["github", "send"],
        &[("COORD_GITHUB_TOKEN", "t0ken"), ("COORD_GITHUB_API_URL", api.as_str())],
    );
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("sent 0, failed 1"), "{}", stdout(&out));
    let out = repo.run(&["github", "outbox"]);
    let table = stdout(&out);
    assert!(
        table.contains("POST /repos/octocat/app/issues/3/comments") && table.contains("404 Not Found"),
        "{table}"
    );
}

/// Completions from the grammar, loaded into a real bash: typing `coord lo<TAB>` offers
/// `lock`, and `coord lock <TAB>` its subcommands. zsh's and fish's scripts name coord's
/// commands too; the man page documents every command and its flags.
#[test]
fn completions_and_the_man_page_come_from_the_grammar() {
    let r = Repo::new();
    let script = r.command(&["completions", "bash"]).output().unwrap();
    assert!(script.status.success(), "{script:?}");
    let path = r.root().join("coord.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let complete = |words: &str| {
        let line = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _coord coord \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        );
        let out = Command::new("bash").args(["--norc", "-c", &line]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let offered = complete("coord lo");
    assert!(offered.lines().any(|w| w == "lock"), "{offered}");
    let offered = complete("coord lock ''");
    for sub in ["acquire", "release", "list"] {
        assert!(offered.lines().any(|w| w == sub), "coord lock {sub}: {offered}");
    }
    for shell in ["zsh", "fish"] {
        let out = r.command(&["completions", shell]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success() && text.contains("coord") && text.contains("acquire"),
            "{shell}: {text}"
        );
    }
    let bad = r.command(&["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");

    let man = r.command(&["man"]).output().unwrap();
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(
        man.status.success() && page.starts_with(".ie"),
        "{}",
        &page[..page.len().min(300)]
    );
    for needle in [
        ".TH coord 1",
        ".TH coord-lock 1",
        ".TH coord-lock-acquire 1",
        "\\-\\-json",
        "\\-\\-ttl",
    ] {
        assert!(page.contains(needle), "the man page has {needle}");
    }
}

/// The configuration files: the repository's `.coord/config.toml` and the user's reach
/// coord as their environment variables would, with a flag over the environment over the
/// repository's file over the user's; `coord config show` says where each came from; a
/// file coord cannot take is refused (exit 2), also for a hook, which then fails closed.
#[test]
fn configuration_files_are_read_in_their_order_and_refused_when_wrong() {
    let r = Repo::new();
    let user = r.root().join(".config/coord");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(r.root().join(".coord")).unwrap();
    let elsewhere = r.root().join("elsewhere.db");
    std::fs::write(r.root().join(".coord/config.toml"), "team = \"repo-team\"\n").unwrap();
    std::fs::write(
        user.join("config.toml"),
        format!(
            "db = {:?}\nteam = \"user-team\"\nlog = \"warn\"\nfile-size-limit = 4096\n",
            elsewhere.display().to_string()
        ),
    )
    .unwrap();
    let (shown, code) = r.json_as("a", &["config", "show"]);
    assert_eq!(code, 0, "{shown}");
    let setting = |v: &Value, key: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .cloned()
    };
    let team = setting(&shown, "team").unwrap();
    assert_eq!(
        (team["value"].as_str(), team["source"].as_str()),
        (Some("repo-team"), Some("file"))
    );
    assert!(team["file"].as_str().unwrap().ends_with(".coord/config.toml"), "{team}");
    assert_eq!(setting(&shown, "log").unwrap()["value"], "warn");
    // The user's file chose the database: coord uses it.
    let (locked, code) = r.json_as("a", &["lock", "acquire", "src/a.rs"]);
    assert_eq!(code, 0, "{locked}");
    assert!(
        elsewhere.exists() && !r.root().join(".coord/coord.db").exists(),
        "the file's db is used"
    );
    // The environment over the files, a flag over the environment.
    let out = r.run_in(
        r.root(),
        &["--json", "--file-size-limit", "10", "config", "show"],
        &[("COORD_TEAM", "env-team")],
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(setting(&shown, "team").unwrap()["source"], "environment");
    let limit = setting(&shown, "file-size-limit").unwrap();
    assert_eq!(
        (limit["value"].as_str(), limit["source"].as_str()),
        (Some("10"), Some("flag"))
    );
    // Refused, by name: identity anywhere, a credential or a way out in the repository's file.
    for (file, text, says) in [
        (user.join("config.toml"), "agent-id = \"me\"\n", "identity"),
        (
            r.root().join(".coord/config.toml"),
            "remote = \"http://127.0.0.1:1\"\n",
            "only be set in your user file",
        ),
        (
            r.root().join(".coord/config.toml"),
            "validator-command = \"sh\"\n",
            "only be set in your user file",
        ),
        (
            r.root().join(".coord/config.toml"),
            "db = \"postgres://evil/x\"\n",
            "only be set in your user file",
        ),
        (
            r.root().join(".coord/config.toml"),
            "no-such-setting = 1\n",
            "unknown setting",
        ),
        (r.root().join(".coord/config.toml"), "db = \n", "not valid TOML"),
    ] {
        let kept = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text).unwrap();
        let (refusal, code) = r.json_as("a", &["status"]);
        assert_eq!(
            (code, refusal["error"].as_str()),
            (2, Some("invalid_argument")),
            "{text}: {refusal}"
        );
        assert!(refusal["message"].as_str().unwrap().contains(says), "{text}: {refusal}");
        let hook = r.run(&["hook", "PreToolUse"]);
        assert_ne!(
            hook.status.code(),
            Some(0),
            "a hook with a broken configuration fails closed: {text}"
        );
        std::fs::write(&file, kept).unwrap();
    }
    let human = stdout(&r.run(&["config", "show", "--all"]));
    assert!(
        human.contains("release-grace-seconds") && human.contains("COORD_RELEASE_GRACE_SECONDS"),
        "{human}"
    );
}

/// The options every command takes are listed once — `coord --help`, `coord help options`
/// — not under every command, which points to them instead; they still work anywhere.
#[test]
fn global_options_are_listed_once() {
    let r = Repo::new();
    let help = |args: &[&str]| stdout(&r.run(args));
    let top = help(&["--help"]);
    assert!(top.contains("--db <URL>") && top.contains("options"), "{top}");
    for args in [
        &["msg", "--help"][..],
        &["msg", "send", "--help"],
        &["lock", "acquire", "--help"],
    ] {
        let text = help(args);
        assert!(
            !text.contains("--recall-half-life-days") && !text.contains("--db <URL>"),
            "{args:?}: {text}"
        );
        assert!(text.contains("coord help options"), "{args:?} points to them: {text}");
    }
    for args in [&["help", "options"][..], &["options"]] {
        let text = help(args);
        assert!(
            text.contains("--recall-half-life-days") && text.contains("--agent-id <ID>"),
            "{args:?}: {text}"
        );
    }
    let (listed, code) = r.json_as("a", &["lock", "list", "--agent-id", "b"]);
    assert_eq!(code, 0, "a global option after the command still parses: {listed}");
}
