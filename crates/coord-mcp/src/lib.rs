//! The MCP door: every operation of the registry that is an MCP tool, built at run time
//! from its definition (name, model-facing description, input schema from the request
//! type, annotations from its effect), plus three read-only resources. Like every door
//! it holds no rules: it hands the tool's JSON arguments and the caller to
//! [`Coordination::invoke`] and returns the answer.
//!
//! Results keep the service's wire shapes as structured content (and as JSON text for
//! clients that only read text). A refused operation is a normal tool result with
//! `success: false`; arguments that do not fit the tool (`invalid_argument`, naming the
//! field) and an outage of the store are marked as tool errors.
//!
//! Where things are:
//!
//! - This file: `tool_router()` builds one tool per registry operation at run time;
//!   resources are a table (URI → operation with a fixed request); the per-connection
//!   session (registered on first use, heartbeats, ended without releasing on close, then
//!   locks released and tasks requeued after a grace period unless the agent came back;
//!   `SessionMode::Manual` leaves it to the client); `HttpSessions`, MCP sessions over
//!   HTTP by `Mcp-Session-Id`, so a client that ends its MCP session over HTTP closes
//!   its connection.
//! - `identity`: who the caller is, from the environment, HTTP headers or client info;
//!   the credential comes from the door's key check (stdio is local).
//! - `toolsets`: the tools a client lists, grouped in named toolsets; listing is not
//!   permission, the pipeline decides every call.
//! - `connection`: one MCP connection over a byte stream (`serve_stdio`,
//!   `serve_relayed`). It answers a plain `tools/call` of a known tool straight through
//!   `Coordination::invoke`, with the same principal and reply shape as rmcp's route, and
//!   hands everything else to rmcp over an in-memory pipe; a `notifications/cancelled`
//!   naming such a call drops its answer (`InFlight`: a read stops where it is, a write
//!   runs to its end).
//! - `lines`: the 16 MiB line bound, one pure step behind an async and a blocking reader.
//! - `relay`: the relay `coord mcp` runs to the repository's coordinator socket (two
//!   plain threads copying lines over an upgraded connection; the request ids in flight
//!   and the handshake kept for replay). A dead coordinator is replaced (`Reconnect`) and
//!   the calls it died on are answered with `outcome: unknown`. Control lines:
//!   `coord/input_closed` and `coord/terminate` from the relay, `coord/session` and
//!   `coord/closed` from the coordinator; a relay that loses the connection while its
//!   session ends reconnects with `ending` in the upgrade's query (`RelayRequest`), so the
//!   successor ends that session (`McpOptions::ending_session`).

mod connection;
pub mod handover;
mod identity;
pub mod lines;
pub mod relay;
mod stdio;
pub mod toolsets;

pub use connection::{CLOSED, CONTROL_PREFIX, INPUT_CLOSED, SESSION, TERMINATE, short_path_calls};
pub use identity::{IdentityConfig, derive_identity};

use coord_domain::access::Effect;
use coord_domain::access::{Credential, Principal};
use coord_domain::error::ErrorKind;
use coord_domain::handoffs::{ALL_AGENTS, ReadHandoffRequest};
use coord_domain::keys::KeyOrigin;
use coord_domain::locks::CheckLocksRequest;
use coord_domain::queue::{ListTasksRequest, TaskStatus};
use coord_domain::sessions::{EndSessionRequest, HeartbeatRequest, RegisterSessionRequest};
use coord_domain::{Caller, CoordResult, ErrorCode};
use coord_service::{Coordination, OpEntry, ops};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResult, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool_handler};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

/// How a server ties MCP traffic to coordinator sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionMode {
    /// stdio: the connection is the session. It registers a new session on first use,
    /// heartbeats while the connection lives, and goes idle when it closes.
    PerConnection,
    /// Requests carry no connection; the first use of an identity starts its session (or
    /// keeps the one it has) through a heartbeat. For stateless embeddings.
    Shared,
    /// The client manages its session itself (`register_session`, `heartbeat`,
    /// `end_session`); the server adds no calls of its own. For embedding and tests.
    Manual,
}

#[derive(Debug, Clone)]
pub struct McpOptions {
    pub identity: IdentityConfig,
    pub session_mode: SessionMode,
    /// How often a live connection heartbeats (well under the 15-minute stale threshold).
    pub heartbeat_every: Duration,
    /// After a stdio connection closes (its agent exited or was killed), how long its
    /// locks and claimed tasks wait for the agent to reconnect before they are released
    /// and requeued. None: they stay (until their TTL, lease or a cleanup).
    pub release_after: Option<Duration>,
    /// The team this connection's agent registers in (`COORD_TEAM` for `coord mcp`).
    pub team: Option<String>,
    /// Told the caller and session id each time this connection registers a session
    /// (`coord mcp` records them, so that its session can be ended if it is killed).
    pub on_session: Option<SessionHook>,
    /// A relayed connection that only ends this session, the one its agent left: a
    /// coordinator that was ending it died (see [`relay`]). Nothing is registered; the
    /// session is ended as the end of input says, unless the agent has a newer one.
    /// Read only in [`SessionMode::PerConnection`] (what relayed connections use).
    pub ending_session: Option<String>,
    /// The credential of a connection over stdio (or relayed from one): a local process,
    /// or `Session` when that process runs inside an agent's session (no person's
    /// decisions through this connection). Over HTTP the key decides instead.
    pub stdio_credential: Credential,
    /// Where this connection's agent works (its worktree's root and branch), recorded on
    /// the session the connection registers.
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The toolsets this connection lists (`COORD_TOOLSETS`, `coord mcp --toolsets`, an
    /// HTTP client's `X-MCP-Toolsets`); `None`: `core` for agents, everything for operators.
    pub toolsets: Option<toolsets::Selection>,
}

/// What [`SessionHook`] calls: the caller and the session id it registered.
pub type OnSession = dyn Fn(&Caller, &str) + Send + Sync;

/// A callback on session registration (see [`McpOptions::on_session`]).
#[derive(Clone)]
pub struct SessionHook(pub Arc<OnSession>);

impl std::fmt::Debug for SessionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionHook")
    }
}

impl McpOptions {
    pub fn stdio(identity: IdentityConfig) -> Self {
        McpOptions {
            identity,
            session_mode: SessionMode::PerConnection,
            heartbeat_every: Duration::from_secs(5 * 60),
            release_after: Some(DEFAULT_RELEASE_AFTER),
            team: None,
            on_session: None,
            ending_session: None,
            stdio_credential: Credential::Local,
            worktree: None,
            branch: None,
            toolsets: None,
        }
    }

    /// Streamable HTTP: an MCP session (`Mcp-Session-Id`) is a connection. Its first
    /// authenticated call registers a coordinator session that it heartbeats; the client's
    /// DELETE of the MCP session ends it like a closed stdio connection (see
    /// [`HttpSessions`]). An MCP session the server drops on its own (idle for minutes,
    /// or the server stopping) only stops heartbeating: its agent may still be working,
    /// so its holdings are left to heartbeat staleness.
    pub fn http(identity: IdentityConfig) -> Self {
        McpOptions::stdio(identity)
    }
}

/// How long a closed connection's holdings wait for its agent to come back.
pub const DEFAULT_RELEASE_AFTER: Duration = Duration::from_secs(20);

/// `COORD_RELEASE_GRACE_SECONDS` (`raw`, when set): whole seconds from 0 to 3600, or
/// `off` (holdings stay until their TTL or lease); unset or empty is the default.
pub fn parse_release_grace(raw: Option<&str>) -> CoordResult<Option<Duration>> {
    match raw.map(str::trim) {
        None | Some("") => Ok(Some(DEFAULT_RELEASE_AFTER)),
        Some("off") => Ok(None),
        Some(n) => n
            .parse::<u64>()
            .ok()
            .filter(|s| *s <= 3600)
            .map(|s| Some(Duration::from_secs(s)))
            .ok_or_else(|| {
                coord_domain::CoordError::field(
                    ErrorCode::InvalidArgument,
                    "COORD_RELEASE_GRACE_SECONDS",
                    format!("COORD_RELEASE_GRACE_SECONDS={n:?}: use whole seconds from 0 to 3600, or off"),
                )
            }),
    }
}

/// Per-connection state: who is calling, and whether its session is registered.
#[derive(Default)]
struct Session {
    /// Who this connection acts as, with its credential and key origin: background
    /// calls (heartbeats, the session's end) run as it, and are audited so.
    principal: Mutex<Option<Principal>>,
    /// Whether the session is registered. An async lock, so a tool call that arrives
    /// while the session is being registered (stdio registers it on `initialized`) waits
    /// for it instead of running as an agent without a session.
    registered: tokio::sync::Mutex<bool>,
    /// The coordinator session this connection registered: ending the connection ends
    /// this one only, never a newer one of the same agent.
    session_id: Mutex<Option<String>>,
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Over HTTP: this connection is listed in its server's [`HttpSessions`].
    listed: AtomicBool,
}

impl Drop for Session {
    /// A connection dropped without `close` (an HTTP session the server discarded) must
    /// not go on heartbeating for an agent that may be gone.
    fn drop(&mut self) {
        if let Some(task) = self.heartbeat.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

/// The MCP sessions an HTTP server serves, by `Mcp-Session-Id`: when a client deletes
/// its MCP session (it is leaving), [`HttpSessions::closed`] ends the coordinator session
/// that MCP session registered, as EOF does for stdio.
#[derive(Clone, Default)]
pub struct HttpSessions(Arc<Mutex<HashMap<String, Listed>>>);

struct Listed {
    coord: Arc<dyn Coordination>,
    options: Arc<McpOptions>,
    session: Weak<Session>,
}

impl HttpSessions {
    fn list(&self, id: String, mcp: &CoordMcp) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Sessions the server discarded on its own leave dead entries: drop them here.
        map.retain(|_, l| l.session.strong_count() > 0);
        map.insert(
            id,
            Listed {
                coord: mcp.coord.clone(),
                options: mcp.options.clone(),
                session: Arc::downgrade(&mcp.session),
            },
        );
    }

    /// A client deleted MCP session `id`: its coordinator session goes idle now and
    /// releases its holdings after the grace period (in the background). `by` is who
    /// deleted it (None: an operator key naming nobody); another agent's DELETE ends the
    /// MCP session (rmcp's business) but not the agent's coordinator session.
    pub fn closed(&self, id: &str, by: Option<&Caller>) {
        let listed = self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        let Some(l) = listed else { return };
        let Some(session) = l.session.upgrade() else { return };
        let owner = session
            .principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .map(|p| p.caller);
        if let (Some(by), Some(owner)) = (by, owner)
            && by.agent_id != owner.agent_id
        {
            return tracing::warn!(by = %by.agent_id, owner = %owner.agent_id, "an MCP session was deleted by another agent");
        }
        tokio::spawn(async move { close_session(&l.coord, &l.options, &session, std::future::pending()).await });
    }
}

#[derive(Clone)]
pub struct CoordMcp {
    coord: Arc<dyn Coordination>,
    options: Arc<McpOptions>,
    session: Arc<Session>,
    http_sessions: Option<HttpSessions>,
    tool_router: ToolRouter<Self>,
    /// The toolsets this connection lists now (`enable_toolset` adds to them); `None`
    /// until the first listing decides from the options and the caller.
    listed: Arc<Mutex<Option<toolsets::Selection>>>,
}

/// See [`CoordMcp::close`].
async fn close_session(
    coord: &Arc<dyn Coordination>,
    options: &McpOptions,
    session_state: &Session,
    terminated: impl std::future::Future<Output = ()>,
) {
    if let Some(task) = session_state
        .heartbeat
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        task.abort();
    }
    let principal = session_state
        .principal
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let session = session_state
        .session_id
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let (Some(principal), Some(session)) = (principal, session) else {
        return;
    };
    let end =
        |req| coord_service::call::<coord_service::ops::sessions::EndSessionOp, _>(coord.as_ref(), &principal, req);
    let idle = EndSessionRequest {
        release_locks: Some(false),
        if_session: Some(session.clone()),
        ..Default::default()
    };
    match end(idle).await {
        Ok(r) if !r.ended => {
            return tracing::info!("the agent reconnected: its holdings stay with its new session");
        }
        Ok(_) => {}
        Err(e) => return tracing::warn!(error = %e, "could not end the session"),
    }
    let Some(grace) = options.release_after else {
        return;
    };
    tokio::select! {
        () = tokio::time::sleep(grace) => {}
        () = terminated => {}
    }
    // An agent coord launched leaves its task to its supervisor (completed with the final
    // answer, or given back when there is none).
    let launched = principal.caller.agent_type == coord_domain::agents::spawn::AGENT_TYPE;
    let release = EndSessionRequest {
        release_locks: Some(true),
        requeue_tasks: Some(!launched),
        if_session: Some(session),
        handoff: None,
    };
    match end(release).await {
        Ok(r) if r.ended => tracing::info!(
            released = r.released.len(),
            requeued = r.tasks_requeued,
            "a closed connection's holdings were released"
        ),
        Ok(_) => tracing::info!("the agent reconnected: its holdings stay with its new session"),
        Err(e) => tracing::warn!(error = %e, "could not release a closed connection's holdings"),
    }
}

/// The span of one tool call, as OpenTelemetry's MCP conventions name it (`tools/call
/// <tool>`, a server span); the operation's own span (the pipeline's) is its child.
pub(crate) fn tool_span(tool: &str, session: Option<&str>) -> tracing::Span {
    tracing::info_span!(
        "coord.mcp.tool_call",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        mcp.session.id = session.unwrap_or_default(),
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// A tool call that answered a tool error (`isError`), as the conventions mark it.
pub(crate) fn tool_failed(span: &tracing::Span) {
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "error");
}

/// The wire JSON of an outcome as a tool result. Refusals are ordinary results the model
/// reads (`success: false`, `error`, `message`); a call that does not fit the tool's
/// schema and an unavailable store are tool errors.
fn reply(outcome: CoordResult<Value>) -> CallToolResult {
    match outcome {
        Ok(v) => CallToolResult::structured(v),
        Err(e)
            if e.code == ErrorCode::InvalidArgument
                || matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal) =>
        {
            CallToolResult::structured_error(e.to_value())
        }
        Err(e) => CallToolResult::structured(e.to_value()),
    }
}

/// What a model is told about an operation's effect.
fn annotations(effect: Effect) -> ToolAnnotations {
    match effect {
        Effect::Read => ToolAnnotations::new().read_only(true),
        Effect::Write => ToolAnnotations::new().read_only(false).destructive(false),
        Effect::Destructive => ToolAnnotations::new().read_only(false).destructive(true),
    }
}

/// The tool of one operation.
fn route(op: &'static OpEntry) -> ToolRoute<CoordMcp> {
    let tool =
        Tool::new(op.name, op.description, Arc::new((op.input_schema)())).with_annotations(annotations(op.effect));
    ToolRoute::new_dyn(tool, move |cx: ToolCallContext<'_, CoordMcp>| {
        Box::pin(async move {
            let who = cx.service.principal(&cx.request_context).await;
            let args = Value::Object(cx.arguments.unwrap_or_default());
            Ok(reply(cx.service.coord.invoke(op, &who, Ok(args)).await).into())
        })
    })
}

/// Every operation the registry marks as an MCP tool.
pub fn tool_router() -> ToolRouter<CoordMcp> {
    ops()
        .iter()
        .filter(|op| op.is_mcp_tool())
        .fold(ToolRouter::new(), |router, op| router.with_route(route(op)))
}

/// How the caller of a request proved who it is: over HTTP, what the server's key check
/// put in the request's extensions (no record means no key: anonymous, the least
/// privilege); over stdio, what the connection's process is (`stdio`).
fn credential(ctx: &RequestContext<RoleServer>, stdio: Credential) -> Credential {
    match ctx.extensions.get::<http::request::Parts>() {
        Some(parts) => parts
            .extensions
            .get::<Credential>()
            .copied()
            .unwrap_or(Credential::Anonymous),
        None => stdio,
    }
}

/// The identity of a request that came over HTTP: the one the server authenticated
/// (an API key's binding, put in the request's extensions), else `X-Agent-Id` /
/// `X-Agent-Type`.
fn header_identity(ctx: &RequestContext<RoleServer>) -> (Option<String>, Option<String>) {
    let Some(parts) = ctx.extensions.get::<http::request::Parts>() else {
        return (None, None);
    };
    if let Some(who) = parts.extensions.get::<Caller>() {
        return (Some(who.agent_id.clone()), Some(who.agent_type.clone()));
    }
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    (header("x-agent-id"), header("x-agent-type"))
}

impl CoordMcp {
    /// The toolsets this connection lists: as enabled so far; at first what the options
    /// or the client's `X-MCP-Toolsets` chose, else everything for an operator key and
    /// `core` (and what its profile is made for) for anyone else.
    fn selection(
        &self,
        who: &Principal,
        ctx: &RequestContext<RoleServer>,
        allowed: Option<&std::collections::BTreeSet<String>>,
    ) -> toolsets::Selection {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        listed
            .get_or_insert_with(|| {
                let asked = ctx
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|p| p.headers.get("x-mcp-toolsets"))
                    .and_then(|v| v.to_str().ok())
                    .and_then(|raw| toolsets::parse(raw).ok());
                asked
                    .or_else(|| self.options.toolsets.clone())
                    .unwrap_or(match who.credential {
                        Credential::Operator => toolsets::Selection::All,
                        _ => toolsets::Selection::default_for(allowed),
                    })
            })
            .clone()
    }

    /// The operations `who` may call, as its profile and credential decide
    /// (`explain_profile` of itself); `None` (list by toolset alone) for an operator key
    /// or when that cannot be read.
    async fn allowed(&self, who: &Principal) -> Option<std::collections::BTreeSet<String>> {
        if who.credential == Credential::Operator {
            return None;
        }
        let explained = coord_service::call::<coord_service::ops::profiles::ExplainProfile, _>(
            self.coord.as_ref(),
            who,
            coord_domain::profiles::ExplainProfileRequest::default(),
        )
        .await;
        match explained {
            Ok(e) => Some(
                e.operations
                    .into_iter()
                    .filter(|v| v.allowed)
                    .map(|v| v.operation)
                    .collect(),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "the caller's profile could not be read: tools listed by toolset alone");
                None
            }
        }
    }

    pub fn new(coord: Arc<dyn Coordination>, options: McpOptions) -> Self {
        CoordMcp {
            coord,
            options: Arc::new(options),
            session: Arc::new(Session::default()),
            http_sessions: None,
            tool_router: tool_router(),
            listed: Arc::default(),
        }
    }

    /// Over streamable HTTP: list this connection under its `Mcp-Session-Id`, so the
    /// client's DELETE ends its coordinator session.
    pub fn with_http_sessions(mut self, sessions: HttpSessions) -> Self {
        self.http_sessions = Some(sessions);
        self
    }

    /// The caller of this request, with how it authenticated.
    async fn principal(&self, ctx: &RequestContext<RoleServer>) -> Principal {
        if let Some(sessions) = &self.http_sessions {
            let id = ctx
                .extensions
                .get::<http::request::Parts>()
                .and_then(|p| p.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok());
            if let Some(id) = id
                && !self.session.listed.swap(true, Ordering::SeqCst)
            {
                sessions.list(id.to_string(), self);
            }
        }
        let credential = credential(ctx, self.options.stdio_credential);
        // Over HTTP, the managed key the request came with (for its audit row).
        let origin = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<KeyOrigin>())
            .cloned();
        self.caller(ctx, credential, origin).await
    }

    /// The caller of this request, with its coordinator session started on first use
    /// (not for anonymous callers: they cannot have one).
    async fn caller(
        &self,
        ctx: &RequestContext<RoleServer>,
        credential: Credential,
        origin: Option<KeyOrigin>,
    ) -> Principal {
        let (header_id, header_type) = header_identity(ctx);
        let client = ctx.client_info();
        let caller = derive_identity(
            &self.options.identity,
            header_id.as_deref(),
            header_type.as_deref(),
            client.as_ref().map(|c| c.name.as_str()),
        );
        let who = Principal::new(caller, credential).with_origin(origin);
        *self.session.principal.lock().unwrap_or_else(PoisonError::into_inner) = Some(who.clone());
        if credential != Credential::Anonymous && self.options.session_mode != SessionMode::Manual {
            self.ensure_session(&who).await;
        }
        who
    }

    /// Registers the session once; callers that arrive meanwhile wait for it.
    async fn ensure_session(&self, who: &Principal) {
        let mut registered = self.session.registered.lock().await;
        if !*registered {
            *registered = self.start_session(who).await;
        }
    }

    /// Answers whether the session started.
    async fn start_session(&self, who: &Principal) -> bool {
        let started = match self.options.session_mode {
            SessionMode::PerConnection => coord_service::call::<coord_service::ops::sessions::RegisterSession, _>(
                self.coord.as_ref(),
                who,
                RegisterSessionRequest {
                    team: self.options.team.clone(),
                    worktree: self.options.worktree.clone(),
                    branch: self.options.branch.clone(),
                    ..Default::default()
                },
            )
            .await
            .map(|r| {
                if let Some(hook) = &self.options.on_session {
                    (hook.0)(&who.caller, &r.session_id);
                }
                *self.session.session_id.lock().unwrap_or_else(PoisonError::into_inner) = Some(r.session_id);
            }),
            SessionMode::Shared => coord_service::call::<coord_service::ops::sessions::Heartbeat, _>(
                self.coord.as_ref(),
                who,
                HeartbeatRequest {},
            )
            .await
            .map(|_| ()),
            SessionMode::Manual => Ok(()),
        };
        match started {
            Ok(()) => {
                if self.options.session_mode == SessionMode::PerConnection {
                    self.start_heartbeat(who.clone());
                }
                true
            }
            Err(e) => {
                // The tool call itself will report the outage; try again on the next call.
                tracing::warn!(error = %e, "could not start the agent session");
                false
            }
        }
    }

    fn start_heartbeat(&self, who: Principal) {
        let coord = self.coord.clone();
        let every = self.options.heartbeat_every;
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let beat = coord_service::call::<coord_service::ops::sessions::Heartbeat, _>(
                    coord.as_ref(),
                    &who,
                    HeartbeatRequest {},
                );
                if let Err(e) = beat.await {
                    tracing::warn!(error = %e, "heartbeat failed");
                }
            }
        });
        if let Some(old) = self
            .session
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task)
        {
            old.abort();
        }
    }

    /// Registers this connection's session as soon as the client has said who it is
    /// (stdio), so that a reconnecting agent's new session exists at once: the old
    /// connection's delayed release then leaves it alone.
    pub async fn begin(&self, client_name: Option<&str>) {
        if self.options.session_mode != SessionMode::PerConnection {
            return;
        }
        if let Some(ending) = &self.options.ending_session {
            // The session a dead coordinator was ending: taken over, not registered.
            let who = Principal::local(derive_identity(&self.options.identity, None, None, client_name));
            *self.session.principal.lock().unwrap_or_else(PoisonError::into_inner) = Some(who);
            *self.session.session_id.lock().unwrap_or_else(PoisonError::into_inner) = Some(ending.clone());
            *self.session.registered.lock().await = true;
            return;
        }
        self.local_principal(client_name).await;
    }

    /// The coordinator session this connection registered (or ends), if any.
    pub fn session_id(&self) -> Option<String> {
        self.session
            .session_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The caller of a connection of a local process (stdio, or relayed from one): the
    /// configured identity, else one derived from the client's name; its session started
    /// on first use.
    async fn local_principal(&self, client_name: Option<&str>) -> Principal {
        let who = Principal::local(derive_identity(&self.options.identity, None, None, client_name));
        *self.session.principal.lock().unwrap_or_else(PoisonError::into_inner) = Some(who.clone());
        if self.options.session_mode != SessionMode::Manual {
            self.ensure_session(&who).await;
        }
        who
    }

    /// The connection closed: stop heartbeating and end this connection's session. At
    /// once it goes idle (its holdings kept, so an agent that reconnects keeps them);
    /// after `release_after` — or at once when `terminated` resolves first (the process
    /// was told to stop: its agent is leaving) — its locks are released and its claimed
    /// tasks requeued, unless a new session of the same agent started meanwhile.
    pub async fn close(&self, terminated: impl std::future::Future<Output = ()>) {
        close_session(&self.coord, &self.options, &self.session, terminated).await
    }

    async fn resource_json(&self, uri: &str, ctx: &RequestContext<RoleServer>) -> Result<String, McpError> {
        let Some((_, _, _, op, request)) = RESOURCES.iter().find(|r| r.0 == uri) else {
            return Err(McpError::resource_not_found(
                format!("no resource {uri:?}; this server has locks://current, work://pending, handoffs://recent"),
                None,
            ));
        };
        let who = self.principal(ctx).await;
        let entry = coord_service::op_named(op).map_err(|e| McpError::internal_error(e.message, None))?;
        let value = match self.coord.invoke(entry, &who, Ok(request())).await {
            Ok(v) => v,
            Err(e) => e.to_value(),
        };
        Ok(value.to_string())
    }
}

/// The resources: (uri, name, description, operation, its fixed request).
type ResourceRow = (&'static str, &'static str, &'static str, &'static str, fn() -> Value);
const RESOURCES: &[ResourceRow] = &[
    (
        "locks://current",
        "current-locks",
        "Every live file lock: path, holder, reason, expiry.",
        "check_locks",
        || to_value(CheckLocksRequest::default()),
    ),
    (
        "work://pending",
        "pending-work",
        "Tasks waiting in the queue, most urgent first.",
        "list_tasks",
        || {
            to_value(ListTasksRequest {
                status: Some(TaskStatus::Pending),
                task_type: None,
                limit: Some(200),
            })
        },
    ),
    (
        "handoffs://recent",
        "recent-handoffs",
        "The latest handoff documents of all agents.",
        "read_handoff",
        || {
            to_value(ReadHandoffRequest {
                agent_name: Some(ALL_AGENTS.into()),
                limit: Some(10),
            })
        },
    ),
];

fn to_value<T: Serialize>(request: T) -> Value {
    serde_json::to_value(request).unwrap_or_else(|_| Value::Object(Default::default()))
}

const INSTRUCTIONS: &str = "Coordination for AI coding agents sharing one codebase. Before editing a file others \
may touch, acquire_lock it (if blocked, work on something else) and release_lock it when done. Take work with \
get_work and finish it with complete_work; add work with submit_work. At the start of a session read_handoff; \
before it ends write_handoff. More tools (files, memory, orchestration, ...) are in toolsets: list_toolsets names \
them, enable_toolset turns one on. Resources: locks://current, work://pending, handoffs://recent.";

/// `list_toolsets` and `enable_toolset`: always listed, small.
fn meta_tools() -> Vec<Tool> {
    let empty = serde_json::json!({"type": "object", "properties": {}});
    let named = serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "a toolset's name, or all"}},
        "required": ["name"],
    });
    let schema = |v: Value| match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::default(),
    };
    vec![
        Tool::new(
            toolsets::LIST_TOOLSETS,
            "The toolsets of coord's tools: name, what they are for, their tools, whether listed now. Answers \
             {toolsets:[{name, description, tools, listed}]}.",
            schema(empty),
        )
        .with_annotations(annotations(Effect::Read)),
        Tool::new(
            toolsets::ENABLE_TOOLSET,
            "List a toolset's tools from now on (name, or all); the tool list changes. A tool not listed can still \
             be called by name.",
            schema(named),
        )
        .with_annotations(annotations(Effect::Read)),
    ]
}

/// What `list_toolsets` answers.
fn toolsets_json(listed: &toolsets::Selection) -> Value {
    serde_json::json!({
        "success": true,
        "toolsets": toolsets::TOOLSETS
            .iter()
            .map(|t| serde_json::json!({
                "name": t.name,
                "description": t.description,
                "tools": t.tools,
                "listed": listed.lists(t.name),
            }))
            .collect::<Vec<_>>(),
    })
}

fn resource(uri: &str, name: &str, description: &str) -> Resource {
    Resource::new(uri, name)
        .with_description(description)
        .with_mime_type("application/json")
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CoordMcp {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let who = self.principal(&context).await;
        let allowed = self.allowed(&who).await;
        let selection = self.selection(&who, &context, allowed.as_ref());
        let mut tools: Vec<Tool> = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| {
                toolsets::toolset_of(&t.name).is_some_and(|s| selection.lists(s))
                    && allowed.as_ref().is_none_or(|a| a.contains(t.name.as_ref()))
            })
            .collect();
        tools.extend(meta_tools());
        let mut result = ListToolsResult::with_all_items(tools);
        // Listed per caller: a client may keep it for itself, no intermediary for others.
        if context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
        {
            result.ttl_ms = Some(0);
            result.cache_scope = Some(rmcp::model::CacheScope::Private);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        match request.name.as_ref() {
            toolsets::LIST_TOOLSETS => {
                let who = self.principal(&context).await;
                let allowed = self.allowed(&who).await;
                let listed = self.selection(&who, &context, allowed.as_ref());
                Ok(CallToolResult::structured(toolsets_json(&listed)).into())
            }
            toolsets::ENABLE_TOOLSET => {
                let who = self.principal(&context).await;
                let name = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let allowed = self.allowed(&who).await;
                let mut listed = self.selection(&who, &context, allowed.as_ref());
                if !listed.enable(&name) {
                    let e = coord_domain::CoordError::field(
                        ErrorCode::InvalidArgument,
                        "name",
                        format!("no toolset {name:?}: list_toolsets names them"),
                    );
                    return Ok(CallToolResult::structured_error(e.to_value()).into());
                }
                *self.listed.lock().unwrap_or_else(PoisonError::into_inner) = Some(listed.clone());
                // The client asks for the list again.
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(CallToolResult::structured(toolsets_json(&listed)).into())
            }
            _ => {
                use tracing::Instrument as _;
                // A name the client made up is not a span's name.
                let known = coord_service::ops()
                    .iter()
                    .any(|op| op.is_mcp_tool() && op.name == request.name.as_ref());
                let name = if known { request.name.as_ref() } else { "unknown" };
                let span = tool_span(name, self.session_id().as_deref());
                let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
                let answer = self.tool_router.call(tcc).instrument(span.clone()).await;
                let failed = match &answer {
                    Ok(rmcp::model::CallToolResponse::Complete(r)) => r.is_error == Some(true),
                    Ok(_) => false,
                    Err(_) => true,
                };
                if failed {
                    tool_failed(&span);
                }
                answer
            }
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("coord", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            RESOURCES
                .iter()
                .map(|(uri, name, description, _, _)| resource(uri, name, description))
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let text = self.resource_json(&request.uri, &context).await?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type("application/json"),
        ])
        .into())
    }
}

type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// stdin and stdout, read and written by the runtime itself when both are pipes (they are
/// when an agent runtime spawns us). tokio's `Stdin`/`Stdout` hand every read and write to
/// the blocking pool instead: two thread hand-offs per message, which cost more than the
/// coordination operation itself (`coord bench mcp`).
///
/// The pipes are reopened through `/proc/self/fd` to get open file descriptions of our
/// own: non-blocking mode set on the inherited ones would leak to every process sharing
/// them (a wrapper script, a parent with the same stdout). Anything else — a terminal, a
/// file, a socket, no `/proc` — goes through tokio's `Stdin`/`Stdout` unchanged.
fn stdio_halves() -> (Reader, Writer) {
    let reopened = || -> std::io::Result<(Reader, Writer)> {
        let (Some(reader), Some(writer)) = (stdio::reopen_pipe(0, false)?, stdio::reopen_pipe(1, true)?) else {
            return Err(std::io::Error::other("stdin and stdout are not both pipes"));
        };
        let reader = tokio::net::unix::pipe::Receiver::from_file(reader)?;
        let writer = tokio::net::unix::pipe::Sender::from_file(writer)?;
        Ok((Box::new(reader), Box::new(writer)))
    };
    reopened().unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdio through tokio's blocking Stdin/Stdout");
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    })
}

/// Serves one agent over stdin/stdout until the client disconnects, then marks its
/// session idle. Protocol logs go to stderr; stdout carries only the protocol.
///
/// SIGTERM, SIGINT or SIGHUP: the runtime is stopping this server (its agent is leaving),
/// so the holdings go at once; end of input alone may be a crash that a reconnect
/// follows, so they wait for the grace period.
pub async fn serve_stdio(coord: Arc<dyn Coordination>, options: McpOptions) -> Result<(), std::io::Error> {
    let (reader, writer) = stdio_halves();
    connection::serve(CoordMcp::new(coord, options), reader, writer, false, termination()).await
}

/// Serves one agent's connection relayed by its `coord mcp` process (see [`relay`]): as
/// [`serve_stdio`], with the relay's control lines ([`INPUT_CLOSED`], [`TERMINATE`])
/// standing for the end of the agent's input and for the signals the process received,
/// and [`CLOSED`] its last line once the session was ended.
pub async fn serve_relayed<R, W>(
    coord: Arc<dyn Coordination>,
    options: McpOptions,
    reader: R,
    writer: W,
) -> Result<(), std::io::Error>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    connection::serve(
        CoordMcp::new(coord, options),
        reader,
        writer,
        true,
        std::future::pending(),
    )
    .await
}

/// Resolves when this process is asked to stop (SIGTERM, SIGINT, SIGHUP).
pub async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let streams = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    );
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = streams else {
        tracing::warn!("cannot watch the termination signals; only end of input ends this server");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}
