//! The MCP door: every coordination operation as an MCP tool, plus three read-only
//! resources. Like every door it holds no rules: it turns tool arguments into requests,
//! calls [`Coordination`], and returns the result's JSON.
//!
//! Results keep the service's wire shapes as structured content (and as JSON text for
//! clients that only read text). A refused operation is a normal tool result with
//! `success: false`; only an outage of the store marks the result as an error.
//! Arguments that do not fit a tool's schema are answered by the SDK with a tool error
//! naming the field.

mod identity;
mod params;

pub use identity::{IdentityConfig, derive_identity};

use coord_domain::audit::AuditQueryRequest;
use coord_domain::error::ErrorKind;
use coord_domain::handoffs::{ALL_AGENTS, ReadHandoffRequest, WriteHandoffRequest};
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, ReleaseLockRequest};
use coord_domain::ports::{AllocatePortsRequest, ReleasePortsRequest};
use coord_domain::queue::{
    CompleteWorkRequest, GetTaskRequest, GetWorkRequest, ListTasksRequest, SubmitWorkRequest, TaskStatus,
};
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, DiscoverAgentsRequest, HeartbeatRequest, RegisterSessionRequest,
};
use coord_domain::{Caller, CoordResult};
use coord_service::Coordination;
use params::Parameters;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How a server ties MCP traffic to coordinator sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionMode {
    /// stdio: the connection is the session. It registers a new session on first use,
    /// heartbeats while the connection lives, and goes idle when it closes.
    PerConnection,
    /// Streamable HTTP: requests carry no connection; the first use of an identity
    /// starts its session (or keeps the one it has) through a heartbeat.
    Shared,
}

#[derive(Debug, Clone)]
pub struct McpOptions {
    pub identity: IdentityConfig,
    pub session_mode: SessionMode,
    /// How often a live connection heartbeats (well under the 15-minute stale threshold).
    pub heartbeat_every: Duration,
}

impl McpOptions {
    pub fn stdio(identity: IdentityConfig) -> Self {
        McpOptions {
            identity,
            session_mode: SessionMode::PerConnection,
            heartbeat_every: Duration::from_secs(5 * 60),
        }
    }

    pub fn http(identity: IdentityConfig) -> Self {
        McpOptions {
            session_mode: SessionMode::Shared,
            ..McpOptions::stdio(identity)
        }
    }
}

/// Per-connection state: who is calling, and whether its session is registered.
#[derive(Default)]
struct Session {
    caller: Mutex<Option<Caller>>,
    registered: AtomicBool,
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Clone)]
pub struct CoordMcp {
    coord: Arc<dyn Coordination>,
    options: Arc<McpOptions>,
    session: Arc<Session>,
    tool_router: ToolRouter<Self>,
}

/// The wire JSON of an outcome as a tool result. Refusals are ordinary results the model
/// reads (`success: false`, `error`, `message`); an unavailable store is a tool error.
fn reply<T: Serialize>(outcome: CoordResult<T>) -> Result<CallToolResult, McpError> {
    Ok(match outcome {
        Ok(v) => CallToolResult::structured(serde_json::to_value(v).unwrap_or_default()),
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal) => {
            CallToolResult::structured_error(e.to_value())
        }
        Err(e) => CallToolResult::structured(e.to_value()),
    })
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
    pub fn new(coord: Arc<dyn Coordination>, options: McpOptions) -> Self {
        CoordMcp {
            coord,
            options: Arc::new(options),
            session: Arc::new(Session::default()),
            tool_router: Self::tool_router(),
        }
    }

    /// The caller of this request, with its coordinator session started on first use.
    async fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        let (header_id, header_type) = header_identity(ctx);
        let client = ctx.client_info();
        let caller = derive_identity(
            &self.options.identity,
            header_id.as_deref(),
            header_type.as_deref(),
            client.as_ref().map(|c| c.name.as_str()),
        );
        *self.session.caller.lock().unwrap_or_else(PoisonError::into_inner) = Some(caller.clone());
        if !self.session.registered.swap(true, Ordering::SeqCst) {
            self.start_session(&caller).await;
        }
        caller
    }

    async fn start_session(&self, caller: &Caller) {
        let started = match self.options.session_mode {
            SessionMode::PerConnection => self
                .coord
                .register_session(caller, RegisterSessionRequest::default())
                .await
                .map(|_| ()),
            SessionMode::Shared => self.coord.heartbeat(caller, HeartbeatRequest {}).await.map(|_| ()),
        };
        match started {
            Ok(()) if self.options.session_mode == SessionMode::PerConnection => self.start_heartbeat(caller.clone()),
            Ok(()) => {}
            Err(e) => {
                // The tool call itself will report the outage; try again on the next call.
                tracing::warn!(error = %e, "could not start the agent session");
                self.session.registered.store(false, Ordering::SeqCst);
            }
        }
    }

    fn start_heartbeat(&self, caller: Caller) {
        let coord = self.coord.clone();
        let every = self.options.heartbeat_every;
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(e) = coord.heartbeat(&caller, HeartbeatRequest {}).await {
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

    /// The connection closed: stop heartbeating and mark the session idle. Locks stay
    /// until their TTL or a cleanup.
    pub async fn close(&self) {
        if let Some(task) = self
            .session
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        let caller = self
            .session
            .caller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let (Some(caller), true) = (caller, self.session.registered.load(Ordering::SeqCst))
            && let Err(e) = self.coord.mark_idle(&caller).await
        {
            tracing::warn!(error = %e, "could not mark the session idle");
        }
    }

    async fn resource_json(&self, uri: &str, ctx: &RequestContext<RoleServer>) -> Result<String, McpError> {
        let who = self.caller(ctx).await;
        let value = match uri {
            "locks://current" => to_json(self.coord.check_locks(&who, CheckLocksRequest::default()).await),
            "work://pending" => to_json(
                self.coord
                    .list_tasks(
                        &who,
                        ListTasksRequest {
                            status: Some(TaskStatus::Pending),
                            task_type: None,
                            limit: Some(200),
                        },
                    )
                    .await,
            ),
            "handoffs://recent" => to_json(
                self.coord
                    .read_handoff(
                        &who,
                        ReadHandoffRequest {
                            agent_name: Some(ALL_AGENTS.into()),
                            limit: Some(10),
                        },
                    )
                    .await,
            ),
            other => {
                return Err(McpError::resource_not_found(
                    format!(
                        "no resource {other:?}; this server has locks://current, work://pending, handoffs://recent"
                    ),
                    None,
                ));
            }
        };
        Ok(value.to_string())
    }
}

fn to_json<T: Serialize>(outcome: CoordResult<T>) -> serde_json::Value {
    match outcome {
        Ok(v) => serde_json::to_value(v).unwrap_or_default(),
        Err(e) => e.to_value(),
    }
}

#[tool_router]
impl CoordMcp {
    #[tool(
        description = "Take an exclusive lock on a file before editing it, so other agents do not edit it at the \
            same time. Paths are repo-relative (absolute paths inside the repository are accepted). Answers \
            {success:true, action:\"acquired\"|\"refreshed\", expires_at, fencing_token}; calling again while you \
            hold it refreshes the lease. If another agent holds it: {success:false, action:\"blocked\", locked_by, \
            expires_at, lock_reason} — do not edit the file; work on something else or wait. Release it when done."
    )]
    async fn acquire_lock(
        &self,
        Parameters(req): Parameters<AcquireLockRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.acquire_lock(&who, req).await)
    }

    #[tool(
        description = "Release a file lock you hold, as soon as you are done editing the file (also after a \
            failure). Answers {success:true, released:true}; error not_lock_owner if another agent holds it, \
            lock_not_held if nobody does (e.g. it expired)."
    )]
    async fn release_lock(
        &self,
        Parameters(req): Parameters<ReleaseLockRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.release_lock(&who, req).await)
    }

    #[tool(
        description = "List live file locks — all of them, or only on the given paths. Use it before planning \
            edits to see which files other agents are working on. Answers {locks:[{file_path, locked_by, \
            agent_type, reason, locked_at, expires_at, fencing_token}]}."
    )]
    async fn check_locks(
        &self,
        Parameters(req): Parameters<CheckLocksRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.check_locks(&who, req).await)
    }

    #[tool(
        description = "Claim the most urgent task from the shared work queue (priority 1 first, then oldest) whose \
            dependencies are all completed; optionally only of the given task_types. Answers {success:true, \
            task_id, task_type, task_description, input_data, priority, attempt, claimed_until}, or \
            {success:false, reason:\"no_tasks_available\"}. Finish every claimed task with complete_work; the \
            claim is a lease that heartbeats extend."
    )]
    async fn get_work(
        &self,
        Parameters(req): Parameters<GetWorkRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.get_work(&who, req).await)
    }

    #[tool(
        description = "Finish a task you claimed with get_work: success=true marks it completed (unblocking tasks \
            that depend on it), success=false marks it failed (tasks depending on it are cancelled). Answers \
            {success:true, status:\"completed\"|\"failed\"}; error not_task_owner if another agent claimed it."
    )]
    async fn complete_work(
        &self,
        Parameters(req): Parameters<CompleteWorkRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.complete_work(&who, req).await)
    }

    #[tool(
        description = "Add a task to the shared work queue for any agent to claim: task_type (e.g. test, refactor, \
            review), task_description, optional input_data (JSON), priority 1 (most urgent) to 10 (default 5), and \
            depends_on (task ids that must complete first). Answers {success:true, task_id, status}."
    )]
    async fn submit_work(
        &self,
        Parameters(req): Parameters<SubmitWorkRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.submit_work(&who, req).await)
    }

    #[tool(
        description = "Show one task in full: status (pending, claimed, completed, failed, cancelled), dependencies, \
            claimer, lease, attempts, result and failure reason. Answers {success:true, task:{...}}."
    )]
    async fn get_task(
        &self,
        Parameters(req): Parameters<GetTaskRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.get_task(&who, req).await)
    }

    #[tool(
        description = "Leave a handoff document for the next session (yours or another agent's): a summary \
            (required) and lists of completed_work, in_progress, decisions, next_steps and relevant_files. Write \
            one before your session ends or when your context runs low. Answers {success:true, handoff_id}."
    )]
    async fn write_handoff(
        &self,
        Parameters(req): Parameters<WriteHandoffRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.write_handoff(&who, req).await)
    }

    #[tool(
        description = "Read the most recent handoff documents, newest first: yours by default, another agent's with \
            agent_name, everyone's with agent_name \"*\"; limit defaults to 1. Read it at the start of a session \
            to resume prior work. Answers {handoffs:[...]} (empty when there are none)."
    )]
    async fn read_handoff(
        &self,
        Parameters(req): Parameters<ReadHandoffRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.read_handoff(&who, req).await)
    }

    #[tool(
        description = "Find other agents: optionally only those with a capability (e.g. review) or a status \
            (active, idle, disconnected). Answers {agents:[{agent_id, agent_type, capabilities, status, \
            current_task, last_heartbeat}]}."
    )]
    async fn discover_agents(
        &self,
        Parameters(req): Parameters<DiscoverAgentsRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.discover_agents(&who, req).await)
    }

    #[tool(
        description = "Start a new session so other agents can discover you, declaring your capabilities and what \
            you are working on. (This connection registers itself on first use; call this to set capabilities \
            or current_task.) Answers {success:true, session_id}."
    )]
    async fn register_session(
        &self,
        Parameters(req): Parameters<RegisterSessionRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.register_session(&who, req).await)
    }

    #[tool(
        description = "Tell the coordinator you are still alive; also extends the leases of tasks you have claimed. \
            This connection heartbeats by itself; call it during very long work. Answers {success:true, session_id}."
    )]
    async fn heartbeat(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.heartbeat(&who, HeartbeatRequest {}).await)
    }

    #[tool(
        description = "Disconnect agents whose last heartbeat is older than stale_threshold_minutes (default 15): \
            their locks are released and their claimed tasks go back to the queue. Use it when a crashed agent \
            blocks files or tasks. Answers {success:true, agents_cleaned, agents, locks_released, tasks_requeued}."
    )]
    async fn cleanup_dead_agents(
        &self,
        Parameters(req): Parameters<CleanupDeadAgentsRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.cleanup_dead_agents(&who, req).await)
    }

    #[tool(
        description = "Lease a block of four free ports for an isolated environment (database, REST, realtime, \
            API) under session_id, e.g. a worktree name. The same session always gets the same block and refreshes \
            its lease. Answers {success:true, allocation:{db_port, rest_port, realtime_port, api_port, \
            compose_project_name, expires_at}, env_snippet} — env_snippet holds `export` lines for \
            AGENT_COORDINATOR_*_PORT, API_PORT, COMPOSE_PROJECT_NAME and SUPABASE_URL. When every block is taken: \
            {success:false, error:\"no_ports_available\"}."
    )]
    async fn allocate_ports(
        &self,
        Parameters(req): Parameters<AllocatePortsRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.allocate_ports(&who, req).await)
    }

    #[tool(
        description = "Give back the port block leased under session_id when the environment is torn down. \
            Releasing an unknown or already released session also answers {success:true}."
    )]
    async fn release_ports(
        &self,
        Parameters(req): Parameters<ReleasePortsRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.release_ports(&who, req).await)
    }

    #[tool(
        description = "List every live port lease on this machine: session_id, the four ports, \
            compose_project_name and remaining_minutes."
    )]
    async fn ports_status(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.ports_status(&who).await)
    }

    #[tool(
        description = "Query the append-only audit trail of coordination operations, newest first, filtered by \
            agent_id, operation, time range (since/until, RFC 3339) and success. Answers {entries:[...]}."
    )]
    async fn query_audit(
        &self,
        Parameters(req): Parameters<AuditQueryRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let who = self.caller(&ctx).await;
        reply(self.coord.query_audit(&who, req).await)
    }
}

const INSTRUCTIONS: &str = "Coordination for AI coding agents sharing one codebase. Before editing a file others \
may touch, acquire_lock it (if blocked, work on something else) and release_lock it when done. Take work with \
get_work and finish it with complete_work; add work with submit_work. At the start of a session read_handoff; \
before it ends write_handoff. Resources: locks://current, work://pending, handoffs://recent.";

fn resource(uri: &str, name: &str, description: &str) -> Resource {
    Resource::new(uri, name)
        .with_description(description)
        .with_mime_type("application/json")
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CoordMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("coord", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            resource(
                "locks://current",
                "current-locks",
                "Every live file lock: path, holder, reason, expiry.",
            ),
            resource(
                "work://pending",
                "pending-work",
                "Tasks waiting in the queue, most urgent first.",
            ),
            resource(
                "handoffs://recent",
                "recent-handoffs",
                "The latest handoff documents of all agents.",
            ),
        ]))
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
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let is_pipe = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .and_then(|owned| std::fs::File::from(owned).metadata())
            .is_ok_and(|m| m.file_type().is_fifo())
    };
    let reopened = || -> std::io::Result<(Reader, Writer)> {
        if !(is_pipe(std::io::stdin().as_fd()) && is_pipe(std::io::stdout().as_fd())) {
            return Err(std::io::Error::other("stdin and stdout are not both pipes"));
        }
        let options = tokio::net::unix::pipe::OpenOptions::new();
        let reader = options.open_receiver("/proc/self/fd/0")?;
        let writer = options.open_sender("/proc/self/fd/1")?;
        Ok((Box::new(reader), Box::new(writer)))
    };
    reopened().unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdio through tokio's blocking Stdin/Stdout");
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    })
}

/// Serves one agent over stdin/stdout until the client disconnects, then marks its
/// session idle. Protocol logs go to stderr; stdout carries only the protocol.
pub async fn serve_stdio(coord: Arc<dyn Coordination>, options: McpOptions) -> Result<(), std::io::Error> {
    let server = CoordMcp::new(coord, options);
    let running = server
        .clone()
        .serve(stdio_halves())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let outcome = running.waiting().await;
    server.close().await;
    outcome.map(|_| ()).map_err(|e| std::io::Error::other(e.to_string()))
}
