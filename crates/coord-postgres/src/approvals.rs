//! `approval_queue`: enqueued by refused operations, decided by people, spent by the
//! request it grants (see `coord_domain::approvals`).

use crate::rows::{NOW, get, int};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::approvals::{
    self, Approval, ApprovalFilter, ApprovalResult, ApprovalStatus, ListApprovalsResult, NewDecision,
};
use coord_domain::guardrails::CheckGuardrailsResult;
use coord_domain::guardrails::Violation;
use coord_domain::notifications::NewNotification;
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_store::{ApprovalRequest, ApprovalStore, OpCtx};
use tokio_postgres::Row;

const COLS: &str = "approval_id, agent_id, agent_type, operation, params_hash, parameters, error, reason, status,
    requested_at, expires_at, decided_by, decided_at, note, used_at";

/// A row of `COLS` followed by the statement's `now`.
fn from_row(r: &Row) -> R<Approval> {
    let status: String = get(r, 8)?;
    let status = ApprovalStatus::parse(&status).ok_or_else(|| {
        tracing::error!(status, "approval_queue holds an unknown status");
        CoordError::internal()
    })?;
    let expires_at: Timestamp = get(r, 10)?;
    let now: Timestamp = get(r, 15)?;
    Ok(Approval {
        approval_id: get(r, 0)?,
        agent_id: get(r, 1)?,
        agent_type: get(r, 2)?,
        operation: get(r, 3)?,
        params_hash: get(r, 4)?,
        parameters: get(r, 5)?,
        error: get(r, 6)?,
        reason: get(r, 7)?,
        status: approvals::effective_status(status, expires_at, now),
        requested_at: get(r, 9)?,
        expires_at,
        decided_by: get(r, 11)?,
        decided_at: get(r, 12)?,
        note: get(r, 13)?,
        used_at: get(r, 14)?,
    })
}

async fn fetch(tx: &Tx<'_>, ctx: &OpCtx, id: &str, lock: bool) -> R<Approval> {
    let sql = format!(
        "SELECT {COLS}, {NOW} FROM approval_queue WHERE approval_id = $2{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = tx.query_opt(&tx.prepare_cached(&sql).await?, &[&ctx.now, &id]).await?;
    from_row(&row.ok_or_else(|| approvals::approval_not_found(id))?)
}

/// The id of the pending request for the same agent, operation and parameters, or of a
/// new one; concurrent refusals of one request are serialised so they share one item.
pub async fn enqueue(tx: &Tx<'_>, ctx: &OpCtx, req: &ApprovalRequest) -> R<String> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('approval:' || $1 || ':' || $2 || ':' || $3, 0))",
        &[&req.agent.agent_id, &req.operation, &req.params_hash],
    )
    .await?;
    let pending = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "SELECT approval_id FROM approval_queue
                  WHERE agent_id = $2 AND operation = $3 AND params_hash = $4 AND status = 'pending'
                    AND expires_at > {NOW}
                  ORDER BY requested_at LIMIT 1"
            ))
            .await?,
            &[&ctx.now, &req.agent.agent_id, &req.operation, &req.params_hash],
        )
        .await?;
    if let Some(r) = pending {
        return get(&r, 0);
    }
    let id = approvals::new_approval_id();
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO approval_queue (approval_id, agent_id, agent_type, operation, params_hash, parameters, error,
                                         reason, status, requested_at, expires_at)
             VALUES ($2, $3, $4, $5, $6, $7, $8, $9, 'pending', {NOW}, {NOW} + make_interval(mins => $10))"
        ))
        .await?,
        &[
            &ctx.now,
            &id,
            &req.agent.agent_id,
            &req.agent.agent_type,
            &req.operation,
            &req.params_hash,
            &req.parameters,
            &req.error,
            &req.reason,
            &int(req.pending_minutes),
        ],
    )
    .await?;
    Ok(id)
}

/// Spends the caller's live approval of exactly this request, if there is one; answers
/// its id. A grant another transaction is spending is skipped, so it is spent once.
pub async fn spend(tx: &Tx<'_>, ctx: &OpCtx) -> R<Option<String>> {
    let Some(esc) = &ctx.escalation else {
        return Ok(None);
    };
    let row = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "UPDATE approval_queue SET status = 'used', used_at = {NOW}
                  WHERE approval_id = (SELECT approval_id FROM approval_queue
                                        WHERE agent_id = $2 AND operation = $3 AND params_hash = $4
                                          AND status = 'approved' AND expires_at > {NOW}
                                        ORDER BY decided_at LIMIT 1 FOR UPDATE SKIP LOCKED)
                    AND status = 'approved'
                 RETURNING approval_id"
            ))
            .await?,
            &[&ctx.now, &ctx.who.agent_id, &ctx.operation, &esc.params_hash],
        )
        .await?;
    row.map(|r| get(&r, 0)).transpose()
}

async fn list(tx: &Tx<'_>, ctx: &OpCtx, f: &ApprovalFilter) -> R<ListApprovalsResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {COLS}, {NOW} FROM approval_queue
                  WHERE ($2::text IS NULL OR agent_id = $2)
                    AND ($3::text IS NULL OR (CASE WHEN status IN ('pending', 'approved') AND expires_at <= {NOW}
                                                   THEN 'expired' ELSE status END) = $3)
                  ORDER BY requested_at DESC, approval_id COLLATE \"C\" LIMIT $4"
            ))
            .await?,
            &[
                &ctx.now,
                &f.requested_by,
                &f.status.map(ApprovalStatus::as_str),
                &f.limit,
            ],
        )
        .await?;
    Ok(ListApprovalsResult {
        success: true,
        approvals: rows.iter().map(from_row).collect::<R<_>>()?,
    })
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
async fn get_one(tx: &Tx<'_>, ctx: &OpCtx, id: &String) -> R<ApprovalResult> {
    Ok(ApprovalResult {
        success: true,
        approval: fetch(tx, ctx, id, false).await?,
    })
}

async fn decide(tx: &Tx<'_>, ctx: &OpCtx, d: &NewDecision) -> R<ApprovalResult> {
    let item = fetch(tx, ctx, &d.approval_id, true).await?;
    let now: Timestamp = get(&tx.query_one(&format!("SELECT {NOW}"), &[&ctx.now]).await?, 0)?;
    let decided = approvals::decide(&item, &ctx.who, d, now)?;
    tx.execute(
        "UPDATE approval_queue SET status = $2, expires_at = $3, decided_by = $4, decided_at = $5, note = $6
          WHERE approval_id = $1",
        &[
            &d.approval_id,
            &decided.status.as_str(),
            &decided.expires_at,
            &ctx.who.agent_id,
            &now,
            &d.note,
        ],
    )
    .await?;
    get_one(tx, ctx, &d.approval_id).await
}

/// A guardrail check: see [`ApprovalStore::guard_decision`].
async fn guard(
    tx: &Tx<'_>,
    ctx: &OpCtx,
    (result, refusal): &(CheckGuardrailsResult, Option<CoordError>),
) -> R<CheckGuardrailsResult> {
    let passed = match refusal {
        None => result.clone(),
        Some(refusal) => match spend(tx, ctx).await? {
            Some(id) => result.clone().approved_by(id),
            None => return Err(refusal.clone().into()),
        },
    };
    let (violation, notice) = pass_writes(ctx, &passed);
    if let Some(v) = violation {
        crate::violations::insert(tx, ctx, &v).await?;
    }
    if let Some(n) = notice {
        crate::notifications::insert(tx, ctx.now, &ctx.who, &n).await?;
    }
    Ok(passed)
}

/// What a pass writes besides its audit row: its violation row, and an elevated pass's
/// report on the security channel (in the same transaction).
fn pass_writes(ctx: &OpCtx, passed: &CheckGuardrailsResult) -> (Option<Violation>, Option<NewNotification>) {
    (
        Violation::of_pass(passed, &ctx.parameters, ctx.redact),
        NewNotification::elevated(&ctx.who, ctx.operation, passed),
    )
}

#[async_trait]
impl ApprovalStore for PgStore {
    async fn list_approvals(&self, ctx: OpCtx, filter: ApprovalFilter) -> CoordResult<ListApprovalsResult> {
        self.op(ctx, filter, |tx, ctx, f| Box::pin(list(tx, ctx, f))).await
    }

    async fn get_approval(&self, ctx: OpCtx, approval_id: String) -> CoordResult<ApprovalResult> {
        self.op(ctx, approval_id, |tx, ctx, id| Box::pin(get_one(tx, ctx, id)))
            .await
    }

    async fn decide_approval(&self, ctx: OpCtx, decision: NewDecision) -> CoordResult<ApprovalResult> {
        self.op(ctx, decision, |tx, ctx, d| Box::pin(decide(tx, ctx, d))).await
    }

    async fn guard_decision(
        &self,
        ctx: OpCtx,
        result: CheckGuardrailsResult,
        refusal: Option<CoordError>,
    ) -> CoordResult<CheckGuardrailsResult> {
        // A pass that writes nothing but its audit row: one round trip, on the caller's
        // last facts when the pipeline decided on them.
        let writes = pass_writes(&ctx, &result) != (None, None);
        let f: crate::OpFn<_, _> = |tx, ctx, a| Box::pin(guard(tx, ctx, a));
        match refusal {
            None if !writes => self.op_predicted(ctx, result.clone(), vec![], (result, None), f).await,
            refusal => self.op(ctx, (result, refusal), f).await,
        }
    }
}
