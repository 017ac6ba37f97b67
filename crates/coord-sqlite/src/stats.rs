//! `get_stats`: the fleet's figures, counted in the operation's one transaction.

use crate::{R, SqliteStore, audit};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::stats::{
    CLAIM_TO_COMPLETE_BOUNDS, CategoryCount, FeedbackCounts, Histogram, StatsResult, VerificationCounts,
};
use coord_domain::time::from_micros;
use coord_store::{OpCtx, StatsStore};
use rusqlite::Connection;

fn read(c: &Connection, now: i64) -> R<StatsResult> {
    let (locks_held, tasks, agents) = audit::fleet_counts(c, now)?;
    let approvals_pending: i64 = c
        .prepare_cached("SELECT count(*) FROM approval_queue WHERE status = 'pending' AND expires_at > ?1")?
        .query_row([now], |r| r.get(0))?;
    let spawned_running: i64 = c
        .prepare_cached("SELECT count(*) FROM spawned_agents WHERE status IN ('starting', 'running')")?
        .query_row([], |r| r.get(0))?;
    // Timestamps are microseconds; a claim re-taken keeps only its last claimed_at.
    let claim_to_complete = c
        .prepare_cached(&format!(
            "SELECT count(*), coalesce(sum(d), 0.0), {} FROM
               (SELECT (completed_at - claimed_at) / 1000000.0 AS d FROM work_queue
                WHERE status = 'completed' AND claimed_at IS NOT NULL AND completed_at IS NOT NULL)",
            coord_store::sql::bucket_columns("d")
        ))?
        .query_row([], |r| {
            let at_most = (0..CLAIM_TO_COMPLETE_BOUNDS.len())
                .map(|i| r.get::<_, i64>(i + 2))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Histogram::of(&CLAIM_TO_COMPLETE_BOUNDS, r.get(0)?, r.get(1)?, &at_most))
        })?;
    let guardrail_blocks = c
        .prepare_cached(
            "SELECT category, count(*) FROM guardrail_violations WHERE blocked
             GROUP BY category ORDER BY count(*) DESC, category",
        )?
        .query_map([], |r| {
            Ok(CategoryCount {
                category: r.get(0)?,
                count: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let memory_feedback = c
        .prepare_cached(
            "SELECT count(*) FILTER (WHERE useful), count(*) FILTER (WHERE NOT useful) FROM memory_feedback",
        )?
        .query_row([], |r| {
            Ok(FeedbackCounts {
                useful: r.get(0)?,
                not_useful: r.get(1)?,
            })
        })?;
    let verification = c
        .prepare_cached(&coord_store::sql::verification_sql(
            "CASE WHEN finished_at IS NOT NULL THEN (finished_at - created_at) / 1000000.0 END",
        ))?
        .query_row([], |r| {
            let at_most = (0..CLAIM_TO_COMPLETE_BOUNDS.len())
                .map(|i| r.get::<_, i64>(i + 6))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(VerificationCounts {
                passed: r.get(0)?,
                failed: r.get(1)?,
                timed_out: r.get(2)?,
                error: r.get(3)?,
                time_to_verify: Histogram::of(&CLAIM_TO_COMPLETE_BOUNDS, r.get(4)?, r.get(5)?, &at_most),
            })
        })?;
    Ok(StatsResult {
        success: true,
        backend: "sqlite".into(),
        at: from_micros(now),
        agents,
        locks_held,
        tasks,
        approvals_pending,
        spawned_running,
        claim_to_complete,
        guardrail_blocks,
        memory_feedback,
        verification,
    })
}

#[async_trait]
impl StatsStore for SqliteStore {
    async fn stats(&self, ctx: OpCtx) -> CoordResult<StatsResult> {
        self.op(ctx, move |c, now, _| read(c, now)).await
    }
}
