//! `audit_log` (append-only by trigger) and the status summary.

use crate::rows::{to_json, ts};
use crate::{R, handoffs, locks, queue, sessions};
use crate::{SqliteStore, now_micros};
use async_trait::async_trait;
use coord_domain::Identity;
use coord_domain::audit::{AuditEntry, AuditFilter, AuditQueryResult, AuditRecord};
use coord_domain::handoffs::HandoffQuery;
use coord_domain::status::{AgentCounts, StatusResult, TaskCounts};
use coord_domain::time::to_micros;
use coord_domain::{CoordResult, Timestamp};
use coord_store::{AuditStore, Maintenance, OpCtx};
use rusqlite::{Connection, Row, params};

pub fn insert(c: &Connection, now: i64, rec: &AuditRecord) -> R<()> {
    c.prepare_cached(
        "INSERT INTO audit_log (timestamp, agent_id, agent_type, operation, parameters, result, success,
             error_code, duration_ms, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        now,
        rec.agent.agent_id,
        rec.agent.agent_type,
        rec.operation,
        to_json(&rec.parameters),
        to_json(&rec.result),
        rec.success,
        rec.error_code,
        rec.duration_ms,
        rec.origin.as_ref().map(to_json)
    ])?;
    Ok(())
}

fn entry_from_row(r: &Row) -> rusqlite::Result<AuditEntry> {
    let json = |idx: usize| -> rusqlite::Result<serde_json::Value> {
        let t: String = r.get(idx)?;
        Ok(serde_json::from_str(&t).unwrap_or(serde_json::Value::String(t)))
    };
    Ok(AuditEntry {
        id: r.get(0)?,
        timestamp: ts(r, 1)?,
        agent_id: r.get(2)?,
        agent_type: r.get(3)?,
        operation: r.get(4)?,
        parameters: json(5)?,
        result: json(6)?,
        success: r.get(7)?,
        error_code: r.get(8)?,
        duration_ms: r.get(9)?,
        origin: match r.get::<_, Option<String>>(10)? {
            Some(t) => serde_json::from_str(&t).ok(),
            None => None,
        },
    })
}

pub fn query(c: &Connection, f: &AuditFilter) -> R<AuditQueryResult> {
    let entries = c
        .prepare_cached(
            "SELECT id, timestamp, agent_id, agent_type, operation, parameters, result, success, error_code,
                 duration_ms, origin
             FROM audit_log
             WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR operation = ?2)
               AND (?3 IS NULL OR timestamp >= ?3) AND (?4 IS NULL OR timestamp < ?4)
               AND (?5 IS NULL OR success = ?5)
             ORDER BY id DESC LIMIT ?6",
        )?
        .query_map(
            params![
                f.agent_id,
                f.operation,
                f.since.map(to_micros),
                f.until.map(to_micros),
                f.success,
                f.limit
            ],
            entry_from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(AuditQueryResult { entries })
}

pub fn status(c: &Connection, now: i64, who: &Identity, location: String) -> R<StatusResult> {
    let live_locks: i64 = c
        .prepare_cached("SELECT count(*) FROM file_locks WHERE expires_at > ?1")?
        .query_row([now], |r| r.get(0))?;
    let mut tasks = TaskCounts::default();
    let rows = c
        .prepare_cached("SELECT status, count(*), sum(pending_deps > 0) FROM work_queue GROUP BY status")?
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (status, n, waiting) in rows {
        tasks.add(&status, n, waiting);
    }
    let mut agents = AgentCounts::default();
    for (status, n) in sessions::counts(c)? {
        agents.add(status, n);
    }
    let latest = handoffs::read(
        c,
        &HandoffQuery {
            agent_name: None,
            limit: 1,
        },
    )?;
    Ok(StatusResult {
        success: true,
        backend: "sqlite".into(),
        database: location,
        identity: who.clone(),
        live_locks,
        my_locks: locks::live_locks_of(c, now, &who.agent_id)?,
        tasks,
        my_tasks: queue::claimed_by(c, &who.agent_id)?,
        agents,
        latest_handoff: latest.handoffs.into_iter().next(),
    })
}

#[async_trait]
impl AuditStore for SqliteStore {
    async fn query_audit(&self, ctx: OpCtx, filter: AuditFilter) -> CoordResult<AuditQueryResult> {
        self.op(ctx, move |c, _, _| query(c, &filter)).await
    }

    async fn status(&self, ctx: OpCtx) -> CoordResult<StatusResult> {
        let location = self.location();
        self.op(ctx, move |c, now, who| status(c, now, who, location)).await
    }

    async fn append_audit(&self, now: Option<Timestamp>, record: AuditRecord) -> CoordResult<()> {
        self.with_tx(move |tx| insert(tx, now_micros(now), &record)).await
    }
}
