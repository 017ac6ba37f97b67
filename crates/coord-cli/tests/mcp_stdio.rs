//! `coord mcp` as a child process speaking JSON-RPC over stdio, including hostile input.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use support::{BIN, served_address};

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    fn start(agent: &str) -> Server {
        Server::start_with(agent, &[])
    }

    fn start_with(agent: &str, env: &[(&str, &str)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let root = dir.path().to_path_buf();
        Server::start_at(&root, Some(dir), agent, env)
    }

    /// A server in the checkout `root` (a second one there shares its database); `dir`,
    /// when given, is kept alive as long as the server.
    fn start_at(root: &std::path::Path, dir: Option<tempfile::TempDir>, agent: &str, env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .current_dir(root)
            .env("COORD_AGENT_ID", agent)
            .env("COORD_AGENT_TYPE", "claude_code")
            .env_remove("COORD_DATABASE_URL")
            .env_remove("COORDINATION_API_URL")
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            // Holdings stay after the connection closes unless a test asks otherwise.
            .env("COORD_RELEASE_GRACE_SECONDS", "off")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
            _dir: dir,
        };
        let init = s.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "coord");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        s
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (bounded) for the response with its id; every line
    /// stdout carries must be JSON-RPC.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        let r = self.request(id, "tools/call", json!({"name": tool, "arguments": args}));
        r["result"]["structuredContent"].clone()
    }

    /// Closes stdin and returns what the server wrote on stderr.
    fn finish(self) -> String {
        drop(self.stdin);
        let out = self.child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "coord mcp exits cleanly when the client leaves: {:?}",
            out.status
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// An agent that dies (its runtime's pipe closes) does not keep what it holds: after the
/// grace period (0 here) its locks are free and its claimed task is back in the queue,
/// the attempt counted; with the default grace the same happens 20 s later.
#[test]
fn a_dead_agents_locks_and_tasks_are_released_after_the_grace_period() {
    let mut s = Server::start_with("doomed-agent", &[("COORD_RELEASE_GRACE_SECONDS", "0")]);
    assert_eq!(
        s.call(2, "acquire_lock", json!({"file_path": "src/a.rs"}))["success"],
        true
    );
    let submitted = s.call(3, "submit_work", json!({"task_type": "t", "task_description": "d"}));
    let claimed = s.call(4, "get_work", json!({}));
    assert_eq!(claimed["task_id"], submitted["task_id"]);
    let started = std::time::Instant::now();
    let Server {
        child,
        stdin,
        _dir: dir,
        ..
    } = s;
    drop(stdin);
    assert!(child.wait_with_output().unwrap().status.success());
    let elapsed = started.elapsed();
    let dir = dir.unwrap();
    let root = dir.path().to_path_buf();
    let coord = |args: &[&str]| coord_json(&root, args);
    let locks = coord(&["--json", "lock", "list"]);
    assert_eq!(locks["locks"], json!([]), "released: {locks}");
    let task_id = submitted["task_id"].as_str().unwrap();
    let task = coord(&["--json", "work", "show", task_id]);
    assert_eq!(
        (task["task"]["status"].as_str(), task["task"]["attempts"].as_i64()),
        (Some("pending"), Some(1)),
        "{task}"
    );
    let again = coord(&["--json", "--agent-id", "survivor", "work", "claim"]);
    assert_eq!(again["task_id"], submitted["task_id"], "another agent takes it over");
    let audit = coord(&[
        "--json",
        "audit",
        "--operation",
        "end_session",
        "--agent",
        "doomed-agent",
    ]);
    assert_eq!(
        audit["entries"].as_array().map(Vec::len),
        Some(2),
        "idle, then released: {audit}"
    );
    eprintln!("connection closed to holdings released: {elapsed:?}");
}

fn coord_json(root: &std::path::Path, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(root)
        .env("COORD_AGENT_ID", "observer")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
}

/// A server told to stop (SIGTERM: its runtime is ending it) releases at once, without
/// waiting for the grace period.
#[test]
fn a_terminated_server_releases_at_once() {
    let mut s = Server::start_with("leaving-agent", &[("COORD_RELEASE_GRACE_SECONDS", "3600")]);
    assert_eq!(
        s.call(2, "acquire_lock", json!({"file_path": "src/a.rs"}))["success"],
        true
    );
    let Server {
        child,
        stdin,
        _dir: dir,
        ..
    } = s;
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(out.status.success(), "{out:?}");
    let locks = coord_json(dir.as_ref().unwrap().path(), &["--json", "lock", "list"]);
    assert_eq!(locks["locks"], json!([]), "{locks}");
}

/// An agent that reconnects within the grace period keeps what it holds: the old
/// connection's delayed release ends only its own session, and the new connection
/// registered its own as soon as it connected.
#[test]
fn a_reconnect_within_the_grace_period_keeps_the_holdings() {
    let mut first = Server::start_with("returning-agent", &[("COORD_RELEASE_GRACE_SECONDS", "1")]);
    assert_eq!(
        first.call(2, "acquire_lock", json!({"file_path": "src/a.rs"}))["success"],
        true
    );
    let root = first._dir.as_ref().unwrap().path().to_path_buf();
    let Server {
        child,
        stdin,
        _dir: dir,
        ..
    } = first;
    drop(stdin);
    // The same agent is back before the old connection's grace period ends.
    let mut second = Command::new(BIN)
        .arg("mcp")
        .current_dir(&root)
        .env("COORD_AGENT_ID", "returning-agent")
        .env("COORD_AGENT_TYPE", "claude_code")
        .env("COORD_RELEASE_GRACE_SECONDS", "off")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut second_stdin = second.stdin.take().unwrap();
    let mut lines = BufReader::new(second.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}});
    writeln!(second_stdin, "{init}").unwrap();
    second_stdin.flush().unwrap();
    let _ = lines.next();
    writeln!(
        second_stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    second_stdin.flush().unwrap();
    // Registered on connect: wait until the coordinator shows the new session…
    let registered = (0..200).any(|_| {
        let agents = coord_json(&root, &["--json", "agents", "discover", "--status", "active"]);
        let found = agents["agents"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["agent_id"] == "returning-agent"));
        if !found {
            std::thread::sleep(Duration::from_millis(50));
        }
        found
    });
    assert!(registered, "the reconnected agent registers on connect");
    // …then let the old connection finish its grace period.
    assert!(child.wait_with_output().unwrap().status.success());
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(locks["locks"][0]["locked_by"], "returning-agent", "kept: {locks}");
    drop(second_stdin);
    assert!(second.wait().unwrap().success());
    drop(dir);
}

#[test]
fn a_child_process_serves_tools_over_stdio() {
    let mut s = Server::start("stdio-agent");
    let tools = s.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"acquire_lock") && names.contains(&"cleanup_dead_agents"),
        "{names:?}"
    );
    let got = s.call(3, "acquire_lock", json!({"file_path": "src/a.rs"}));
    assert_eq!(
        (got["success"].as_bool(), got["action"].as_str()),
        (Some(true), Some("acquired"))
    );
    let locks = s.call(4, "check_locks", json!({}));
    assert_eq!(locks["locks"][0]["locked_by"], "stdio-agent");
    let resources = s.request(5, "resources/list", json!({}));
    assert_eq!(resources["result"]["resources"].as_array().unwrap().len(), 3);
    let stderr = s.finish();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn hostile_input_does_not_crash_the_server() {
    let mut s = Server::start("hostile");
    s.send("this is not json");
    s.send("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ");
    s.send("[1, 2, 3]");
    s.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "no/such/method"}).to_string());
    let unknown_method = s.response(10);
    assert!(unknown_method["error"]["code"].is_i64(), "{unknown_method}");
    let unknown_tool = s.request(11, "tools/call", json!({"name": "rm_rf", "arguments": {}}));
    assert!(unknown_tool["error"].is_object(), "{unknown_tool}");
    let bad_args = s.request(
        12,
        "tools/call",
        json!({"name": "submit_work", "arguments": {"task_type": 7}}),
    );
    assert_eq!(bad_args["result"]["isError"], true);
    assert!(
        bad_args["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("task_type"),
        "{bad_args}"
    );
    let too_big = s.call(
        13,
        "submit_work",
        json!({"task_type": "t", "task_description": "d", "input_data": "x".repeat(300_000)}),
    );
    assert_eq!(too_big["error"], "payload_too_large");
    // A line over the transport's 16 MiB bound is dropped, not buffered without end.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":14,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    s.send(&huge);
    let nul = s.call(15, "acquire_lock", json!({"file_path": "a\u{0}b"}));
    assert_eq!(nul["error"], "invalid_path");
    let alive = s.call(16, "check_locks", json!({}));
    assert!(alive["locks"].is_array(), "still serving after all that: {alive}");
    let stderr = s.finish();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A cloud agent's `coord mcp` in remote mode: the server's checkout is elsewhere, and
/// the absolute paths agents send (Claude Code does) must still name the same files.
#[test]
fn remote_mode_sends_absolute_paths_repository_relative() {
    let server_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(server_dir.path().join(".git")).unwrap();
    let mut server = Command::new(BIN)
        .args(["serve", "--port", "0"])
        .current_dir(server_dir.path())
        .env("COORDINATION_API_KEYS", "remote-mcp-key")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("API_PORT")
        .env_remove("API_HOST")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = served_address(&mut server);
    let mut s = Server::start_with(
        "cloud-agent",
        &[
            ("COORDINATION_API_URL", &url),
            ("COORDINATION_API_KEY", "remote-mcp-key"),
        ],
    );
    let root = s._dir.as_ref().unwrap().path().canonicalize().unwrap();
    let absolute = root.join("src/feature.rs");
    let got = s.call(2, "acquire_lock", json!({"file_path": absolute.to_str().unwrap()}));
    assert_eq!(
        (got["success"].as_bool(), got["file_path"].as_str()),
        (Some(true), Some("src/feature.rs")),
        "{got}"
    );
    let locks = s.call(3, "check_locks", json!({"file_paths": [absolute.to_str().unwrap()]}));
    assert_eq!(locks["locks"][0]["locked_by"], "cloud-agent", "{locks}");
    let released = s.call(4, "release_lock", json!({"file_path": absolute.to_str().unwrap()}));
    assert_eq!(released["success"], true, "{released}");
    s.finish();
    let _ = server.kill();
    let _ = server.wait();
}

/// stdin a pipe that stays empty for a while, stdout a file: the server falls back to
/// ordinary stdio and waits for input instead of failing on an empty non-blocking read.
#[test]
fn a_pipe_in_and_a_file_out_still_serves() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let out_path = dir.path().join("out.jsonl");
    let mut child = Command::new(BIN)
        .arg("mcp")
        .current_dir(dir.path())
        .env("COORD_AGENT_ID", "file-agent")
        .env("COORD_RELEASE_GRACE_SECONDS", "off")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Give the server time to reach its first read of the still-empty pipe.
    std::thread::sleep(Duration::from_millis(300));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    )
    .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let out = std::fs::read_to_string(&out_path).unwrap();
    let first: Value = serde_json::from_str(out.lines().next().expect("an answer")).unwrap();
    assert_eq!(first["result"]["serverInfo"]["name"], "coord", "{out}");
}

/// `COORD_TEAM` puts the agent a `coord mcp` serves in a team: `discover_agents` shows it,
/// and a message to `team:<name>` reaches it.
#[test]
fn coord_team_puts_the_connection_in_a_team() {
    let mut s = Server::start_with("team-member", &[("COORD_TEAM", "backend")]);
    let agents = s.call(2, "discover_agents", json!({}));
    let me = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == "team-member")
        .cloned()
        .unwrap_or_else(|| panic!("registered: {agents}"));
    assert_eq!(me["team"], "backend");
    s.finish();
}

/// A `coord mcp` killed outright (SIGKILL: it runs no code, its agent may live on) leaves
/// its process record; a sibling `coord mcp` of the same checkout sees the process gone
/// and, after the grace period (0 here), ends its session: the lock is free, the claimed
/// task is back in the queue with the attempt counted, and the cleanup is audited.
#[test]
fn a_killed_coord_mcp_is_reaped_by_a_sibling() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let grace = [("COORD_RELEASE_GRACE_SECONDS", "0")];
    let mut victim = Server::start_at(&root, None, "victim-agent", &grace);
    assert_eq!(
        victim.call(2, "acquire_lock", json!({"file_path": "src/v.rs"}))["success"],
        true
    );
    let submitted = victim.call(3, "submit_work", json!({"task_type": "t", "task_description": "d"}));
    assert_eq!(victim.call(4, "get_work", json!({}))["task_id"], submitted["task_id"]);
    let records = std::fs::read_dir(root.join(".coord/processes")).unwrap().count();
    assert_eq!(records, 1, "the victim recorded its process");

    let mut sibling = Server::start_at(&root, Some(dir), "sibling-agent", &grace);
    victim.child.kill().unwrap(); // SIGKILL
    victim.child.wait().unwrap();
    let started = std::time::Instant::now();
    let mut freed = false;
    for id in 10..400 {
        let locks = sibling.call(id, "check_locks", json!({}));
        if locks["locks"].as_array().is_some_and(|l| l.is_empty()) {
            freed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(freed, "the sibling released the killed server's lock");
    eprintln!("SIGKILL of coord mcp to its lock released: {:?}", started.elapsed());
    let task = coord_json(
        &root,
        &["--json", "work", "show", submitted["task_id"].as_str().unwrap()],
    );
    assert_eq!(
        (task["task"]["status"].as_str(), task["task"]["attempts"].as_i64()),
        (Some("pending"), Some(1)),
        "{task}"
    );
    let audit = coord_json(&root, &["--json", "audit", "--operation", "cleanup_dead_agents"]);
    let entry = &audit["entries"][0];
    assert_eq!(entry["agent_id"], "sibling-agent", "{audit}");
    assert_eq!(entry["result"]["agents"], json!(["victim-agent"]), "{audit}");
    assert_eq!(
        std::fs::read_dir(root.join(".coord/processes")).unwrap().count(),
        1,
        "only the sibling's record is left"
    );
    sibling.finish();
}
