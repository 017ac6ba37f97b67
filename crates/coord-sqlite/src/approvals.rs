//! `approval_queue`: enqueued by refused operations, decided by people, spent by the
//! request it grants (see `coord_domain::approvals`).

use crate::rows::{json, minutes_to_micros, opt_ts, to_json, ts};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::approvals::{
    self, Approval, ApprovalFilter, ApprovalResult, ApprovalStatus, ListApprovalsResult, NewDecision,
};
use coord_domain::guardrails::CheckGuardrailsResult;
use coord_domain::guardrails::Violation;
use coord_domain::notifications::NewNotification;
use coord_domain::time::from_micros;
use coord_domain::{CoordError, CoordResult};
use coord_store::{ApprovalRequest, ApprovalStore, Escalation, OpCtx};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

const COLS: &str = "approval_id, agent_id, agent_type, operation, params_hash, parameters, error, reason, status,
    requested_at, expires_at, decided_by, decided_at, note, used_at";

fn from_row(r: &Row, now: i64) -> rusqlite::Result<Approval> {
    let status: String = r.get(8)?;
    let status = ApprovalStatus::parse(&status)
        .ok_or_else(|| rusqlite::Error::FromSqlConversionFailure(8, Type::Text, format!("status {status}").into()))?;
    let expires_at = ts(r, 10)?;
    Ok(Approval {
        approval_id: r.get(0)?,
        agent_id: r.get(1)?,
        agent_type: r.get(2)?,
        operation: r.get(3)?,
        params_hash: r.get(4)?,
        parameters: json(r, 5)?,
        error: r.get(6)?,
        reason: r.get(7)?,
        status: approvals::effective_status(status, expires_at, from_micros(now)),
        requested_at: ts(r, 9)?,
        expires_at,
        decided_by: r.get(11)?,
        decided_at: opt_ts(r, 12)?,
        note: r.get(13)?,
        used_at: opt_ts(r, 14)?,
    })
}

fn get(c: &Connection, now: i64, id: &str) -> R<Approval> {
    c.prepare_cached(&format!("SELECT {COLS} FROM approval_queue WHERE approval_id = ?1"))?
        .query_row([id], |r| from_row(r, now))
        .optional()?
        .ok_or_else(|| approvals::approval_not_found(id).into())
}

/// The id of the pending request for the same agent, operation and parameters, or of a
/// new one: an agent retrying a refused request waits on one item, not a growing pile.
pub fn enqueue(c: &Connection, now: i64, req: &ApprovalRequest) -> R<String> {
    let pending: Option<String> = c
        .prepare_cached(
            "SELECT approval_id FROM approval_queue
              WHERE agent_id = ?1 AND operation = ?2 AND params_hash = ?3 AND status = 'pending' AND expires_at > ?4
              ORDER BY requested_at LIMIT 1",
        )?
        .query_row(params![req.agent.agent_id, req.operation, req.params_hash, now], |r| {
            r.get(0)
        })
        .optional()?;
    if let Some(id) = pending {
        return Ok(id);
    }
    let id = approvals::new_approval_id();
    c.prepare_cached(
        "INSERT INTO approval_queue (approval_id, agent_id, agent_type, operation, params_hash, parameters, error,
                                     reason, status, requested_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?10)",
    )?
    .execute(params![
        id,
        req.agent.agent_id,
        req.agent.agent_type,
        req.operation,
        req.params_hash,
        to_json(&req.parameters),
        req.error,
        req.reason,
        now,
        now + minutes_to_micros(req.pending_minutes)
    ])?;
    Ok(id)
}

/// Spends the caller's live approval of exactly this request, if there is one; answers
/// its id. The single writer makes the check and the spend one step.
pub fn spend(c: &Connection, now: i64, ctx: &OpCtx) -> R<Option<String>> {
    spend_for(c, now, &ctx.who.agent_id, ctx.operation, ctx.escalation.as_ref())
}

fn spend_for(c: &Connection, now: i64, agent_id: &str, operation: &str, esc: Option<&Escalation>) -> R<Option<String>> {
    let Some(esc) = esc else {
        return Ok(None);
    };
    Ok(c.prepare_cached(
        "UPDATE approval_queue SET status = 'used', used_at = ?5
          WHERE approval_id = (SELECT approval_id FROM approval_queue
                                WHERE agent_id = ?1 AND operation = ?2 AND params_hash = ?3
                                  AND status = 'approved' AND expires_at > ?4
                                ORDER BY decided_at LIMIT 1)
         RETURNING approval_id",
    )?
    .query_row(params![agent_id, operation, esc.params_hash, now, now], |r| r.get(0))
    .optional()?)
}

fn list(c: &Connection, now: i64, f: &ApprovalFilter) -> R<ListApprovalsResult> {
    let approvals = c
        .prepare_cached(&format!(
            "SELECT {COLS} FROM approval_queue
              WHERE (?1 IS NULL OR agent_id = ?1)
                AND (?2 IS NULL OR (CASE WHEN status IN ('pending', 'approved') AND expires_at <= ?3
                                         THEN 'expired' ELSE status END) = ?2)
              ORDER BY requested_at DESC, approval_id LIMIT ?4"
        ))?
        .query_map(
            params![f.requested_by, f.status.map(ApprovalStatus::as_str), now, f.limit],
            |r| from_row(r, now),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ListApprovalsResult {
        success: true,
        approvals,
    })
}

fn decide(c: &Connection, now: i64, ctx_who: &coord_domain::Identity, d: &NewDecision) -> R<ApprovalResult> {
    let item = get(c, now, &d.approval_id)?;
    let decided = approvals::decide(&item, ctx_who, d, from_micros(now))?;
    c.prepare_cached(
        "UPDATE approval_queue SET status = ?2, expires_at = ?3, decided_by = ?4, decided_at = ?5, note = ?6
          WHERE approval_id = ?1",
    )?
    .execute(params![
        d.approval_id,
        decided.status.as_str(),
        coord_domain::time::to_micros(decided.expires_at),
        ctx_who.agent_id,
        now,
        d.note
    ])?;
    Ok(ApprovalResult {
        success: true,
        approval: get(c, now, &d.approval_id)?,
    })
}

#[async_trait]
impl ApprovalStore for SqliteStore {
    async fn list_approvals(&self, ctx: OpCtx, filter: ApprovalFilter) -> CoordResult<ListApprovalsResult> {
        self.op(ctx, move |c, now, _| list(c, now, &filter)).await
    }

    async fn get_approval(&self, ctx: OpCtx, approval_id: String) -> CoordResult<ApprovalResult> {
        self.op(ctx, move |c, now, _| {
            Ok(ApprovalResult {
                success: true,
                approval: get(c, now, &approval_id)?,
            })
        })
        .await
    }

    async fn decide_approval(&self, ctx: OpCtx, decision: NewDecision) -> CoordResult<ApprovalResult> {
        self.op(ctx, move |c, now, who| decide(c, now, who, &decision)).await
    }

    async fn guard_decision(
        &self,
        ctx: OpCtx,
        result: CheckGuardrailsResult,
        refusal: Option<CoordError>,
    ) -> CoordResult<CheckGuardrailsResult> {
        let me = ctx.clone();
        self.op(ctx, move |c, now, who| {
            let passed = match refusal {
                None => result,
                Some(refusal) => match spend_for(c, now, &who.agent_id, me.operation, me.escalation.as_ref())? {
                    Some(id) => result.approved_by(id),
                    None => return Err(refusal.into()),
                },
            };
            if let Some(v) = Violation::of_pass(&passed, &me.parameters, me.redact) {
                crate::violations::insert(c, now, &me, &v)?;
            }
            // An elevated pass is reported on the security channel, in this transaction.
            if let Some(n) = NewNotification::elevated(&me.who, me.operation, &passed) {
                crate::notifications::insert(c, now, &me.who, &n)?;
            }
            Ok(passed)
        })
        .await
    }
}
