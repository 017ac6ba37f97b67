//! The [`Launcher`] every local coordinator gets (`coord mcp`, `coord serve`, the CLI):
//! definitions from this workspace, the validator configured in this process's
//! environment, supervisors started as `coord agent supervise ID` in their own process
//! group (docs/agents.md "Spawning").

use crate::context::{Context, DbTarget};
use crate::launch::{Validation, read_tail};
use async_trait::async_trait;
use coord_domain::agents::preflight::LaunchPlanSummary;
use coord_domain::agents::spawn::SUPERVISOR;
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::{Judgement, Launcher};
use std::path::Path;

pub struct LocalLauncher {
    ctx: Context,
}

impl LocalLauncher {
    pub fn new(ctx: &Context) -> Self {
        LocalLauncher { ctx: ctx.clone() }
    }
}

fn io(what: &str, e: std::io::Error) -> CoordError {
    CoordError::new(ErrorCode::AgentStartFailed, format!("{what}: {e}"))
}

#[async_trait]
impl Launcher for LocalLauncher {
    fn definition(&self, name: &str) -> CoordResult<AgentDefinition> {
        crate::launch::find(&self.ctx, name).map(|(_, d)| d)
    }

    fn plan(&self, d: &AgentDefinition, runtime: Runtime, task: &str, network_policy: &str) -> LaunchPlanSummary {
        let var = match runtime {
            Runtime::Claude => "ANTHROPIC_BASE_URL",
            Runtime::Codex | Runtime::Aider => "OPENAI_BASE_URL",
        };
        let model_url = std::env::var(var).ok().filter(|u| !u.trim().is_empty());
        let sandboxed = crate::launch::sandbox_enabled().unwrap_or(true);
        crate::launch::summary(d, runtime, task, network_policy.into(), model_url, sandboxed, &[], &[])
    }

    async fn ready(&self, runtime: Runtime) -> CoordResult<()> {
        let sandboxed = crate::launch::sandbox_enabled()?;
        if !sandboxed && runtime == Runtime::Aider {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                "COORD_SANDBOX_ENABLED=false: Aider has no permission system of its own; it runs only inside the sandbox",
            )
            .with_field("runtime"));
        }
        crate::launch::program_of(runtime, None).await.map_err(|e| {
            CoordError::new(
                e.code,
                format!("{} (on the coordinator's machine: its PATH decides)", e.message),
            )
            .with_field("runtime")
        })?;
        if sandboxed {
            crate::launch::bwrap_ready().await?;
        }
        if !crate::launch::has_provider_key(runtime) {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "the coordinator's environment has no model provider key for {} ({}): its agents take it from there \
                     (a login kept in a home directory is not visible inside the sandbox)",
                    runtime.name(),
                    crate::launch::provider_keys(runtime).join(" or ")
                ),
            )
            .with_field("runtime"));
        }
        Ok(())
    }

    async fn judge(&self, plan: &LaunchPlanSummary) -> CoordResult<Judgement> {
        let v = Validation::from_env()
            .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, m).with_field("validator"))?;
        if !v.no_validation && v.validator_command.is_none() && v.validator_url.is_none() {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                "the coordinator has no pre-flight validator: set COORD_VALIDATOR_COMMAND or COORD_VALIDATOR_URL in \
                 its environment (for `coord agent spawn`, yours), or COORD_NO_VALIDATION=1 to spawn without one \
                 (audited)",
            )
            .with_field("validator"));
        }
        crate::launch::judge(&v, plan).await
    }

    async fn start(&self, agent_id: &str) -> CoordResult<u32> {
        let exe = std::env::current_exe().map_err(|e| io("cannot find the coord binary", e))?;
        let runs = self.ctx.state_dir.join("runs");
        std::fs::create_dir_all(&runs).map_err(|e| io("cannot create .coord/runs", e))?;
        // Beside the run's directory, not in it: the agent can write its run directory.
        let log = std::fs::File::create(runs.join(format!("{agent_id}.supervisor.log")))
            .map_err(|e| io("cannot create the supervisor's log", e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| io("cannot create the supervisor's log", e))?;
        let db = match &self.ctx.db {
            DbTarget::Sqlite(path) => path.display().to_string(),
            DbTarget::Postgres(url) => url.clone(),
        };
        let mut command = tokio::process::Command::new(exe);
        command
            .args(["agent", "supervise", agent_id])
            .current_dir(&self.ctx.repo_root)
            .env("COORD_DATABASE_URL", db)
            .env("COORD_AGENT_ID", SUPERVISOR.0)
            .env("COORD_AGENT_TYPE", SUPERVISOR.1)
            .env_remove("COORDINATION_API_URL")
            .env_remove("COORDINATION_API_KEY")
            .env(crate::CONFIG_FILES_OFF.0, crate::CONFIG_FILES_OFF.1)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Its own group: a terminal's Ctrl-C to whoever spawned it does not reach it.
            .process_group(0);
        let mut child = command.spawn().map_err(|e| io("cannot start the supervisor", e))?;
        let pid = child.id().unwrap_or_default();
        // Reaped when it ends (as long as this process lives; an orphan is init's).
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(pid)
    }

    fn host(&self) -> String {
        crate::context::hostname()
    }

    fn started(&self, pid: u32) -> Option<u64> {
        crate::reaper::start_time(pid)
    }

    fn signal_stop(&self, pid: u32, started: Option<u64>) -> bool {
        // The same process, not one that has its pid now.
        let same = self.started(pid).is_some_and(|s| started.is_none_or(|t| t == s));
        same && i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|p| rustix::process::kill_process(p, rustix::process::Signal::TERM).is_ok())
    }

    fn output_tail(&self, run_dir: &str, max: usize) -> Option<String> {
        let dir = Path::new(run_dir);
        ["output.jsonl", "stderr.log"]
            .iter()
            .filter_map(|f| read_tail(&dir.join(f), max))
            .find(|t| !t.is_empty())
    }
}
