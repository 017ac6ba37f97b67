//! `file_locks`: acquisition decided by the domain rule over the overlapping live locks,
//! serialised by advisory locks against every acquisition that could overlap.

use crate::PgStore;
use crate::plans::{INDEX_SCANS_ONLY, index_scans_only};
use crate::predicted::{Param, Sent};
use crate::rows::{NOW, get, id_text, uuid};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::Timestamp;
use coord_domain::locks::ReleaseAllResult;
use coord_domain::locks::{
    AcquireDecision, AcquireLockResult, CheckLocksResult, LockAction, LockInfo, ReleaseLockResult, decide_acquire,
    decide_release, overlapping,
};
use coord_domain::locks::{CheckEditResult, decide_edit};
use coord_domain::overrides::{BreakLockResult, decide_break};
use coord_domain::target::{Candidates, LockTarget};
use coord_store::LockStore;
use coord_store::OpCtx;
use std::sync::LazyLock;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};
use uuid::Uuid;

pub const LOCK_COLS: &str = "file_path, agent_id, agent_type, session_id, reason, locked_at, expires_at, fencing_token";

pub fn lock_from_row(r: &Row) -> R<LockInfo> {
    lock_at(r, 0)
}

/// The lock whose [`LOCK_COLS`] start at column `at` of `r`.
fn lock_at(r: &Row, at: usize) -> R<LockInfo> {
    Ok(LockInfo {
        file_path: get(r, at)?,
        locked_by: get(r, at + 1)?,
        agent_type: get(r, at + 2)?,
        session_id: get::<Option<Uuid>>(r, at + 3)?.map(id_text),
        reason: get(r, at + 4)?,
        locked_at: get(r, at + 5)?,
        expires_at: get(r, at + 6)?,
        fencing_token: get(r, at + 7)?,
    })
}

/// Runs a read of live locks with plain index scans only ([`crate::plans`]: released
/// locks' index entries match the read until vacuum, and only a plain index scan marks
/// them dead), both in one round trip.
async fn read_live(tx: &Tx<'_>, read: &Statement, params: &[&(dyn ToSql + Sync)]) -> R<Vec<LockInfo>> {
    index_scans_only(tx, tx.query(read, params))
        .await?
        .iter()
        .map(lock_from_row)
        .collect()
}

/// Live locks that can overlap any of `targets`: the rows their candidate scopes select,
/// filtered by the domain's overlap rule.
pub async fn live_overlapping(tx: &Tx<'_>, now: Option<Timestamp>, targets: &[LockTarget]) -> R<Vec<LockInfo>> {
    let mut rows = Vec::new();
    for target in targets {
        match target.candidates() {
            Candidates::All => return Ok(overlapping(targets, all_live(tx, now).await?)),
            Candidates::Scoped { at, from, to } => {
                let stmt = tx.prepare_cached(&SCOPED_SQL).await?;
                rows.extend(read_live(tx, &stmt, &[&now, &at, &from, &to]).await?);
            }
        }
    }
    Ok(overlapping(targets, rows))
}

/// The live locks that can overlap one target's candidate scopes. Run only after
/// [`INDEX_SCANS_ONLY`] (by [`read_live`] or [`serialised`]): a plan cached without
/// it would be kept, whatever the settings of a later transaction.
static SCOPED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {LOCK_COLS} FROM file_locks WHERE scope = ANY($2) AND expires_at > {NOW}
         UNION ALL
         SELECT {LOCK_COLS} FROM file_locks WHERE scope >= $3 AND scope < $4 AND expires_at > {NOW}"
    )
});

/// Premises of a predicted edit check: no live lock of an agent other than the last
/// parameter's among the rows [`SCOPED_SQL`] / [`ALL_LIVE_SQL`] read (the domain allows
/// an edit whatever the caller's own locks).
static NONE_FOREIGN_SCOPED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT coord_expect(NOT EXISTS (SELECT 1 FROM ({}) l WHERE l.agent_id <> $5))",
        *SCOPED_SQL
    )
});
static NONE_FOREIGN_ANYWHERE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT coord_expect(NOT EXISTS (SELECT 1 FROM ({}) l WHERE l.agent_id <> $2))",
        *ALL_LIVE_SQL
    )
});

/// Every live lock, in path order (run by [`read_live`] and [`serialised`] only).
static ALL_LIVE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {LOCK_COLS} FROM file_locks WHERE expires_at > {NOW} ORDER BY file_path COLLATE \"C\"")
});

async fn all_live(tx: &Tx<'_>, now: Option<Timestamp>) -> R<Vec<LockInfo>> {
    read_live(tx, &tx.prepare_cached(&ALL_LIVE_SQL).await?, &[&now]).await
}

/// Takes, to commit, the advisory locks that order this acquisition after every
/// concurrent acquisition of an overlapping target, then reads the live locks that can
/// overlap `target` (overlap decided by the domain rule).
///
/// The keys are shared on the scope's ancestors and exclusive on the scope
/// (`LockTarget::serial_keys`), so acquisitions of unrelated targets — two files of one
/// directory — do not wait for each other, and overlapping ones do. The read starts after
/// the locks are held, so (READ COMMITTED) it sees what the previous holder committed.
/// The same order also keeps one path's fencing tokens increasing.
pub(crate) async fn serialised_live(tx: &Tx<'_>, now: Option<Timestamp>, target: &LockTarget) -> R<Vec<LockInfo>> {
    let rows = serialised(tx, &now, target, None).await?;
    let live = rows.iter().map(lock_from_row).collect::<R<Vec<_>>>()?;
    Ok(overlapping(std::slice::from_ref(target), live))
}

/// Reads the live locks that can overlap `target` once the advisory locks that serialise
/// it are held — with a new lease for `lease` (the caller) first, when given
/// ([`with_lease`]). The locks (with the read's planner settings, [`INDEX_SCANS_ONLY`])
/// and the read are two statements (the read needs a snapshot taken after the locks),
/// sent together — pipelined, both prepared, so the server runs them in order and they
/// cost one round trip.
async fn serialised(tx: &Tx<'_>, now: &Option<Timestamp>, target: &LockTarget, lease: Option<&String>) -> R<Vec<Row>> {
    let candidates = target.candidates();
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![now];
    let read: &str = match &candidates {
        Candidates::All if lease.is_some() => &LEASE_AND_ALL_SQL,
        Candidates::All => &ALL_LIVE_SQL,
        Candidates::Scoped { at, from, to } => {
            params.extend([at as &(dyn ToSql + Sync), from, to]);
            if lease.is_some() {
                &LEASE_AND_SCOPED_SQL
            } else {
                &SCOPED_SQL
            }
        }
    };
    // The caller is the lease's last parameter (`$2` or `$5`).
    params.extend(lease.map(|me| me as &(dyn ToSql + Sync)));
    let (shared, exclusive) = target.serial_keys("coord:file_locks");
    let (locks, read) = (
        tx.prepare_cached(&SERIAL_LOCKS_SQL).await?,
        tx.prepare_cached(read).await?,
    );
    let keys: [&(dyn ToSql + Sync); 2] = [&shared, &exclusive];
    let (locked, rows) = tokio::join!(biased; tx.execute(&locks, &keys), tx.query(&read, &params));
    locked?;
    Ok(rows?)
}

/// The planner settings of the read after it ([`INDEX_SCANS_ONLY`]), the shared advisory
/// locks of the scope's ancestors (`$1`) and the exclusive one of the scope (`$2`), in
/// one statement. The exclusive key's seed is the shared locks' count times zero: the
/// server must take the shared ones to compute it, so every acquisition takes its keys in
/// the same order, whatever order a statement's expressions are evaluated in.
static SERIAL_LOCKS_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{INDEX_SCANS_ONLY}, pg_advisory_xact_lock(hashtextextended($2, 0 * (
             SELECT count(pg_advisory_xact_lock_shared(hashtextextended(k, 0))) FROM unnest($1::text[]) k)))"
    )
});

/// What a new lease will be — the next fencing token (taken after the advisory locks, so
/// one path's tokens grow), the time, the caller's session (agent `$agent`) — with the
/// live locks `read` selects after it, in [`LOCK_COLS`] from the fourth column (none
/// when the only row's `file_path` is null), in one statement.
fn with_lease(read: &str, agent: &str) -> String {
    format!(
        "SELECT lease.*, l.* FROM (
             SELECT nextval('fencing_token_seq') AS token, {NOW} AS at,
                    (SELECT session_id FROM agent_sessions WHERE agent_id = {agent}) AS session) lease
         LEFT JOIN ({read}) l ON true"
    )
}

static LEASE_AND_SCOPED_SQL: LazyLock<String> = LazyLock::new(|| with_lease(&SCOPED_SQL, "$5"));
static LEASE_AND_ALL_SQL: LazyLock<String> =
    LazyLock::new(|| format!("{} ORDER BY l.file_path COLLATE \"C\"", with_lease(&ALL_LIVE_SQL, "$2")));

/// Takes or refreshes a lease in two round trips: the first takes the advisory locks
/// ([`serialised`]) and reads, with the live locks, what the new lease will be — its time, the next fencing token (taken after the
/// advisory locks, so one path's tokens still grow), the caller's session — so the
/// answer is decided before the write, which is sent without waiting (`Tx::send`) and
/// travels with the audit row and the commit. A token taken for an acquisition that is
/// blocked or refreshes is skipped: tokens grow, they need not be consecutive.
pub async fn acquire(tx: &Tx<'_>, ctx: &OpCtx, args: &(LockTarget, Option<String>, i64)) -> R<AcquireLockResult> {
    let (target, reason, ttl) = args;
    let rows = serialised(tx, &ctx.now, target, Some(&ctx.who.agent_id)).await?;
    let row = rows.first().ok_or_else(coord_domain::CoordError::internal)?;
    let (token, now, session): (i64, Timestamp, Option<Uuid>) = (get(row, 0)?, get(row, 1)?, get(row, 2)?);
    let mut live = Vec::new();
    for r in &rows {
        if get::<Option<String>>(r, 3)?.is_some() {
            live.push(lock_at(r, 3)?);
        }
    }
    let live = overlapping(std::slice::from_ref(target), live);
    let path = target.key();
    // The service bounds the TTL; a sum that still overflows is refused, never wrapped.
    let expires_at = chrono::Duration::try_minutes(*ttl)
        .and_then(|d| now.checked_add_signed(d))
        .ok_or_else(coord_domain::CoordError::internal)?;
    let (lock, action) = match decide_acquire(path, &live, &ctx.who) {
        AcquireDecision::Blocked(holder) => return Ok(AcquireLockResult::blocked(path, holder)),
        AcquireDecision::Refresh => {
            let mine = live
                .iter()
                .find(|l| l.file_path == path && l.locked_by == ctx.who.agent_id);
            let Some(mine) = mine else {
                return Err(coord_domain::CoordError::internal().into());
            };
            let refreshed = LockInfo {
                expires_at,
                reason: reason.clone().or_else(|| mine.reason.clone()),
                ..mine.clone()
            };
            // The whole row, not an update of it: a sweep or a release that deleted the
            // row meanwhile (they take no advisory lock) would leave an update nothing to
            // change, and the answer a lease that is not stored. The path's advisory lock
            // is held, so no other agent can have taken it.
            let stmt = tx.prepare_cached(TAKE_SQL).await?;
            let (session, scope) = (refreshed.session_id.as_deref().map(uuid).transpose()?, target.scope());
            let args: [&(dyn ToSql + Sync); 9] = [
                &path,
                &refreshed.locked_by,
                &refreshed.agent_type,
                &session,
                &refreshed.reason,
                &refreshed.locked_at,
                &expires_at,
                &refreshed.fencing_token,
                &scope,
            ];
            tx.send(&stmt, &args)?;
            (refreshed, LockAction::Refreshed)
        }
        AcquireDecision::Take => {
            let who = &ctx.who;
            let taken = LockInfo {
                file_path: path.to_string(),
                locked_by: who.agent_id.clone(),
                agent_type: who.agent_type.clone(),
                session_id: session.map(id_text),
                reason: reason.clone(),
                locked_at: now,
                expires_at,
                fencing_token: token,
            };
            let stmt = tx.prepare_cached(TAKE_SQL).await?;
            let scope = target.scope();
            let args: [&(dyn ToSql + Sync); 9] = [
                &path,
                &who.agent_id,
                &who.agent_type,
                &session,
                reason,
                &now,
                &expires_at,
                &token,
                &scope,
            ];
            tx.send(&stmt, &args)?;
            (taken, LockAction::Acquired)
        }
    };
    Ok(AcquireLockResult::granted(action, &lock))
}

/// A lease as decided: a new one (replacing an expired row of the same key), or the
/// caller's own extended (its token and details kept).
const TAKE_SQL: &str = "INSERT INTO file_locks AS l (file_path, agent_id, agent_type, session_id, reason, locked_at,
         expires_at, fencing_token, scope)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (file_path) DO UPDATE SET
         agent_id = EXCLUDED.agent_id, agent_type = EXCLUDED.agent_type, session_id = EXCLUDED.session_id,
         reason = EXCLUDED.reason, locked_at = EXCLUDED.locked_at, expires_at = EXCLUDED.expires_at,
         fencing_token = EXCLUDED.fencing_token, scope = EXCLUDED.scope";

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
/// `path`'s lock row as it stands (locked until the transaction ends), and the
/// transaction's time.
async fn stored(tx: &Tx<'_>, ctx: &OpCtx, path: &String) -> R<(Option<LockInfo>, Timestamp)> {
    let row = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "SELECT {LOCK_COLS}, {NOW} FROM file_locks WHERE file_path = $2 FOR UPDATE"
            ))
            .await?,
            &[&ctx.now, path],
        )
        .await?;
    Ok(match row {
        Some(r) => (Some(lock_from_row(&r)?), get::<Timestamp>(&r, 8)?),
        None => (None, ctx.now.unwrap_or_else(chrono::Utc::now)),
    })
}

/// Deletes `$2`'s lock when `$3` holds it live: the release the domain grants
/// (`decide_release`) whenever it deletes a row.
static RELEASE_OWN_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "DELETE FROM file_locks WHERE file_path = $2 AND agent_id = $3 AND expires_at > {NOW}
         RETURNING file_path"
    )
});

/// [`RELEASE_OWN_SQL`] as the premise of a predicted release: fails unless it deleted.
static RELEASE_OWN_PREMISE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH d AS ({}) SELECT coord_expect(count(*) = 1) FROM d",
        *RELEASE_OWN_SQL
    )
});

fn released(path: &str) -> ReleaseLockResult {
    ReleaseLockResult {
        success: true,
        released: true,
        file_path: path.to_string(),
    }
}

pub async fn release(tx: &Tx<'_>, ctx: &OpCtx, path: &String) -> R<ReleaseLockResult> {
    let deleted = tx
        .query_opt(
            &tx.prepare_cached(&RELEASE_OWN_SQL).await?,
            &[&ctx.now, path, &ctx.who.agent_id],
        )
        .await?;
    if deleted.is_none() {
        // Not ours: let the domain rule say why, from the row as it stands.
        let (existing, now) = stored(tx, ctx, path).await?;
        decide_release(existing.as_ref(), &ctx.who, path, now)?;
    }
    Ok(released(path))
}

pub async fn release_all(tx: &Tx<'_>, ctx: &OpCtx) -> R<ReleaseAllResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "DELETE FROM file_locks WHERE agent_id = $2 RETURNING file_path, expires_at > {NOW}"
            ))
            .await?,
            &[&ctx.now, &ctx.who.agent_id],
        )
        .await?;
    let mut released = Vec::new();
    for r in &rows {
        if get::<bool>(r, 1)? {
            released.push(get::<String>(r, 0)?);
        }
    }
    released.sort();
    Ok(ReleaseAllResult {
        success: true,
        released,
    })
}

pub async fn check(tx: &Tx<'_>, now: Option<Timestamp>, targets: Option<&[LockTarget]>) -> R<CheckLocksResult> {
    let locks = match targets {
        None => all_live(tx, now).await?,
        Some(targets) => live_overlapping(tx, now, targets).await?,
    };
    Ok(CheckLocksResult { locks })
}

/// Refused unless no other agent holds a live lock overlapping `files` (the rule is the
/// domain's).
#[allow(clippy::ptr_arg)] // the store's OpFn hands its argument over as `&A`
pub async fn check_edit(tx: &Tx<'_>, ctx: &OpCtx, files: &Vec<LockTarget>) -> R<CheckEditResult> {
    let live = live_overlapping(tx, ctx.now, files).await?;
    let paths = files.iter().map(|f| f.key().to_string()).collect();
    Ok(decide_edit(&ctx.who, paths, &live)?)
}

pub async fn live_locks_of(tx: &Tx<'_>, now: Option<Timestamp>, agent_id: &str) -> R<Vec<LockInfo>> {
    read_live(tx, &tx.prepare_cached(&LIVE_OF_SQL).await?, &[&now, &agent_id]).await
}

/// One agent's live locks, in path order (run by [`read_live`] only).
static LIVE_OF_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {LOCK_COLS} FROM file_locks WHERE agent_id = $2 AND expires_at > {NOW}
         ORDER BY file_path COLLATE \"C\""
    )
});

/// Deletes up to `batch` expired rows, skipping rows another transaction is touching.
pub async fn sweep(tx: &Tx<'_>, now: Option<Timestamp>, batch: i64) -> R<i64> {
    let n = tx
        .execute(
            &tx.prepare_cached(&format!(
                "DELETE FROM file_locks WHERE file_path IN
                     (SELECT file_path FROM file_locks WHERE expires_at <= {NOW} LIMIT $2 FOR UPDATE SKIP LOCKED)"
            ))
            .await?,
            &[&now, &batch],
        )
        .await?;
    Ok(n as i64)
}

#[async_trait]
impl LockStore for PgStore {
    async fn break_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<BreakLockResult> {
        self.op(ctx, file_path, |tx, ctx, a| Box::pin(break_lock(tx, ctx, a)))
            .await
    }

    /// Predicted allowed (one round trip) when no other agent holds a live lock among
    /// the rows the ordinary check would read.
    async fn check_edit(&self, ctx: OpCtx, files: Vec<LockTarget>) -> CoordResult<CheckEditResult> {
        let paths = files.iter().map(|f| f.key().to_string()).collect();
        let predicted = decide_edit(&ctx.who, paths, &[])?;
        let mut sent = vec![Sent::new(INDEX_SCANS_ONLY, vec![])];
        for target in &files {
            let me: Param = Box::new(ctx.who.agent_id.clone());
            sent.push(match target.candidates() {
                Candidates::All => Sent::new(NONE_FOREIGN_ANYWHERE.as_str(), vec![Box::new(ctx.now), me]),
                Candidates::Scoped { at, from, to } => Sent::new(
                    NONE_FOREIGN_SCOPED.as_str(),
                    vec![Box::new(ctx.now), Box::new(at), Box::new(from), Box::new(to), me],
                ),
            });
        }
        self.op_predicted(ctx, predicted, sent, files, |tx, ctx, a| {
            Box::pin(check_edit(tx, ctx, a))
        })
        .await
    }

    async fn acquire_lock(
        &self,
        ctx: OpCtx,
        target: LockTarget,
        reason: Option<String>,
        ttl_minutes: i64,
    ) -> CoordResult<AcquireLockResult> {
        self.op(ctx, (target, reason, ttl_minutes), |tx, ctx, a| {
            Box::pin(acquire(tx, ctx, a))
        })
        .await
    }

    /// Predicted released (one round trip) when the caller holds the lock.
    async fn release_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<ReleaseLockResult> {
        let premise = Sent::new(
            RELEASE_OWN_PREMISE.as_str(),
            vec![
                Box::new(ctx.now),
                Box::new(file_path.clone()),
                Box::new(ctx.who.agent_id.clone()),
            ],
        );
        self.op_predicted(ctx, released(&file_path), vec![premise], file_path, |tx, ctx, a| {
            Box::pin(release(tx, ctx, a))
        })
        .await
    }

    async fn release_all_locks(&self, ctx: OpCtx) -> CoordResult<ReleaseAllResult> {
        self.op(ctx, (), |tx, ctx, _| Box::pin(release_all(tx, ctx))).await
    }

    async fn check_locks(&self, ctx: OpCtx, targets: Option<Vec<LockTarget>>) -> CoordResult<CheckLocksResult> {
        self.op(ctx, targets, |tx, ctx, a| Box::pin(check(tx, ctx.now, a.as_deref())))
            .await
    }
}

/// A person's override (`coord_domain::overrides`): the lock read (and locked), the domain decides,
/// then the delete, in the operation's transaction.
async fn break_lock(tx: &Tx<'_>, ctx: &OpCtx, path: &String) -> R<BreakLockResult> {
    let (existing, now) = stored(tx, ctx, path).await?;
    let released = decide_break(existing.as_ref(), path, now)?;
    tx.execute(
        &tx.prepare_cached("DELETE FROM file_locks WHERE file_path = $1").await?,
        &[path],
    )
    .await?;
    Ok(released)
}

#[cfg(test)]
mod tests {
    //! On a real server, on a temporary `file_locks` (it hides the real table for its
    //! session): a temporary table is never vacuumed, and its deleted rows are dead to
    //! every transaction at once, so what a plain index scan marks stays marked.
    use super::*;
    use crate::plans::tests::explain;
    use crate::tx::tests::connection;
    use deadpool_postgres::Object;

    const READ: &str = "EXECUTE live(NULL, ARRAY['', 'src', 'src/a.rs'], 'src/a.rs/', 'src/a.rs0')";

    /// `file_locks` as the migrations leave it, after `src/a.rs` was locked and released
    /// 400 times (as a lock pair does it: a row inserted, then deleted) beside 50 live
    /// locks, with statistics; and the read of the live locks prepared as `live`. With
    /// `spread`, other agents' locks of `x/` are taken between the rounds, so that each
    /// dead row of `src/a.rs` is on a page of its own, as they are on a busy server.
    async fn churned(c: &Object, spread: bool) {
        let others = if spread {
            "INSERT INTO file_locks SELECT 'x/' || i || '/' || j, 'c', 't', NULL, repeat('x', 200), now(),
                 now() + interval '1 hour', 0, 'x' FROM generate_series(1, 40) j;"
        } else {
            ""
        };
        c.batch_execute(&format!(
            "CREATE TEMP TABLE file_locks (
                 file_path text PRIMARY KEY, agent_id text NOT NULL, agent_type text NOT NULL,
                 session_id uuid, reason text, locked_at timestamptz NOT NULL,
                 expires_at timestamptz NOT NULL, fencing_token bigint NOT NULL,
                 scope text COLLATE \"C\" NOT NULL DEFAULT '');
             CREATE INDEX ON file_locks (expires_at);
             CREATE INDEX ON file_locks (agent_id);
             CREATE INDEX ON file_locks (scope, expires_at);
             INSERT INTO file_locks
                 SELECT 'src/f' || i || '.rs', 'b', 't', NULL, NULL, now(), now() + interval '1 hour', i, 'src/f' || i || '.rs'
                 FROM generate_series(1, 50) i;
             DO $$ BEGIN FOR i IN 1..400 LOOP
                 INSERT INTO file_locks VALUES ('src/a.rs', 'a', 't', NULL, NULL, now(), now() + interval '1 hour', 1000 + i, 'src/a.rs');
                 DELETE FROM file_locks WHERE file_path = 'src/a.rs';
                 {others}
             END LOOP; END $$;
             ANALYZE file_locks;
             PREPARE live(timestamptz, text[], text, text) AS {};",
            *SCOPED_SQL
        ))
        .await
        .unwrap();
    }

    /// The plan of [`READ`] in a transaction, after `setup`: its node types, and the
    /// buffers it read when `analyze`.
    async fn plan(c: &Object, setup: &str, analyze: bool) -> (Vec<String>, i64) {
        let options = if analyze { "ANALYZE, BUFFERS, " } else { "" };
        let (nodes, top) = explain(c, setup, options, READ).await;
        let buffers = top[0]["Plan"]["Local Hit Blocks"].as_i64().unwrap_or(0)
            + top[0]["Plan"]["Local Read Blocks"].as_i64().unwrap_or(0);
        (nodes, buffers)
    }

    fn only_index_scans(nodes: &[String]) -> bool {
        nodes.iter().all(|n| n == "Append" || n == "Index Scan")
    }

    #[tokio::test]
    async fn the_reads_of_live_locks_are_planned_as_plain_index_scans() {
        let Some((_store, c)) = connection().await else { return };
        churned(&c, false).await;
        // What the planner does left to itself: the test would prove nothing otherwise.
        let (nodes, _) = plan(&c, "SET LOCAL plan_cache_mode = force_custom_plan;", false).await;
        assert!(!only_index_scans(&nodes), "without the settings: {nodes:?}");
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let setup = format!("SET LOCAL plan_cache_mode = {mode}; {INDEX_SCANS_ONLY};");
            let (nodes, _) = plan(&c, &setup, false).await;
            assert!(only_index_scans(&nodes), "{mode}: {nodes:?}");
        }
    }

    /// Why plain index scans: they mark the dead entries they meet, a bitmap scan never
    /// does (the first test guards that the reads get them).
    #[tokio::test]
    async fn a_plain_index_scan_leaves_the_dead_entries_it_met_behind() {
        let Some((_store, c)) = connection().await else { return };
        churned(&c, true).await;
        let bitmap = "SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off;";
        let (nodes, first) = plan(&c, bitmap, true).await;
        assert!(nodes.iter().any(|n| n == "Bitmap Heap Scan"), "{nodes:?}");
        let (_, again) = plan(&c, bitmap, true).await;
        assert!(first > 100, "the read visits the 400 dead rows: {first} buffers");
        assert!(
            again * 10 > first * 9,
            "a bitmap scan visits them every time: {first} then {again}"
        );
        let setup = format!("SET LOCAL plan_cache_mode = force_custom_plan; {INDEX_SCANS_ONLY};");
        let (nodes, first) = plan(&c, &setup, true).await;
        assert!(only_index_scans(&nodes), "{nodes:?}");
        let (_, second) = plan(&c, &setup, true).await;
        assert!(first > 100, "the first plain index scan visits them: {first} buffers");
        assert!(
            second * 5 < first,
            "later reads skip them: {first} then {second} buffers"
        );
    }

    /// An acquisition's read of the live locks with its lease ([`LEASE_AND_SCOPED_SQL`],
    /// [`LEASE_AND_ALL_SQL`]) is planned as plain index scans too, under the settings the
    /// advisory locks' statement sets before it.
    #[tokio::test]
    async fn an_acquisitions_read_with_its_lease_is_planned_as_plain_index_scans() {
        let Some((_store, c)) = connection().await else { return };
        churned(&c, false).await;
        c.batch_execute(&format!(
            "CREATE TEMP TABLE agent_sessions (agent_id text PRIMARY KEY, session_id uuid);
             CREATE TEMP SEQUENCE fencing_token_seq;
             PREPARE lease_scoped(timestamptz, text[], text, text, text) AS {};
             PREPARE lease_all(timestamptz, text) AS {};",
            *LEASE_AND_SCOPED_SQL, *LEASE_AND_ALL_SQL
        ))
        .await
        .unwrap();
        let reads = [
            "EXECUTE lease_scoped(NULL, ARRAY['', 'src', 'src/a.rs'], 'src/a.rs/', 'src/a.rs0', 'a')",
            "EXECUTE lease_all(NULL, 'a')",
        ];
        for read in reads {
            for mode in ["force_custom_plan", "force_generic_plan"] {
                let setup = format!("SET LOCAL plan_cache_mode = {mode}; {INDEX_SCANS_ONLY};");
                let (nodes, _) = explain(&c, &setup, "", read).await;
                let scans: Vec<&String> = nodes
                    .iter()
                    .filter(|n| n.ends_with("Scan") && *n != "Subquery Scan")
                    .collect();
                assert!(
                    scans.len() >= 2 && scans.iter().all(|n| *n == "Index Scan"),
                    "{read}, {mode}: {nodes:?}"
                );
            }
        }
    }

    /// The transaction's planner settings after a read, and what the read answered.
    async fn settings_after(tx: &Tx<'_>) -> (String, String) {
        let row = tx
            .query_one(
                "SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan')",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }

    /// Every store read of the live locks sends [`INDEX_SCANS_ONLY`] in its transaction
    /// (the tests above show what that buys), and still answers the live locks.
    #[tokio::test]
    async fn every_read_of_the_live_locks_runs_with_index_scans_only() {
        let Some((_store, c)) = connection().await else { return };
        churned(&c, false).await;
        let off = ("off".to_string(), "off".to_string());
        let dir = LockTarget::parse("src/", None).unwrap();
        let cases: [(&str, usize); 4] = [
            ("live_overlapping", 50),
            ("check", 50),
            ("serialised_live", 50),
            ("live_locks_of", 50),
        ];
        for (read, expected) in cases {
            let tx = Tx::new(&c);
            let live = match read {
                "live_overlapping" => live_overlapping(&tx, None, std::slice::from_ref(&dir)).await.unwrap(),
                "check" => check(&tx, None, None).await.unwrap().locks,
                "serialised_live" => serialised_live(&tx, None, &dir).await.unwrap(),
                _ => live_locks_of(&tx, None, "b").await.unwrap(),
            };
            assert_eq!(live.len(), expected, "{read}");
            assert_eq!(settings_after(&tx).await, off, "{read}");
        }
        // Nothing leaks out of a transaction into the pooled connection.
        let row = c
            .query_one("SELECT current_setting('enable_bitmapscan')", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "on");
    }
}
