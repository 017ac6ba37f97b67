use async_trait::async_trait;
use coord_domain::locks::{AcquireLockRequest, AcquireLockResult};
use coord_domain::queue::{
    CompleteWorkRequest, CompleteWorkResult, GetTaskRequest, GetWorkRequest, GetWorkResult, SubmitWorkRequest, TaskInfo,
};
use coord_domain::{Caller, CoordResult, Timestamp};
use coord_service::{CoordConfig, Coordination, CoordinationExt as _, Coordinator, ManualClock};
use coord_store::Store;
use std::sync::Arc;

/// Direct access to a fixture's database, bypassing the service, for the few checks
/// that must look underneath it (append-only audit rows, outages).
#[async_trait]
pub trait RawSql: Send + Sync {
    /// Runs one statement on the store's database; `Err` carries the database's message.
    async fn execute(&self, sql: &str) -> Result<u64, String>;
    /// Makes the store's database unusable for the store until [`RawSql::heal_store`].
    async fn break_store(&self);
    async fn heal_store(&self);
}

/// A fresh, empty, migrated store and raw access to its database.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    pub raw: Box<dyn RawSql>,
}

/// Which door the cases talk through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The coordinator itself.
    InProcess,
    /// The JSON API, through the remote client.
    Http,
    /// MCP tools, through an MCP client.
    Mcp,
}

/// What a store crate provides to run the suite.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Whether the backend can run here. A backend that cannot must say so loudly
    /// (and fail instead where it is required, e.g. under CI).
    async fn available(&self) -> bool {
        true
    }
    async fn fixture(&self) -> Fixture;

    /// Puts a door in front of the coordinator, for suites that run through one (the
    /// HTTP API and its remote client); the default is the coordinator itself.
    async fn wrap(&self, coord: Coordinator) -> Arc<dyn Coordination> {
        Arc::new(coord)
    }

    /// The door [`Backend::wrap`] puts in front (what a client of it can send differs:
    /// MCP arguments are always objects, query strings hold no nested values).
    fn door(&self) -> Door {
        Door::InProcess
    }
}

/// The agent type of the cases' agents: Claude Code's, whose built-in default profile
/// (claude-code-cli, trust 3) lets them do everything but administer. Cases about
/// profiles assign others.
pub const AGENT_TYPE: &str = "claude_code";

pub fn agent(name: &str) -> Caller {
    Caller::new(name, AGENT_TYPE)
}

/// Someone at the terminal (agent type `cli`, built-in default profile local-operator,
/// trust 4): administers keys and profiles.
pub fn operator(name: &str) -> Caller {
    Caller::new(name, "cli")
}

/// A coordinator over a fresh store, with a manual clock.
pub struct Harness {
    /// What the cases call: the coordinator, or a door in front of it.
    pub coord: Arc<dyn Coordination>,
    /// The coordinator itself, for maintenance no door exposes.
    pub local: Coordinator,
    pub clock: Arc<ManualClock>,
    pub store: Arc<dyn Store>,
    pub raw: Box<dyn RawSql>,
    /// The door the cases talk through.
    pub door: Door,
    /// The file tools' workspace (a fresh directory; the repository root for them).
    pub workspace: tempfile::TempDir,
}

impl Harness {
    /// The repository root absolute lock paths are resolved against.
    pub const ROOT: &'static str = "/work/repo";

    pub async fn new(b: &dyn Backend) -> Harness {
        Harness::with_config(b, |_| {}).await
    }

    pub async fn with_config(b: &dyn Backend, tune: impl FnOnce(&mut CoordConfig)) -> Harness {
        Harness::build(b, tune, false, None).await
    }

    /// A harness whose coordinator spawns agents with `launcher`.
    pub async fn with_launcher(
        b: &dyn Backend,
        launcher: Arc<dyn coord_service::Launcher>,
        tune: impl FnOnce(&mut CoordConfig),
    ) -> Harness {
        Harness::build(b, tune, false, Some(launcher)).await
    }

    /// A harness whose coordinator uses the database's clock; `clock` is unused.
    pub async fn with_database_clock(b: &dyn Backend) -> Harness {
        Harness::build(b, |_| {}, true, None).await
    }

    async fn build(
        b: &dyn Backend,
        tune: impl FnOnce(&mut CoordConfig),
        database_clock: bool,
        launcher: Option<Arc<dyn coord_service::Launcher>>,
    ) -> Harness {
        let fx = b.fixture().await;
        let clock = Arc::new(ManualClock::starting_now());
        let coord_clock: Arc<dyn coord_service::Clock> = if database_clock {
            Arc::new(coord_service::DatabaseClock)
        } else {
            clock.clone()
        };
        let workspace = tempfile::tempdir().expect("a workspace directory");
        let mut config = CoordConfig {
            repo_root: Some(Harness::ROOT.into()),
            audit_key: Some(Harness::audit_key()),
            workspaces: vec![coord_service::WorkspaceDir {
                dir: workspace.path().to_path_buf(),
                prefix: String::new(),
            }],
            ..CoordConfig::default()
        };
        tune(&mut config);
        let local = Coordinator::new(fx.store.clone(), coord_clock, config);
        let local = match launcher {
            Some(l) => local.with_launcher(l),
            None => local,
        };
        Harness {
            coord: b.wrap(local.clone()).await,
            local,
            clock,
            store: fx.store,
            raw: fx.raw,
            door: b.door(),
            workspace,
        }
    }

    /// A path in the file tools' workspace.
    pub fn ws(&self, rel: &str) -> std::path::PathBuf {
        self.workspace.path().join(rel)
    }

    /// The key the harness's coordinator signs audit checkpoints with.
    pub fn audit_key() -> coord_domain::audit_chain::AuditKey {
        coord_domain::audit_chain::AuditKey::new("conformance audit key, not a secret")
    }

    /// One maintenance pass on the coordinator behind any door.
    pub async fn sweep(&self) -> CoordResult<coord_store::SweepReport> {
        self.local.sweep().await
    }

    pub fn now(&self) -> Timestamp {
        self.clock.get()
    }

    pub fn advance(&self, minutes: i64) {
        self.clock.advance_minutes(minutes);
    }

    pub async fn lock(&self, who: &Caller, path: &str, ttl: Option<i64>) -> AcquireLockResult {
        self.coord
            .acquire_lock(
                who,
                AcquireLockRequest {
                    file_path: path.into(),
                    reason: None,
                    ttl_minutes: ttl,
                },
            )
            .await
            .expect("acquire_lock answers")
    }

    pub async fn submit(&self, who: &Caller, task_type: &str, priority: i64, deps: &[&str]) -> String {
        let r = self
            .coord
            .submit_work(
                who,
                SubmitWorkRequest {
                    task_type: task_type.into(),
                    task_description: format!("{task_type} task"),
                    input_data: None,
                    priority: Some(priority),
                    depends_on: if deps.is_empty() {
                        None
                    } else {
                        Some(deps.iter().map(|d| d.to_string()).collect())
                    },
                },
            )
            .await
            .expect("submit_work answers");
        assert!(r.success);
        r.task_id
    }

    pub async fn claim(&self, who: &Caller) -> GetWorkResult {
        self.coord
            .get_work(who, GetWorkRequest::default())
            .await
            .expect("get_work answers")
    }

    pub async fn claimed_id(&self, who: &Caller) -> String {
        let r = self.claim(who).await;
        assert!(r.success, "expected a task, got {r:?}");
        r.task_id.unwrap()
    }

    pub async fn complete(&self, who: &Caller, task_id: &str, success: bool) -> CoordResult<CompleteWorkResult> {
        self.coord
            .complete_work(
                who,
                CompleteWorkRequest {
                    task_id: task_id.into(),
                    success,
                    result: None,
                    error_message: if success { None } else { Some("it broke".into()) },
                    skill: None,
                    changes: None,
                },
            )
            .await
    }

    pub async fn task(&self, task_id: &str) -> TaskInfo {
        self.coord
            .get_task(
                &agent("observer"),
                GetTaskRequest {
                    task_id: task_id.into(),
                },
            )
            .await
            .expect("get_task answers")
            .task
    }

    /// The audit rows of `operation`, newest first, read by an operator.
    pub async fn audit_rows(&self, operation: &str) -> Vec<coord_domain::audit::AuditEntry> {
        self.coord
            .query_audit(
                &operator("auditor"),
                coord_domain::audit::AuditQueryRequest {
                    operation: Some(operation.into()),
                    ..Default::default()
                },
            )
            .await
            .expect("query_audit answers")
            .entries
    }
}
