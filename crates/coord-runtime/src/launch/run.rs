//! One launch from request to settled end: checked, prepared, registered (identity, key,
//! profile, pre-flight record), supervised, then everything given back.

use super::outcome::Outcome;
use super::preflight::{judge, no_validator, summary};
use super::programs::{bwrap_ready, loopback_http, program_of, runtime, sandbox_enabled};
use super::supervise::{Supervised, supervise};
use super::{AGENT_TYPE, LaunchRequest, find};
use crate::context::Context;
use crate::isolate;
use crate::open;
use coord_domain::access::Principal;
use coord_domain::agents::isolation::{IsolatedWorktree, Isolation};
use coord_domain::agents::preflight::PreflightRequest;
use coord_domain::agents::spawn::{self, SpawnStatus, SpawnUpdate, SpawnedAgent};
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::keys::{CreateApiKeyRequest, CreateApiKeyResult, RevokeApiKeyRequest};
use coord_domain::profiles::{AssignProfileRequest, UnassignProfileRequest};
use coord_domain::queue::CompleteWorkRequest;
use coord_domain::sessions::EndSessionRequest;
use coord_domain::{Caller, CoordError, CoordResult, Empty, ErrorCode};
use coord_egress::Resolver;
use coord_egress::sandbox::{self, MODEL_PORT};
use coord_service::call;
use coord_service::ops::{
    agents as agent_ops, keys as key_ops, profiles as profile_ops, queue as queue_ops, sessions as session_ops,
};
use coord_service::{Coordination, Coordinator};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `coord agent run`, or with `spawned` the supervisor of an agent `spawn_agent`
/// registered (`coord agent supervise`): then the definition, task, identity, profile
/// and deadline are the record's, pre-flight validation already happened, and the end
/// of the run is reported to the record and settles its task.
pub async fn launch(mut req: LaunchRequest, ctx: &Context, spawned: Option<SpawnedAgent>) -> CoordResult<Outcome> {
    open::local_only(
        ctx,
        "`coord agent run` (it serves the coordinator to the agent it launches)",
    )?;
    let d = match &spawned {
        Some(record) => record.definition.clone(),
        None => find(ctx, &req.agent)?.1,
    };
    let runtime = runtime(req.options.runtime.as_deref(), &d)?;
    check(&req, ctx, runtime)?;
    let prepared = prepare(&req, ctx, &d, runtime).await?;
    let registered = register(&req, &prepared, &d, runtime, spawned.as_ref()).await?;
    let agent_id = registered.agent.agent_id.clone();
    let run_dir = prepared.ctx.state_dir.join("runs").join(&agent_id);
    let (ctx, worktree) = enter(&mut req, prepared.ctx.clone(), &registered, spawned.as_ref(), &run_dir).await?;
    let outcome = supervise(Supervised {
        ctx: &ctx,
        task: &req.task,
        options: &req.options,
        d: &d,
        runtime,
        program: &prepared.program,
        bwrap: prepared.bwrap.as_deref(),
        coordinator: registered.coordinator.clone(),
        resolver: prepared.resolver,
        agent: registered.agent.clone(),
        key: &registered.key.api_key,
        run_dir: &run_dir,
        relayed: prepared.relayed.as_ref().map(|(h, p, _)| (h.clone(), *p)),
        model_url: prepared.inner_model_url.as_deref(),
        deadline: registered.deadline,
        spawned: spawned.is_some(),
    })
    .await;
    if let (Some(record), Ok(o)) = (&spawned, &outcome) {
        settle_task(&registered, record, o).await;
    }
    let worktree = give_back(&registered, &ctx, worktree, req.options.keep_worktree).await;
    let mut outcome = outcome;
    if let Ok(o) = &mut outcome {
        o.worktree = worktree.clone();
        o.deadline = registered.deadline;
    }
    if spawned.is_some() {
        let ended = ended(&outcome, worktree);
        if let Err(e) = registered.coordinator.record_agent_run(&agent_id, ended).await {
            eprintln!("coord agent: could not record the end of {agent_id}'s run: {e}");
        }
    }
    outcome
}

/// Everything the user can get wrong is checked before anything is looked up, started
/// or registered, so that the first error is the one to fix.
fn check(req: &LaunchRequest, ctx: &Context, runtime: Runtime) -> CoordResult<()> {
    if req.task.trim().is_empty() {
        return Err(CoordError::new(ErrorCode::InvalidArgument, "the task is empty").with_field("task"));
    }
    if !ctx.in_git_repo {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{} is not a git repository: run coord agent run inside one",
                ctx.repo_root.display()
            ),
        ));
    }
    let sandboxed = sandbox_enabled()?;
    if !sandboxed && runtime == Runtime::Aider {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "COORD_SANDBOX_ENABLED=false: Aider has no permission system of its own; it runs only inside the sandbox",
        ));
    }
    for e in &req.options.env {
        if !sandbox::valid_env_name(e.split_once('=').map_or(e.as_str(), |(k, _)| k)) {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("--env {e:?}: give NAME or NAME=VALUE, NAME of letters, digits and _"),
            )
            .with_field("env"));
        }
    }
    if req.options.timeout.is_some_and(|t| t < Duration::from_secs(1)) {
        return Err(CoordError::new(ErrorCode::InvalidArgument, "--timeout: give at least 1s").with_field("timeout"));
    }
    let v = &req.options.validation;
    if !v.no_validation && v.validator_command.is_none() && v.validator_url.is_none() {
        return Err(no_validator());
    }
    Ok(())
}

/// What this machine gives the launch: the program, bubblewrap, the resolver, and the
/// model endpoint (with the context that may reach it).
struct Prepared {
    ctx: Context,
    program: PathBuf,
    /// None: `COORD_SANDBOX_ENABLED=false`.
    bwrap: Option<PathBuf>,
    resolver: Resolver,
    model_url: Option<String>,
    /// The model endpoint on this machine's loopback, relayed into the sandbox.
    relayed: Option<(String, u16, String)>,
    /// The model endpoint as the agent reaches it.
    inner_model_url: Option<String>,
}

async fn prepare(req: &LaunchRequest, ctx: &Context, d: &AgentDefinition, runtime: Runtime) -> CoordResult<Prepared> {
    let program = program_of(runtime, req.options.program.clone()).await?;
    if !d.tools_enforced_by(runtime) {
        eprintln!(
            "coord agent: note: {} has no per-tool list; {}'s `tools:` are not enforced by it (the sandbox decides what it can write and reach)",
            runtime.name(),
            d.name
        );
    }
    let bwrap = if sandbox_enabled()? {
        Some(bwrap_ready().await?)
    } else {
        eprintln!(
            "coord agent: WARNING: COORD_SANDBOX_ENABLED=false: the agent runs OUTSIDE the sandbox: only {}'s own \
             permission checks and coord's hooks hold it; nothing stops its commands writing outside the \
             workspace or reaching any host. Recorded in the audit trail as advisory enforcement.",
            runtime.name()
        );
        None
    };
    let resolver = Resolver::with_pins(&req.options.resolve)
        .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, format!("--resolve {m}")).with_field("resolve"))?;
    // The model endpoint: relayed when it is plain HTTP on loopback (no proxy can reach
    // this machine's loopback for the agent), otherwise reached through the proxy, its
    // host then one of the `model_providers` category.
    let key_var = match runtime {
        Runtime::Claude => "ANTHROPIC_BASE_URL",
        Runtime::Codex | Runtime::Aider => "OPENAI_BASE_URL",
    };
    let model_url = req
        .options
        .model_url
        .clone()
        .or_else(|| std::env::var(key_var).ok().filter(|u| !u.trim().is_empty()));
    let mut ctx = ctx.clone();
    // Unsandboxed, the agent shares this machine's loopback: nothing to relay.
    let relayed = model_url.as_deref().and_then(loopback_http).filter(|_| bwrap.is_some());
    if let (Some(url), None) = (&model_url, &relayed) {
        let target = coord_domain::network::parse_target(url).map_err(|m| {
            CoordError::new(ErrorCode::InvalidArgument, format!("--model-url {url:?}: {m}")).with_field("model_url")
        })?;
        ctx.model_endpoints.push(target.to_string());
    }
    let inner_model_url = match (&relayed, &model_url) {
        (Some((_, _, path)), _) => Some(format!("http://127.0.0.1:{MODEL_PORT}{path}")),
        (None, url) => url.clone(),
    };
    Ok(Prepared {
        ctx,
        program,
        bwrap,
        resolver,
        model_url,
        relayed,
        inner_model_url,
    })
}

/// What was registered for the agent; `give_back` undoes it whatever happens.
struct Registered {
    coordinator: Arc<Coordinator>,
    coord: Arc<dyn Coordination>,
    /// The person (or coordinator) launching: assigns, records, revokes.
    operator: Principal,
    agent: Caller,
    deadline: Duration,
    key: CreateApiKeyResult,
}

async fn register(
    req: &LaunchRequest,
    p: &Prepared,
    d: &AgentDefinition,
    runtime: Runtime,
    spawned: Option<&SpawnedAgent>,
) -> CoordResult<Registered> {
    let coordinator = Arc::new(open::coordinator_with(&p.ctx, 8).await?);
    let coord: Arc<dyn Coordination> = coordinator.clone();
    let operator = Principal::local(p.ctx.caller.clone());
    let agent_id = match spawned {
        Some(record) => record.agent_id.clone(),
        None => spawn::agent_id_for(&d.name),
    };
    // The files the task is about: not while another agent holds one (Aider, which has
    // no hooks, could not be stopped once it runs).
    if !req.options.files.is_empty() {
        use coord_service::CoordinationExt as _;
        let paths = req.options.files.clone();
        coord
            .check_edit(&p.ctx.caller, coord_domain::locks::CheckEditRequest { paths })
            .await?;
    }
    let (limit, policy) = profile_limits(&*coord, &operator, d).await?;
    // The profile's deadline, unless --timeout says otherwise.
    let deadline = match spawned {
        Some(record) => Duration::from_secs(u64::try_from(record.deadline_minutes).unwrap_or(1) * 60),
        None => req.options.timeout.or(limit).unwrap_or(Duration::from_secs(30 * 60)),
    };
    // Pre-flight validation, before anything is registered for the agent.
    if spawned.is_none() {
        let plan = summary(
            d,
            runtime,
            &req.task,
            policy,
            p.model_url.clone(),
            p.bwrap.is_some(),
            &req.options.env,
            &req.options.resolve,
        );
        let (validator, verdict, failure) = judge(&req.options.validation, &plan).await?;
        let preflight = PreflightRequest {
            target_agent_id: agent_id.clone(),
            plan,
            validator,
            verdict,
            failure,
        };
        call::<agent_ops::RecordPreflight, _>(&*coord, &operator, preflight).await?;
        let assign = AssignProfileRequest {
            profile: d.profile.coord_profile().into(),
            target_agent_id: Some(agent_id.clone()),
            target_agent_type: None,
        };
        call::<profile_ops::AssignProfile, _>(&*coord, &operator, assign).await?;
    }
    let key = CreateApiKeyRequest {
        bound_agent_id: agent_id.clone(),
        bound_agent_type: AGENT_TYPE.into(),
        expires_in_minutes: Some(
            i64::try_from(deadline.as_secs() / 60 + 5)
                .unwrap_or(i64::MAX)
                .min(527_040),
        ),
        session_id: None,
        task_id: None,
    };
    let key = call::<key_ops::CreateApiKey, _>(&*coord, &operator, key).await?;
    Ok(Registered {
        coordinator,
        coord,
        operator,
        agent: Caller::new(agent_id, AGENT_TYPE),
        deadline,
        key,
    })
}

/// The definition's coord profile: its maximum execution time and network policy.
async fn profile_limits(
    coord: &dyn Coordination,
    operator: &Principal,
    d: &AgentDefinition,
) -> CoordResult<(Option<Duration>, String)> {
    let profiles = call::<profile_ops::ListProfiles, _>(coord, operator, Empty {}).await?;
    let coord_profile = d.profile.coord_profile();
    let profile = profiles
        .profiles
        .iter()
        .find(|p| p.name == coord_profile)
        .ok_or_else(|| {
            CoordError::new(
                ErrorCode::NotFound,
                format!("the built-in profile {coord_profile} is missing: run coord migrate"),
            )
        })?;
    let policy = profile
        .network_policy
        .clone()
        .unwrap_or_else(|| coord_domain::network::DENY_ALL.to_string());
    Ok((profile.resource_limits.max_execution_time.max(), policy))
}

async fn revoke(r: &Registered, key_id: String) {
    let _ = call::<key_ops::RevokeApiKey, _>(&*r.coord, &r.operator, RevokeApiKeyRequest { key_id }).await;
}

/// An isolated agent works in a worktree of its own: from here on its context is seen
/// from it. A spawned agent's record says it started (or it was stopped first: then
/// nothing runs and what was registered is given back).
async fn enter(
    req: &mut LaunchRequest,
    ctx: Context,
    r: &Registered,
    spawned: Option<&SpawnedAgent>,
    run_dir: &std::path::Path,
) -> CoordResult<(Context, Option<IsolatedWorktree>)> {
    let agent_id = &r.agent.agent_id;
    let (ctx, worktree) = match req.options.isolation.unwrap_or_default() {
        Isolation::Shared => (ctx, None),
        Isolation::Worktree => match isolate::enter(&ctx, &*r.coord, &r.operator, agent_id).await {
            Ok((moved, wt, ports)) => {
                req.options.env.extend(ports);
                (moved, Some(wt))
            }
            Err(e) => {
                revoke(r, r.key.key_id.clone()).await;
                return Err(e);
            }
        },
    };
    if spawned.is_some() {
        let started = SpawnUpdate::Started {
            host: crate::context::hostname(),
            pid: std::process::id(),
            run_dir: run_dir.display().to_string(),
            key_id: r.key.key_id.clone(),
            worktree: worktree.clone(),
        };
        if let Err(e) = r.coordinator.record_agent_run(agent_id, started).await {
            // Stopped (or reclaimed) before it started: nothing runs.
            revoke(r, r.key.key_id.clone()).await;
            if let Some(wt) = worktree {
                isolate::leave(&ctx, &*r.coord, &r.operator, wt, agent_id, req.options.keep_worktree).await;
            }
            return Err(e);
        }
    }
    Ok((ctx, worktree))
}

/// A spawned agent's final answer settles its task (as the agent, which claimed it);
/// without one the task goes back to the queue with the session in `give_back`.
async fn settle_task(r: &Registered, record: &SpawnedAgent, o: &Outcome) {
    let Some(result) = &o.result else { return };
    if o.stopped.is_some() {
        return;
    }
    let failed = o.exit_code != 0 || o.result_is_error;
    let done = CompleteWorkRequest {
        task_id: record.task_id.clone(),
        success: !failed,
        result: Some(json!({"result": result})),
        error_message: failed.then(|| format!("the agent's run failed: {result}")),
        changes: None,
        skill: None,
    };
    let me = Principal::local(r.agent.clone());
    if let Err(e) = call::<queue_ops::CompleteWork, _>(&*r.coord, &me, done).await {
        eprintln!("coord agent: could not settle task {}: {e}", record.task_id);
    }
}

/// Whatever happened: the key is revoked, the session ended (its locks released, its
/// claimed tasks back in the queue), the assignment removed, the worktree left.
async fn give_back(
    r: &Registered,
    ctx: &Context,
    worktree: Option<IsolatedWorktree>,
    keep_worktree: bool,
) -> Option<IsolatedWorktree> {
    let agent_id = &r.agent.agent_id;
    revoke(r, r.key.key_id.clone()).await;
    let end = EndSessionRequest {
        release_locks: Some(true),
        handoff: None,
        requeue_tasks: Some(true),
        if_session: None,
    };
    let me = Principal::local(r.agent.clone());
    let _ = call::<session_ops::EndSessionOp, _>(&*r.coord, &me, end).await;
    let unassign = UnassignProfileRequest {
        target_agent_id: Some(agent_id.clone()),
        target_agent_type: None,
    };
    let _ = call::<profile_ops::UnassignProfile, _>(&*r.coord, &r.operator, unassign).await;
    match worktree {
        Some(wt) => Some(isolate::leave(ctx, &*r.coord, &r.operator, wt, agent_id, keep_worktree).await),
        None => None,
    }
}

/// A spawned agent's end, as its record keeps it.
fn ended(outcome: &CoordResult<Outcome>, worktree: Option<IsolatedWorktree>) -> SpawnUpdate {
    match outcome {
        Ok(o) => SpawnUpdate::Ended {
            status: match (o.stopped.as_deref(), o.success) {
                (Some("deadline"), _) => SpawnStatus::TimedOut,
                (Some(_), _) => SpawnStatus::Stopped,
                (None, true) => SpawnStatus::Completed,
                (None, false) => SpawnStatus::Failed,
            },
            exit_code: Some(o.exit_code),
            result: o.result.clone(),
            error: match (&o.stopped, o.success) {
                (Some(why), _) => Some(format!("stopped: {why}")),
                (None, false) if o.result.is_none() => Some(format!(
                    "{} exited with {} and no final answer (output in {})",
                    o.runtime, o.exit_code, o.run_dir
                )),
                _ => None,
            },
            permission_denials: o.permission_denials.clone(),
            worktree,
        },
        Err(e) => SpawnUpdate::Ended {
            status: SpawnStatus::Failed,
            exit_code: None,
            result: None,
            error: Some(e.message.clone()),
            permission_denials: Vec::new(),
            worktree,
        },
    }
}
