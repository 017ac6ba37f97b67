//! `file_locks`: acquisition in one atomic upsert.

use crate::PgStore;
use crate::rows::{NOW, get, id_text, int};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::Timestamp;
use coord_domain::locks::ReleaseAllResult;
use coord_domain::locks::{
    AcquireLockResult, CheckLocksResult, LockAction, LockInfo, ReleaseLockResult, decide_release,
};
use coord_domain::locks::{CheckEditResult, decide_edit};
use coord_store::LockStore;
use coord_store::OpCtx;
use deadpool_postgres::GenericClient;
use std::sync::LazyLock;
use tokio_postgres::Row;
use uuid::Uuid;

pub const LOCK_COLS: &str = "file_path, agent_id, agent_type, session_id, reason, locked_at, expires_at, fencing_token";

pub fn lock_from_row(r: &Row) -> R<LockInfo> {
    Ok(LockInfo {
        file_path: get(r, 0)?,
        locked_by: get(r, 1)?,
        agent_type: get(r, 2)?,
        session_id: get::<Option<Uuid>>(r, 3)?.map(id_text),
        reason: get(r, 4)?,
        locked_at: get(r, 5)?,
        expires_at: get(r, 6)?,
        fencing_token: get(r, 7)?,
    })
}

/// Takes the lock when it is free or expired, refreshes it when the caller holds it,
/// and otherwise changes nothing — in one statement, so concurrent callers serialise on
/// the row. A refresh keeps the fencing token and the holder's details; `fresh` tells
/// the two apart because a new lease carries the token this statement drew.
///
/// The per-path advisory lock (held to commit) orders token draws: without it a
/// statement could draw its token, wait on a concurrent insert that drew a larger one,
/// and — after that lock was released and deleted — insert the smaller token, making the
/// path's tokens go backwards.
static ACQUIRE_SQL: LazyLock<String> = LazyLock::new(|| {
    let mine_and_live = format!("l.agent_id = EXCLUDED.agent_id AND l.expires_at > {NOW}");
    format!(
        "WITH serial AS (SELECT pg_advisory_xact_lock(hashtextextended($2, 0)))
         INSERT INTO file_locks AS l ({LOCK_COLS})
         SELECT $2, $3, $4, (SELECT session_id FROM agent_sessions WHERE agent_id = $3), $5,
                {NOW}, {NOW} + make_interval(mins => $6), nextval('fencing_token_seq')
         FROM serial
         ON CONFLICT (file_path) DO UPDATE SET
             agent_id = EXCLUDED.agent_id,
             agent_type = CASE WHEN {mine_and_live} THEN l.agent_type ELSE EXCLUDED.agent_type END,
             session_id = CASE WHEN {mine_and_live} THEN l.session_id ELSE EXCLUDED.session_id END,
             reason = CASE WHEN {mine_and_live} THEN COALESCE(EXCLUDED.reason, l.reason) ELSE EXCLUDED.reason END,
             locked_at = CASE WHEN {mine_and_live} THEN l.locked_at ELSE EXCLUDED.locked_at END,
             expires_at = EXCLUDED.expires_at,
             fencing_token = CASE WHEN {mine_and_live} THEN l.fencing_token ELSE EXCLUDED.fencing_token END
         WHERE l.expires_at <= {NOW} OR l.agent_id = EXCLUDED.agent_id
         RETURNING {LOCK_COLS}, fencing_token = currval('fencing_token_seq') AS fresh"
    )
});

pub async fn acquire(tx: &Tx<'_>, ctx: &OpCtx, args: &(String, Option<String>, i64)) -> R<AcquireLockResult> {
    let (path, reason, ttl) = args;
    let upsert = tx.prepare_cached(&ACQUIRE_SQL).await?;
    let holder = tx
        .prepare_cached(&format!(
            "SELECT {LOCK_COLS} FROM file_locks WHERE file_path = $2 AND expires_at > {NOW}"
        ))
        .await?;
    // A blocked answer needs the live holder; if it released or expired in between, the
    // path is free now: try again (the advisory lock keeps other acquirers out).
    for _ in 0..3 {
        let granted = tx
            .query_opt(
                &upsert,
                &[
                    &ctx.now,
                    path,
                    &ctx.who.agent_id,
                    &ctx.who.agent_type,
                    reason,
                    &int(*ttl),
                ],
            )
            .await?;
        if let Some(row) = granted {
            let action = if get::<bool>(&row, 8)? {
                LockAction::Acquired
            } else {
                LockAction::Refreshed
            };
            return Ok(AcquireLockResult::granted(action, &lock_from_row(&row)?));
        }
        if let Some(row) = tx.query_opt(&holder, &[&ctx.now, path]).await? {
            return Ok(AcquireLockResult::blocked(&lock_from_row(&row)?));
        }
    }
    Err(kept_racing())
}

fn kept_racing() -> crate::Fail {
    tracing::error!("lock acquisition kept racing with releases");
    crate::Fail::Coord(coord_domain::CoordError::unavailable(
        "the lock changed hands repeatedly during acquisition; retry",
    ))
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
pub async fn release(tx: &Tx<'_>, ctx: &OpCtx, path: &String) -> R<ReleaseLockResult> {
    let deleted = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "DELETE FROM file_locks WHERE file_path = $2 AND agent_id = $3 AND expires_at > {NOW}
                 RETURNING file_path"
            ))
            .await?,
            &[&ctx.now, path, &ctx.who.agent_id],
        )
        .await?;
    if deleted.is_none() {
        // Not ours: let the domain rule say why, from the row as it stands.
        let row = tx
            .query_opt(
                &tx.prepare_cached(&format!(
                    "SELECT {LOCK_COLS}, {NOW} FROM file_locks WHERE file_path = $2"
                ))
                .await?,
                &[&ctx.now, path],
            )
            .await?;
        let (existing, now) = match row {
            Some(r) => (Some(lock_from_row(&r)?), get::<Timestamp>(&r, 8)?),
            None => (None, ctx.now.unwrap_or_else(chrono::Utc::now)),
        };
        decide_release(existing.as_ref(), &ctx.who, path, now)?;
    }
    Ok(ReleaseLockResult {
        success: true,
        released: true,
        file_path: path.clone(),
    })
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

pub async fn check<C: GenericClient>(c: &C, now: Option<Timestamp>, paths: Option<&[String]>) -> R<CheckLocksResult> {
    let rows = match paths {
        None => {
            c.query(
                &c.prepare_cached(&format!(
                    "SELECT {LOCK_COLS} FROM file_locks WHERE expires_at > {NOW} ORDER BY file_path COLLATE \"C\""
                ))
                .await?,
                &[&now],
            )
            .await?
        }
        Some(paths) => {
            c.query(
                &c.prepare_cached(&format!(
                    "SELECT {LOCK_COLS} FROM file_locks WHERE expires_at > {NOW} AND file_path = ANY($2)
                     ORDER BY file_path COLLATE \"C\""
                ))
                .await?,
                &[&now, &paths],
            )
            .await?
        }
    };
    Ok(CheckLocksResult {
        locks: rows.iter().map(lock_from_row).collect::<R<_>>()?,
    })
}

/// Refused unless no other agent holds a live lock on `paths` (the rule is the domain's).
#[allow(clippy::ptr_arg)] // the store's OpFn hands its argument over as `&A`
pub async fn check_edit(tx: &Tx<'_>, ctx: &OpCtx, paths: &Vec<String>) -> R<CheckEditResult> {
    let live = check(tx, ctx.now, Some(paths)).await?.locks;
    Ok(decide_edit(&ctx.who, paths.clone(), &live)?)
}

pub async fn live_locks_of(tx: &Tx<'_>, now: Option<Timestamp>, agent_id: &str) -> R<Vec<LockInfo>> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {LOCK_COLS} FROM file_locks WHERE agent_id = $2 AND expires_at > {NOW}
                 ORDER BY file_path COLLATE \"C\""
            ))
            .await?,
            &[&now, &agent_id],
        )
        .await?;
    rows.iter().map(lock_from_row).collect()
}

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
    async fn check_edit(&self, ctx: OpCtx, paths: Vec<String>) -> CoordResult<CheckEditResult> {
        self.op(ctx, paths, |tx, ctx, a| Box::pin(check_edit(tx, ctx, a))).await
    }

    async fn acquire_lock(
        &self,
        ctx: OpCtx,
        file_path: String,
        reason: Option<String>,
        ttl_minutes: i64,
    ) -> CoordResult<AcquireLockResult> {
        self.op(ctx, (file_path, reason, ttl_minutes), |tx, ctx, a| {
            Box::pin(acquire(tx, ctx, a))
        })
        .await
    }

    async fn release_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<ReleaseLockResult> {
        self.op(ctx, file_path, |tx, ctx, a| Box::pin(release(tx, ctx, a)))
            .await
    }

    async fn release_all_locks(&self, ctx: OpCtx) -> CoordResult<ReleaseAllResult> {
        self.op(ctx, (), |tx, ctx, _| Box::pin(release_all(tx, ctx))).await
    }

    async fn check_locks(&self, ctx: OpCtx, file_paths: Option<Vec<String>>) -> CoordResult<CheckLocksResult> {
        self.op(ctx, file_paths, |tx, ctx, a| Box::pin(check(tx, ctx.now, a.as_deref())))
            .await
    }
}
