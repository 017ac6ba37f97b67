//! `messages` and `message_recipients`.

use crate::rows::{NOW, get, id_text, uuid};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::messages::{
    Importance, InboxQuery, InboxResult, Message, MessageResult, NewMessage, Recipients, SendMessageResult,
    decide_recipients, message_not_found,
};
use coord_domain::{CoordError, CoordResult};
use coord_store::{MessageStore, OpCtx};
use tokio_postgres::Row;
use uuid::Uuid;

const MESSAGE_COLS: &str = "m.message_id, m.thread_id, m.sender_id, m.sender_type, r.recipient_id, m.subject, m.body,
    m.importance, m.created_at, r.read_at, r.acked_at";

fn message_from_row(r: &Row) -> R<Message> {
    let importance: String = get(r, 7)?;
    Ok(Message {
        message_id: id_text(get(r, 0)?),
        thread_id: id_text(get(r, 1)?),
        from: get(r, 2)?,
        from_type: get(r, 3)?,
        to: get(r, 4)?,
        subject: get(r, 5)?,
        body: get(r, 6)?,
        importance: Importance::parse(&importance).ok_or_else(|| {
            tracing::error!(importance, "unknown importance stored");
            CoordError::internal()
        })?,
        created_at: get(r, 8)?,
        read_at: get(r, 9)?,
        acked_at: get(r, 10)?,
    })
}

pub async fn send(tx: &Tx<'_>, ctx: &OpCtx, m: &NewMessage) -> R<SendMessageResult> {
    let holders = match &m.to {
        Recipients::Holders(target) => crate::locks::live_overlapping(tx, ctx.now, std::slice::from_ref(target))
            .await?
            .into_iter()
            .map(|l| l.locked_by)
            .collect(),
        Recipients::Team(team) => tx
            .query(
                &tx.prepare_cached("SELECT agent_id FROM agent_sessions WHERE team = $1 AND status <> 'disconnected'")
                    .await?,
                &[team],
            )
            .await?
            .iter()
            .map(|r| get(r, 0))
            .collect::<R<Vec<String>>>()?,
        Recipients::Agent(_) => Vec::new(),
    };
    let recipients = decide_recipients(&ctx.who, &m.to, holders)?;
    let id = uuid(&m.message_id)?;
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO messages (message_id, thread_id, sender_id, sender_type, subject, body, importance, created_at)
             VALUES ($2, $3, $4, $5, $6, $7, $8, {NOW})"
        ))
        .await?,
        &[
            &ctx.now,
            &id,
            &uuid(&m.thread_id)?,
            &ctx.who.agent_id,
            &ctx.who.agent_type,
            &m.subject,
            &m.body,
            &m.importance.as_str(),
        ],
    )
    .await?;
    tx.execute(
        &tx.prepare_cached("INSERT INTO message_recipients (message_id, recipient_id) SELECT $1, unnest($2::text[])")
            .await?,
        &[&id, &recipients],
    )
    .await?;
    Ok(SendMessageResult {
        success: true,
        message_id: m.message_id.clone(),
        thread_id: m.thread_id.clone(),
        recipients,
    })
}

pub async fn inbox(tx: &Tx<'_>, ctx: &OpCtx, q: &InboxQuery) -> R<InboxResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {MESSAGE_COLS} FROM message_recipients r JOIN messages m ON m.message_id = r.message_id
                 WHERE r.recipient_id = $1 AND (NOT $2 OR r.read_at IS NULL)
                 ORDER BY m.seq DESC LIMIT $3"
            ))
            .await?,
            &[&ctx.who.agent_id, &q.unread_only, &q.limit],
        )
        .await?;
    let unread = tx
        .query_one(
            &tx.prepare_cached("SELECT count(*) FROM message_recipients WHERE recipient_id = $1 AND read_at IS NULL")
                .await?,
            &[&ctx.who.agent_id],
        )
        .await?;
    Ok(InboxResult {
        success: true,
        messages: rows.iter().map(message_from_row).collect::<R<_>>()?,
        unread: get(&unread, 0)?,
    })
}

/// Marks the caller's copy read (and acknowledged when `ack`), keeping earlier marks.
pub async fn mark(tx: &Tx<'_>, ctx: &OpCtx, message_id: &str, ack: bool) -> R<MessageResult> {
    let id: Uuid = uuid(message_id)?;
    let row = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "WITH marked AS (
                     UPDATE message_recipients SET read_at = coalesce(read_at, {NOW}),
                         acked_at = CASE WHEN $4 THEN coalesce(acked_at, {NOW}) ELSE acked_at END
                     WHERE recipient_id = $2 AND message_id = $3
                     RETURNING *)
                 SELECT {MESSAGE_COLS} FROM marked r JOIN messages m ON m.message_id = r.message_id"
            ))
            .await?,
            &[&ctx.now, &ctx.who.agent_id, &id, &ack],
        )
        .await?;
    match row {
        Some(r) => Ok(MessageResult {
            success: true,
            message: message_from_row(&r)?,
        }),
        None => Err(message_not_found(message_id).into()),
    }
}

#[async_trait]
impl MessageStore for PgStore {
    async fn send_message(&self, ctx: OpCtx, message: NewMessage) -> CoordResult<SendMessageResult> {
        self.op(ctx, message, |tx, ctx, a| Box::pin(send(tx, ctx, a))).await
    }

    async fn inbox(&self, ctx: OpCtx, query: InboxQuery) -> CoordResult<InboxResult> {
        self.op(ctx, query, |tx, ctx, a| Box::pin(inbox(tx, ctx, a))).await
    }

    async fn mark_message(&self, ctx: OpCtx, message_id: String, ack: bool) -> CoordResult<MessageResult> {
        self.op(ctx, (message_id, ack), |tx, ctx, (id, ack)| {
            Box::pin(mark(tx, ctx, id, *ack))
        })
        .await
    }
}
