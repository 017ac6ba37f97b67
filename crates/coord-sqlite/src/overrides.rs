//! A person's overrides (`coord_domain::overrides`): the stored state read, the domain
//! decides, then the change — all in the operation's transaction.

use crate::R;
use crate::locks::stored;
use crate::queue::{back_to_pending, end};
use coord_domain::overrides::{
    BreakLockResult, Cancellation, TaskOverrideResult, TaskState, decide_break, decide_cancel, decide_requeue,
};
use coord_domain::queue::TaskStatus;
use coord_domain::time::from_micros;
use rusqlite::{Connection, OptionalExtension};

pub fn break_lock(c: &Connection, now: i64, path: &str) -> R<BreakLockResult> {
    let released = decide_break(stored(c, path)?.as_ref(), path, from_micros(now))?;
    c.prepare_cached("DELETE FROM file_locks WHERE file_path = ?1")?
        .execute([path])?;
    Ok(released)
}

/// A task's status, claimer and workflow, if it exists.
fn task_state(c: &Connection, task_id: &str) -> R<Option<TaskState>> {
    let row = c
        .prepare_cached(
            "SELECT status, claimed_by,
                 (SELECT workflow_id FROM workflow_tasks w WHERE w.task_id = work_queue.task_id)
             FROM work_queue WHERE task_id = ?1",
        )?
        .query_row([task_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .optional()?;
    Ok(row.and_then(|(status, claimed_by, workflow_id)| {
        TaskStatus::parse(&status).map(|status| TaskState {
            status,
            claimed_by,
            workflow_id,
        })
    }))
}

pub fn cancel(c: &Connection, now: i64, cancel: &Cancellation) -> R<TaskOverrideResult> {
    let was = decide_cancel(&cancel.task_id, task_state(c, &cancel.task_id)?)?;
    end(c, now, &cancel.task_id, &cancel.ending())?;
    Ok(TaskOverrideResult::cancelled(&cancel.task_id, was))
}

pub fn requeue(c: &Connection, task_id: &str) -> R<TaskOverrideResult> {
    let was = decide_requeue(task_id, task_state(c, task_id)?)?;
    back_to_pending(c, task_id)?;
    Ok(TaskOverrideResult::requeued(task_id, was))
}
