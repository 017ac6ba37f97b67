//! Launching one agent (docs/agents.md): its definition from the registry, a pre-flight
//! judgement, its own identity, key and profile, the sandbox around it, supervision to
//! its deadline, and everything given back when it ends. The launch plans themselves
//! (argv, files, environment) are the domain's pure functions (`coord_domain::agents`).
//!
//! - `definitions`: the registry (`.claude/agents/*.md`, `agents.json`).
//! - `programs`: the runtime's program, bubblewrap, provider keys, environment switches.
//! - `preflight`: the plan a validator judges, and asking it.
//! - `run`: one launch from request to settled end (`coord agent run`).
//! - `supervise`: the agent's process inside the sandbox, to its end.
//! - `spawned`: the supervisor of an agent `spawn_agent` registered (`coord agent supervise`).
//! - `outcome`: what the run answered.

mod definitions;
mod outcome;
mod preflight;
mod programs;
mod run;
mod spawned;
mod supervise;

pub use definitions::{DEFINITIONS, definitions, find};
pub use outcome::{Outcome, read_tail};
pub use preflight::{Validation, judge, summary};
pub use programs::{bwrap_ready, coord_env, has_provider_key, program_of, provider_keys, runtime, sandbox_enabled};
pub use run::launch;
pub use spawned::supervise_spawned;

use coord_domain::agents::isolation::Isolation;
use coord_domain::agents::spawn;

/// The agent type of launched agents (no type default: each launch's identity gets its
/// profile assigned).
pub const AGENT_TYPE: &str = spawn::AGENT_TYPE;

/// `coord agent run AGENT TASK`: which agent, what to do, and how.
#[derive(Debug, Clone)]
pub struct LaunchRequest {
    /// The definition's name in the registry.
    pub agent: String,
    pub task: String,
    pub options: LaunchOptions,
}

/// How to launch: each field one flag of `coord agent run`.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// claude, codex or aider; unset: the definition's, else claude.
    pub runtime: Option<String>,
    /// The runtime's program; unset: found on the PATH.
    pub program: Option<std::path::PathBuf>,
    pub model_url: Option<String>,
    /// Unset: the profile's maximum execution time, else 30 minutes.
    pub timeout: Option<std::time::Duration>,
    /// NAME or NAME=VALUE passed into the sandbox.
    pub env: Vec<String>,
    /// The files the task is about (checked against others' locks before the start).
    pub files: Vec<String>,
    /// NAME=ADDRESS pins for the egress proxy's resolver.
    pub resolve: Vec<String>,
    pub isolation: Option<Isolation>,
    pub keep_worktree: bool,
    pub validation: Validation,
}
