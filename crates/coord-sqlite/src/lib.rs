//! The embedded store: one SQLite file in WAL mode, shared safely by any number of
//! `coord` processes on one machine.
//!
//! Every operation runs inside a `BEGIN IMMEDIATE` transaction (the write lock is taken
//! up front, so two processes never both read-then-write), which also appends the audit
//! row. The operation itself runs inside a savepoint: a refusal rolls back to it, then the
//! audit row is written.
//!
//! Writes go through `writer`: a lone write (no other write of this process under way,
//! the writer thread asleep) runs on its caller's thread; writes under load go to one
//! writer thread per store, which commits the writes queued meanwhile as one transaction
//! (group commit, a savepoint each, so a failed write rolls back alone). Writes that may
//! take long (`with_long_tx`, `op_long`: prunes, the sweep; `op_then`: a fenced file
//! write's rename) and every write while the WAL is close to a checkpoint go to the writer
//! thread too. The policy facts every operation reads first (`read_quick`) run on the
//! caller's thread, on a connection of their own while a write batch holds the store's.
//! WAL checkpoints run on a thread of their own (`checkpoint`: asked for every 1,000 WAL
//! frames; past 4,000 the writing thread checkpoints itself, so the WAL stays bounded).
//!
//! Layout: this file holds opening, the `op` wrapper (savepoint and audit row) and
//! `Maintenance`; each capability module (`locks`, `queue`, …) holds its SQL and its
//! `impl XStore for SqliteStore`; migrations are in `migrations/`, tracked by
//! `PRAGMA user_version` (`migrate`). Particulars:
//!
//! - `audit`: rows are chained in id order (the chain position has no index), so the head
//!   is the newest chained row and a prune's prefix is an id range; ids come without
//!   AUTOINCREMENT and a checkpoint records the next id, so a prune that empties the table
//!   reuses none. `verify_audit` orders positions in a temporary table, so a moved row is
//!   named as moved.
//! - `memory`: memories and skills in one table with an external-content FTS5 index kept
//!   by triggers (`bm25` is the text score); tags in `memory_tags`.
//! - `network`: policies as JSON per row and the append-only access log; the `op` wrapper
//!   writes a `domain_blocked` refusal's log row beside its audit row.
//! - `verification`: a partial unique index on agent, branch and commit answers a
//!   resubmission with the recorded changeset; review runs' approval requests are queued
//!   in the submission's transaction.
//! - `github`: deliveries, links and the outbox (taken with a lease); the sweep prunes
//!   deliveries acted on after 30 days and sent or abandoned requests after 7.
//! - `bench`: `RawSqlite`, the raw baseline of `coord bench`.

mod approvals;
mod audit;
mod bench;
mod checkpoint;
mod files;
mod github;
mod guardrail_rules;
mod handoffs;
mod ids;
mod keys;
mod locks;
mod memory;
mod messages;
mod migrate;
mod network;
mod notifications;
mod profiles;
mod queue;
mod rows;
mod sessions;
mod spawn;
mod stats;
mod verification;
mod violations;
mod workflows;
mod writer;

use coord_domain::guardrails::Violation;

use async_trait::async_trait;
use coord_domain::error::ErrorKind;
use coord_domain::time::to_micros;
use coord_domain::{CoordError, CoordResult, Identity, Timestamp};
use coord_store::{Maintenance, OpCtx, SchemaInfo, SweepReport};
use rusqlite::{Connection, Savepoint};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, TryLockError};
use std::time::Duration;
use writer::Place;

pub use bench::RawSqlite;
pub use migrate::SCHEMA_VERSION;

#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How long a write waits for another process's write lock before answering
    /// `database_unavailable`.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(10),
        }
    }
}

#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The store's connection: every write (on the writer thread, or on a lone write's
    /// caller's thread), plain reads, and the raw baseline.
    conn: Arc<Mutex<Connection>>,
    /// A connection of the quick reads' own, opened the first time a quick read finds
    /// `conn` taken by a write (never, in a one-shot command or a hook).
    reader: OnceLock<Mutex<Connection>>,
    /// Stops its thread when dropped.
    _checkpointer: checkpoint::Checkpointer,
    writer: writer::Writer,
    path: PathBuf,
    options: SqliteOptions,
    applied: Vec<i64>,
}

/// Failure inside a store function: a database error or a refusal decided by a rule.
/// Kept separate so `?` works on both and the boundary decides what the caller sees.
#[derive(Debug)]
pub(crate) enum Fail {
    Db(rusqlite::Error),
    Coord(CoordError),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<CoordError> for Fail {
    fn from(e: CoordError) -> Self {
        Fail::Coord(e)
    }
}

impl From<serde_json::Error> for Fail {
    fn from(e: serde_json::Error) -> Self {
        tracing::error!(error = %e, "sqlite store: JSON encoding failed");
        Fail::Coord(CoordError::internal())
    }
}

impl From<Fail> for CoordError {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Coord(e) => e,
            Fail::Db(e) => db_error(e),
        }
    }
}

pub(crate) type R<T> = Result<T, Fail>;

/// Storage failures become `database_unavailable` (retry may help) or an opaque
/// internal error (a bug); SQL text and driver messages never reach the caller.
fn db_error(e: rusqlite::Error) -> CoordError {
    use rusqlite::ErrorCode as C;
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        match f.code {
            C::DatabaseBusy | C::DatabaseLocked => {
                return CoordError::unavailable(
                    "the database is locked by another process for longer than the busy timeout; retry",
                );
            }
            C::CannotOpen
            | C::ReadOnly
            | C::DiskFull
            | C::SystemIoFailure
            | C::NotADatabase
            | C::DatabaseCorrupt
            | C::PermissionDenied
            | C::FileLockingProtocolFailed
            | C::NoLargeFileSupport => {
                tracing::warn!(error = %e, "sqlite store unavailable");
                return CoordError::unavailable(format!(
                    "the database cannot be read or written ({})",
                    describe(f.code)
                ));
            }
            _ => {}
        }
    }
    tracing::error!(error = %e, "sqlite store error");
    CoordError::internal()
}

/// Whether the file system holding `path` has no space left for this user: SQLite
/// reports a full disk met while opening (creating its shared-memory file) as an I/O error.
fn disk_full(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    rustix::fs::statvfs(dir).is_ok_and(|s| s.f_bavail == 0)
}

fn describe(code: rusqlite::ErrorCode) -> &'static str {
    use rusqlite::ErrorCode as C;
    match code {
        C::CannotOpen => "cannot open the file",
        C::ReadOnly => "read-only",
        C::DiskFull => "disk full",
        C::SystemIoFailure => "I/O error",
        C::NotADatabase => "not a SQLite database",
        C::DatabaseCorrupt => "corrupt",
        C::PermissionDenied => "permission denied",
        _ => "storage error",
    }
}

fn is_storage_failure(e: &CoordError) -> bool {
    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal)
}

pub(crate) fn now_micros(now: Option<Timestamp>) -> i64 {
    to_micros(now.unwrap_or_else(chrono::Utc::now))
}

/// Creates the database file readable and writable by its owner only (0600), if it does
/// not exist: it holds other agents' messages, memories and the audit trail. SQLite
/// gives the `-wal` and `-shm` files it creates beside it the same permissions.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub fn open(path: &Path) -> CoordResult<Self> {
        Self::open_with(path, SqliteOptions::default())
    }

    pub fn open_with(path: &Path, options: SqliteOptions) -> CoordResult<Self> {
        let unavailable = |what: String| {
            let what = match disk_full(path) {
                true => format!("{what}; the disk holding it is full: free space and retry"),
                false => what,
            };
            CoordError::unavailable(what).with_detail("database", path.display().to_string())
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| unavailable(format!("cannot create directory {}: {e}", dir.display())))?;
        }
        if path.is_dir() {
            return Err(unavailable(format!(
                "{} is a directory, not a database file",
                path.display()
            )));
        }
        create_private(path).map_err(|e| unavailable(format!("cannot create {}: {e}", path.display())))?;
        let mut conn = Connection::open(path)
            .map_err(|e| unavailable(format!("cannot open SQLite database {}: {e}", path.display())))?;
        configure(&conn, &options).map_err(|e| {
            unavailable(format!(
                "cannot use SQLite database {}: {}",
                path.display(),
                CoordError::from(Fail::Db(e)).message
            ))
        })?;
        let applied = migrate::apply(&mut conn).map_err(|e| match e {
            Fail::Db(e) => unavailable(format!(
                "cannot prepare SQLite database {}: {}",
                path.display(),
                db_error(e).message
            )),
            Fail::Coord(e) => e,
        })?;
        let checkpoint_due = Arc::new(AtomicBool::new(false));
        let checkpointer = checkpoint::Checkpointer::start(&mut conn, path, checkpoint_due.clone())
            .map_err(|e| unavailable(format!("cannot start the SQLite checkpoint thread: {e}")))?;
        let conn = Arc::new(Mutex::new(conn));
        let writer = writer::Writer::start(conn.clone(), options.busy_timeout, checkpoint_due)
            .map_err(|e| unavailable(format!("cannot start the SQLite writer thread: {e}")))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn,
                reader: OnceLock::new(),
                _checkpointer: checkpointer,
                writer,
                path: path.to_path_buf(),
                options,
                applied,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` atomically on the single-writer path (see `writer`): inside a
    /// `BEGIN IMMEDIATE` transaction, possibly shared with other callers' writes.
    pub(crate) async fn with_tx<T, F>(&self, f: F) -> CoordResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Savepoint) -> R<T> + Send + 'static,
    {
        self.inner.writer.write(Place::Anywhere, f).await
    }

    /// [`SqliteStore::with_tx`] for a write that may take long (large deletes): always on
    /// the writer thread, never on the caller's runtime worker.
    pub(crate) async fn with_long_tx<T, F>(&self, f: F) -> CoordResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Savepoint) -> R<T> + Send + 'static,
    {
        self.inner.writer.write(Place::WriterThread, f).await
    }

    /// Runs a long read-only `f` on a connection of its own (a snapshot read of the whole
    /// audit chain must not hold the connection every write of this process needs).
    pub(crate) async fn read_apart<T, F>(&self, f: F) -> CoordResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> R<T> + Send + 'static,
    {
        let path = self.inner.path.clone();
        tokio::task::spawn_blocking(move || -> R<T> {
            let conn = Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            f(&conn)
        })
        .await
        .map_err(|_| CoordError::internal())?
        .map_err(CoordError::from)
    }

    /// [`SqliteStore::read`] for a few point reads by key: run on the caller's thread when
    /// the connection is free — handing a 20 µs read to the blocking pool and back costs
    /// two thread wake-ups, more than the read (the history of docs/benchmarks.md) —, on
    /// the reads' own connection when a write batch holds it (a WAL reader does not wait
    /// for the writer, and under load the batch holds it most of the time), and on the
    /// blocking pool when both are taken.
    pub(crate) async fn read_quick<T, F>(&self, f: F) -> CoordResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> R<T> + Send + 'static,
    {
        let f = match run_if_free(&self.inner.conn, f) {
            Ok(done) => return done,
            Err(f) => f,
        };
        let f = match self.inner.reader() {
            Some(reader) => match run_if_free(reader, f) {
                Ok(done) => return done,
                Err(f) => f,
            },
            None => f,
        };
        self.read(f).await
    }

    /// Runs a read-only `f` outside any transaction: WAL readers never wait for other
    /// processes' writers (only for this process's current write batch, if any).
    pub(crate) async fn read<T, F>(&self, f: F) -> CoordResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> R<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || -> R<T> {
            let conn = inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&conn)
        })
        .await
        .map_err(|_| CoordError::internal())?
        .map_err(CoordError::from)
    }

    /// Runs one audited operation: the operation in a savepoint, then its audit row,
    /// in one transaction.
    pub(crate) async fn op<T, F>(&self, ctx: OpCtx, f: F) -> CoordResult<T>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Connection, i64, &Identity) -> R<T> + Send + 'static,
    {
        self.op_at(Place::Anywhere, ctx, f, Ok).await
    }

    /// [`SqliteStore::op`] for an operation that may take long (a prune): on the writer
    /// thread, never on the caller's runtime worker.
    pub(crate) async fn op_long<T, F>(&self, ctx: OpCtx, f: F) -> CoordResult<T>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Connection, i64, &Identity) -> R<T> + Send + 'static,
    {
        self.op_at(Place::WriterThread, ctx, f, Ok).await
    }

    /// [`SqliteStore::op`] with a last step, `then`, run after the resource charges and
    /// before the audit row and the commit: what must happen only once everything else
    /// has said yes (the rename of a fenced write). On the writer thread: the step waits
    /// for the file system (a rename, an `fsync`).
    pub(crate) async fn op_then<T, F, G>(&self, ctx: OpCtx, f: F, then: G) -> CoordResult<T>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Connection, i64, &Identity) -> R<T> + Send + 'static,
        G: FnOnce(T) -> CoordResult<T> + Send + 'static,
    {
        self.op_at(Place::WriterThread, ctx, f, then).await
    }

    async fn op_at<T, F, G>(&self, place: Place, ctx: OpCtx, f: F, then: G) -> CoordResult<T>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Connection, i64, &Identity) -> R<T> + Send + 'static,
        G: FnOnce(T) -> CoordResult<T> + Send + 'static,
    {
        self.inner
            .writer
            .write(place, move |tx| {
                let now = now_micros(ctx.now);
                let outcome: CoordResult<(T, Option<String>)> = {
                    let sp = tx.savepoint()?;
                    match f(&sp, now, &ctx.who).and_then(|v| {
                        let mut spent = None;
                        if coord_store::counts_as_use(&ctx.charges, &v)
                            && let Some(over) = profiles::apply_charges(&sp, now, &ctx.charges)?
                        {
                            // Over a limit: passes only by spending an approval of this request.
                            let grant = if ctx.limits_escalate() {
                                approvals::spend(&sp, now, &ctx)?
                            } else {
                                None
                            };
                            spent = Some(grant.ok_or(Fail::Coord(over))?);
                        }
                        Ok((then(v)?, spent))
                    }) {
                        Ok(v) => {
                            sp.commit()?;
                            Ok(v)
                        }
                        Err(Fail::Db(e)) => return Err(Fail::Db(e)),
                        Err(Fail::Coord(e)) if is_storage_failure(&e) => return Err(Fail::Coord(e)),
                        // Dropping the savepoint rolls the refused operation back.
                        Err(Fail::Coord(e)) => Err(e),
                    }
                };
                let outcome = match outcome {
                    Err(e) => match ctx.approval_request(&e) {
                        Some(req) => Err(coord_domain::approvals::awaiting(
                            e,
                            &approvals::enqueue(tx, now, &req)?,
                        )),
                        None => Err(e),
                    },
                    ok => ok,
                };
                if let Err(e) = &outcome
                    && let Some(v) = Violation::of_refusal(e, &ctx.parameters, ctx.redact)
                {
                    violations::insert(tx, now, &ctx, &v)?;
                }
                if let Err(e) = &outcome
                    && let Some(a) = coord_domain::network::NetworkAccess::of_refusal(&ctx.who.agent_id, e)
                {
                    network::insert(tx, now, &ctx, &a)?;
                }
                let record = match &outcome {
                    Ok((v, spent)) => ctx.audit(Ok(v)).spending(spent.as_deref()),
                    Err(e) => ctx.audit::<T>(Err(e)),
                };
                audit::insert(tx, now, &record)?;
                Ok(outcome.map(|(v, _)| v))
            })
            .await?
    }
}

/// Runs `f` on `conn` when no one holds it; gives `f` back otherwise.
fn run_if_free<T, F>(conn: &Mutex<Connection>, f: F) -> Result<CoordResult<T>, F>
where
    F: FnOnce(&Connection) -> R<T>,
{
    match conn.try_lock() {
        Ok(c) => Ok(f(&c).map_err(CoordError::from)),
        Err(TryLockError::Poisoned(p)) => Ok(f(&p.into_inner()).map_err(CoordError::from)),
        Err(TryLockError::WouldBlock) => Err(f),
    }
}

impl Inner {
    /// The quick reads' own connection, opened on first use (tried again next time when
    /// it cannot be opened).
    fn reader(&self) -> Option<&Mutex<Connection>> {
        if let Some(reader) = self.reader.get() {
            return Some(reader);
        }
        let open = || -> rusqlite::Result<Connection> {
            let conn = open_existing(&self.path)?;
            // Only what reads need: the store's connection set the rest (WAL is a
            // property of the file) and migrated the schema.
            conn.busy_timeout(self.options.busy_timeout)?;
            conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
            Ok(conn)
        };
        match open() {
            Ok(conn) => {
                // Another thread may have opened one meanwhile: either serves.
                let _ = self.reader.set(Mutex::new(conn));
                self.reader.get()
            }
            Err(e) => {
                tracing::warn!(error = %e, "sqlite store: no connection of its own for reads");
                None
            }
        }
    }
}

/// A further connection to the store's file, never creating one (a file removed while the
/// store is open must not come back empty).
pub(crate) fn open_existing(path: &Path) -> rusqlite::Result<Connection> {
    use rusqlite::OpenFlags as F;
    Connection::open_with_flags(
        path,
        F::SQLITE_OPEN_READ_WRITE | F::SQLITE_OPEN_URI | F::SQLITE_OPEN_NO_MUTEX,
    )
}

fn configure(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(options.busy_timeout)?;
    // Plans that do not depend on bound values. The bundled SQLite has STAT4 compiled in,
    // and the profile lookup's statement was re-prepared on every call whose values
    // differed from the last (10% of a lock pair's CPU, docs/benchmarks.md).
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // journal_mode answers with a row, so it cannot go through execute().
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    // A 64 MiB page cache (the default is 2 MiB): recall reads full-text index pages that
    // would otherwise come back through a system call each time.
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536;")?;
    conn.execute_batch(memory::STEMS)?;
    Ok(())
}

#[async_trait]
impl Maintenance for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        self.inner.path.display().to_string()
    }

    fn schema(&self) -> SchemaInfo {
        SchemaInfo {
            version: SCHEMA_VERSION,
            applied_now: self.inner.applied.clone(),
        }
    }

    /// A read of the file header: answers while another process writes (WAL), fails
    /// when the file cannot be read.
    async fn ping(&self) -> CoordResult<()> {
        self.read(|c| Ok(c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?))
            .await
    }

    async fn sweep(&self, now: Option<Timestamp>, batch: i64) -> CoordResult<SweepReport> {
        self.with_long_tx(move |tx| {
            let now = now_micros(now);
            let expired_locks_deleted = locks::sweep(tx, now, batch)?;
            let (claims_requeued, claims_failed) = queue::settle_expired_claims(tx, now, batch)?;
            let github_rows_pruned = github::prune(tx, now, batch)?;
            Ok(SweepReport {
                expired_locks_deleted,
                claims_requeued,
                claims_failed,
                github_rows_pruned,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_locks(c: &Connection) -> R<i64> {
        Ok(c.query_row("SELECT count(*) FROM file_locks", [], |r| r.get(0))?)
    }

    /// The store holds other agents' messages and the audit trail: owner only, its WAL
    /// and shared-memory files too (issue 57, finding 6).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_database_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let store = SqliteStore::open(&db).unwrap();
        assert_eq!(store.read_quick(count_locks).await.unwrap(), 0);
        for name in ["c.db", "c.db-wal", "c.db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{name}: {mode:o}");
        }
    }

    /// A quick read runs on the store's connection when it is free (a one-shot command
    /// opens nothing more), and on a connection of its own while a write holds it —
    /// seeing what was committed, not waiting for the write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_quick_read_does_not_wait_for_a_write_holding_the_connection() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
        assert_eq!(store.read_quick(count_locks).await.unwrap(), 0);
        assert!(
            store.inner.reader.get().is_none(),
            "no second connection while the first is free"
        );

        store
            .with_tx(|c| {
                c.execute(
                    "INSERT INTO file_locks (file_path, agent_id, agent_type, locked_at, expires_at, fencing_token)
                     VALUES ('a', 'x', 'test', 0, 1, 1)",
                    [],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        // A thread holds the connection as a write batch would, until told to let go.
        let (held_tx, held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn({
            let conn = store.inner.conn.clone();
            move || {
                let _guard = conn.lock().unwrap();
                held_tx.send(()).unwrap();
                let _ = released.recv();
            }
        });
        held.recv().unwrap();
        // Were the read to wait for the held connection, it would wait for ever.
        let read = tokio::time::timeout(Duration::from_secs(30), store.read_quick(count_locks));
        let read = read.await;
        release.send(()).unwrap();
        holder.join().unwrap();
        assert_eq!(read.expect("the read waited for the write").unwrap(), 1);
        assert!(store.inner.reader.get().is_some());
    }

    /// Under sustained writes the WAL stays bounded though checkpoints run beside the
    /// writes, and closing the store leaves no WAL behind (its connection, closed last,
    /// checkpointed everything).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_and_is_gone_after_close() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let wal = dir.path().join("c.db-wal");
        let store = SqliteStore::open(&db).unwrap();
        store
            .with_tx(|c| Ok(c.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")?))
            .await
            .unwrap();
        // About three WAL frames per write (8 KiB spill into overflow pages): 18,000 frames
        // in all, four times past the point where the writer checkpoints itself. The file
        // keeps its largest size when the WAL starts over: that is what is bounded — by
        // that point plus what was written while a background checkpoint held the lock.
        let mut largest = 0;
        for k in 0..6000 {
            store
                .with_tx(move |c| Ok(c.execute("INSERT INTO t VALUES (?1, zeroblob(8192))", [k])?))
                .await
                .unwrap();
            largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
        }
        let frame = 4096 + 24;
        // Without the writer's own checkpoint it grew to 24,000 frames.
        assert!(largest <= 12_000 * frame, "WAL grew to {largest} bytes");
        drop(store);
        assert!(!wal.exists(), "the WAL outlived the store");
        let c = Connection::open(&db).unwrap();
        let n: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 6000);
    }
}
