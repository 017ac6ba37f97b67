//! Each subcommand: parse its arguments into a request, call the service, print.

use crate::args::*;
use crate::context::Context;
use crate::output;
use crate::output::{Output, ellipsis, table, when};
use crate::values::{parse_json, parse_lifetime};
use coord_domain::guardrails::{CheckGuardrailsRequest, CheckGuardrailsResult};
use coord_domain::handoffs::WriteHandoffRequest;
use coord_domain::handoffs::{ALL_AGENTS, Handoff, ReadHandoffRequest};
use coord_domain::keys::{CreateApiKeyRequest, RevokeApiKeyRequest};
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckLocksRequest, LockAction, LockInfo, ReleaseLockRequest,
};
use coord_domain::overrides::{BreakLockRequest, CancelTaskRequest, RequeueTaskRequest, TaskOverrideResult};
use coord_domain::ports::{AllocatePortsRequest, ReleasePortsRequest};
use coord_domain::queue::{
    CompleteWorkRequest, GetTaskRequest, GetWorkRequest, ListTasksRequest, SubmitWorkRequest, TaskInfo, TaskStatus,
};
use coord_domain::sessions::{
    AgentStatus, CleanupDeadAgentsRequest, DiscoverAgentsRequest, HeartbeatRequest, RegisterSessionRequest,
};
use coord_domain::status::StatusResult;
use coord_domain::{CoordError, ErrorCode};
use coord_service::CoordinationExt as _;
use coord_service::ops::overrides::{BreakLock, CancelTask, RequeueTask};
use coord_service::ops::{keys, queue};
use coord_service::{Coordination, Ports};
use std::fmt::Write;

pub async fn run(command: Command, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = &ctx.caller;
    match command {
        Command::Agent(AgentCommand::Session(cmd)) => agents(cmd, coord, ctx, out).await,
        Command::Init { .. }
        | Command::Completions { .. }
        | Command::Man
        | Command::Config(_)
        | Command::Migrate
        | Command::Status
        | Command::Stats
        | Command::Mcp
        | Command::Bench(_)
        | Command::Serve(_)
        | Command::Ui(_)
        | Command::Proxy(_)
        | Command::Sandbox(_)
        | Command::Agent(_)
        | Command::Run(_)
        | Command::Workflow(_)
        | Command::Swarm(_)
        | Command::Team(_)
        | Command::Keys(_)
        | Command::Cloud(_)
        | Command::Ports(_)
        | Command::Call(_)
        | Command::Ops
        | Command::Doctor
        | Command::Hook { .. } => {
            // `lib::run` answers these before opening a coordinator; reaching here is a
            // dispatch bug, reported instead of panicking.
            out.error(&coord_domain::CoordError::internal())
        }
        Command::Lock(cmd) => match cmd {
            LockCommand::Acquire { path, reason, ttl } => {
                let req = AcquireLockRequest {
                    file_path: ctx.lock_path(&path),
                    reason,
                    ttl_minutes: ttl,
                };
                out.result(coord.acquire_lock(me, req).await, render_acquire)
            }
            LockCommand::Release { path } => {
                let req = ReleaseLockRequest {
                    file_path: ctx.lock_path(&path),
                };
                out.result(coord.release_lock(me, req).await, |r| {
                    format!("released {}", r.file_path)
                })
            }
            LockCommand::Break { path, reason } => {
                let req = BreakLockRequest {
                    file_path: ctx.lock_path(&path),
                    reason,
                };
                out.result(coord.op::<BreakLock>(me, req).await, |r| {
                    format!(
                        "released {} (held by {}, fencing token {})",
                        r.file_path, r.locked_by, r.fencing_token
                    )
                })
            }
            LockCommand::List { paths } => {
                let file_paths = if paths.is_empty() {
                    None
                } else {
                    Some(paths.iter().map(|p| ctx.lock_path(p)).collect())
                };
                out.result(coord.check_locks(me, CheckLocksRequest { file_paths }).await, |r| {
                    render_locks(&r.locks)
                })
            }
        },
        Command::Work(cmd) => work(cmd, coord, ctx, out).await,
        Command::Handoff(cmd) => handoff(cmd, coord, ctx, out).await,
        Command::File(cmd) => crate::files::run(cmd, coord, ctx, out).await,
        Command::Memory(cmd) => crate::memory::run(cmd, coord, ctx, out).await,
        Command::Network(cmd) => crate::network::run(cmd, coord, ctx, out).await,
        Command::Verify(cmd) => crate::verify::run(cmd, coord, ctx, out).await,
        Command::Github(cmd) => crate::verify::github(cmd, coord, ctx, out).await,
        Command::Audit(args) => crate::audit::run(args, coord, ctx, out).await,
        Command::Msg(cmd) => msg(cmd, coord, ctx, out).await,
        Command::Profile(cmd) => crate::profiles::run(cmd, coord, ctx, out).await,
        Command::Approvals(cmd) => crate::approvals::run(cmd, coord, ctx, out).await,
        Command::Notifications(cmd) => crate::notify::run(cmd, coord, ctx, out).await,
        Command::Guard(GuardCommand::Rules(cmd)) => crate::guard::rules(cmd, coord, ctx, out).await,
        Command::Guard(GuardCommand::Check { files, command }) => {
            let command = (!command.is_empty()).then(|| command.join(" "));
            let req = CheckGuardrailsRequest {
                git_aliases: command.as_deref().and_then(|c| crate::guard::git_aliases(&ctx.cwd, c)),
                entry_files: command.as_deref().and_then(|c| crate::guard::entry_files(&ctx.cwd, c)),
                command,
                files: (!files.is_empty()).then_some(files),
                tool: None,
            };
            let answer = coord_service::call::<coord_service::ops::guardrails::CheckGuardrails, _>(
                coord,
                &coord_domain::access::Principal::local(me.clone()),
                req,
            )
            .await;
            if let Err(e) = &answer
                && !out.json
                && let Some(id) = e.details.get("approval_id").and_then(|v| v.as_str())
            {
                eprintln!(
                    "approval requested: {id} (a person decides it, in the dashboard or in their own terminal; then the same check passes once)"
                );
            }
            out.result(answer, render_guard)
        }
    }
}

async fn work(cmd: WorkCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = &ctx.caller;
    match cmd {
        WorkCommand::Submit {
            task_type,
            description,
            priority,
            depends_on,
            input,
        } => {
            let input_data = match parse_json("input", input) {
                Ok(v) => v,
                Err(e) => return crate::ops::refused::<queue::SubmitWork>(out, coord, me, e).await,
            };
            let req = SubmitWorkRequest {
                task_type,
                task_description: description,
                input_data,
                priority,
                depends_on: if depends_on.is_empty() { None } else { Some(depends_on) },
            };
            out.result(coord.submit_work(me, req).await, |r| match r.status {
                TaskStatus::Cancelled => format!(
                    "submitted task {} but it is cancelled: a dependency has already failed",
                    r.task_id
                ),
                _ => format!("submitted task {}", r.task_id),
            })
        }
        WorkCommand::Claim { types } => {
            let req = GetWorkRequest {
                task_types: if types.is_empty() { None } else { Some(types) },
            };
            out.result(coord.get_work(me, req).await, render_claim)
        }
        WorkCommand::Complete {
            task_id,
            success,
            failed: _,
            result,
            error,
        } => {
            let result = match parse_json("result", result) {
                Ok(v) => v,
                Err(e) => return crate::ops::refused::<queue::CompleteWork>(out, coord, me, e).await,
            };
            let req = CompleteWorkRequest {
                task_id,
                success,
                result,
                error_message: error,
                skill: None,
                changes: None,
            };
            out.result(coord.complete_work(me, req).await, render_completion)
        }
        WorkCommand::Cancel { task_id, reason } => {
            let req = CancelTaskRequest { task_id, reason };
            out.result(coord.op::<CancelTask>(me, req).await, render_override)
        }
        WorkCommand::Requeue { task_id } => {
            let req = RequeueTaskRequest { task_id };
            out.result(coord.op::<RequeueTask>(me, req).await, render_override)
        }
        WorkCommand::Show { task_id } => out.result(coord.get_task(me, GetTaskRequest { task_id }).await, |r| {
            render_task(&r.task)
        }),
        WorkCommand::List {
            status,
            task_type,
            limit,
        } => {
            let status = status.map(|s| match s {
                StatusArg::Pending => TaskStatus::Pending,
                StatusArg::Claimed => TaskStatus::Claimed,
                StatusArg::Completed => TaskStatus::Completed,
                StatusArg::Failed => TaskStatus::Failed,
                StatusArg::Cancelled => TaskStatus::Cancelled,
            });
            let req = ListTasksRequest {
                status,
                task_type,
                limit,
            };
            out.result(coord.list_tasks(me, req).await, |r| render_tasks(&r.tasks))
        }
    }
}

async fn agents(cmd: AgentsCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = &ctx.caller;
    match cmd {
        AgentsCommand::Register {
            capabilities,
            current_task,
            team,
        } => {
            let req = RegisterSessionRequest {
                capabilities: if capabilities.is_empty() {
                    None
                } else {
                    Some(capabilities)
                },
                current_task,
                team,
                worktree: ctx.place().0,
                branch: ctx.place().1,
            };
            out.result(coord.register_session(me, req).await, |r| {
                format!("registered {} — session {}", me.agent_id, r.session_id)
            })
        }
        AgentsCommand::Heartbeat => out.result(coord.heartbeat(me, HeartbeatRequest {}).await, |r| {
            format!("heartbeat recorded for {} — session {}", me.agent_id, r.session_id)
        }),
        AgentsCommand::Discover { capability, status } => {
            let status = status.map(|s| match s {
                AgentStatusArg::Active => AgentStatus::Active,
                AgentStatusArg::Idle => AgentStatus::Idle,
                AgentStatusArg::Disconnected => AgentStatus::Disconnected,
            });
            out.result(
                coord
                    .discover_agents(me, DiscoverAgentsRequest { capability, status })
                    .await,
                |r| {
                    if r.agents.is_empty() {
                        return "no matching agents".into();
                    }
                    let mut t = table(&[
                        "AGENT",
                        "TYPE",
                        "STATUS",
                        "WORKTREE",
                        "TEAM",
                        "CAPABILITIES",
                        "CURRENT TASK",
                        "LAST HEARTBEAT",
                        "VIOLATIONS",
                    ]);
                    for a in &r.agents {
                        t.add_row(vec![
                            a.agent_id.clone(),
                            a.agent_type.clone(),
                            a.status.to_string(),
                            place(a),
                            a.team.clone().unwrap_or_else(|| "-".into()),
                            a.capabilities.join(","),
                            ellipsis(a.current_task.as_deref().unwrap_or("-"), 40),
                            when(a.last_heartbeat),
                            a.guardrail_violations.to_string(),
                        ]);
                    }
                    t.to_string()
                },
            )
        }
        AgentsCommand::Cleanup { stale_minutes } => {
            // Also the sessions of `coord mcp` processes that were killed (see coord_runtime::reaper).
            let registry = crate::reaper::Registry::of(ctx);
            let dead = crate::reaper::Reaper::take_dead_now(&registry);
            let req = CleanupDeadAgentsRequest {
                stale_threshold_minutes: stale_minutes,
                sessions: (!dead.is_empty()).then_some(dead),
            };
            out.result(coord.cleanup_dead_agents(me, req).await, |r| {
                if r.agents_cleaned == 0 {
                    return "no stale agents".into();
                }
                format!(
                    "disconnected {} agent(s): {}\nreleased {} lock(s); requeued {} task(s), failed {} out of attempts",
                    r.agents_cleaned,
                    r.agents.join(", "),
                    r.locks_released,
                    r.tasks_requeued,
                    r.tasks_failed
                )
            })
        }
    }
}

async fn handoff(cmd: HandoffCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = &ctx.caller;
    let list = |v: Vec<String>| if v.is_empty() { None } else { Some(v) };
    match cmd {
        HandoffCommand::Write {
            summary,
            completed_work,
            in_progress,
            decisions,
            next_steps,
            relevant_files,
        } => {
            let req = WriteHandoffRequest {
                summary,
                completed_work: list(completed_work),
                in_progress: list(in_progress),
                decisions: list(decisions),
                next_steps: list(next_steps),
                relevant_files: list(relevant_files),
            };
            out.result(coord.write_handoff(me, req).await, |r| {
                format!("wrote handoff {}", r.handoff_id)
            })
        }
        HandoffCommand::Read { agent, all, limit } => {
            let agent_name = if all { Some(ALL_AGENTS.to_string()) } else { agent };
            out.result(
                coord.read_handoff(me, ReadHandoffRequest { agent_name, limit }).await,
                |r| {
                    if r.handoffs.is_empty() {
                        return "no handoff documents".into();
                    }
                    r.handoffs.iter().map(render_handoff).collect::<Vec<_>>().join("\n")
                },
            )
        }
    }
}

/// `coord key`: the key's identity is the explicit `--agent-id`/`--agent-type`; the
/// key is recorded as created by this user.
pub async fn keys(cmd: &KeysCommand, ctx: &Context, global: &GlobalArgs, out: Output) -> u8 {
    let coord = match crate::open::coordination(ctx, 2).await {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let (creator_id, creator_type) = crate::context::default_identity(false);
    let creator = coord_domain::Caller::new(creator_id, creator_type);
    match cmd {
        KeysCommand::Create { expires_in } => {
            // Only what is written on the command line: COORD_AGENT_ID/COORD_AGENT_TYPE
            // are the operator's own identity, never the key's.
            let (Some(agent_id), Some(agent_type)) = crate::args::Cli::written_identity(global) else {
                let e = CoordError::new(
                    ErrorCode::InvalidArgument,
                    "give the identity the key acts as on the command line: coord key create --agent-id ID --agent-type TYPE",
                );
                return crate::ops::refused::<keys::CreateApiKey>(out, coord.as_ref(), &creator, e).await;
            };
            let minutes = match expires_in
                .as_deref()
                .map(|raw| parse_lifetime("expires_in", raw))
                .transpose()
            {
                Ok(m) => m,
                Err(e) => return crate::ops::refused::<keys::CreateApiKey>(out, coord.as_ref(), &creator, e).await,
            };
            let req = CreateApiKeyRequest {
                bound_agent_id: agent_id,
                bound_agent_type: agent_type,
                expires_in_minutes: minutes,
                ..Default::default()
            };
            out.result(coord.create_api_key(&creator, req).await, |r| {
                let expiry = r.expires_at.map(when).unwrap_or_else(|| "never".into());
                format!(
                    "{}\n\nkey {} acts as {} ({}), expires {expiry}.\nThe secret above is shown only now; store it (e.g. COORDINATION_API_KEY).",
                    r.api_key, r.key_id, r.agent_id, r.agent_type
                )
            })
        }
        KeysCommand::Issue(args) => crate::cloud::issue_command(args, coord.as_ref(), &creator, global, out).await,
        KeysCommand::List => out.result(coord.list_api_keys(&creator).await, |r| {
            if r.keys.is_empty() {
                return "no API keys".into();
            }
            let mut t = table(&["KEY", "AGENT", "TYPE", "STATUS", "EXPIRES", "CREATED BY"]);
            for k in &r.keys {
                t.add_row(vec![
                    k.key_id.clone(),
                    k.agent_id.clone(),
                    k.agent_type.clone(),
                    format!("{:?}", k.status).to_lowercase(),
                    k.expires_at.map(when).unwrap_or_else(|| "never".into()),
                    k.created_by.clone(),
                ]);
            }
            t.to_string()
        }),
        KeysCommand::Revoke { key_id } => {
            let req = RevokeApiKeyRequest { key_id: key_id.clone() };
            out.result(coord.revoke_api_key(&creator, req).await, |r| {
                format!("revoked {}", r.key_id)
            })
        }
    }
}

fn render_guard(r: &CheckGuardrailsResult) -> String {
    let mut lines = vec![match (&r.approval_used, r.elevated) {
        (Some(id), _) => format!("allowed once by approval {id}"),
        (None, true) => "allowed: an elevated operation of your profile (audited)".to_string(),
        (None, false) => "allowed".to_string(),
    }];
    for f in &r.findings {
        lines.push(format!(
            "  {} {} ({}): {}",
            f.category.as_str(),
            f.operation,
            f.matched,
            f.reason
        ));
    }
    lines.join("\n")
}

/// `coord port`: `ports` is the machine's allocator locally (no database is opened), or
/// the server in remote mode.
pub async fn ports(cmd: PortsCommand, coord: &dyn Ports, ctx: &Context, out: Output) -> u8 {
    let me = &ctx.caller;
    match cmd {
        PortsCommand::Allocate { session_id, env } => {
            let r = coord.allocate_ports(me, AllocatePortsRequest { session_id }).await;
            if env && !out.json {
                return match r {
                    Ok(r) => {
                        print!("{}", r.env_snippet);
                        output::EXIT_OK
                    }
                    Err(e) => out.error(&e),
                };
            }
            out.result(r, |r| {
                let a = &r.allocation;
                format!(
                    "ports for {}: db {}  rest {}  realtime {}  api {}  (compose project {}, lease until {})\n{}",
                    a.session_id,
                    a.db_port,
                    a.rest_port,
                    a.realtime_port,
                    a.api_port,
                    a.compose_project_name,
                    when(a.expires_at),
                    r.env_snippet
                )
            })
        }
        PortsCommand::Release { session_id } => {
            let label = session_id.clone();
            out.result(coord.release_ports(me, ReleasePortsRequest { session_id }).await, |r| {
                if r.released {
                    format!("released the ports of {label}")
                } else {
                    format!("{label} held no ports")
                }
            })
        }
        PortsCommand::Status => out.result(coord.ports_status(me).await, |r| {
            if r.allocations.is_empty() {
                return "no port leases".into();
            }
            let mut t = table(&[
                "SESSION",
                "DB",
                "REST",
                "REALTIME",
                "API",
                "COMPOSE PROJECT",
                "MINUTES LEFT",
            ]);
            for e in &r.allocations {
                let a = &e.allocation;
                t.add_row(vec![
                    a.session_id.clone(),
                    a.db_port.to_string(),
                    a.rest_port.to_string(),
                    a.realtime_port.to_string(),
                    a.api_port.to_string(),
                    a.compose_project_name.clone(),
                    e.remaining_minutes.to_string(),
                ]);
            }
            t.to_string()
        }),
    }
}

async fn msg(cmd: crate::args::MsgCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    use crate::args::MsgCommand;
    use coord_domain::messages::{Importance, InboxRequest, MessageIdRequest, SendMessageRequest};
    use coord_service::ops::messages::{AckMessage, Inbox, ReadMessage, SendMessage};
    let me = &ctx.caller;
    match cmd {
        MsgCommand::Send {
            to,
            subject,
            body,
            importance,
            thread,
        } => {
            let importance = match importance.as_deref().map(|i| (i, Importance::parse(i))) {
                None => None,
                Some((_, Some(level))) => Some(level),
                Some((raw, None)) => {
                    let e = coord_domain::CoordError::field(
                        coord_domain::ErrorCode::InvalidArgument,
                        "importance",
                        format!("--importance {raw:?}: use low, normal, high or urgent"),
                    );
                    return crate::ops::refused::<SendMessage>(out, coord, me, e).await;
                }
            };
            use coord_domain::messages::HOLDERS_PREFIX;
            // holders:<path> names a file: relative to the working directory, like lock paths.
            let to = match to.strip_prefix(HOLDERS_PREFIX) {
                Some(path) => format!("{HOLDERS_PREFIX}{}", ctx.lock_path(path)),
                None => to,
            };
            let req = SendMessageRequest {
                to,
                body: body.unwrap_or_else(|| subject.clone()),
                subject,
                thread_id: thread,
                importance,
            };
            out.result(coord.op::<SendMessage>(me, req).await, |r| {
                format!(
                    "sent {} to {} (thread {})",
                    r.message_id,
                    r.recipients.join(", "),
                    r.thread_id
                )
            })
        }
        MsgCommand::Inbox { unread, limit } => {
            let req = InboxRequest {
                unread_only: Some(unread),
                limit,
            };
            out.result(coord.op::<Inbox>(me, req).await, |r| {
                let mut t = table(&["ID", "FROM", "IMPORTANCE", "SENT", "READ", "SUBJECT"]);
                for m in &r.messages {
                    t.add_row(vec![
                        m.message_id.clone(),
                        m.from.clone(),
                        m.importance.as_str().to_string(),
                        when(m.created_at),
                        if m.acked_at.is_some() {
                            "acked"
                        } else if m.read_at.is_some() {
                            "read"
                        } else {
                            "new"
                        }
                        .into(),
                        m.subject.clone(),
                    ]);
                }
                format!("{t}\n{} unread", r.unread)
            })
        }
        MsgCommand::Read { message_id } => {
            let req = MessageIdRequest { message_id };
            out.result(coord.op::<ReadMessage>(me, req).await, |r| {
                let m = &r.message;
                format!(
                    "from {} at {} [{}]: {}\n\n{}\n\nthread {}",
                    m.from,
                    when(m.created_at),
                    m.importance.as_str(),
                    m.subject,
                    m.body,
                    m.thread_id
                )
            })
        }
        MsgCommand::Ack { message_id } => {
            let req = MessageIdRequest { message_id };
            out.result(coord.op::<AckMessage>(me, req).await, |r| {
                format!("acknowledged {}", r.message.message_id)
            })
        }
    }
}

fn render_claim(r: &coord_domain::queue::GetWorkResult) -> String {
    let Some(id) = &r.task_id else {
        return "no tasks available".to_string();
    };
    let mut s = format!(
        "claimed task {id} [{}] priority {} (attempt {})\n  {}\n",
        r.task_type.as_deref().unwrap_or(""),
        r.priority.unwrap_or_default(),
        r.attempt.unwrap_or_default(),
        r.task_description.as_deref().unwrap_or("")
    );
    if let Some(input) = r.input_data.as_ref().filter(|v| !v.is_null()) {
        let _ = writeln!(s, "  input: {input}");
    }
    if let Some(until) = r.claimed_until {
        let _ = writeln!(s, "  lease until {} (heartbeats extend it)", when(until));
    }
    s
}

fn render_completion(r: &coord_domain::queue::CompleteWorkResult) -> String {
    let mut s = format!("task {} {}", r.task_id, r.status);
    if !r.cancelled_dependents.is_empty() {
        let _ = write!(
            s,
            "; cancelled {} dependent task(s): {}",
            r.cancelled_dependents.len(),
            r.cancelled_dependents.join(", ")
        );
    }
    s
}

pub fn render_acquire(r: &AcquireLockResult) -> String {
    match r.action {
        LockAction::Blocked => {
            let held = r.locked_path.as_deref().unwrap_or(&r.file_path);
            let mut s = format!(
                "blocked: {} is locked by {} until {}",
                held,
                r.locked_by.as_deref().unwrap_or("?"),
                when(r.expires_at)
            );
            if held != r.file_path {
                let _ = write!(s, " (it covers {})", r.file_path);
            }
            if let Some(why) = &r.lock_reason {
                let _ = write!(s, " — {why}");
            }
            let _ = write!(s, "\n  ask them: coord msg send holders:{held} \"may I have it?\"");
            s
        }
        action => format!(
            "{} {} until {} (fencing token {})",
            if action == LockAction::Refreshed {
                "refreshed"
            } else {
                "locked"
            },
            r.file_path,
            when(r.expires_at),
            r.fencing_token.unwrap_or_default()
        ),
    }
}

pub fn render_locks(locks: &[LockInfo]) -> String {
    if locks.is_empty() {
        return "no live locks".into();
    }
    let mut t = table(&["PATH", "HOLDER", "TYPE", "EXPIRES", "TOKEN", "REASON"]);
    for l in locks {
        t.add_row(vec![
            l.file_path.clone(),
            l.locked_by.clone(),
            l.agent_type.clone(),
            when(l.expires_at),
            l.fencing_token.to_string(),
            ellipsis(l.reason.as_deref().unwrap_or("-"), 40),
        ]);
    }
    t.to_string()
}

fn task_state(t: &TaskInfo) -> String {
    match (t.status, t.pending_dependencies) {
        (TaskStatus::Pending, n) if n > 0 => format!("pending (waiting on {n})"),
        (TaskStatus::Claimed, _) => format!("claimed by {}", t.claimed_by.as_deref().unwrap_or("?")),
        (TaskStatus::Failed | TaskStatus::Cancelled, _) => {
            format!("{} ({})", t.status, t.failure_reason.as_deref().unwrap_or("-"))
        }
        (s, _) => s.to_string(),
    }
}

pub fn render_tasks(tasks: &[TaskInfo]) -> String {
    if tasks.is_empty() {
        return "no tasks".into();
    }
    // Tasks only one agent may claim (GitHub issues) say whose they are.
    let assigned = tasks.iter().any(|t| t.assigned_to.is_some());
    let mut head = vec!["ID", "TYPE", "PRIO", "STATE"];
    if assigned {
        head.push("FOR");
    }
    head.push("DESCRIPTION");
    let mut t = table(&head);
    for task in tasks {
        // The whole id: the one `work show`, `work complete` and `--depends-on` take.
        let mut row = vec![
            task.task_id.clone(),
            task.task_type.clone(),
            task.priority.to_string(),
            task_state(task),
        ];
        if assigned {
            row.push(task.assigned_to.clone().unwrap_or_else(|| "anyone".into()));
        }
        row.push(ellipsis(&task.task_description, 50));
        t.add_row(row);
    }
    t.to_string()
}

pub fn render_task(t: &TaskInfo) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k:<14} {v}");
    };
    line("task", t.task_id.clone());
    line("type", t.task_type.clone());
    line("priority", t.priority.to_string());
    line("state", task_state(t));
    if let Some(a) = &t.assigned_to {
        line("for", format!("{a} only"));
    }
    line("description", t.task_description.clone());
    if let Some(i) = &t.input_data {
        line("input", i.to_string());
    }
    if !t.depends_on.is_empty() {
        line("depends on", t.depends_on.join(", "));
    }
    line("created", format!("{} by {}", when(t.created_at), t.created_by));
    if let Some(at) = t.claimed_at {
        line(
            "claimed",
            format!("{} by {}", when(at), t.claimed_by.as_deref().unwrap_or("?")),
        );
    }
    if let (TaskStatus::Claimed, Some(until)) = (t.status, t.claimed_until) {
        line("lease until", when(until));
    }
    line("attempts", format!("{} of {}", t.attempts, t.max_attempts));
    if let Some(at) = t.completed_at {
        line("finished", when(at));
    }
    if let Some(r) = &t.result {
        line("result", r.to_string());
    }
    if let Some(e) = &t.error_message {
        line("error", e.clone());
    }
    s
}

pub fn render_handoff(h: &Handoff) -> String {
    let mut s = format!(
        "handoff {} by {} ({}), {}\n\n{}\n",
        h.id,
        h.agent_name,
        h.agent_type,
        when(h.created_at),
        h.summary
    );
    for (title, items) in [
        ("Completed", &h.completed_work),
        ("In progress", &h.in_progress),
        ("Decisions", &h.decisions),
        ("Next steps", &h.next_steps),
        ("Relevant files", &h.relevant_files),
    ] {
        if !items.is_empty() {
            let _ = writeln!(s, "\n{title}:");
            for i in items {
                let _ = writeln!(s, "  - {i}");
            }
        }
    }
    s
}

/// Where this checkout stands: its worktree and branch, and the checkout whose
/// coordination space it shares (docs/worktrees.md).
pub fn render_here(ctx: &Context) -> String {
    let Some(w) = &ctx.worktree else {
        return String::new();
    };
    let branch = w
        .branch
        .as_deref()
        .map_or("a detached HEAD".to_string(), |b| format!("branch {b}"));
    if w.linked() {
        format!(
            "Here:    worktree {} ({branch}), sharing the coordination space of {}\n",
            w.root.display(),
            w.shared_root.display()
        )
    } else {
        format!("Here:    {} ({branch})\n", w.root.display())
    }
}

/// Where an agent works, for a table: its worktree's last directory and its branch.
fn place(a: &coord_domain::sessions::AgentInfo) -> String {
    let Some(w) = a.worktree.as_deref() else {
        return "-".into();
    };
    let dir = std::path::Path::new(w)
        .file_name()
        .map_or(w.to_string(), |n| n.to_string_lossy().into_owned());
    match &a.branch {
        Some(b) => format!("{dir} ({b})"),
        None => dir,
    }
}

pub fn render_status(s: &StatusResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Agent Coordinator — {} at {}", s.backend, s.database);
    let _ = writeln!(o, "You:     {} ({})", s.identity.agent_id, s.identity.agent_type);
    let _ = writeln!(o, "Locks:   {} live, {} yours", s.live_locks, s.my_locks.len());
    for l in &s.my_locks {
        let _ = writeln!(
            o,
            "           {}  until {}  token {}",
            l.file_path,
            when(l.expires_at),
            l.fencing_token
        );
    }
    let t = &s.tasks;
    let _ = writeln!(
        o,
        "Tasks:   {} pending ({} waiting on dependencies), {} claimed, {} completed, {} failed, {} cancelled",
        t.pending, t.waiting, t.claimed, t.completed, t.failed, t.cancelled
    );
    for task in &s.my_tasks {
        let _ = writeln!(
            o,
            "           yours: {} [{}] {}",
            task.task_id,
            task.task_type,
            ellipsis(&task.task_description, 50)
        );
    }
    let a = &s.agents;
    let _ = writeln!(
        o,
        "Agents:  {} active, {} idle, {} disconnected",
        a.active, a.idle, a.disconnected
    );
    match &s.latest_handoff {
        Some(h) => {
            let _ = writeln!(
                o,
                "Handoff: {} by {}: {}",
                when(h.created_at),
                h.agent_name,
                ellipsis(&h.summary, 60)
            );
        }
        None => {
            let _ = writeln!(o, "Handoff: none yet");
        }
    }
    o
}

fn render_override(r: &TaskOverrideResult) -> String {
    let claim = r
        .claimed_by
        .as_deref()
        .map(|by| format!("; {by}'s claim dropped"))
        .unwrap_or_default();
    format!(
        "task {} {} (was {}){claim}",
        r.task_id,
        r.status.as_str(),
        r.was.as_str()
    )
}
