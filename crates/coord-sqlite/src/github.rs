//! `github_deliveries`: webhook deliveries, recorded before they are acted on.

use crate::rows::{json, to_json};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::github::{Delivery, DeliveryStatus, GithubDeliveryResult};
use coord_domain::{CoordResult, Timestamp};
use coord_store::{GithubStore, OpCtx};
use rusqlite::{Connection, params};

fn record(c: &Connection, now: i64, d: &Delivery) -> R<GithubDeliveryResult> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO github_deliveries (delivery_id, event, action, payload, status, received_at)
             VALUES (?1, ?2, ?3, ?4, 'received', ?5) ON CONFLICT (delivery_id) DO NOTHING",
        )?
        .execute(params![d.delivery_id, d.event, d.action, to_json(&d.payload), now])?
        == 1;
    let (event, status, note, changeset_id): (String, String, Option<String>, Option<String>) = c
        .prepare_cached("SELECT event, status, note, changeset_id FROM github_deliveries WHERE delivery_id = ?1")?
        .query_row([&d.delivery_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(GithubDeliveryResult {
        success: true,
        delivery_id: d.delivery_id.clone(),
        event,
        duplicate: !inserted,
        status: DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Failed),
        note,
        changeset_id,
    })
}

fn finish(c: &Connection, now: i64, o: &GithubDeliveryResult) -> R<()> {
    c.prepare_cached(
        "UPDATE github_deliveries SET status = ?2, note = ?3, changeset_id = ?4, processed_at = ?5
          WHERE delivery_id = ?1 AND status = 'received'",
    )?
    .execute(params![o.delivery_id, o.status.as_str(), o.note, o.changeset_id, now])?;
    Ok(())
}

fn unprocessed(c: &Connection, before: i64, limit: i64) -> R<Vec<Delivery>> {
    Ok(c.prepare_cached(
        "SELECT delivery_id, event, action, payload FROM github_deliveries
          WHERE status = 'received' AND received_at < ?2
          ORDER BY received_at, delivery_id LIMIT ?1",
    )?
    .query_map([limit, before], |r| {
        Ok(Delivery {
            delivery_id: r.get(0)?,
            event: r.get(1)?,
            action: r.get(2)?,
            payload: json(r, 3)?,
        })
    })?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

#[async_trait]
impl GithubStore for SqliteStore {
    async fn record_github_delivery(&self, ctx: OpCtx, delivery: Delivery) -> CoordResult<GithubDeliveryResult> {
        self.op(ctx, move |c, now, _| record(c, now, &delivery)).await
    }

    async fn finish_github_delivery(&self, now: Option<Timestamp>, outcome: GithubDeliveryResult) -> CoordResult<()> {
        self.with_tx(move |tx| finish(tx, crate::now_micros(now), &outcome))
            .await
    }

    async fn unprocessed_github_deliveries(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Delivery>> {
        let before = coord_domain::time::to_micros(before);
        self.read(move |c| unprocessed(c, before, limit)).await
    }
}
