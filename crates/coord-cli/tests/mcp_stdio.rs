//! `coord mcp` as a child process speaking JSON-RPC over stdio, including hostile input.

mod support;

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

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
    /// The notifications met while waiting for responses.
    notified: Vec<Value>,
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
            notified: Vec::new(),
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
            if v.get("id").is_none() {
                self.notified.push(v);
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

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The tool surface an agent pays for on every turn (issue 51): by default its daily
/// work — the `core` toolset and the two tools that reach the rest — at most 6k tokens
/// (characters / 4) of `tools/list`; a tool of another toolset still runs when called by
/// name; `enable_toolset` lists more and says the list changed; `COORD_TOOLSETS=all` lists
/// everything the profile allows; what the profile refuses (administration, from inside an
/// agent's session) is never listed.
#[test]
fn an_agent_sees_a_small_tool_list_and_can_reach_the_rest() {
    let mut s = Server::start("surface-agent");
    let list = s.request(2, "tools/list", json!({}));
    let names = tool_names(&list);
    let chars = serde_json::to_string(&list["result"]["tools"]).unwrap().len();
    eprintln!(
        "default tools/list: {} tools, {chars} characters (~{} tokens)",
        names.len(),
        chars / 4
    );
    assert!(chars <= 24_000, "{chars} characters: over 6k tokens");
    for want in [
        "acquire_lock",
        "check_edit",
        "get_work",
        "complete_work",
        "send_message",
        "inbox",
        "write_handoff",
        "read_handoff",
        "remember",
        "recall",
        "status",
        "list_toolsets",
        "enable_toolset",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n == "cleanup_dead_agents" || n == "apply_profiles"),
        "{names:?}"
    );
    // Listing is not permission: called by name, an unlisted tool runs.
    let swept = s.call(3, "cleanup_dead_agents", json!({"stale_threshold_minutes": 60}));
    assert_eq!(swept["success"], true, "{swept}");
    let sets = s.call(4, "list_toolsets", json!({}));
    assert!(
        sets["toolsets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "sessions" && t["listed"] == false)
    );
    let enabled = s.call(5, "enable_toolset", json!({"name": "sessions"}));
    assert_eq!(enabled["success"], true, "{enabled}");
    let more = tool_names(&s.request(6, "tools/list", json!({})));
    assert!(more.iter().any(|n| n == "cleanup_dead_agents"), "{more:?}");
    assert!(
        s.notified
            .iter()
            .any(|n| n["method"] == "notifications/tools/list_changed"),
        "{:?}",
        s.notified
    );
    let bad = s.request(
        7,
        "tools/call",
        json!({"name": "enable_toolset", "arguments": {"name": "nope"}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    drop(s);
    // Everything the profile allows, on request; a person's decisions are not among it
    // for an agent's session.
    let mut all = Server::start_with("surface-all", &[("COORD_TOOLSETS", "all"), ("CLAUDECODE", "1")]);
    let names = tool_names(&all.request(2, "tools/list", json!({})));
    assert!(
        names.iter().any(|n| n == "read_file") && names.iter().any(|n| n == "list_tasks"),
        "{names:?}"
    );
    // claude-code-cli has no spawn_agent; nobody decides approvals from an agent's session.
    for refused in ["spawn_agent", "decide_approval", "apply_profiles", "create_api_key"] {
        assert!(!names.iter().any(|n| n == refused), "{refused} in {names:?}");
    }
    let bad = Command::new(BIN)
        .arg("mcp")
        .env("COORD_TOOLSETS", "core,nope")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown toolset"),
        "{bad:?}"
    );
}

#[test]
fn a_child_process_serves_tools_over_stdio() {
    let mut s = Server::start("stdio-agent");
    let tools = s.request(2, "tools/list", json!({}));
    let names = tool_names(&tools);
    assert!(names.iter().any(|n| n == "acquire_lock"), "{names:?}");
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
    // The relay's control lines are not the agent's to send, in any JSON shape.
    let control = s.request(17, "coord/terminate", json!({}));
    assert_eq!(control["error"]["code"], -32601, "{control}");
    s.send(r#"[null, "coord/terminate", {}]"#);
    s.send(r#"{"jsonrpc": "2.0", "method": "coord/input_closed"}"#);
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
    // Asked to hand its pipes over, it relays instead: a file is not a pipe.
    for direct in ["off", "on"] {
        a_pipe_in_and_a_file_out_serves_with(direct);
    }
}

fn a_pipe_in_and_a_file_out_serves_with(direct: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let out_path = dir.path().join("out.jsonl");
    let mut child = Command::new(BIN)
        .arg("mcp")
        .current_dir(dir.path())
        .env("COORD_AGENT_ID", "file-agent")
        .env("COORD_RELEASE_GRACE_SECONDS", "off")
        .env("COORD_MCP_DIRECT", direct)
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

/// A `coord mcp` serving MCP itself (`COORD_LOCAL_SERVER=off`) killed outright (SIGKILL:
/// it runs no code, its agent may live on) leaves its process record; a sibling `coord mcp` of the same checkout sees the process gone
/// and, after the grace period (0 here), ends its session: the lock is free, the claimed
/// task is back in the queue with the attempt counted, and the cleanup is audited.
#[test]
fn a_killed_coord_mcp_is_reaped_by_a_sibling() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    // Each process opens the database itself (a relayed process's session is ended by
    // the repository's coordinator instead: see the next test).
    let grace = [("COORD_RELEASE_GRACE_SECONDS", "0"), ("COORD_LOCAL_SERVER", "off")];
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
    assert_requeued_once(&root, &submitted);
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

/// The sockets of repository coordinators in `root`'s `.coord`.
fn coordinator_sockets(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(root.join(".coord"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == "sock"));
    found
}

/// The processes serving `socket` (`coord … serve --socket <socket>`).
fn serving(socket: &std::path::Path) -> Vec<u32> {
    let wanted = socket.as_os_str().to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.iter().any(|a| a == "--socket") && args.contains(&wanted)
        })
        .collect()
}

/// Waits (bounded) until `pid` is gone, its files closed; false when it is still there
/// after 20 s.
fn gone(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let state = state_of(&std::path::Path::new("/proc").join(pid.to_string()));
        // A zombie (Z) has exited, only its parent's wait is missing, once its other
        // threads are gone too: a killed process's leader shows as a zombie while they
        // (and its open sockets) are still going away.
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        if state.is_none() || (state == Some('Z') && threads <= 1) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn audit_of(root: &std::path::Path, operation: &str) -> Vec<(String, bool)> {
    let audit = coord_json(root, &["--json", "audit", "--operation", operation]);
    audit["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{audit}"))
        .iter()
        .map(|e| (e["agent_id"].as_str().unwrap().to_string(), e["success"] == json!(true)))
        .collect()
}

/// Agents in one checkout share one repository coordinator process (started by the first
/// `coord mcp`), each acting as itself; a hook of the same checkout goes through it too.
#[test]
fn agents_in_one_checkout_share_the_repository_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let mut a = Server::start_at(&root, None, "agent-a", &[]);
    let mut b = Server::start_at(&root, None, "agent-b", &[]);
    let got = a.call(2, "acquire_lock", json!({"file_path": "src/shared.rs"}));
    assert_eq!(got["success"], true, "{got}");
    let blocked = b.call(2, "acquire_lock", json!({"file_path": "src/shared.rs"}));
    assert_eq!(
        (&blocked["success"], &blocked["locked_by"]),
        (&json!(false), &json!("agent-a")),
        "{blocked}"
    );
    let sockets = coordinator_sockets(&root);
    assert_eq!(sockets.len(), 1, "one coordinator for both: {sockets:?}");
    assert_eq!(serving(&sockets[0]).len(), 1, "one process serves it");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sockets[0]).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "only its owner may connect");
    // Another user cannot connect (the file's mode; the server also checks the peer).
    let other = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "python3", "-c"])
        .arg("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])")
        .arg(&sockets[0])
        .output()
        .unwrap();
    assert!(!other.status.success(), "another user connected: {other:?}");

    // agent-b's Write of the file agent-a holds: the hook refuses it.
    let payload = json!({
        "session_id": "s-b", "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": root.join("src/shared.rs"), "content": "x"},
        "cwd": root,
    });
    let mut hook = Command::new(BIN)
        .args(["hook", "PreToolUse"])
        .current_dir(&root)
        .env("COORD_AGENT_ID", "agent-b")
        .env("COORD_AGENT_TYPE", "claude_code")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
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
    let decision: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(
        decision["hookSpecificOutput"]["permissionDecision"], "deny",
        "{decision}"
    );

    let acquires = audit_of(&root, "acquire_lock");
    assert!(acquires.contains(&("agent-a".into(), true)), "{acquires:?}");
    assert!(acquires.contains(&("agent-b".into(), false)), "{acquires:?}");
    let edits = audit_of(&root, "check_edit");
    assert!(edits.iter().any(|(who, _)| who == "agent-b"), "{edits:?}");
    a.finish();
    b.finish();
}

/// When the repository coordinator dies, the relay starts a successor and replays the
/// handshake: the agent's next call goes through on the same connection; nothing the dead
/// one committed is lost.
#[test]
fn a_dead_repository_coordinator_is_replaced_by_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let mut a = Server::start_at(&root, None, "agent-a", &[]);
    let (socket, first) = holding_src_x(&mut a, &root);
    signal(first[0], "-KILL");
    assert!(gone(first[0]), "the coordinator did not die");

    let released = a.call(3, "release_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(released["success"], true, "{released}");
    let second = serving(&socket);
    assert_eq!(second.len(), 1, "a successor serves the same socket");
    assert_ne!(second, first);
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(locks["locks"], json!([]), "{locks}");
    assert_eq!(audit_of(&root, "acquire_lock"), vec![("agent-a".to_string(), true)]);
    assert_eq!(audit_of(&root, "release_lock"), vec![("agent-a".to_string(), true)]);
    a.finish();

    // Removing the database stops it (a deleted checkout leaves no server behind).
    drop(dir);
    assert!(gone(second[0]), "the coordinator outlived its database");
}

/// `COORD_LOCAL_SERVER=off`: every process opens the database itself.
#[test]
fn the_repository_coordinator_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let mut a = Server::start_at(&root, None, "agent-a", &[("COORD_LOCAL_SERVER", "off")]);
    assert_eq!(
        a.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}))["success"],
        true
    );
    assert_eq!(coordinator_sockets(&root), Vec::<std::path::PathBuf>::new());
    a.finish();
}

/// `COORD_MCP_DIRECT=on`: `coord mcp` hands its agent's pipes to the repository's
/// coordinator, which reads and answers the agent itself (no relay thread copies a line);
/// agents still act as themselves, and a relaying agent shares the same coordinator.
#[test]
fn coord_mcp_direct_hands_the_agents_pipes_to_the_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let mut a = Server::start_at(&root, None, "agent-a", &[DIRECT]);
    let mut b = Server::start_at(&root, None, "agent-b", &[DIRECT]);
    let mut relayed = Server::start_at(&root, None, "agent-c", &[]);
    let (socket, coordinator) = holding_src_x(&mut a, &root);
    let blocked = b.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(blocked["locked_by"], "agent-a", "{blocked}");
    let blocked = relayed.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(blocked["locked_by"], "agent-a", "{blocked}");
    assert_eq!(serving(&socket), coordinator, "one coordinator for all three");

    let open = pipes_open_in(coordinator[0]);
    for s in [&a, &b] {
        assert!(
            open.contains(&pipe_of(&s.stdin)),
            "the coordinator reads the agent's pipe"
        );
        assert!(
            !has_thread(s.child.id(), "relay-up"),
            "nothing copies the agent's lines"
        );
    }
    assert!(
        !open.contains(&pipe_of(&relayed.stdin)),
        "a relayed agent's pipe stays with its relay"
    );
    assert!(has_thread(relayed.child.id(), "relay-up"));
    assert_eq!(
        audit_of(&root, "acquire_lock"),
        vec![
            ("agent-c".to_string(), false),
            ("agent-b".to_string(), false),
            ("agent-a".to_string(), true)
        ]
    );
    a.finish();
    b.finish();
    relayed.finish();
}

/// The hand-over on PostgreSQL: the checkout's coordinator for that database
/// (`.coord/run/pg.….sock`) reads both agents' pipes itself, and each agent acts as itself.
#[test]
fn coord_mcp_direct_hands_the_agents_pipes_over_on_postgres() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if !rt.block_on(pg_support::available()) {
        return;
    }
    let db = rt.block_on(pg_support::TestDatabase::from_template());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let env = [DIRECT, ("COORD_DATABASE_URL", db.url.as_str())];
    let mut a = Server::start_at(&root, None, "agent-a", &env);
    let mut b = Server::start_at(&root, None, "agent-b", &env);
    let held = a.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(held["success"], true, "{held}");
    let blocked = b.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(blocked["locked_by"], "agent-a", "{blocked}");

    let sockets: Vec<_> = std::fs::read_dir(root.join(".coord/run"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sock"))
        .collect();
    assert_eq!(sockets.len(), 1, "one coordinator for the database: {sockets:?}");
    let coordinator = serving(&sockets[0]);
    assert_eq!(coordinator.len(), 1);
    let open = pipes_open_in(coordinator[0]);
    for s in [&a, &b] {
        assert!(
            open.contains(&pipe_of(&s.stdin)),
            "the coordinator reads the agent's pipe"
        );
        assert!(
            !has_thread(s.child.id(), "relay-up"),
            "nothing copies the agent's lines"
        );
    }
    let out = Command::new(BIN)
        .args(["--db", &db.url, "--json", "audit", "--operation", "acquire_lock"])
        .env("COORD_AGENT_ID", "observer")
        .env_remove("COORD_DATABASE_URL")
        .output()
        .unwrap();
    let audit: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let rows: Vec<(String, bool)> = audit["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{audit}"))
        .iter()
        .map(|e| (e["agent_id"].as_str().unwrap().to_string(), e["success"] == json!(true)))
        .collect();
    assert_eq!(
        rows,
        vec![("agent-b".to_string(), false), ("agent-a".to_string(), true)]
    );
    a.finish();
    b.finish();
}

/// `mcp-direct = "on"` in the main checkout's `.coord/config.toml` reaches the agents of
/// a linked worktree too (worktrees share one coordination space). Each checkout has a
/// coordinator of its own (paths are resolved against its checkout), both on the one
/// store beside the main checkout: each reads its agent's pipes, and the lock one agent
/// takes refuses the other.
#[test]
fn the_hand_over_reaches_a_linked_worktree() {
    use support::git;
    let base = tempfile::tempdir().unwrap();
    let main = base.path().join("main");
    std::fs::create_dir_all(main.join("src")).unwrap();
    std::fs::write(main.join("src/x.rs"), "fn x() {}\n").unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    git(&main, &["add", "."]);
    git(&main, &["commit", "-q", "-m", "init"]);
    let wt = base.path().join("wt2");
    git(&main, &["worktree", "add", "-q", "-b", "feature", wt.to_str().unwrap()]);
    coord_json(&main, &["--json", "init"]);
    std::fs::write(main.join(".coord/config.toml"), "mcp-direct = \"on\"\n").unwrap();

    let mut a = Server::start_at(&main, None, "agent-main", &[]);
    let mut b = Server::start_at(&wt, None, "agent-wt", &[]);
    let held = a.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(held["success"], true, "{held}");
    let blocked = b.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}));
    assert_eq!(blocked["locked_by"], "agent-main", "{blocked}");
    assert!(!wt.join(".coord").exists(), "no second store in the worktree");
    let coordinators: Vec<u32> = coordinator_sockets(&main).iter().flat_map(|s| serving(s)).collect();
    assert_eq!(coordinators.len(), 2, "one coordinator per checkout: {coordinators:?}");
    for s in [&a, &b] {
        let pipe = pipe_of(&s.stdin);
        let readers: Vec<&u32> = coordinators
            .iter()
            .filter(|c| pipes_open_in(**c).contains(&pipe))
            .collect();
        assert_eq!(readers.len(), 1, "a coordinator reads the agent's pipe");
        assert!(
            !has_thread(s.child.id(), "relay-up"),
            "nothing copies the agent's lines"
        );
    }
    a.finish();
    b.finish();
}

/// stdin a named FIFO whose writer has already gone, its request still buffered: `coord
/// mcp` answers it and ends (opening the FIFO again never waits for a writer).
#[test]
fn a_named_fifo_whose_writer_is_gone_is_served_and_ends() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let fifo = dir.path().join("in.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Read-write first (a FIFO open that never waits), then the read end the server gets.
    let mut writer = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let reader = std::fs::File::open(&fifo).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fifo", "version": "1"}}});
    writeln!(writer, "{init}").unwrap();
    drop(writer);
    let child = Command::new(BIN)
        .arg("mcp")
        .current_dir(dir.path())
        .env("COORD_AGENT_ID", "fifo-agent")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .env_remove("COORD_MCP_DIRECT")
        .stdin(Stdio::from(reader))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(gone(pid), "coord mcp still runs with its input ended");
    let out = child.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains(r#""serverInfo":{"name":"coord""#), "{answer} {out:?}");
}

/// A handed-over session ends as a relayed one does: told to stop, `coord mcp` has the
/// holdings released at once (grace period of an hour); killed, the coordinator takes
/// the dropped connection as the end of the agent's input (grace period 0).
#[test]
fn a_handed_over_session_ends_as_a_relayed_one_does() {
    let s = Server::start_with("leaving-agent", &[DIRECT, ("COORD_RELEASE_GRACE_SECONDS", "3600")]);
    let root = s._dir.as_ref().unwrap().path().to_path_buf();
    let mut s = s;
    assert_eq!(
        s.call(2, "acquire_lock", json!({"file_path": "src/a.rs"}))["success"],
        true
    );
    signal(s.child.id(), "-TERM");
    let Server {
        child,
        stdin,
        _dir: dir,
        ..
    } = s;
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(coord_json(&root, &["--json", "lock", "list"])["locks"], json!([]));

    let mut victim = Server::start_at(
        &root,
        None,
        "victim-agent",
        &[DIRECT, ("COORD_RELEASE_GRACE_SECONDS", "0")],
    );
    assert_eq!(
        victim.call(2, "acquire_lock", json!({"file_path": "src/v.rs"}))["success"],
        true
    );
    victim.child.kill().unwrap(); // SIGKILL
    victim.child.wait().unwrap();
    wait_for(
        || coord_json(&root, &["--json", "lock", "list"])["locks"] == json!([]),
        "the killed agent's lock to be released",
    );
    let ends = audit_of(&root, "end_session");
    assert!(ends.contains(&("victim-agent".to_string(), true)), "{ends:?}");
    drop(dir);
}

/// A handed-over `coord mcp` killed outright: the coordinator closes the agent's pipes at
/// once (the runtime sees its server's output end), while the session's holdings wait
/// for the grace period (an hour here).
#[test]
fn a_killed_coord_mcp_closes_the_agents_pipes_at_once() {
    let mut a = Server::start_with("agent-k", &[DIRECT, ("COORD_RELEASE_GRACE_SECONDS", "3600")]);
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    holding_src_x(&mut a, &root);
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    while let Ok(line) = a.lines.recv_timeout(Duration::from_secs(20)) {
        assert!(!line.is_empty());
    }
    assert!(
        matches!(a.lines.try_recv(), Err(std::sync::mpsc::TryRecvError::Disconnected)),
        "the agent's input from the server ended"
    );
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(
        locks["locks"][0]["locked_by"], "agent-k",
        "held through the grace period: {locks}"
    );
}

/// Handed over, a session has no replay: when the coordinator dies, `coord mcp` exits
/// with an error that says so, the agent sees its server's output end, and the process
/// record stays for a sibling's reaper to end the session.
#[test]
fn a_handed_over_session_ends_with_its_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let root = dir.path().to_path_buf();
    let mut a = Server::start_at(&root, None, "agent-a", &[DIRECT, ("COORD_RELEASE_GRACE_SECONDS", "60")]);
    let (_, coordinator) = holding_src_x(&mut a, &root);
    let record = root.join(".coord/processes").join(format!("{}.json", a.child.id()));
    wait_for(|| record.exists(), "coord mcp to record its session");
    signal(coordinator[0], "-KILL");
    let Server {
        child, stdin, lines, ..
    } = a;
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("COORD_MCP_DIRECT"), "{stderr}");
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(20)) {
        assert!(!line.is_empty());
    }
    assert!(
        matches!(lines.try_recv(), Err(std::sync::mpsc::TryRecvError::Disconnected)),
        "the agent's input from the server ended"
    );
    assert!(record.exists(), "the process record is kept for the reaper");
}

/// Node gives a child Unix sockets as stdin and stdout (so Claude Code gives them to
/// `coord mcp`): handed over as they are, the coordinator serves the agent on them.
#[test]
fn coord_mcp_direct_takes_the_sockets_node_gives() {
    use std::os::unix::net::UnixStream;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let (ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = UnixStream::pair().unwrap();
    let (child_in, child_out) = (pipe_of(&theirs_in), pipe_of(&theirs_out));
    let mut child = Command::new(BIN)
        .arg("mcp")
        .current_dir(dir.path())
        .env("COORD_AGENT_ID", "node-agent")
        .env("COORD_AGENT_TYPE", "claude_code")
        .env("COORD_RELEASE_GRACE_SECONDS", "off")
        .env(DIRECT.0, DIRECT.1)
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut from = BufReader::new(&ours_out);
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let mut to = &ours_in;
        writeln!(
            to,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        let mut line = String::new();
        from.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let init = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "node", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "coord", "{init}");
    writeln!(
        &ours_in,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let got = ask(
        2,
        "tools/call",
        json!({"name": "acquire_lock", "arguments": {"file_path": "src/n.rs"}}),
    );
    assert_eq!(got["result"]["structuredContent"]["success"], true, "{got}");
    let socket = coordinator_sockets(dir.path()).pop().expect("a coordinator");
    let coordinator = serving(&socket)[0];
    let open: Vec<String> = std::fs::read_dir(format!("/proc/{coordinator}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .collect();
    assert!(
        open.contains(&child_in) && open.contains(&child_out),
        "the coordinator holds the agent's sockets"
    );
    assert!(!has_thread(child.id(), "relay-up"));
    drop(ours_in); // the agent leaves
    assert!(child.wait().unwrap().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut from, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing more for the agent");
    let locks = coord_json(dir.path(), &["--json", "lock", "list"]);
    assert_eq!(locks["locks"][0]["locked_by"], "node-agent", "{locks}");
}

const DIRECT: (&str, &str) = ("COORD_MCP_DIRECT", "on");

/// The pipe or socket (`pipe:[inode]`, `socket:[inode]`) one of our descriptors is.
fn pipe_of(fd: &impl std::os::fd::AsRawFd) -> String {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
    link.to_string_lossy().into_owned()
}

/// The pipes process `pid` has open.
fn pipes_open_in(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .filter(|l| l.starts_with("pipe:"))
        .collect()
}

/// Whether process `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        })
        .unwrap_or(false)
}

/// `a` acquires `src/x.rs`; answers the socket of the checkout's coordinator and the one
/// process serving it.
fn holding_src_x(a: &mut Server, root: &std::path::Path) -> (std::path::PathBuf, Vec<u32>) {
    assert_eq!(
        a.call(2, "acquire_lock", json!({"file_path": "src/x.rs"}))["success"],
        true
    );
    let socket = coordinator_sockets(root).pop().expect("a coordinator socket");
    let serving = serving(&socket);
    assert_eq!(serving.len(), 1);
    (socket, serving)
}

/// The task `submitted` is back in the queue, its one attempt counted.
fn assert_requeued_once(root: &std::path::Path, submitted: &Value) {
    let task = coord_json(
        root,
        &["--json", "work", "show", submitted["task_id"].as_str().unwrap()],
    );
    assert_eq!(
        (task["task"]["status"].as_str(), task["task"]["attempts"].as_i64()),
        (Some("pending"), Some(1)),
        "{task}"
    );
}

fn signal(pid: u32, which: &str) {
    let sent = Command::new("kill").args([which, &pid.to_string()]).status().unwrap();
    assert!(sent.success(), "kill {which} {pid}");
}

/// The state letter of the process or thread whose `/proc` directory is `dir` (`S`
/// sleeping, `T` stopped, `Z` zombie…), read after the command name, which may hold
/// spaces and parentheses; `None` when it is gone.
fn state_of(dir: &std::path::Path) -> Option<char> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Waits (bounded) until every thread of `pid` has stopped; false when one still runs
/// after 20 s. `kill -STOP` returns once the signal is queued: the stop itself is carried
/// out by one of the process's threads when it next runs, and until then the others run
/// on (a worker woken by the relay's line answered it, under load).
fn stopped(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let all = std::fs::read_dir(format!("/proc/{pid}/task"))
            .is_ok_and(|tasks| tasks.flatten().all(|t| state_of(&t.path()) == Some('T')));
        if all {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Bytes `pid` has read so far with read(2) and the like (its `rchar`: its stdin, not
/// its sockets).
fn read_so_far(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{io}"))
}

/// Whether the relay `pid`'s thread reading the agent's input sleeps in read(2).
fn relay_waits_for_input(pid: u32) -> bool {
    #[cfg(target_arch = "aarch64")]
    const READ: &str = "63 ";
    #[cfg(not(target_arch = "aarch64"))]
    const READ: &str = "0 ";
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let dir = t.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let syscall = std::fs::read_to_string(dir.join("syscall")).unwrap_or_default();
        comm.trim() == "relay-up" && state_of(&dir) == Some('S') && syscall.starts_with(READ)
    })
}

/// A call the coordinator received and died on is answered, with an error saying its
/// outcome is unknown, instead of never; the connection goes on with a new coordinator,
/// and what the dead one committed is still there.
#[test]
fn a_call_in_flight_when_the_coordinator_dies_is_answered_as_unknown() {
    let mut a = Server::start("agent-a");
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    let (socket, first) = holding_src_x(&mut a, &root);
    // Stopped, the coordinator cannot answer: the call is surely in flight once the relay
    // has read it (its byte count says so) and gone back to reading (so it has written
    // it to the coordinator).
    signal(first[0], "-STOP");
    assert!(stopped(first[0]), "the coordinator did not stop");
    let before = read_so_far(a.child.id());
    let line = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "check_locks", "arguments": {}}})
    .to_string();
    a.send(&line);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while read_so_far(a.child.id()) < before + line.len() as u64 + 1 || !relay_waits_for_input(a.child.id()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the relay did not pass the call on"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(first[0], "-KILL");
    let lost = a.response(3);
    assert_eq!(lost["result"]["isError"], true, "{lost}");
    assert_eq!(lost["result"]["structuredContent"]["outcome"], "unknown", "{lost}");
    let locks = a.call(4, "check_locks", json!({}));
    assert_eq!(locks["locks"][0]["locked_by"], "agent-a", "{locks}");
    let second = serving(&socket);
    assert_eq!(second.len(), 1, "a successor serves the same socket");
    assert_ne!(second, first);
    a.finish();
}

/// A relaying `coord mcp` killed outright: the repository's coordinator sees its
/// connection drop, which is the end of the agent's input, and after the grace period (0
/// here) releases its lock and requeues its task, audited as the agent's session ending.
#[test]
fn a_killed_relay_is_released_by_the_coordinator() {
    let mut victim = Server::start_with("victim-agent", &[("COORD_RELEASE_GRACE_SECONDS", "0")]);
    let root = victim._dir.as_ref().unwrap().path().to_path_buf();
    assert_eq!(
        victim.call(2, "acquire_lock", json!({"file_path": "src/v.rs"}))["success"],
        true
    );
    let submitted = victim.call(3, "submit_work", json!({"task_type": "t", "task_description": "d"}));
    assert_eq!(victim.call(4, "get_work", json!({}))["task_id"], submitted["task_id"]);
    victim.child.kill().unwrap(); // SIGKILL
    victim.child.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let locks = coord_json(&root, &["--json", "lock", "list"]);
        if locks["locks"].as_array().is_some_and(|l| l.is_empty()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still held: {locks}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_requeued_once(&root, &submitted);
    let ends = audit_of(&root, "end_session");
    assert_eq!(ends, vec![("victim-agent".to_string(), true); 2], "idle, then released");
}

/// The repository's coordinator dies while it holds a leaving agent's session in its grace
/// period: the relay, still waiting for the session's end, takes it to a successor, which
/// keeps the holdings for a grace period of its own and releases them when the relay is
/// told to stop (a grace period of an hour here, so nothing is released by its end).
#[test]
fn a_grace_period_outlives_the_coordinator_that_began_it() {
    let mut a = Server::start_with("leaving-agent", &[("COORD_RELEASE_GRACE_SECONDS", "3600")]);
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    let (socket, first) = holding_src_x(&mut a, &root);
    let Server {
        child,
        stdin,
        _dir: dir,
        ..
    } = a;
    drop(stdin); // the agent leaves: its session goes idle, its lock kept
    let idle = wait_for_session(&root, "leaving-agent", |s| s["status"] == "idle");
    signal(first[0], "-KILL");
    assert!(gone(first[0]), "the coordinator did not die");

    // The relay reached a successor and told it the input had ended: the successor ends
    // the same session (idle again, audited) and waits a grace period of its own.
    wait_for(
        || audit_of(&root, "end_session").len() == 2,
        "the successor's end of the session",
    );
    let second = serving(&socket);
    assert_eq!(second.len(), 1, "a successor serves the socket");
    assert_ne!(second, first);
    let now = wait_for_session(&root, "leaving-agent", |s| s["status"] == "idle");
    assert_eq!(
        now["session_id"], idle["session_id"],
        "no new session was started for it"
    );
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(locks["locks"][0]["locked_by"], "leaving-agent", "kept: {locks}");

    signal(child.id(), "-TERM");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(locks["locks"], json!([]), "released by the successor: {locks}");
    assert_eq!(
        audit_of(&root, "end_session"),
        vec![("leaving-agent".to_string(), true); 3],
        "idle, idle again on the successor, then released"
    );
    drop(dir);
}

/// A relay killed outright (SIGKILL) while its coordinator holds the session in its grace
/// period, and then the coordinator killed too: nothing remembers the session but the
/// relay's process record (reaper.rs). A successor, started by another agent, ends it as
/// a reaped session (`cleanup_dead_agents`) once the relay's grace period has passed.
#[test]
fn a_killed_relay_whose_coordinator_dies_too_is_still_released() {
    let grace = [("COORD_RELEASE_GRACE_SECONDS", "5")];
    let mut a = Server::start_with("killed-agent", &grace);
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    let (_, first) = holding_src_x(&mut a, &root);
    // The coordinator names the session with the next line it reads after registering
    // it (docs/mcp.md): an agent at work sends more than one.
    a.call(3, "check_locks", json!({}));
    let Server {
        mut child, _dir: dir, ..
    } = a;
    let relay = child.id();
    let recorded = root.join(".coord/processes").join(format!("{relay}.json"));
    wait_for(|| recorded.exists(), "the relay to record its session");
    signal(relay, "-KILL");
    let _ = child.wait();
    signal(first[0], "-KILL");
    assert!(gone(first[0]), "the coordinator did not die");
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(
        locks["locks"][0]["locked_by"], "killed-agent",
        "nobody released it yet: {locks}"
    );

    let witness = Server::start_at(&root, None, "witness", &grace);
    wait_for(
        || coord_json(&root, &["--json", "lock", "list"])["locks"] == json!([]),
        "the successor to end the killed relay's session",
    );
    let reaped = audit_of(&root, "cleanup_dead_agents");
    assert!(
        reaped.iter().any(|(_, ok)| *ok),
        "ended as a reaped session: {reaped:?}"
    );
    let dead = root.join(".coord/processes").join(format!("{relay}.json"));
    assert!(!dead.exists(), "the dead relay's record is gone");
    drop(witness);
    drop(dir);
}

/// As above, but the agent came back (a new `coord mcp` of the same agent, here one that
/// opens the database itself, so that the coordinator's death does not touch it) before
/// the coordinator died: the successor leaves the new session and its holdings alone, and
/// the old relay ends.
#[test]
fn a_successor_leaves_a_returned_agents_holdings_alone() {
    let mut a = Server::start_with("returning-agent", &[("COORD_RELEASE_GRACE_SECONDS", "3600")]);
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    let (_, first) = holding_src_x(&mut a, &root);
    let Server {
        mut child,
        stdin,
        _dir: dir,
        ..
    } = a;
    drop(stdin);
    let idle = wait_for_session(&root, "returning-agent", |s| s["status"] == "idle");
    let back = Server::start_at(&root, None, "returning-agent", &[("COORD_LOCAL_SERVER", "off")]);
    let active = wait_for_session(&root, "returning-agent", |s| s["status"] == "active");
    assert_ne!(active["session_id"], idle["session_id"]);
    signal(first[0], "-KILL");
    assert!(gone(first[0]), "the coordinator did not die");

    // The old relay's successor finds a newer session: nothing to end, and it says so.
    wait_for(
        || child.try_wait().unwrap().is_some_and(|status| status.success()),
        "the old relay to end",
    );
    let now = wait_for_session(&root, "returning-agent", |_| true);
    assert_eq!(
        (&now["session_id"], &now["status"]),
        (&active["session_id"], &json!("active")),
        "{now}"
    );
    let locks = coord_json(&root, &["--json", "lock", "list"]);
    assert_eq!(locks["locks"][0]["locked_by"], "returning-agent", "kept: {locks}");
    back.finish();
    drop(dir);
}

/// Waits (bounded, 20 s) until `done` holds.
fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The session of `agent` as `agents discover` shows it, once `wanted` holds (within 20 s).
fn wait_for_session(root: &std::path::Path, agent: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let agents = coord_json(root, &["--json", "agents", "discover"]);
        let session = agents["agents"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["agent_id"] == agent).cloned());
        if let Some(s) = session.filter(|s| wanted(s)) {
            return s;
        }
        assert!(std::time::Instant::now() < deadline, "{agents}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The spans a receiver got so far (one JSON object per line of `file`).
fn spans_in(file: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, an MCP tool call reaches a real OTLP/HTTP
/// receiver on loopback (OpenTelemetry's own protobuf definitions decode it) as a server
/// span named as the MCP conventions say, with the operation's span beneath it: the
/// operation, the agent, the outcome, the time in the store; a refused call is marked an
/// error on both. Exported by the process that ran the operation: here the repository's
/// coordinator behind `coord mcp`; a one-shot command exports its own before it exits.
#[test]
fn operations_are_exported_as_opentelemetry_spans() {
    let Some(python) = support::venv_tool(
        "COORD_TEST_PYTHON",
        "bin/python",
        &["-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"],
        "OpenTelemetry protobuf (opentelemetry-proto)",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let received = dir.path().join("spans.jsonl");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/otlp_receiver.py");
    let mut receiver = Command::new(python)
        .arg(&script)
        .arg(&received)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(receiver.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let endpoint = format!("http://127.0.0.1:{}", port.trim());
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("NO_PROXY", "127.0.0.1"),
    ];
    let mut a = Server::start_with("otel-agent", &env);
    let locked = a.call(2, "acquire_lock", json!({"file_path": "src/a.rs"}));
    assert_eq!(locked["success"], true, "{locked}");
    let refused = a.request(
        3,
        "tools/call",
        json!({"name": "acquire_lock", "arguments": {"reason": "no path"}}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let root = a._dir.as_ref().unwrap().path().to_path_buf();
    let released = Command::new(BIN)
        .args(["--json", "--agent-id", "otel-agent", "lock", "release", "src/a.rs"])
        .current_dir(&root)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("COORD_LOCAL_SERVER", "off")
        .output()
        .unwrap();
    assert!(released.status.success(), "{released:?}");
    // Exported in batches: wait (bounded) until the receiver has them all.
    let wanted = |spans: &[Value]| {
        spans.iter().filter(|s| s["name"] == "tools/call acquire_lock").count() >= 2
            && spans.iter().filter(|s| s["name"] == "acquire_lock").count() >= 2
            && spans.iter().any(|s| s["name"] == "release_lock")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !wanted(&spans_in(&received)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let spans = spans_in(&received);
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(wanted(&spans), "the receiver got: {spans:#?}");
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "tools/call acquire_lock")
        .collect();
    for call in &calls {
        assert_eq!(call["kind"], 2, "a server span: {call}");
        assert_eq!(call["service"], "coord");
        assert_eq!(call["attributes"]["mcp.method.name"], "tools/call");
        assert_eq!(call["attributes"]["gen_ai.tool.name"], "acquire_lock");
        assert_eq!(call["attributes"]["gen_ai.operation.name"], "execute_tool");
    }
    let under = |call: &Value| {
        spans
            .iter()
            .find(|s| s["name"] == "acquire_lock" && s["parent_span_id"] == call["span_id"])
            .unwrap_or_else(|| panic!("no operation span under {call}: {spans:#?}"))
            .clone()
    };
    let (ok, bad): (Vec<&Value>, Vec<&Value>) = calls.iter().partition(|c| c["status"] != 2);
    assert_eq!(
        (ok.len(), bad.len()),
        (1, 1),
        "one call answered, one refused: {calls:#?}"
    );
    let op = under(ok[0]);
    assert_eq!(op["attributes"]["coord.agent_id"], "otel-agent");
    assert_eq!(op["attributes"]["coord.outcome"], "ok");
    assert!(op["attributes"]["coord.store_ms"].as_f64().is_some(), "{op}");
    assert_eq!(bad[0]["attributes"]["error.type"], "tool_error");
    let op = under(bad[0]);
    assert_eq!(op["attributes"]["coord.outcome"], "invalid_argument");
    assert_eq!(
        (op["status"].as_i64(), op["attributes"]["error.type"].as_str()),
        (Some(2), Some("invalid_argument"))
    );
    let release = spans.iter().find(|s| s["name"] == "release_lock").unwrap();
    assert_eq!(release["attributes"]["coord.agent_id"], "otel-agent");
    assert_eq!(
        release["parent_span_id"], "",
        "a one-shot command's operation is a root span"
    );
    a.finish();
}
