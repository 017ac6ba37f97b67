//! `github_deliveries`: webhook deliveries, recorded before they are acted on.

use crate::rows::{NOW, get};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::github::{Delivery, DeliveryStatus, GithubDeliveryResult};
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_store::{GithubStore, OpCtx};
use tokio_postgres::types::Json;

async fn record(tx: &Tx<'_>, ctx: &OpCtx, d: &Delivery) -> R<GithubDeliveryResult> {
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO github_deliveries (delivery_id, event, action, payload, status, received_at)
                 VALUES ($2, $3, $4, $5, 'received', {NOW}) ON CONFLICT (delivery_id) DO NOTHING"
            ),
            &[&ctx.now, &d.delivery_id, &d.event, &d.action, &Json(&d.payload)],
        )
        .await?
        == 1;
    let r = tx
        .query_one(
            "SELECT event, status, note, changeset_id FROM github_deliveries WHERE delivery_id = $1",
            &[&d.delivery_id],
        )
        .await?;
    Ok(GithubDeliveryResult {
        success: true,
        delivery_id: d.delivery_id.clone(),
        event: get(&r, 0)?,
        duplicate: !inserted,
        status: DeliveryStatus::parse(&get::<String>(&r, 1)?).unwrap_or(DeliveryStatus::Failed),
        note: get(&r, 2)?,
        changeset_id: get(&r, 3)?,
    })
}

#[async_trait]
impl GithubStore for PgStore {
    async fn record_github_delivery(&self, ctx: OpCtx, delivery: Delivery) -> CoordResult<GithubDeliveryResult> {
        self.op(ctx, delivery, |tx, ctx, d| Box::pin(record(tx, ctx, d))).await
    }

    async fn finish_github_delivery(&self, now: Option<Timestamp>, o: GithubDeliveryResult) -> CoordResult<()> {
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "UPDATE github_deliveries SET status = $3, note = $4, changeset_id = $5, processed_at = {NOW}
                      WHERE delivery_id = $2 AND status = 'received'"
                ),
                &[&now, &o.delivery_id, &o.status.as_str(), &o.note, &o.changeset_id],
            )
            .await
            .map_err(|e| CoordError::from(crate::Fail::Db(e)))?;
        Ok(())
    }

    async fn unprocessed_github_deliveries(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Delivery>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT delivery_id, event, action, payload FROM github_deliveries
                  WHERE status = 'received' AND received_at < $2
                  ORDER BY received_at, delivery_id LIMIT $1",
                &[&limit, &before],
            )
            .await
            .map_err(|e| CoordError::from(crate::Fail::Db(e)))?;
        let read = |r: &tokio_postgres::Row| -> R<Delivery> {
            let Json(payload) = get::<Json<serde_json::Value>>(r, 3)?;
            Ok(Delivery {
                delivery_id: get(r, 0)?,
                event: get(r, 1)?,
                action: get(r, 2)?,
                payload,
            })
        };
        rows.iter().map(read).collect::<R<Vec<_>>>().map_err(CoordError::from)
    }
}
