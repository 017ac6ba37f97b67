//! Error codes and the one error type every layer returns.
//!
//! On the wire an error is `{"success": false, "error": "<code>", "message": "...", ...}`.
//! Codes are stable snake_case strings: scripts and agents branch on them, so a code is
//! never renamed once shipped.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// How a caller should react to an error; doors map it to exit codes and HTTP statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is malformed or out of range; retrying it unchanged cannot help.
    Input,
    /// The request was valid but the current state refuses it (someone else holds the lock).
    Refused,
    /// The named object does not exist.
    NotFound,
    /// The caller is not allowed to do this (authentication or identity binding).
    Forbidden,
    /// Storage could not be reached or written; retrying later may succeed.
    Unavailable,
    /// A bug or an unexpected state; details are logged, never returned.
    Internal,
}

macro_rules! error_codes {
    ($($variant:ident => $code:literal, $kind:ident;)*) => {
        /// Every error code the coordinator can answer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            pub fn kind(self) -> ErrorKind {
                match self { $(ErrorCode::$variant => ErrorKind::$kind,)* }
            }

            pub fn parse(code: &str) -> Option<ErrorCode> {
                match code { $($code => Some(ErrorCode::$variant),)* _ => None }
            }
        }
    };
}

error_codes! {
    InvalidArgument => "invalid_argument", Input;
    InvalidPath => "invalid_path", Input;
    InvalidIdentity => "invalid_identity", Input;
    InvalidTaskId => "invalid_task_id", Input;
    AmbiguousId => "ambiguous_id", Input;
    InvalidJson => "invalid_json", Input;
    TtlOutOfRange => "ttl_out_of_range", Input;
    PriorityOutOfRange => "priority_out_of_range", Input;
    UnknownDependency => "unknown_dependency", Input;
    PayloadTooLarge => "payload_too_large", Input;
    RequestTimeout => "request_timeout", Input;
    TooManyRequests => "too_many_requests", Refused;
    InvalidGuardrail => "invalid_guardrail", Input;
    NotLockOwner => "not_lock_owner", Refused;
    LockNotHeld => "lock_not_held", Refused;
    NotTaskOwner => "not_task_owner", Refused;
    TaskNotClaimed => "task_not_claimed", Refused;
    TaskEnded => "task_ended", Refused;
    NoPortsAvailable => "no_ports_available", Refused;
    FileLocked => "file_locked", Refused;
    NoRecipients => "no_recipients", Refused;
    ResourceLimitExceeded => "resource_limit_exceeded", Refused;
    ApprovalNotPending => "approval_not_pending", Refused;
    DestructiveOperationBlocked => "destructive_operation_blocked", Refused;
    CredentialFileProtected => "credential_file_protected", Refused;
    LockRequired => "lock_required", Refused;
    StaleFencingToken => "stale_fencing_token", Refused;
    NotARegularFile => "not_a_regular_file", Refused;
    FileTooLarge => "file_too_large", Refused;
    FileExists => "file_exists", Refused;
    FileChanged => "file_changed", Refused;
    WriteFailed => "write_failed", Refused;
    ReadFailed => "read_failed", Refused;
    ConfinementUnavailable => "confinement_unavailable", Refused;
    AgentNotRunning => "agent_not_running", Refused;
    TaskNotFound => "task_not_found", NotFound;
    NotFound => "not_found", NotFound;
    UnknownOperation => "unknown_operation", NotFound;
    Unauthorized => "unauthorized", Forbidden;
    Forbidden => "forbidden", Forbidden;
    OperationNotPermitted => "operation_not_permitted", Forbidden;
    InsufficientTrustLevel => "insufficient_trust_level", Forbidden;
    CannotApproveOwnRequest => "cannot_approve_own_request", Forbidden;
    SessionAlive => "session_alive", Forbidden;
    PersonRequired => "person_required", Forbidden;
    PathOutsideWorkspace => "path_outside_workspace", Forbidden;
    SymlinkDenied => "symlink_denied", Forbidden;
    HardlinkDenied => "hardlink_denied", Forbidden;
    PermissionDenied => "permission_denied", Forbidden;
    DomainBlocked => "domain_blocked", Forbidden;
    PreflightDenied => "preflight_denied", Forbidden;
    ToolExecutionDenied => "tool_execution_denied", Forbidden;
    SandboxUnavailable => "sandbox_unavailable", Unavailable;
    SpawnUnavailable => "spawn_unavailable", Unavailable;
    AgentStartFailed => "agent_start_failed", Unavailable;
    WorkflowBusy => "workflow_busy", Unavailable;
    DatabaseUnavailable => "database_unavailable", Unavailable;
    PolicyChanged => "policy_changed", Unavailable;
    AuditKeyMissing => "audit_key_missing", Unavailable;
    Internal => "internal_error", Internal;
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        // A newer server may answer a code this client does not know yet: keep the
        // failure visible as an internal error instead of failing to parse the answer.
        Ok(ErrorCode::parse(&s).unwrap_or(ErrorCode::Internal))
    }
}

/// The error every layer returns. `message` is for people; `code` is for programs;
/// `field` names the offending input field; `details` carries extra context keys that
/// are flattened into the wire object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CoordError {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
    /// Boxed: errors travel in every `Result`, so the common path stays small.
    pub details: Box<Map<String, Value>>,
}

pub type CoordResult<T> = Result<T, CoordError>;

impl CoordError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CoordError {
            code,
            message: message.into(),
            field: None,
            details: Box::default(),
        }
    }

    /// An input error that names the offending field.
    pub fn field(code: ErrorCode, field: &str, message: impl Into<String>) -> Self {
        CoordError::new(code, message).with_field(field)
    }

    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }

    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.code.kind()
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        CoordError::new(ErrorCode::DatabaseUnavailable, message)
    }

    /// Internal errors never carry the cause to the caller: it is logged by whoever
    /// builds this error, and the caller sees only that something went wrong.
    pub fn internal() -> Self {
        CoordError::new(
            ErrorCode::Internal,
            "internal error; the coordinator logged the details (for the CLI: rerun with COORD_LOG=error)",
        )
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for CoordError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("success", &false)?;
        m.serialize_entry("error", &self.code)?;
        m.serialize_entry("message", &self.message)?;
        if let Some(f) = &self.field {
            m.serialize_entry("field", f)?;
        }
        for (k, v) in self.details.iter() {
            if !matches!(k.as_str(), "success" | "error" | "message" | "field") {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for CoordError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(d)?;
        let code = match map.remove("error") {
            Some(Value::String(s)) => ErrorCode::parse(&s).unwrap_or(ErrorCode::Internal),
            _ => return Err(de::Error::missing_field("error")),
        };
        map.remove("success");
        let message = match map.remove("message") {
            Some(Value::String(s)) => s,
            _ => code.as_str().replace('_', " "),
        };
        let field = match map.remove("field") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(CoordError {
            code,
            message,
            field,
            details: Box::new(map),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(
                s.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{s} is not snake_case"
            );
            assert_eq!(ErrorCode::parse(s), Some(*code));
        }
    }

    #[test]
    fn wire_shape_flattens_details_and_round_trips() {
        let e = CoordError::field(ErrorCode::TtlOutOfRange, "ttl_minutes", "too long")
            .with_detail("min", 1)
            .with_detail("max", 480);
        let v = e.to_value();
        assert_eq!(
            v,
            serde_json::json!({"success": false, "error": "ttl_out_of_range",
                "message": "too long", "field": "ttl_minutes", "min": 1, "max": 480})
        );
        let back: CoordError = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn unknown_codes_from_a_newer_server_stay_visible() {
        let e: CoordError =
            serde_json::from_value(serde_json::json!({"success": false, "error": "brand_new"})).unwrap();
        assert_eq!(e.code, ErrorCode::Internal);
    }
}
