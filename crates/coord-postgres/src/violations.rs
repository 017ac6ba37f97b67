//! `guardrail_violations`: written by the operation wrapper (a guardrail refusal) and by
//! `guard_decision` (a pass by approval or elevation); counted per agent.

use crate::Db;
use crate::R;
use crate::rows::{NOW, get};
use coord_domain::guardrails::Violation;
use coord_store::OpCtx;

pub async fn insert<C: Db>(c: &C, ctx: &OpCtx, v: &Violation) -> R<()> {
    c.execute(
        &c.prepare_cached(&format!(
            "INSERT INTO guardrail_violations (\"timestamp\", agent_id, agent_type, source, operation, category,
                 pattern_matched, context, blocked, elevated, approval_id)
             VALUES ({NOW}, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .await?,
        &[
            &ctx.now,
            &ctx.who.agent_id,
            &ctx.who.agent_type,
            &ctx.operation,
            &v.operation,
            &v.category,
            &v.pattern_matched,
            &v.context,
            &v.blocked,
            &v.elevated,
            &v.approval_id,
        ],
    )
    .await?;
    Ok(())
}

/// The agent's violation counter: its blocked attempts.
pub async fn blocked_count<C: Db>(c: &C, agent_id: &str) -> R<i64> {
    get(
        &c.query_one(
            &c.prepare_cached("SELECT count(*) FROM guardrail_violations WHERE agent_id = $1 AND blocked")
                .await?,
            &[&agent_id],
        )
        .await?,
        0,
    )
}

/// SQL of the counter of the row's `agent_sessions.agent_id`, for listings.
pub const BLOCKED_OF_SESSION: &str =
    "(SELECT count(*) FROM guardrail_violations v WHERE v.agent_id = agent_sessions.agent_id AND v.blocked)";
