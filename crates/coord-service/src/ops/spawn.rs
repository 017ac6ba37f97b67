//! Spawning agents and following them (docs/agents.md "Spawning"): `spawn_agent` judges
//! the launch (pre-flight), registers the agent, its task and its profile in one
//! transaction and has the [`Launcher`](crate::Launcher) start its supervisor;
//! `get_agent_status`, `get_agent_output` and `stop_agent` follow it. A supervisor that
//! died without reporting is found out here (its process is gone) and its agent is
//! reclaimed (`FollowUp::Reclaim`): session ended (locks released, task back in the
//! queue), key revoked. A supervisor that could not be started leaves its agent to
//! `FollowUp::NotStarted`.

use super::{answer, refuse};
use crate::Coordinator;
use crate::follow_up::FollowUp;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::agents::Runtime;
use coord_domain::agents::preflight::{self, PreflightRequest};
use coord_domain::agents::spawn::{
    self, AgentOutputRequest, AgentOutputResult, AgentRef, AgentStatusResult, DelegateTaskRequest, DelegateTaskResult,
    ListSpawnedAgentsRequest, ListSpawnedAgentsResult, SpawnAgentRequest, SpawnAgentResult, SpawnPlan, SpawnStatus,
    SpawnUpdate, SpawnedAgent, StopAgentRequest, StopAgentResult,
};
use coord_domain::profiles::{self, Need, Permission, Resource};
use coord_domain::queue::{SubmitWorkRequest, TaskStatus, validate_submission};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode, Identity};
use coord_store::{NewSpawn, OpCtx, UsageOf};

/// The most of a run's output `get_agent_output` shows.
const OUTPUT_TAIL: usize = 16 * 1024;

pub struct SpawnAgent;
impl Operation for SpawnAgent {
    const NAME: &'static str = "spawn_agent";
    const SUMMARY: &'static str = "Launch a sub-agent with least privilege on a task, supervised";
    const DESCRIPTION: &'static str = "Launch a sub-agent (Claude Code, Codex or Aider) on a task, in the \
        sandbox with only the tools and paths of its profile: agent (an id of the workspace's agent registry, \
        .claude/agents/*.md or agents.json: its tools and system prompt) or profile (read_only, write, \
        verification, design: a generic worker), the task (its prompt), optional runtime (default: the \
        definition's, else claude), task_type, timeout_minutes, and isolation: \"shared\" (default: the coordinator's \
        checkout) or \"worktree\" (a git worktree of its own on a new branch coord/<agent_id>, with its own port \
        block; its changes are committed to that branch when it ends and the worktree removed unless keep_worktree; \
        its locks and tasks stay in the same coordination space). The launch is judged by the \
        configured pre-flight validator first (refused with preflight_denied otherwise). Registers the agent \
        (NAME-<hex>, type worker, its worker profile), submits the task already claimed by it, starts its \
        supervisor and answers {success:true, agent_id, task_id, status:\"starting\", depth, profile, validator}. \
        Follow it with get_agent_status and get_agent_output; stop it with stop_agent. Its final answer completes \
        the task; if it dies or overruns its deadline, its locks are released and its task goes back to the queue. \
        Refused beyond max_spawned_agents, the running cap, spawn depth 2, or when the child would hold more trust, \
        operations or tools than its parent; a spawned agent launches only the agents its definition delegates to \
        (delegates_to, its children).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::SpawnAgent, 0).starting_work();
    const HTTP: &'static [Http] = &[Http::post("/agents/spawn").errors(&[403, 404, 409, 503])];
    const EXAMPLE: &'static str =
        "{\"agent\": \"code-reviewer\", \"task\": \"Review src/auth for injection bugs and report them\"}";
    type Request = SpawnAgentRequest;
    type Response = SpawnAgentResult;
    type Args = SpawnPlan;

    fn uses(plan: &SpawnPlan) -> Vec<(Resource, Vec<String>)> {
        vec![(Resource::MaxSpawnedAgents, vec![plan.agent_id.clone()])]
    }

    fn validate(c: &Coordinator, _: &Identity, req: SpawnAgentRequest) -> CoordResult<SpawnPlan> {
        let (runtime, task_type, which) = spawn::validate_request(&req)?;
        let definition = match which {
            Ok(name) => c.launcher()?.definition(&name)?,
            Err(profile) => spawn::generic_definition(profile),
        };
        Ok(SpawnPlan {
            agent_id: spawn::agent_id_for(&definition.name),
            runtime: runtime.or(definition.runtime).unwrap_or(Runtime::Claude),
            definition,
            task: req.task.trim().to_string(),
            task_type,
            timeout_minutes: req.timeout_minutes,
            isolation: req.isolation.unwrap_or_default(),
            keep_worktree: req.keep_worktree.unwrap_or(false),
        })
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, plan: SpawnPlan) -> CoordResult<SpawnAgentResult> {
        spawn_one(c, &ctx, plan).await
    }

    fn follow_ups(answer: &CoordResult<SpawnAgentResult>) -> Vec<FollowUp> {
        not_started(answer)
    }
}

/// A spawn from its checked plan: judged, registered (the store's transaction audits it,
/// or its refusal), started.
async fn spawn_one(c: &Coordinator, ctx: &OpCtx, plan: SpawnPlan) -> CoordResult<SpawnAgentResult> {
    let spawn = match prepare(c, ctx, plan).await {
        Ok(spawn) => spawn,
        Err(e) => return refuse(c, ctx, e).await,
    };
    let result = c.store().spawn_agent(ctx.clone(), spawn).await?;
    start(c, result).await
}

pub struct DelegateTask;
impl Operation for DelegateTask {
    const NAME: &'static str = "delegate_task";
    const SUMMARY: &'static str = "Run a sub-agent on a task and answer its final answer";
    const DESCRIPTION: &'static str = "Delegate a task to a sub-agent (spec 002's delegate_task): spawn_agent with \
        every rule of it (pre-flight, least privilege, limits, supervision), then wait up to wait_seconds (default \
        and most 300) for its run to end. Takes agent (an id of the agent registry: .claude/agents/*.md or \
        agents.json) or profile, the task, optional runtime, timeout_minutes and isolation (shared or worktree, as \
        spawn_agent). A spawned agent delegates only to \
        the agents its definition names in delegates_to (or its children). Answers {success:true, agent_id, task_id, status, result (its final \
        answer), error}; a run still going after the wait answers status running: follow it with \
        get_agent_output (wait_seconds).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::SpawnAgent, 0).starting_work();
    const HTTP: &'static [Http] = &[Http::post("/agents/delegate").errors(&[403, 404, 409, 503])];
    const EXAMPLE: &'static str =
        "{\"agent\": \"researcher\", \"task\": \"Summarise how src/auth validates tokens\", \"wait_seconds\": 120}";
    type Request = DelegateTaskRequest;
    type Response = DelegateTaskResult;
    type Args = (SpawnPlan, u64);

    fn uses((plan, _): &(SpawnPlan, u64)) -> Vec<(Resource, Vec<String>)> {
        SpawnAgent::uses(plan)
    }

    fn validate(c: &Coordinator, who: &Identity, req: DelegateTaskRequest) -> CoordResult<(SpawnPlan, u64)> {
        let wait = req.wait_seconds.unwrap_or(spawn::MAX_WAIT_SECONDS);
        if wait > spawn::MAX_WAIT_SECONDS {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("wait_seconds: {wait}: at most {}", spawn::MAX_WAIT_SECONDS),
            )
            .with_field("wait_seconds"));
        }
        let spawn = SpawnAgentRequest {
            agent: req.agent,
            profile: req.profile,
            task: req.task,
            runtime: req.runtime,
            task_type: None,
            timeout_minutes: req.timeout_minutes,
            isolation: req.isolation,
            keep_worktree: req.keep_worktree,
        };
        Ok((SpawnAgent::validate(c, who, spawn)?, wait))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (plan, wait): (SpawnPlan, u64)) -> CoordResult<DelegateTaskResult> {
        let spawned = spawn_one(c, &ctx, plan).await?;
        let agent = match ended_within(c, &ctx, &spawned.agent_id, wait).await {
            Ok(agent) => agent,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let result = DelegateTaskResult {
            success: true,
            agent_id: agent.agent_id,
            task_id: agent.task_id,
            status: agent.status,
            result: agent.result,
            error: agent.error,
        };
        answer(c, &ctx, result).await
    }

    fn follow_ups(answer: &CoordResult<DelegateTaskResult>) -> Vec<FollowUp> {
        not_started(answer)
    }
}

/// Everything before the registration: the profiles held against each other, then the
/// validator's verdict.
async fn prepare(c: &Coordinator, ctx: &OpCtx, plan: SpawnPlan) -> CoordResult<NewSpawn> {
    let launcher = c.launcher()?;
    launcher.ready(plan.runtime).await?;
    let facts = c
        .store()
        .policy_facts(ctx.now, &ctx.who.agent_id, Some(&ctx.who.agent_type), UsageOf::Nothing)
        .await?;
    let (parent_profile, source) = profiles::resolve(facts.by_agent, facts.by_type);
    let parent_profile = profiles::within_reach(parent_profile, source, ctx.credential);
    let child_name = plan.definition.profile.coord_profile();
    let child = c
        .store()
        .profile_named(child_name)
        .await?
        .ok_or_else(|| profiles::profile_not_found(child_name))?;
    // Refused before the validator is asked (the transaction checks again).
    spawn::check_privileges(&parent_profile, &child)?;
    let policy = child
        .network_policy
        .clone()
        .unwrap_or_else(|| coord_domain::network::DENY_ALL.to_string());
    let task = validate_submission(
        SubmitWorkRequest {
            task_type: plan.task_type.clone(),
            task_description: plan.task.clone(),
            input_data: Some(serde_json::json!({"spawned_agent_id": plan.agent_id})),
            priority: None,
            depends_on: None,
        },
        crate::new_id(),
        c.config().max_attempts,
    )?;
    // The validator (perhaps a paid model call) is asked last, once everything else passed.
    let summary = launcher.plan(&plan.definition, plan.runtime, &plan.task, &policy);
    let (validator, verdict, failure) = launcher.judge(&summary).await?;
    let judged = PreflightRequest {
        target_agent_id: plan.agent_id.clone(),
        plan: summary,
        validator,
        verdict,
        failure,
    };
    if let Err(why) = preflight::decide(&judged) {
        return Err(CoordError::new(
            ErrorCode::PreflightDenied,
            format!(
                "the launch of {} was denied by pre-flight validation (nothing was registered): {why}",
                judged.plan.agent
            ),
        )
        .with_detail("target_agent_id", plan.agent_id.clone())
        .with_detail("validator", format!("{validator:?}").to_lowercase())
        .with_detail("reason", why));
    }
    let mut record = SpawnedAgent::new(
        &plan.agent_id,
        &ctx.who.agent_id,
        plan.definition,
        plan.runtime,
        &task.task_id,
        &plan.task,
    );
    record.isolation = plan.isolation;
    record.keep_worktree = plan.keep_worktree;
    Ok(NewSpawn {
        record,
        parent_profile,
        task,
        timeout_minutes: plan.timeout_minutes,
        limits: c.config().spawn_limits,
        validator,
    })
}

/// Starts the registered agent's supervisor. An agent that could not be started is
/// answered as `agent_start_failed` naming it, its task and the reason, from which its
/// follow-up (`not_started`) ends it as failed and fails its task.
async fn start(c: &Coordinator, result: SpawnAgentResult) -> CoordResult<SpawnAgentResult> {
    let launcher = c.launcher()?;
    match launcher.start(&result.agent_id).await {
        Ok(pid) => {
            // Known from now on, so that a supervisor dying before it reports is found out.
            let launched = SpawnUpdate::Launched {
                host: launcher.host(),
                pid,
                pid_started: launcher.started(pid),
            };
            if let Err(e) = c.record_agent_run(&result.agent_id, launched).await {
                tracing::warn!(agent = %result.agent_id, error = %e, "could not record the supervisor's pid");
            }
            Ok(result)
        }
        Err(e) => {
            // Settled by its follow-up (`FollowUp::NotStarted`): task failed, record
            // ended, profile removed, before the caller reads this answer.
            let why = format!("its supervisor could not be started: {}", e.message);
            Err(CoordError::new(
                ErrorCode::AgentStartFailed,
                format!("{} was registered but not started: {why}", result.agent_id),
            )
            .with_detail("agent_id", result.agent_id)
            .with_detail("task_id", result.task_id)
            .with_detail("reason", why))
        }
    }
}

/// The follow-up of a spawn whose supervisor could not be started (`start` names the
/// agent, its task and the reason in the error it answers).
fn not_started<T>(answer: &CoordResult<T>) -> Vec<FollowUp> {
    let Err(e) = answer else {
        return Vec::new();
    };
    let detail = |key: &str| e.details.get(key).and_then(|v| v.as_str()).map(String::from);
    match (e.code, detail("agent_id"), detail("task_id"), detail("reason")) {
        (ErrorCode::AgentStartFailed, Some(agent_id), Some(task_id), Some(why)) => {
            vec![FollowUp::NotStarted { agent_id, task_id, why }]
        }
        _ => Vec::new(),
    }
}

/// The record of a spawned agent the caller may follow, with its task's status; a
/// supervisor found dead on this machine is reclaimed first.
async fn followed(
    c: &Coordinator,
    ctx: &OpCtx,
    agent_id: &str,
    to_stop: bool,
) -> CoordResult<(SpawnedAgent, Option<TaskStatus>)> {
    let (agent, task) = c
        .store()
        .spawned_agent(agent_id)
        .await?
        .ok_or_else(|| spawn::not_spawned(agent_id))?;
    spawn::may_follow(&agent, &ctx.who.agent_id, ctx.audit_admin, to_stop)?;
    let now = c.clock.now().unwrap_or_else(chrono::Utc::now);
    let why = match supervisor_gone(c, &agent) {
        Some(pid) => Some(format!(
            "its supervisor (pid {pid}) died without reporting how the run ended"
        )),
        None if agent.overdue(now) => Some(format!(
            "its supervisor ({} pid {}) has not reported the end {} minutes past its deadline",
            agent.host.as_deref().unwrap_or("never started,"),
            agent.pid.map_or_else(|| "none".to_string(), |p| p.to_string()),
            spawn::REPORT_GRACE_MINUTES
        )),
        None => None,
    };
    if let Some(why) = why {
        reclaim(c, &agent, SpawnStatus::Lost, why).await?;
        let (agent, task) = c
            .store()
            .spawned_agent(agent_id)
            .await?
            .ok_or_else(|| spawn::not_spawned(agent_id))?;
        return Ok((agent, task));
    }
    Ok((agent, task))
}

/// The record once its run ended, or as it is after `wait` seconds. A real process's end
/// is awaited by reading its record now and then (a supervisor in another process, or on
/// another machine, writes it).
async fn ended_within(c: &Coordinator, ctx: &OpCtx, agent_id: &str, wait: u64) -> CoordResult<SpawnedAgent> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(wait);
    loop {
        let (agent, _) = followed(c, ctx, agent_id, false).await?;
        if !agent.status.is_active() || std::time::Instant::now() >= until {
            return Ok(agent);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// The pid of an active agent's supervisor that ran on this machine and is gone.
fn supervisor_gone(c: &Coordinator, agent: &SpawnedAgent) -> Option<u32> {
    let launcher = c.launcher.as_ref()?;
    let pid = agent.pid?;
    let alive = launcher
        .started(pid)
        .is_some_and(|s| agent.pid_started.is_none_or(|t| t == s));
    (agent.status.is_active() && agent.host.as_deref() == Some(launcher.host().as_str()) && !alive).then_some(pid)
}

/// Ends an agent whose supervisor cannot: its session (locks released, claimed tasks
/// back in the queue), its key and its profile (`FollowUp::Reclaim`), then its record.
async fn reclaim(c: &Coordinator, agent: &SpawnedAgent, status: SpawnStatus, why: String) -> CoordResult<()> {
    let settle = FollowUp::Reclaim {
        agent_id: agent.agent_id.clone(),
        key_id: agent.key_id.clone(),
    };
    c.follow(vec![settle]).await;
    let ended = SpawnUpdate::Ended {
        status,
        exit_code: None,
        result: None,
        error: Some(why),
        permission_denials: Vec::new(),
        worktree: None,
    };
    match c.record_agent_run(&agent.agent_id, ended).await {
        // Its supervisor reported after all.
        Err(e) if e.code == ErrorCode::AgentNotRunning => Ok(()),
        other => other.map(|_| ()),
    }
}

fn agent_ref(req: AgentRef) -> CoordResult<String> {
    let id = req.target_agent_id.trim();
    if id.is_empty() || id.len() > 128 {
        return Err(
            CoordError::new(ErrorCode::InvalidArgument, "target_agent_id: 1 to 128 characters")
                .with_field("target_agent_id"),
        );
    }
    Ok(id.to_string())
}

pub struct GetAgentStatus;
impl Operation for GetAgentStatus {
    const NAME: &'static str = "get_agent_status";
    const SUMMARY: &'static str = "Where a spawned agent is: starting, running, or how it ended";
    const DESCRIPTION: &'static str = "The status of an agent spawn_agent launched (for its parent, itself or an \
        administrator). Answers {success:true, agent_id, parent_agent_id, agent, profile, runtime, depth, status \
        (starting, running, completed, failed, stopped, timed_out, lost), task_id, task_status, created_at, \
        started_at, ended_at, deadline_minutes, exit_code, error, stop_requested}. An agent whose supervisor died \
        is reclaimed on the spot (status lost: locks released, task back in the queue).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::get("/agents/{target_agent_id}/status")
        .input(Input::Path("target_agent_id"))
        .errors(&[403, 404])];
    const EXAMPLE: &'static str = "{\"target_agent_id\": \"code-reviewer-1a2b3c4d5e6f\"}";
    type Request = AgentRef;
    type Response = AgentStatusResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: AgentRef) -> CoordResult<String> {
        agent_ref(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, agent_id: String) -> CoordResult<AgentStatusResult> {
        match followed(c, &ctx, &agent_id, false).await {
            Ok((agent, task)) => answer(c, &ctx, AgentStatusResult::of(&agent, task)).await,
            Err(e) => refuse(c, &ctx, e).await,
        }
    }
}

pub struct GetAgentOutput;
impl Operation for GetAgentOutput {
    const NAME: &'static str = "get_agent_output";
    const SUMMARY: &'static str = "A spawned agent's final answer and the end of its output";
    const DESCRIPTION: &'static str = "What an agent spawn_agent launched produced (for its parent, itself or an \
        administrator); with wait_seconds (at most 300) it first waits for the run to end. Answers {success:true, agent_id, status, result (its final answer, once it ended with one), error, \
        permission_denials (tool calls its runtime refused), output_tail (the last 16 KiB of its runtime's output, \
        when its run is on this machine)}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    // The body route first: it carries wait_seconds (remote clients use the first).
    const HTTP: &'static [Http] = &[
        Http::post("/agents/output")
            .errors(&[403, 404])
            .summary("A spawned agent's final answer, waiting up to wait_seconds for it"),
        Http::get("/agents/{target_agent_id}/output")
            .input(Input::Path("target_agent_id"))
            .errors(&[403, 404]),
    ];
    const EXAMPLE: &'static str = "{\"target_agent_id\": \"code-reviewer-1a2b3c4d5e6f\"}";
    type Request = AgentOutputRequest;
    type Response = AgentOutputResult;
    type Args = (String, u64);

    fn validate(_: &Coordinator, _: &Identity, req: AgentOutputRequest) -> CoordResult<(String, u64)> {
        let id = agent_ref(AgentRef {
            target_agent_id: req.target_agent_id,
        })?;
        let wait = req.wait_seconds.unwrap_or(0);
        if wait > spawn::MAX_WAIT_SECONDS {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("wait_seconds: {wait}: at most {}", spawn::MAX_WAIT_SECONDS),
            )
            .with_field("wait_seconds"));
        }
        Ok((id, wait))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (agent_id, wait): (String, u64)) -> CoordResult<AgentOutputResult> {
        let agent = match ended_within(c, &ctx, &agent_id, wait).await {
            Ok(agent) => agent,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let output_tail = match (c.launcher.as_ref(), &agent.host, &agent.run_dir) {
            (Some(l), Some(host), Some(dir)) if *host == l.host() => l.output_tail(dir, OUTPUT_TAIL),
            _ => None,
        };
        let result = AgentOutputResult {
            success: true,
            agent_id: agent.agent_id,
            status: agent.status,
            result: agent.result,
            error: agent.error,
            permission_denials: agent.permission_denials,
            output_tail,
        };
        answer(c, &ctx, result).await
    }
}

pub struct ListSpawnedAgents;
impl Operation for ListSpawnedAgents {
    const NAME: &'static str = "list_spawned_agents";
    const SUMMARY: &'static str = "The agents you spawned (an administrator: everyone's), newest first";
    const DESCRIPTION: &'static str = "List the agents spawn_agent launched for you — an administrator sees \
        everyone's — newest first, optionally only those starting or running (active_only), at most limit (default \
        100). Answers {success:true, agents:[{agent_id, parent_agent_id, agent, profile, runtime, depth, status, \
        task_id, task_status, created_at, started_at, ended_at, deadline_minutes, exit_code, error, \
        stop_requested}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::get("/agents/spawned")];
    const EXAMPLE: &'static str = "{\"active_only\": true}";
    type Request = ListSpawnedAgentsRequest;
    type Response = ListSpawnedAgentsResult;
    type Args = (bool, i64);

    fn validate(_: &Coordinator, _: &Identity, req: ListSpawnedAgentsRequest) -> CoordResult<(bool, i64)> {
        let limit = coord_domain::validate::int_in_range("limit", req.limit, 100, 1, 1000, ErrorCode::InvalidArgument)?;
        Ok((req.active_only.unwrap_or(false), limit))
    }

    async fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        (active_only, limit): (bool, i64),
    ) -> CoordResult<ListSpawnedAgentsResult> {
        let parent = (!ctx.audit_admin).then(|| ctx.who.agent_id.clone());
        let agents = match c.store().spawned_agents(parent, active_only, limit).await {
            Ok(rows) => rows.iter().map(|(a, t)| AgentStatusResult::of(a, *t)).collect(),
            Err(e) => return refuse(c, &ctx, e).await,
        };
        answer(c, &ctx, ListSpawnedAgentsResult { success: true, agents }).await
    }
}

pub struct StopAgent;
impl Operation for StopAgent {
    const NAME: &'static str = "stop_agent";
    const SUMMARY: &'static str = "Stop a spawned agent; its task goes back to the queue";
    const DESCRIPTION: &'static str = "Stop an agent spawn_agent launched (its parent or an administrator): its \
        supervisor stops the runtime's whole process group (TERM, then KILL after 10 s), ends its session (locks \
        released, task back in the queue) and revokes its key. Answers {success:true, agent_id, status, \
        stopping:true} while that happens, or stopping:false with how it had already ended. Until then every \
        operation of the agent is refused (tool_execution_denied).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::SpawnAgent, 0);
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::post("/agents/stop").errors(&[403, 404, 409])];
    const EXAMPLE: &'static str =
        "{\"target_agent_id\": \"code-reviewer-1a2b3c4d5e6f\", \"reason\": \"no longer needed\"}";
    type Request = StopAgentRequest;
    type Response = StopAgentResult;
    type Args = StopAgentRequest;

    fn validate(_: &Coordinator, _: &Identity, req: StopAgentRequest) -> CoordResult<StopAgentRequest> {
        let target_agent_id = agent_ref(AgentRef {
            target_agent_id: req.target_agent_id,
        })?;
        let reason = coord_domain::validate::optional_text("reason", req.reason, 500)?;
        Ok(StopAgentRequest {
            target_agent_id,
            reason,
        })
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: StopAgentRequest) -> CoordResult<StopAgentResult> {
        let (agent, _) = match followed(c, &ctx, &req.target_agent_id, true).await {
            Ok(found) => found,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        if !agent.status.is_active() {
            let result = StopAgentResult {
                success: true,
                agent_id: agent.agent_id,
                status: agent.status,
                stopping: false,
            };
            return answer(c, &ctx, result).await;
        }
        let why = req
            .reason
            .clone()
            .unwrap_or_else(|| format!("stopped by {}", ctx.who.agent_id));
        let update = SpawnUpdate::StopRequested {
            reason: Some(why.clone()),
        };
        let agent = c
            .store()
            .update_spawned_agent(ctx.clone(), agent.agent_id.clone(), update)
            .await?;
        // A running supervisor on this machine is told now; one elsewhere sees the request
        // when it next reads its record (and its agent is refused everything meanwhile). One
        // still starting reads it when it records its start, and never starts the agent.
        let mut status = agent.status;
        let mut stopping = true;
        if let (Some(l), Some(pid), Some(host)) = (c.launcher.as_ref(), agent.pid, &agent.host)
            && agent.status == SpawnStatus::Running
            && *host == l.host()
            && !l.signal_stop(pid, agent.pid_started)
        {
            // Its supervisor is gone: nobody else will end it.
            reclaim(c, &agent, SpawnStatus::Stopped, why).await?;
            (status, stopping) = (SpawnStatus::Stopped, false);
        }
        Ok(StopAgentResult {
            success: true,
            agent_id: agent.agent_id,
            status,
            stopping,
        })
    }
}

/// The name supervisors' reports are audited under.
pub const AGENT_RUN: &str = "agent_run";

impl Coordinator {
    /// A supervisor's report on its agent's run (`coord agent supervise`): applied to the
    /// record (`SpawnedAgent::apply`) and audited as `agent_run` by `coord-supervisor`.
    /// Not an operation: only the process running the agent knows, and it is local.
    pub async fn record_agent_run(&self, agent_id: &str, update: SpawnUpdate) -> CoordResult<SpawnedAgent> {
        let mut parameters = serde_json::to_value(&update).unwrap_or_default();
        parameters["target_agent_id"] = serde_json::Value::String(agent_id.to_string());
        let who = Caller::new(spawn::SUPERVISOR.0, spawn::SUPERVISOR.1).for_audit();
        let ctx = OpCtx::internal(self.clock.now(), who, AGENT_RUN, parameters);
        self.store()
            .update_spawned_agent(ctx, agent_id.to_string(), update)
            .await
    }
}
