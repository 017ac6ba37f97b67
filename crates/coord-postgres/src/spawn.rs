//! `spawned_agents`: the records of agents coord spawned.

use crate::rows::{NOW, get, int, uuid};
use crate::{Fail, PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::agents::spawn::{self, SpawnAgentResult, SpawnUpdate, SpawnedAgent};
use coord_domain::profiles::{self, Assignee, Profile};
use coord_domain::queue::TaskStatus;
use coord_domain::{CoordError, CoordResult, ErrorCode, Timestamp};
use coord_store::{NewSpawn, OpCtx, SpawnStore};
use tokio_postgres::types::Json;

async fn find(c: &Tx<'_>, agent_id: &str, for_update: bool) -> R<Option<SpawnedAgent>> {
    let sql = if for_update {
        "SELECT record FROM spawned_agents WHERE agent_id = $1 FOR UPDATE"
    } else {
        "SELECT record FROM spawned_agents WHERE agent_id = $1"
    };
    let row = c.query_opt(&c.prepare_cached(sql).await?, &[&agent_id]).await?;
    row.map(|r| get::<Json<SpawnedAgent>>(&r, 0).map(|j| j.0)).transpose()
}

/// A row of `record, task status`.
fn with_task_status(r: &tokio_postgres::Row) -> R<(SpawnedAgent, Option<TaskStatus>)> {
    let status: Option<String> = get(r, 1)?;
    Ok((
        get::<Json<SpawnedAgent>>(r, 0)?.0,
        status.as_deref().and_then(TaskStatus::parse),
    ))
}

async fn now(tx: &Tx<'_>, ctx: &OpCtx) -> R<Timestamp> {
    let row = tx.query_one(&format!("SELECT {NOW}"), &[&ctx.now]).await?;
    get(&row, 0)
}

async fn register(tx: &Tx<'_>, ctx: &OpCtx, s: &NewSpawn) -> R<SpawnAgentResult> {
    // Spawns take turns: the running count and the insert must not interleave.
    tx.batch_execute("LOCK TABLE spawned_agents IN SHARE ROW EXCLUSIVE MODE")
        .await?;
    let child_name = s.record.definition.profile.coord_profile();
    let child = crate::profiles::profile(tx, child_name)
        .await?
        .ok_or_else(|| profiles::profile_not_found(child_name))?;
    let parent = find(tx, &ctx.who.agent_id, false).await?;
    let running: i64 = get(
        &tx.query_one(
            &format!(
                "SELECT count(*) FROM spawned_agents WHERE status IN ('starting', 'running') AND expires_at > {NOW}"
            ),
            &[&ctx.now],
        )
        .await?,
        0,
    )?;
    let (record, lease_minutes) = s.admitted(&child, parent.as_ref(), running, now(tx, ctx).await?)?;
    crate::queue::submit(tx, ctx, &s.task).await?;
    let claimed = tx
        .execute(
            &tx.prepare_cached(&format!(
                "UPDATE work_queue SET status = 'claimed', claimed_by = $3, claimed_by_type = $4, claimed_at = {NOW},
                     claimed_until = {NOW} + make_interval(mins => $5), attempts = 1
                 WHERE task_id = $2 AND status = 'pending'"
            ))
            .await?,
            &[
                &ctx.now,
                &uuid(&s.task.task_id)?,
                &record.agent_id,
                &spawn::AGENT_TYPE,
                &int(lease_minutes),
            ],
        )
        .await?;
    if claimed != 1 {
        return Err(CoordError::new(ErrorCode::Internal, "the spawn's task could not be claimed").into());
    }
    crate::profiles::assign(
        tx,
        ctx,
        &(Assignee::Agent(record.agent_id.clone()), Some(child_name.to_string())),
    )
    .await?;
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO spawned_agents (agent_id, parent_agent_id, status, task_id, created_at, updated_at,
                 expires_at, record)
             VALUES ($1, $2, $3, $4, $5, $5, $6, $7)",
        )
        .await?,
        &[
            &record.agent_id,
            &record.parent_agent_id,
            &record.status.as_str(),
            &record.task_id,
            &record.created_at,
            &record.expires_at(),
            &Json(&record),
        ],
    )
    .await?;
    Ok(s.answer(&record))
}

async fn update(tx: &Tx<'_>, ctx: &OpCtx, (agent_id, u): &(String, SpawnUpdate)) -> R<SpawnedAgent> {
    let current = find(tx, agent_id, true)
        .await?
        .ok_or_else(|| spawn::not_spawned(agent_id))?;
    let at = now(tx, ctx).await?;
    let next = current.apply(u, at)?;
    tx.execute(
        &tx.prepare_cached("UPDATE spawned_agents SET status = $2, updated_at = $3, record = $4 WHERE agent_id = $1")
            .await?,
        &[agent_id, &next.status.as_str(), &at, &Json(&next)],
    )
    .await?;
    Ok(next)
}

#[async_trait]
impl SpawnStore for PgStore {
    async fn spawn_agent(&self, ctx: OpCtx, spawn: NewSpawn) -> CoordResult<SpawnAgentResult> {
        self.op(ctx, spawn, |tx, ctx, s| Box::pin(register(tx, ctx, s))).await
    }

    async fn spawned_agent(&self, agent_id: &str) -> CoordResult<Option<(SpawnedAgent, Option<TaskStatus>)>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &client
                    .prepare_cached(
                        "SELECT s.record, w.status FROM spawned_agents s
                         LEFT JOIN work_queue w ON w.task_id = s.task_id::uuid WHERE s.agent_id = $1",
                    )
                    .await
                    .map_err(Fail::from)?,
                &[&agent_id],
            )
            .await
            .map_err(Fail::from)?;
        Ok(row.as_ref().map(with_task_status).transpose()?)
    }

    async fn spawned_agents(
        &self,
        parent: Option<String>,
        active_only: bool,
        limit: i64,
    ) -> CoordResult<Vec<(SpawnedAgent, Option<TaskStatus>)>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT s.record, w.status FROM spawned_agents s
                 LEFT JOIN work_queue w ON w.task_id = s.task_id::uuid
                 WHERE ($1::text IS NULL OR s.parent_agent_id = $1)
                   AND (NOT $2 OR s.status IN ('starting', 'running'))
                 ORDER BY s.created_at DESC, s.agent_id LIMIT $3",
                &[&parent, &active_only, &limit],
            )
            .await
            .map_err(Fail::from)?;
        Ok(rows.iter().map(with_task_status).collect::<R<Vec<_>>>()?)
    }

    async fn profile_named(&self, name: &str) -> CoordResult<Option<Profile>> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT definition FROM agent_profiles WHERE name = $1", &[&name])
            .await
            .map_err(Fail::from)?;
        Ok(row.map(|r| get::<Json<Profile>>(&r, 0).map(|j| j.0)).transpose()?)
    }

    async fn update_spawned_agent(&self, ctx: OpCtx, agent_id: String, u: SpawnUpdate) -> CoordResult<SpawnedAgent> {
        self.op(ctx, (agent_id, u), |tx, ctx, a| Box::pin(update(tx, ctx, a)))
            .await
    }
}
