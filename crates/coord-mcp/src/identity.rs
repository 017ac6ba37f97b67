//! Who an MCP client is. The coordinator needs an agent id and type for every call;
//! MCP carries neither, so they come from, in order: the server's own configuration
//! (`COORD_AGENT_ID` / `COORD_AGENT_TYPE` in its environment — Claude Code and Codex pass
//! env to MCP servers), the `X-Agent-Id` / `X-Agent-Type` headers of an HTTP request, and
//! finally the client's self-reported name plus this host, which is stable across
//! restarts of the same client on the same machine.

use coord_domain::Caller;

#[derive(Debug, Clone, Default)]
pub struct IdentityConfig {
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    pub host: String,
    /// What tells this agent apart from others of the same client on the same host when
    /// nothing is configured: over stdio, the id of the process that started this server
    /// (the agent runtime), so two Codex sessions are two agents and a reconnect of one
    /// is the same agent. None: the client's name and host alone.
    pub instance: Option<String>,
}

impl IdentityConfig {
    /// No fixed identity: every client is told apart by what it sends.
    pub fn per_client() -> Self {
        IdentityConfig {
            agent_id: None,
            agent_type: None,
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            instance: None,
        }
    }
}

/// The agent type a client name suggests: `claude-code` → `claude_code`,
/// `codex-mcp-client` → `codex`, anything else in snake_case.
pub fn agent_type_of(client_name: &str) -> String {
    let lower = client_name.to_ascii_lowercase();
    if lower.contains("codex") {
        return "codex".into();
    }
    if lower.contains("claude") {
        return "claude_code".into();
    }
    let snake: String = lower
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let trimmed = snake.trim_matches('_');
    if trimmed.is_empty() {
        "mcp".into()
    } else {
        trimmed.to_string()
    }
}

pub fn derive_identity(
    config: &IdentityConfig,
    header_id: Option<&str>,
    header_type: Option<&str>,
    client_name: Option<&str>,
) -> Caller {
    let client = client_name
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or("mcp-client");
    let agent_type = config
        .agent_type
        .clone()
        .or_else(|| header_type.map(String::from))
        .unwrap_or_else(|| agent_type_of(client));
    let agent_id = config
        .agent_id
        .clone()
        .or_else(|| header_id.map(String::from))
        .unwrap_or_else(|| {
            let named = if config.host.is_empty() {
                client.to_string()
            } else {
                format!("{client}@{}", config.host)
            };
            match &config.instance {
                Some(instance) => format!("{named}-{instance}"),
                None => named,
            }
        });
    Caller::new(agent_id, agent_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_precedence() {
        let host = IdentityConfig {
            agent_id: None,
            agent_type: None,
            host: "box".into(),
            instance: None,
        };
        let process = IdentityConfig {
            instance: Some("p4242".into()),
            ..host.clone()
        };
        assert_eq!(
            derive_identity(&process, None, None, Some("codex-mcp-client")),
            Caller::new("codex-mcp-client@box-p4242", "codex"),
            "one agent per runtime process"
        );
        let fixed = IdentityConfig {
            agent_id: Some("me".into()),
            agent_type: Some("aider".into()),
            host: "box".into(),
            instance: Some("p1".into()),
        };
        let cases = [
            (
                &host,
                None,
                None,
                Some("claude-code"),
                ("claude-code@box", "claude_code"),
            ),
            (
                &host,
                None,
                None,
                Some("codex-mcp-client"),
                ("codex-mcp-client@box", "codex"),
            ),
            (&host, None, None, Some("My Tool 2"), ("My Tool 2@box", "my_tool_2")),
            (&host, None, None, None, ("mcp-client@box", "mcp_client")),
            (
                &host,
                Some("h-id"),
                Some("h-type"),
                Some("claude-code"),
                ("h-id", "h-type"),
            ),
            (
                &fixed,
                Some("h-id"),
                Some("h-type"),
                Some("claude-code"),
                ("me", "aider"),
            ),
        ];
        for (cfg, hid, hty, client, (want_id, want_type)) in cases {
            let c = derive_identity(cfg, hid, hty, client);
            assert_eq!(
                (c.agent_id.as_str(), c.agent_type.as_str()),
                (want_id, want_type),
                "{client:?}"
            );
        }
    }
}
