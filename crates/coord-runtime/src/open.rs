//! Opening the store a [`Context`] names and building the local coordinator over it.

use crate::context::{Context, DbTarget};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_postgres::{PgOptions, PgStore};
use coord_service::{CoordConfig, Coordination, Coordinator, DatabaseClock, LocalPorts, Ports};
use coord_sqlite::{SqliteOptions, SqliteStore};
use coord_store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Connections a process keeps to PostgreSQL: few for one-shot commands, more for
/// servers; `COORD_PG_POOL_SIZE` overrides.
pub fn pg_options(default_pool: usize) -> CoordResult<PgOptions> {
    let pool_size = match std::env::var("COORD_PG_POOL_SIZE") {
        Ok(raw) => raw.trim().parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "COORD_PG_POOL_SIZE",
                format!("COORD_PG_POOL_SIZE must be a positive number, got {raw:?}"),
            )
        })?,
        Err(_) => default_pool,
    };
    Ok(PgOptions {
        pool_size,
        ..PgOptions::default()
    })
}

/// Opens the store, applying migrations; `pg_pool` sizes a PostgreSQL pool.
pub async fn open_store_with(target: &DbTarget, pg_pool: usize) -> CoordResult<Arc<dyn Store>> {
    match target {
        DbTarget::Sqlite(path) => {
            let path = path.clone();
            let options = sqlite_options()?;
            let store = tokio::task::spawn_blocking(move || SqliteStore::open_with(&path, options))
                .await
                .map_err(|_| CoordError::internal())??;
            Ok(Arc::new(store))
        }
        DbTarget::Postgres(url) => Ok(Arc::new(PgStore::connect(url, pg_options(pg_pool)?).await?)),
    }
}

/// `COORD_SQLITE_BUSY_TIMEOUT_MS`: how long to wait for another process's write lock.
fn sqlite_options() -> CoordResult<SqliteOptions> {
    let mut options = SqliteOptions::default();
    if let Ok(raw) = std::env::var("COORD_SQLITE_BUSY_TIMEOUT_MS") {
        let ms: u64 = raw.trim().parse().map_err(|_| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "COORD_SQLITE_BUSY_TIMEOUT_MS",
                format!("COORD_SQLITE_BUSY_TIMEOUT_MS must be a number of milliseconds, got {raw:?}"),
            )
        })?;
        options.busy_timeout = Duration::from_millis(ms);
    }
    Ok(options)
}

fn remote_client(ctx: &Context, r: &crate::context::Remote) -> CoordResult<coord_remote::RemoteClient> {
    Ok(coord_remote::RemoteClient::new(&r.url, r.api_key.clone())?
        .with_unconfigured_identity(r.default_id.clone(), r.default_type.clone())
        .with_local_root(ctx.repo_root.to_string_lossy()))
}

/// What the doors call: a remote client in remote mode, else the local coordinator —
/// inside an agent's session, behind [`InSession`].
pub async fn coordination(ctx: &Context, pg_pool: usize) -> CoordResult<Arc<dyn Coordination>> {
    let coord: Arc<dyn Coordination> = match &ctx.remote {
        Some(r) => Arc::new(remote_client(ctx, r)?),
        None => Arc::new(coordinator_with(ctx, pg_pool).await?),
    };
    Ok(in_session(ctx, coord))
}

/// `coord` as this process may use it: inside an agent's session, every call a process
/// of this user makes is made with the `Session` credential instead.
pub fn in_session(ctx: &Context, coord: Arc<dyn Coordination>) -> Arc<dyn Coordination> {
    match ctx.session {
        Some(_) => Arc::new(InSession(coord)),
        None => coord,
    }
}

/// A coordination whose local callers are inside an agent's session: their credential
/// is taken down to `Session` (keys' and anonymous callers' stay as they are).
pub struct InSession(pub Arc<dyn Coordination>);

#[async_trait::async_trait]
impl Coordination for InSession {
    async fn invoke(
        &self,
        op: &'static coord_service::OpEntry,
        who: &coord_domain::access::Principal,
        request: CoordResult<serde_json::Value>,
    ) -> CoordResult<serde_json::Value> {
        let mut who = who.clone();
        if who.credential == coord_domain::access::Credential::Local {
            who.credential = coord_domain::access::Credential::Session;
        }
        self.0.invoke(op, &who, request).await
    }
    // No `local()`: typed callers must come through `invoke`, which takes the credential down.
}

/// The port service: the server in remote mode, else this machine's allocator alone
/// (ports need no database, so none is opened or created).
pub fn ports(ctx: &Context) -> CoordResult<Arc<dyn Ports>> {
    match &ctx.remote {
        Some(r) => Ok(Arc::new(remote_client(ctx, r)?)),
        None => Ok(Arc::new(LocalPorts::new(
            coord_ports::PortAllocator::from_env()?,
            Arc::new(DatabaseClock),
        ))),
    }
}

/// Commands that work on a database refuse remote mode, where the server owns it.
pub fn local_only(ctx: &Context, what: &str) -> CoordResult<()> {
    match &ctx.remote {
        Some(r) => Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{what} works on a database, and in remote mode ({}) the server owns it; unset --remote / COORDINATION_API_URL",
                r.url
            ),
        )),
        None => Ok(()),
    }
}

pub async fn coordinator(ctx: &Context) -> CoordResult<Coordinator> {
    coordinator_with(ctx, 2).await
}

/// `coord init` / `coord migrate`: the store, creating the directory a `--db` path names.
pub async fn creating_coordinator(ctx: &Context) -> CoordResult<Coordinator> {
    if let DbTarget::Sqlite(path) = &ctx.db
        && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| CoordError::unavailable(format!("cannot create directory {}: {e}", dir.display())))?;
    }
    coordinator(ctx).await
}

/// A `--db` / `COORD_DATABASE_URL` SQLite path in a directory that does not exist is a
/// typo more often than a wish: refused (every command but `coord init`, which creates
/// it), instead of a new, empty coordination space appearing beside the real one.
fn named_store_dir_exists(ctx: &Context) -> CoordResult<()> {
    match &ctx.db {
        DbTarget::Sqlite(path) if !ctx.db_is_default => match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "db",
                format!(
                    "no directory {} for the database {}: check the path, or create the store with `coord init --db {}`",
                    dir.display(),
                    path.display(),
                    path.display()
                ),
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The local coordinator for `ctx`; `pg_pool` sizes a PostgreSQL pool.
pub async fn coordinator_with(ctx: &Context, pg_pool: usize) -> CoordResult<Coordinator> {
    named_store_dir_exists(ctx)?;
    if let (true, DbTarget::Sqlite(path)) = (ctx.db_is_default, &ctx.db) {
        keep_out_of_git(path);
    }
    let store = open_store_with(&ctx.db, pg_pool).await?;
    // A bad workspace setting turns the file tools off (they answer why), never locks,
    // the queue or the hooks.
    let (workspaces, workspace_problem) = match ctx.workspace_dirs() {
        Ok(dirs) => (dirs, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let coord = Coordinator::new(
        store,
        Arc::new(DatabaseClock),
        CoordConfig {
            repo_root: Some(ctx.repo_root.to_string_lossy().into_owned()),
            audit_retention_days: audit_retention_days(),
            memory_retention_days: memory_retention_days(),
            audit_key: audit_key(ctx),
            workspaces,
            protected_paths: ctx.protected_paths(audit_key_path(ctx).as_deref()),
            file_size_limit: ctx.file_size_limit.unwrap_or(CoordConfig::default().file_size_limit),
            working_memory_budget: ctx
                .working_memory_budget
                .unwrap_or(CoordConfig::default().working_memory_budget),
            recall_half_life_days: ctx
                .recall_half_life_days
                .map_or(CoordConfig::default().recall_half_life_days, f64::from),
            coordination_domains: ctx.coordination_domains.clone(),
            model_endpoints: ctx.model_endpoints.clone(),
            spawn_limits: spawn_limits()?,
            ..CoordConfig::default()
        },
    );
    // A bad PORT_ALLOC_* setting fails the port operations only: locks, the queue and
    // the edit and commit guards must not depend on it.
    let coord = match workspace_problem {
        Some(e) => coord.without_workspaces(e),
        None => coord,
    };
    let coord = coord.with_launcher(Arc::new(crate::spawner::LocalLauncher::new(ctx)));
    Ok(match coord_ports::PortAllocator::from_env() {
        Ok(ports) => coord.with_ports(ports),
        Err(e) => coord.without_ports(e),
    })
}

/// `COORD_MAX_RUNNING_AGENTS`: spawned agents running at once (default 8).
fn spawn_limits() -> CoordResult<coord_domain::agents::spawn::SpawnLimits> {
    let mut limits = coord_domain::agents::spawn::SpawnLimits::default();
    if let Ok(v) = std::env::var("COORD_MAX_RUNNING_AGENTS") {
        limits.max_running = v
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| {
                CoordError::new(
                    ErrorCode::InvalidArgument,
                    format!("COORD_MAX_RUNNING_AGENTS={v:?}: give a number from 1 to 1000"),
                )
            })?;
    }
    Ok(limits)
}

/// `COORD_AUDIT_RETENTION_DAYS`, else the spec's 90 days (a bad value is reported and
/// the default kept: retention must never silently become "delete everything").
fn audit_retention_days() -> i64 {
    let default = coord_domain::audit_chain::DEFAULT_RETENTION_DAYS;
    match std::env::var("COORD_AUDIT_RETENTION_DAYS") {
        Err(_) => default,
        Ok(v) => match v.trim().parse::<i64>() {
            Ok(d) if (1..=coord_domain::audit_chain::MAX_RETENTION_DAYS).contains(&d) => d,
            _ => {
                tracing::warn!(value = %v, "COORD_AUDIT_RETENTION_DAYS is not a number of days from 1 to 36500; keeping {default}");
                default
            }
        },
    }
}

/// `COORD_MEMORY_RETENTION_DAYS`, else a year (a bad value is reported and the default
/// kept, as for the audit retention).
fn memory_retention_days() -> i64 {
    use coord_domain::memory::retention::{DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS};
    match std::env::var("COORD_MEMORY_RETENTION_DAYS") {
        Err(_) => DEFAULT_RETENTION_DAYS,
        Ok(v) => match v.trim().parse::<i64>() {
            Ok(d) if (1..=MAX_RETENTION_DAYS).contains(&d) => d,
            _ => {
                tracing::warn!(value = %v, "COORD_MEMORY_RETENTION_DAYS is not a number of days from 1 to 36500; keeping {DEFAULT_RETENTION_DAYS}");
                DEFAULT_RETENTION_DAYS
            }
        },
    }
}

/// Where the audit key lives: `COORD_AUDIT_KEY_FILE`, else next to a SQLite database,
/// else (PostgreSQL) in the user's config directory. Every server of one PostgreSQL
/// database must share the file, or checkpoints signed by one fail on another.
pub fn audit_key_path(ctx: &Context) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("COORD_AUDIT_KEY_FILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    match &ctx.db {
        DbTarget::Sqlite(db) => Some(db.parent()?.join("audit.key")),
        DbTarget::Postgres(_) => {
            let config = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
            Some(config.join("coord").join("audit.key"))
        }
    }
}

/// Loads the audit key if there is one. Without one, pruning is refused and checkpoint
/// signatures go unchecked. It is created only by what signs (`coord serve`, `coord
/// audit prune`) and by `coord init`: opening a database elsewhere (a benchmark's scratch
/// file, a one-off query) leaves no key file behind.
fn audit_key(ctx: &Context) -> Option<coord_domain::audit_chain::AuditKey> {
    let path = audit_key_path(ctx)?;
    match read_key(&path) {
        Ok(k) => Some(k),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unusable audit key: pruning is refused and checkpoint signatures go unchecked");
            None
        }
    }
}

/// Creates the audit key (random, owner-only) unless it exists; failures are logged
/// (the commands that need it then say so).
pub fn ensure_audit_key(ctx: &Context) {
    if let Some(path) = audit_key_path(ctx)
        && let Err(e) = load_or_create_key(&path)
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot create the audit key");
    }
}

fn read_key(p: &std::path::Path) -> std::io::Result<coord_domain::audit_chain::AuditKey> {
    let text = std::fs::read_to_string(p)?;
    let secret = text.trim();
    if secret.len() < 32 {
        return Err(std::io::Error::other("the key file holds fewer than 32 characters"));
    }
    Ok(coord_domain::audit_chain::AuditKey::new(secret.as_bytes().to_vec()))
}

fn load_or_create_key(path: &std::path::Path) -> std::io::Result<coord_domain::audit_chain::AuditKey> {
    use std::io::Write as _;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt as _;
    match read_key(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Written whole under a temporary name, then linked into place: a concurrent
    // reader never sees a half-written key, and the first of two creators wins.
    let secret = format!("{}{}\n", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // Owner-only: the key is what makes a checkpoint unforgeable.
    #[cfg(unix)]
    options.mode(0o600);
    let mut f = options.open(&tmp)?;
    f.write_all(secret.as_bytes())?;
    f.sync_all()?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    read_key(path)
}

/// The default database lives inside the repository; a `.gitignore` beside it keeps
/// it (and its WAL files) out of commits.
pub(crate) fn keep_out_of_git(db: &std::path::Path) {
    if let Some(dir) = db.parent() {
        let ignore = dir.join(".gitignore");
        if !ignore.exists() && std::fs::create_dir_all(dir).is_ok() {
            let _ = std::fs::write(ignore, "# Agent Coordinator state: not for version control\n*\n");
        }
    }
}
