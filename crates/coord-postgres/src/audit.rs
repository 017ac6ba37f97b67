//! `audit_log` (append-only by trigger and grants) and the status summary.

use crate::Db;
use crate::PgStore;
use crate::chain::{self, CHAIN_LOCK_KEY};
use crate::rows::{NOW, get};
use crate::{R, Tx, handoffs, locks, queue, sessions};
use async_trait::async_trait;
use coord_domain::Timestamp;
use coord_domain::audit::{AuditEntry, AuditFilter, AuditOutcome, AuditQueryResult, AuditRecord, error_codes_sql};
use coord_domain::audit_chain::{
    ChainHead, ChainLink, ChainVerifier, Checkpoint, CheckpointBody, PruneAudit, PruneAuditResult, VERIFY_BATCH,
    VerifyAudit, VerifyAuditResult, same_key_as_last,
};
use coord_domain::handoffs::HandoffQuery;
use coord_domain::keys::KeyOrigin;
use coord_domain::status::{AgentCounts, StatusResult, TaskCounts};
use coord_domain::time::truncate_micros;
use coord_domain::{CoordError, CoordResult};
use coord_store::OpCtx;
use coord_store::{AuditStore, Maintenance};
use deadpool_postgres::Object;
use tokio_postgres::IsolationLevel;
use tokio_postgres::Row;
use tokio_postgres::types::Json;

const COLUMNS: &str = "id, \"timestamp\", agent_id, agent_type, operation, parameters, result, success, error_code,
     duration_ms, origin, chain_seq, prev_hash, row_hash";

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
        chain: match (get::<Option<i64>>(r, 11)?, get(r, 12)?, get(r, 13)?) {
            (Some(seq), Some(prev_hash), Some(hash)) => Some(ChainLink { seq, prev_hash, hash }),
            _ => None,
        },
    })
}

pub async fn query(tx: &Tx<'_>, f: &AuditFilter) -> R<AuditQueryResult> {
    // Oldest first when paging forward from an id (an export), else newest first.
    let order = if f.after_id.is_some() { "ASC" } else { "DESC" };
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {COLUMNS}
                 FROM audit_log
                 WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR operation = $2)
                   AND ($3::timestamptz IS NULL OR \"timestamp\" >= $3)
                   AND ($4::timestamptz IS NULL OR \"timestamp\" < $4)
                   AND ($5::boolean IS NULL OR success = $5)
                   AND ($7::text IS NULL OR ($7 = 'allowed' AND success)
                        OR ($7 = 'refused' AND NOT success AND coalesce(error_code, '') NOT IN ({errors}))
                        OR ($7 = 'error' AND NOT success AND error_code IN ({errors})))
                   AND ($8::boolean IS NULL OR coalesce(result -> 'elevated' = 'true'::jsonb, false) = $8)
                   AND ($9::bigint IS NULL OR id > $9)
                   AND ($10::text IS NULL OR parameters ->> 'path' = $10 OR parameters ->> 'file_path' = $10)
                   AND ($11::text IS NULL OR agent_type <> $11)
                 ORDER BY id {order} LIMIT $6",
                errors = error_codes_sql()
            ))
            .await?,
            &[
                &f.agent_id,
                &f.operation,
                &f.since,
                &f.until,
                &f.success,
                &f.limit,
                &f.outcome.map(AuditOutcome::as_str),
                &f.elevated,
                &f.after_id,
                &f.path,
                &f.exclude_agent_type,
            ],
        )
        .await?;
    Ok(AuditQueryResult {
        entries: rows.iter().map(entry_from_row).collect::<R<_>>()?,
    })
}

fn checkpoint_from_row(r: &Row) -> R<Checkpoint> {
    Ok(Checkpoint {
        id: get(r, 0)?,
        body: CheckpointBody {
            created_at: get(r, 1)?,
            through_seq: get(r, 2)?,
            through_hash: get(r, 3)?,
            cutoff: get(r, 4)?,
            pruned_rows: get(r, 5)?,
            key_id: get(r, 6)?,
        },
        signature: get(r, 7)?,
    })
}

/// Reads the chain in order of position from one snapshot (REPEATABLE READ, read
/// only, so a concurrent prune cannot make rows vanish halfway) through the verifier.
pub async fn verify(client: &mut Object, check: &VerifyAudit) -> R<VerifyAuditResult> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let checkpoints = tx
        .query(
            "SELECT id, created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, signature
             FROM audit_checkpoints",
            &[],
        )
        .await?
        .iter()
        .map(checkpoint_from_row)
        .collect::<R<Vec<_>>>()?;
    let mut verifier = ChainVerifier::new(check.key.clone(), checkpoints, check.expect_head.clone());
    // Keyset pages on (position, id): a repeated position is read twice, not skipped.
    let (mut seq, mut id) = (i64::MIN, i64::MIN);
    let page = tx
        .prepare(&format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE chain_seq IS NOT NULL AND (chain_seq, id) > ($1, $2)
             ORDER BY chain_seq, id LIMIT $3"
        ))
        .await?;
    while verifier.ok() {
        let batch = tx
            .query(&page, &[&seq, &id, &VERIFY_BATCH])
            .await?
            .iter()
            .map(entry_from_row)
            .collect::<R<Vec<_>>>()?;
        let Some(last) = batch.last() else { break };
        (seq, id) = (last.chain.as_ref().map_or(seq, |l| l.seq), last.id);
        batch.iter().for_each(|e| verifier.feed(e));
    }
    let row = tx
        .query_one(
            "SELECT (SELECT count(*) FROM audit_log WHERE chain_seq IS NULL),
                    (SELECT min(id) FROM audit_log WHERE chain_seq IS NULL
                       AND id > (SELECT min(id) FROM audit_log WHERE chain_seq IS NOT NULL))",
            &[],
        )
        .await?;
    let (unchained, late): (i64, Option<i64>) = (get(&row, 0)?, get(&row, 1)?);
    tx.commit().await?;
    Ok(verifier.finish(unchained, late))
}

/// Writes the signed checkpoint for the chain's prefix older than the cutoff (which lets
/// the delete trigger allow removing it, and unchained rows older than the cutoff). The
/// chain lock keeps writers from appending while the prefix is measured; the rows
/// themselves are deleted afterwards by [`delete_pruned`], outside that lock.
pub async fn prune(tx: &Tx<'_>, ctx: &OpCtx, p: &PruneAudit) -> R<PruneAuditResult> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CHAIN_LOCK_KEY])
        .await?;
    let now = truncate_micros(get::<Timestamp>(
        &tx.query_one(&format!("SELECT {NOW}"), &[&ctx.now]).await?,
        0,
    )?);
    let cutoff = now - chrono::Duration::days(p.older_than_days);
    let last_key: Option<String> = match tx
        .query_opt(
            "SELECT key_id FROM audit_checkpoints ORDER BY through_seq DESC LIMIT 1",
            &[],
        )
        .await?
    {
        Some(r) => Some(get(&r, 0)?),
        None => None,
    };
    same_key_as_last(last_key.as_deref(), &p.key)?;
    let prior = tx
        .query_opt(
            "SELECT through_seq, through_hash FROM audit_checkpoints ORDER BY through_seq DESC LIMIT 1",
            &[],
        )
        .await?
        .map(|r| -> R<ChainHead> {
            Ok(ChainHead {
                seq: get(&r, 0)?,
                hash: get(&r, 1)?,
            })
        })
        .transpose()?
        .unwrap_or_else(ChainHead::genesis);
    let prior_seq = prior.seq;
    // The prefix ends before the oldest position still inside retention.
    let through = tx
        .query_opt(
            "SELECT chain_seq, row_hash FROM audit_log
             WHERE chain_seq = coalesce(
                 (SELECT min(chain_seq) FROM audit_log WHERE chain_seq IS NOT NULL AND \"timestamp\" >= $1) - 1,
                 (SELECT max(chain_seq) FROM audit_log))",
            &[&cutoff],
        )
        .await?;
    let through = match through {
        Some(r) if get::<i64>(&r, 0)? > prior.seq => ChainHead {
            seq: get(&r, 0)?,
            hash: get(&r, 1)?,
        },
        _ => prior,
    };
    let pruned_rows: i64 = get(
        &tx.query_one(
            "SELECT count(*) FROM audit_log
             WHERE (chain_seq IS NOT NULL AND chain_seq <= $1) OR (chain_seq IS NULL AND \"timestamp\" < $2)",
            &[&through.seq, &cutoff],
        )
        .await?,
        0,
    )?;
    let mut result = PruneAuditResult {
        success: true,
        dry_run: p.dry_run,
        cutoff,
        pruned_rows,
        checkpoint: None,
    };
    if p.dry_run || pruned_rows == 0 {
        return Ok(result);
    }
    if through.seq == prior_seq {
        // Nothing new in the chain: the rows counted are what earlier checkpoints already
        // cover (a deletion that failed, or one still under way), unless unchained rows
        // newer than the last checkpoint's cutoff need one. No second checkpoint for the
        // same position: the rows are deleted after the commit all the same.
        let uncovered: i64 = get(
            &tx.query_one(
                "SELECT count(*) FROM audit_log WHERE chain_seq IS NULL AND \"timestamp\" < $1
                   AND \"timestamp\" >= coalesce((SELECT max(cutoff) FROM audit_checkpoints), '-infinity')",
                &[&cutoff],
            )
            .await?,
            0,
        )?;
        if uncovered == 0 {
            return Ok(result);
        }
    }
    let body = CheckpointBody {
        created_at: now,
        through_seq: through.seq,
        through_hash: through.hash,
        cutoff,
        pruned_rows,
        key_id: p.key.id(),
    };
    let signature = p.key.sign(&body);
    let id: i64 = get(
        &tx.query_one(
            "INSERT INTO audit_checkpoints (created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, signature)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            &[&now, &body.through_seq, &body.through_hash, &cutoff, &pruned_rows, &body.key_id, &signature],
        )
        .await?,
        0,
    )?;
    result.checkpoint = Some(Checkpoint { id, body, signature });
    Ok(result)
}

/// Deletes what the committed checkpoints cover: one statement (a reader's snapshot sees
/// the whole prefix or none of it) in a transaction of its own, without the chain lock,
/// so audited writes go on while a large prefix is removed. The rows deleted are
/// immutable and no writer reads them. If it fails, the checkpoints stand and the next
/// prune deletes them.
async fn delete_pruned(client: &Object) -> R<u64> {
    Ok(client
        .execute(
            "DELETE FROM audit_log
             WHERE (chain_seq IS NOT NULL AND chain_seq <= (SELECT max(through_seq) FROM audit_checkpoints))
                OR (chain_seq IS NULL AND \"timestamp\" < (SELECT max(cutoff) FROM audit_checkpoints))",
            &[],
        )
        .await?)
}

/// Live locks, tasks by status and agents by status: what `status` and `get_stats` share.
pub async fn fleet_counts(tx: &Tx<'_>, ctx: &OpCtx) -> R<(i64, TaskCounts, AgentCounts)> {
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
    Ok((live_locks, tasks, agents))
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
pub async fn status(tx: &Tx<'_>, ctx: &OpCtx, location: &String) -> R<StatusResult> {
    let (live_locks, tasks, agents) = fleet_counts(tx, ctx).await?;
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
        async {
            // The chain lock is held to commit: the row needs a transaction of its own.
            chain::insert_and_commit(Tx::new(&client), now, &record, &self.durability, None).await
        }
        .await
        .map_err(|e: crate::Fail| CoordError::from(e))
    }

    async fn verify_audit(&self, ctx: OpCtx, check: VerifyAudit) -> CoordResult<VerifyAuditResult> {
        let mut client = self.client().await?;
        let result = verify(&mut client, &check).await.map_err(CoordError::from)?;
        drop(client);
        self.op(ctx, result, |_, _, r| Box::pin(async move { Ok(r.clone()) }))
            .await
    }

    async fn prune_audit(&self, ctx: OpCtx, p: PruneAudit) -> CoordResult<PruneAuditResult> {
        let result = self.op(ctx, p, |tx, ctx, p| Box::pin(prune(tx, ctx, p))).await?;
        if !result.dry_run && result.pruned_rows > 0 {
            let client = self.client().await?;
            delete_pruned(&client).await.map_err(|e| {
                let e = CoordError::from(e);
                CoordError::unavailable(format!(
                    "the checkpoint is written, but deleting the rows it covers failed ({}): prune again to \
                     delete them",
                    e.message
                ))
            })?;
        }
        Ok(result)
    }
}
