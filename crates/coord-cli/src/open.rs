//! Opening the store a [`Context`] names and building the local coordinator over it.

use crate::context::{Context, DbTarget};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_postgres::{PgOptions, PgStore};
use coord_service::{CoordConfig, Coordination, Coordinator, DatabaseClock, LocalPorts, Ports};
use coord_sqlite::{SqliteOptions, SqliteStore};
use coord_store::Store;
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

/// What the doors call: a remote client in remote mode, else the local coordinator.
pub async fn coordination(ctx: &Context, pg_pool: usize) -> CoordResult<Arc<dyn Coordination>> {
    match &ctx.remote {
        Some(r) => Ok(Arc::new(remote_client(ctx, r)?)),
        None => Ok(Arc::new(coordinator_with(ctx, pg_pool).await?)),
    }
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

/// The local coordinator for `ctx`; `pg_pool` sizes a PostgreSQL pool.
pub async fn coordinator_with(ctx: &Context, pg_pool: usize) -> CoordResult<Coordinator> {
    if let (true, DbTarget::Sqlite(path)) = (ctx.db_is_default, &ctx.db) {
        keep_out_of_git(path);
    }
    let store = open_store_with(&ctx.db, pg_pool).await?;
    let coord = Coordinator::new(
        store,
        Arc::new(DatabaseClock),
        CoordConfig {
            repo_root: Some(ctx.repo_root.to_string_lossy().into_owned()),
            ..CoordConfig::default()
        },
    );
    // A bad PORT_ALLOC_* setting fails the port operations only: locks, the queue and
    // the edit and commit guards must not depend on it.
    Ok(match coord_ports::PortAllocator::from_env() {
        Ok(ports) => coord.with_ports(ports),
        Err(e) => coord.without_ports(e),
    })
}

/// The default database lives inside the repository; a `.gitignore` beside it keeps
/// it (and its WAL files) out of commits.
fn keep_out_of_git(db: &std::path::Path) {
    if let Some(dir) = db.parent() {
        let ignore = dir.join(".gitignore");
        if !ignore.exists() && std::fs::create_dir_all(dir).is_ok() {
            let _ = std::fs::write(ignore, "# Agent Coordinator state: not for version control\n*\n");
        }
    }
}
