//! `handoff_documents`.

use crate::R;
use crate::SqliteStore;
use crate::rows::{string_list, to_json, ts};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::Identity;
use coord_domain::handoffs::{Handoff, HandoffQuery, NewHandoff, ReadHandoffResult, WriteHandoffResult};
use coord_store::{HandoffStore, OpCtx};
use rusqlite::{Connection, Row, params};

const HANDOFF_COLS: &str = "id, agent_name, agent_type, session_id, summary, completed_work, in_progress, decisions,
    next_steps, relevant_files, created_at";

fn handoff_from_row(r: &Row) -> rusqlite::Result<Handoff> {
    Ok(Handoff {
        id: r.get(0)?,
        agent_name: r.get(1)?,
        agent_type: r.get(2)?,
        session_id: r.get(3)?,
        summary: r.get(4)?,
        completed_work: string_list(r, 5)?,
        in_progress: string_list(r, 6)?,
        decisions: string_list(r, 7)?,
        next_steps: string_list(r, 8)?,
        relevant_files: string_list(r, 9)?,
        created_at: ts(r, 10)?,
    })
}

pub fn write(c: &Connection, now: i64, who: &Identity, h: &NewHandoff) -> R<WriteHandoffResult> {
    c.prepare_cached(
        "INSERT INTO handoff_documents (id, agent_name, agent_type, session_id, summary, completed_work,
             in_progress, decisions, next_steps, relevant_files, created_at)
         VALUES (?1, ?2, ?3, (SELECT session_id FROM agent_sessions WHERE agent_id = ?2), ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        h.handoff_id,
        who.agent_id,
        who.agent_type,
        h.summary,
        to_json(&h.completed_work),
        to_json(&h.in_progress),
        to_json(&h.decisions),
        to_json(&h.next_steps),
        to_json(&h.relevant_files),
        now
    ])?;
    Ok(WriteHandoffResult {
        success: true,
        handoff_id: h.handoff_id.clone(),
    })
}

pub fn read(c: &Connection, q: &HandoffQuery) -> R<ReadHandoffResult> {
    let handoffs = c
        .prepare_cached(&format!(
            "SELECT {HANDOFF_COLS} FROM handoff_documents WHERE (?1 IS NULL OR agent_name = ?1)
             ORDER BY created_at DESC, seq DESC LIMIT ?2"
        ))?
        .query_map(params![q.agent_name, q.limit], handoff_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ReadHandoffResult { handoffs })
}

#[async_trait]
impl HandoffStore for SqliteStore {
    async fn write_handoff(&self, ctx: OpCtx, handoff: NewHandoff) -> CoordResult<WriteHandoffResult> {
        self.op(ctx, move |c, now, who| write(c, now, who, &handoff)).await
    }

    async fn read_handoff(&self, ctx: OpCtx, query: HandoffQuery) -> CoordResult<ReadHandoffResult> {
        self.op(ctx, move |c, _, _| read(c, &query)).await
    }
}
