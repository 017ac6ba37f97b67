//! `handoff_documents`.

use crate::PgStore;
use crate::rows::{NOW, get, id_text, uuid};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::handoffs::{Handoff, HandoffQuery, NewHandoff, ReadHandoffResult, WriteHandoffResult};
use coord_store::HandoffStore;
use coord_store::OpCtx;
use tokio_postgres::Row;
use uuid::Uuid;

const HANDOFF_COLS: &str = "id, agent_name, agent_type, session_id, summary, completed_work, in_progress, decisions,
    next_steps, relevant_files, created_at";

fn handoff_from_row(r: &Row) -> R<Handoff> {
    Ok(Handoff {
        id: id_text(get(r, 0)?),
        agent_name: get(r, 1)?,
        agent_type: get(r, 2)?,
        session_id: get::<Option<Uuid>>(r, 3)?.map(id_text),
        summary: get(r, 4)?,
        completed_work: get(r, 5)?,
        in_progress: get(r, 6)?,
        decisions: get(r, 7)?,
        next_steps: get(r, 8)?,
        relevant_files: get(r, 9)?,
        created_at: get(r, 10)?,
    })
}

pub async fn write(tx: &Tx<'_>, ctx: &OpCtx, h: &NewHandoff) -> R<WriteHandoffResult> {
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO handoff_documents (id, agent_name, agent_type, session_id, summary, completed_work,
                 in_progress, decisions, next_steps, relevant_files, created_at)
             VALUES ($2, $3, $4, (SELECT session_id FROM agent_sessions WHERE agent_id = $3), $5, $6, $7, $8, $9,
                     $10, {NOW})"
        ))
        .await?,
        &[
            &ctx.now,
            &uuid(&h.handoff_id)?,
            &ctx.who.agent_id,
            &ctx.who.agent_type,
            &h.summary,
            &h.completed_work,
            &h.in_progress,
            &h.decisions,
            &h.next_steps,
            &h.relevant_files,
        ],
    )
    .await?;
    Ok(WriteHandoffResult {
        success: true,
        handoff_id: h.handoff_id.clone(),
    })
}

pub async fn read(tx: &Tx<'_>, q: &HandoffQuery) -> R<ReadHandoffResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {HANDOFF_COLS} FROM handoff_documents WHERE ($1::text IS NULL OR agent_name = $1)
                 ORDER BY created_at DESC, seq DESC LIMIT $2"
            ))
            .await?,
            &[&q.agent_name, &q.limit],
        )
        .await?;
    Ok(ReadHandoffResult {
        handoffs: rows.iter().map(handoff_from_row).collect::<R<_>>()?,
    })
}

#[async_trait]
impl HandoffStore for PgStore {
    async fn write_handoff(&self, ctx: OpCtx, handoff: NewHandoff) -> CoordResult<WriteHandoffResult> {
        self.op(ctx, handoff, |tx, ctx, a| Box::pin(write(tx, ctx, a))).await
    }

    async fn read_handoff(&self, ctx: OpCtx, query: HandoffQuery) -> CoordResult<ReadHandoffResult> {
        self.op(ctx, query, |tx, _, a| Box::pin(read(tx, a))).await
    }
}
