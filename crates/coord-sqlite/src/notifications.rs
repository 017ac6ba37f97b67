//! `notifications`: the security channel's outbox.

use crate::rows::{opt_ts, to_json, ts};
use crate::{R, SqliteStore, now_micros};
use async_trait::async_trait;
use coord_domain::notifications::{
    CLAIM_SECONDS, ListNotificationsResult, NewNotification, Notification, NotificationFilter,
};
use coord_domain::{CoordResult, Identity, Timestamp};
use coord_store::{NotificationStore, OpCtx};
use rusqlite::{Connection, Row, params};

const SECOND: i64 = 1_000_000;
const COLUMNS: &str = "id, created_at, channel, kind, agent_id, agent_type, summary, details, delivered_at, attempts,
     last_error";

pub fn insert(c: &Connection, now: i64, who: &Identity, n: &NewNotification) -> R<()> {
    c.prepare_cached(
        "INSERT INTO notifications (created_at, channel, kind, agent_id, agent_type, summary, details, next_attempt_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?1)",
    )?
    .execute(params![
        now,
        n.channel,
        n.kind,
        who.agent_id,
        who.agent_type,
        n.summary,
        to_json(&n.details)
    ])?;
    Ok(())
}

fn from_row(r: &Row) -> rusqlite::Result<Notification> {
    Ok(Notification {
        id: r.get(0)?,
        created_at: ts(r, 1)?,
        channel: r.get(2)?,
        kind: r.get(3)?,
        agent_id: r.get(4)?,
        agent_type: r.get(5)?,
        summary: r.get(6)?,
        details: serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_default(),
        delivered_at: opt_ts(r, 8)?,
        attempts: r.get(9)?,
        last_error: r.get(10)?,
    })
}

fn list(c: &Connection, f: &NotificationFilter) -> R<ListNotificationsResult> {
    let notifications = c
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM notifications WHERE (?1 = 0 OR delivered_at IS NULL) ORDER BY id DESC LIMIT ?2"
        ))?
        .query_map(params![f.undelivered, f.limit], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ListNotificationsResult { notifications })
}

#[async_trait]
impl NotificationStore for SqliteStore {
    async fn list_notifications(&self, ctx: OpCtx, filter: NotificationFilter) -> CoordResult<ListNotificationsResult> {
        self.op(ctx, move |c, _, _| list(c, &filter)).await
    }

    async fn take_due_notifications(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<Notification>> {
        self.with_tx(move |tx| {
            let now = now_micros(now);
            Ok(tx
                .prepare_cached(&format!(
                    "UPDATE notifications SET attempts = attempts + 1, next_attempt_at = ?1 + ?2
                     WHERE id IN (SELECT id FROM notifications
                                  WHERE delivered_at IS NULL AND next_attempt_at <= ?1 ORDER BY id LIMIT ?3)
                     RETURNING {COLUMNS}"
                ))?
                .query_map(params![now, CLAIM_SECONDS * SECOND, limit], from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    async fn record_delivery(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()> {
        self.with_tx(move |tx| {
            let now = now_micros(now);
            match outcome {
                Ok(()) => tx
                    .prepare_cached("UPDATE notifications SET delivered_at = ?1, last_error = NULL WHERE id = ?2")?
                    .execute(params![now, id])?,
                Err(why) => tx
                    .prepare_cached("UPDATE notifications SET last_error = ?1, next_attempt_at = ?2 WHERE id = ?3")?
                    .execute(params![why, now + retry_in_seconds * SECOND, id])?,
            };
            Ok(())
        })
        .await
    }
}
