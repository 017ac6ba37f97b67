//! `file_locks`: acquisition decided by the domain rule under the write lock, which
//! also makes it atomic against every overlapping acquisition (one writer at a time).

use crate::R;
use crate::SqliteStore;
use crate::rows::{minutes_to_micros, to_json, ts};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::Identity;
use coord_domain::locks::ReleaseAllResult;
use coord_domain::locks::{
    AcquireDecision, AcquireLockResult, CheckLocksResult, LockAction, LockInfo, ReleaseLockResult, decide_acquire,
    decide_release, overlapping,
};
use coord_domain::locks::{CheckEditResult, decide_edit};
use coord_domain::overrides::{BreakLockResult, decide_break};
use coord_domain::target::{Candidates, LockTarget};
use coord_domain::time::from_micros;
use coord_store::{LockStore, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

pub const LOCK_COLS: &str = "file_path, agent_id, agent_type, session_id, reason, locked_at, expires_at, fencing_token";

pub fn lock_from_row(r: &Row) -> rusqlite::Result<LockInfo> {
    Ok(LockInfo {
        file_path: r.get(0)?,
        locked_by: r.get(1)?,
        agent_type: r.get(2)?,
        session_id: r.get(3)?,
        reason: r.get(4)?,
        locked_at: ts(r, 5)?,
        expires_at: ts(r, 6)?,
        fencing_token: r.get(7)?,
    })
}

fn stored(c: &Connection, path: &str) -> rusqlite::Result<Option<LockInfo>> {
    c.prepare_cached(&format!("SELECT {LOCK_COLS} FROM file_locks WHERE file_path = ?1"))?
        .query_row([path], lock_from_row)
        .optional()
}

/// Live locks that can overlap any of `targets`: the rows their candidate scopes select,
/// filtered by the domain's overlap rule.
pub fn live_overlapping(c: &Connection, now: i64, targets: &[LockTarget]) -> R<Vec<LockInfo>> {
    let mut rows = Vec::new();
    for target in targets {
        match target.candidates() {
            Candidates::All => return Ok(overlapping(targets, all_live(c, now)?)),
            Candidates::Scoped { at, from, to } => rows.extend(
                c.prepare_cached(&format!(
                    "SELECT {LOCK_COLS} FROM file_locks
                     WHERE scope IN (SELECT value FROM json_each(?1)) AND expires_at > ?2
                     UNION ALL
                     SELECT {LOCK_COLS} FROM file_locks WHERE scope >= ?3 AND scope < ?4 AND expires_at > ?2"
                ))?
                .query_map(params![to_json(&at), now, from, to], lock_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
            ),
        }
    }
    Ok(overlapping(targets, rows))
}

fn all_live(c: &Connection, now: i64) -> R<Vec<LockInfo>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {LOCK_COLS} FROM file_locks WHERE expires_at > ?1 ORDER BY file_path"
    ))?
    .query_map([now], lock_from_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn acquire(
    c: &Connection,
    now: i64,
    who: &Identity,
    target: &LockTarget,
    reason: Option<&str>,
    ttl_minutes: i64,
) -> R<AcquireLockResult> {
    let live = live_overlapping(c, now, std::slice::from_ref(target))?;
    let path = target.key();
    let expires_at = now + minutes_to_micros(ttl_minutes);
    match decide_acquire(path, &live, who) {
        AcquireDecision::Blocked(holder) => Ok(AcquireLockResult::blocked(path, holder)),
        AcquireDecision::Refresh => {
            let lock = c
                .prepare_cached(&format!(
                    "UPDATE file_locks SET expires_at = ?2, reason = COALESCE(?3, reason)
                     WHERE file_path = ?1 RETURNING {LOCK_COLS}"
                ))?
                .query_row(params![path, expires_at, reason], lock_from_row)?;
            Ok(AcquireLockResult::granted(LockAction::Refreshed, &lock))
        }
        AcquireDecision::Take => {
            let token: i64 = c
                .prepare_cached("UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' RETURNING value")?
                .query_row([], |r| r.get(0))?;
            let lock = c
                .prepare_cached(&format!(
                    "INSERT INTO file_locks ({LOCK_COLS}, scope)
                     VALUES (?1, ?2, ?3, (SELECT session_id FROM agent_sessions WHERE agent_id = ?2), ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (file_path) DO UPDATE SET
                         agent_id = excluded.agent_id, agent_type = excluded.agent_type,
                         session_id = excluded.session_id, reason = excluded.reason,
                         locked_at = excluded.locked_at, expires_at = excluded.expires_at,
                         fencing_token = excluded.fencing_token, scope = excluded.scope
                     RETURNING {LOCK_COLS}"
                ))?
                .query_row(
                    params![
                        path,
                        who.agent_id,
                        who.agent_type,
                        reason,
                        now,
                        expires_at,
                        token,
                        target.scope()
                    ],
                    lock_from_row,
                )?;
            Ok(AcquireLockResult::granted(LockAction::Acquired, &lock))
        }
    }
}

pub fn release(c: &Connection, now: i64, who: &Identity, path: &str) -> R<ReleaseLockResult> {
    let existing = stored(c, path)?;
    decide_release(existing.as_ref(), who, path, from_micros(now))?;
    c.prepare_cached("DELETE FROM file_locks WHERE file_path = ?1")?
        .execute([path])?;
    Ok(ReleaseLockResult {
        success: true,
        released: true,
        file_path: path.to_string(),
    })
}

pub fn release_all(c: &Connection, now: i64, who: &Identity) -> R<ReleaseAllResult> {
    let mut released: Vec<String> = c
        .prepare_cached("DELETE FROM file_locks WHERE agent_id = ?1 RETURNING file_path, expires_at")?
        .query_map([&who.agent_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|(_, expires)| *expires > now)
        .map(|(path, _)| path)
        .collect();
    released.sort();
    Ok(ReleaseAllResult {
        success: true,
        released,
    })
}

pub fn check(c: &Connection, now: i64, targets: Option<&[LockTarget]>) -> R<CheckLocksResult> {
    let locks = match targets {
        None => all_live(c, now)?,
        Some(targets) => live_overlapping(c, now, targets)?,
    };
    Ok(CheckLocksResult { locks })
}

/// Refused unless no other agent holds a live lock overlapping `files` (the rule is the
/// domain's).
pub fn check_edit(c: &Connection, now: i64, who: &Identity, files: &[LockTarget]) -> R<CheckEditResult> {
    let live = live_overlapping(c, now, files)?;
    let paths = files.iter().map(|f| f.key().to_string()).collect();
    Ok(decide_edit(who, paths, &live)?)
}

pub fn live_locks_of(c: &Connection, now: i64, agent_id: &str) -> R<Vec<LockInfo>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {LOCK_COLS} FROM file_locks WHERE agent_id = ?1 AND expires_at > ?2 ORDER BY file_path"
    ))?
    .query_map(params![agent_id, now], lock_from_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Deletes up to `batch` expired rows. Expired rows are already free by predicate; this
/// only keeps the table small.
pub fn sweep(c: &Connection, now: i64, batch: i64) -> R<i64> {
    let n = c
        .prepare_cached(
            "DELETE FROM file_locks WHERE file_path IN
                 (SELECT file_path FROM file_locks WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![now, batch])?;
    Ok(n as i64)
}

#[async_trait]
impl LockStore for SqliteStore {
    async fn break_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<BreakLockResult> {
        self.op(ctx, move |c, now, _| break_lock(c, now, &file_path)).await
    }

    async fn check_edit(&self, ctx: OpCtx, files: Vec<LockTarget>) -> CoordResult<CheckEditResult> {
        self.op(ctx, move |c, now, who| check_edit(c, now, who, &files)).await
    }

    async fn acquire_lock(
        &self,
        ctx: OpCtx,
        target: LockTarget,
        reason: Option<String>,
        ttl_minutes: i64,
    ) -> CoordResult<AcquireLockResult> {
        self.op(ctx, move |c, now, who| {
            acquire(c, now, who, &target, reason.as_deref(), ttl_minutes)
        })
        .await
    }

    async fn release_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<ReleaseLockResult> {
        self.op(ctx, move |c, now, who| release(c, now, who, &file_path)).await
    }

    async fn release_all_locks(&self, ctx: OpCtx) -> CoordResult<ReleaseAllResult> {
        self.op(ctx, release_all).await
    }

    async fn check_locks(&self, ctx: OpCtx, targets: Option<Vec<LockTarget>>) -> CoordResult<CheckLocksResult> {
        self.op(ctx, move |c, now, _| check(c, now, targets.as_deref())).await
    }
}

/// A person's override (`coord_domain::overrides`): the lock read, the domain decides,
/// then the delete, in the operation's transaction.
fn break_lock(c: &Connection, now: i64, path: &str) -> R<BreakLockResult> {
    let released = decide_break(stored(c, path)?.as_ref(), path, from_micros(now))?;
    c.prepare_cached("DELETE FROM file_locks WHERE file_path = ?1")?
        .execute([path])?;
    Ok(released)
}
