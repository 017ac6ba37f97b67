//! The approval queue: a refusal the rules mark as approvable (today: a resource limit of
//! a profile with `escalation`; later guardrail blocks and manual-review verification)
//! becomes a request a person decides. An approval is a one-time grant bound to the
//! agent, the operation and the hash of the exact parameters, valid until it expires.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::Identity;
use crate::time::{Timestamp, minutes};
use crate::validate::{self, MAX_SHORT_TEXT};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a request waits for a decision before it expires.
pub const PENDING_MINUTES: i64 = 24 * 60;
/// How long an approval stays usable when the decider does not say.
pub const DEFAULT_GRANT_MINUTES: i64 = 60;
pub const MAX_GRANT_MINUTES: i64 = 7 * 24 * 60;
pub const DEFAULT_LIST_LIMIT: i64 = 100;
pub const MAX_LIST_LIMIT: i64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Granted: the same request by the same agent passes once, until `expires_at`.
    Approved,
    Denied,
    /// The grant was spent by the request it was for.
    Used,
    /// Nobody decided in time, or the grant was not used in time.
    Expired,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Used => "used",
            ApprovalStatus::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<ApprovalStatus> {
        [
            ApprovalStatus::Pending,
            ApprovalStatus::Approved,
            ApprovalStatus::Denied,
            ApprovalStatus::Used,
            ApprovalStatus::Expired,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// The status a stored item has at `now`: pending and approved items expire (stores keep
/// the status they were last written with, and this is the one definition of expiry).
pub fn effective_status(stored: ApprovalStatus, expires_at: Timestamp, now: Timestamp) -> ApprovalStatus {
    match stored {
        ApprovalStatus::Pending | ApprovalStatus::Approved if expires_at <= now => ApprovalStatus::Expired,
        s => s,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Approval {
    pub approval_id: String,
    /// Who asked: the agent whose request was refused (and who alone may use the grant).
    pub agent_id: String,
    pub agent_type: String,
    pub operation: String,
    /// SHA-256 of the exact parameters (canonical JSON): the grant is for these only.
    pub params_hash: String,
    /// The parameters, with the operation's private fields redacted.
    pub parameters: Value,
    /// The refusal's code (`resource_limit_exceeded`, ...) and message.
    pub error: String,
    pub reason: String,
    pub status: ApprovalStatus,
    pub requested_at: Timestamp,
    /// Pending: when the request lapses. Approved: until when the grant can be used.
    pub expires_at: Timestamp,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub decided_at: Option<Timestamp>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub used_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListApprovalsRequest {
    /// Only items with this status (at the time of the call); all when absent.
    #[serde(default)]
    pub status: Option<ApprovalStatus>,
    /// Only requests made by this agent id.
    #[serde(default)]
    #[schemars(length(min = 1, max = 128))]
    pub requested_by: Option<String>,
    /// At most this many, newest first (default 100, at most 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListApprovalsResult {
    pub success: bool,
    pub approvals: Vec<Approval>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetApprovalRequest {
    /// The `approval_id` a refusal answered with, or a unique prefix of it (`apr_` and at
    /// least 4 of its hex digits; the `apr_` may be left out).
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub approval_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApprovalResult {
    pub success: bool,
    pub approval: Approval,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideApprovalRequest {
    /// The request's id, or a unique prefix of it (as for `get_approval`).
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub approval_id: String,
    pub decision: Decision,
    /// Why, for the audit trail and the requester.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub note: Option<String>,
    /// How long an approval can be used (default 60, at most a week).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10080))]
    pub valid_minutes: Option<i64>,
}

/// A validated decision.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDecision {
    pub approval_id: String,
    pub decision: Decision,
    pub note: Option<String>,
    pub valid_minutes: i64,
}

pub fn validate_approval_id(id: &str) -> CoordResult<String> {
    // Ids are made lowercase: one typed in capitals names the same request.
    validate::required_text("approval_id", id, 64).map(|s| s.trim().to_ascii_lowercase())
}

pub fn validate_decision(req: DecideApprovalRequest) -> CoordResult<NewDecision> {
    Ok(NewDecision {
        approval_id: validate_approval_id(&req.approval_id)?,
        decision: req.decision,
        note: validate::optional_text("note", req.note, MAX_SHORT_TEXT)?,
        valid_minutes: validate::int_in_range(
            "valid_minutes",
            req.valid_minutes,
            DEFAULT_GRANT_MINUTES,
            1,
            MAX_GRANT_MINUTES,
            ErrorCode::InvalidArgument,
        )?,
    })
}

/// A validated list filter.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalFilter {
    pub status: Option<ApprovalStatus>,
    pub requested_by: Option<String>,
    pub limit: i64,
}

pub fn validate_filter(req: ListApprovalsRequest) -> CoordResult<ApprovalFilter> {
    Ok(ApprovalFilter {
        status: req.status,
        requested_by: validate::optional_text("requested_by", req.requested_by, 128)?,
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

/// Whether an item (as stored) matches a filter at `now`.
pub fn matches(filter: &ApprovalFilter, item: &Approval, now: Timestamp) -> bool {
    filter
        .status
        .is_none_or(|s| effective_status(item.status, item.expires_at, now) == s)
        && filter.requested_by.as_deref().is_none_or(|a| a == item.agent_id)
}

/// What a decision writes: the new status and the new expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub status: ApprovalStatus,
    pub expires_at: Timestamp,
}

/// The rule for deciding `item` (as stored) at `now`: only a pending item can be decided,
/// and never by the agent that asked (whatever its trust, an operator key naming it
/// included). Who else may decide at all is the operation's permission
/// (`decide_approvals`, trust 4).
pub fn decide(item: &Approval, decider: &Identity, d: &NewDecision, now: Timestamp) -> CoordResult<Decided> {
    if decider.agent_id == item.agent_id {
        return Err(CoordError::new(
            ErrorCode::CannotApproveOwnRequest,
            format!(
                "{} asked for approval {}; another person or agent must decide it",
                item.agent_id, item.approval_id
            ),
        )
        .with_detail("approval_id", item.approval_id.as_str()));
    }
    let status = effective_status(item.status, item.expires_at, now);
    if status != ApprovalStatus::Pending {
        return Err(CoordError::new(
            ErrorCode::ApprovalNotPending,
            format!(
                "approval {} is {}; only a pending request can be decided",
                item.approval_id,
                status.as_str()
            ),
        )
        .with_detail("approval_id", item.approval_id.as_str())
        .with_detail("status", status.as_str()));
    }
    Ok(match d.decision {
        Decision::Approve => Decided {
            status: ApprovalStatus::Approved,
            expires_at: now + minutes(d.valid_minutes),
        },
        Decision::Deny => Decided {
            status: ApprovalStatus::Denied,
            expires_at: item.expires_at,
        },
    })
}

pub fn approval_not_found(id: &str) -> CoordError {
    CoordError::new(
        ErrorCode::NotFound,
        format!("no approval {id} (an id is apr_ and 16 hex digits; a unique prefix needs at least 4 of them)"),
    )
    .with_detail("approval_id", id)
}

/// Whether a refusal may become an approval request: a destructive operation or a
/// credential file always may (the spec: "block, require approval"); a resource limit
/// only when the caller's profile allows escalation (`limits`).
pub fn approvable(e: &CoordError, limits: bool) -> bool {
    match e.code {
        ErrorCode::ResourceLimitExceeded => limits,
        ErrorCode::DestructiveOperationBlocked | ErrorCode::CredentialFileProtected => true,
        _ => false,
    }
}

/// The refusal, marked as waiting for `approval_id`: what the caller sees and what the
/// audit row keeps.
pub fn awaiting(e: CoordError, approval_id: &str) -> CoordError {
    let message = format!(
        "{}; approval requested: {approval_id} (a person decides it, in the dashboard or in their own terminal, not from an agent's session; then the same request passes once)",
        e.message
    );
    CoordError { message, ..e }
        .with_detail("approval_required", true)
        .with_detail("approval_id", approval_id)
}

/// JSON with object keys sorted at every depth, so the same parameters always hash the
/// same whatever order they were written in.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&m[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Hex SHA-256 of the canonical JSON of `parameters`.
pub fn params_hash(parameters: &Value) -> String {
    let text = serde_json::to_string(&canonical(parameters)).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new approval id.
pub fn new_approval_id() -> String {
    format!("apr_{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    fn at(min: i64) -> Timestamp {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + minutes(min)
    }

    fn item(status: ApprovalStatus, expires: i64) -> Approval {
        Approval {
            approval_id: "apr_1".into(),
            agent_id: "worker".into(),
            agent_type: "claude_code".into(),
            operation: "acquire_lock".into(),
            params_hash: params_hash(&json!({"file_path": "a"})),
            parameters: json!({"file_path": "a"}),
            error: "resource_limit_exceeded".into(),
            reason: "over".into(),
            status,
            requested_at: at(0),
            expires_at: at(expires),
            decided_by: None,
            decided_at: None,
            note: None,
            used_at: None,
        }
    }

    fn decision(d: Decision) -> NewDecision {
        NewDecision {
            approval_id: "apr_1".into(),
            decision: d,
            note: None,
            valid_minutes: 30,
        }
    }

    #[test]
    fn hash_ignores_key_order_but_not_values() {
        let a = params_hash(&json!({"a": 1, "b": {"y": [1, 2], "x": "s"}}));
        let b = params_hash(&json!({"b": {"x": "s", "y": [1, 2]}, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, params_hash(&json!({"a": 1, "b": {"y": [2, 1], "x": "s"}})));
        assert_ne!(a, params_hash(&json!({"a": "1", "b": {"y": [1, 2], "x": "s"}})));
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn expiry_applies_to_pending_and_approved_only() {
        use ApprovalStatus::*;
        let cases = [
            (Pending, 10, 5, Pending),
            (Pending, 10, 10, Expired),
            (Approved, 10, 9, Approved),
            (Approved, 10, 11, Expired),
            (Denied, 10, 11, Denied),
            (Used, 10, 11, Used),
        ];
        for (stored, expires, now, want) in cases {
            assert_eq!(
                effective_status(stored, at(expires), at(now)),
                want,
                "{stored:?} at {now}"
            );
        }
    }

    #[test]
    fn decisions() {
        use ApprovalStatus::*;
        let boss = Identity {
            agent_id: "boss".into(),
            agent_type: "cli".into(),
        };
        let me = Identity {
            agent_id: "worker".into(),
            agent_type: "cli".into(),
        };
        type Want = Result<(ApprovalStatus, i64), ErrorCode>;
        let cases: [(ApprovalStatus, i64, &Identity, Decision, Want); 6] = [
            (Pending, 100, &boss, Decision::Approve, Ok((Approved, 40))),
            (Pending, 100, &boss, Decision::Deny, Ok((Denied, 100))),
            (
                Pending,
                100,
                &me,
                Decision::Approve,
                Err(ErrorCode::CannotApproveOwnRequest),
            ),
            (Pending, 5, &boss, Decision::Approve, Err(ErrorCode::ApprovalNotPending)),
            (Approved, 100, &boss, Decision::Deny, Err(ErrorCode::ApprovalNotPending)),
            (Used, 100, &boss, Decision::Approve, Err(ErrorCode::ApprovalNotPending)),
        ];
        for (stored, expires, who, d, want) in cases {
            let got = decide(&item(stored, expires), who, &decision(d), at(10))
                .map(|x| (x.status, (x.expires_at - at(0)).num_minutes()))
                .map_err(|e| e.code);
            assert_eq!(got, want, "{stored:?} {d:?} by {}", who.agent_id);
        }
    }

    #[test]
    fn validation() {
        let ok = |v: Option<i64>| {
            validate_decision(DecideApprovalRequest {
                approval_id: " apr_1 ".into(),
                decision: Decision::Approve,
                note: None,
                valid_minutes: v,
            })
        };
        assert_eq!(ok(None).unwrap().valid_minutes, DEFAULT_GRANT_MINUTES);
        assert_eq!(ok(None).unwrap().approval_id, "apr_1");
        assert_eq!(ok(Some(0)).unwrap_err().field.as_deref(), Some("valid_minutes"));
        assert_eq!(
            ok(Some(MAX_GRANT_MINUTES + 1)).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            validate_approval_id("  ").unwrap_err().field.as_deref(),
            Some("approval_id")
        );
        let f = validate_filter(ListApprovalsRequest {
            limit: Some(0),
            ..Default::default()
        });
        assert_eq!(f.unwrap_err().field.as_deref(), Some("limit"));
    }

    #[test]
    fn awaiting_marks_the_refusal() {
        let e = awaiting(CoordError::new(ErrorCode::ResourceLimitExceeded, "over"), "apr_9");
        let v = e.to_value();
        assert_eq!(v["approval_required"], true);
        assert_eq!(v["approval_id"], "apr_9");
        assert_eq!(v["error"], "resource_limit_exceeded");
        assert!(approvable(&e, true));
        assert!(!approvable(&e, false), "limits only with escalation");
        assert!(approvable(
            &CoordError::new(ErrorCode::DestructiveOperationBlocked, "no"),
            false
        ));
        assert!(!approvable(
            &CoordError::new(ErrorCode::OperationNotPermitted, "no"),
            true
        ));
    }
}
