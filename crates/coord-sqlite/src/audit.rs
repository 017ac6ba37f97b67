//! `audit_log` (append-only by trigger) and the status summary.

use crate::rows::{to_json, ts};
use crate::{R, handoffs, locks, queue, sessions};
use crate::{SqliteStore, now_micros};
use async_trait::async_trait;
use coord_domain::Identity;
use coord_domain::audit::{AuditEntry, AuditFilter, AuditOutcome, AuditQueryResult, AuditRecord, error_codes_sql};
use coord_domain::audit_chain::{
    ChainHead, ChainLink, ChainVerifier, Checkpoint, CheckpointBody, PruneAudit, PruneAuditResult, VERIFY_BATCH,
    VerifyAudit, VerifyAuditResult, same_key_as_last,
};
use coord_domain::handoffs::HandoffQuery;
use coord_domain::status::{AgentCounts, StatusResult, TaskCounts};
use coord_domain::time::{from_micros, to_micros};
use coord_domain::{CoordResult, Timestamp};
use coord_store::{AuditStore, Maintenance, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// Appends `rec` to the chain. Writes are serialised (one writer per database file:
/// `BEGIN IMMEDIATE` across processes, the writer thread within one), so the head read
/// here is the head the row follows.
pub fn insert(c: &Connection, now: i64, rec: &AuditRecord) -> R<()> {
    let (head, next_id) = chain_head(c)?;
    let link = head.next(rec, from_micros(now));
    // The id: after the newest row's, and never below what the last prune recorded (no
    // AUTOINCREMENT: migration 0021), so a prune that removed every row reuses none.
    c.prepare_cached(
        "INSERT INTO audit_log (id, timestamp, agent_id, agent_type, operation, parameters, result, success,
             error_code, duration_ms, origin, chain_seq, prev_hash, row_hash)
         VALUES (max(coalesce((SELECT max(id) FROM audit_log), 0) + 1, ?14),
                 ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
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
        rec.origin.as_ref().map(to_json),
        link.seq,
        link.prev_hash,
        link.hash,
        next_id
    ])?;
    Ok(())
}

/// The newest position: the last chained row, or the last checkpoint when a prune
/// removed every row, or the genesis; and the lowest id the next row may take (0 when no
/// prune recorded one).
///
/// Two index seeks compared here, not one statement: the `UNION ALL … ORDER BY` form made
/// SQLite build and drop a temporary b-tree on every insert, whose page cache freed back
/// to the system cost a TLB shoot-down per audit row (the history of docs/benchmarks.md).
fn chain_head(c: &Connection) -> R<(ChainHead, i64)> {
    let head = |sql: &str| -> R<Option<(ChainHead, i64)>> {
        Ok(c.prepare_cached(sql)?
            .query_row([], |r| {
                Ok((
                    ChainHead {
                        seq: r.get(0)?,
                        hash: r.get(1)?,
                    },
                    r.get(2)?,
                ))
            })
            .optional()?)
    };
    let row = head(
        // Rows are chained in id order (no index on the position: migration 0021).
        "SELECT chain_seq, row_hash, 0 FROM audit_log WHERE chain_seq IS NOT NULL ORDER BY id DESC LIMIT 1",
    )?;
    let checkpoint = head(
        "SELECT through_seq, through_hash, coalesce(next_id, 0) FROM audit_checkpoints
         ORDER BY through_seq DESC LIMIT 1",
    )?;
    let next_id = checkpoint.as_ref().map_or(0, |(_, id)| *id);
    let (row, checkpoint) = (row.map(|(h, _)| h), checkpoint.map(|(h, _)| h));
    Ok((head_of(row, checkpoint), next_id))
}

fn head_of(row: Option<ChainHead>, checkpoint: Option<ChainHead>) -> ChainHead {
    match (row, checkpoint) {
        (Some(r), Some(c)) => {
            if r.seq >= c.seq {
                r
            } else {
                c
            }
        }
        (Some(h), None) | (None, Some(h)) => h,
        (None, None) => ChainHead::genesis(),
    }
}

const COLUMNS: &str = "id, timestamp, agent_id, agent_type, operation, parameters, result, success, error_code,
     duration_ms, origin, chain_seq, prev_hash, row_hash";

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
        chain: match (r.get::<_, Option<i64>>(11)?, r.get(12)?, r.get(13)?) {
            (Some(seq), Some(prev_hash), Some(hash)) => Some(ChainLink { seq, prev_hash, hash }),
            _ => None,
        },
    })
}

pub fn query(c: &Connection, f: &AuditFilter) -> R<AuditQueryResult> {
    // Oldest first when paging forward from an id (an export), else newest first.
    let order = if f.after_id.is_some() { "ASC" } else { "DESC" };
    let entries = c
        .prepare_cached(&format!(
            "SELECT {COLUMNS}
             FROM audit_log
             WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR operation = ?2)
               AND (?3 IS NULL OR timestamp >= ?3) AND (?4 IS NULL OR timestamp < ?4)
               AND (?5 IS NULL OR success = ?5)
               AND (?7 IS NULL OR (?7 = 'allowed' AND success = 1)
                    OR (?7 = 'refused' AND success = 0 AND coalesce(error_code, '') NOT IN ({errors}))
                    OR (?7 = 'error' AND success = 0 AND error_code IN ({errors})))
               AND (?8 IS NULL OR coalesce(json_extract(result, '$.elevated') = 1, 0) = ?8)
               AND (?9 IS NULL OR id > ?9)
               AND (?10 IS NULL OR json_extract(parameters, '$.path') = ?10
                    OR json_extract(parameters, '$.file_path') = ?10)
               AND (?11 IS NULL OR agent_type <> ?11)
             ORDER BY id {order} LIMIT ?6",
            errors = error_codes_sql()
        ))?
        .query_map(
            params![
                f.agent_id,
                f.operation,
                f.since.map(to_micros),
                f.until.map(to_micros),
                f.success,
                f.limit,
                f.outcome.map(AuditOutcome::as_str),
                f.elevated,
                f.after_id,
                f.path,
                f.exclude_agent_type
            ],
            entry_from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(AuditQueryResult { entries })
}

fn checkpoint_from_row(r: &Row) -> rusqlite::Result<Checkpoint> {
    Ok(Checkpoint {
        id: r.get(0)?,
        body: CheckpointBody {
            created_at: ts(r, 1)?,
            through_seq: r.get(2)?,
            through_hash: r.get(3)?,
            cutoff: ts(r, 4)?,
            pruned_rows: r.get(5)?,
            key_id: r.get(6)?,
        },
        signature: r.get(7)?,
    })
}

/// Reads the chain in order of position, from one snapshot, through `verifier`.
pub fn verify(c: &Connection, check: &VerifyAudit) -> R<VerifyAuditResult> {
    let tx = c.unchecked_transaction()?;
    let checkpoints = tx
        .prepare_cached(
            "SELECT id, created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, signature
             FROM audit_checkpoints",
        )?
        .query_map([], checkpoint_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut verifier = ChainVerifier::new(check.key.clone(), checkpoints, check.expect_head.clone());
    // The positions in order, with no index on them in the table (migration 0021): a
    // temporary table of (position, id), filled from this snapshot. Rows are written in
    // position order, but a tampered table need not be, and the verifier reads by
    // position to name what was done (a row moved, not a row missing).
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS verify_order (seq INTEGER NOT NULL, id INTEGER NOT NULL,
             PRIMARY KEY (seq, id)) WITHOUT ROWID;
         DELETE FROM temp.verify_order;
         INSERT INTO temp.verify_order SELECT chain_seq, id FROM main.audit_log WHERE chain_seq IS NOT NULL;",
    )?;
    // Keyset pages on (position, id): a repeated position is read twice, not skipped.
    let (mut seq, mut id) = (i64::MIN, i64::MIN);
    while verifier.ok() {
        let batch = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, o.seq FROM temp.verify_order o JOIN main.audit_log a USING (id)
                 WHERE (o.seq, o.id) > (?1, ?2)
                 ORDER BY o.seq, o.id LIMIT ?3"
            ))?
            .query_map(params![seq, id, VERIFY_BATCH], |r| Ok((entry_from_row(r)?, r.get(14)?)))?
            .collect::<rusqlite::Result<Vec<(AuditEntry, i64)>>>()?;
        let Some((last, at)) = batch.last() else { break };
        (seq, id) = (*at, last.id);
        batch.iter().for_each(|(e, _)| verifier.feed(e));
    }
    tx.execute_batch("DELETE FROM temp.verify_order")?;
    let (unchained, late): (i64, Option<i64>) = tx.query_row(
        "SELECT (SELECT count(*) FROM audit_log WHERE chain_seq IS NULL),
                (SELECT min(id) FROM audit_log WHERE chain_seq IS NULL
                   AND id > (SELECT min(id) FROM audit_log WHERE chain_seq IS NOT NULL))",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    tx.finish()?;
    Ok(verifier.finish(unchained, late))
}

/// Removes the chain's prefix older than the cutoff (and unchained rows older than it),
/// after writing the signed checkpoint that lets the delete trigger allow it.
pub fn prune(c: &Connection, now: i64, p: &PruneAudit) -> R<PruneAuditResult> {
    let cutoff = now - p.older_than_days * 86_400_000_000;
    let last_key: Option<String> = c
        .prepare_cached("SELECT key_id FROM audit_checkpoints ORDER BY through_seq DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    same_key_as_last(last_key.as_deref(), &p.key)?;
    let prior = c
        .prepare_cached("SELECT through_seq, through_hash FROM audit_checkpoints ORDER BY through_seq DESC LIMIT 1")?
        .query_row([], |r| {
            Ok(ChainHead {
                seq: r.get(0)?,
                hash: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_else(ChainHead::genesis);
    // The prefix ends before the oldest position still inside retention: the chained row
    // before it in id order, the order rows are chained in (migration 0021).
    let through: Option<(i64, String, i64)> = c
        .prepare_cached(
            "SELECT chain_seq, row_hash, id FROM audit_log
             WHERE chain_seq IS NOT NULL AND id < coalesce(
                 (SELECT min(id) FROM audit_log WHERE chain_seq IS NOT NULL AND timestamp >= ?1),
                 9223372036854775807)
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row([cutoff], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    // The prefix as an id range too, so that counting and deleting it read that range
    // (a row of a tampered table whose position and id disagree stays, for verify).
    let (through, through_id) = match through {
        Some((seq, hash, id)) if seq > prior.seq => (ChainHead { seq, hash }, id),
        _ => (prior, 0),
    };
    let pruned_rows: i64 = c
        .prepare_cached(
            "SELECT count(*) FROM audit_log
             WHERE (chain_seq IS NOT NULL AND chain_seq <= ?1 AND id <= ?3) OR (chain_seq IS NULL AND timestamp < ?2)",
        )?
        .query_row(params![through.seq, cutoff, through_id], |r| r.get(0))?;
    let mut result = PruneAuditResult {
        success: true,
        dry_run: p.dry_run,
        cutoff: from_micros(cutoff),
        pruned_rows,
        checkpoint: None,
    };
    if p.dry_run || pruned_rows == 0 {
        return Ok(result);
    }
    let body = CheckpointBody {
        created_at: from_micros(now),
        through_seq: through.seq,
        through_hash: through.hash,
        cutoff: from_micros(cutoff),
        pruned_rows,
        key_id: p.key.id(),
    };
    let signature = p.key.sign(&body);
    c.prepare_cached(
        "INSERT INTO audit_checkpoints (created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, signature,
             next_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
                 max(coalesce((SELECT max(id) FROM audit_log), 0) + 1,
                     coalesce((SELECT max(next_id) FROM audit_checkpoints), 0)))",
    )?
    .execute(params![
        now,
        body.through_seq,
        body.through_hash,
        cutoff,
        pruned_rows,
        body.key_id,
        signature
    ])?;
    let id = c.last_insert_rowid();
    c.prepare_cached(
        "DELETE FROM audit_log
         WHERE (chain_seq IS NOT NULL AND chain_seq <= ?1 AND id <= ?3) OR (chain_seq IS NULL AND timestamp < ?2)",
    )?
    .execute(params![body.through_seq, cutoff, through_id])?;
    result.checkpoint = Some(Checkpoint { id, body, signature });
    Ok(result)
}

/// Live locks, tasks by status and agents by status: what `status` and `get_stats` share.
pub fn fleet_counts(c: &Connection, now: i64) -> R<(i64, TaskCounts, AgentCounts)> {
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
    Ok((live_locks, tasks, agents))
}

pub fn status(c: &Connection, now: i64, who: &Identity, location: String) -> R<StatusResult> {
    let (live_locks, tasks, agents) = fleet_counts(c, now)?;
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

    async fn verify_audit(&self, ctx: OpCtx, check: VerifyAudit) -> CoordResult<VerifyAuditResult> {
        let result = self.read_apart(move |c| verify(c, &check)).await?;
        self.op(ctx, move |_, _, _| Ok(result)).await
    }

    async fn prune_audit(&self, ctx: OpCtx, p: PruneAudit) -> CoordResult<PruneAuditResult> {
        self.op_long(ctx, move |c, now, _| prune(c, now, &p)).await
    }
}
