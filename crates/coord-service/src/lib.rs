//! The service layer.
//!
//! [`Coordination`] is the interface every door (CLI, MCP, HTTP, hooks) calls. It has
//! two implementations: [`Coordinator`] runs operations against a local [`Store`], and a
//! remote client forwards them to a `coord serve` over HTTP. Doors never know which one
//! they hold.
//!
//! `Coordinator` owns the order of every operation: validate the caller's identity,
//! validate and normalise the arguments, run the operation in the store (which appends
//! the audit row in the same transaction). Input refused before reaching the store is
//! audited too.

pub mod clock;
mod ports;

use async_trait::async_trait;
use coord_domain::audit::{AuditQueryRequest, AuditQueryResult, AuditRecord, validate_audit_query};
use coord_domain::handoffs::{
    ReadHandoffRequest, ReadHandoffResult, WriteHandoffRequest, WriteHandoffResult, validate_handoff, validate_read,
};
use coord_domain::keys::{
    CreateApiKeyRequest, CreateApiKeyResult, KEY_PREFIX, ListApiKeysResult, RevokeApiKeyRequest, RevokeApiKeyResult,
    hash_key, validate_key_id, validate_new_key,
};
use coord_domain::locks::ReleaseAllResult;
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckLocksRequest, CheckLocksResult, ReleaseLockRequest, ReleaseLockResult,
    validate_acquire, validate_check,
};
use coord_domain::path::normalize_path;
use coord_domain::ports::{
    AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::queue::{
    CompleteWorkRequest, CompleteWorkResult, DEFAULT_CLAIM_LEASE_MINUTES, DEFAULT_MAX_ATTEMPTS, GetTaskRequest,
    GetTaskResult, GetWorkRequest, GetWorkResult, ListTasksRequest, ListTasksResult, SubmitWorkRequest,
    SubmitWorkResult, parse_task_id, validate_claim, validate_completion, validate_submission, validate_task_filter,
};
use coord_domain::sessions::AgentStatus;
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, CleanupResult, DiscoverAgentsRequest, DiscoverAgentsResult, HeartbeatRequest,
    RegisterSessionRequest, SessionResult, validate_capability, validate_registration, validate_stale_threshold,
};
use coord_domain::status::StatusResult;
use coord_domain::{Caller, CoordError, CoordResult};
use coord_ports::PortAllocator;
use coord_store::{OpCtx, Store, SweepReport};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use clock::{Clock, DatabaseClock, ManualClock};
pub use ports::{LocalPorts, Ports};

/// Every coordination operation, as the doors call it (port blocks included, through
/// [`Ports`]).
#[async_trait]
pub trait Coordination: Ports + Send + Sync {
    async fn acquire_lock(&self, caller: &Caller, req: AcquireLockRequest) -> CoordResult<AcquireLockResult>;
    async fn release_lock(&self, caller: &Caller, req: ReleaseLockRequest) -> CoordResult<ReleaseLockResult>;
    /// Releases every lock the caller holds (a session ending).
    async fn release_my_locks(&self, caller: &Caller) -> CoordResult<ReleaseAllResult>;
    async fn check_locks(&self, caller: &Caller, req: CheckLocksRequest) -> CoordResult<CheckLocksResult>;

    async fn submit_work(&self, caller: &Caller, req: SubmitWorkRequest) -> CoordResult<SubmitWorkResult>;
    async fn get_work(&self, caller: &Caller, req: GetWorkRequest) -> CoordResult<GetWorkResult>;
    async fn complete_work(&self, caller: &Caller, req: CompleteWorkRequest) -> CoordResult<CompleteWorkResult>;
    async fn get_task(&self, caller: &Caller, req: GetTaskRequest) -> CoordResult<GetTaskResult>;
    async fn list_tasks(&self, caller: &Caller, req: ListTasksRequest) -> CoordResult<ListTasksResult>;

    async fn register_session(&self, caller: &Caller, req: RegisterSessionRequest) -> CoordResult<SessionResult>;
    async fn heartbeat(&self, caller: &Caller, req: HeartbeatRequest) -> CoordResult<SessionResult>;
    async fn discover_agents(&self, caller: &Caller, req: DiscoverAgentsRequest) -> CoordResult<DiscoverAgentsResult>;
    async fn cleanup_dead_agents(&self, caller: &Caller, req: CleanupDeadAgentsRequest) -> CoordResult<CleanupResult>;
    /// Marks the caller's session idle (its connection closed; its locks stay until TTL
    /// or cleanup).
    async fn mark_idle(&self, caller: &Caller) -> CoordResult<SessionResult>;

    async fn write_handoff(&self, caller: &Caller, req: WriteHandoffRequest) -> CoordResult<WriteHandoffResult>;
    async fn read_handoff(&self, caller: &Caller, req: ReadHandoffRequest) -> CoordResult<ReadHandoffResult>;

    async fn query_audit(&self, caller: &Caller, req: AuditQueryRequest) -> CoordResult<AuditQueryResult>;
    async fn status(&self, caller: &Caller) -> CoordResult<StatusResult>;

    /// Managed API keys (HTTP credentials bound to an identity). The secret is returned
    /// once and stored only as a hash.
    async fn create_api_key(&self, caller: &Caller, req: CreateApiKeyRequest) -> CoordResult<CreateApiKeyResult>;
    async fn list_api_keys(&self, caller: &Caller) -> CoordResult<ListApiKeysResult>;
    async fn revoke_api_key(&self, caller: &Caller, req: RevokeApiKeyRequest) -> CoordResult<RevokeApiKeyResult>;
    /// The identity a presented managed key acts as, if it is live.
    async fn authenticate_key(&self, key: &str) -> CoordResult<Option<Caller>>;
    /// Whether the store answers.
    async fn health(&self) -> CoordResult<()>;
}

/// Tunables of the service; defaults follow the spec.
#[derive(Debug, Clone)]
pub struct CoordConfig {
    /// Absolute repository root as this process sees it; absolute lock paths inside it
    /// are made repo-relative.
    pub repo_root: Option<String>,
    /// Claims a task gets before it fails with `max_attempts_exceeded`.
    pub max_attempts: i32,
    /// Lease of a claim; heartbeats extend it.
    pub claim_lease_minutes: i64,
    /// Rows per background sweep batch.
    pub sweep_batch: i64,
}

impl Default for CoordConfig {
    fn default() -> Self {
        CoordConfig {
            repo_root: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            claim_lease_minutes: DEFAULT_CLAIM_LEASE_MINUTES,
            sweep_batch: 500,
        }
    }
}

/// The local implementation of [`Coordination`] over a [`Store`].
#[derive(Clone)]
pub struct Coordinator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: Arc<CoordConfig>,
    ports: Option<LocalPorts>,
}

fn new_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

impl Coordinator {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, config: CoordConfig) -> Self {
        Coordinator {
            store,
            clock,
            config: Arc::new(config),
            ports: None,
        }
    }

    /// Adds the port allocator (it keeps its leases outside the store).
    pub fn with_ports(mut self, ports: PortAllocator) -> Self {
        self.ports = Some(LocalPorts::new(ports, self.clock.clone()));
        self
    }

    fn local_ports(&self) -> CoordResult<&LocalPorts> {
        self.ports.as_ref().ok_or_else(|| {
            CoordError::new(
                coord_domain::ErrorCode::NotFound,
                "this coordinator has no port allocator configured",
            )
        })
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn config(&self) -> &CoordConfig {
        &self.config
    }

    fn root(&self) -> Option<&str> {
        self.config.repo_root.as_deref()
    }

    /// Starts an operation: records its parameters and start time, validates the caller.
    async fn begin<Req: Serialize>(&self, caller: &Caller, operation: &'static str, req: &Req) -> CoordResult<OpCtx> {
        let started = Instant::now();
        let parameters = serde_json::to_value(req).unwrap_or(serde_json::Value::Null);
        let now = self.clock.now();
        match caller.validate() {
            Ok(who) => Ok(OpCtx {
                now,
                who,
                operation,
                parameters,
                started,
            }),
            Err(e) => {
                let ctx = OpCtx {
                    now,
                    who: caller.for_audit(),
                    operation,
                    parameters,
                    started,
                };
                Err(self.refused(&ctx, e).await)
            }
        }
    }

    /// Passes validated arguments through, or audits the refusal and returns it.
    async fn checked<V>(&self, ctx: OpCtx, args: CoordResult<V>) -> CoordResult<(OpCtx, V)> {
        match args {
            Ok(v) => Ok((ctx, v)),
            Err(e) => Err(self.refused(&ctx, e).await),
        }
    }

    async fn refused(&self, ctx: &OpCtx, e: CoordError) -> CoordError {
        let record: AuditRecord = ctx.audit::<()>(Err(&e));
        if let Err(audit_err) = self.store.append_audit(ctx.now, record).await {
            // The refusal still reaches the caller; the lost audit row is logged.
            tracing::warn!(operation = ctx.operation, error = %audit_err, "could not audit a refused operation");
        }
        e
    }

    /// One bounded maintenance pass (expired lock rows, expired claims).
    pub async fn sweep(&self) -> CoordResult<SweepReport> {
        self.store.sweep(self.clock.now(), self.config.sweep_batch).await
    }

    /// Runs [`Coordinator::sweep`] every `every` until the returned handle is aborted.
    /// For long-lived processes (`coord serve`, `coord mcp`).
    pub fn spawn_sweeper(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                loop {
                    match me.sweep().await {
                        Ok(r)
                            if r.expired_locks_deleted + r.claims_requeued + r.claims_failed
                                >= me.config.sweep_batch =>
                        {
                            continue;
                        }
                        Ok(_) => break,
                        Err(e) => {
                            tracing::warn!(error = %e, "sweep failed");
                            break;
                        }
                    }
                }
            }
        })
    }
}

#[async_trait]
impl Coordination for Coordinator {
    async fn acquire_lock(&self, caller: &Caller, req: AcquireLockRequest) -> CoordResult<AcquireLockResult> {
        let ctx = self.begin(caller, "acquire_lock", &req).await?;
        let (ctx, (path, reason, ttl)) = self.checked(ctx, validate_acquire(req, self.root())).await?;
        self.store.acquire_lock(ctx, path, reason, ttl).await
    }

    async fn release_lock(&self, caller: &Caller, req: ReleaseLockRequest) -> CoordResult<ReleaseLockResult> {
        let ctx = self.begin(caller, "release_lock", &req).await?;
        let (ctx, path) = self.checked(ctx, normalize_path(&req.file_path, self.root())).await?;
        self.store.release_lock(ctx, path).await
    }

    async fn release_my_locks(&self, caller: &Caller) -> CoordResult<ReleaseAllResult> {
        let ctx = self.begin(caller, "release_my_locks", &serde_json::json!({})).await?;
        self.store.release_all_locks(ctx).await
    }

    async fn check_locks(&self, caller: &Caller, req: CheckLocksRequest) -> CoordResult<CheckLocksResult> {
        let ctx = self.begin(caller, "check_locks", &req).await?;
        let (ctx, paths) = self.checked(ctx, validate_check(req, self.root())).await?;
        self.store.check_locks(ctx, paths).await
    }

    async fn submit_work(&self, caller: &Caller, req: SubmitWorkRequest) -> CoordResult<SubmitWorkResult> {
        let ctx = self.begin(caller, "submit_work", &req).await?;
        let (ctx, task) = self
            .checked(ctx, validate_submission(req, new_id(), self.config.max_attempts))
            .await?;
        self.store.submit_work(ctx, task).await
    }

    async fn get_work(&self, caller: &Caller, req: GetWorkRequest) -> CoordResult<GetWorkResult> {
        let ctx = self.begin(caller, "get_work", &req).await?;
        let (ctx, spec) = self
            .checked(ctx, validate_claim(req, self.config.claim_lease_minutes))
            .await?;
        self.store.claim_work(ctx, spec).await
    }

    async fn complete_work(&self, caller: &Caller, req: CompleteWorkRequest) -> CoordResult<CompleteWorkResult> {
        let ctx = self.begin(caller, "complete_work", &req).await?;
        let (ctx, completion) = self.checked(ctx, validate_completion(req)).await?;
        self.store.complete_work(ctx, completion).await
    }

    async fn get_task(&self, caller: &Caller, req: GetTaskRequest) -> CoordResult<GetTaskResult> {
        let ctx = self.begin(caller, "get_task", &req).await?;
        let (ctx, id) = self.checked(ctx, parse_task_id("task_id", &req.task_id)).await?;
        self.store.get_task(ctx, id).await
    }

    async fn list_tasks(&self, caller: &Caller, req: ListTasksRequest) -> CoordResult<ListTasksResult> {
        let ctx = self.begin(caller, "list_tasks", &req).await?;
        let (ctx, filter) = self.checked(ctx, validate_task_filter(req)).await?;
        self.store.list_tasks(ctx, filter).await
    }

    async fn register_session(&self, caller: &Caller, req: RegisterSessionRequest) -> CoordResult<SessionResult> {
        let ctx = self.begin(caller, "register_session", &req).await?;
        let (ctx, session) = self.checked(ctx, validate_registration(req, new_id())).await?;
        self.store.register_session(ctx, session).await
    }

    async fn heartbeat(&self, caller: &Caller, req: HeartbeatRequest) -> CoordResult<SessionResult> {
        let ctx = self.begin(caller, "heartbeat", &req).await?;
        self.store
            .heartbeat(ctx, new_id(), self.config.claim_lease_minutes)
            .await
    }

    async fn discover_agents(&self, caller: &Caller, req: DiscoverAgentsRequest) -> CoordResult<DiscoverAgentsResult> {
        let status = req.status;
        let ctx = self.begin(caller, "discover_agents", &req).await?;
        let (ctx, capability) = self.checked(ctx, validate_capability(req.capability)).await?;
        self.store.discover_agents(ctx, capability, status).await
    }

    async fn cleanup_dead_agents(&self, caller: &Caller, req: CleanupDeadAgentsRequest) -> CoordResult<CleanupResult> {
        let ctx = self.begin(caller, "cleanup_dead_agents", &req).await?;
        let (ctx, minutes) = self
            .checked(ctx, validate_stale_threshold(req.stale_threshold_minutes))
            .await?;
        let cleaned = self.store.cleanup_dead_agents(ctx, minutes).await?;
        // Cleanup is the maintenance command: it also purges one bounded batch of expired
        // rows, so deployments without a long-lived process still shed them.
        if let Err(e) = self.sweep().await {
            tracing::warn!(error = %e, "sweep after cleanup failed");
        }
        Ok(cleaned)
    }

    async fn mark_idle(&self, caller: &Caller) -> CoordResult<SessionResult> {
        let ctx = self.begin(caller, "mark_idle", &serde_json::json!({})).await?;
        self.store.set_session_status(ctx, AgentStatus::Idle).await
    }

    async fn write_handoff(&self, caller: &Caller, req: WriteHandoffRequest) -> CoordResult<WriteHandoffResult> {
        let ctx = self.begin(caller, "write_handoff", &req).await?;
        let (ctx, handoff) = self.checked(ctx, validate_handoff(req, new_id())).await?;
        self.store.write_handoff(ctx, handoff).await
    }

    async fn read_handoff(&self, caller: &Caller, req: ReadHandoffRequest) -> CoordResult<ReadHandoffResult> {
        let ctx = self.begin(caller, "read_handoff", &req).await?;
        let query = validate_read(req, &ctx.who.agent_id);
        let (ctx, query) = self.checked(ctx, query).await?;
        self.store.read_handoff(ctx, query).await
    }

    async fn query_audit(&self, caller: &Caller, req: AuditQueryRequest) -> CoordResult<AuditQueryResult> {
        let ctx = self.begin(caller, "query_audit", &req).await?;
        let (ctx, filter) = self.checked(ctx, validate_audit_query(req)).await?;
        self.store.query_audit(ctx, filter).await
    }

    async fn status(&self, caller: &Caller) -> CoordResult<StatusResult> {
        let ctx = self.begin(caller, "status", &serde_json::json!({})).await?;
        self.store.status(ctx).await
    }

    async fn create_api_key(&self, caller: &Caller, req: CreateApiKeyRequest) -> CoordResult<CreateApiKeyResult> {
        // The request holds no secret, so it is safe to audit as given.
        let ctx = self.begin(caller, "create_api_key", &req).await?;
        let secret = format!(
            "{KEY_PREFIX}{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let key_id = format!("key_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let (ctx, key) = self.checked(ctx, validate_new_key(req, key_id, &secret)).await?;
        let info = self.store.create_api_key(ctx, key).await?;
        Ok(CreateApiKeyResult {
            success: true,
            key_id: info.key_id,
            api_key: secret,
            agent_id: info.agent_id,
            agent_type: info.agent_type,
            expires_at: info.expires_at,
        })
    }

    async fn list_api_keys(&self, caller: &Caller) -> CoordResult<ListApiKeysResult> {
        let ctx = self.begin(caller, "list_api_keys", &serde_json::json!({})).await?;
        self.store.list_api_keys(ctx).await
    }

    async fn revoke_api_key(&self, caller: &Caller, req: RevokeApiKeyRequest) -> CoordResult<RevokeApiKeyResult> {
        let ctx = self.begin(caller, "revoke_api_key", &req).await?;
        let (ctx, key_id) = self.checked(ctx, validate_key_id(&req.key_id)).await?;
        self.store.revoke_api_key(ctx, key_id).await
    }

    async fn authenticate_key(&self, key: &str) -> CoordResult<Option<Caller>> {
        let found = self.store.authenticate_key(self.clock.now(), hash_key(key)).await?;
        Ok(found.map(|i| Caller::new(i.agent_id, i.agent_type)))
    }

    async fn health(&self) -> CoordResult<()> {
        self.store.ping().await
    }
}

#[async_trait]
impl Ports for Coordinator {
    async fn allocate_ports(&self, caller: &Caller, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult> {
        self.local_ports()?.allocate_ports(caller, req).await
    }

    async fn release_ports(&self, caller: &Caller, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult> {
        self.local_ports()?.release_ports(caller, req).await
    }

    async fn ports_status(&self, caller: &Caller) -> CoordResult<PortsStatusResult> {
        self.local_ports()?.ports_status(caller).await
    }
}
