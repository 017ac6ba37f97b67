//! One MCP connection over a byte stream (`serve_relayed`, which `serve_stdio` shares):
//! the short path for `tools/call` answers what rmcp answers, and the relay's control
//! lines end the session as the signals and the end of input do.

use coord_domain::Caller;
use coord_domain::audit::AuditQueryRequest;
use coord_mcp::{IdentityConfig, McpOptions};
use coord_service::CoordinationExt as _;
use coord_service::{CoordConfig, Coordinator, DatabaseClock};
use coord_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, ReadHalf, WriteHalf};

struct Peer {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The `coord/session` lines the server wrote (the relay's, set aside by `next`).
    sessions: Vec<Value>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
    }

    /// The next line the server writes (bounded wait: a hang fails the test), the
    /// `coord/session` lines set aside.
    async fn next(&mut self) -> Option<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("the server answers")
                .unwrap()?;
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["method"] != coord_mcp::SESSION {
                return Some(v);
            }
            self.sessions.push(v);
        }
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = self.next().await.expect("an answer");
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }
}

fn coordinator() -> (tempfile::TempDir, Arc<Coordinator>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let coord = Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default());
    (dir, Arc::new(coord))
}

/// A relayed connection to `coord`, initialized, for agent `id`.
async fn connect(coord: &Arc<Coordinator>, id: &str, release_after: Option<Duration>) -> Peer {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let options = McpOptions {
        release_after,
        ..McpOptions::stdio(IdentityConfig {
            agent_id: Some(id.into()),
            agent_type: Some("claude_code".into()),
            host: "box".into(),
            instance: None,
        })
    };
    let (r, w) = tokio::io::split(theirs);
    let served = tokio::spawn(coord_mcp::serve_relayed(coord.clone(), options, r, w));
    let (r, writer) = tokio::io::split(ours);
    let mut peer = Peer {
        lines: BufReader::new(r).lines(),
        writer,
        served,
        sessions: Vec::new(),
    };
    let init = peer
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "conn-test", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "coord", "{init}");
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    peer
}

/// The same calls through the short path (plain) and through rmcp (`_meta` sends them
/// there) answer the same JSON, and are audited as the same agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_short_path_answers_what_rmcp_answers() {
    let (_dir, coord) = coordinator();
    let mut peer = connect(&coord, "agent-s", None).await;
    let calls = [
        ("check_locks", json!({})),
        ("acquire_lock", json!({"file_path": "a\u{0}b"})),
        ("submit_work", json!({"task_type": 7})),
        ("release_lock", json!({"file_path": "src/never-held.rs"})),
        ("get_work", json!({"task_types": ["none-such"]})),
    ];
    let short_before = coord_mcp::short_path_calls();
    let mut id = 10;
    for (tool, args) in calls {
        id += 1;
        let short = peer
            .request(id, "tools/call", json!({"name": tool, "arguments": args}))
            .await;
        id += 1;
        let through_rmcp = peer
            .request(id, "tools/call", json!({"name": tool, "arguments": args, "_meta": {}}))
            .await;
        assert_eq!(
            short["result"], through_rmcp["result"],
            "{tool}: {short} / {through_rmcp}"
        );
        assert!(short["result"]["content"].is_array(), "{short}");
    }
    assert!(
        coord_mcp::short_path_calls() >= short_before + 5,
        "the plain calls took the short path"
    );
    // What only rmcp answers still works on the same connection.
    let tools = peer.request(40, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| t.len() > 10));
    let unknown = peer
        .request(41, "tools/call", json!({"name": "rm_rf", "arguments": {}}))
        .await;
    assert!(unknown["error"].is_object(), "{unknown}");

    // Both refusals of the path with a NUL are in the trail as the agent's own.
    let me = Caller::new("agent-s", "claude_code");
    let audit = coord
        .query_audit(
            &me,
            AuditQueryRequest {
                operation: Some("acquire_lock".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let callers: Vec<&str> = audit.entries.iter().map(|e| e.agent_id.as_str()).collect();
    assert_eq!(callers, ["agent-s", "agent-s"], "both paths act as the agent");
}

async fn held(coord: &Coordinator) -> usize {
    let observer = Caller::new("observer", "test");
    coord
        .check_locks(&observer, Default::default())
        .await
        .unwrap()
        .locks
        .len()
}

/// `coord/terminate`: the holdings go at once, whatever the grace period, and the server
/// closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_releases_at_once_and_closes() {
    let (_dir, coord) = coordinator();
    let mut peer = connect(&coord, "agent-t", Some(Duration::from_secs(3600))).await;
    let got = peer
        .request(
            2,
            "tools/call",
            json!({"name": "acquire_lock", "arguments": {"file_path": "src/t.rs"}}),
        )
        .await;
    assert_eq!(got["result"]["structuredContent"]["success"], true, "{got}");
    peer.send(json!({"jsonrpc": "2.0", "method": coord_mcp::TERMINATE}))
        .await;
    // It says when the session's end is done: by then the lock is free.
    assert_eq!(peer.next().await, Some(closed()));
    assert_sessions(&peer, &coord, "agent-t").await;
    assert_eq!(held(&coord).await, 0);
    assert_eq!(peer.next().await, None, "the server closes the connection");
    peer.served.await.unwrap().unwrap();
}

fn closed() -> Value {
    json!({"jsonrpc": "2.0", "method": coord_mcp::CLOSED})
}

/// The relay was told `agent`'s session once it was registered (with the first line read
/// after it) and again before its end began.
async fn assert_sessions(peer: &Peer, coord: &Coordinator, agent: &str) {
    let observer = Caller::new("observer", "test");
    let agents = coord.discover_agents(&observer, Default::default()).await.unwrap();
    let session = agents
        .agents
        .iter()
        .find(|a| a.agent_id == agent)
        .map(|a| a.session_id.clone());
    let expected = json!({"jsonrpc": "2.0", "method": coord_mcp::SESSION, "params": {"session_id": session}});
    assert_eq!(peer.sessions, [expected.clone(), expected]);
}

/// `coord/input_closed`: the session goes idle and, after the grace period (0 here), its
/// holdings go; then the server closes. With a long grace period, a later
/// `coord/terminate` releases at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_closed_ends_the_session_and_terminate_cuts_the_grace_short() {
    let (_dir, coord) = coordinator();
    for (grace, then_terminate) in [(0, false), (3600, true)] {
        let mut peer = connect(&coord, "agent-i", Some(Duration::from_secs(grace))).await;
        let got = peer
            .request(
                2,
                "tools/call",
                json!({"name": "acquire_lock", "arguments": {"file_path": "src/i.rs"}}),
            )
            .await;
        assert_eq!(got["result"]["structuredContent"]["success"], true, "{got}");
        peer.send(json!({"jsonrpc": "2.0", "method": coord_mcp::INPUT_CLOSED}))
            .await;
        // Lines after the end of input are not served.
        peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "check_locks", "arguments": {}}}))
            .await;
        if then_terminate {
            peer.send(json!({"jsonrpc": "2.0", "method": coord_mcp::TERMINATE}))
                .await;
        }
        // Nothing answered after the end of input.
        assert_eq!(peer.next().await, Some(closed()));
        assert_sessions(&peer, &coord, "agent-i").await;
        assert_eq!(held(&coord).await, 0, "grace {grace}");
        assert_eq!(peer.next().await, None, "closed");
        peer.served.await.unwrap().unwrap();
    }
}

/// `notifications/cancelled` stops a call of the short path (rmcp never saw it, so only the
/// connection can): it is never answered, and the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_not_answered() {
    let (dir, coord) = coordinator();
    let mut peer = connect(&coord, "agent-c", None).await;
    // Another connection's write lock keeps this call waiting until it is cancelled.
    let other = rusqlite::Connection::open(dir.path().join("c.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let acquire = json!({"name": "acquire_lock", "arguments": {"file_path": "src/c.rs"}});
    peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": acquire}))
        .await;
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user pressed Esc"}}))
        .await;
    // The connection still serves rmcp's requests meanwhile.
    peer.request(8, "ping", json!({})).await;
    other.execute_batch("ROLLBACK").unwrap();
    // A write after it: had the cancelled call still been running, it would have been
    // answered by the time this one is (writes run in order; answers are written as
    // their calls end, before the next line is read).
    let again = peer.request(9, "tools/call", acquire.clone()).await;
    assert_eq!(again["result"]["structuredContent"]["success"], true, "{again}");
    peer.send(json!({"jsonrpc": "2.0", "id": 10, "method": "ping"})).await;
    let next = peer.next().await.expect("the ping's answer");
    assert_eq!(next["id"], 10, "the cancelled call was answered: {next}");
    // A cancellation naming nothing under way is rmcp's to ignore.
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}))
        .await;
    peer.request(11, "ping", json!({})).await;
}

/// Sends `fds` with one byte `tag` on `socket`, as a `coord mcp` handing its pipes over.
fn send_fds(socket: &std::os::unix::net::UnixStream, tag: u8, fds: &[std::os::fd::BorrowedFd<'_>]) {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
    }
    sendmsg(
        socket,
        &[std::io::IoSlice::new(&[tag])],
        &mut control,
        SendFlags::empty(),
    )
    .unwrap();
}

/// A hand-over (`COORD_MCP_DIRECT`): the coordinator serves the agent on the two pipes it
/// was sent, tells the session and its end on the socket; anything but two pipes with
/// the hand-over's byte is refused without serving anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_over_serves_two_pipes_and_refuses_anything_else() {
    use std::io::{BufRead as _, Write as _};
    use std::os::fd::AsFd as _;
    let (_dir, coord) = coordinator();
    // No grace period: the session ends as soon as the agent leaves.
    let options = || McpOptions {
        release_after: None,
        ..McpOptions::stdio(IdentityConfig {
            agent_id: Some("agent-h".into()),
            agent_type: Some("claude_code".into()),
            host: "box".into(),
            instance: None,
        })
    };
    let serve = |socket: std::os::unix::net::UnixStream| {
        socket.set_nonblocking(true).unwrap();
        let socket = tokio::net::UnixStream::from_std(socket).unwrap();
        tokio::spawn(coord_mcp::handover::serve(coord.clone(), options(), socket))
    };
    let (agent_in, ours_in) = std::io::pipe().unwrap(); // the agent writes ours_in
    let (ours_out, agent_out) = std::io::pipe().unwrap(); // the agent reads ours_out
    let file = tempfile::tempfile().unwrap();
    let refused: [(&str, u8, Vec<std::os::fd::BorrowedFd<'_>>); 4] = [
        ("no descriptors", b'P', vec![]),
        ("one pipe", b'P', vec![agent_in.as_fd()]),
        (
            "three descriptors",
            b'P',
            vec![agent_in.as_fd(), agent_out.as_fd(), file.as_fd()],
        ),
        ("files, not pipes", b'P', vec![file.as_fd(), file.as_fd()]),
    ];
    for (what, tag, fds) in refused {
        let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        let served = serve(server);
        send_fds(&client, tag, &fds);
        let outcome = served.await.unwrap();
        assert!(outcome.is_err(), "{what}: served");
    }
    let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
    let served = serve(server);
    send_fds(&client, b'X', &[agent_in.as_fd(), agent_out.as_fd()]);
    assert!(served.await.unwrap().is_err(), "another byte: served");
    let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
    let served = serve(server);
    drop(client);
    assert!(served.await.unwrap().is_err(), "nothing sent: served");

    let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
    let served = serve(server);
    send_fds(&client, b'P', &[agent_in.as_fd(), agent_out.as_fd()]);
    drop((agent_in, agent_out));
    let mut to_server = ours_in;
    let mut from_server = std::io::BufReader::new(ours_out);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "conn-test", "version": "1"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "acquire_lock", "arguments": {"file_path": "src/h.rs"}}});
    let lines = tokio::task::spawn_blocking(move || {
        let mut answers = Vec::new();
        for message in [
            init,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call,
        ] {
            writeln!(to_server, "{message}").unwrap();
            if message.get("id").is_some() {
                let mut line = String::new();
                from_server.read_line(&mut line).unwrap();
                answers.push(serde_json::from_str::<Value>(&line).unwrap());
            }
        }
        drop(to_server); // the agent leaves
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut from_server, &mut rest).unwrap();
        answers
    });
    let answers = lines.await.unwrap();
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "coord", "{answers:?}");
    assert_eq!(
        answers[1]["result"]["structuredContent"]["success"], true,
        "{answers:?}"
    );
    served.await.unwrap().unwrap();
    // On the socket: the session, then its end.
    let control: Vec<Value> = std::io::BufReader::new(client)
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(control.len(), 2, "{control:?}");
    assert_eq!(control[0]["method"], coord_mcp::SESSION, "{control:?}");
    assert_eq!(control[1], closed());
}
