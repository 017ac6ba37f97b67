//! coord's runtime: what a `coord` process does besides parsing and rendering. The CLI
//! (`coord-cli`) and `coord serve` both use it; it holds no grammar and prints no tables
//! (a supervisor's diagnostics go to stderr; results are returned to be rendered).
//!
//! - `context`: where the process stands (repository, state directory, database,
//!   identity) from the settings it was given; `agent_session` and `worktree` find
//!   the agent session and the checkout it runs in.
//! - `open`: the store and the coordinator for a context (local or remote), with the
//!   launcher and the ports; `local_server`: the repository's coordinator process that
//!   local MCP servers relay to; `reaper`: releasing what dead processes held.
//! - `launch`: launching and supervising one agent in the sandbox; `spawner`: the
//!   service's `Launcher` (supervisors as `coord agent supervise ID`); `isolate`: an
//!   agent's own worktree and ports; `sandbox`: running a command in bubblewrap with the
//!   egress proxy as its only way out.
//! - `verify_worker`: the verification worker and its executors (`actions`: GitHub
//!   Actions; E2B; this machine's sandbox).
//!
//! Must not depend on: clap or any rendering (that is the CLI's). Rules stay in the
//! domain (`coord_domain`) and the service; this crate wires processes to them.

pub mod actions;
pub mod agent_session;
pub mod context;
pub mod isolate;
pub mod launch;
pub mod local_server;
pub mod open;
pub mod reaper;
pub mod sandbox;
pub mod spawner;
pub mod verify_worker;
pub mod worktree;

/// Given to the coord processes coord starts with settings taken out of their environment
/// (the repository's coordinator, a spawned agent's supervisor): they take their settings
/// from the environment they inherit and read no configuration file, which would put back
/// what was taken out.
pub const CONFIG_FILES_OFF: (&str, &str) = ("COORD_CONFIG_FILES", "off");
