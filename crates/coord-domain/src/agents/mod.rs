//! Sub-agents coord launches (docs/agents.md): the four worker profiles of spec 003, a
//! valid agent definition, the runtimes, and the rules of spawning them. Reading
//! definitions and teams from their files and each runtime's launch plan (argv,
//! environment, generated files) are integrations: `coord-agents`.
//!
//! Spec 003 meant "each agent can use only the tools and paths of its profile" but chose
//! mechanisms that do not deliver it (`--allowedTools` only pre-approves, `--add-dir`
//! widens, `Bash(read:*)` matches nothing). Here: `--tools` decides which tools exist,
//! `--restricted` and the settings keep the file tools in the workspace, the Bash rules
//! pre-approve a profile's commands, coord's PreToolUse hook judges every call, and the
//! OS sandbox (bubblewrap: read-only or writable workspace, no network but the proxy)
//! holds whatever gets past them.

pub mod definition;
pub mod isolation;
pub mod preflight;
pub mod runtime;
pub mod spawn;

#[cfg(test)]
mod spawn_tests;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use std::fmt;

pub use definition::{AgentDefinition, FieldError};
pub use runtime::{DEFAULT_MAX_TURNS, Runtime};

/// The tools of Claude Code a definition may name (2.1.330). Anything else in `tools:`
/// is refused, so a typo never silently drops (or adds) a capability.
pub const KNOWN_TOOLS: &[&str] = &[
    "Read",
    "Grep",
    "Glob",
    "Bash",
    "Edit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "Task",
    "Agent",
];

/// Tools that change files.
pub const WRITE_TOOLS: &[&str] = &["Edit", "Write", "NotebookEdit"];

/// Read-only commands every profile may run without asking.
const READ_COMMANDS: &[&str] = &[
    "git status",
    "git ls-files",
    "git rev-parse",
    "git branch",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "pwd",
];

/// The four permission profiles of spec 003.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkerProfile {
    /// Reviewers, explorers, verifiers of specs: read and search, read-only commands.
    ReadOnly,
    /// Coders: edit the workspace, build and test.
    Write,
    /// Validators: run the tests; the workspace stays read-only (build output goes to a
    /// scratch directory).
    Verification,
    /// Designers and planners: read everything, write design documents (`docs/`) only.
    Design,
}

/// What is writable in the OS sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Writable {
    /// Nothing in the workspace (the run's own directory only).
    Nothing,
    /// The workspace (its `.git` hooks and config and coord's state stay read-only).
    Workspace,
    /// `docs/` of the workspace.
    Docs,
}

impl WorkerProfile {
    pub const ALL: [WorkerProfile; 4] = [Self::ReadOnly, Self::Write, Self::Verification, Self::Design];

    pub fn name(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Write => "write",
            Self::Verification => "verification",
            Self::Design => "design",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The most a definition under this profile may have.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Self::ReadOnly | Self::Verification => &["Read", "Grep", "Glob", "Bash"],
            Self::Write => &["Read", "Grep", "Glob", "Edit", "Write", "NotebookEdit", "Bash"],
            Self::Design => &["Read", "Grep", "Glob", "Edit", "Write", "Bash"],
        }
    }

    /// The coord profile (built in, `profiles_builtin.json`) a launched agent's identity
    /// is assigned: its trust, operations, limits and network policy.
    pub fn coord_profile(self) -> &'static str {
        match self {
            Self::ReadOnly => "worker-read-only",
            Self::Write => "worker-write",
            Self::Verification => "worker-verification",
            Self::Design => "worker-design",
        }
    }

    pub fn writable(self) -> Writable {
        match self {
            Self::ReadOnly | Self::Verification => Writable::Nothing,
            Self::Write => Writable::Workspace,
            Self::Design => Writable::Docs,
        }
    }

    /// Commands pre-approved for the Bash tool (Claude Code `Bash(<prefix>:*)` rules).
    /// Never an interpreter, `git diff`/`git log`/`git show` (`--output=<path>` writes
    /// anywhere) or anything that runs repository-controlled code in a read-only
    /// profile; coord's hook and the OS sandbox judge every command anyway.
    pub fn bash_prefixes(self) -> Vec<&'static str> {
        let extra: &[&str] = match self {
            Self::ReadOnly | Self::Design => &[],
            Self::Verification => &[
                "cargo test",
                "cargo check",
                "cargo build",
                "cargo clippy",
                "pytest",
                "python -m pytest",
                "npm test",
                "pnpm test",
                "tsc",
                "go test",
                "make test",
            ],
            // No git add/commit: `.git` is read-only for a launched agent (a repository's
            // config and hooks run on the host later); coord commits its work.
            Self::Write => &[
                "mkdir",
                "cargo",
                "pytest",
                "python -m pytest",
                "npm",
                "pnpm",
                "tsc",
                "go",
                "make",
            ],
        };
        READ_COMMANDS.iter().chain(extra).copied().collect()
    }

    /// The profile spec 003 gives an agent by its name, when it names one.
    pub fn of_spec_agent(name: &str) -> Option<Self> {
        match name {
            "code-reviewer" | "systems-designer" | "ux-reviewer" | "spec-verifier" | "e2e-analyzer" | "qa-auditor"
            | "code-explorer" | "code-architect" => Some(Self::ReadOnly),
            "coder" | "frontend-coder" => Some(Self::Write),
            "validator" | "issue-verifier" => Some(Self::Verification),
            "ux-designer" | "ux-implementer" | "planner" => Some(Self::Design),
            _ => None,
        }
    }
}

impl fmt::Display for WorkerProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
