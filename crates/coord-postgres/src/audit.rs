//! `audit_log` (append-only by trigger and grants) and the status summary.

use crate::PgStore;
use crate::rows::{NOW, get};
use crate::{R, Tx, handoffs, locks, queue, sessions};
use async_trait::async_trait;
use coord_domain::Timestamp;
use coord_domain::audit::{AuditEntry, AuditFilter, AuditQueryResult, AuditRecord};
use coord_domain::handoffs::HandoffQuery;
use coord_domain::keys::KeyOrigin;
use coord_domain::status::{AgentCounts, StatusResult, TaskCounts};
use coord_domain::{CoordError, CoordResult};
use coord_store::OpCtx;
use coord_store::{AuditStore, Maintenance};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::Json;

pub async fn insert<C: GenericClient>(c: &C, now: Option<Timestamp>, rec: &AuditRecord) -> R<()> {
    c.execute(
        &c.prepare_cached(&format!(
            "INSERT INTO audit_log (\"timestamp\", agent_id, agent_type, operation, parameters, result, success,
                 error_code, duration_ms, origin)
             VALUES ({NOW}, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .await?,
        &[
            &now,
            &rec.agent.agent_id,
            &rec.agent.agent_type,
            &rec.operation,
            &rec.parameters,
            &rec.result,
            &rec.success,
            &rec.error_code,
            &rec.duration_ms,
            &rec.origin.as_ref().map(Json),
        ],
    )
    .await?;
    Ok(())
}

fn entry_from_row(r: &Row) -> R<AuditEntry> {
    Ok(AuditEntry {
        id: get(r, 0)?,
        timestamp: get(r, 1)?,
        agent_id: get(r, 2)?,
        agent_type: get(r, 3)?,
        operation: get(r, 4)?,
        parameters: get(r, 5)?,
        result: get(r, 6)?,
        success: get(r, 7)?,
        error_code: get(r, 8)?,
        duration_ms: get(r, 9)?,
        origin: get::<Option<Json<KeyOrigin>>>(r, 10)?.map(|j| j.0),
    })
}

pub async fn query(tx: &Tx<'_>, f: &AuditFilter) -> R<AuditQueryResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(
                "SELECT id, \"timestamp\", agent_id, agent_type, operation, parameters, result, success, error_code,
                     duration_ms, origin
                 FROM audit_log
                 WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR operation = $2)
                   AND ($3::timestamptz IS NULL OR \"timestamp\" >= $3)
                   AND ($4::timestamptz IS NULL OR \"timestamp\" < $4)
                   AND ($5::boolean IS NULL OR success = $5)
                 ORDER BY id DESC LIMIT $6",
            )
            .await?,
            &[&f.agent_id, &f.operation, &f.since, &f.until, &f.success, &f.limit],
        )
        .await?;
    Ok(AuditQueryResult {
        entries: rows.iter().map(entry_from_row).collect::<R<_>>()?,
    })
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
pub async fn status(tx: &Tx<'_>, ctx: &OpCtx, location: &String) -> R<StatusResult> {
    let live_locks: i64 = get(
        &tx.query_one(
            &tx.prepare_cached(&format!("SELECT count(*) FROM file_locks WHERE expires_at > {NOW}"))
                .await?,
            &[&ctx.now],
        )
        .await?,
        0,
    )?;
    let mut tasks = TaskCounts::default();
    let rows = tx
        .query(
            &tx.prepare_cached(
                "SELECT status, count(*), count(*) FILTER (WHERE pending_deps > 0) FROM work_queue GROUP BY status",
            )
            .await?,
            &[],
        )
        .await?;
    for r in &rows {
        tasks.add(get(r, 0)?, get(r, 1)?, get(r, 2)?);
    }
    let mut agents = AgentCounts::default();
    for (status, n) in sessions::counts(tx).await? {
        agents.add(status, n);
    }
    let latest = handoffs::read(
        tx,
        &HandoffQuery {
            agent_name: None,
            limit: 1,
        },
    )
    .await?;
    Ok(StatusResult {
        success: true,
        backend: "postgres".into(),
        database: location.clone(),
        identity: ctx.who.clone(),
        live_locks,
        my_locks: locks::live_locks_of(tx, ctx.now, &ctx.who.agent_id).await?,
        tasks,
        my_tasks: queue::claimed_by(tx, &ctx.who.agent_id).await?,
        agents,
        latest_handoff: latest.handoffs.into_iter().next(),
    })
}

#[async_trait]
impl AuditStore for PgStore {
    async fn query_audit(&self, ctx: OpCtx, filter: AuditFilter) -> CoordResult<AuditQueryResult> {
        self.op(ctx, filter, |tx, _, a| Box::pin(query(tx, a))).await
    }

    async fn status(&self, ctx: OpCtx) -> CoordResult<StatusResult> {
        let location = self.location();
        self.op(ctx, location, |tx, ctx, a| Box::pin(status(tx, ctx, a))).await
    }

    async fn append_audit(&self, now: Option<Timestamp>, record: AuditRecord) -> CoordResult<()> {
        let client = self.client().await?;
        insert(&client, now, &record).await.map_err(CoordError::from)
    }
}
