//! A person's overrides (`coord_domain::overrides`): the stored state read (and locked),
//! the domain decides, then the change — all in the operation's transaction.

use crate::locks::stored;
use crate::queue::{back_to_pending, end};
use crate::rows::{get, uuid};
use crate::{R, Tx};
use coord_domain::overrides::{
    BreakLockResult, Cancellation, TaskOverrideResult, TaskState, decide_break, decide_cancel, decide_requeue,
};
use coord_domain::queue::TaskStatus;
use coord_store::OpCtx;

pub async fn break_lock(tx: &Tx<'_>, ctx: &OpCtx, path: &String) -> R<BreakLockResult> {
    let (existing, now) = stored(tx, ctx, path).await?;
    let released = decide_break(existing.as_ref(), path, now)?;
    tx.execute(
        &tx.prepare_cached("DELETE FROM file_locks WHERE file_path = $1").await?,
        &[path],
    )
    .await?;
    Ok(released)
}

/// A task's status, claimer and workflow, if it exists (its row locked until the change).
async fn task_state(tx: &Tx<'_>, task_id: &str) -> R<Option<TaskState>> {
    let Ok(id) = uuid(task_id) else { return Ok(None) };
    let row = tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT status, claimed_by,
                     (SELECT workflow_id FROM workflow_tasks w WHERE w.task_id = work_queue.task_id)
                 FROM work_queue WHERE task_id = $1 FOR UPDATE",
            )
            .await?,
            &[&id],
        )
        .await?;
    let Some(r) = row else { return Ok(None) };
    let (claimed_by, workflow_id) = (get::<Option<String>>(&r, 1)?, get::<Option<String>>(&r, 2)?);
    Ok(TaskStatus::parse(get::<&str>(&r, 0)?).map(|status| TaskState {
        status,
        claimed_by,
        workflow_id,
    }))
}

pub async fn cancel(tx: &Tx<'_>, ctx: &OpCtx, cancel: &Cancellation) -> R<TaskOverrideResult> {
    let was = decide_cancel(&cancel.task_id, task_state(tx, &cancel.task_id).await?)?;
    end(tx, ctx, &cancel.task_id, &cancel.ending()).await?;
    Ok(TaskOverrideResult::cancelled(&cancel.task_id, was))
}

pub async fn requeue(tx: &Tx<'_>, task_id: &str) -> R<TaskOverrideResult> {
    let was = decide_requeue(task_id, task_state(tx, task_id).await?)?;
    back_to_pending(tx, uuid(task_id)?).await?;
    Ok(TaskOverrideResult::requeued(task_id, was))
}
