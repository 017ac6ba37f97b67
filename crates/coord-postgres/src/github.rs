//! `github_deliveries` (webhook deliveries, recorded before they are acted on),
//! `github_links` (what coord applied for an issue or branch) and `github_outbox`
//! (requests for GitHub's API waiting to be sent).

use crate::rows::{NOW, get};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_github::sync::{
    DELIVERIES_KEEP_DAYS, GithubRequest, Link, MAX_REQUEST_ATTEMPTS, OUTBOX_KEEP_DAYS, OutboxRow, QueuedRequest,
};
use coord_github::webhook::{Delivery, DeliveryStatus, GithubDeliveryResult};
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

/// Up to `batch` deliveries and `batch` outbox rows past their keeping time; answers
/// how many went. Deliveries not acted on yet and requests not sent yet (and not given
/// up) stay.
pub async fn prune(tx: &Tx<'_>, now: Option<Timestamp>, batch: i64) -> R<i64> {
    let deliveries = tx
        .execute(
            &format!(
                "DELETE FROM github_deliveries WHERE delivery_id IN (
                     SELECT delivery_id FROM github_deliveries
                      WHERE status <> 'received' AND received_at < {NOW} - make_interval(days => $2) LIMIT $3)"
            ),
            &[&now, &(DELIVERIES_KEEP_DAYS as i32), &batch],
        )
        .await?;
    let requests = tx
        .execute(
            &format!(
                "DELETE FROM github_outbox WHERE id IN (
                     SELECT id FROM github_outbox
                      WHERE created_at < {NOW} - make_interval(days => $2)
                        AND (sent_at IS NOT NULL OR attempts >= $4) LIMIT $3)"
            ),
            &[&now, &(OUTBOX_KEEP_DAYS as i32), &batch, &MAX_REQUEST_ATTEMPTS],
        )
        .await?;
    Ok((deliveries + requests) as i64)
}

const LINK_COLS: &str = "repo_id, key, repository, agent_id, locks, task_id, updated_at, notice";

fn link_row(r: &tokio_postgres::Row) -> R<Link> {
    let Json(locks) = get::<Json<Vec<String>>>(r, 4)?;
    Ok(Link {
        repo_id: get(r, 0)?,
        key: get(r, 1)?,
        repository: get(r, 2)?,
        agent_id: get(r, 3)?,
        locks,
        task_id: get(r, 5)?,
        updated_at: get(r, 6)?,
        notice: get(r, 7)?,
    })
}

/// [`coord_github::sync::REQUEST_TAKEN_SECONDS`], as the interval arithmetic takes it.
const TAKEN_SECONDS: f64 = coord_github::sync::REQUEST_TAKEN_SECONDS as f64;

fn db(e: tokio_postgres::Error) -> CoordError {
    CoordError::from(crate::Fail::Db(e))
}

#[async_trait]
impl GithubStore for PgStore {
    async fn github_link(&self, repo_id: i64, key: String) -> CoordResult<Option<Link>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {LINK_COLS} FROM github_links WHERE repo_id = $1 AND key = $2"),
                &[&repo_id, &key],
            )
            .await
            .map_err(db)?;
        row.as_ref().map(link_row).transpose().map_err(CoordError::from)
    }

    async fn github_issue_links_due(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Link>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {LINK_COLS} FROM github_links
                      WHERE key LIKE 'issue:%' AND agent_id IS NOT NULL
                        AND (jsonb_array_length(locks) > 0 OR task_id IS NOT NULL) AND saved_at < $1
                      ORDER BY saved_at LIMIT $2"
                ),
                &[&before, &limit],
            )
            .await
            .map_err(db)?;
        rows.iter()
            .map(link_row)
            .collect::<R<Vec<_>>>()
            .map_err(CoordError::from)
    }

    async fn save_github_link(&self, now: Option<Timestamp>, l: Link) -> CoordResult<()> {
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO github_links (repo_id, key, repository, agent_id, locks, task_id, updated_at, saved_at, notice)
                     VALUES ($2, $3, $4, $5, $6, $7, $8, {NOW}, $9)
                     ON CONFLICT (repo_id, key) DO UPDATE SET repository = excluded.repository,
                         agent_id = excluded.agent_id, locks = excluded.locks, task_id = excluded.task_id,
                         updated_at = excluded.updated_at, saved_at = excluded.saved_at, notice = excluded.notice
                     WHERE github_links.updated_at IS NULL OR excluded.updated_at IS NULL
                        OR github_links.updated_at <= excluded.updated_at"
                ),
                &[&now, &l.repo_id, &l.key, &l.repository, &l.agent_id, &Json(&l.locks), &l.task_id, &l.updated_at, &l.notice],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn queue_github_request(&self, now: Option<Timestamp>, r: GithubRequest) -> CoordResult<()> {
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO github_outbox (method, path, body, created_at, next_attempt_at)
                     VALUES ($2, $3, $4, {NOW}, {NOW})"
                ),
                &[&now, &r.method, &r.path, &Json(&r.body)],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn github_outbox(&self, sent: bool, limit: i64) -> CoordResult<Vec<OutboxRow>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id, method, path, attempts, created_at, next_attempt_at, sent_at, last_error
                   FROM github_outbox WHERE $1 OR sent_at IS NULL ORDER BY id DESC LIMIT $2",
                &[&sent, &limit],
            )
            .await
            .map_err(db)?;
        let read = |r: &tokio_postgres::Row| -> R<OutboxRow> {
            Ok(OutboxRow {
                id: get(r, 0)?,
                method: get(r, 1)?,
                path: get(r, 2)?,
                attempts: get(r, 3)?,
                created_at: get(r, 4)?,
                next_attempt_at: get(r, 5)?,
                sent_at: get(r, 6)?,
                last_error: get(r, 7)?,
            })
        };
        rows.iter().map(read).collect::<R<Vec<_>>>().map_err(CoordError::from)
    }

    async fn take_due_github_requests(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<QueuedRequest>> {
        let client = self.client().await?;
        // SKIP LOCKED: senders on several hosts never take the same request.
        let rows = client
            .query(
                &format!(
                    "UPDATE github_outbox SET attempts = attempts + 1,
                         next_attempt_at = {NOW} + make_interval(secs => $2)
                     WHERE id IN (SELECT id FROM github_outbox WHERE sent_at IS NULL AND next_attempt_at <= {NOW}
                                    AND attempts < $4
                                  ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING id, attempts, method, path, body"
                ),
                &[&now, &TAKEN_SECONDS, &limit, &MAX_REQUEST_ATTEMPTS],
            )
            .await
            .map_err(db)?;
        let read = |r: &tokio_postgres::Row| -> R<QueuedRequest> {
            let Json(body) = get::<Json<serde_json::Value>>(r, 4)?;
            Ok(QueuedRequest {
                id: get(r, 0)?,
                attempts: get(r, 1)?,
                request: GithubRequest {
                    method: get(r, 2)?,
                    path: get(r, 3)?,
                    body,
                },
            })
        };
        rows.iter().map(read).collect::<R<Vec<_>>>().map_err(CoordError::from)
    }

    async fn record_github_request(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()> {
        let client = self.client().await?;
        match outcome {
            Ok(()) => {
                client
                    .execute(
                        &format!("UPDATE github_outbox SET sent_at = {NOW}, last_error = NULL WHERE id = $2"),
                        &[&now, &id],
                    )
                    .await
            }
            Err(why) => {
                client
                    .execute(
                        &format!(
                            "UPDATE github_outbox SET last_error = $2,
                                 next_attempt_at = {NOW} + make_interval(secs => $3) WHERE id = $4"
                        ),
                        &[&now, &why, &(retry_in_seconds as f64), &id],
                    )
                    .await
            }
        }
        .map_err(db)?;
        Ok(())
    }

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
