//! The relay: `coord mcp` copying its agent's JSON-RPC lines to an MCP session that the
//! repository's coordinator serves ([`crate::serve_relayed`]), over a connection of the
//! coordinator's Unix socket upgraded from HTTP (`GET /mcp/stdio`, `Upgrade: coord-mcp`).
//!
//! Why: eight agents each running their own MCP server and their own client of the
//! coordinator reach a quarter of what the coordinator serves in-process; copying lines
//! on two plain threads, with the coordinator reading them, reaches about 0.6
//! (docs/benchmarks.md, "Many local agents").
//!
//! What the relay does beyond copying (it reads each line's `id` and `method`):
//! - **The coordinator dies**: the relay starts a new one (`reconnect`), sends it the
//!   agent's `initialize` again (its answer is not passed on) and `initialized`, and goes
//!   on; the agent keeps its connection. Each request that was sent and not answered is
//!   answered with an error saying its outcome is unknown (whatever the dead coordinator
//!   committed is in the database; it never commits half an operation).
//! - **The agent's input ends**: the relay tells the coordinator ([`INPUT_CLOSED`]) and
//!   waits for it to end the session (after the grace period), say so ([`CLOSED`]) and
//!   close the connection.
//! - **The process is told to stop** ([`Relay::terminate`]): the relay tells the
//!   coordinator ([`TERMINATE`]), which releases the session's holdings at once.
//! - **The coordinator dies after either** (during the grace period, say): the connection
//!   ends without [`CLOSED`], so the relay reconnects, asking for the session the
//!   coordinator named ([`SESSION`]: once registered, and again before its end began) to
//!   be ended rather than a new one started (`RelayRequest::ending`; a coordinator that
//!   cannot says so in its answer, [`VERSION_HEADER`]), replays the handshake and tells the
//!   successor again; the session's end is not lost with the coordinator that was to
//!   carry it out, and a newer session of the same agent (it came back) is left alone.
//! - **The relay is killed**: the coordinator sees the connection drop, which is the end
//!   of input: the holdings go after the grace period.
//! - Lines in the control namespace ([`CONTROL_PREFIX`]) from the agent are not passed on.

use crate::connection::{CLOSED, CONTROL_PREFIX, INPUT_CLOSED, SESSION, TERMINATE, control};
use crate::lines::{self, Partial, Read};
use crate::{IdentityConfig, McpOptions};
use coord_domain::{CoordError, CoordResult};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The path of the upgrade, and the protocol named in `Upgrade`.
pub const PATH: &str = "/mcp/stdio";
pub const UPGRADE: &str = "coord-mcp";
/// The header of the coordinator's `101` naming the relay protocol it speaks: since
/// [`RELAY_VERSION`] it honours [`RelayRequest::ending`].
pub const VERSION_HEADER: &str = "coord-relay-version";
pub const RELAY_VERSION: u32 = 2;

/// How long the coordinator may take to answer the upgrade.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// Reconnections in a row with no answer from the coordinator in between before the
/// relay gives up (a coordinator that dies on start every time).
const MAX_RECONNECTS: u32 = 3;

/// Attempts to reach a coordinator each time (about 3 s in all).
const RECONNECT_TRIES: u32 = 8;

/// Who the relayed connection speaks for and its settings: the query of the upgrade.
/// Unknown fields are refused, so that a newer relay's request is never half understood.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayRequest {
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    #[serde(default)]
    pub host: String,
    pub instance: Option<String>,
    /// `COORD_RELEASE_GRACE_SECONDS` as the process read it (seconds or `off`).
    pub grace: Option<String>,
    pub team: Option<String>,
    /// Ends this session instead of starting one: the relay's agent left and the
    /// coordinator that was ending its session died.
    #[serde(default)]
    pub ending: Option<String>,
    /// The agent runtime whose session the relaying `coord mcp` runs in (set: the
    /// connection gets the `Session` credential, never a person's decisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<String>,
    /// Where the relayed agent works: its worktree's root and branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The toolsets the relayed agent lists (`COORD_TOOLSETS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<String>,
    /// The relay hands its agent's pipes over instead of copying ([`crate::handover`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
}

impl RelayRequest {
    pub fn new(identity: &IdentityConfig, grace: Option<String>, team: Option<String>) -> Self {
        RelayRequest {
            agent_id: identity.agent_id.clone(),
            agent_type: identity.agent_type.clone(),
            host: identity.host.clone(),
            instance: identity.instance.clone(),
            grace,
            team,
            ending: None,
            agent_session: None,
            worktree: None,
            branch: None,
            toolsets: None,
            direct: false,
        }
    }

    /// The options of the session the coordinator serves for it.
    pub fn options(&self) -> CoordResult<McpOptions> {
        let mut options = McpOptions::stdio(IdentityConfig {
            agent_id: self.agent_id.clone(),
            agent_type: self.agent_type.clone(),
            host: self.host.clone(),
            instance: self.instance.clone(),
        });
        options.release_after = crate::parse_release_grace(self.grace.as_deref())?;
        options.team = self.team.clone().filter(|t| !t.trim().is_empty());
        options.ending_session = self.ending.clone();
        options.worktree = self.worktree.clone().filter(|w| !w.is_empty());
        options.branch = self.branch.clone().filter(|b| !b.is_empty());
        options.toolsets = self
            .toolsets
            .as_deref()
            .map(crate::toolsets::parse)
            .transpose()
            .map_err(|why| CoordError::new(coord_domain::ErrorCode::InvalidArgument, why))?;
        if self.agent_session.as_deref().is_some_and(|s| !s.is_empty()) {
            options.stdio_credential = coord_domain::access::Credential::Session;
        }
        Ok(options)
    }
}

/// A relayed connection: its two directions.
pub struct Link {
    pub reader: BufReader<UnixStream>,
    pub writer: UnixStream,
}

/// Connects to the coordinator at `socket` and upgrades the connection to a relayed MCP
/// session. An error means no session was started (no server, or one without relays).
pub fn connect(socket: &Path, request: &RelayRequest) -> io::Result<Link> {
    let stream = UnixStream::connect(socket)?;
    let query = serde_urlencoded::to_string(request).map_err(io::Error::other)?;
    let head =
        format!("GET {PATH}?{query} HTTP/1.1\r\nHost: coord\r\nConnection: Upgrade\r\nUpgrade: {UPGRADE}\r\n\r\n");
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    (&stream).write_all(head.as_bytes())?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut status = String::new();
    (&mut reader).take(4096).read_line(&mut status)?;
    if !status.starts_with("HTTP/1.1 101") {
        return Err(io::Error::other(format!(
            "the coordinator did not take the relay: {}",
            status.trim_end()
        )));
    }
    // The rest of the head, bounded: the session's bytes start after the blank line.
    let mut head_bytes = 0;
    let mut version = 1;
    loop {
        let mut line = String::new();
        let n = (&mut reader).take(4096).read_line(&mut line)?;
        head_bytes += n;
        if n == 0 || head_bytes > 64 * 1024 {
            return Err(io::Error::other("the coordinator's answer to the relay ended early"));
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case(VERSION_HEADER)
        {
            version = value.trim().parse().unwrap_or(1);
        }
    }
    if request.ending.is_some() && version < RELAY_VERSION {
        // An older coordinator would register a new session and end that one instead.
        return Err(io::Error::other(
            "the repository's coordinator cannot end a session for a relay (an older coord)",
        ));
    }
    stream.set_read_timeout(None)?;
    Ok(Link { reader, writer: stream })
}

/// A request waiting for its answer: its id's JSON, and whether it is a `tools/call`.
type Pending = (String, bool);

/// What the relay remembers of the conversation.
#[derive(Default)]
struct Book {
    /// Requests sent and not answered: the id's JSON, and whether it is a `tools/call`.
    in_flight: HashMap<String, bool>,
    /// The agent's `initialize` line and its id's JSON; whether it was answered, and the
    /// protocol version it was answered with.
    initialize: Option<(Vec<u8>, String)>,
    initialized: Option<Vec<u8>>,
    init_answered: bool,
    version: Option<String>,
    /// The id of a replayed `initialize`: its answer is not the agent's.
    replay: Option<String>,
    replays: u64,
    /// Lines whose write failed (the coordinator was gone: nothing of them was read),
    /// with their request id: sent again after reconnecting.
    unsent: Vec<(Vec<u8>, Option<Pending>)>,
    input_closed: bool,
    /// The session a coordinator last named ([`SESSION`]; kept across connections: a
    /// successor ending it names the same one), and whether the coordinator of this
    /// connection said it is done ([`CLOSED`]).
    ending: Option<String>,
    closed: bool,
}

/// Told each session the coordinator names ([`SESSION`]): the relaying process records
/// it, so that if it is killed and its coordinator dies too, a successor can still end it.
pub type SessionHook = Box<dyn Fn(&str) + Send + Sync>;

struct Shared {
    on_session: Option<SessionHook>,
    /// The coordinator's side; `None` while the relay reconnects. Taken before `book`
    /// by whoever takes both.
    writer: Mutex<Option<UnixStream>>,
    book: Mutex<Book>,
    out: Mutex<Stdio>,
    /// The process was told to stop. Set without any lock: the writer may be held for
    /// long (a reconnect, a coordinator that does not read).
    terminating: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The parts of a line the relay reads.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
}

/// A running relay.
pub struct Relay {
    shared: Arc<Shared>,
    down: Mutex<Option<std::thread::JoinHandle<io::Result<()>>>>,
}

/// How a relay reaches the coordinator again when its connection drops (starting a new
/// coordinator if need be); with a session, the connection only ends that one
/// ([`RelayRequest::ending`]).
pub type Reconnect = Box<dyn FnMut(Option<&str>) -> io::Result<Link> + Send>;

impl Relay {
    /// Relays this process's stdin and stdout over `link` on two threads.
    pub fn start(link: Link, reconnect: Reconnect) -> io::Result<Relay> {
        Relay::start_with(link, reconnect, None)
    }

    /// [`Relay::start`], telling `on_session` each session the coordinator names.
    pub fn start_with(link: Link, reconnect: Reconnect, on_session: Option<SessionHook>) -> io::Result<Relay> {
        let (stdin, stdout) = (Stdio::input()?, Stdio::output()?);
        let shared = Arc::new(Shared {
            on_session,
            writer: Mutex::new(Some(link.writer)),
            book: Mutex::new(Book::default()),
            out: Mutex::new(stdout),
            terminating: Default::default(),
        });
        let up_shared = shared.clone();
        std::thread::Builder::new()
            .name("relay-up".into())
            .spawn(move || up(&up_shared, stdin))?;
        let down_shared = shared.clone();
        let down = std::thread::Builder::new()
            .name("relay-down".into())
            .spawn(move || down(&down_shared, link.reader, reconnect))?;
        Ok(Relay {
            shared,
            down: Mutex::new(Some(down)),
        })
    }

    /// The process was told to stop: the coordinator releases the session's holdings at
    /// once and closes the connection.
    /// Blocks while the writer is busy (a reconnect sends it itself then): call it off
    /// the async runtime, under a time limit.
    pub fn terminate(&self) {
        self.shared.terminating.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut writer = lock(&self.shared.writer);
        if let Some(w) = writer.as_mut() {
            let _ = w.write_all(&control(TERMINATE));
        }
    }

    /// Waits until the coordinator has closed the session (or the agent is gone).
    pub fn wait(&self) -> io::Result<()> {
        match lock(&self.down).take() {
            Some(down) => down
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the relay thread panicked"))),
            None => Ok(()),
        }
    }
}

/// The agent's lines to the coordinator.
fn up(shared: &Shared, stdin: Stdio) {
    let mut input = BufReader::with_capacity(1 << 16, stdin);
    let mut partial = Partial::default();
    loop {
        match lines::next_blocking(&mut input, &mut partial, lines::MAX_LINE) {
            Ok(Read::Line) => {}
            Ok(Read::TooLong) => {
                tracing::warn!("dropped a message over {} bytes", lines::MAX_LINE);
                continue;
            }
            Ok(Read::Eof) | Err(_) => break,
        }
        let mut line = std::mem::take(&mut partial.line);
        let head = crate::connection::parse::<Head>(&line);
        let method = head.as_ref().and_then(|h| h.method.as_deref());
        if method.is_some_and(|m| m.starts_with(CONTROL_PREFIX)) {
            if let Some(id) = head.as_ref().and_then(|h| h.id.as_ref()) {
                let mut refused = json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "method not found"}})
                .to_string()
                .into_bytes();
                refused.push(b'\n');
                let _ = lock(&shared.out).write_line(refused);
            }
            continue;
        }
        line.push(b'\n');
        let mut writer = lock(&shared.writer);
        {
            if shared.terminating.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let mut book = lock(&shared.book);
            if let Some(h) = &head {
                note_request(&mut book, h, &line);
            }
        }
        // A failed write is the coordinator gone before it read any of the line (a
        // closed socket takes nothing): the other thread reconnects and sends it again.
        let sent = writer.as_mut().is_some_and(|w| w.write_all(&line).is_ok());
        let handshake = matches!(method, Some("initialize" | "notifications/initialized"));
        if !sent && !handshake {
            let mut book = lock(&shared.book);
            let request = head.as_ref().and_then(|h| h.id.as_ref()).map(Value::to_string);
            let request = request.and_then(|k| book.in_flight.remove(&k).map(|tool| (k, tool)));
            book.unsent.push((line, request));
        }
    }
    let mut writer = lock(&shared.writer);
    lock(&shared.book).input_closed = true;
    if let Some(w) = writer.as_mut() {
        let _ = w.write_all(&control(INPUT_CLOSED));
    }
}

fn note_request(book: &mut Book, head: &Head, line: &[u8]) {
    let (Some(id), Some(method)) = (&head.id, head.method.as_deref()) else {
        match head.method.as_deref() {
            Some("notifications/initialized") => book.initialized = Some(line.to_vec()),
            // A cancelled call may never be answered: not one to answer for if the
            // coordinator dies.
            Some("notifications/cancelled") => {
                if let Some(key) = cancelled_request(line) {
                    book.in_flight.remove(&key);
                    // One waiting to be sent again is still sent (its cancellation
                    // follows it), but no longer answered for either.
                    for (_, request) in &mut book.unsent {
                        if request.as_ref().is_some_and(|(k, _)| *k == key) {
                            *request = None;
                        }
                    }
                }
            }
            _ => {}
        }
        return;
    };
    let key = id.to_string();
    if method == "initialize" {
        book.initialize = Some((line.to_vec(), key.clone()));
        book.init_answered = false;
    }
    book.in_flight.insert(key, method == "tools/call");
}

/// The JSON of the request id a `notifications/cancelled` line names.
fn cancelled_request(line: &[u8]) -> Option<String> {
    params_of(line)?.get("requestId").map(Value::to_string)
}

/// The `params` of a line, read only for the rare lines the relay acts on (`Head`, read
/// for every line, leaves them unparsed).
fn params_of(line: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct WithParams {
        params: Option<Value>,
    }
    crate::connection::parse::<WithParams>(line)?.params
}

/// The coordinator's lines to the agent; reconnects when the coordinator goes away while
/// the agent is still there.
fn down(shared: &Shared, mut reader: BufReader<UnixStream>, mut reconnect: Reconnect) -> io::Result<()> {
    let mut partial = Partial::default();
    let mut reconnects = 0;
    loop {
        match lines::next_blocking(&mut reader, &mut partial, usize::MAX) {
            Ok(Read::Line) => {}
            Ok(Read::TooLong) => continue,
            Ok(Read::Eof) | Err(_) => {
                let ending = {
                    let book = lock(&shared.book);
                    let leaving = book.input_closed || shared.terminating.load(std::sync::atomic::Ordering::SeqCst);
                    match (leaving, &book.ending) {
                        (false, _) => None,
                        // Without `CLOSED` the coordinator died before it had ended the
                        // session it named: a successor ends it instead.
                        (true, Some(session)) if !book.closed => Some(session.clone()),
                        // Done, or it died before naming one (then its end is left to
                        // the session's TTLs and the stale-session cleanup).
                        (true, _) => return Ok(()),
                    }
                };
                reconnects += 1;
                if reconnects > MAX_RECONNECTS {
                    if ending.is_some() {
                        tracing::info!("no coordinator lasted long enough to end the session");
                        return Ok(());
                    }
                    return Err(io::Error::other(format!(
                        "the repository's coordinator stopped {MAX_RECONNECTS} times in a row without answering"
                    )));
                }
                reader = match again(shared, &mut reconnect, ending.as_deref()) {
                    Ok(reader) => reader,
                    Err(e) if ending.is_some() => {
                        // The agent is gone: nothing to fail for (a removed checkout, say).
                        tracing::info!(error = %e, "no coordinator to end the session");
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                };
                continue;
            }
        }
        let mut line = std::mem::take(&mut partial.line);
        let head = crate::connection::parse::<Head>(&line);
        if let Some(Head {
            id: None,
            method: Some(method),
        }) = &head
            && method.starts_with(CONTROL_PREFIX)
        {
            match method.as_str() {
                CLOSED => lock(&shared.book).closed = true,
                SESSION => {
                    let named = ending_session(&line);
                    if let (Some(hook), Some(session)) = (&shared.on_session, &named) {
                        hook(session);
                    }
                    lock(&shared.book).ending = named;
                }
                _ => {}
            }
            continue; // the coordinator's word to the relay, not the agent's
        }
        if let Some(Head {
            id: Some(id),
            method: None,
        }) = head
        {
            let key = id.to_string();
            let mut book = lock(&shared.book);
            book.in_flight.remove(&key);
            if book.replay.as_deref() == Some(key.as_str()) {
                book.replay = None;
                reconnects = 0;
                continue;
            }
            if book.initialize.as_ref().is_some_and(|(_, k)| *k == key) {
                book.init_answered = true;
                book.version = serde_json::from_slice::<Value>(&line)
                    .ok()
                    .and_then(|v| v["result"]["protocolVersion"].as_str().map(str::to_string));
            }
        }
        reconnects = 0;
        line.push(b'\n');
        if lock(&shared.out).write_line(line).is_err() {
            return Ok(()); // the agent is gone
        }
    }
}

/// Reconnects: answers the requests in flight (their outcome is unknown), reaches a
/// coordinator (starting one), and replays the handshake. The agent's writes wait.
fn again(shared: &Shared, reconnect: &mut Reconnect, ending: Option<&str>) -> io::Result<BufReader<UnixStream>> {
    let mut writer = lock(&shared.writer);
    *writer = None;
    let (lost, legacy) = {
        let mut book = lock(&shared.book);
        let unanswered_init = match (&book.initialize, book.init_answered) {
            (Some((_, key)), false) => Some(key.clone()),
            _ => None,
        };
        let lost: Vec<(String, bool)> = book
            .in_flight
            .drain()
            .filter(|(key, _)| Some(key) != unanswered_init.as_ref())
            .collect();
        if let Some(key) = unanswered_init {
            book.in_flight.insert(key, false);
        }
        let legacy = book
            .version
            .as_deref()
            .is_none_or(|v| v < crate::connection::RESULT_TYPE_SINCE);
        (lost, legacy)
    };
    tracing::warn!(
        unanswered = lost.len(),
        "the repository's coordinator went away; starting a new one"
    );
    for (id, tool) in lost {
        let _ = lock(&shared.out).write_line(unknown_outcome(&id, tool, legacy));
    }
    // A successor that fails right after the upgrade is tried again like the first.
    for _ in 0..RECONNECT_TRIES {
        let mut link = reach(reconnect, ending)?;
        let replay = replay(shared);
        if link.writer.write_all(&replay).is_err() {
            continue;
        }
        {
            let mut book = lock(&shared.book);
            book.closed = false;
            for (_, request) in std::mem::take(&mut book.unsent) {
                if let Some((key, tool)) = request {
                    book.in_flight.insert(key, tool);
                }
            }
        }
        // Told to stop while reconnecting, or leaving when the last one died: the new
        // coordinator is told at once.
        if shared.terminating.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = link.writer.write_all(&control(TERMINATE));
        } else if lock(&shared.book).input_closed {
            let _ = link.writer.write_all(&control(INPUT_CLOSED));
        }
        *writer = Some(link.writer);
        return Ok(link.reader);
    }
    Err(io::Error::other(
        "the repository's coordinator fails as soon as it is reached",
    ))
}

/// What a new coordinator is sent first: the agent's handshake (its `initialize` under
/// an id of the relay's when it was answered already), then the lines that never reached
/// the dead one.
fn replay(shared: &Shared) -> Vec<u8> {
    let mut book = lock(&shared.book);
    let mut replay = Vec::new();
    if let Some((line, key)) = book.initialize.clone() {
        if book.init_answered {
            book.replays += 1;
            let id = json!(format!("coord-relay-replay-{}-{}", std::process::id(), book.replays));
            replay.extend(with_id(&line, &id));
            book.replay = Some(id.to_string());
        } else {
            replay.extend(line);
            book.in_flight.insert(key, false);
        }
    }
    if let Some(line) = &book.initialized {
        replay.extend(line);
    }
    for (line, _) in &book.unsent {
        replay.extend(line);
    }
    replay
}

/// A coordinator again, trying a few times: the dying one's listener may still take a
/// connection (and reset it), and a successor may fail to start while it goes away.
fn reach(reconnect: &mut Reconnect, ending: Option<&str>) -> io::Result<Link> {
    let mut wait = Duration::from_millis(25);
    for _ in 1..RECONNECT_TRIES {
        match reconnect(ending) {
            Ok(link) => return Ok(link),
            Err(e) => tracing::info!(error = %e, "reconnecting to the repository's coordinator"),
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_millis(800));
    }
    reconnect(ending)
}

/// The session a [`SESSION`] line names.
fn ending_session(line: &[u8]) -> Option<String> {
    params_of(line)?.get("session_id")?.as_str().map(str::to_string)
}

/// `line` (a JSON-RPC request and its newline) with `id` instead of its own.
fn with_id(line: &[u8], id: &Value) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(line).unwrap_or_default();
    if let Some(fields) = v.as_object_mut() {
        fields.insert("id".into(), id.clone());
    }
    let mut out = v.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// The answer to a request the coordinator received and died on.
fn unknown_outcome(id_json: &str, tool: bool, legacy: bool) -> Vec<u8> {
    let id: Value = serde_json::from_str(id_json).unwrap_or(Value::Null);
    let mut error = CoordError::unavailable(
        "the repository's coordinator stopped while this call was running, so whether it took effect is \
         unknown; a new coordinator has been started: check the state (check_locks, list_tasks, …) before \
         calling again",
    );
    error.details.insert("outcome".into(), json!("unknown"));
    if tool {
        let answer = rmcp::model::CallToolResult::structured_error(error.to_value());
        return crate::connection::response(&id, answer, legacy);
    }
    let mut line = json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": -32603, "message": error.message, "data": error.to_value()}})
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// This process's stdin or stdout for a blocking thread. A pipe is reopened through
/// `/proc/self/fd` (an open file description of our own, in blocking mode whatever the
/// inherited one's); anything else is a duplicate of the descriptor, on which a
/// non-blocking mode set by a parent is waited out with `poll`.
struct Stdio(std::fs::File);

impl Stdio {
    fn input() -> io::Result<Stdio> {
        Stdio::open(0, false)
    }

    fn output() -> io::Result<Stdio> {
        Stdio::open(1, true)
    }

    fn open(fd: i32, write: bool) -> io::Result<Stdio> {
        use std::os::fd::AsFd as _;
        if let Ok(Some(f)) = crate::stdio::reopen_pipe(fd, write) {
            // Our own description: blocking again, for this thread's plain reads.
            rustix::io::ioctl_fionbio(&f, false)?;
            return Ok(Stdio(f));
        }
        let inherited = if write {
            io::stdout().as_fd().try_clone_to_owned()?
        } else {
            io::stdin().as_fd().try_clone_to_owned()?
        };
        Ok(Stdio(std::fs::File::from(inherited)))
    }

    fn wait(&self, flags: rustix::event::PollFlags) -> io::Result<()> {
        let mut fds = [rustix::event::PollFd::new(&self.0, flags)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn write_line(&mut self, line: Vec<u8>) -> io::Result<()> {
        self.write_all(&line)
    }
}

impl io::Read for Stdio {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(rustix::event::PollFlags::IN)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }
}

impl io::Write for Stdio {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.0.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(rustix::event::PollFlags::OUT)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(v: Value) -> Head {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_book_keeps_requests_and_the_handshake() {
        let mut book = Book::default();
        // A call whose write failed (the coordinator was gone), waiting to be sent again.
        book.unsent.push((b"{}".to_vec(), Some(("5".into(), true))));
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "y"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "4"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}),
        ];
        for l in &lines {
            note_request(&mut book, &head(l.clone()), l.to_string().as_bytes());
        }
        let mut in_flight: Vec<_> = book.in_flight.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        in_flight.sort();
        // The cancelled call is no longer one to answer for; a cancellation without an id,
        // or naming no request of ours, changes nothing.
        assert_eq!(in_flight, [("\"a\"", true), ("1", false), ("3", false)]);
        assert_eq!(book.unsent.len(), 1, "still sent again");
        assert_eq!(book.unsent[0].1, None, "but not answered for");
        assert_eq!(book.initialize.as_ref().map(|(_, k)| k.as_str()), Some("1"));
        assert_eq!(book.initialized.as_deref(), Some(lines[1].to_string().as_bytes()));
    }

    #[test]
    fn a_replayed_initialize_has_its_own_id() {
        let line = format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": 1}})
        );
        let replayed: Value = serde_json::from_slice(&with_id(line.as_bytes(), &json!("r-1"))).unwrap();
        assert_eq!(
            replayed,
            json!({"jsonrpc": "2.0", "id": "r-1", "method": "initialize", "params": {"x": 1}})
        );
    }

    #[test]
    fn lost_requests_are_answered_with_an_unknown_outcome() {
        let tool: Value = serde_json::from_slice(&unknown_outcome("\"a\"", true, true)).unwrap();
        assert_eq!(tool["id"], "a");
        assert_eq!(tool["result"]["isError"], true);
        assert_eq!(tool["result"]["structuredContent"]["outcome"], "unknown", "{tool}");
        assert_eq!(tool["result"]["structuredContent"]["error"], "database_unavailable");
        let other: Value = serde_json::from_slice(&unknown_outcome("7", false, true)).unwrap();
        assert_eq!(other["id"], 7);
        assert_eq!(other["error"]["code"], -32603);
        assert_eq!(other["error"]["data"]["outcome"], "unknown", "{other}");
    }

    #[test]
    fn the_upgrade_query_round_trips_and_validates_the_grace() {
        let identity = IdentityConfig {
            agent_id: Some("a b&c=d".into()),
            agent_type: None,
            host: "h".into(),
            instance: Some("p1".into()),
        };
        let request = RelayRequest::new(&identity, Some("off".into()), Some("backend".into()));
        let query = serde_urlencoded::to_string(&request).unwrap();
        let back: RelayRequest = serde_urlencoded::from_str(&query).unwrap();
        assert_eq!(back, request);
        let options = back.options().unwrap();
        assert_eq!(options.release_after, None);
        assert_eq!(options.team.as_deref(), Some("backend"));
        assert_eq!(options.identity.agent_id.as_deref(), Some("a b&c=d"));
        let ending = RelayRequest {
            ending: Some("s-1".into()),
            ..request.clone()
        };
        let back: RelayRequest = serde_urlencoded::from_str(&serde_urlencoded::to_string(&ending).unwrap()).unwrap();
        assert_eq!(back.options().unwrap().ending_session.as_deref(), Some("s-1"));
        let newer = format!("{query}&resume_from=7");
        assert!(
            serde_urlencoded::from_str::<RelayRequest>(&newer).is_err(),
            "a field it does not know"
        );
        let bad = RelayRequest {
            grace: Some("forever".into()),
            ..request
        };
        assert!(bad.options().is_err());
    }

    /// A coordinator that does not name the relay protocol it speaks (an older one) is not
    /// asked to end a session: it would start a new one instead.
    #[test]
    fn only_a_coordinator_that_says_so_is_asked_to_end_a_session() {
        let dir = tempfile::tempdir().unwrap();
        for (header, ending, taken) in [
            ("", None, true),
            ("", Some("s-1"), false),
            ("Coord-Relay-Version: 2\r\n", Some("s-1"), true),
            ("coord-relay-version: 1\r\n", Some("s-1"), false),
        ] {
            let socket = dir.path().join("c.sock");
            let _ = std::fs::remove_file(&socket);
            let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            let server = std::thread::spawn(move || {
                let (mut stream, _) = listener.accept().unwrap();
                let mut head = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                while reader.read_line(&mut head).unwrap() > 2 {
                    head.clear();
                }
                let answer = format!("HTTP/1.1 101 Switching Protocols\r\nupgrade: coord-mcp\r\n{header}\r\n");
                stream.write_all(answer.as_bytes()).unwrap();
            });
            let request = RelayRequest {
                ending: ending.map(str::to_string),
                ..Default::default()
            };
            assert_eq!(connect(&socket, &request).is_ok(), taken, "{header:?} {ending:?}");
            server.join().unwrap();
        }
    }
}
