//! Managed API keys: random secrets bound to an agent identity, stored only as a hash,
//! optionally expiring (task-derived credentials for cloud agents), revocable.

use crate::error::{CoordResult, ErrorCode};
use crate::identity::{Caller, Identity};
use crate::time::Timestamp;
use crate::validate;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Prefix of every key coord generates, so leaked keys are recognisable.
pub const KEY_PREFIX: &str = "coord_";
pub const MAX_KEY_LIFETIME_MINUTES: i64 = 366 * 24 * 60;
/// A key for one cloud session or task is short-lived: it ends with that work, not a
/// service account (a key without a session or task is one).
pub const MAX_WORK_KEY_MINUTES: i64 = 24 * 60;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKeyRequest {
    /// The agent id every request made with this key acts as.
    #[schemars(length(min = 1, max = 128), regex(pattern = r"\S"))]
    pub bound_agent_id: String,
    /// The agent type every request made with this key acts as.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub bound_agent_type: String,
    /// Lifetime in minutes (at most a year); never expires when absent. A key for a
    /// session or task must expire, within a day.
    #[serde(default)]
    #[schemars(range(min = 1, max = 527040))]
    pub expires_in_minutes: Option<i64>,
    /// The cloud session the key is for (Claude Code on the web): recorded in every
    /// audit row the key causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub session_id: Option<String>,
    /// The task the key is for (Codex Cloud): recorded in every audit row the key causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub task_id: Option<String>,
}

/// Where a request authenticated by a managed key came from: the key and the cloud
/// session or task it was issued for. Every audit row the key causes carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KeyOrigin {
    pub key_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// When the key was issued: the start of its agent's execution time. Not part of the
    /// audit row (the key's own row says it).
    #[serde(skip)]
    pub issued_at: Option<Timestamp>,
}

/// What a presented managed key is, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMatch {
    pub agent: Identity,
    pub origin: KeyOrigin,
    pub status: KeyStatus,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

impl KeyMatch {
    /// The identity and origin of a live key, or the 401 that says why it is not.
    pub fn live(self) -> CoordResult<(Identity, KeyOrigin)> {
        let refused = |why: String| {
            crate::CoordError::new(ErrorCode::Unauthorized, why).with_detail("key_id", self.origin.key_id.as_str())
        };
        match (self.status, self.expires_at, self.revoked_at) {
            (KeyStatus::Active, _, _) => Ok((self.agent, self.origin)),
            (KeyStatus::Revoked, _, Some(at)) => Err(refused(format!(
                "API key {} was revoked at {}; ask an operator for a new one",
                self.origin.key_id,
                at.format("%Y-%m-%d %H:%M:%SZ")
            ))),
            (_, Some(at), _) => Err(refused(format!(
                "API key {} expired at {}; ask an operator for a new one (coord key issue)",
                self.origin.key_id,
                at.format("%Y-%m-%d %H:%M:%SZ")
            ))),
            _ => Err(refused(format!("API key {} is not active", self.origin.key_id))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreateApiKeyResult {
    pub success: bool,
    /// Public handle of the key, for listing and revoking.
    pub key_id: String,
    /// The secret itself. Shown once: only its hash is stored.
    pub api_key: String,
    pub agent_id: String,
    pub agent_type: String,
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    Active,
    Expired,
    Revoked,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiKeyInfo {
    pub key_id: String,
    pub agent_id: String,
    pub agent_type: String,
    pub created_by: String,
    pub created_at: Timestamp,
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    #[serde(default)]
    pub revoked_at: Option<Timestamp>,
    pub status: KeyStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListApiKeysResult {
    pub keys: Vec<ApiKeyInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeApiKeyRequest {
    /// The `key_id` `create_api_key` returned.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub key_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RevokeApiKeyResult {
    pub success: bool,
    pub key_id: String,
}

impl ApiKeyInfo {
    /// The key as authentication sees it.
    pub fn into_match(self) -> KeyMatch {
        KeyMatch {
            agent: Identity {
                agent_id: self.agent_id,
                agent_type: self.agent_type,
            },
            origin: KeyOrigin {
                key_id: self.key_id,
                session_id: self.session_id,
                task_id: self.task_id,
                issued_at: Some(self.created_at),
            },
            status: self.status,
            expires_at: self.expires_at,
            revoked_at: self.revoked_at,
        }
    }
}

/// A validated key, ready for a store (the secret is not in it).
#[derive(Debug, Clone, PartialEq)]
pub struct NewApiKey {
    pub key_id: String,
    pub key_hash: String,
    pub agent: Identity,
    pub expires_in_minutes: Option<i64>,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
}

/// Hex SHA-256 of a presented key: what is stored and looked up.
pub fn hash_key(key: &str) -> String {
    Sha256::digest(key.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn status_of(expires_at: Option<Timestamp>, revoked_at: Option<Timestamp>, now: Timestamp) -> KeyStatus {
    match (revoked_at, expires_at) {
        (Some(_), _) => KeyStatus::Revoked,
        (None, Some(e)) if e <= now => KeyStatus::Expired,
        _ => KeyStatus::Active,
    }
}

/// Validates a creation request; `secret` and `key_id` are generated by the caller.
pub fn validate_new_key(req: CreateApiKeyRequest, key_id: String, secret: &str) -> CoordResult<NewApiKey> {
    let agent = Caller::new(req.bound_agent_id, req.bound_agent_type).validate()?;
    let expires_in_minutes = match req.expires_in_minutes {
        None => None,
        Some(m) => Some(validate::int_in_range(
            "expires_in_minutes",
            Some(m),
            m,
            1,
            MAX_KEY_LIFETIME_MINUTES,
            ErrorCode::InvalidArgument,
        )?),
    };
    let session_id = validate::optional_text("session_id", req.session_id, 128)?;
    let task_id = validate::optional_text("task_id", req.task_id, 128)?;
    if session_id.is_some() || task_id.is_some() {
        work_key_lifetime(expires_in_minutes)?;
    }
    Ok(NewApiKey {
        key_id,
        key_hash: hash_key(secret),
        agent,
        expires_in_minutes,
        session_id,
        task_id,
    })
}

/// A key issued for one session or task must expire within [`MAX_WORK_KEY_MINUTES`].
fn work_key_lifetime(expires_in_minutes: Option<i64>) -> CoordResult<()> {
    match expires_in_minutes {
        Some(m) if m <= MAX_WORK_KEY_MINUTES => Ok(()),
        Some(m) => Err(crate::CoordError::field(
            ErrorCode::InvalidArgument,
            "expires_in_minutes",
            format!(
                "a key for one session or task is short-lived: at most 24h ({MAX_WORK_KEY_MINUTES} minutes), not {m}; a long-lived key is bound to no session or task (coord key create)"
            ),
        )),
        None => Err(crate::CoordError::field(
            ErrorCode::InvalidArgument,
            "expires_in_minutes",
            format!(
                "a key for one session or task must expire: give expires_in_minutes (at most {MAX_WORK_KEY_MINUTES})"
            ),
        )),
    }
}

pub fn validate_key_id(key_id: &str) -> CoordResult<String> {
    validate::required_text("key_id", key_id, 64).map(|s| s.trim().to_string())
}

/// The refusal for a key id nothing is stored under.
pub fn key_not_found(key_id: &str) -> crate::CoordError {
    crate::CoordError::new(crate::ErrorCode::NotFound, format!("no API key {key_id}")).with_detail("key_id", key_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn key_rules() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let later = now + chrono::Duration::minutes(1);
        assert_eq!(status_of(None, None, now), KeyStatus::Active);
        assert_eq!(status_of(Some(later), None, now), KeyStatus::Active);
        assert_eq!(status_of(Some(now), None, now), KeyStatus::Expired);
        assert_eq!(status_of(Some(later), Some(now), now), KeyStatus::Revoked);
        assert_eq!(
            hash_key("abc"),
            hash_key(" abc "),
            "surrounding whitespace is not part of a key"
        );
        assert_eq!(hash_key("abc").len(), 64);
        let ok = CreateApiKeyRequest {
            bound_agent_id: "a".into(),
            bound_agent_type: "codex".into(),
            expires_in_minutes: Some(120),
            session_id: Some("s".into()),
            task_id: None,
        };
        assert!(validate_new_key(ok.clone(), "k".into(), "s").is_ok());
        let e = validate_new_key(
            CreateApiKeyRequest {
                expires_in_minutes: Some(0),
                ..ok.clone()
            },
            "k".into(),
            "s",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("expires_in_minutes"));
        let e = validate_new_key(
            CreateApiKeyRequest {
                bound_agent_id: "".into(),
                ..ok
            },
            "k".into(),
            "s",
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidIdentity);
    }

    #[test]
    fn a_key_for_one_session_or_task_is_short_lived() {
        let base = CreateApiKeyRequest {
            bound_agent_id: "a".into(),
            bound_agent_type: "codex_cloud".into(),
            ..Default::default()
        };
        // (session, task, minutes, accepted)
        let cases = [
            (None, None, None, true),
            (None, None, Some(MAX_KEY_LIFETIME_MINUTES), true),
            (Some("s"), None, Some(MAX_WORK_KEY_MINUTES), true),
            (None, Some("t"), Some(60), true),
            (Some("s"), None, Some(MAX_WORK_KEY_MINUTES + 1), false),
            (None, Some("t"), None, false),
            (Some("s"), Some("t"), Some(60 * 48), false),
            // A blank session names no work: the key is a service account's.
            (Some(" "), None, None, true),
        ];
        for (session, task, minutes, accepted) in cases {
            let req = CreateApiKeyRequest {
                session_id: session.map(String::from),
                task_id: task.map(String::from),
                expires_in_minutes: minutes,
                ..base.clone()
            };
            let got = validate_new_key(req, "k".into(), "s");
            assert_eq!(got.is_ok(), accepted, "{session:?} {task:?} {minutes:?}: {got:?}");
            if let Err(e) = got {
                assert_eq!(e.field.as_deref(), Some("expires_in_minutes"));
            }
        }
    }
}
