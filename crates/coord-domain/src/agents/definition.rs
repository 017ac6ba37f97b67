//! A valid agent definition, as a spawn records it, and the problems of one that is
//! not. Reading definitions from their files (Claude Code's `.claude/agents/<name>.md`,
//! `agents.json`) is `coord_agents::definition`'s job.

use super::WorkerProfile;
use serde::{Deserialize, Serialize};

pub const MAX_DEFINITION_BYTES: usize = 64 * 1024;
pub const MAX_NAME_LEN: usize = 64;
pub const MAX_DESCRIPTION_LEN: usize = 1024;
pub const MAX_TURNS: u64 = 500;

/// One problem of a definition: the field (`tools[2]`, `name`, `body`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// A valid definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    pub profile: WorkerProfile,
    /// Where the profile came from: `profile` (the field), `spec 003` (the agent's name),
    /// `tools` (a write tool listed) or `default` (least privilege).
    pub profile_from: String,
    /// The built-in tools the agent gets: its `tools:` (or its profile's, when absent)
    /// less `disallowedTools:`; never more than the profile's.
    pub tools: Vec<String>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// The body: the agent's system prompt.
    pub prompt: String,
    /// A display name (`agents.json`'s `name`; the `.md` format has only the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The runtime it runs on unless a spawn names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<super::Runtime>,
    /// The agents it may delegate to (`spawn_agent`, `delegate_task`) when it runs as a
    /// spawned agent, besides its children; `*` for any. Empty: it delegates to nobody.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegates_to: Vec<String>,
    /// The agent it works for (spec 002's `parent_id`): that agent may delegate to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The agents whose parent it is (filled in by the registry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
}

impl AgentDefinition {
    /// Whether this agent, running as a spawned agent, may have `child` launched: named
    /// in its `delegates_to` (or `*` there), or one of its children.
    pub fn may_delegate_to(&self, child: &AgentDefinition) -> bool {
        // Children as the registry had them when this agent was spawned (its record):
        // a child's own `parent_id`, read later, could be planted by a writer.
        self.delegates_to.iter().any(|d| d == "*" || *d == child.name) || self.children.contains(&child.name)
    }

    /// Whether it may delegate to anyone.
    pub fn delegates(&self) -> bool {
        !self.delegates_to.is_empty() || !self.children.is_empty()
    }

    /// Whether `runtime` itself keeps the agent to its `tools` (only Claude Code has a
    /// tool list; for the others the sandbox is all there is).
    pub fn tools_enforced_by(&self, runtime: super::Runtime) -> bool {
        runtime == super::Runtime::Claude
    }
}
