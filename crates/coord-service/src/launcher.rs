//! What starts spawned agents. `spawn_agent` decides and records; a [`Launcher`] does
//! what needs this machine: reads the workspace's agent definitions, asks the configured
//! validator, and starts the supervisor (`coord agent supervise`, in the CLI) that
//! runs the agent in the sandbox and reports how the run ended. A coordinator without
//! one answers `spawn_unavailable` (a remote-only client, a test of other operations).

use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::agents::preflight::{LaunchPlanSummary, Validator, Verdict};
use coord_domain::agents::{AgentDefinition, Runtime};

/// The validator's answer on a plan: which validator, its verdict, or why there is none.
pub type Judgement = (Validator, Option<Verdict>, Option<String>);

#[async_trait]
pub trait Launcher: Send + Sync {
    /// The workspace's definition `name` (`.claude/agents/<name>.md`), checked.
    fn definition(&self, name: &str) -> CoordResult<AgentDefinition>;
    /// The plan a validator judges, with what only the launching machine knows (the
    /// sandbox, the model endpoint, the environment passed).
    fn plan(&self, d: &AgentDefinition, runtime: Runtime, task: &str, network_policy: &str) -> LaunchPlanSummary;
    /// Whether an agent of `runtime` can be launched here at all (its program, the
    /// sandbox, its provider key): checked before anything is judged or registered.
    async fn ready(&self, runtime: Runtime) -> CoordResult<()>;
    /// Pre-flight validation: the configured validator's judgement of `plan`, or an
    /// error when none is configured.
    async fn judge(&self, plan: &LaunchPlanSummary) -> CoordResult<Judgement>;
    /// Starts the supervisor of the registered spawn `agent_id`; answers its pid.
    async fn start(&self, agent_id: &str) -> CoordResult<u32>;
    /// This machine's name, as supervisors started here report it.
    fn host(&self) -> String;
    /// When process `pid` of this machine started (its identity with the pid: pids are
    /// reused), if it runs.
    fn started(&self, pid: u32) -> Option<u64>;
    /// Asks supervisor `pid` of this machine, started at `started`, to stop its agent;
    /// false when it is gone (or the pid is another process's now).
    fn signal_stop(&self, pid: u32, started: Option<u64>) -> bool;
    /// The last `max` bytes of the runtime's output in `run_dir` of this machine.
    fn output_tail(&self, run_dir: &str, max: usize) -> Option<String>;
}
