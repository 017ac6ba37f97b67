//! `messages` and `message_recipients`.

use crate::R;
use crate::SqliteStore;
use crate::rows::{opt_ts, ts};
use async_trait::async_trait;
use coord_domain::messages::{
    Importance, InboxQuery, InboxResult, Message, MessageResult, NewMessage, Recipients, SendMessageResult,
    decide_recipients, message_not_found,
};
use coord_domain::{CoordResult, Identity};
use coord_store::{MessageStore, OpCtx};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

const MESSAGE_COLS: &str = "m.message_id, m.thread_id, m.sender_id, m.sender_type, r.recipient_id, m.subject, m.body,
    m.importance, m.created_at, r.read_at, r.acked_at";

fn message_from_row(r: &Row) -> rusqlite::Result<Message> {
    let importance: String = r.get(7)?;
    Ok(Message {
        message_id: r.get(0)?,
        thread_id: r.get(1)?,
        from: r.get(2)?,
        from_type: r.get(3)?,
        to: r.get(4)?,
        subject: r.get(5)?,
        body: r.get(6)?,
        importance: Importance::parse(&importance).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                7,
                Type::Text,
                format!("unknown importance {importance:?}").into(),
            )
        })?,
        created_at: ts(r, 8)?,
        read_at: opt_ts(r, 9)?,
        acked_at: opt_ts(r, 10)?,
    })
}

pub fn send(c: &Connection, now: i64, who: &Identity, m: &NewMessage) -> R<SendMessageResult> {
    let holders = match &m.to {
        Recipients::Holders(target) => crate::locks::live_overlapping(c, now, std::slice::from_ref(target))?
            .into_iter()
            .map(|l| l.locked_by)
            .collect(),
        Recipients::Team(team) => c
            .prepare_cached("SELECT agent_id FROM agent_sessions WHERE team = ?1 AND status <> 'disconnected'")?
            .query_map([team], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?,
        Recipients::Agent(_) => Vec::new(),
    };
    let recipients = decide_recipients(who, &m.to, holders)?;
    c.prepare_cached(
        "INSERT INTO messages (message_id, thread_id, sender_id, sender_type, subject, body, importance, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        m.message_id,
        m.thread_id,
        who.agent_id,
        who.agent_type,
        m.subject,
        m.body,
        m.importance.as_str(),
        now
    ])?;
    let mut deliver = c.prepare_cached("INSERT INTO message_recipients (message_id, recipient_id) VALUES (?1, ?2)")?;
    for r in &recipients {
        deliver.execute(params![m.message_id, r])?;
    }
    Ok(SendMessageResult {
        success: true,
        message_id: m.message_id.clone(),
        thread_id: m.thread_id.clone(),
        recipients,
    })
}

pub fn inbox(c: &Connection, who: &Identity, q: &InboxQuery) -> R<InboxResult> {
    let messages = c
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLS} FROM message_recipients r JOIN messages m ON m.message_id = r.message_id
             WHERE r.recipient_id = ?1 AND (?2 = 0 OR r.read_at IS NULL)
             ORDER BY m.seq DESC LIMIT ?3"
        ))?
        .query_map(params![who.agent_id, q.unread_only, q.limit], message_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let unread = c
        .prepare_cached("SELECT count(*) FROM message_recipients WHERE recipient_id = ?1 AND read_at IS NULL")?
        .query_row([&who.agent_id], |r| r.get(0))?;
    Ok(InboxResult {
        success: true,
        messages,
        unread,
    })
}

/// Marks the caller's copy read (and acknowledged when `ack`), keeping earlier marks.
pub fn mark(c: &Connection, now: i64, who: &Identity, message_id: &str, ack: bool) -> R<MessageResult> {
    let changed = c
        .prepare_cached(
            "UPDATE message_recipients SET read_at = coalesce(read_at, ?3),
                 acked_at = CASE WHEN ?4 THEN coalesce(acked_at, ?3) ELSE acked_at END
             WHERE recipient_id = ?1 AND message_id = ?2",
        )?
        .execute(params![who.agent_id, message_id, now, ack])?;
    if changed == 0 {
        return Err(message_not_found(message_id).into());
    }
    let message = c
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLS} FROM message_recipients r JOIN messages m ON m.message_id = r.message_id
             WHERE r.recipient_id = ?1 AND r.message_id = ?2"
        ))?
        .query_row(params![who.agent_id, message_id], message_from_row)
        .optional()?
        .ok_or_else(|| message_not_found(message_id))?;
    Ok(MessageResult { success: true, message })
}

#[async_trait]
impl MessageStore for SqliteStore {
    async fn send_message(&self, ctx: OpCtx, message: NewMessage) -> CoordResult<SendMessageResult> {
        self.op(ctx, move |c, now, who| send(c, now, who, &message)).await
    }

    async fn inbox(&self, ctx: OpCtx, query: InboxQuery) -> CoordResult<InboxResult> {
        self.op(ctx, move |c, _, who| inbox(c, who, &query)).await
    }

    async fn mark_message(&self, ctx: OpCtx, message_id: String, ack: bool) -> CoordResult<MessageResult> {
        self.op(ctx, move |c, now, who| mark(c, now, who, &message_id, ack))
            .await
    }
}
