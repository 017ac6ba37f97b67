//! `agent_sessions`: one row per agent holding its current session.

use crate::handoffs;
use crate::locks;
use crate::predicted::Sent;
use crate::queue;
use crate::rows::{NOW, get, id_text, int, uuid};
use crate::{Fail, OpFn, PgStore};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::ErrorCode;
use coord_domain::sessions::{
    AgentInfo, AgentStatus, CleanupResult, DiscoverAgentsResult, NewSession, REASON_SESSION_ENDED, SessionResult,
};
use coord_domain::sessions::{Cleanup, EndSession, EndSessionResult, complete_final_handoff, session_alive};
use coord_domain::{CoordError, Identity, Timestamp};
use coord_store::OpCtx;
use coord_store::SessionStore;
use std::sync::LazyLock;
use tokio_postgres::Row;
use uuid::Uuid;

const AGENT_COLS: &str = "agent_id, agent_type, session_id, capabilities, status, current_task, last_heartbeat, started_at, ended_at, team, \
     worktree, branch";

fn agent_from_row(r: &Row) -> R<AgentInfo> {
    let status: &str = get(r, 4)?;
    Ok(AgentInfo {
        agent_id: get(r, 0)?,
        agent_type: get(r, 1)?,
        session_id: Some(id_text(get(r, 2)?)),
        capabilities: get(r, 3)?,
        status: AgentStatus::parse(status).ok_or_else(|| crate::Fail::Coord(CoordError::internal()))?,
        current_task: get(r, 5)?,
        last_heartbeat: get(r, 6)?,
        started_at: get(r, 7)?,
        ended_at: get(r, 8)?,
        team: get(r, 9)?,
        guardrail_violations: 0,
        worktree: get(r, 10)?,
        branch: get(r, 11)?,
    })
}

pub async fn register(tx: &Tx<'_>, ctx: &OpCtx, s: &NewSession) -> R<SessionResult> {
    // The session's id is the request's: sent without waiting (`Tx::send`).
    tx.send(
        &tx.prepare_cached(&format!(
            "INSERT INTO agent_sessions (agent_id, session_id, agent_type, capabilities, status, current_task,
                 started_at, ended_at, last_heartbeat, team, worktree, branch)
             VALUES ($2, $3, $4, $5, 'active', $6, {NOW}, NULL, {NOW}, $7, $8, $9)
             ON CONFLICT (agent_id) DO UPDATE SET
                 session_id = EXCLUDED.session_id, agent_type = EXCLUDED.agent_type,
                 capabilities = EXCLUDED.capabilities, status = 'active', current_task = EXCLUDED.current_task,
                 started_at = EXCLUDED.started_at, ended_at = NULL, last_heartbeat = EXCLUDED.last_heartbeat,
                 team = EXCLUDED.team, worktree = EXCLUDED.worktree, branch = EXCLUDED.branch"
        ))
        .await?,
        &[
            &ctx.now,
            &ctx.who.agent_id,
            &uuid(&s.session_id)?,
            &ctx.who.agent_type,
            &s.capabilities,
            &s.current_task,
            &s.team,
            &s.worktree,
            &s.branch,
        ],
    )?;
    Ok(SessionResult::of(s.session_id.clone()))
}

/// A heartbeat of `$2`'s live session.
static TOUCH_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE agent_sessions SET last_heartbeat = {NOW}, status = 'active'
         WHERE agent_id = $2 AND status <> 'disconnected' RETURNING session_id"
    )
});

/// [`TOUCH_SQL`] as the premise of a predicted heartbeat: fails unless it touched the
/// session `$3`.
static TOUCH_PREMISE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH t AS ({}) SELECT coord_expect(count(*) = 1 AND bool_and(session_id::text = $3)) FROM t",
        *TOUCH_SQL
    )
});

/// A heartbeat extends `$2`'s live claims to at least `$3` minutes from now.
static EXTEND_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE work_queue SET claimed_until = GREATEST(claimed_until, {NOW} + make_interval(mins => $3))
         WHERE status = 'claimed' AND claimed_by = $2 AND claimed_until > {NOW}"
    )
});

/// A heartbeat's statements when the caller's session is known (the facts of its last
/// call, `session`): predicted to touch that session (`predicted`).
fn predicted_heartbeat(ctx: &OpCtx, session: &str, lease_minutes: i64) -> Vec<Sent> {
    vec![
        Sent::new(
            TOUCH_PREMISE.as_str(),
            vec![
                Box::new(ctx.now),
                Box::new(ctx.who.agent_id.clone()),
                Box::new(session.to_string()),
            ],
        ),
        Sent::new(
            EXTEND_SQL.as_str(),
            vec![
                Box::new(ctx.now),
                Box::new(ctx.who.agent_id.clone()),
                Box::new(int(lease_minutes)),
            ],
        ),
    ]
}

pub async fn heartbeat(tx: &Tx<'_>, ctx: &OpCtx, args: &(String, i64)) -> R<SessionResult> {
    let (new_session_id, lease_minutes) = args;
    let (touch, extend) = (
        tx.prepare_cached(&TOUCH_SQL).await?,
        tx.prepare_cached(&EXTEND_SQL).await?,
    );
    // Independent of each other: sent together, one round trip.
    let lease = int(*lease_minutes);
    let touch_params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&ctx.now, &ctx.who.agent_id];
    let extend_params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&ctx.now, &ctx.who.agent_id, &lease];
    let (alive, extended) = tokio::join!(
        biased;
        tx.query_opt(&touch, &touch_params),
        tx.execute(&extend, &extend_params)
    );
    let alive = alive?;
    extended?;
    let session: Uuid = match alive {
        Some(r) => get(&r, 0)?,
        // No session, or one that cleanup ended: the heartbeat proves the agent alive,
        // so it starts a new session, keeping the capabilities declared before.
        None => get(
            &tx.query_one(
                &tx.prepare_cached(&format!(
                    "INSERT INTO agent_sessions (agent_id, session_id, agent_type, status, started_at, last_heartbeat)
                     VALUES ($2, $3, $4, 'active', {NOW}, {NOW})
                     ON CONFLICT (agent_id) DO UPDATE SET
                         session_id = EXCLUDED.session_id, agent_type = EXCLUDED.agent_type, status = 'active',
                         started_at = EXCLUDED.started_at, ended_at = NULL, last_heartbeat = EXCLUDED.last_heartbeat
                     RETURNING session_id"
                ))
                .await?,
                &[&ctx.now, &ctx.who.agent_id, &uuid(new_session_id)?, &ctx.who.agent_type],
            )
            .await?,
            0,
        )?,
    };
    Ok(SessionResult::of(id_text(session)))
}

pub async fn set_status(tx: &Tx<'_>, ctx: &OpCtx, status: AgentStatus) -> R<SessionResult> {
    let row = tx
        .query_opt(
            &tx.prepare_cached("UPDATE agent_sessions SET status = $2 WHERE agent_id = $1 AND status <> 'disconnected' RETURNING session_id")
                .await?,
            &[&ctx.who.agent_id, &status.as_str()],
        )
        .await?;
    match row {
        Some(r) => Ok(SessionResult::of(id_text(get(&r, 0)?))),
        None => Err(coord_domain::sessions::no_live_session(&ctx.who.agent_id).into()),
    }
}

/// Ends the caller's session: its locks, its claims, its final handoff and its status,
/// at once.
pub async fn end(tx: &Tx<'_>, ctx: &OpCtx, end: &EndSession) -> R<EndSessionResult> {
    if let Some(expected) = &end.if_session {
        let current = tx
            .query_opt(
                &tx.prepare_cached("SELECT session_id FROM agent_sessions WHERE agent_id = $1 FOR UPDATE")
                    .await?,
                &[&ctx.who.agent_id],
            )
            .await?
            .map(|r| get::<Uuid>(&r, 0).map(id_text))
            .transpose()?;
        if current.as_ref() != Some(expected) {
            return Ok(EndSessionResult::not_ended());
        }
    }
    let released = if end.release_locks {
        locks::release_all(tx, ctx).await?.released
    } else {
        Vec::new()
    };
    let claimed = queue::claimed_by(tx, &ctx.who.agent_id).await?;
    let handoff_id = match &end.handoff {
        Some(h) => {
            let mut h = h.clone();
            complete_final_handoff(&mut h, &released, &claimed);
            Some(handoffs::write(tx, ctx, &h).await?.handoff_id)
        }
        None => None,
    };
    let requeued = if end.requeue_tasks {
        let claims = tx
            .query(
                &tx.prepare_cached(
                    "SELECT task_id, attempts, max_attempts FROM work_queue
                     WHERE status = 'claimed' AND claimed_by = $1 FOR UPDATE",
                )
                .await?,
                &[&ctx.who.agent_id],
            )
            .await?;
        queue::settle(tx, ctx.now, &claims, REASON_SESSION_ENDED).await?
    } else {
        (0, 0)
    };
    crate::memory::archive_working(tx, ctx).await?;
    let session_id = match set_status(tx, ctx, AgentStatus::Idle).await {
        Ok(s) => Some(s.session_id),
        Err(Fail::Coord(e)) if e.code == ErrorCode::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(EndSessionResult::ended(released, requeued, handoff_id, session_id))
}

pub async fn discover(tx: &Tx<'_>, args: &(Option<String>, Option<AgentStatus>)) -> R<DiscoverAgentsResult> {
    let (capability, status) = args;
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {AGENT_COLS}, {violations} FROM agent_sessions
                 WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR capabilities @> ARRAY[$2::text])
                 ORDER BY last_heartbeat DESC, agent_id COLLATE \"C\"",
                violations = crate::violations::BLOCKED_OF_SESSION
            ))
            .await?,
            &[&status.map(|s| s.as_str()), capability],
        )
        .await?;
    Ok(DiscoverAgentsResult {
        agents: rows
            .iter()
            .map(|r| {
                Ok(AgentInfo {
                    guardrail_violations: get(r, 12)?,
                    ..agent_from_row(r)?
                })
            })
            .collect::<R<_>>()?,
    })
}

pub async fn cleanup(tx: &Tx<'_>, now: Option<Timestamp>, who: &Identity, cleanup: &Cleanup) -> R<CleanupResult> {
    let sessions = cleanup.sessions.iter().map(|s| uuid(s)).collect::<R<Vec<Uuid>>>()?;
    if !cleanup.live_allowed
        && let Some(row) = tx
            .query_opt(
                &tx.prepare_cached(&format!(
                    "SELECT session_id::text, agent_id FROM agent_sessions
                     WHERE status <> 'disconnected' AND last_heartbeat >= {NOW} - make_interval(mins => $2)
                       AND agent_id <> $3 AND session_id = ANY($4)
                     ORDER BY session_id LIMIT 1"
                ))
                .await?,
                &[&now, &int(cleanup.stale_minutes), &who.agent_id, &sessions],
            )
            .await?
    {
        return Err(session_alive(&get::<String>(&row, 0)?, &get::<String>(&row, 1)?).into());
    }
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "UPDATE agent_sessions SET status = 'disconnected', ended_at = {NOW}
                 WHERE status <> 'disconnected'
                   AND (last_heartbeat < {NOW} - make_interval(mins => $2) OR session_id = ANY($3))
                 RETURNING agent_id"
            ))
            .await?,
            &[&now, &int(cleanup.stale_minutes), &sessions],
        )
        .await?;
    let mut agents: Vec<String> = rows.iter().map(|r| get(r, 0)).collect::<R<_>>()?;
    agents.sort();
    if agents.is_empty() {
        return Ok(CleanupResult::nothing_stale());
    }
    let released = tx
        .query(
            &tx.prepare_cached(&format!(
                "DELETE FROM file_locks WHERE agent_id = ANY($2) RETURNING expires_at > {NOW}"
            ))
            .await?,
            &[&now, &agents],
        )
        .await?;
    let locks_released = released
        .iter()
        .map(|r| get::<bool>(r, 0))
        .collect::<R<Vec<_>>>()?
        .into_iter()
        .filter(|live| *live)
        .count() as i64;
    let claims = tx
        .query(
            &tx.prepare_cached(
                "SELECT task_id, attempts, max_attempts FROM work_queue
                 WHERE status = 'claimed' AND claimed_by = ANY($1) FOR UPDATE",
            )
            .await?,
            &[&agents],
        )
        .await?;
    let (tasks_requeued, tasks_failed) = queue::settle(tx, now, &claims, "claimer stopped responding").await?;
    Ok(CleanupResult {
        success: true,
        agents_cleaned: agents.len() as i64,
        agents,
        locks_released,
        tasks_requeued,
        tasks_failed,
    })
}

pub async fn counts(tx: &Tx<'_>) -> R<Vec<(AgentStatus, i64)>> {
    let rows = tx
        .query(
            &tx.prepare_cached("SELECT status, count(*) FROM agent_sessions GROUP BY status")
                .await?,
            &[],
        )
        .await?;
    let mut out = Vec::new();
    for r in &rows {
        if let Some(s) = AgentStatus::parse(get(r, 0)?) {
            out.push((s, get(r, 1)?));
        }
    }
    Ok(out)
}

#[async_trait]
impl SessionStore for PgStore {
    async fn end_session(&self, ctx: OpCtx, end_session: EndSession) -> CoordResult<EndSessionResult> {
        self.op(ctx, end_session, |tx, ctx, a| Box::pin(end(tx, ctx, a))).await
    }

    async fn register_session(&self, ctx: OpCtx, session: NewSession) -> CoordResult<SessionResult> {
        self.op(ctx, session, |tx, ctx, a| Box::pin(register(tx, ctx, a))).await
    }

    /// Predicted (one round trip) when the pipeline decided on the caller's last facts,
    /// which name its session.
    async fn heartbeat(&self, ctx: OpCtx, new_session_id: String, lease_minutes: i64) -> CoordResult<SessionResult> {
        let known = ctx
            .policy
            .as_ref()
            .and_then(|p| p.facts.session.as_ref())
            .map(|s| s.0.clone());
        let args = (new_session_id, lease_minutes);
        let f: OpFn<(String, i64), SessionResult> = |tx, ctx, a| Box::pin(heartbeat(tx, ctx, a));
        match known {
            Some(session) => {
                let sent = predicted_heartbeat(&ctx, &session, lease_minutes);
                self.op_predicted(ctx, SessionResult::of(session), sent, args, f).await
            }
            None => self.op(ctx, args, f).await,
        }
    }

    async fn discover_agents(
        &self,
        ctx: OpCtx,
        capability: Option<String>,
        status: Option<AgentStatus>,
    ) -> CoordResult<DiscoverAgentsResult> {
        self.op(ctx, (capability, status), |tx, _, a| Box::pin(discover(tx, a)))
            .await
    }

    async fn cleanup_dead_agents(&self, ctx: OpCtx, which: Cleanup) -> CoordResult<CleanupResult> {
        self.op(ctx, which, |tx, ctx, a| Box::pin(cleanup(tx, ctx.now, &ctx.who, a)))
            .await
    }

    async fn set_session_status(&self, ctx: OpCtx, status: AgentStatus) -> CoordResult<SessionResult> {
        self.op(ctx, status, |tx, ctx, a| Box::pin(set_status(tx, ctx, *a)))
            .await
    }
}
