//! The service layer: every coordination operation defined once ([`op`], [`ops`]),
//! listed once ([`registry`]) and run by one pipeline ([`pipeline`]).
//!
//! [`Coordination`] is what every door calls: one erased method, [`Coordination::invoke`],
//! taking an operation of the registry and its JSON request. It has two
//! implementations: [`Coordinator`] runs operations against a local [`Store`]; the remote
//! client forwards them to a `coord serve` over HTTP. Rust callers use the typed front,
//! [`call`] (and [`CoordinationExt`] for the foundation's operations), which skips JSON
//! when the coordinator is local.

mod call;
pub mod clock;
mod files;
pub mod launcher;
pub mod metrics;
pub mod op;
pub mod ops;
pub mod pipeline;
mod ports;
pub mod registry;

use async_trait::async_trait;
use coord_domain::access::Principal;
use coord_domain::keys::{KeyOrigin, hash_key};
use coord_domain::queue::{DEFAULT_CLAIM_LEASE_MINUTES, DEFAULT_MAX_ATTEMPTS};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode, Timestamp};
use coord_ports::PortAllocator;
use coord_store::{Store, SweepReport};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub use call::{CoordinationExt, call};
pub use clock::{Clock, DatabaseClock, ManualClock};
pub use files::WorkspaceDir;
pub use launcher::{Judgement, Launcher};
pub use op::{Audit, Http, Input, Method, Operation};
pub use ports::{LocalPorts, Ports};
pub use registry::{OpEntry, op_named, ops};

/// Every coordination operation, as the doors call it.
#[async_trait]
pub trait Coordination: Send + Sync {
    /// Runs `op` for `who` with a JSON request — or with the error a door met reading
    /// one, so the refusal is audited like any other — and answers the wire JSON.
    async fn invoke(&self, op: &'static OpEntry, who: &Principal, request: CoordResult<Value>) -> CoordResult<Value>;

    /// The local coordinator, when this is one: typed callers then skip JSON.
    fn local(&self) -> Option<&Coordinator> {
        None
    }
}

/// What only a server holding the database can answer: whose a managed key is, and
/// whether the database is up. Not operations (not audited: every authenticated HTTP
/// request would write a row), and not something a remote client can be asked.
#[async_trait]
pub trait Server: Coordination {
    /// The identity a presented managed key acts as and where it came from; `None` for a
    /// key nobody issued, `unauthorized` (saying when) for an expired or revoked one.
    async fn authenticate_key(&self, key: &str) -> CoordResult<Option<(Caller, KeyOrigin)>>;
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
    /// Days audit rows are kept before `prune_audit` removes them.
    pub audit_retention_days: i64,
    /// The key prune checkpoints are signed and checked with (kept outside the
    /// database); without one, pruning is refused and signatures go unchecked.
    pub audit_key: Option<coord_domain::audit_chain::AuditKey>,
    /// The directories `read_file` / `write_file` may touch (none: the file tools are
    /// off). The CLI configures the repository root unless `--workspace` says otherwise.
    pub workspaces: Vec<WorkspaceDir>,
    /// The largest file the file tools read or write, in bytes.
    pub file_size_limit: u64,
    /// coord's own files inside the repository (a database given with `--db`, its
    /// journals, the audit key), repository-relative: the file tools refuse them.
    pub protected_paths: Vec<String>,
    /// The half-life of recall's recency decay, in days.
    pub recall_half_life_days: f64,
    /// The working-memory token budget of a session (estimated tokens).
    pub working_memory_budget: i64,
    /// Days an episodic memory nobody met is kept before `prune_memories` removes it.
    pub memory_retention_days: i64,
    /// The coordinator's own hosts (`host`, `*.host`, `host:port`): the `coordination`
    /// category of network policies.
    pub coordination_domains: Vec<String>,
    /// Model endpoints (`host`, `host:port`) beyond the providers' own: the
    /// `model_providers` category (what agents coord launches need to reach).
    pub model_endpoints: Vec<String>,
    /// Spawned agents running at once and how deep spawns nest.
    pub spawn_limits: coord_domain::agents::spawn::SpawnLimits,
}

impl CoordConfig {
    pub fn rank_params(&self) -> coord_domain::memory::rank::RankParams {
        coord_domain::memory::rank::RankParams {
            half_life_days: self.recall_half_life_days,
        }
    }
}

impl Default for CoordConfig {
    fn default() -> Self {
        CoordConfig {
            repo_root: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            claim_lease_minutes: DEFAULT_CLAIM_LEASE_MINUTES,
            sweep_batch: 500,
            audit_retention_days: coord_domain::audit_chain::DEFAULT_RETENTION_DAYS,
            audit_key: None,
            workspaces: Vec::new(),
            file_size_limit: coord_files::DEFAULT_MAX_BYTES,
            protected_paths: Vec::new(),
            recall_half_life_days: coord_domain::memory::rank::DEFAULT_HALF_LIFE_DAYS,
            working_memory_budget: coord_domain::memory::working::DEFAULT_BUDGET,
            memory_retention_days: coord_domain::memory::retention::DEFAULT_RETENTION_DAYS,
            coordination_domains: Vec::new(),
            model_endpoints: Vec::new(),
            spawn_limits: Default::default(),
        }
    }
}

/// The local implementation of [`Coordination`] over a [`Store`].
#[derive(Clone)]
pub struct Coordinator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: Arc<CoordConfig>,
    /// The port allocator, or why there is none (a bad `PORT_ALLOC_*` setting must fail
    /// the port operations only, never locks or the edit and commit guards).
    ports: Result<LocalPorts, CoordError>,
    /// The guardrails' pattern registry last compiled, and the `operation_guardrails`
    /// rows it was compiled from (compiled again only when they change).
    patterns: ops::guardrails::PatternCache,
    /// The file tools' workspaces, opened once, or why they could not be.
    workspaces: Arc<CoordResult<files::Workspaces>>,
    /// What starts spawned agents (none: `spawn_agent` answers `spawn_unavailable`).
    launcher: Option<Arc<dyn Launcher>>,
    /// This process's operation counters (`GET /metrics`).
    metrics: metrics::Metrics,
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

impl Coordinator {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, config: CoordConfig) -> Self {
        let workspaces = files::Workspaces::open(&config.workspaces);
        if let Err(e) = &workspaces
            && !config.workspaces.is_empty()
        {
            tracing::warn!(error = %e, "the file tools are off");
        }
        Coordinator {
            workspaces: Arc::new(workspaces),
            store,
            clock,
            config: Arc::new(config),
            ports: Err(CoordError::new(
                ErrorCode::NotFound,
                "this coordinator has no port allocator configured",
            )),
            patterns: Default::default(),
            launcher: None,
            metrics: Default::default(),
        }
    }

    /// Adds what starts spawned agents (`spawn_agent`).
    pub fn with_launcher(mut self, launcher: Arc<dyn Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    pub(crate) fn launcher(&self) -> CoordResult<&Arc<dyn Launcher>> {
        self.launcher.as_ref().ok_or_else(|| {
            CoordError::new(
                ErrorCode::SpawnUnavailable,
                "this coordinator cannot start agents: spawn_agent needs a local coordinator (coord mcp, coord serve, \
                 the coord CLI) with a workspace",
            )
        })
    }

    /// Adds the port allocator (it keeps its leases outside the store).
    pub fn with_ports(mut self, ports: PortAllocator) -> Self {
        self.ports = Ok(LocalPorts::new(ports, self.clock.clone()));
        self
    }

    /// Records why the port allocator could not be set up; port operations answer it.
    pub fn without_ports(mut self, why: CoordError) -> Self {
        self.ports = Err(why);
        self
    }

    /// Records why the workspaces could not be set up (a bad `--workspace`): the file
    /// tools answer it, everything else works.
    pub fn without_workspaces(mut self, why: CoordError) -> Self {
        let why = CoordError::new(
            ErrorCode::ConfinementUnavailable,
            format!("the file tools are off: {}", why.message),
        );
        self.workspaces = Arc::new(Err(why));
        self
    }

    pub(crate) fn workspaces(&self) -> CoordResult<&files::Workspaces> {
        self.workspaces.as_ref().as_ref().map_err(Clone::clone)
    }

    pub(crate) fn local_ports(&self) -> CoordResult<&LocalPorts> {
        self.ports.as_ref().map_err(Clone::clone)
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// This process's operation counters.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.metrics
    }

    pub fn config(&self) -> &CoordConfig {
        &self.config
    }

    pub fn root(&self) -> Option<&str> {
        self.config.repo_root.as_deref()
    }

    /// The coordinator's time: None defers to the database's clock.
    pub fn now(&self) -> Option<Timestamp> {
        self.clock.now()
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

impl Coordinator {
    /// Removes audit rows older than the retention every `every`, through `prune_audit`
    /// like any other caller (audited, checkpointed), then memories past theirs through
    /// `prune_memories`, as the server itself: an operator credential named
    /// `coord-retention`; and acts on GitHub deliveries left unprocessed. Failures are
    /// logged and retried next time.
    pub fn spawn_audit_pruner(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let who = Principal::new(
                Caller::new("coord-retention", "coord"),
                coord_domain::access::Credential::Operator,
            );
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match call::<ops::audit::PruneAudit, _>(&me, &who, Default::default()).await {
                    Ok(r) if r.pruned_rows > 0 => {
                        tracing::info!(rows = r.pruned_rows, cutoff = %r.cutoff, "pruned audit rows past retention")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "audit prune failed"),
                }
                // Memories past their retention, a batch at a time until none is left.
                loop {
                    match call::<ops::memory::PruneMemories, _>(&me, &who, Default::default()).await {
                        Ok(r) => {
                            if r.pruned > 0 {
                                tracing::info!(memories = r.pruned, cutoff = %r.cutoff, "pruned memories past retention");
                            }
                            if !r.more {
                                break;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "memory prune failed");
                            break;
                        }
                    }
                }
                // GitHub deliveries recorded and not acted on (a coordinator stopped in
                // between): at start, then with every round.
                match ops::github::resume_deliveries(&me, None).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deliveries = n, "acted on GitHub deliveries left from before"),
                    Err(e) => tracing::warn!(error = %e, "resuming GitHub deliveries failed"),
                }
            }
        })
    }
}

#[async_trait]
impl Coordination for Coordinator {
    async fn invoke(&self, op: &'static OpEntry, who: &Principal, request: CoordResult<Value>) -> CoordResult<Value> {
        (op.run)(self, who, request).await
    }

    fn local(&self) -> Option<&Coordinator> {
        Some(self)
    }
}

#[async_trait]
impl Server for Coordinator {
    async fn authenticate_key(&self, key: &str) -> CoordResult<Option<(Caller, KeyOrigin)>> {
        let Some(found) = self.store.authenticate_key(self.clock.now(), hash_key(key)).await? else {
            return Ok(None);
        };
        let (who, origin) = found.live()?;
        Ok(Some((Caller::new(who.agent_id, who.agent_type), origin)))
    }

    async fn health(&self) -> CoordResult<()> {
        self.store.ping().await
    }
}
