//! `coord notification`: the security channel listed (`list_notifications`) and
//! delivered. Delivery takes the due notifications from the outbox, posts each to the
//! webhook and records the outcome; a failure is retried with backoff. `coord serve` runs
//! a delivery pass every few seconds; `coord notification deliver` runs one now.

use crate::args::NotificationsCommand;
use crate::context::Context;
use crate::output::{EXIT_OK, EXIT_REFUSED, Output, ellipsis, table, when};
use coord_domain::access::Principal;
use coord_domain::notifications::{ListNotificationsRequest, ListNotificationsResult, backoff_seconds, webhook_body};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_remote::Webhook;
use coord_service::ops::notifications::ListNotifications;
use coord_service::{Coordination, Coordinator, call};
use std::time::Duration;

/// How often `coord serve` delivers.
pub const EVERY: Duration = Duration::from_secs(5);
/// Notifications taken per round trip to the store.
const BATCH: i64 = 50;

/// The webhook of `COORD_SECURITY_WEBHOOK_URL`, if set.
pub fn webhook_from_env() -> CoordResult<Option<Webhook>> {
    match std::env::var("COORD_SECURITY_WEBHOOK_URL") {
        Ok(url) if !url.trim().is_empty() => Webhook::new(&url).map(Some),
        _ => Ok(None),
    }
}

/// One delivery pass: every due notification posted once. Answers (delivered, failed).
pub async fn deliver_due(coord: &Coordinator, hook: &Webhook) -> CoordResult<(u64, u64)> {
    let (mut delivered, mut failed) = (0, 0);
    loop {
        let due = coord.store().take_due_notifications(None, BATCH).await?;
        for n in &due {
            let outcome = hook.post(&webhook_body(n)).await;
            match &outcome {
                Ok(()) => delivered += 1,
                Err(why) => {
                    tracing::warn!(notification = n.id, error = %why, "security webhook delivery failed");
                    failed += 1;
                }
            }
            coord
                .store()
                .record_delivery(None, n.id, outcome, backoff_seconds(n.attempts))
                .await?;
        }
        if (due.len() as i64) < BATCH {
            return Ok((delivered, failed));
        }
    }
}

/// The dispatcher of `coord serve`.
pub fn spawn(coord: Coordinator, hook: Webhook) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = deliver_due(&coord, &hook).await {
                tracing::warn!(error = %e, "security notifications could not be delivered");
            }
        }
    })
}

pub async fn run(cmd: NotificationsCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match cmd {
        NotificationsCommand::List { undelivered, limit } => {
            let req = ListNotificationsRequest {
                undelivered: Some(undelivered),
                limit,
            };
            let who = Principal::local(ctx.caller.clone());
            out.result(call::<ListNotifications, _>(coord, &who, req).await, render_list)
        }
        NotificationsCommand::Deliver => match deliver_now(coord).await {
            Ok((delivered, failed)) => {
                if out.json {
                    println!(
                        "{}",
                        serde_json::json!({"success": failed == 0, "delivered": delivered, "failed": failed})
                    );
                } else {
                    println!("delivered {delivered}, failed {failed} (failures are retried with backoff)");
                }
                if failed == 0 { EXIT_OK } else { EXIT_REFUSED }
            }
            Err(e) => out.error(&e),
        },
    }
}

async fn deliver_now(coord: &dyn Coordination) -> CoordResult<(u64, u64)> {
    let local = coord.local().ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            "in remote mode the server delivers its notifications (`coord serve` with COORD_SECURITY_WEBHOOK_URL)",
        )
    })?;
    let hook = webhook_from_env()?.ok_or_else(|| {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "COORD_SECURITY_WEBHOOK_URL",
            "set COORD_SECURITY_WEBHOOK_URL to the webhook the security channel posts to",
        )
    })?;
    deliver_due(local, &hook).await
}

fn render_list(r: &ListNotificationsResult) -> String {
    if r.notifications.is_empty() {
        return "no notifications".into();
    }
    let mut t = table(&["ID", "TIME", "KIND", "AGENT", "SUMMARY", "DELIVERED"]);
    for n in &r.notifications {
        let delivery = match (&n.delivered_at, &n.last_error) {
            (Some(at), _) => when(*at),
            (None, Some(why)) => format!("no ({} attempts): {}", n.attempts, ellipsis(why, 60)),
            (None, None) => "pending".into(),
        };
        t.add_row(vec![
            n.id.to_string(),
            when(n.created_at),
            n.kind.clone(),
            n.agent_id.clone(),
            ellipsis(&n.summary, 70),
            delivery,
        ]);
    }
    t.to_string()
}
