//! `ApiConfig`: the server's configuration, from the spec's environment variables.

use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use serde::Deserialize;
use std::collections::HashMap;

/// Largest request body accepted (413 beyond): room for a `write_file` of the largest
/// file the file tools take (1 MiB by default), base64-encoded or JSON-escaped.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Server configuration (the spec's `ApiConfig`).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub host: String,
    pub port: u16,
    /// `COORDINATION_API_KEYS`: keys that may act as any identity the request names.
    pub api_keys: Vec<String>,
    /// `COORDINATION_API_KEY_IDENTITIES`: keys bound to one identity; a request naming
    /// another identity with such a key is refused (403).
    pub key_identities: HashMap<String, Caller>,
    /// `COORDINATION_API_REQUIRE_AUTH_FOR_READS`: also demand a key for the read-only
    /// status endpoints (locks, queue, port status), which are public by default.
    pub require_auth_for_reads: bool,
    pub max_body_bytes: usize,
    /// `Host` header values `/mcp` accepts (DNS-rebinding protection); loopback names by
    /// default, extended with the bind host and `COORDINATION_MCP_ALLOWED_HOSTS`.
    pub mcp_allowed_hosts: Vec<String>,
    /// Cancelled when the server shuts down: ends the long-lived MCP streams (SSE), which
    /// would otherwise keep a graceful shutdown waiting forever.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// `COORD_RELEASE_GRACE_SECONDS`: after a client deletes its MCP session, how long
    /// its agent's locks and claimed tasks wait for it to come back (None: until TTL).
    pub release_after: Option<std::time::Duration>,
    /// The dashboard's browser sessions (`coord ui` makes its one-time link here before
    /// the server starts).
    pub ui: std::sync::Arc<crate::ui::sessions::Sessions>,
    /// `GITHUB_WEBHOOK_SECRET` and `GITHUB_WEBHOOK_SECRET_PREVIOUS` (while rotating), or
    /// `<NAME>_FILE` naming a file holding one:
    /// the secrets GitHub signs deliveries with. None: `/webhook/github` refuses all.
    pub github_webhook_secrets: Vec<Vec<u8>>,
    /// Served only on [`crate::SameUserListener`] (`coord serve --socket`): a request
    /// without a key acts as a local process of this user (see `Authenticated::Local`).
    /// Never set for a TCP listener.
    pub local_peers: bool,
    /// What a client may cost before it has proven anything (`COORD_HTTP_*`, in
    /// `limiter.limits`), and their state per client, shared by the accept loop and the
    /// routes.
    pub limiter: crate::limits::Limiter,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            host: "127.0.0.1".into(),
            port: 8081,
            api_keys: Vec::new(),
            key_identities: HashMap::new(),
            require_auth_for_reads: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            mcp_allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            shutdown: tokio_util::sync::CancellationToken::new(),
            release_after: Some(coord_mcp::DEFAULT_RELEASE_AFTER),
            ui: Default::default(),
            github_webhook_secrets: Vec::new(),
            local_peers: false,
            limiter: crate::limits::Limiter::new(crate::limits::Limits::default()),
        }
    }
}

#[derive(Deserialize)]
struct BoundIdentity {
    agent_id: String,
    agent_type: String,
}

fn config_error(var: &str, why: String) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, var, format!("{var}: {why}"))
}

impl ApiConfig {
    /// Reads `API_HOST`, `API_PORT`, `COORDINATION_API_KEYS`,
    /// `COORDINATION_API_KEY_IDENTITIES`, `COORDINATION_API_REQUIRE_AUTH_FOR_READS`,
    /// `COORDINATION_MCP_ALLOWED_HOSTS` through `var`. Invalid values stop start-up.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> CoordResult<ApiConfig> {
        let mut secrets = Vec::new();
        for name in ["GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_PREVIOUS"] {
            // Secrets are taken as given (GitHub signs with the exact bytes), only an
            // empty one is no secret; `<NAME>_FILE` names a file holding it (a mounted
            // secret), its trailing line break dropped.
            let file_var = format!("{name}_FILE");
            let secret = match (
                var(name).filter(|s| !s.is_empty()),
                var(&file_var).filter(|f| !f.trim().is_empty()),
            ) {
                (Some(_), Some(_)) => {
                    return Err(config_error(&file_var, format!("set {name} or {file_var}, not both")));
                }
                (Some(s), None) => Some(s),
                (None, Some(path)) => {
                    let text = std::fs::read_to_string(path.trim())
                        .map_err(|e| config_error(&file_var, format!("cannot read {:?}: {e}", path.trim())))?;
                    Some(text.trim_end_matches(['\n', '\r']).to_string()).filter(|s| !s.is_empty())
                }
                (None, None) => None,
            };
            secrets.extend(secret.map(String::into_bytes));
        }
        let mut c = ApiConfig {
            github_webhook_secrets: secrets,
            ..ApiConfig::default()
        };
        if let Some(h) = var("API_HOST").filter(|h| !h.trim().is_empty()) {
            c.host = h.trim().to_string();
        }
        if let Some(p) = var("API_PORT").filter(|p| !p.trim().is_empty()) {
            c.port = p
                .trim()
                .parse()
                .map_err(|_| config_error("API_PORT", format!("{p:?} is not a port number")))?;
        }
        if let Some(keys) = var("COORDINATION_API_KEYS") {
            c.api_keys = keys
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(String::from)
                .collect();
        }
        if let Some(raw) = var("COORDINATION_API_KEY_IDENTITIES").filter(|r| !r.trim().is_empty()) {
            let parsed: HashMap<String, BoundIdentity> = serde_json::from_str(&raw).map_err(|e| {
                config_error(
                    "COORDINATION_API_KEY_IDENTITIES",
                    format!("expected JSON {{\"<key>\": {{\"agent_id\": ..., \"agent_type\": ...}}}}: {e}"),
                )
            })?;
            for (key, id) in parsed {
                let caller = Caller::new(id.agent_id, id.agent_type);
                caller
                    .validate()
                    .map_err(|e| config_error("COORDINATION_API_KEY_IDENTITIES", e.message))?;
                c.key_identities.insert(key.trim().to_string(), caller);
            }
        }
        if let Some(v) = var("COORDINATION_API_REQUIRE_AUTH_FOR_READS") {
            c.require_auth_for_reads = match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "" | "0" | "false" | "no" | "off" => false,
                other => {
                    return Err(config_error(
                        "COORDINATION_API_REQUIRE_AUTH_FOR_READS",
                        format!("{other:?} is not true or false"),
                    ));
                }
            };
        }
        c.release_after = coord_mcp::parse_release_grace(var("COORD_RELEASE_GRACE_SECONDS").as_deref())?;
        let limits = crate::limits::Limits::from_vars(&var).map_err(|(name, why)| config_error(&name, why))?;
        c.limiter = crate::limits::Limiter::new(limits);
        if let Some(hosts) = var("COORDINATION_MCP_ALLOWED_HOSTS") {
            c.mcp_allowed_hosts.extend(
                hosts
                    .split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(String::from),
            );
        }
        Ok(c)
    }

    pub fn from_env() -> CoordResult<ApiConfig> {
        ApiConfig::from_vars(|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let owned: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn environment_configuration() {
        let c = ApiConfig::from_vars(vars(&[
            ("API_HOST", "0.0.0.0"),
            ("API_PORT", "9000"),
            ("COORDINATION_API_KEYS", "k1, k2,,"),
            (
                "COORDINATION_API_KEY_IDENTITIES",
                r#"{"k3": {"agent_id": "agent-1", "agent_type": "codex"}}"#,
            ),
            ("COORDINATION_API_REQUIRE_AUTH_FOR_READS", "true"),
        ]))
        .unwrap();
        assert_eq!((c.host.as_str(), c.port), ("0.0.0.0", 9000));
        assert_eq!(c.api_keys, ["k1", "k2"]);
        assert_eq!(c.key_identities["k3"], Caller::new("agent-1", "codex"));
        assert!(c.require_auth_for_reads);
        for (var, value) in [
            ("API_PORT", "http"),
            ("COORDINATION_API_KEY_IDENTITIES", "{not json"),
            (
                "COORDINATION_API_KEY_IDENTITIES",
                r#"{"k": {"agent_id": "", "agent_type": "x"}}"#,
            ),
            ("COORDINATION_API_REQUIRE_AUTH_FOR_READS", "sometimes"),
            ("COORD_RELEASE_GRACE_SECONDS", "soon"),
            ("GITHUB_WEBHOOK_SECRET_FILE", "/nonexistent/secret"),
        ] {
            let e = ApiConfig::from_vars(vars(&[(var, value)])).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(var), "{var}={value}");
        }
    }

    #[test]
    fn webhook_secrets_from_the_environment_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "from a file\n").unwrap();
        let path = file.to_str().unwrap();
        let c = ApiConfig::from_vars(vars(&[
            ("GITHUB_WEBHOOK_SECRET_FILE", path),
            ("GITHUB_WEBHOOK_SECRET_PREVIOUS", " old "),
        ]))
        .unwrap();
        assert_eq!(c.github_webhook_secrets, [b"from a file".to_vec(), b" old ".to_vec()]);
        let e = ApiConfig::from_vars(vars(&[
            ("GITHUB_WEBHOOK_SECRET", "x"),
            ("GITHUB_WEBHOOK_SECRET_FILE", path),
        ]))
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("GITHUB_WEBHOOK_SECRET_FILE"));
        assert!(
            ApiConfig::from_vars(vars(&[]))
                .unwrap()
                .github_webhook_secrets
                .is_empty()
        );
    }
}
