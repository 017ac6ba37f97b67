//! `get_stats`: the fleet's figures, counted in the operation's one transaction.

use crate::rows::{NOW, get};
use crate::{PgStore, R, Tx, audit};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::stats::{
    CLAIM_TO_COMPLETE_BOUNDS, CategoryCount, FeedbackCounts, Histogram, StatsResult, VerificationCounts,
};
use coord_store::{OpCtx, StatsStore};

async fn read(tx: &Tx<'_>, ctx: &OpCtx) -> R<StatsResult> {
    let (locks_held, tasks, agents) = audit::fleet_counts(tx, ctx).await?;
    let row = tx
        .query_one(
            &tx.prepare_cached(&format!(
                "SELECT {NOW},
                        (SELECT count(*) FROM approval_queue WHERE status = 'pending' AND expires_at > {NOW}),
                        (SELECT count(*) FROM spawned_agents WHERE status IN ('starting', 'running')),
                        (SELECT count(*) FROM memory_feedback WHERE useful),
                        (SELECT count(*) FROM memory_feedback WHERE NOT useful)"
            ))
            .await?,
            &[&ctx.now],
        )
        .await?;
    // A claim re-taken keeps only its last claimed_at.
    let h = tx
        .query_one(
            &tx.prepare_cached(&format!(
                "SELECT count(*), coalesce(sum(d), 0)::float8, {} FROM
                   (SELECT extract(epoch FROM completed_at - claimed_at)::float8 AS d FROM work_queue
                    WHERE status = 'completed' AND claimed_at IS NOT NULL AND completed_at IS NOT NULL) t",
                coord_store::sql::bucket_columns("d")
            ))
            .await?,
            &[],
        )
        .await?;
    let at_most = (0..CLAIM_TO_COMPLETE_BOUNDS.len())
        .map(|i| get::<i64>(&h, i + 2))
        .collect::<R<Vec<_>>>()?;
    let guardrail_blocks = tx
        .query(
            &tx.prepare_cached(
                "SELECT category, count(*) FROM guardrail_violations WHERE blocked
                 GROUP BY category ORDER BY count(*) DESC, category",
            )
            .await?,
            &[],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(CategoryCount {
                category: get(r, 0)?,
                count: get(r, 1)?,
            })
        })
        .collect::<R<Vec<_>>>()?;
    let v = tx
        .query_one(
            &tx.prepare_cached(&coord_store::sql::verification_sql(
                "extract(epoch FROM finished_at - created_at)::float8",
            ))
            .await?,
            &[],
        )
        .await?;
    let v_at_most = (0..CLAIM_TO_COMPLETE_BOUNDS.len())
        .map(|i| get::<i64>(&v, i + 6))
        .collect::<R<Vec<_>>>()?;
    let verification = VerificationCounts {
        passed: get(&v, 0)?,
        failed: get(&v, 1)?,
        timed_out: get(&v, 2)?,
        error: get(&v, 3)?,
        time_to_verify: Histogram::of(&CLAIM_TO_COMPLETE_BOUNDS, get(&v, 4)?, get(&v, 5)?, &v_at_most),
    };
    Ok(StatsResult {
        success: true,
        backend: "postgres".into(),
        at: get(&row, 0)?,
        agents,
        locks_held,
        tasks,
        approvals_pending: get(&row, 1)?,
        spawned_running: get(&row, 2)?,
        claim_to_complete: Histogram::of(&CLAIM_TO_COMPLETE_BOUNDS, get(&h, 0)?, get(&h, 1)?, &at_most),
        guardrail_blocks,
        memory_feedback: FeedbackCounts {
            useful: get(&row, 3)?,
            not_useful: get(&row, 4)?,
        },
        verification,
    })
}

#[async_trait]
impl StatsStore for PgStore {
    async fn stats(&self, ctx: OpCtx) -> CoordResult<StatsResult> {
        self.op(ctx, (), |tx, ctx, _| Box::pin(read(tx, ctx))).await
    }
}
