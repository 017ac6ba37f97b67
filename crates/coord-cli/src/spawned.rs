//! `coord agent spawn|spawned|status|output|stop`: spawned agents from the shell, through
//! the operations like any door (the launcher itself is `coord_runtime::spawner`).

use crate::args::AgentSpawnArgs;
use crate::context::Context;
use crate::open;
use crate::output::{self, Output};
use coord_domain::access::Principal;
use coord_domain::agents::spawn::{
    AgentOutputRequest, AgentRef, AgentStatusResult, ListSpawnedAgentsRequest, SpawnAgentRequest, StopAgentRequest,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::call;
use coord_service::ops::spawn::{GetAgentOutput, GetAgentStatus, ListSpawnedAgents, SpawnAgent, StopAgent};

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
