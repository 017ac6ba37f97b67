//! `notifications`: the security channel's outbox.

use crate::Db;
use crate::rows::{NOW, get};
use crate::{PgStore, R, Tx, pg_error};
use async_trait::async_trait;
use coord_domain::notifications::{
    CLAIM_SECONDS, ListNotificationsResult, NewNotification, Notification, NotificationFilter,
};
use coord_domain::{CoordError, CoordResult, Identity, Timestamp};
use coord_store::{NotificationStore, OpCtx};
use tokio_postgres::Row;

const COLUMNS: &str = "id, created_at, channel, kind, agent_id, agent_type, summary, details, delivered_at, attempts,
     last_error";

pub async fn insert<C: Db>(c: &C, now: Option<Timestamp>, who: &Identity, n: &NewNotification) -> R<()> {
    c.execute(
        &c.prepare_cached(&format!(
            "INSERT INTO notifications (created_at, channel, kind, agent_id, agent_type, summary, details,
                 next_attempt_at)
             VALUES ({NOW}, $2, $3, $4, $5, $6, $7, {NOW})"
        ))
        .await?,
        &[
            &now,
            &n.channel,
            &n.kind,
            &who.agent_id,
            &who.agent_type,
            &n.summary,
            &n.details,
        ],
    )
    .await?;
    Ok(())
}

fn from_row(r: &Row) -> R<Notification> {
    Ok(Notification {
        id: get(r, 0)?,
        created_at: get(r, 1)?,
        channel: get(r, 2)?,
        kind: get(r, 3)?,
        agent_id: get(r, 4)?,
        agent_type: get(r, 5)?,
        summary: get(r, 6)?,
        details: get(r, 7)?,
        delivered_at: get(r, 8)?,
        attempts: i64::from(get::<i32>(r, 9)?),
        last_error: get(r, 10)?,
    })
}

async fn list(tx: &Tx<'_>, f: &NotificationFilter) -> R<ListNotificationsResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM notifications WHERE (NOT $1 OR delivered_at IS NULL) ORDER BY id DESC LIMIT $2"
            ))
            .await?,
            &[&f.undelivered, &f.limit],
        )
        .await?;
    Ok(ListNotificationsResult {
        notifications: rows.iter().map(from_row).collect::<R<_>>()?,
    })
}

#[async_trait]
impl NotificationStore for PgStore {
    async fn list_notifications(&self, ctx: OpCtx, filter: NotificationFilter) -> CoordResult<ListNotificationsResult> {
        self.op(ctx, filter, |tx, _, f| Box::pin(list(tx, f))).await
    }

    async fn take_due_notifications(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<Notification>> {
        let client = self.client().await?;
        // SKIP LOCKED: dispatchers on several hosts never take the same notification.
        let rows = client
            .query(
                &format!(
                    "UPDATE notifications SET attempts = attempts + 1,
                         next_attempt_at = {NOW} + make_interval(secs => $2)
                     WHERE id IN (SELECT id FROM notifications
                                  WHERE delivered_at IS NULL AND next_attempt_at <= {NOW}
                                  ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING {COLUMNS}"
                ),
                &[&now, &(CLAIM_SECONDS as f64), &limit],
            )
            .await
            .map_err(|e| pg_error(&e))?;
        rows.iter().map(from_row).collect::<R<_>>().map_err(CoordError::from)
    }

    async fn record_delivery(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()> {
        let client = self.client().await?;
        let done = match outcome {
            Ok(()) => {
                client
                    .execute(
                        &format!("UPDATE notifications SET delivered_at = {NOW}, last_error = NULL WHERE id = $2"),
                        &[&now, &id],
                    )
                    .await
            }
            Err(why) => {
                client
                    .execute(
                        &format!(
                            "UPDATE notifications SET last_error = $2,
                                 next_attempt_at = {NOW} + make_interval(secs => $3) WHERE id = $4"
                        ),
                        &[&now, &why, &(retry_in_seconds as f64), &id],
                    )
                    .await
            }
        };
        done.map(|_| ()).map_err(|e| pg_error(&e))
    }
}
