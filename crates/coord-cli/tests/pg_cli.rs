//! The `coord` binary against PostgreSQL: start-up errors and a command tour.

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

use serde_json::Value;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_coord");

fn coord(db: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORD_LOG")
        .output()
        .unwrap()
}

fn one_line_error(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(out.status.code(), Some(3), "exit code 3: {err}");
    assert_eq!(err.lines().count(), 1, "one line, no stack trace: {err:?}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
    assert!(err.contains("database_unavailable"), "{err}");
    err
}

#[tokio::test]
async fn start_up_errors_are_one_line_with_exit_code_3() {
    if !pg_support::available().await {
        return;
    }
    let unreachable = one_line_error(&coord("postgres://postgres@127.0.0.1:1/x", &["status"]));
    assert!(unreachable.contains("cannot connect"), "{unreachable}");

    let bad_url = one_line_error(&coord(
        "postgres://postgres@127.0.0.1:5432/x?sslmode=sometimes",
        &["status"],
    ));
    assert!(bad_url.contains("invalid PostgreSQL URL"), "{bad_url}");

    let with_password = one_line_error(&coord("postgres://someone:hunter2@127.0.0.1:1/x", &["status"]));
    assert!(
        !with_password.contains("hunter2"),
        "passwords are never printed: {with_password}"
    );

    // A login role without CREATE on the schema cannot migrate a fresh database.
    let db = pg_support::TestDatabase::empty().await;
    let admin = pg_support::connect(&db.url).await;
    admin
        .batch_execute(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'coord_limited') THEN
                     CREATE ROLE coord_limited LOGIN;
                 END IF;
             END $$;
             REVOKE CREATE ON SCHEMA public FROM PUBLIC;",
        )
        .await
        .unwrap();
    let limited = db.url.replacen("postgres@", "coord_limited@", 1);
    assert_ne!(limited, db.url, "the test URL names the postgres user");
    let denied = one_line_error(&coord(&limited, &["status"]));
    assert!(
        denied.contains("migrations") && denied.contains("permission denied"),
        "{denied}"
    );
}

#[tokio::test]
async fn the_cli_tour_works_on_postgres() {
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let json = |agent: &str, args: &[&str]| -> (Value, i32) {
        let mut all = vec!["--json", "--agent-id", agent];
        all.extend_from_slice(args);
        let out = coord(&db.url, &all);
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{:?}", out));
        (v, out.status.code().unwrap())
    };
    let (v, rc) = json("alice", &["migrate"]);
    assert_eq!((rc, v["backend"].as_str()), (0, Some("postgres")));
    let (v, rc) = json("alice", &["lock", "acquire", "src/a.rs", "--reason", "r"]);
    assert_eq!((rc, v["action"].as_str()), (0, Some("acquired")));
    let (v, rc) = json("bob", &["lock", "acquire", "src/a.rs"]);
    assert_eq!((rc, v["locked_by"].as_str()), (1, Some("alice")));
    let (v, _) = json("boss", &["work", "submit", "t", "do it", "--priority", "1"]);
    let id = v["task_id"].as_str().unwrap().to_string();
    let (v, rc) = json("w", &["work", "claim"]);
    assert_eq!((rc, v["task_id"].as_str()), (0, Some(id.as_str())));
    let (v, rc) = json("w", &["work", "complete", &id, "--success"]);
    assert_eq!((rc, v["status"].as_str()), (0, Some("completed")));
    let (v, _) = json("alice", &["handoff", "write", "notes"]);
    assert_eq!(v["success"], true);
    let (v, _) = json("alice", &["status"]);
    assert_eq!(v["backend"], "postgres");
    assert_eq!(v["live_locks"], 1);
    assert!(!v["database"].as_str().unwrap().contains("hunter2"));
    let (v, _) = json("admin", &["audit", "--agent", "bob"]);
    assert_eq!(v["entries"][0]["result"]["action"], "blocked");
}

/// `coord mcp` on PostgreSQL (no repository coordinator there: the process serves MCP
/// itself, through the same connection code as a relayed session): a call through the
/// short path and one through rmcp answer alike, and SIGTERM releases at once.
#[tokio::test]
async fn coord_mcp_serves_postgres_over_stdio() {
    use std::io::{BufRead as _, Write as _};
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["--db", &db.url, "mcp"])
        .current_dir(dir.path())
        .env("COORD_AGENT_ID", "pg-agent")
        .env("COORD_AGENT_TYPE", "claude_code")
        .env("COORD_RELEASE_GRACE_SECONDS", "3600")
        .env_remove("COORD_DATABASE_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut rpc = |message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        let line = lines.next().expect("an answer").unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let init = rpc(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pg-test", "version": "1"}}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "coord", "{init}");
    rpc(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |id: u64, meta: bool| {
        let mut params = serde_json::json!({"name": "acquire_lock", "arguments": {"file_path": "src/pg.rs"}});
        if meta {
            params["_meta"] = serde_json::json!({});
        }
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let short = rpc(call(2, false));
    assert_eq!(short["result"]["structuredContent"]["action"], "acquired", "{short}");
    let through_rmcp = rpc(call(3, true));
    assert_eq!(
        through_rmcp["result"]["structuredContent"]["success"], true,
        "{through_rmcp}"
    );
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert!(child.wait().unwrap().success());
    let out = coord(&db.url, &["--json", "--agent-id", "observer", "lock", "list"]);
    let locks: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(locks["locks"], serde_json::json!([]), "released at once: {locks}");
}
