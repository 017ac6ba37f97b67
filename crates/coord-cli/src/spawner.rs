//! Spawning agents (docs/agents.md "Spawning"): the [`Launcher`] every local coordinator
//! gets (`coord mcp`, `coord serve`, the CLI) — definitions from this workspace, the
//! validator configured in this process's environment, supervisors started as
//! `coord agent supervise ID` in their own process group — and `coord agent
//! spawn|status|output|stop`, which call the operations like any door.

use crate::args::{AgentSpawnArgs, ValidationArgs};
use crate::context::{Context, DbTarget};
use crate::open;
use crate::output::{self, Output};
use async_trait::async_trait;
use coord_domain::access::Principal;
use coord_domain::agents::preflight::LaunchPlanSummary;
use coord_domain::agents::spawn::{
    AgentOutputRequest, AgentRef, AgentStatusResult, ListSpawnedAgentsRequest, SpawnAgentRequest, StopAgentRequest,
};
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::spawn::{GetAgentOutput, GetAgentStatus, ListSpawnedAgents, SpawnAgent, StopAgent};
use coord_service::{Judgement, Launcher, call};
use std::path::Path;

use coord_domain::agents::spawn::SUPERVISOR;

pub struct CliLauncher {
    ctx: Context,
}

impl CliLauncher {
    pub fn new(ctx: &Context) -> Self {
        CliLauncher { ctx: ctx.clone() }
    }
}

fn io(what: &str, e: std::io::Error) -> CoordError {
    CoordError::new(ErrorCode::AgentStartFailed, format!("{what}: {e}"))
}

#[async_trait]
impl Launcher for CliLauncher {
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
        let v = ValidationArgs::from_env()
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

/// The last `max` bytes of a file the agent could have replaced (its run directory is
/// writable inside the sandbox): never through a symlink (`O_NOFOLLOW`), only a regular
/// file (a FIFO or a device would hang the reader: `O_NONBLOCK` for the open), at most
/// `max` bytes read.
pub(crate) fn read_tail(path: &Path, max: usize) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let max = u64::try_from(max).unwrap_or(u64::MAX);
    if meta.len() > max {
        f.seek(SeekFrom::Start(meta.len() - max)).ok()?;
    }
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

pub async fn spawn(args: AgentSpawnArgs, ctx: &Context, out: Output) -> CoordResult<u8> {
    if ctx.remote.is_none() && !ctx.in_git_repo {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{} is not a git repository: spawn agents inside one (their workspace)",
                ctx.repo_root.display()
            ),
        ));
    }
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = SpawnAgentRequest {
        agent: args.agent,
        profile: args.profile,
        task: args.task,
        runtime: args.runtime,
        task_type: args.task_type,
        timeout_minutes: args.timeout_minutes,
        isolation: args.isolation.isolation,
        keep_worktree: args.isolation.keep_worktree.then_some(true),
    };
    Ok(out.result(call::<SpawnAgent, _>(&*coord, &me, req).await, |r| {
        let place = match r.isolation {
            coord_domain::agents::isolation::Isolation::Worktree => ", in a worktree of its own",
            coord_domain::agents::isolation::Isolation::Shared => "",
        };
        format!(
            "spawned {} ({} profile, depth {}, validation: {}{place}); its task is {}\nfollow it: coord agent status {} \
             (its answer: coord agent output {})",
            r.agent_id,
            r.profile,
            r.depth,
            format!("{:?}", r.validator).to_lowercase(),
            r.task_id,
            r.agent_id,
            r.agent_id
        )
    }))
}

pub async fn list(active_only: bool, limit: i64, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = ListSpawnedAgentsRequest {
        active_only: Some(active_only),
        limit: Some(limit),
    };
    Ok(out.result(call::<ListSpawnedAgents, _>(&*coord, &me, req).await, |r| {
        if r.agents.is_empty() {
            return "no spawned agents".into();
        }
        let mut t = output::table(&[
            "AGENT",
            "STATUS",
            "PROFILE",
            "RUNTIME",
            "TASK",
            "WORKS IN",
            "SPAWNED BY",
            "CREATED",
        ]);
        for a in &r.agents {
            t.add_row(vec![
                a.agent_id.clone(),
                a.status.as_str().into(),
                a.profile.to_string(),
                a.runtime.name().into(),
                format!("{} ({})", a.task_id, a.task_status.map_or("?", |s| s.as_str())),
                works_in(a),
                a.parent_agent_id.clone(),
                a.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ]);
        }
        t.to_string()
    }))
}

/// Where a spawned agent works, for a table: the checkout, or its worktree's branch and
/// what became of it.
fn works_in(a: &AgentStatusResult) -> String {
    use coord_domain::agents::isolation::{Isolation, WorktreeState};
    match (&a.worktree, a.isolation) {
        (None, Isolation::Shared) => "checkout".into(),
        (None, Isolation::Worktree) => "worktree (not made yet)".into(),
        (Some(w), _) => match w.state {
            WorktreeState::Live if !a.status.is_active() => {
                format!("{} (left as it was at {}: not settled)", w.branch, w.path)
            }
            WorktreeState::Live => format!("{} ({})", w.branch, w.path),
            WorktreeState::Kept => format!("{} (kept: {})", w.branch, w.path),
            WorktreeState::Removed if w.branch_kept => format!("{} (worktree removed)", w.branch),
            WorktreeState::Removed => "worktree (removed, no changes)".into(),
        },
    }
}

pub async fn status(agent_id: &str, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = AgentRef {
        target_agent_id: agent_id.into(),
    };
    Ok(out.result(call::<GetAgentStatus, _>(&*coord, &me, req).await, |r| {
        let mut lines = Vec::new();
        let mut row = |k: &str, v: String| lines.push(format!("{k:<11} {v}"));
        row(
            "agent",
            format!(
                "{} ({}, {} profile, {})",
                r.agent_id,
                r.agent,
                r.profile,
                r.runtime.name()
            ),
        );
        row("status", r.status.as_str().into());
        row("spawned by", format!("{} (depth {})", r.parent_agent_id, r.depth));
        row(
            "task",
            format!("{} ({})", r.task_id, r.task_status.map_or("unknown", |s| s.as_str())),
        );
        row("created", r.created_at.to_rfc3339());
        if let Some(t) = r.started_at {
            row("started", t.to_rfc3339());
        }
        if let Some(t) = r.ended_at {
            row("ended", t.to_rfc3339());
        }
        row("deadline", format!("{} minutes", r.deadline_minutes));
        if let Some(c) = r.exit_code {
            row("exit code", c.to_string());
        }
        if let Some(e) = &r.error {
            row("error", e.clone());
        }
        if r.stop_requested {
            row("stop", "requested".into());
        }
        row("works in", works_in(r));
        if let Some(ports) = r.worktree.as_ref().and_then(|w| w.ports.as_ref()) {
            row(
                "ports",
                format!("{}-{} (allocate_ports under its id)", ports.db_port, ports.api_port),
            );
        }
        if let Some(commit) = r.worktree.as_ref().and_then(|w| w.commit.as_ref()) {
            row("its work", format!("commit {commit}"));
        }
        if let (Some(host), Some(pid)) = (&r.host, r.pid) {
            row("supervisor", format!("pid {pid} on {host}"));
        }
        lines.join("\n")
    }))
}

pub async fn output(agent_id: &str, wait: Option<std::time::Duration>, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = AgentOutputRequest {
        target_agent_id: agent_id.into(),
        wait_seconds: wait.map(|w| w.as_secs().max(1)),
    };
    Ok(out.result(call::<GetAgentOutput, _>(&*coord, &me, req).await, |r| {
        let mut text = String::new();
        for d in &r.permission_denials {
            let tool = d.get("tool_name").and_then(|t| t.as_str()).unwrap_or("a tool");
            let input = d.get("tool_input").map(|i| i.to_string()).unwrap_or_default();
            text.push_str(&format!("refused by the runtime: {tool} {input}\n"));
        }
        match (&r.result, &r.error) {
            (Some(result), _) => text.push_str(result),
            (None, e) => {
                let why = e.as_deref().map_or(String::new(), |e| format!(": {e}"));
                text.push_str(&format!("(no final answer: {}{why})", r.status.as_str()));
                // The end of its output so far, for a person to see where it is.
                if let Some(tail) = &r.output_tail {
                    let last: Vec<&str> = tail.lines().rev().take(10).collect();
                    text.push_str("\n--- the end of its output ---\n");
                    text.push_str(&last.into_iter().rev().collect::<Vec<_>>().join("\n"));
                }
            }
        }
        text
    }))
}

pub async fn stop(agent_id: &str, reason: Option<String>, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = StopAgentRequest {
        target_agent_id: agent_id.into(),
        reason,
    };
    Ok(out.result(call::<StopAgent, _>(&*coord, &me, req).await, |r| {
        if r.stopping {
            format!("stopping {}: its task goes back to the queue", r.agent_id)
        } else {
            format!("{} had already ended ({})", r.agent_id, r.status.as_str())
        }
    }))
}
