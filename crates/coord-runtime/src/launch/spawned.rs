//! The supervisor of an agent `spawn_agent` registered (`coord agent supervise ID`).

use super::programs::io;
use super::{AGENT_TYPE, LaunchOptions, LaunchRequest, Outcome, Validation, launch};
use crate::context::Context;
use crate::open;
use coord_domain::access::Principal;
use coord_domain::agents::spawn::{self, SpawnStatus, SpawnUpdate};
use coord_domain::sessions::EndSessionRequest;
use coord_domain::{Caller, CoordResult};
use coord_service::call;
use coord_service::ops::sessions as session_ops;

/// `coord agent supervise ID`: started by `spawn_agent` (see `crate::spawner`), runs the
/// registered agent as `coord agent run` would, from its record.
pub async fn supervise_spawned(agent_id: &str, ctx: &Context) -> CoordResult<Outcome> {
    // From the first moment: `stop_agent`'s SIGTERM must never kill the supervisor before
    // it has cleaned up (a stop that comes this early is also seen in the record).
    let _held = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| io("cannot watch for SIGTERM", e))?;
    open::local_only(ctx, "`coord agent supervise` (it runs an agent spawn_agent registered)")?;
    let coordinator = open::coordinator_with(ctx, 2).await?;
    let (record, _) = coordinator
        .store()
        .spawned_agent(agent_id)
        .await?
        .ok_or_else(|| spawn::not_spawned(agent_id))?;
    let req = LaunchRequest {
        agent: record.definition.name.clone(),
        task: record.task.clone(),
        options: LaunchOptions {
            runtime: Some(record.runtime.name().into()),
            isolation: Some(record.isolation),
            keep_worktree: record.keep_worktree,
            validation: Validation::already_judged(),
            ..LaunchOptions::default()
        },
    };
    let task = record.task_id.clone();
    let outcome = launch(req, ctx, Some(record)).await;
    if let Err(e) = &outcome {
        // It may have failed before it started: its task goes back to the queue and the
        // record says why (a record already ended stays as it ended).
        let me = Principal::local(Caller::new(agent_id, AGENT_TYPE));
        let end = EndSessionRequest {
            release_locks: Some(true),
            handoff: None,
            requeue_tasks: Some(true),
            if_session: None,
        };
        if let Err(e) = call::<session_ops::EndSessionOp, _>(&coordinator, &me, end).await {
            eprintln!("coord agent: could not requeue task {task}: {e}");
        }
        // Stopped before it started: that is how it ended, with the stop's reason.
        let stopped = matches!(coordinator.store().spawned_agent(agent_id).await, Ok(Some((a, _))) if a.stop_requested);
        let ended = SpawnUpdate::Ended {
            status: if stopped {
                SpawnStatus::Stopped
            } else {
                SpawnStatus::Failed
            },
            exit_code: None,
            result: None,
            error: Some(e.message.clone()),
            permission_denials: Vec::new(),
            worktree: None,
        };
        let _ = coordinator.record_agent_run(agent_id, ended).await;
    }
    outcome
}
