//! `guardrail_violations`: written by the operation wrapper (a guardrail refusal) and by
//! `guard_decision` (a pass by approval or elevation); counted per agent.

use crate::R;
use crate::rows::to_json;
use coord_domain::guardrails::Violation;
use coord_store::OpCtx;
use rusqlite::{Connection, params};

pub fn insert(c: &Connection, now: i64, ctx: &OpCtx, v: &Violation) -> R<()> {
    c.prepare_cached(
        "INSERT INTO guardrail_violations (timestamp, agent_id, agent_type, source, operation, category,
             pattern_matched, context, blocked, elevated, approval_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        now,
        ctx.who.agent_id,
        ctx.who.agent_type,
        ctx.operation,
        v.operation,
        v.category,
        v.pattern_matched,
        to_json(&v.context),
        v.blocked,
        v.elevated,
        v.approval_id
    ])?;
    Ok(())
}

/// The agent's violation counter: its blocked attempts.
pub fn blocked_count(c: &Connection, agent_id: &str) -> R<i64> {
    Ok(
        c.prepare_cached("SELECT count(*) FROM guardrail_violations WHERE agent_id = ?1 AND blocked")?
            .query_row([agent_id], |r| r.get(0))?,
    )
}

/// SQL of the counter of the row's `agent_sessions.agent_id`, for listings.
pub const BLOCKED_OF_SESSION: &str =
    "(SELECT count(*) FROM guardrail_violations v WHERE v.agent_id = agent_sessions.agent_id AND v.blocked)";
