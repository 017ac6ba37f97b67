//! Who is calling (authentication only; what a caller may do is decided by the service's
//! pipeline with `coord_domain::access::authorize`): the API key (`X-API-Key` or
//! `Authorization: Bearer`), checked first, then the identity the request names
//! (`X-Agent-Id`/`X-Agent-Type` headers or `agent_id`/`agent_type` in the body). Requests
//! without a key act as `anonymous`, whatever they name, so nobody can write audit rows
//! in another agent's name without that agent's key.
//!
//! Environment keys are compared in constant time (against every configured key, with
//! no early exit); managed keys are looked up by their SHA-256, which reveals nothing
//! about other keys. A key bound to an identity acts only as that identity.

use crate::config::ApiConfig;
use axum::http::HeaderMap;
use coord_domain::access::Credential;
use coord_domain::keys::KeyOrigin;
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::Server;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a client inside an agent's session sends (coord-remote's `SESSION_HEADER`).
pub const SESSION_HEADER: &str = "x-coord-session";

/// Identity of requests that name none.
pub const ANONYMOUS_ID: &str = "anonymous";
pub const ANONYMOUS_TYPE: &str = "http";

pub struct Auth {
    env_keys: Vec<([u8; 32], Option<Caller>)>,
    require_auth_for_reads: bool,
    local_peers: bool,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.trim().as_bytes()).into()
}

fn unauthorized(message: &str) -> CoordError {
    CoordError::new(ErrorCode::Unauthorized, message)
}

impl Auth {
    pub fn new(config: &ApiConfig) -> Auth {
        // A key listed in both variables is bound: the binding is the stricter reading, and
        // listing a bound key among the plain keys too is the usual way to configure it.
        let bound = |k: &String| config.key_identities.keys().any(|b| b.trim() == k.trim());
        let mut env_keys: Vec<([u8; 32], Option<Caller>)> = config
            .api_keys
            .iter()
            .filter(|k| !bound(k))
            .map(|k| (digest(k), None))
            .collect();
        env_keys.extend(
            config
                .key_identities
                .iter()
                .map(|(k, who)| (digest(k), Some(who.clone()))),
        );
        Auth {
            env_keys,
            require_auth_for_reads: config.require_auth_for_reads,
            local_peers: config.local_peers,
        }
    }

    /// `Some(binding)` when `key` is one of the configured keys.
    fn env_key(&self, key: &str) -> Option<Option<Caller>> {
        let presented = digest(key);
        let mut found = None;
        for (known, bound) in &self.env_keys {
            let hit: bool = known.ct_eq(&presented).into();
            if hit && found.is_none() {
                found = Some(bound.clone());
            }
        }
        found
    }
}

pub fn presented_key(headers: &HeaderMap) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(k) = header("x-api-key").filter(|k| !k.is_empty()) {
        return Some(k.to_string());
    }
    let auth = header("authorization")?;
    let (scheme, token) = auth.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim().to_string())
}

/// What the presented key proved.
#[derive(Debug, Clone, PartialEq)]
pub enum Authenticated {
    /// No key: acts as `anonymous`, whatever it names.
    Anonymous,
    /// An operator key (`COORDINATION_API_KEYS`): acts as the identity the request names.
    Operator,
    /// No key, on the per-repository socket, whose listener admits only processes of the
    /// server's own user (checked by the kernel): a local process, which could open the
    /// database itself, acting as the identity it names.
    Local,
    /// A key bound to one identity (environment or managed): acts only as it. A managed
    /// key also says which key it is and the cloud session or task it was issued for.
    Bound(Caller, Option<KeyOrigin>),
}

impl Authenticated {
    /// The credential the service's access rule judges.
    pub fn credential(&self) -> Credential {
        match self {
            Authenticated::Anonymous => Credential::Anonymous,
            Authenticated::Operator => Credential::Operator,
            Authenticated::Local => Credential::Local,
            Authenticated::Bound(..) => Credential::Bound,
        }
    }

    /// The credential of a request with `headers`: this one, taken down to `Session`
    /// when the client says it runs inside an agent's session (`X-Coord-Session`; a
    /// header can only ever weaken a credential, so it needs no proof).
    pub fn credential_in(&self, headers: &HeaderMap) -> Credential {
        let base = self.credential();
        match base {
            Credential::Local | Credential::Operator | Credential::Bound if headers.contains_key(SESSION_HEADER) => {
                Credential::Session
            }
            other => other,
        }
    }

    /// The managed key the request came with, for its audit row.
    pub fn origin(&self) -> Option<KeyOrigin> {
        match self {
            Authenticated::Bound(_, origin) => origin.clone(),
            _ => None,
        }
    }
}

/// Checks the key before anything of the request is read: an invalid, expired or
/// revoked key is 401 whatever the request holds. No key is anonymous, unless the
/// server requires a key for every request.
pub async fn authenticate(auth: &Auth, server: &dyn Server, headers: &HeaderMap) -> CoordResult<Authenticated> {
    let Some(key) = presented_key(headers) else {
        return if auth.local_peers {
            Ok(Authenticated::Local)
        } else if auth.require_auth_for_reads {
            Err(unauthorized(
                "an API key is required: send X-API-Key or Authorization: Bearer",
            ))
        } else {
            Ok(Authenticated::Anonymous)
        };
    };
    match auth.env_key(&key) {
        Some(None) => Ok(Authenticated::Operator),
        Some(Some(bound)) => Ok(Authenticated::Bound(bound, None)),
        // An expired or revoked key is refused here, saying which and when.
        None => match server.authenticate_key(&key).await? {
            Some((bound, origin)) => Ok(Authenticated::Bound(bound, Some(origin))),
            None => Err(unauthorized(
                "the API key is not one this server issued (check COORDINATION_API_KEY)",
            )),
        },
    }
}

/// The identity claims of a request: `agent_id`/`agent_type` in the body, the
/// `X-Agent-Id`/`X-Agent-Type` headers, and the `X-Agent-Default-Id/Type` headers a client
/// sends for identity it was not told explicitly.
#[derive(Debug, Default, Clone)]
pub struct Claims {
    pub body_id: Option<String>,
    pub body_type: Option<String>,
    pub header_id: Option<String>,
    pub header_type: Option<String>,
    pub default_id: Option<String>,
    pub default_type: Option<String>,
}

impl Claims {
    pub fn of(headers: &HeaderMap, body_id: Option<String>, body_type: Option<String>) -> Claims {
        // Present-but-blank names an invalid identity (refused by the service), not none.
        let header = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        Claims {
            body_id,
            body_type,
            header_id: header("x-agent-id"),
            header_type: header("x-agent-type"),
            default_id: header("x-agent-default-id"),
            default_type: header("x-agent-default-type"),
        }
    }

    /// Whether the request names any identity at all.
    pub fn names_anyone(&self) -> bool {
        self.body_id.is_some()
            || self.body_type.is_some()
            || self.header_id.is_some()
            || self.header_type.is_some()
            || self.default_id.is_some()
            || self.default_type.is_some()
    }

    fn named(self) -> Caller {
        Caller::new(
            self.body_id
                .or(self.header_id)
                .or(self.default_id)
                .unwrap_or_else(|| ANONYMOUS_ID.into()),
            self.body_type
                .or(self.header_type)
                .or(self.default_type)
                .unwrap_or_else(|| ANONYMOUS_TYPE.into()),
        )
    }
}

/// The identity a request acts as, given what its key allows.
pub fn identity(authenticated: &Authenticated, claims: Claims) -> CoordResult<Caller> {
    match authenticated {
        Authenticated::Anonymous => Ok(Caller::new(ANONYMOUS_ID, ANONYMOUS_TYPE)),
        Authenticated::Operator | Authenticated::Local => Ok(claims.named()),
        Authenticated::Bound(bound, _) => {
            // Every explicit claim must match; defaults are never held against a binding.
            let clash = |asked: &Option<String>, actual: &str| asked.as_deref().is_some_and(|a| a.trim() != actual);
            let ids = [&claims.body_id, &claims.header_id];
            let types = [&claims.body_type, &claims.header_type];
            if ids.iter().any(|a| clash(a, &bound.agent_id)) || types.iter().any(|a| clash(a, &bound.agent_type)) {
                return Err(CoordError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "this API key is bound to {} ({}) and cannot act as another agent",
                        bound.agent_id, bound.agent_type
                    ),
                )
                .with_detail("bound_agent_id", bound.agent_id.clone()));
            }
            Ok(bound.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_either_header() {
        let mut h = HeaderMap::new();
        assert_eq!(presented_key(&h), None);
        h.insert("authorization", "Bearer  abc ".parse().unwrap());
        assert_eq!(presented_key(&h).as_deref(), Some("abc"));
        h.insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(presented_key(&h), None);
        h.insert("x-api-key", "xyz".parse().unwrap());
        assert_eq!(presented_key(&h).as_deref(), Some("xyz"));
    }

    #[test]
    fn environment_keys_match_exactly() {
        let mut config = ApiConfig {
            api_keys: vec!["open-key".into()],
            ..ApiConfig::default()
        };
        config
            .key_identities
            .insert("bound-key".into(), Caller::new("agent-1", "codex"));
        let auth = Auth::new(&config);
        assert_eq!(auth.env_key("open-key"), Some(None));
        assert_eq!(auth.env_key("bound-key"), Some(Some(Caller::new("agent-1", "codex"))));
        assert_eq!(auth.env_key("open-ke"), None);
        config.api_keys.push("bound-key".into());
        let auth = Auth::new(&config);
        assert_eq!(
            auth.env_key("bound-key"),
            Some(Some(Caller::new("agent-1", "codex"))),
            "a key in both variables stays bound"
        );
        assert_eq!(auth.env_key(""), None);
    }
}
