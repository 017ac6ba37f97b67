//! `github_deliveries` (webhook deliveries, recorded before they are acted on),
//! `github_links` (what coord applied for an issue or branch) and `github_outbox`
//! (requests for GitHub's API waiting to be sent).

use crate::rows::{json, opt_ts, string_list, to_json, ts};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::time::to_micros;
use coord_domain::{CoordResult, Timestamp};
use coord_github::sync::{
    DELIVERIES_KEEP_DAYS, GithubRequest, Link, MAX_REQUEST_ATTEMPTS, OUTBOX_KEEP_DAYS, OutboxRow, QueuedRequest,
};
use coord_github::webhook::{Delivery, DeliveryStatus, GithubDeliveryResult};
use coord_store::{GithubStore, OpCtx};
use rusqlite::OptionalExtension;
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

const SECOND: i64 = 1_000_000;

const LINK_COLS: &str = "repo_id, key, repository, agent_id, locks, task_id, updated_at, notice";

fn link_row(r: &rusqlite::Row) -> rusqlite::Result<Link> {
    Ok(Link {
        repo_id: r.get(0)?,
        key: r.get(1)?,
        repository: r.get(2)?,
        agent_id: r.get(3)?,
        locks: string_list(r, 4)?,
        task_id: r.get(5)?,
        updated_at: opt_ts(r, 6)?,
        notice: r.get(7)?,
    })
}

fn link(c: &Connection, repo_id: i64, key: &str) -> R<Option<Link>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {LINK_COLS} FROM github_links WHERE repo_id = ?1 AND key = ?2"
    ))?
    .query_row(params![repo_id, key], link_row)
    .optional()?)
}

fn issue_links_due(c: &Connection, before: i64, limit: i64) -> R<Vec<Link>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {LINK_COLS} FROM github_links
          WHERE key LIKE 'issue:%' AND agent_id IS NOT NULL AND (locks <> '[]' OR task_id IS NOT NULL)
            AND saved_at < ?1
          ORDER BY saved_at LIMIT ?2"
    ))?
    .query_map(params![before, limit], link_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

fn save_link(c: &Connection, now: i64, l: &Link) -> R<()> {
    c.prepare_cached(
        "INSERT INTO github_links (repo_id, key, repository, agent_id, locks, task_id, updated_at, saved_at, notice)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (repo_id, key) DO UPDATE SET repository = excluded.repository, agent_id = excluded.agent_id,
             locks = excluded.locks, task_id = excluded.task_id, updated_at = excluded.updated_at,
             saved_at = excluded.saved_at, notice = excluded.notice
         WHERE github_links.updated_at IS NULL OR excluded.updated_at IS NULL
            OR github_links.updated_at <= excluded.updated_at",
    )?
    .execute(params![
        l.repo_id,
        l.key,
        l.repository,
        l.agent_id,
        to_json(&l.locks),
        l.task_id,
        l.updated_at.map(to_micros),
        now,
        l.notice
    ])?;
    Ok(())
}

fn take_due(c: &Connection, now: i64, limit: i64) -> R<Vec<QueuedRequest>> {
    Ok(c.prepare_cached(
        "UPDATE github_outbox SET attempts = attempts + 1, next_attempt_at = ?1 + ?2
          WHERE id IN (SELECT id FROM github_outbox WHERE sent_at IS NULL AND next_attempt_at <= ?1
                         AND attempts < ?4
                       ORDER BY id LIMIT ?3)
          RETURNING id, attempts, method, path, body",
    )?
    .query_map(
        params![
            now,
            coord_github::sync::REQUEST_TAKEN_SECONDS * SECOND,
            limit,
            MAX_REQUEST_ATTEMPTS
        ],
        |r| {
            Ok(QueuedRequest {
                id: r.get(0)?,
                attempts: r.get(1)?,
                request: GithubRequest {
                    method: r.get(2)?,
                    path: r.get(3)?,
                    body: json(r, 4)?,
                },
            })
        },
    )?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Up to `batch` deliveries and `batch` outbox rows past their keeping time; answers
/// how many went. Deliveries not acted on yet and requests not sent yet (and not given
/// up) stay.
pub fn prune(c: &Connection, now: i64, batch: i64) -> R<i64> {
    let day = 24 * 3600 * SECOND;
    let deliveries = c
        .prepare_cached(
            "DELETE FROM github_deliveries WHERE delivery_id IN (
                 SELECT delivery_id FROM github_deliveries WHERE status <> 'received' AND received_at < ?1 LIMIT ?2)",
        )?
        .execute(params![now - DELIVERIES_KEEP_DAYS * day, batch])?;
    let requests = c
        .prepare_cached(
            "DELETE FROM github_outbox WHERE id IN (
                 SELECT id FROM github_outbox
                  WHERE created_at < ?1 AND (sent_at IS NOT NULL OR attempts >= ?3) LIMIT ?2)",
        )?
        .execute(params![now - OUTBOX_KEEP_DAYS * day, batch, MAX_REQUEST_ATTEMPTS])?;
    Ok((deliveries + requests) as i64)
}

#[async_trait]
impl GithubStore for SqliteStore {
    async fn github_link(&self, repo_id: i64, key: String) -> CoordResult<Option<Link>> {
        self.read(move |c| link(c, repo_id, &key)).await
    }

    async fn github_issue_links_due(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Link>> {
        let before = to_micros(before);
        self.read(move |c| issue_links_due(c, before, limit)).await
    }

    async fn save_github_link(&self, now: Option<Timestamp>, l: Link) -> CoordResult<()> {
        self.with_tx(move |tx| save_link(tx, crate::now_micros(now), &l)).await
    }

    async fn queue_github_request(&self, now: Option<Timestamp>, request: GithubRequest) -> CoordResult<()> {
        self.with_tx(move |tx| {
            let now = crate::now_micros(now);
            tx.prepare_cached(
                "INSERT INTO github_outbox (method, path, body, created_at, next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?4)",
            )?
            .execute(params![request.method, request.path, to_json(&request.body), now])?;
            Ok(())
        })
        .await
    }

    async fn github_outbox(&self, sent: bool, limit: i64) -> CoordResult<Vec<OutboxRow>> {
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT id, method, path, attempts, created_at, next_attempt_at, sent_at, last_error
                   FROM github_outbox WHERE ?1 OR sent_at IS NULL ORDER BY id DESC LIMIT ?2",
            )?
            .query_map(params![sent, limit], |r| {
                Ok(OutboxRow {
                    id: r.get(0)?,
                    method: r.get(1)?,
                    path: r.get(2)?,
                    attempts: r.get(3)?,
                    created_at: ts(r, 4)?,
                    next_attempt_at: ts(r, 5)?,
                    sent_at: opt_ts(r, 6)?,
                    last_error: r.get(7)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    async fn take_due_github_requests(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<QueuedRequest>> {
        self.with_tx(move |tx| take_due(tx, crate::now_micros(now), limit))
            .await
    }

    async fn record_github_request(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()> {
        self.with_tx(move |tx| {
            let now = crate::now_micros(now);
            match outcome {
                Ok(()) => tx
                    .prepare_cached("UPDATE github_outbox SET sent_at = ?1, last_error = NULL WHERE id = ?2")?
                    .execute(params![now, id])?,
                Err(why) => tx
                    .prepare_cached("UPDATE github_outbox SET last_error = ?1, next_attempt_at = ?2 WHERE id = ?3")?
                    .execute(params![why, now + retry_in_seconds * SECOND, id])?,
            };
            Ok(())
        })
        .await
    }

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
