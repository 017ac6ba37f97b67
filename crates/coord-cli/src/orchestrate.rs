//! `coord workflow`, `coord swarm` and `coord team` (docs/orchestration.md): graph
//! workflows and swarms through their operations, like any door; team files
//! (`teams.yaml`) checked against the workspace's agent registry, brought up (the
//! members marked `run: true` spawned) and followed.

use crate::args::{SwarmCommand, TeamCommand, WorkflowCommand};
use crate::context::Context;
use crate::open;
use crate::output::{self, Output};
use coord_agents::team::{self, Team};
use coord_domain::access::Principal;
use coord_domain::agents::FieldError;
use coord_domain::agents::isolation::Isolation;
use coord_domain::agents::spawn::{AgentRef, SpawnAgentRequest};
use coord_domain::locks::CheckLocksRequest;
use coord_domain::workflows::api::{
    CreateSwarmRequest, CreateWorkflowRequest, SwarmMemberSpec, SwarmRef, WorkflowRef, WorkflowView,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::call;
use coord_service::ops::locks::CheckLocks;
use coord_service::ops::spawn::{GetAgentStatus, SpawnAgent};
use coord_service::ops::workflows::{CreateSwarm, CreateWorkflow, GetSwarmResults, GetWorkflowStatus, ListWorkflows};
use serde_json::{Value, json};
use std::path::Path;

/// The most bytes a workflow or team file may hold.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

fn read(path: &Path) -> CoordResult<String> {
    let bad = |m: String| CoordError::new(ErrorCode::InvalidArgument, m).with_field("file");
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(bad(format!("{}: larger than {MAX_FILE_BYTES} bytes", path.display())));
    }
    std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))
}

/// Every problem of a file, one per line, as one refusal (`errors` in JSON).
fn invalid(path: &Path, what: &str, errors: &[FieldError]) -> CoordError {
    let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
    CoordError::new(
        ErrorCode::InvalidArgument,
        format!(
            "{} is not a valid {what} ({} error{}):\n{}",
            path.display(),
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            lines.join("\n")
        ),
    )
    .with_detail("errors", json!(errors))
    .with_detail("file", path.display().to_string())
}

/// A workflow file (YAML or JSON) as `create_workflow`'s request.
/// Read as YAML, then typed the way the operation types a request (a wrong type or an
/// unknown field named by its path: `nodes[0].priority`).
fn workflow_request(path: &Path) -> CoordResult<CreateWorkflowRequest> {
    let text = read(path)?;
    // Typed straight from YAML first: a string field takes `y` or `no` as text.
    let direct_error = match serde_saphyr::from_str::<CreateWorkflowRequest>(&text) {
        Ok(req) => return Ok(req),
        Err(e) => e.to_string(),
    };
    let first_line = |s: &str| {
        s.lines()
            .next()
            .unwrap_or("unreadable")
            .trim_start_matches("error: ")
            .to_string()
    };
    // Refused: again through JSON values, for an error that names its field's path.
    let value: Value = serde_saphyr::from_str(&text).map_err(|e| {
        let reason = format!("not YAML: {}", first_line(&e.to_string()));
        invalid(path, "workflow", &[FieldError::new("file", reason)])
    })?;
    let e = match coord_service::pipeline::parse_named::<CreateWorkflowRequest>(&value) {
        Err(e) => e,
        Ok(_) => {
            return Err(invalid(
                path,
                "workflow",
                &[FieldError::new("file", first_line(&direct_error))],
            ));
        }
    };
    let field = e.field.clone().unwrap_or_else(|| "file".into());
    let reason = e
        .message
        .strip_prefix(&format!("{field}: "))
        .unwrap_or(&e.message)
        .to_string();
    Err(invalid(path, "workflow", &[FieldError::new(field, reason)]))
}

pub async fn workflow(cmd: WorkflowCommand, ctx: &Context, out: Output) -> u8 {
    let r = match cmd {
        WorkflowCommand::Validate { file } => validate_workflow(&file, ctx, out),
        WorkflowCommand::Create { file } => create_workflow(&file, ctx, out).await,
        WorkflowCommand::Status { workflow_id } => workflow_status(&workflow_id, ctx, out).await,
        WorkflowCommand::List { limit } => list_workflows(limit, ctx, out).await,
    };
    r.unwrap_or_else(|e| out.error(&e))
}

fn validate_workflow(file: &Path, ctx: &Context, out: Output) -> CoordResult<u8> {
    let req = workflow_request(file)?;
    let mut errors = coord_domain::workflows::check_definition(&req.name, &req.nodes, &req.edges)
        .err()
        .unwrap_or_default();
    // The agents its nodes name, as create_workflow checks them.
    let registry = coord_runtime::launch::definitions(ctx);
    for (i, n) in req.nodes.iter().enumerate() {
        if let Some(a) = &n.agent
            && coord_agents::registry::find(&registry, a).is_err()
        {
            errors.push(FieldError::new(
                format!("nodes[{i}].agent"),
                format!("no valid agent {a:?} in the registry"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(invalid(file, "workflow", &errors));
    }
    let order = coord_domain::workflows::check_definition(&req.name, &req.nodes, &req.edges)
        .map_err(|errors| invalid(file, "workflow", &errors))?;
    let order: Vec<String> = order.into_iter().map(|n| n.id).collect();
    if out.json {
        output::line(&format!(
            "{}",
            json!({"success": true, "name": req.name, "order": order})
        ));
    } else {
        output::line(&format!(
            "{}: valid; nodes in order: {}",
            file.display(),
            order.join(" → ")
        ));
    }
    Ok(output::EXIT_OK)
}

async fn create_workflow(file: &Path, ctx: &Context, out: Output) -> CoordResult<u8> {
    let req = workflow_request(file)?;
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    Ok(out.result(call::<CreateWorkflow, _>(&*coord, &me, req).await, |r| {
        let mut text = format!(
            "workflow {} started: {} queued; order {}",
            r.workflow_id,
            r.started.join(", "),
            r.order.join(" → "),
        );
        for (node, agent) in &r.spawned {
            text.push_str(&format!("\n  node {node}: spawned {agent}"));
        }
        for (node, why) in &r.not_spawned {
            text.push_str(&format!(
                "\n  node {node}: WARNING: {why} (its task waits in the queue for any worker)"
            ));
        }
        text.push_str(&format!("\nfollow it: coord workflow status {}", r.workflow_id));
        text
    }))
}

/// A workflow's or swarm's nodes, for people.
fn nodes_table(v: &WorkflowView) -> String {
    let mut head = format!(
        "{} {} ({}): {}",
        match v.kind {
            coord_domain::workflows::Kind::Workflow => "workflow",
            coord_domain::workflows::Kind::Swarm => "swarm",
        },
        v.name,
        v.workflow_id,
        v.status.as_str()
    );
    if let Some(e) = &v.error {
        head.push_str(&format!("\n  error: {e}"));
    }
    let mut t = output::table(&["NODE", "STATUS", "AGENT", "ATTEMPTS", "SECONDS", "RESULT / WHY"]);
    for n in &v.nodes {
        let status = serde_json::to_value(n.status)
            .ok()
            .and_then(|s| s.as_str().map(String::from))
            .unwrap_or_default();
        let why = n
            .result
            .as_ref()
            .map(|r| r.to_string())
            .or(n.error.clone())
            .or(n.reason.clone())
            .unwrap_or_default();
        t.add_row(vec![
            n.id.clone(),
            status,
            n.agent
                .clone()
                .or(n.spawned_agent_id.clone())
                .unwrap_or_else(|| "-".into()),
            n.attempts.to_string(),
            n.duration_seconds.map_or("-".into(), |s| format!("{s:.1}")),
            output::ellipsis(&why, 80),
        ]);
    }
    format!("{head}\n{t}")
}

async fn workflow_status(id: &str, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = WorkflowRef { workflow_id: id.into() };
    Ok(out.result(call::<GetWorkflowStatus, _>(&*coord, &me, req).await, nodes_table))
}

async fn list_workflows(limit: i64, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = coord_domain::workflows::api::ListWorkflowsRequest { limit: Some(limit) };
    Ok(out.result(call::<ListWorkflows, _>(&*coord, &me, req).await, |r| {
        if r.workflows.is_empty() {
            return "no workflows".into();
        }
        let mut t = output::table(&["ID", "KIND", "NAME", "STATUS", "NODES", "BY", "CREATED"]);
        for w in &r.workflows {
            t.add_row(vec![
                w.workflow_id.clone(),
                w.kind.as_str().into(),
                w.name.clone(),
                w.status.as_str().into(),
                w.nodes.to_string(),
                w.created_by.clone(),
                w.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ]);
        }
        t.to_string()
    }))
}

/// `NAME[:RUNTIME]`.
fn member(spec: &str, is_profile: bool, isolation: Option<Isolation>) -> SwarmMemberSpec {
    let (name, runtime) = match spec.split_once(':') {
        Some((n, r)) => (n.to_string(), Some(r.to_string())),
        None => (spec.to_string(), None),
    };
    SwarmMemberSpec {
        agent: (!is_profile).then(|| name.clone()),
        profile: is_profile.then_some(name),
        runtime,
        isolation,
    }
}

pub async fn swarm(cmd: SwarmCommand, ctx: &Context, out: Output) -> u8 {
    let r = match cmd {
        SwarmCommand::Create {
            name,
            agents,
            profiles,
            tasks,
            task_type,
            timeout_minutes,
            isolation,
        } => {
            let mut members: Vec<SwarmMemberSpec> = agents.iter().map(|a| member(a, false, isolation)).collect();
            members.extend(profiles.iter().map(|p| member(p, true, isolation)));
            let req = CreateSwarmRequest {
                name,
                agents: members,
                tasks,
                task_type,
                timeout_minutes,
            };
            create_swarm(req, ctx, out).await
        }
        SwarmCommand::Results { swarm_id } => swarm_results(&swarm_id, ctx, out).await,
    };
    r.unwrap_or_else(|e| out.error(&e))
}

async fn create_swarm(req: CreateSwarmRequest, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    Ok(out.result(call::<CreateSwarm, _>(&*coord, &me, req).await, |r| {
        format!(
            "swarm {} started: {} tasks (task_type {}), members {}\nfollow it: coord swarm results {}",
            r.swarm_id,
            r.tasks.len(),
            r.task_type,
            r.members.join(", "),
            r.swarm_id
        )
    }))
}

async fn swarm_results(id: &str, ctx: &Context, out: Output) -> CoordResult<u8> {
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let req = SwarmRef { swarm_id: id.into() };
    Ok(out.result(call::<GetSwarmResults, _>(&*coord, &me, req).await, |v| {
        let mut text = nodes_table(v);
        for m in &v.members {
            text.push_str(&format!(
                "\nmember {}: {} ({} tasks completed)",
                m.agent_id, m.status, m.completed
            ));
        }
        text
    }))
}

/// A team file checked against the workspace's registry.
fn load_team(file: &Path, ctx: &Context) -> CoordResult<Team> {
    let text = read(file)?;
    let registry = coord_runtime::launch::definitions(ctx);
    let find = |name: &str| coord_agents::registry::find(&registry, name).ok().cloned();
    team::parse_team(&text, &find).map_err(|errors| invalid(file, "team file", &errors))
}

/// Where `coord team up` keeps which agent it spawned for which member.
fn state_path(ctx: &Context, team: &str) -> std::path::PathBuf {
    ctx.state_dir.join("teams").join(format!("{team}.json"))
}

pub async fn team(cmd: TeamCommand, ctx: &Context, out: Output) -> u8 {
    let r = match cmd {
        TeamCommand::Validate { file } => load_team(&file, ctx).map(|t| {
            if out.json {
                output::line(&format!("{}", json!({"success": true, "team": t})));
            } else {
                output::line(&format!(
                    "{}: valid; team {} ({} member{}, {} to run, queue {}, at most {} at once)",
                    file.display(),
                    t.name,
                    t.members.len(),
                    if t.members.len() == 1 { "" } else { "s" },
                    t.members.iter().filter(|m| m.run).count(),
                    t.queue,
                    t.max_concurrent
                ));
            }
            output::EXIT_OK
        }),
        TeamCommand::Up { file } => team_up(&file, ctx, out).await,
        TeamCommand::Status { file } => team_status(&file, ctx, out).await,
    };
    r.unwrap_or_else(|e| out.error(&e))
}

async fn team_up(file: &Path, ctx: &Context, out: Output) -> CoordResult<u8> {
    let t = load_team(file, ctx)?;
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let path = state_path(ctx, &t.name);
    let mut state: serde_json::Map<String, Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    let mut rows = Vec::new();
    let mut failed = false;
    for m in &t.members {
        if !m.run {
            rows.push(json!({"member": m.name, "role": m.role, "state": "defined"}));
            continue;
        }
        let spawn = SpawnAgentRequest {
            agent: m.definition.clone(),
            profile: m.profile.map(|p| p.name().to_string()),
            task: m.task.clone().unwrap_or_default(),
            runtime: m.runtime.map(|r| r.name().to_string()),
            task_type: Some(t.queue.clone()),
            timeout_minutes: None,
            isolation: m.isolation,
            keep_worktree: None,
        };
        match call::<SpawnAgent, _>(&*coord, &me, spawn).await {
            Ok(s) => {
                state.insert(m.name.clone(), json!({"agent_id": s.agent_id, "task_id": s.task_id}));
                rows.push(
                    json!({"member": m.name, "role": m.role, "state": "spawned", "agent_id": s.agent_id,
                                  "task_id": s.task_id}),
                );
            }
            Err(e) => {
                failed = true;
                rows.push(
                    json!({"member": m.name, "role": m.role, "state": "refused", "error": e.message,
                                  "code": e.code.as_str()}),
                );
            }
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CoordError::new(ErrorCode::Internal, format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap_or_default())
        .map_err(|e| CoordError::new(ErrorCode::Internal, format!("{}: {e}", path.display())))?;
    if out.json {
        output::line(&format!(
            "{}",
            json!({"success": !failed, "team": t.name, "members": rows})
        ));
    } else {
        for r in &rows {
            let line = match r["state"].as_str() {
                Some("spawned") => format!(
                    "{}: spawned {} (task {})",
                    r["member"].as_str().unwrap_or(""),
                    r["agent_id"].as_str().unwrap_or(""),
                    r["task_id"].as_str().unwrap_or("")
                ),
                Some("refused") => format!(
                    "{}: NOT spawned: {}",
                    r["member"].as_str().unwrap_or(""),
                    r["error"].as_str().unwrap_or("")
                ),
                _ => format!(
                    "{}: defined ({}), not run",
                    r["member"].as_str().unwrap_or(""),
                    r["role"].as_str().unwrap_or("")
                ),
            };
            output::line(&line);
        }
        output::line(&format!("follow it: coord team status {}", file.display()));
    }
    Ok(if failed { output::EXIT_REFUSED } else { output::EXIT_OK })
}

async fn team_status(file: &Path, ctx: &Context, out: Output) -> CoordResult<u8> {
    let t = load_team(file, ctx)?;
    let coord = open::coordination(ctx, 2).await?;
    let me = Principal::local(ctx.caller.clone());
    let state: serde_json::Map<String, Value> = std::fs::read_to_string(state_path(ctx, &t.name))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    let locks = call::<CheckLocks, _>(&*coord, &me, CheckLocksRequest { file_paths: None })
        .await?
        .locks;
    let mut rows = Vec::new();
    for m in &t.members {
        let agent = state
            .get(&m.name)
            .and_then(|s| s["agent_id"].as_str())
            .map(String::from);
        let (status, task, task_status) = match &agent {
            Some(a) => match call::<GetAgentStatus, _>(
                &*coord,
                &me,
                AgentRef {
                    target_agent_id: a.clone(),
                },
            )
            .await
            {
                Ok(s) => (
                    s.status.as_str().to_string(),
                    Some(s.task_id),
                    s.task_status.map(|t| t.as_str().to_string()),
                ),
                Err(e) => (format!("unknown ({})", e.code.as_str()), None, None),
            },
            None => ("not running".into(), None, None),
        };
        let held: Vec<String> = agent
            .as_ref()
            .map(|a| {
                locks
                    .iter()
                    .filter(|l| &l.locked_by == a)
                    .map(|l| l.file_path.clone())
                    .collect()
            })
            .unwrap_or_default();
        rows.push(
            json!({"member": m.name, "role": m.role, "capabilities": m.capabilities, "agent_id": agent,
                         "status": status, "task_id": task, "task_status": task_status, "locks": held}),
        );
    }
    if out.json {
        output::line(&format!(
            "{}",
            json!({"success": true, "team": t.name, "queue": t.queue, "members": rows})
        ));
    } else {
        let mut table = output::table(&["MEMBER", "ROLE", "AGENT", "STATUS", "TASK", "LOCKS"]);
        for r in &rows {
            let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
            table.add_row(vec![
                s("member"),
                s("role"),
                s("agent_id"),
                s("status"),
                match (r["task_id"].as_str(), r["task_status"].as_str()) {
                    (Some(t), Some(st)) => format!("{t} ({st})"),
                    (Some(t), None) => t.to_string(),
                    _ => "-".into(),
                },
                r["locks"].as_array().map_or(String::new(), |l| {
                    l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
                }),
            ]);
        }
        output::line(&format!("team {} (queue {})\n{table}", t.name, t.queue));
    }
    Ok(output::EXIT_OK)
}
