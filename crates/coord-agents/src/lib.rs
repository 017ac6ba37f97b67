//! The agent runtimes coord launches, as integrations: what is read from files agents
//! and people already write, and what each runtime is given. Pure: no process is run
//! and no file written here (`coord-runtime` does both, inside `coord sandbox`).
//!
//! - [`definition`]: Claude Code's `.claude/agents/<name>.md` and spec 002's
//!   `agents.json` entries, read into the domain's `AgentDefinition`, every problem with
//!   its field.
//! - [`registry`]: every definition of a workspace, checked one by one and against each
//!   other (names unique, parents and delegates known, no cycle of parents).
//! - [`team`]: declarative teams (`teams.yaml`).
//! - [`launch`]: the launch plan of a definition for Claude Code, Codex or Aider — the
//!   exact argv, environment and generated files (docs/agents.md has the table).
//!
//! Depends on `coord-domain` only; the rules of spawning (depth, caps, a child never
//! holding more than its parent) are the domain's (`coord_domain::agents::spawn`).

pub mod definition;
pub mod launch;
pub mod registry;
pub mod team;

#[cfg(test)]
mod registry_tests;
#[cfg(test)]
mod team_tests;
#[cfg(test)]
mod tests;

pub use definition::{definition_from_json, parse_definition};
pub use launch::{GeneratedFile, LaunchInputs, LaunchPlan, plan};
