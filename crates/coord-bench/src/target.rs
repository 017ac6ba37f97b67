//! Scratch databases: every run gets a fresh one, so runs never see each other's rows
//! and benchmarks never write into a real coordinator's (append-only) audit trail.

use crate::link::{Link, RoundTrips};
use crate::{BenchError, BenchResult};
use coord_postgres::{PgOptions, PgStore};
use coord_service::{CoordConfig, Coordinator, DatabaseClock};
use coord_sqlite::SqliteStore;
use coord_store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where scratch databases are made.
#[derive(Debug, Clone)]
pub enum BenchDb {
    /// Fresh SQLite files in this directory.
    Sqlite { dir: PathBuf },
    /// Fresh databases on the server this URL reaches (its user needs CREATEDB); with
    /// `rtt`, reached through a [`Link`] that adds it to every round trip and counts them.
    Postgres { url: String, rtt: Option<Duration> },
}

impl BenchDb {
    /// The round-trip time a run adds (`--rtt`).
    pub fn rtt(&self) -> Option<Duration> {
        match self {
            BenchDb::Postgres { rtt, .. } => *rtt,
            BenchDb::Sqlite { .. } => None,
        }
    }
}

/// The scratch database's URL as this run reaches it: through a new [`Link`] when the
/// run adds a round-trip time.
async fn reach(url: String, rtt: Option<Duration>) -> BenchResult<(String, Option<Link>)> {
    match rtt {
        None => Ok((url, None)),
        Some(rtt) => {
            let link = Link::start(&url, rtt).await?;
            Ok((link.url.clone(), Some(link)))
        }
    }
}

pub enum Handle {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

pub struct Scratch {
    pub backend: &'static str,
    pub handle: Handle,
    /// What `coord --db` takes to reach this database (for child processes).
    pub db_arg: String,
    /// The audit key file of child servers (`COORD_AUDIT_KEY_FILE`), removed with the
    /// scratch database.
    pub audit_key: PathBuf,
    /// The link the database is reached through (`--rtt`).
    pub link: Option<Link>,
    cleanup: Cleanup,
}

#[derive(Debug, Clone, PartialEq)]
enum Cleanup {
    Files(Vec<PathBuf>),
    Database { url: String, name: String, key: PathBuf },
}

/// Scratch databases not yet disposed of, for [`abandon`] (an interrupted run).
static LIVE: std::sync::Mutex<Vec<Cleanup>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Cleanup>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every scratch database still in use: call when the run is interrupted.
pub async fn abandon() {
    let left: Vec<Cleanup> = live().drain(..).collect();
    for cleanup in left {
        cleanup.run().await;
    }
}

impl Cleanup {
    async fn run(self) {
        match self {
            Cleanup::Files(files) => {
                // A repository coordinator's socket (`<database>.<fingerprint>.sock`):
                // removing it also stops the server.
                if let Some((dir, name)) = files.first().and_then(|db| Some((db.parent()?, db.file_name()?))) {
                    let prefix = format!("{}.", name.to_string_lossy());
                    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                        let n = entry.file_name().to_string_lossy().into_owned();
                        if n.starts_with(&prefix) && n.ends_with(".sock") {
                            let _ = std::fs::remove_file(entry.path());
                        }
                    }
                }
                for f in files {
                    match std::fs::remove_file(&f) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            eprintln!("coord bench: could not remove {}: {e}", f.display());
                        }
                        _ => {}
                    }
                }
            }
            Cleanup::Database { url, name, key } => {
                if let Err(e) = coord_postgres::drop_scratch_database(&url, &name).await {
                    eprintln!("coord bench: could not drop scratch database {name}: {e}");
                }
                if !key.as_os_str().is_empty() {
                    let _ = std::fs::remove_file(key);
                }
            }
        }
    }
}

fn scratch_name(label: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("coord_bench_{label}_{}", &id[..12])
}

impl Scratch {
    /// A fresh database; `pool` sizes the PostgreSQL pool of this process.
    pub async fn create(db: &BenchDb, label: &str, pool: usize) -> BenchResult<Scratch> {
        let name = scratch_name(label);
        match db {
            BenchDb::Sqlite { dir } => {
                // With the repository coordinator's lock and log (`mcp`: the children
                // share one; its socket goes in `Cleanup::run`).
                let suffixes = ["", "-wal", "-shm", ".audit.key", ".server.lock", ".server.log"];
                let (path, cleanup) = sqlite_files(dir, &name, &suffixes)?;
                let audit_key = PathBuf::from(format!("{}.audit.key", path.display()));
                let store = match SqliteStore::open(&path) {
                    Ok(s) => s,
                    Err(e) => {
                        forget(&cleanup);
                        cleanup.run().await;
                        return Err(e.into());
                    }
                };
                Ok(Scratch {
                    backend: "sqlite",
                    handle: Handle::Sqlite(store),
                    db_arg: path.display().to_string(),
                    audit_key,
                    link: None,
                    cleanup,
                })
            }
            BenchDb::Postgres { url, rtt } => {
                let scratch_url = coord_postgres::create_scratch_database(url, &name).await?;
                let (scratch_url, link) = reach(scratch_url, *rtt).await?;
                let audit_key = std::env::temp_dir().join(format!("{name}.audit.key"));
                let cleanup = Cleanup::Database {
                    url: url.clone(),
                    name: name.clone(),
                    key: audit_key.clone(),
                };
                live().push(cleanup.clone());
                let options = PgOptions {
                    pool_size: pool.max(1),
                    timeout: Duration::from_secs(30),
                };
                let store = match PgStore::connect(&scratch_url, options).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = coord_postgres::drop_scratch_database(url, &name).await;
                        return Err(e.into());
                    }
                };
                Ok(Scratch {
                    backend: "postgres",
                    handle: Handle::Postgres(store),
                    db_arg: scratch_url,
                    audit_key,
                    link,
                    cleanup,
                })
            }
        }
    }

    /// The round trips made to the database, when they are counted (`--rtt`).
    pub fn round_trips(&self) -> RoundTrips {
        self.link.as_ref().map(Link::counter).unwrap_or_default()
    }

    pub fn store(&self) -> Arc<dyn Store> {
        match &self.handle {
            Handle::Sqlite(s) => Arc::new(s.clone()),
            Handle::Postgres(s) => Arc::new(s.clone()),
        }
    }

    /// After a bulk fill: the planner's statistics as a database that grew over time has
    /// them (PostgreSQL: `ANALYZE`; SQLite plans full-text queries without statistics).
    pub async fn settle(&self) -> BenchResult<()> {
        if let Handle::Postgres(_) = &self.handle {
            coord_postgres::analyze_database(&self.db_arg).await?;
        }
        Ok(())
    }

    /// Tasks by status, for the after-run checks.
    pub async fn task_counts(&self) -> BenchResult<coord_store::bench::QueueTotals> {
        Ok(match &self.handle {
            Handle::Sqlite(s) => s.task_counts()?,
            Handle::Postgres(s) => s.task_counts().await?,
        })
    }

    /// The in-process service over this database, on the database's clock.
    pub fn coordinator(&self) -> Coordinator {
        Coordinator::new(self.store(), Arc::new(DatabaseClock), CoordConfig::default())
    }

    /// Removes the database (best effort: a leftover scratch database is named
    /// `coord_bench_*` and says what it is).
    pub async fn dispose(self) {
        let Scratch { handle, cleanup, .. } = self;
        // Close our connections before dropping the database or deleting the files.
        drop(handle);
        forget(&cleanup);
        cleanup.run().await;
    }
}

/// A fresh, empty database that is not coord's (no migrations): where an independent
/// client runs its own schema (the `--compare` limit).
pub struct EmptyScratch {
    /// A SQLite file path, or a PostgreSQL URL.
    pub db_arg: String,
    /// The link the database is reached through (`--rtt`), kept open for the run.
    link: Option<Link>,
    cleanup: Cleanup,
}

impl EmptyScratch {
    pub async fn create(db: &BenchDb, label: &str) -> BenchResult<EmptyScratch> {
        let name = scratch_name(label);
        match db {
            BenchDb::Sqlite { dir } => {
                let (path, cleanup) = sqlite_files(dir, &name, &["", "-wal", "-shm", "-journal"])?;
                Ok(EmptyScratch {
                    db_arg: path.display().to_string(),
                    link: None,
                    cleanup,
                })
            }
            BenchDb::Postgres { url, rtt } => {
                let db_arg = coord_postgres::create_scratch_database(url, &name).await?;
                let cleanup = Cleanup::Database {
                    url: url.clone(),
                    name,
                    key: PathBuf::new(),
                };
                live().push(cleanup.clone());
                let (db_arg, link) = reach(db_arg, *rtt).await?;
                Ok(EmptyScratch { db_arg, link, cleanup })
            }
        }
    }

    /// The round trips made to the database, when they are counted (`--rtt`).
    pub fn round_trips(&self) -> RoundTrips {
        self.link.as_ref().map(Link::counter).unwrap_or_default()
    }

    pub async fn dispose(self) {
        forget(&self.cleanup);
        self.cleanup.run().await;
    }
}

/// `<dir>/<name>.db` and the files named by `suffixes` after it, registered for removal.
fn sqlite_files(dir: &std::path::Path, name: &str, suffixes: &[&str]) -> BenchResult<(PathBuf, Cleanup)> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(format!("{name}.db"));
    let files = suffixes
        .iter()
        .map(|suffix| PathBuf::from(format!("{}{suffix}", path.display())))
        .collect();
    let cleanup = Cleanup::Files(files);
    live().push(cleanup.clone());
    Ok((path, cleanup))
}

fn forget(cleanup: &Cleanup) {
    live().retain(|c| c != cleanup);
}
