//! `agent_sessions`: one row per agent holding its current session.

use crate::R;
use crate::handoffs;
use crate::locks;
use crate::queue;
use crate::rows::{minutes_to_micros, opt_ts, string_list, to_json, ts};
use crate::{Fail, SqliteStore};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::ErrorCode;
use coord_domain::Identity;
use coord_domain::sessions::{
    AgentInfo, AgentStatus, CleanupResult, DiscoverAgentsResult, NewSession, REASON_SESSION_ENDED, SessionResult,
};
use coord_domain::sessions::{Cleanup, EndSession, EndSessionResult, complete_final_handoff, session_alive};
use coord_store::{OpCtx, SessionStore};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

const AGENT_COLS: &str = "agent_id, agent_type, session_id, capabilities, status, current_task, last_heartbeat, started_at, ended_at, team, \
     worktree, branch";

fn agent_from_row(r: &Row) -> rusqlite::Result<AgentInfo> {
    let status: String = r.get(4)?;
    Ok(AgentInfo {
        agent_id: r.get(0)?,
        agent_type: r.get(1)?,
        session_id: r.get(2)?,
        capabilities: string_list(r, 3)?,
        status: AgentStatus::parse(&status).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(4, Type::Text, format!("unknown agent status {status:?}").into())
        })?,
        current_task: r.get(5)?,
        last_heartbeat: ts(r, 6)?,
        started_at: ts(r, 7)?,
        ended_at: opt_ts(r, 8)?,
        team: r.get(9)?,
        guardrail_violations: 0,
        worktree: r.get(10)?,
        branch: r.get(11)?,
    })
}

pub fn register(c: &Connection, now: i64, who: &Identity, s: &NewSession) -> R<SessionResult> {
    c.prepare_cached(
        "INSERT INTO agent_sessions (agent_id, session_id, agent_type, capabilities, status, current_task,
             started_at, ended_at, last_heartbeat, team, worktree, branch)
         VALUES (?1, ?2, ?3, ?4, 'active', ?5, ?6, NULL, ?6, ?7, ?8, ?9)
         ON CONFLICT (agent_id) DO UPDATE SET
             session_id = excluded.session_id, agent_type = excluded.agent_type,
             capabilities = excluded.capabilities, status = 'active', current_task = excluded.current_task,
             started_at = excluded.started_at, ended_at = NULL, last_heartbeat = excluded.last_heartbeat,
             team = excluded.team, worktree = excluded.worktree, branch = excluded.branch",
    )?
    .execute(params![
        who.agent_id,
        s.session_id,
        who.agent_type,
        to_json(&s.capabilities),
        s.current_task,
        now,
        s.team,
        s.worktree,
        s.branch
    ])?;
    Ok(SessionResult::of(s.session_id.clone()))
}

pub fn heartbeat(
    c: &Connection,
    now: i64,
    who: &Identity,
    new_session_id: &str,
    lease_minutes: i64,
) -> R<SessionResult> {
    let alive: Option<String> = c
        .prepare_cached(
            "UPDATE agent_sessions SET last_heartbeat = ?2, status = 'active'
             WHERE agent_id = ?1 AND status <> 'disconnected' RETURNING session_id",
        )?
        .query_row(params![who.agent_id, now], |r| r.get(0))
        .optional()?;
    let session_id = match alive {
        Some(id) => id,
        // No session, or one that cleanup ended: a heartbeat proves the agent is alive,
        // so it starts a new session (keeping the capabilities it declared before).
        None => c
            .prepare_cached(
                "INSERT INTO agent_sessions (agent_id, session_id, agent_type, capabilities, status,
                     started_at, last_heartbeat)
                 VALUES (?1, ?2, ?3, '[]', 'active', ?4, ?4)
                 ON CONFLICT (agent_id) DO UPDATE SET
                     session_id = excluded.session_id, agent_type = excluded.agent_type, status = 'active',
                     started_at = excluded.started_at, ended_at = NULL, last_heartbeat = excluded.last_heartbeat
                 RETURNING session_id",
            )?
            .query_row(params![who.agent_id, new_session_id, who.agent_type, now], |r| r.get(0))?,
    };
    c.prepare_cached(
        "UPDATE work_queue INDEXED BY work_queue_claimed_by SET claimed_until = MAX(claimed_until, ?2)
         WHERE status = 'claimed' AND claimed_by = ?1 AND claimed_until > ?3",
    )?
    .execute(params![who.agent_id, now + minutes_to_micros(lease_minutes), now])?;
    Ok(SessionResult::of(session_id))
}

pub fn set_status(c: &Connection, who: &Identity, status: AgentStatus) -> R<SessionResult> {
    let session: Option<String> = c
        .prepare_cached("UPDATE agent_sessions SET status = ?2 WHERE agent_id = ?1 AND status <> 'disconnected' RETURNING session_id")?
        .query_row(params![who.agent_id, status.as_str()], |r| r.get(0))
        .optional()?;
    match session {
        Some(session_id) => Ok(SessionResult::of(session_id)),
        None => Err(coord_domain::sessions::no_live_session(&who.agent_id).into()),
    }
}

/// Ends the caller's session: its locks, its claims, its final handoff and its status,
/// at once.
pub fn end(c: &Connection, now: i64, who: &Identity, end: &EndSession) -> R<EndSessionResult> {
    if let Some(expected) = &end.if_session {
        let current: Option<String> = c
            .prepare_cached("SELECT session_id FROM agent_sessions WHERE agent_id = ?1")?
            .query_row([&who.agent_id], |r| r.get(0))
            .optional()?;
        if current.as_ref() != Some(expected) {
            return Ok(EndSessionResult::not_ended());
        }
    }
    let released = if end.release_locks {
        locks::release_all(c, now, who)?.released
    } else {
        Vec::new()
    };
    let claimed = queue::claimed_by(c, &who.agent_id)?;
    let handoff_id = match &end.handoff {
        Some(h) => {
            let mut h = h.clone();
            complete_final_handoff(&mut h, &released, &claimed);
            Some(handoffs::write(c, now, who, &h)?.handoff_id)
        }
        None => None,
    };
    let requeued = if end.requeue_tasks {
        let claims: Vec<(String, i32, i32)> = claimed
            .iter()
            .map(|t| (t.task_id.clone(), t.attempts, t.max_attempts))
            .collect();
        queue::settle(c, now, &claims, REASON_SESSION_ENDED)?
    } else {
        (0, 0)
    };
    crate::memory::archive_working(c, now, &who.agent_id)?;
    let session_id = match set_status(c, who, AgentStatus::Idle) {
        Ok(s) => Some(s.session_id),
        Err(Fail::Coord(e)) if e.code == ErrorCode::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(EndSessionResult::ended(released, requeued, handoff_id, session_id))
}

pub fn discover(c: &Connection, capability: Option<&str>, status: Option<AgentStatus>) -> R<DiscoverAgentsResult> {
    let agents = c
        .prepare_cached(&format!(
            "SELECT {AGENT_COLS}, {violations} FROM agent_sessions
             WHERE (?1 IS NULL OR status = ?1)
               AND (?2 IS NULL OR EXISTS (SELECT 1 FROM json_each(capabilities) WHERE value = ?2))
             ORDER BY last_heartbeat DESC, agent_id",
            violations = crate::violations::BLOCKED_OF_SESSION
        ))?
        .query_map(params![status.map(|s| s.as_str()), capability], |r| {
            Ok(AgentInfo {
                guardrail_violations: r.get(12)?,
                ..agent_from_row(r)?
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(DiscoverAgentsResult { agents })
}

pub fn cleanup(c: &Connection, now: i64, who: &Identity, cleanup: &Cleanup) -> R<CleanupResult> {
    let cutoff = now - minutes_to_micros(cleanup.stale_minutes);
    if !cleanup.live_allowed
        && let Some((session, agent)) = c
            .prepare_cached(
                "SELECT session_id, agent_id FROM agent_sessions
                 WHERE status <> 'disconnected' AND last_heartbeat >= ?1 AND agent_id <> ?2
                   AND session_id IN (SELECT value FROM json_each(?3))
                 ORDER BY session_id LIMIT 1",
            )?
            .query_row(params![cutoff, who.agent_id, to_json(&cleanup.sessions)], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?
    {
        return Err(session_alive(&session, &agent).into());
    }
    let mut agents = c
        .prepare_cached(
            "UPDATE agent_sessions SET status = 'disconnected', ended_at = ?1
             WHERE status <> 'disconnected'
               AND (last_heartbeat < ?2 OR session_id IN (SELECT value FROM json_each(?3)))
             RETURNING agent_id",
        )?
        .query_map(params![now, cutoff, to_json(&cleanup.sessions)], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    agents.sort();
    if agents.is_empty() {
        return Ok(CleanupResult::nothing_stale());
    }
    let ids = to_json(&agents);
    let locks_released = c
        .prepare_cached(
            "DELETE FROM file_locks WHERE agent_id IN (SELECT value FROM json_each(?1)) RETURNING expires_at",
        )?
        .query_map([&ids], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|expires| *expires > now)
        .count() as i64;
    let claims = c
        .prepare_cached(
            "SELECT task_id, attempts, max_attempts FROM work_queue INDEXED BY work_queue_claimed_by
             WHERE status = 'claimed' AND claimed_by IN (SELECT value FROM json_each(?1))",
        )?
        .query_map([&ids], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<(String, i32, i32)>>>()?;
    let (tasks_requeued, tasks_failed) = queue::settle(c, now, &claims, "claimer stopped responding")?;
    Ok(CleanupResult {
        success: true,
        agents_cleaned: agents.len() as i64,
        agents,
        locks_released,
        tasks_requeued,
        tasks_failed,
    })
}

pub fn counts(c: &Connection) -> R<Vec<(AgentStatus, i64)>> {
    let rows = c
        .prepare_cached("SELECT status, count(*) FROM agent_sessions GROUP BY status")?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(s, n)| AgentStatus::parse(&s).map(|s| (s, n)))
        .collect())
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn end_session(&self, ctx: OpCtx, end_session: EndSession) -> CoordResult<EndSessionResult> {
        self.op(ctx, move |c, now, who| end(c, now, who, &end_session)).await
    }

    async fn register_session(&self, ctx: OpCtx, session: NewSession) -> CoordResult<SessionResult> {
        self.op(ctx, move |c, now, who| register(c, now, who, &session)).await
    }

    async fn heartbeat(&self, ctx: OpCtx, new_session_id: String, lease_minutes: i64) -> CoordResult<SessionResult> {
        self.op(ctx, move |c, now, who| {
            heartbeat(c, now, who, &new_session_id, lease_minutes)
        })
        .await
    }

    async fn discover_agents(
        &self,
        ctx: OpCtx,
        capability: Option<String>,
        status: Option<AgentStatus>,
    ) -> CoordResult<DiscoverAgentsResult> {
        self.op(ctx, move |c, _, _| discover(c, capability.as_deref(), status))
            .await
    }

    async fn cleanup_dead_agents(&self, ctx: OpCtx, which: Cleanup) -> CoordResult<CleanupResult> {
        self.op(ctx, move |c, now, who| cleanup(c, now, who, &which)).await
    }

    async fn set_session_status(&self, ctx: OpCtx, status: AgentStatus) -> CoordResult<SessionResult> {
        self.op(ctx, move |c, _, who| set_status(c, who, status)).await
    }
}
