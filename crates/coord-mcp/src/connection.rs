//! One MCP connection over a byte stream: `coord mcp`'s stdin and stdout, or a `coord mcp`
//! relayed into the repository's coordinator (see [`crate::relay`]).
//!
//! The lines are read here. A `tools/call` of a known tool goes straight to the operation
//! registry, as a future of the connection's task; everything else (the handshake, `tools/list`, resources,
//! pings, anything malformed) goes to rmcp over an in-memory pipe, so rmcp still owns
//! the protocol. Why: per call, rmcp's dispatch and its JSON handling cost about as much
//! as the coordination operation itself (`coord bench mcp`, docs/benchmarks.md), and
//! `tools/call` is nearly all the traffic. Only calls whose shape is plain take the short
//! path: the tool is one of ours, the arguments are an object, and the protocol was
//! negotiated through `initialize` without per-request negotiation in `_meta`. Both paths
//! answer the same bytes (tested against rmcp in `tests/connection.rs`).

use crate::lines::{self, Partial, Read};
use crate::{CoordMcp, reply};
use coord_domain::access::Effect;
use coord_service::OpEntry;
use futures_util::future::{AbortHandle, AbortRegistration, Abortable};
use rmcp::ServiceExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};

/// Control lines a relay sends for its `coord mcp` process (never an agent's: the relay
/// drops agent lines in this namespace). Honoured only on relayed connections.
pub const CONTROL_PREFIX: &str = "coord/";
/// The agent's input ended (its runtime closed the pipe): the session ends as at end of
/// input, and the connection stays open for [`TERMINATE`].
pub const INPUT_CLOSED: &str = "coord/input_closed";
/// The `coord mcp` process was told to stop (SIGTERM, SIGINT, SIGHUP): its agent is
/// leaving, so the session's holdings go at once.
pub const TERMINATE: &str = "coord/terminate";
/// The coordinator's last line on a relayed connection: the session was ended as the
/// relay asked. A relay that asked ([`INPUT_CLOSED`], [`TERMINATE`]) and sees the
/// connection end without it knows the coordinator died first, and takes the session's
/// end to a successor.
pub const CLOSED: &str = "coord/closed";
/// Sent to the relay once the connection's session is known (it registered) and again
/// before its end begins: `{"session_id": …}`, the session a successor is to end if this
/// coordinator dies while the relay is leaving, before [`CLOSED`].
pub const SESSION: &str = "coord/session";

/// A control line: a JSON-RPC notification of `method`, with its newline.
pub(crate) fn control(method: &str) -> Vec<u8> {
    control_with(method, None)
}

fn session_line(session: &str) -> Vec<u8> {
    control_with(SESSION, Some(serde_json::json!({ "session_id": session })))
}

pub(crate) fn control_with(method: &str, params: Option<Value>) -> Vec<u8> {
    let mut message = serde_json::json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The first version whose results carry `resultType` (rmcp strips it for older peers).
pub(crate) const RESULT_TYPE_SINCE: &str = "2026-07-28";

/// How long, after the end of input, calls under way may take to be answered (rmcp's
/// own drain waits 5 s); told to stop, none is waited for.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Calls the short path answered (for tests: that it did).
static SHORT_PATH_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many calls the short path has answered in this process.
#[doc(hidden)]
pub fn short_path_calls() -> u64 {
    SHORT_PATH_CALLS.load(std::sync::atomic::Ordering::Relaxed)
}

/// A JSON-RPC message's fields, from a line holding a JSON object only: serde would also
/// read a struct from an array (`[id, method, …]`), which rmcp does not take, so neither
/// does anything that decides on a line before rmcp.
pub(crate) fn parse<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Option<T> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    serde_json::from_slice(line).ok()
}

/// The parts of a JSON-RPC message the dispatch looks at.
#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
}

#[derive(Serialize)]
struct Response<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a rmcp::model::CallToolResult,
}

/// What the dispatch learned from the handshake.
#[derive(Default)]
struct Handshake {
    /// The `initialize` request's id and the client's name.
    request: Option<(Value, Option<String>)>,
    /// The protocol version rmcp answered `initialize` with.
    version: Option<String>,
}

/// Every MCP tool of the registry by name.
fn tools() -> &'static HashMap<&'static str, &'static OpEntry> {
    static TOOLS: OnceLock<HashMap<&'static str, &'static OpEntry>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        coord_service::ops()
            .iter()
            .filter(|op| op.is_mcp_tool())
            .map(|op| (op.name, op))
            .collect()
    })
}

/// A call the short path answers: its id, operation and arguments.
fn plain_call(msg: &Message) -> Option<(Value, &'static OpEntry, Value)> {
    if msg.method.as_deref() != Some("tools/call") {
        return None;
    }
    let id = msg.id.clone()?;
    let params = msg.params.as_ref()?.as_object()?;
    if params.keys().any(|k| k != "name" && k != "arguments") {
        return None; // `_meta`, a task request, …: rmcp's business
    }
    let op = *tools().get(params.get("name")?.as_str()?)?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return None,
    };
    Some((id, op, args))
}

/// A call of the short path under way: its id's JSON and registration, and its answer's
/// line when done (none when it was cancelled).
type Call = std::pin::Pin<Box<dyn std::future::Future<Output = (String, u64, Option<Vec<u8>>)> + Send>>;

/// The short path's calls under way, by their id's JSON: what `notifications/cancelled`
/// stops. rmcp never sees these requests, so it could not cancel them.
#[derive(Default)]
struct InFlight {
    calls: HashMap<String, (u64, AbortHandle)>,
    registered: u64,
}

impl InFlight {
    /// The call `call` makes of its cancellation, under its request id's JSON, `key`;
    /// it answers nothing when cancelled.
    fn start<F>(&mut self, key: String, call: impl FnOnce(AbortRegistration) -> F) -> Call
    where
        F: std::future::Future<Output = Option<Vec<u8>>> + Send + 'static,
    {
        let (handle, registration) = AbortHandle::new_pair();
        self.registered += 1;
        let token = self.registered;
        // A reused id (JSON-RPC forbids it while the first is under way) replaces the
        // first's entry: the first can no longer be cancelled, and still answers.
        self.calls.insert(key.clone(), (token, handle));
        let call = call(registration);
        Box::pin(async move { (key, token, call.await) })
    }

    /// The call ended: forgets it unless a later call took its id.
    fn ended(&mut self, key: &str, token: u64) {
        if self.calls.get(key).is_some_and(|(t, _)| *t == token) {
            self.calls.remove(key);
        }
    }

    /// Cancels the call `notifications/cancelled` names; false when it is not ours.
    fn cancel(&mut self, params: Option<&Value>) -> bool {
        let Some(key) = params.and_then(|p| p.get("requestId")).map(Value::to_string) else {
            return false;
        };
        match self.calls.remove(&key) {
            Some((_, handle)) => {
                handle.abort();
                true
            }
            None => false,
        }
    }
}

/// Runs one call of the short path; `None` when it was cancelled. A read (`Effect::Read`)
/// stops where it is (a wait for an agent's output, say). Anything that writes runs to
/// its end and only its answer is dropped, as rmcp does with the calls it serves: some
/// writes are several steps (a file renamed into place before its audit row commits, an
/// agent registered before it is launched), and stopping between them would leave half
/// of one. The session's own start on its first call (`local_principal`) also runs to
/// its end.
async fn run_call(
    mcp: &CoordMcp,
    client: Option<&str>,
    op: &'static OpEntry,
    args: Value,
    cancel: AbortRegistration,
) -> Option<rmcp::model::CallToolResult> {
    use tracing::Instrument as _;
    let cancelled = cancel.handle();
    let span = crate::tool_span(op.name, mcp.session_id().as_deref());
    let who = mcp.local_principal(client).instrument(span.clone()).await;
    let run = mcp.coord.invoke(op, &who, Ok(args)).instrument(span.clone());
    let answer = if op.effect == Effect::Read {
        Abortable::new(run, cancel).await.ok()?
    } else {
        run.await
    };
    SHORT_PATH_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let answer = reply(answer);
    if answer.is_error == Some(true) {
        crate::tool_failed(&span);
    }
    (!cancelled.is_aborted()).then_some(answer)
}

/// Serves `mcp` on `reader`/`writer` until the input ends, or `stop` resolves (the process
/// was told to stop), or on a relayed connection the relay says so; then ends the session
/// as [`CoordMcp::close`] says. Fails when the client never completed the handshake.
///
/// One task reads the input, runs the calls of the short path (concurrently, as futures
/// of this task: a call that waits does not hold the others up) and writes every answer,
/// its own and rmcp's: per call, no task is spawned and no other task woken.
pub async fn serve<R, W>(
    mcp: CoordMcp,
    reader: R,
    writer: W,
    relayed: bool,
    stop: impl std::future::Future<Output = ()> + Send,
) -> io::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    // rmcp's input is fed by its own task, so that this loop never waits on rmcp while
    // rmcp waits for this loop to read what it wrote.
    let (feed, feeding) = feed_rmcp(to_rmcp);
    let server = mcp.clone();
    // Shared, not cloned, per call: a `CoordMcp` carries rmcp's whole tool router.
    let mcp = Arc::new(mcp);
    let mut protocol = tokio::spawn(run_rmcp(server, theirs));

    let mut conn = Connection {
        mcp,
        relayed,
        input: tokio::io::BufReader::with_capacity(1 << 16, reader),
        partial: Partial::default(),
        writer,
        rmcp_out: tokio::io::BufReader::new(from_rmcp),
        rmcp_partial: Partial::default(),
        rmcp_open: true,
        handshake: Handshake::default(),
        calls: futures_util::stream::FuturesUnordered::new(),
        in_flight: InFlight::default(),
        terminated: false,
        input_closed: false,
        peer_gone: false,
        announced: !relayed,
    };
    let mut stop = std::pin::pin!(stop);
    let protocol_ended = conn.read(&mut stop, &mut protocol, &feed).await;
    // The input is over: calls under way are answered if they end soon (dropped, one
    // that had not committed changes nothing: every operation is one transaction), none
    // when the process was told to stop; rmcp ends when its pipe does, and what it still
    // writes is passed on.
    if !conn.terminated {
        conn.drain().await;
    }
    drop(std::mem::take(&mut conn.calls));
    drop(feed);
    while conn.rmcp_open {
        let read = lines::next_async(&mut conn.rmcp_out, &mut conn.rmcp_partial, usize::MAX).await;
        conn.rmcp_open = pass_on(
            read,
            &mut conn.rmcp_partial,
            &mut conn.handshake,
            &mut conn.writer,
            &mut conn.peer_gone,
        )
        .await;
    }
    let _ = feeding.await;
    let protocol = match protocol_ended {
        Some(ended) => ended,
        None => protocol.await,
    };
    conn.end(stop, protocol).await
}

/// rmcp's input, written by a task of its own from what is sent on the channel; the pipe
/// is shut when the channel closes.
fn feed_rmcp(
    mut to_rmcp: tokio::io::WriteHalf<tokio::io::DuplexStream>,
) -> (tokio::sync::mpsc::UnboundedSender<Vec<u8>>, tokio::task::JoinHandle<()>) {
    let (feed, mut fed) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let feeding = tokio::spawn(async move {
        while let Some(line) = fed.recv().await {
            if to_rmcp.write_all(&line).await.is_err() {
                break;
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    (feed, feeding)
}

/// rmcp serving `server` on `theirs`, the session begun once the client is known, until
/// the protocol ends.
async fn run_rmcp(server: CoordMcp, theirs: tokio::io::DuplexStream) -> io::Result<()> {
    let running = server.clone().serve(theirs).await.map_err(io::Error::other)?;
    let client = running.peer().peer_info().map(|i| i.client_info.name.clone());
    server.begin(client.as_deref()).await;
    running.waiting().await.map(|_| ()).map_err(io::Error::other)
}

/// rmcp's task: how the protocol ended.
type Protocol = tokio::task::JoinHandle<io::Result<()>>;

/// One connection [`serve`] serves: its input and output, rmcp's output, and the calls
/// of the short path.
struct Connection<R, W> {
    mcp: Arc<CoordMcp>,
    relayed: bool,
    input: tokio::io::BufReader<R>,
    partial: Partial,
    writer: W,
    rmcp_out: tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    rmcp_partial: Partial,
    rmcp_open: bool,
    handshake: Handshake,
    calls: futures_util::stream::FuturesUnordered<Call>,
    in_flight: InFlight,
    /// Why reading stopped: the process was told to stop …
    terminated: bool,
    /// … or the relay sent input_closed.
    input_closed: bool,
    /// A failed write: the peer is gone, nothing more can be answered.
    peer_gone: bool,
    /// On a relayed connection: whether the relay was told the session.
    announced: bool,
}

/// What becomes of a message of the input.
enum Step {
    /// Reading stops: the relay said so.
    Stop,
    /// Taken here: a call of the short path, or its cancellation.
    Taken,
    /// rmcp's.
    Rmcp,
}

impl<R, W> Connection<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads the input, answering calls and passing rmcp's output on, until the input
    /// ends, `stop` resolves, the relay says so, or rmcp ends (then how, from `protocol`).
    async fn read(
        &mut self,
        stop: &mut (impl std::future::Future<Output = ()> + Unpin),
        protocol: &mut Protocol,
        feed: &tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    ) -> Option<Result<io::Result<()>, tokio::task::JoinError>> {
        use futures_util::StreamExt as _;
        let mut protocol_ended = None;
        loop {
            let read = tokio::select! {
                biased;
                () = &mut *stop => { self.terminated = true; break }
                ended = &mut *protocol => { protocol_ended = Some(ended); break }
                Some((key, token, answer)) = self.calls.next() => {
                    self.in_flight.ended(&key, token);
                    if let Some(answer) = answer {
                        self.peer_gone |= self.writer.write_all(&answer).await.is_err();
                    }
                    continue;
                }
                read = lines::next_async(&mut self.rmcp_out, &mut self.rmcp_partial, usize::MAX), if self.rmcp_open => {
                    self.rmcp_open = pass_on(
                        read,
                        &mut self.rmcp_partial,
                        &mut self.handshake,
                        &mut self.writer,
                        &mut self.peer_gone,
                    )
                    .await;
                    continue;
                }
                read = lines::next_async(&mut self.input, &mut self.partial, lines::MAX_LINE) => read,
            };
            match read {
                Ok(Read::Line) => {}
                Ok(Read::TooLong) => {
                    tracing::warn!("dropped a message over {} bytes", lines::MAX_LINE);
                    continue;
                }
                Ok(Read::Eof) | Err(_) => break,
            }
            if !self.announced
                && let Some(session) = self.mcp.session_id()
            {
                self.announced = true;
                self.peer_gone |= self.writer.write_all(&session_line(&session)).await.is_err();
            }
            let line = std::mem::take(&mut self.partial.line);
            match self.dispatch(&line) {
                Step::Stop => break,
                Step::Taken => continue,
                Step::Rmcp => {}
            }
            let mut line = line;
            line.push(b'\n');
            if feed.send(line).is_err() {
                break; // rmcp has ended; `protocol` says why
            }
        }
        protocol_ended
    }

    /// A message of the input: a control line of the relay, a call of the short path
    /// (started) or its cancellation, or rmcp's (the handshake noted on the way).
    fn dispatch(&mut self, line: &[u8]) -> Step {
        let Some(msg) = parse::<Message>(line) else {
            return Step::Rmcp;
        };
        match msg.method.as_deref() {
            Some(INPUT_CLOSED) if self.relayed => {
                self.input_closed = true;
                return Step::Stop;
            }
            Some(TERMINATE) if self.relayed => {
                self.terminated = true;
                return Step::Stop;
            }
            // A call of the short path is not answered (MCP's cancellation), and a
            // read stops where it is ([`run_call`]). Others are rmcp's.
            Some("notifications/cancelled") if self.in_flight.cancel(msg.params.as_ref()) => return Step::Taken,
            Some("initialize") => {
                let client = msg.params.as_ref().and_then(|p| p["clientInfo"]["name"].as_str());
                self.handshake.request = msg.id.clone().map(|id| (id, client.map(str::to_string)));
            }
            _ => {}
        }
        if let Some(version) = &self.handshake.version
            && let Some((id, op, args)) = plain_call(&msg)
        {
            let legacy = version.as_str() < RESULT_TYPE_SINCE;
            let client = self.handshake.request.as_ref().and_then(|(_, c)| c.clone());
            let mcp = self.mcp.clone();
            let call = self.in_flight.start(id.to_string(), move |cancel| async move {
                let answer = run_call(&mcp, client.as_deref(), op, args, cancel).await?;
                Some(response(&id, answer, legacy))
            });
            self.calls.push(call);
            return Step::Taken;
        }
        Step::Rmcp
    }

    /// Answers the calls under way that end within [`DRAIN`]; the others are dropped.
    async fn drain(&mut self) {
        use futures_util::StreamExt as _;
        let (calls, writer, peer_gone) = (&mut self.calls, &mut self.writer, &mut self.peer_gone);
        let drained = tokio::time::timeout(DRAIN, async {
            while let Some((_, _, answer)) = calls.next().await {
                if let Some(answer) = answer {
                    *peer_gone |= writer.write_all(&answer).await.is_err();
                }
            }
        });
        if drained.await.is_err() {
            tracing::info!(
                calls = self.calls.len(),
                "calls still running when the connection closed were dropped"
            );
        }
    }

    /// Ends the session (told the relay first, when it asked) and the connection; answers
    /// how the protocol ended.
    async fn end(
        mut self,
        stop: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
        protocol: Result<io::Result<()>, tokio::task::JoinError>,
    ) -> io::Result<()> {
        if self.relayed
            && (self.terminated || self.input_closed)
            && !self.peer_gone
            && let Some(session) = self.mcp.session_id()
        {
            self.peer_gone =
                self.writer.write_all(&session_line(&session)).await.is_err() || self.writer.flush().await.is_err();
        }
        if self.terminated {
            self.mcp.close(std::future::ready(())).await;
        } else if self.input_closed {
            let (input, partial) = (&mut self.input, &mut self.partial);
            // The relay's process may still be told to stop during the grace period.
            self.mcp
                .close(async {
                    tokio::select! {
                        () = stop => {}
                        () = relay_terminate(input, partial) => {}
                    }
                })
                .await;
        } else {
            self.mcp.close(stop).await;
        }
        if self.relayed && !self.peer_gone {
            let _ = self.writer.write_all(&control(CLOSED)).await;
        }
        let _ = self.writer.flush().await;
        let _ = self.writer.shutdown().await;
        match protocol {
            Ok(ended) => ended,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

/// One line of rmcp's output passed on to the peer (noting the protocol version rmcp
/// answered `initialize` with); false at the end of rmcp's output.
async fn pass_on<W: AsyncWrite + Unpin>(
    read: io::Result<Read>,
    partial: &mut Partial,
    handshake: &mut Handshake,
    writer: &mut W,
    peer_gone: &mut bool,
) -> bool {
    match read {
        Ok(Read::Line) => {}
        Ok(Read::TooLong) => return true,
        Ok(Read::Eof) | Err(_) => return false,
    }
    let mut line = std::mem::take(&mut partial.line);
    if handshake.version.is_none() {
        note_version(&line, handshake);
    }
    line.push(b'\n');
    if !*peer_gone {
        *peer_gone = writer.write_all(&line).await.is_err();
    }
    true
}

/// After [`INPUT_CLOSED`]: resolves when the relay sends [`TERMINATE`]; never when the
/// relay goes away without it (killed: the grace period runs its course).
async fn relay_terminate<R: tokio::io::AsyncBufRead + Unpin>(input: &mut R, partial: &mut Partial) {
    loop {
        match lines::next_async(input, partial, lines::MAX_LINE).await {
            Ok(Read::Line) => {
                let line = std::mem::take(&mut partial.line);
                if parse::<Message>(&line).is_some_and(|m| m.method.as_deref() == Some(TERMINATE)) {
                    return;
                }
            }
            Ok(Read::TooLong) => {}
            Ok(Read::Eof) | Err(_) => return std::future::pending().await,
        }
    }
}

/// The response line to a call answered by the short path, shaped as rmcp shapes it.
pub(crate) fn response(id: &Value, mut answer: rmcp::model::CallToolResult, legacy: bool) -> Vec<u8> {
    if legacy {
        answer.result_type = None;
    }
    let mut line = serde_json::to_vec(&Response {
        jsonrpc: "2.0",
        id,
        result: &answer,
    })
    .unwrap_or_default();
    line.push(b'\n');
    line
}

fn note_version(line: &[u8], handshake: &mut Handshake) {
    let Some((id, _)) = &handshake.request else { return };
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    if v["id"] == *id
        && let Some(version) = v["result"]["protocolVersion"].as_str()
    {
        handshake.version = Some(version.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(v: Value) -> Message {
        serde_json::from_value(v).unwrap()
    }

    #[tokio::test]
    async fn cancelling_stops_the_named_call_only() {
        use futures_util::StreamExt as _;
        let mut in_flight = InFlight::default();
        let mut calls = futures_util::stream::FuturesUnordered::<Call>::new();
        for id in [json!(7), json!("7"), json!("other")] {
            let line = id.to_string().into_bytes();
            calls.push(in_flight.start(id.to_string(), |cancel| async move {
                Abortable::new(async { line }, cancel).await.ok()
            }));
        }
        for (params, ours) in [
            (Some(json!({"requestId": 7})), true),
            (Some(json!({"requestId": 7})), false), // already cancelled
            (Some(json!({"requestId": 8})), false), // not a call of ours: rmcp's
            (Some(json!({"reason": "no id"})), false),
            (None, false),
        ] {
            assert_eq!(in_flight.cancel(params.as_ref()), ours, "{params:?}");
        }
        let mut answered = Vec::new();
        while let Some((key, token, answer)) = calls.next().await {
            in_flight.ended(&key, token);
            answered.push((key, answer.map(|a| String::from_utf8(a).unwrap())));
        }
        answered.sort();
        assert_eq!(
            answered,
            [
                ("\"7\"".to_string(), Some("\"7\"".to_string())),
                ("\"other\"".to_string(), Some("\"other\"".to_string())),
                ("7".to_string(), None),
            ]
        );
        assert!(in_flight.calls.is_empty(), "ended calls are forgotten");
        // A reused id: the first call's end does not forget the second.
        let first = in_flight.start("1".into(), |_| async { Some(Vec::new()) });
        let _second = in_flight.start("1".into(), |_| async { Some(Vec::new()) });
        let (key, token, _) = first.await;
        in_flight.ended(&key, token);
        assert!(
            in_flight.cancel(Some(&json!({"requestId": 1}))),
            "the second is still cancellable"
        );
    }

    #[test]
    fn only_plain_calls_of_known_tools_take_the_short_path() {
        let call = |params: Value| msg(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}));
        let short = |m: &Message| plain_call(m).map(|(id, op, args)| (id, op.name, args));
        let cases = [
            (
                call(json!({"name": "check_locks"})),
                Some((json!(7), "check_locks", json!({}))),
            ),
            (
                call(json!({"name": "acquire_lock", "arguments": {"file_path": "a"}})),
                Some((json!(7), "acquire_lock", json!({"file_path": "a"}))),
            ),
            (
                call(json!({"name": "check_locks", "arguments": null})),
                Some((json!(7), "check_locks", json!({}))),
            ),
            // unknown tool, arguments not an object, extra fields: rmcp answers
            (call(json!({"name": "rm_rf", "arguments": {}})), None),
            (call(json!({"name": "check_locks", "arguments": [1]})), None),
            (
                call(json!({"name": "check_locks", "_meta": {"progressToken": 1}})),
                None,
            ),
            (call(json!({"name": 7})), None),
            (call(json!([])), None),
            // a notification, another method
            (
                msg(json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "check_locks"}})),
                None,
            ),
            (msg(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})), None),
        ];
        for (m, want) in cases {
            assert_eq!(short(&m), want, "{:?} {:?}", m.method, m.params);
        }
    }

    #[test]
    fn only_json_objects_are_read_as_messages() {
        let method = |line: &str| parse::<Message>(line.as_bytes()).and_then(|m| m.method);
        let cases = [
            (
                r#"{"jsonrpc":"2.0","method":"coord/terminate"}"#,
                Some("coord/terminate"),
            ),
            (r#"  {"method":"ping","id":1}"#, Some("ping")),
            (r#"[null,"coord/terminate",{}]"#, None),
            (r#""coord/terminate""#, None),
            ("not json", None),
            ("", None),
        ];
        for (line, want) in cases {
            assert_eq!(method(line).as_deref(), want, "{line}");
        }
    }

    #[test]
    fn short_path_results_drop_result_type_for_older_protocols() {
        let answer = || rmcp::model::CallToolResult::structured(json!({"success": true}));
        let old: Value = serde_json::from_slice(&response(&json!("a"), answer(), true)).unwrap();
        assert_eq!(old["id"], "a");
        assert_eq!(old["result"]["structuredContent"], json!({"success": true}));
        assert!(old["result"].get("resultType").is_none(), "{old}");
        let new: Value = serde_json::from_slice(&response(&json!(1), answer(), false)).unwrap();
        assert_eq!(new["result"]["resultType"], "complete", "{new}");
    }
}
