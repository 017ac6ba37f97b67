//! `spawned_agents`: the records of agents coord spawned.

use crate::rows::{json, to_json};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::agents::spawn::{self, SpawnAgentResult, SpawnUpdate, SpawnedAgent};
use coord_domain::profiles::{self, Assignee, Profile};
use coord_domain::queue::TaskStatus;
use coord_domain::time::from_micros;
use coord_domain::{CoordError, CoordResult, ErrorCode, Identity};
use coord_store::{NewSpawn, OpCtx, SpawnStore};
use rusqlite::{Connection, OptionalExtension, params};

fn find(c: &Connection, agent_id: &str) -> R<Option<SpawnedAgent>> {
    Ok(
        c.prepare_cached("SELECT record FROM spawned_agents WHERE agent_id = ?1")?
            .query_row([agent_id], |r| json(r, 0))
            .optional()?,
    )
}

fn register(c: &Connection, now: i64, who: &Identity, s: NewSpawn) -> R<SpawnAgentResult> {
    let child_name = s.record.definition.profile.coord_profile();
    let child = crate::profiles::profile(c, child_name)?.ok_or_else(|| profiles::profile_not_found(child_name))?;
    let parent = find(c, &who.agent_id)?;
    let running: i64 = c
        .prepare_cached(
            "SELECT count(*) FROM spawned_agents WHERE status IN ('starting', 'running') AND expires_at > ?1",
        )?
        .query_row([now], |r| r.get(0))?;
    let (record, lease_minutes) = s.admitted(&child, parent.as_ref(), running, from_micros(now))?;
    crate::queue::submit(c, now, who, &s.task)?;
    let claimed = c
        .prepare_cached(
            "UPDATE work_queue SET status = 'claimed', claimed_by = ?2, claimed_by_type = ?3, claimed_at = ?4,
                 claimed_until = ?5, attempts = 1
             WHERE task_id = ?1 AND status = 'pending'",
        )?
        .execute(params![
            s.task.task_id,
            record.agent_id,
            spawn::AGENT_TYPE,
            now,
            now + crate::rows::minutes_to_micros(lease_minutes)
        ])?;
    if claimed != 1 {
        return Err(CoordError::new(ErrorCode::Internal, "the spawn's task could not be claimed").into());
    }
    crate::profiles::assign(
        c,
        now,
        who,
        &Assignee::Agent(record.agent_id.clone()),
        Some(child_name.to_string()),
    )?;
    c.prepare_cached(
        "INSERT INTO spawned_agents (agent_id, parent_agent_id, status, task_id, created_at, updated_at,
             expires_at, record)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)",
    )?
    .execute(params![
        record.agent_id,
        record.parent_agent_id,
        record.status.as_str(),
        record.task_id,
        now,
        coord_domain::time::to_micros(record.expires_at()),
        to_json(&record)
    ])?;
    Ok(s.answer(&record))
}

fn update(c: &Connection, now: i64, agent_id: &str, u: &SpawnUpdate) -> R<SpawnedAgent> {
    let current = find(c, agent_id)?.ok_or_else(|| spawn::not_spawned(agent_id))?;
    let next = current.apply(u, from_micros(now))?;
    c.prepare_cached("UPDATE spawned_agents SET status = ?2, updated_at = ?3, record = ?4 WHERE agent_id = ?1")?
        .execute(params![agent_id, next.status.as_str(), now, to_json(&next)])?;
    Ok(next)
}

#[async_trait]
impl SpawnStore for SqliteStore {
    async fn spawn_agent(&self, ctx: OpCtx, spawn: NewSpawn) -> CoordResult<SpawnAgentResult> {
        self.op(ctx, move |c, now, who| register(c, now, who, spawn)).await
    }

    async fn spawned_agent(&self, agent_id: &str) -> CoordResult<Option<(SpawnedAgent, Option<TaskStatus>)>> {
        let id = agent_id.to_string();
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT s.record, w.status FROM spawned_agents s
                 LEFT JOIN work_queue w ON w.task_id = s.task_id WHERE s.agent_id = ?1",
            )?
            .query_row([&id], |r| {
                Ok((
                    json(r, 0)?,
                    r.get::<_, Option<String>>(1)?.as_deref().and_then(TaskStatus::parse),
                ))
            })
            .optional()?)
        })
        .await
    }

    async fn spawned_agents(
        &self,
        parent: Option<String>,
        active_only: bool,
        limit: i64,
    ) -> CoordResult<Vec<(SpawnedAgent, Option<TaskStatus>)>> {
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT s.record, w.status FROM spawned_agents s
                 LEFT JOIN work_queue w ON w.task_id = s.task_id
                 WHERE (?1 IS NULL OR s.parent_agent_id = ?1)
                   AND (NOT ?2 OR s.status IN ('starting', 'running'))
                 ORDER BY s.created_at DESC, s.agent_id LIMIT ?3",
            )?
            .query_map(params![parent, active_only, limit], |r| {
                Ok((
                    json(r, 0)?,
                    r.get::<_, Option<String>>(1)?.as_deref().and_then(TaskStatus::parse),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    async fn profile_named(&self, name: &str) -> CoordResult<Option<Profile>> {
        let name = name.to_string();
        self.read(move |c| crate::profiles::profile(c, &name)).await
    }

    async fn update_spawned_agent(&self, ctx: OpCtx, agent_id: String, u: SpawnUpdate) -> CoordResult<SpawnedAgent> {
        self.op(ctx, move |c, now, _| update(c, now, &agent_id, &u)).await
    }
}
