//! The tools an MCP client sees, grouped into named toolsets (as the GitHub MCP server's
//! `--toolsets`): every tool's schema costs every agent tokens on every turn (Codex sends
//! every MCP tool with every model request), so an agent sees its daily work — `core` —
//! and the tools its caller may call; the rest stays one `enable_toolset` away. Listing
//! is not permission: a tool called by name runs whether it is listed or not, and the
//! pipeline decides as for any call. Operators see every toolset.

use std::collections::BTreeSet;

/// One toolset: its name, what it is for, its tools.
pub struct Toolset {
    pub name: &'static str,
    pub description: &'static str,
    pub tools: &'static [&'static str],
}

/// Every MCP tool, in exactly one toolset (a test checks it against the registry).
pub const TOOLSETS: &[Toolset] = &[
    Toolset {
        name: "core",
        description: "a coding agent's daily work: locks and edit checks, the work queue, messages, handoffs, \
                      memory, status",
        tools: &[
            "acquire_lock",
            "release_lock",
            "release_my_locks",
            "check_locks",
            "check_edit",
            "submit_work",
            "get_work",
            "complete_work",
            "get_task",
            "send_message",
            "inbox",
            "ack_message",
            "write_handoff",
            "read_handoff",
            "remember",
            "recall",
            "status",
            "discover_agents",
            // Spec 001's tool discovery names these two as well.
            "register_session",
            "heartbeat",
        ],
    },
    Toolset {
        name: "sessions",
        description: "your session by hand (the connection registers and heartbeats by itself): idle, end; \
                      clean up dead agents",
        tools: &["mark_idle", "end_session", "cleanup_dead_agents"],
    },
    Toolset {
        name: "queue",
        description: "more of the work queue and messages: list tasks, read one message, lock status",
        tools: &["list_tasks", "read_message", "lock_status"],
    },
    Toolset {
        name: "memory",
        description: "memory beyond remember/recall: feedback, forgetting, skills, working memory",
        tools: &[
            "memory_feedback",
            "forget",
            "prune_memories",
            "record_skill_use",
            "get_skills",
            "update_working_memory",
            "get_working_memory",
        ],
    },
    Toolset {
        name: "files",
        description: "confined file reads and fenced writes through coord",
        tools: &["read_file", "write_file"],
    },
    Toolset {
        name: "guardrails",
        description: "check a command or files against the guardrails; the pattern registry",
        tools: &[
            "check_guardrails",
            "list_guardrails",
            "set_guardrail",
            "reset_guardrail",
        ],
    },
    Toolset {
        name: "approvals",
        description: "approval requests: list, read, decide (a person decides)",
        tools: &["list_approvals", "get_approval", "decide_approval"],
    },
    Toolset {
        name: "profiles",
        description: "agent profiles: list, explain, apply, assign",
        tools: &[
            "list_profiles",
            "explain_profile",
            "apply_profiles",
            "assign_profile",
            "unassign_profile",
        ],
    },
    Toolset {
        name: "network",
        description: "network egress: check a target, policies, the access log, sandbox runs",
        tools: &[
            "check_network_access",
            "list_network_policies",
            "set_network_policy",
            "reset_network_policy",
            "network_access_log",
            "record_sandbox_run",
        ],
    },
    Toolset {
        name: "audit",
        description: "the audit trail, the fleet's figures, notifications",
        tools: &[
            "query_audit",
            "verify_audit",
            "prune_audit",
            "get_stats",
            "list_notifications",
        ],
    },
    Toolset {
        name: "orchestration",
        description: "sub-agents, delegation, graph workflows and swarms",
        tools: &[
            "spawn_agent",
            "delegate_task",
            "get_agent_status",
            "get_agent_output",
            "list_spawned_agents",
            "stop_agent",
            "create_workflow",
            "get_workflow_status",
            "list_workflows",
            "create_swarm",
            "get_swarm_results",
            "record_preflight",
        ],
    },
    Toolset {
        name: "verification",
        description: "the verification gateway: policies, changesets, workers' runs",
        tools: &[
            "set_verification_policy",
            "list_verification_policies",
            "delete_verification_policy",
            "submit_changeset",
            "get_verification",
            "claim_verification_run",
            "report_verification_run",
        ],
    },
    Toolset {
        name: "overrides",
        description: "a person's overrides: release another agent's lock, cancel a task, requeue a claimed one",
        tools: &["break_lock", "cancel_task", "requeue_task"],
    },
    Toolset {
        name: "keys",
        description: "API keys for cloud agents (operators)",
        tools: &["create_api_key", "list_api_keys", "revoke_api_key"],
    },
    Toolset {
        name: "ports",
        description: "port blocks for isolated environments",
        tools: &["allocate_ports", "release_ports", "ports_status"],
    },
];

/// What a connection lists when nobody chose: its daily work.
pub const DEFAULT: &[&str] = &["core"];

/// The two tools always listed, through which an agent finds and turns on the rest.
pub const LIST_TOOLSETS: &str = "list_toolsets";
pub const ENABLE_TOOLSET: &str = "enable_toolset";

/// The toolset `tool` belongs to.
pub fn toolset_of(tool: &str) -> Option<&'static str> {
    TOOLSETS.iter().find(|t| t.tools.contains(&tool)).map(|t| t.name)
}

/// Which toolsets a connection lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    Named(BTreeSet<&'static str>),
}

impl Selection {
    pub fn default_for_agents() -> Selection {
        Selection::Named(DEFAULT.iter().copied().collect())
    }

    /// What an agent that may call `allowed` lists by default: `core`, and the toolsets
    /// its profile is made for — `orchestration` for one that may spawn agents or run
    /// workflows (an orchestrator's daily work).
    pub fn default_for(allowed: Option<&BTreeSet<String>>) -> Selection {
        let mut s = Selection::default_for_agents();
        let may = |op: &str| allowed.is_some_and(|a| a.contains(op));
        if may("spawn_agent") || may("create_workflow") {
            s.enable("orchestration");
        }
        s
    }

    pub fn lists(&self, toolset: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Named(s) => s.contains(toolset),
        }
    }

    /// Turns `name` on; `false` when there is no such toolset.
    pub fn enable(&mut self, name: &str) -> bool {
        if name == "all" {
            *self = Selection::All;
            return true;
        }
        let Some(t) = TOOLSETS.iter().find(|t| t.name == name) else {
            return false;
        };
        if let Selection::Named(s) = self {
            s.insert(t.name);
        }
        true
    }
}

/// `COORD_TOOLSETS` / `coord mcp --toolsets` / `X-MCP-Toolsets`: `all`, or names
/// separated by commas; an unknown name is an error naming the known ones.
pub fn parse(raw: &str) -> Result<Selection, String> {
    let mut names = BTreeSet::new();
    for word in raw.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word == "all" {
            return Ok(Selection::All);
        }
        match TOOLSETS.iter().find(|t| t.name == word) {
            Some(t) => {
                names.insert(t.name);
            }
            None => {
                return Err(format!(
                    "unknown toolset {word:?}: use all, or some of {}",
                    TOOLSETS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    if names.is_empty() {
        return Err("no toolset named: use all, or some of core, files, ...".into());
    }
    Ok(Selection::Named(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_in_exactly_one_toolset() {
        let tools: Vec<&str> = coord_service::ops()
            .iter()
            .filter(|op| op.is_mcp_tool())
            .map(|op| op.name)
            .collect();
        for tool in &tools {
            let n = TOOLSETS.iter().filter(|t| t.tools.contains(tool)).count();
            assert_eq!(n, 1, "{tool} is in {n} toolsets");
        }
        for t in TOOLSETS {
            for tool in t.tools {
                assert!(
                    tools.contains(tool),
                    "{} lists {tool}, which is not an MCP tool",
                    t.name
                );
            }
        }
    }

    #[test]
    fn selections() {
        assert_eq!(parse("all"), Ok(Selection::All));
        assert_eq!(parse(" core , files"), Ok(Selection::Named(["core", "files"].into())));
        assert!(parse("core,nope").unwrap_err().contains("unknown toolset \"nope\""));
        assert!(parse(" , ").is_err());
        let orchestrator: BTreeSet<String> = ["spawn_agent".to_string()].into();
        assert!(Selection::default_for(Some(&orchestrator)).lists("orchestration"));
        assert!(!Selection::default_for(None).lists("orchestration"));
        let mut s = Selection::default_for_agents();
        assert!(s.lists("core") && !s.lists("files"));
        assert!(s.enable("files") && s.lists("files"));
        assert!(!s.enable("nope"));
        assert!(s.enable("all") && s.lists("keys"));
    }
}
