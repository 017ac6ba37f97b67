//! The shared store: one PostgreSQL (or Supabase) database for every `coord` process on
//! every host.
//!
//! Differences from the SQLite store, and why (the whole comparison is in `coord_store`):
//! - Time is the database clock (`statement_timestamp()`, unless a clock is injected), so
//!   hosts with skewed clocks agree on lease expiry.
//! - There is no process-wide write lock as in SQLite. A lock acquisition takes
//!   transaction advisory locks ordering it after every acquisition that could overlap
//!   (`locks::serialised`, sent together with its read of the live locks), decides
//!   with the domain rule, then writes; claiming uses `FOR UPDATE SKIP LOCKED`.
//! - A refusal rolls the transaction back and appends its audit row on its own; a
//!   successful operation commits with its audit row. Deadlocks and serialization
//!   failures are retried.
//! - Connections come from a pool; a dead connection is replaced on its next use, so the
//!   store recovers from a server restart by itself.
//!
//! Layout: capability modules with their SQL and `impl XStore for PgStore`, as in SQLite.
//! Particulars:
//!
//! - `tx`: an operation's transaction, `Tx`, whose `BEGIN` is sent with its first
//!   statement and whose drop unfinished sends a `ROLLBACK`.
//! - `chain`: `insert_and_commit` sends the chain's advisory lock, the insert (which takes
//!   the next position and hashes the row in SQL over the content the store sends) and the
//!   `COMMIT` together. `durability`: the commit is asynchronous and followed by a flushed
//!   `pg_logical_emit_message`, so the chain's lock is not held through the WAL flush and
//!   the answer still waits for it; where the role may not run that, the commit is
//!   synchronous under the lock.
//! - `audit`: reading, verifying and pruning the chain, and the status summary;
//!   `verify_audit` reads in one REPEATABLE READ snapshot.
//! - `predicted`: a release of the caller's lock, an edit check near nobody else's, a
//!   heartbeat of a known session, an allowed guardrail check and a successful completion
//!   of the caller's claim are decided by the domain on their premises and sent whole,
//!   in one round trip; a `coord_expect` statement per
//!   premise aborts the transaction when one does not hold, and the operation then runs
//!   the ordinary way.
//! - `plans`: every read of the live locks (`locks::read_live`) and a completion's update
//!   of its dependents (`queue::unblock_dependents`, `cancel_dependents`) runs with
//!   `INDEX_SCANS_ONLY`, transaction-local: a plain index scan marks the entries of
//!   released locks dead as it meets them (a bitmap scan never does), and a queue grown
//!   since its last analyze is never read whole.
//! - `files`: a write takes the same advisory locks as an overlapping acquisition before
//!   it decides.
//! - `memory`: a stored weighted `tsvector` (GIN) over text pre-split like queries
//!   (`ts_rank` is the text score), tags as a GIN-indexed `text[]`, both without fast
//!   update; repeated memories serialised by an advisory lock on their merge key.
//! - `github`: the outbox taken `FOR UPDATE SKIP LOCKED`, so several nodes never send one
//!   request twice.
//! - Migrations in `migrations/` (`0000_bootstrap.sql`: Supabase roles, `auth.role()`, the
//!   publication; `0001_core.sql`: tables, RLS, grants, append-only triggers; …), tracked
//!   in `coord_schema_migrations` (`migrate`).
//! - `bench`: `RawPostgres`, the raw baseline of `coord bench`.

mod approvals;
mod audit;
mod bench;
mod chain;
mod durability;
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
mod plans;
mod predicted;
mod profiles;
mod queue;
mod rows;
mod sessions;
mod spawn;
mod stats;
mod tx;
mod verification;
mod violations;
mod workflows;

use coord_domain::guardrails::Violation;

use async_trait::async_trait;
use coord_domain::error::ErrorKind;
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_store::{Maintenance, OpCtx, SchemaInfo, SweepReport};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

pub use bench::{
    RawPostgres, analyze_database, create_scratch_database, drop_scratch_database, run_script, with_database,
};
pub use migrate::{MIGRATIONS, migrate};

pub(crate) use tx::{Db, Tx};

/// Failure inside a store function: a database error or a refusal decided by a rule.
#[derive(Debug)]
pub(crate) enum Fail {
    Db(tokio_postgres::Error),
    Coord(CoordError),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<CoordError> for Fail {
    fn from(e: CoordError) -> Self {
        Fail::Coord(e)
    }
}

pub(crate) type R<T> = Result<T, Fail>;

pub(crate) type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A store operation: runs inside the transaction, with the context and its arguments.
/// (Arguments are borrowed as `&A`, so an operation over a `String` takes `&String`.)
pub(crate) type OpFn<A, T> = for<'a> fn(&'a Tx<'a>, &'a OpCtx, &'a A) -> BoxFut<'a, R<T>>;

/// Tunables of the connection pool.
#[derive(Debug, Clone)]
pub struct PgOptions {
    pub pool_size: usize,
    /// Bound on connecting, and on waiting for a free pooled connection.
    pub timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    location: String,
    applied: Vec<i64>,
    /// How writes are made durable (`durability`): probed on first write.
    durability: std::sync::Arc<durability::Choice>,
    /// Predictions that missed lately (`predicted`).
    misses: std::sync::Arc<predicted::Misses>,
}

/// Connection-level failures (server gone, restarting, out of connections, no such
/// database, refused credentials) are `database_unavailable`; anything else is a bug
/// and stays in the log.
pub(crate) fn pg_error(e: &tokio_postgres::Error) -> CoordError {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            let unavailable = matches!(&code[..2], "08" | "53" | "57" | "58" | "28" | "3D")
                || db.code() == &SqlState::INSUFFICIENT_PRIVILEGE
                || db.code() == &SqlState::READ_ONLY_SQL_TRANSACTION;
            if unavailable {
                tracing::warn!(code, message = db.message(), "postgres unavailable");
                CoordError::unavailable(format!("PostgreSQL refused the operation: {}", db.message()))
            } else {
                tracing::error!(code, error = %e, "postgres error");
                CoordError::internal()
            }
        }
        None => {
            tracing::warn!(error = %e, "postgres connection failed");
            CoordError::unavailable(format!("cannot reach PostgreSQL: {}", describe(e)))
        }
    }
}

/// The error's own text and its causes, without SQL.
fn describe(e: &tokio_postgres::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s = format!("{s}: {cause}");
        source = cause.source();
    }
    s
}

fn pool_error(e: PoolError) -> CoordError {
    match e {
        // Whatever stops us getting a connection (refused, unreachable, database not
        // accepting connections) is an outage from the caller's point of view.
        PoolError::Backend(e) => {
            tracing::warn!(error = %describe(&e), "cannot open a postgres connection");
            CoordError::unavailable(format!("cannot connect to PostgreSQL: {}", describe(&e)))
        }
        PoolError::Timeout(_) => {
            CoordError::unavailable("no PostgreSQL connection became available in time (server down or pool exhausted)")
        }
        other => CoordError::unavailable(format!("cannot get a PostgreSQL connection: {other}")),
    }
}

/// A deadlock or a serialization failure; or a statement refused because one sent
/// without waiting (`Tx::send`) failed before it, whose own error is not read — most
/// likely the same (a deadlock of a multi-row update), and retried like it.
fn is_retryable(e: &tokio_postgres::Error) -> bool {
    if e.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) {
        tracing::warn!("a statement sent without waiting failed; the operation is tried again");
    }
    rolled_back(e)
}

/// Whether `e` ended its transaction with nothing committed, so that the operation may
/// run again: a deadlock, a serialization failure, or a statement sent without waiting
/// that failed before it (`Tx::send`).
pub(crate) fn rolled_back(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED
        || *c == SqlState::T_R_SERIALIZATION_FAILURE
        || *c == SqlState::IN_FAILED_SQL_TRANSACTION)
}

fn is_storage_failure(e: &CoordError) -> bool {
    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal)
}

/// `postgres://user:***@host/db`: the URL without its password.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.find(['/', '?']).map_or((rest, ""), |i| rest.split_at(i));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl PgStore {
    /// Connects, checks the server is reachable, and applies pending migrations.
    pub async fn connect(url: &str, options: PgOptions) -> CoordResult<PgStore> {
        let mut store = PgStore::connect_lazy(url, &options)?;
        let mut client = store.pool.get().await.map_err(|e| {
            let why = match e {
                PoolError::Backend(e) => describe(&e),
                PoolError::Timeout(_) => "timed out".to_string(),
                other => other.to_string(),
            };
            CoordError::unavailable(format!("cannot connect to PostgreSQL at {}: {why}", store.location))
        })?;
        store.applied = migrate::migrate(&mut client)
            .await?
            .into_iter()
            .map(i64::from)
            .collect();
        Ok(store)
    }

    /// Builds the pool without connecting (connections are made on first use).
    pub fn connect_lazy(url: &str, options: &PgOptions) -> CoordResult<PgStore> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| CoordError::unavailable(format!("invalid PostgreSQL URL {}: {e}", redact(url))))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("coord");
        }
        // Short statements only: JIT compiling one (when the planner's estimate crosses
        // jit_above_cost, as a ranked recall over many memories does) costs more than it
        // saves, and so does starting a parallel worker (measured: 8 ms added to a recall
        // the planner overestimated, against well under 1 ms of work). Options the URL
        // gives come after these (the last setting wins), so they may override them
        // and do not drop them.
        let server_options = session_options(config.get_options());
        config.options(&server_options);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .wait_timeout(Some(options.timeout))
            .create_timeout(Some(options.timeout))
            .recycle_timeout(Some(options.timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| CoordError::unavailable(format!("cannot build the PostgreSQL pool: {e}")))?;
        Ok(PgStore {
            pool,
            location: redact(url),
            applied: Vec::new(),
            durability: Default::default(),
            misses: Default::default(),
        })
    }

    pub(crate) async fn client(&self) -> CoordResult<Object> {
        self.pool.get().await.map_err(pool_error)
    }

    /// Runs one audited operation: the operation and its audit row commit together;
    /// a refusal rolls back and is audited on its own. Deadlocks are retried.
    pub(crate) async fn op<A: Sync, T: Serialize + Send>(&self, ctx: OpCtx, args: A, f: OpFn<A, T>) -> CoordResult<T> {
        self.op_then(ctx, args, f, &Ok).await
    }

    /// [`PgStore::op`] with a last step, `then`, run after the resource charges and
    /// before the audit row and the commit: what must happen only once everything else
    /// has said yes (the rename of a fenced write). A retried attempt runs it again, so
    /// it must answer the first run's outcome.
    pub(crate) async fn op_then<A: Sync, T: Serialize + Send>(
        &self,
        ctx: OpCtx,
        args: A,
        f: OpFn<A, T>,
        then: &(dyn Fn(T) -> CoordResult<T> + Sync),
    ) -> CoordResult<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut client = self.client().await?;
            let outcome: R<T> = async {
                let tx = match &ctx.policy {
                    None => Tx::new(&client),
                    Some(p) => Tx::checking(
                        &client,
                        tx::Check {
                            statement: client.prepare_cached(&profiles::FACTS_SQL).await?,
                            now: ctx.now,
                            agent_id: p.agent_id.clone(),
                            agent_type: p.agent_type.clone(),
                        },
                    ),
                };
                // A refusal too is decided on the facts of the moment.
                let value = match f(&tx, &ctx, &args).await {
                    Err(Fail::Coord(e)) if !is_storage_failure(&e) => {
                        profiles::verify(&tx, &ctx).await?;
                        return Err(Fail::Coord(e));
                    }
                    other => other?,
                };
                profiles::verify(&tx, &ctx).await?;
                let mut spent = None;
                if coord_store::counts_as_use(&ctx.charges, &value)
                    && let Some(over) = profiles::apply_charges(&tx, &ctx).await?
                {
                    // Over a limit: passes only by spending an approval of this request.
                    let grant = if ctx.limits_escalate() {
                        approvals::spend(&tx, &ctx).await?
                    } else {
                        None
                    };
                    spent = Some(grant.ok_or(Fail::Coord(over))?);
                }
                let value = then(value)?;
                let rec = ctx.audit(Ok(&value)).spending(spent.as_deref());
                chain::insert_and_commit(tx, ctx.now, &rec, &self.durability, None).await?;
                Ok(value)
            }
            .await;
            match outcome {
                Ok(v) => return Ok(v),
                Err(Fail::Db(e)) if is_retryable(&e) && attempt < 3 => continue,
                Err(Fail::Db(e)) => return Err(pg_error(&e)),
                Err(Fail::Coord(e)) if is_storage_failure(&e) => return Err(e),
                Err(Fail::Coord(e)) => {
                    // The transaction was dropped, which rolls it back before this runs.
                    return match refuse(&mut client, &ctx, e.clone(), &self.durability).await {
                        Ok(e) => Err(e),
                        Err(audit_err) => {
                            tracing::warn!(error = %CoordError::from(audit_err), "could not audit a refusal");
                            Err(e)
                        }
                    };
                }
            }
        }
    }
}

/// Records a refusal in its own transaction: its audit row and, when the caller may
/// escalate it, its approval request (answering the refusal that names it).
async fn refuse(client: &mut Object, ctx: &OpCtx, e: CoordError, choice: &durability::Choice) -> R<CoordError> {
    let tx = Tx::new(client);
    let e = match ctx.approval_request(&e) {
        Some(req) => coord_domain::approvals::awaiting(e, &approvals::enqueue(&tx, ctx, &req).await?),
        None => e,
    };
    if let Some(v) = Violation::of_refusal(&e, &ctx.parameters, ctx.redact) {
        violations::insert(&tx, ctx, &v).await?;
    }
    if let Some(a) = coord_domain::network::NetworkAccess::of_refusal(&ctx.who.agent_id, &e) {
        network::insert(&tx, ctx, &a).await?;
    }
    chain::insert_and_commit(tx, ctx.now, &ctx.audit::<()>(Err(&e)), choice, None).await?;
    Ok(e)
}

impl From<Fail> for CoordError {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Coord(e) => e,
            Fail::Db(e) => pg_error(&e),
        }
    }
}

#[async_trait]
impl Maintenance for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    /// A round trip is worth saving here: `op_then` reads the facts with the operation.
    fn verifies_policy(&self) -> bool {
        true
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn schema(&self) -> SchemaInfo {
        SchemaInfo {
            version: MIGRATIONS.last().map(|m| m.0 as i64).unwrap_or(0),
            applied_now: self.applied.clone(),
        }
    }

    async fn ping(&self) -> CoordResult<()> {
        let client = self.client().await?;
        client
            .execute("SELECT 1", &[])
            .await
            .map(|_| ())
            .map_err(|e| pg_error(&e))
    }

    async fn sweep(&self, now: Option<Timestamp>, batch: i64) -> CoordResult<SweepReport> {
        let client = self.client().await?;
        let report: R<SweepReport> = async {
            let tx = Tx::new(&client);
            let expired_locks_deleted = locks::sweep(&tx, now, batch).await?;
            let (claims_requeued, claims_failed) = queue::settle_expired_claims(&tx, now, batch).await?;
            tx.commit().await?;
            // Apart: pruning that fails never holds back expired locks and claims.
            let tx = Tx::new(&client);
            let github_rows_pruned = github::prune(&tx, now, batch).await?;
            tx.commit().await?;
            Ok(SweepReport {
                expired_locks_deleted,
                claims_requeued,
                claims_failed,
                github_rows_pruned,
            })
        }
        .await;
        report.map_err(CoordError::from)
    }
}

/// The server options of coord's connections: its own settings, then those the URL gives.
fn session_options(given: Option<&str>) -> String {
    const OURS: &str = "-c jit=off -c max_parallel_workers_per_gather=0";
    match given.map(str::trim) {
        Some(given) if !given.is_empty() => format!("{OURS} {given}"),
        _ => OURS.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_options_come_after_coords_own() {
        let ours = "-c jit=off -c max_parallel_workers_per_gather=0";
        for (given, want) in [
            (None, ours.to_string()),
            (Some(""), ours.to_string()),
            (
                Some("-c synchronous_commit=off"),
                format!("{ours} -c synchronous_commit=off"),
            ),
            (Some("-c jit=on"), format!("{ours} -c jit=on")),
        ] {
            assert_eq!(super::session_options(given), want, "{given:?}");
        }
    }
}
