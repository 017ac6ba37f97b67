//! The audit trail: one append-only row per operation, refused ones included.

use crate::error::{CoordResult, ErrorCode, ErrorKind};
use crate::identity::Identity;
use crate::time::Timestamp;
use crate::validate::{self, MAX_SHORT_TEXT, without_nul};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const DEFAULT_AUDIT_LIMIT: i64 = 100;
/// Results larger than this are stored as a summary: listings (locks, tasks, audit
/// entries) would otherwise be copied into every audit row that reads them.
pub const MAX_AUDIT_RESULT_BYTES: usize = 4096;
/// Parameters are kept whole up to this size (what was asked matters more than what
/// was answered); larger ones are summarised the same way.
pub const MAX_AUDIT_PARAMETERS_BYTES: usize = 16 * 1024;
pub const MAX_AUDIT_LIMIT: i64 = 10_000;

/// A row about to be appended. The store stamps the time (its clock) and the id.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    pub agent: Identity,
    pub operation: &'static str,
    pub parameters: Value,
    pub result: Value,
    pub success: bool,
    pub error_code: Option<&'static str>,
    pub duration_ms: f64,
    /// The managed key the request came with, and its cloud session or task.
    pub origin: Option<crate::keys::KeyOrigin>,
}

impl AuditRecord {
    /// Builds the row for an outcome: the wire JSON of the result or of the error.
    /// `success` is the wire `success` flag, so a blocked lock counts as a failure.
    /// Replaces the value of every key named in `fields`, at any depth of the parameters
    /// and the result, with `"[redacted]"`: the audit trail is readable by every agent
    /// with a key, and some fields (message bodies) are for their recipients only.
    pub fn redacted(mut self, fields: &[&str]) -> AuditRecord {
        redact(&mut self.parameters, fields);
        redact(&mut self.result, fields);
        self
    }

    /// Marks the row of an operation that passed by spending approval `id` (over a
    /// limit, say): the result says which grant let it through.
    pub fn spending(mut self, approval_id: Option<&str>) -> AuditRecord {
        if let (Some(id), Value::Object(map)) = (approval_id, &mut self.result) {
            map.insert("approval_used".into(), Value::String(id.into()));
        }
        self
    }

    pub fn of<T: Serialize>(
        agent: Identity,
        operation: &'static str,
        parameters: Value,
        outcome: Result<&T, &crate::CoordError>,
        duration_ms: f64,
    ) -> AuditRecord {
        AuditRecord::of_redacted(agent, operation, parameters, outcome, duration_ms, &[])
    }

    /// [`AuditRecord::of`] with the values of `fields` replaced by `"[redacted]"` first
    /// (before a large value is summarised, so no prefix of it is kept).
    pub fn of_redacted<T: Serialize>(
        agent: Identity,
        operation: &'static str,
        mut parameters: Value,
        outcome: Result<&T, &crate::CoordError>,
        duration_ms: f64,
        fields: &[&str],
    ) -> AuditRecord {
        let (mut result, error_code) = match outcome {
            Ok(v) => (serde_json::to_value(v).unwrap_or(Value::Null), None),
            Err(e) => (e.to_value(), Some(e.code.as_str())),
        };
        redact(&mut parameters, fields);
        redact(&mut result, fields);
        let success = result
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(error_code.is_none());
        let result = summarise(without_nul(result), MAX_AUDIT_RESULT_BYTES);
        // Parameters are recorded as received, so they may hold what validation refused
        // (a NUL, an oversized payload): make them storable in every store.
        let parameters = summarise(without_nul(parameters), MAX_AUDIT_PARAMETERS_BYTES);
        AuditRecord {
            agent,
            operation,
            parameters,
            result,
            success,
            error_code,
            duration_ms,
            origin: None,
        }
    }

    pub fn with_origin(mut self, origin: Option<crate::keys::KeyOrigin>) -> AuditRecord {
        self.origin = origin;
        self
    }

    /// Names the row's event (an operation's [`AuditEvents`]): `event` in the result,
    /// with `reason` (the error code) for a refusal.
    pub fn with_events(mut self, events: Option<AuditEvents>) -> AuditRecord {
        if let (Some(events), Value::Object(map)) = (events, &mut self.result) {
            match self.error_code {
                None => {
                    map.insert("event".into(), events.success.into());
                }
                Some(code) => {
                    map.insert("event".into(), events.denied.into());
                    map.insert("reason".into(), code.into());
                }
            }
        }
        self
    }

    /// Marks the row of a call refused before the operation could run — an invalid
    /// identity, no access, a profile that does not allow it (spec 000's
    /// `tool_execution_denied`: `tool`, `reason`).
    pub fn tool_denied(mut self) -> AuditRecord {
        if let Value::Object(map) = &mut self.result {
            map.insert("event".into(), TOOL_EXECUTION_DENIED.into());
            map.insert("tool".into(), self.operation.into());
            map.insert("reason".into(), self.error_code.unwrap_or("denied").into());
        }
        self
    }
}

/// The event names an operation's audit rows carry (spec 000's, for the file tools):
/// one for what succeeded, one for what was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditEvents {
    pub success: &'static str,
    pub denied: &'static str,
}

/// The event of a call refused before its operation ran.
pub const TOOL_EXECUTION_DENIED: &str = "tool_execution_denied";

/// Replaces the value of every key named in `fields`, at any depth, with `"[redacted]"`.
pub fn redact(v: &mut Value, fields: &[&str]) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if fields.contains(&k.as_str()) && !child.is_null() {
                    *child = Value::String("[redacted]".into());
                } else {
                    redact(child, fields);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact(i, fields)),
        _ => {}
    }
}

/// Values nested deeper than this are stored as a marker: JSON parsers stop at 128
/// levels, and every stored row must read back (the chain's verification reads it, and
/// a result that echoes its input is a few levels deeper than the input).
pub const MAX_AUDIT_DEPTH: usize = 64;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Keeps a result whole when small; otherwise keeps its scalar fields, replaces lists
/// by their length and nested objects by a marker, and says it did so. A value nested
/// deeper than [`MAX_AUDIT_DEPTH`] becomes a marker.
pub fn summarise(result: Value, limit: usize) -> Value {
    if depth(&result) > MAX_AUDIT_DEPTH {
        return serde_json::json!({"summarised": true, "reason": "nested deeper than 64 levels"});
    }
    let bytes = serde_json::to_string(&result).map(|s| s.len()).unwrap_or(0);
    if bytes <= limit {
        return result;
    }
    let mut out = serde_json::Map::new();
    if let Value::Object(map) = result {
        for (k, v) in map {
            let short = match v {
                Value::Array(items) => serde_json::json!({ "count": items.len() }),
                Value::Object(_) => Value::String("(omitted)".into()),
                Value::String(s) if s.len() > 256 => Value::String(s.chars().take(256).collect()),
                other => other,
            };
            out.insert(k, short);
        }
    }
    out.insert("summarised".into(), Value::Bool(true));
    out.insert("bytes".into(), Value::from(bytes));
    Value::Object(out)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQueryRequest {
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub operation: Option<String>,
    /// Entries at or after this time.
    #[serde(default)]
    pub since: Option<Timestamp>,
    /// Entries before this time.
    #[serde(default)]
    pub until: Option<Timestamp>,
    /// Only successful (`true`) or only failed/refused (`false`) operations.
    #[serde(default)]
    pub success: Option<bool>,
    /// Only operations that were `allowed`, `refused` (by a rule, a lock, a profile, a
    /// guardrail or bad input) or failed with an `error` of the server or its database.
    #[serde(default)]
    pub result: Option<AuditOutcome>,
    /// Only operations let through as elevated (`true`), or only the others.
    #[serde(default)]
    pub elevated: Option<bool>,
    /// Only operations on this file: the `path` or `file_path` they were given (a lock,
    /// a file read or write), repository-relative as they store it.
    #[serde(default)]
    pub path: Option<String>,
    /// Leave out the rows of agents of this type (the dashboard leaves out its own).
    #[serde(default)]
    pub exclude_agent_type: Option<String>,
    /// Entries after this id, oldest first: page through the whole trail (an export) by
    /// passing the last id you got. Without it, entries come newest first.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub after_id: Option<i64>,
    /// At most this many; default 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<i64>,
}

/// What became of an operation, as `query_audit` filters it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    Allowed,
    Refused,
    Error,
}

impl AuditOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Allowed => "allowed",
            AuditOutcome::Refused => "refused",
            AuditOutcome::Error => "error",
        }
    }
}

/// The error codes that make an outcome an `error` rather than a refusal: failures of
/// the server or its database, as a SQL list (`'a', 'b'`).
pub fn error_codes_sql() -> String {
    ErrorCode::ALL
        .iter()
        .filter(|c| matches!(c.kind(), ErrorKind::Unavailable | ErrorKind::Internal))
        .map(|c| format!("'{}'", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, PartialEq)]
pub struct AuditFilter {
    pub agent_id: Option<String>,
    pub operation: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub success: Option<bool>,
    pub outcome: Option<AuditOutcome>,
    pub elevated: Option<bool>,
    pub path: Option<String>,
    pub exclude_agent_type: Option<String>,
    pub after_id: Option<i64>,
    pub limit: i64,
}

impl AuditFilter {
    /// Restricts the filter to the caller's own rows unless it may read everyone's
    /// (`audit_admin`); asking for another agent's rows without that is refused.
    pub fn scoped(mut self, who: &Identity, audit_admin: bool) -> CoordResult<AuditFilter> {
        if audit_admin {
            return Ok(self);
        }
        match &self.agent_id {
            Some(other) if other != &who.agent_id => Err(crate::CoordError::new(
                ErrorCode::InsufficientTrustLevel,
                format!(
                    "only an administrator (a trust-4 profile or an operator key) reads other agents' audit rows; \
                     you may read your own ({})",
                    who.agent_id
                ),
            )
            .with_detail("required", crate::profiles::MAX_TRUST)
            .with_detail("permission", "manage_audit")),
            _ => {
                self.agent_id = Some(who.agent_id.clone());
                Ok(self)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditEntry {
    pub id: i64,
    pub timestamp: Timestamp,
    pub agent_id: String,
    pub agent_type: String,
    pub operation: String,
    pub parameters: Value,
    pub result: Value,
    pub success: bool,
    #[serde(default)]
    pub error_code: Option<String>,
    pub duration_ms: f64,
    /// The managed key the request came with, and the cloud session or task it was
    /// issued for (absent for local processes and operator keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::keys::KeyOrigin>,
    /// The row's place in the hash chain (absent for rows written before the chain
    /// existed): `coord audit verify` checks it; an export keeps it, so the chain can
    /// be checked elsewhere too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainLink>,
}

/// A row's place in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChainLink {
    /// Position in the chain: 1, 2, 3, … without gaps.
    pub seq: i64,
    /// The hash of the row at `seq - 1` (or of the checkpoint that replaced it).
    pub prev_hash: String,
    /// SHA-256 (hex) of this row's canonical content and its link.
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditQueryResult {
    pub entries: Vec<AuditEntry>,
}

pub fn validate_audit_query(req: AuditQueryRequest) -> CoordResult<AuditFilter> {
    if let (Some(s), Some(u)) = (req.since, req.until)
        && s >= u
    {
        return Err(crate::CoordError::field(
            ErrorCode::InvalidArgument,
            "until",
            "until must be later than since",
        ));
    }
    Ok(AuditFilter {
        agent_id: validate::optional_text("agent_id", req.agent_id, MAX_SHORT_TEXT)?,
        operation: validate::optional_text("operation", req.operation, MAX_SHORT_TEXT)?,
        since: req.since,
        until: req.until,
        success: req.success,
        outcome: req.result,
        elevated: req.elevated,
        path: validate::optional_text("path", req.path, crate::path::MAX_PATH_LEN)?,
        exclude_agent_type: validate::optional_text("exclude_agent_type", req.exclude_agent_type, MAX_SHORT_TEXT)?,
        after_id: match req.after_id {
            Some(id) if id < 0 => {
                return Err(crate::CoordError::field(
                    ErrorCode::InvalidArgument,
                    "after_id",
                    "after_id is an audit row id (0 or more)",
                ));
            }
            id => id,
        },
        limit: validate::int_in_range(
            "limit",
            req.limit,
            DEFAULT_AUDIT_LIMIT,
            1,
            MAX_AUDIT_LIMIT,
            ErrorCode::InvalidArgument,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CoordError;

    #[test]
    fn success_follows_the_wire_flag() {
        let who = Identity {
            agent_id: "a".into(),
            agent_type: "t".into(),
        };
        let blocked = serde_json::json!({"success": false, "action": "blocked"});
        let r = AuditRecord::of(who.clone(), "acquire_lock", Value::Null, Ok(&blocked), 1.0);
        assert!(!r.success);
        assert_eq!(r.error_code, None);
        let listed = serde_json::json!({"locks": []});
        assert!(AuditRecord::of(who.clone(), "check_locks", Value::Null, Ok(&listed), 1.0).success);
        let err = CoordError::new(ErrorCode::NotLockOwner, "no");
        let r = AuditRecord::of::<Value>(who, "release_lock", Value::Null, Err(&err), 1.0);
        assert!(!r.success);
        assert_eq!(r.error_code, Some("not_lock_owner"));
        assert_eq!(r.result["error"], "not_lock_owner");
    }

    #[test]
    fn deep_values_become_a_marker() {
        let mut deep = Value::Null;
        for _ in 0..100 {
            deep = serde_json::json!([deep]);
        }
        let s = summarise(serde_json::json!({"input_data": deep}), MAX_AUDIT_RESULT_BYTES);
        assert_eq!(s["summarised"], true);
        let text = serde_json::to_string(&s).unwrap();
        assert!(serde_json::from_str::<Value>(&text).is_ok());
    }

    #[test]
    fn large_results_are_summarised() {
        let small = serde_json::json!({"locks": [1, 2]});
        assert_eq!(summarise(small.clone(), MAX_AUDIT_RESULT_BYTES), small);
        let big = serde_json::json!({"success": true, "entries": vec!["x".repeat(100); 100], "nested": {"a": 1}});
        let s = summarise(big, MAX_AUDIT_RESULT_BYTES);
        assert_eq!(s["entries"], serde_json::json!({"count": 100}));
        assert_eq!(s["success"], true);
        assert_eq!(s["nested"], "(omitted)");
        assert_eq!(s["summarised"], true);
    }
}
