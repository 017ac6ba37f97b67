//! The security channel: notifications about elevated operations, kept in an outbox
//! (`notifications`) written in the same transaction as the decision they report, and
//! delivered to a webhook (`COORD_SECURITY_WEBHOOK_URL`) by whichever coordinator
//! process runs the dispatcher. Nothing is lost when the webhook is down: a delivery
//! that fails is retried with backoff, and `coord notification` lists them all.

use crate::error::{CoordResult, ErrorCode};
use crate::guardrails::{Action, CheckGuardrailsResult};
use crate::identity::Identity;
use crate::time::Timestamp;
use crate::validate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The channel elevated operations are reported on.
pub const SECURITY: &str = "security";
pub const DEFAULT_LIST_LIMIT: i64 = 100;
pub const MAX_LIST_LIMIT: i64 = 1000;
/// How long a dispatcher owns the notifications it took before another may retry them.
pub const CLAIM_SECONDS: i64 = 60;
/// The longest wait between two attempts of a failing delivery.
pub const MAX_BACKOFF_SECONDS: i64 = 3600;

/// A notification about to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNotification {
    pub channel: &'static str,
    /// `elevated_operation`.
    pub kind: &'static str,
    pub summary: String,
    pub details: Value,
}

impl NewNotification {
    /// What a guardrail check that passed as an elevated operation reports.
    pub fn elevated(who: &Identity, source: &str, result: &CheckGuardrailsResult) -> Option<NewNotification> {
        if !result.elevated {
            return None;
        }
        let lifted: Vec<_> = result.findings.iter().filter(|f| f.action != Action::Warn).collect();
        let first = lifted.first()?;
        Some(NewNotification {
            channel: SECURITY,
            kind: "elevated_operation",
            summary: format!(
                "{} ({}) ran {} as an elevated operation: {}",
                who.agent_id, who.agent_type, first.operation, first.matched
            ),
            details: serde_json::json!({
                "source": source,
                "operations": lifted.iter().map(|f| f.operation.as_str()).collect::<Vec<_>>(),
                "findings": lifted,
            }),
        })
    }
}

/// A stored notification and its delivery state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Notification {
    pub id: i64,
    pub created_at: Timestamp,
    pub channel: String,
    pub kind: String,
    pub agent_id: String,
    pub agent_type: String,
    pub summary: String,
    pub details: Value,
    /// When the webhook accepted it; absent while undelivered.
    #[serde(default)]
    pub delivered_at: Option<Timestamp>,
    /// Delivery attempts so far.
    pub attempts: i64,
    /// Why the last attempt failed.
    #[serde(default)]
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListNotificationsRequest {
    /// Only notifications the webhook has not accepted yet.
    #[serde(default)]
    pub undelivered: Option<bool>,
    /// At most this many, newest first (default 100, at most 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NotificationFilter {
    pub undelivered: bool,
    pub limit: i64,
}

pub fn validate_list(req: ListNotificationsRequest) -> CoordResult<NotificationFilter> {
    Ok(NotificationFilter {
        undelivered: req.undelivered.unwrap_or(false),
        limit: validate::int_in_range(
            "limit",
            req.limit,
            DEFAULT_LIST_LIMIT,
            1,
            MAX_LIST_LIMIT,
            ErrorCode::InvalidArgument,
        )?,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListNotificationsResult {
    pub notifications: Vec<Notification>,
}

/// Seconds to wait before attempt `attempts + 1` after `attempts` failed ones:
/// 30 s, 1 min, 2 min, … up to an hour.
pub fn backoff_seconds(attempts: i64) -> i64 {
    let exp = attempts.clamp(1, 12) - 1;
    (30_i64 << exp).min(MAX_BACKOFF_SECONDS)
}

/// The JSON body the webhook receives.
pub fn webhook_body(n: &Notification) -> Value {
    serde_json::json!({
        "id": n.id,
        "channel": n.channel,
        "kind": n.kind,
        "created_at": n.created_at,
        "agent_id": n.agent_id,
        "agent_type": n.agent_type,
        "summary": n.summary,
        "details": n.details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guardrails::{Category, Finding};

    #[test]
    fn backoff_grows_and_is_capped() {
        let waits: Vec<i64> = [0, 1, 2, 3, 8, 50].iter().map(|a| backoff_seconds(*a)).collect();
        assert_eq!(waits, [30, 30, 60, 120, 3600, 3600]);
    }

    #[test]
    fn only_elevated_passes_notify() {
        let who = Identity {
            agent_id: "senior".into(),
            agent_type: "claude_code".into(),
        };
        let finding = |action| Finding {
            category: Category::GitForce,
            operation: "force_push".into(),
            action,
            matched: "git push --force origin feature".into(),
            span: None,
            reason: "rewrites history".into(),
        };
        let mut r = CheckGuardrailsResult {
            success: true,
            allowed: true,
            elevated: false,
            findings: vec![finding(Action::Block)],
            approval_used: None,
        };
        assert_eq!(NewNotification::elevated(&who, "check_guardrails", &r), None);
        r.elevated = true;
        let n = NewNotification::elevated(&who, "check_guardrails", &r).unwrap();
        assert_eq!((n.channel, n.kind), (SECURITY, "elevated_operation"));
        assert!(
            n.summary.contains("senior") && n.summary.contains("force_push"),
            "{}",
            n.summary
        );
        assert_eq!(n.details["operations"], serde_json::json!(["force_push"]));
    }
}
