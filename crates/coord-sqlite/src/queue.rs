//! `work_queue` and `task_dependencies`.
//!
//! `pending_deps` counts a task's dependencies that have not completed, so the claim
//! path is one indexed lookup (`status = 'pending' AND pending_deps = 0`) instead of a
//! dependency join per candidate.

use crate::R;
use crate::SqliteStore;
use crate::rows::{minutes_to_micros, opt_json, opt_ts, string_list, to_json, ts};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::Identity;
use coord_domain::memory::skills;
use coord_domain::overrides::{Cancellation, TaskOverrideResult, TaskState, decide_cancel, decide_requeue};
use coord_domain::queue::{
    ClaimSpec, CompleteWorkResult, Completion, GetTaskResult, GetWorkResult, ListTasksResult, NewTask,
    REASON_AGENT_REPORTED, REASON_DEPENDENCY_FAILED, REASON_MAX_ATTEMPTS, SubmitWorkResult, TaskEnding, TaskFilter,
    TaskInfo, TaskStatus, decide_completion, expired_claim_status, plan_submission,
};
use coord_store::{OpCtx, QueueStore};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::HashMap;

pub const TASK_COLS: &str = "task_id, task_type, task_description, input_data, priority, status, pending_deps,
    created_by, created_at, claimed_by, claimed_at, claimed_until, attempts, max_attempts, completed_at,
    result, error_message, failure_reason,
    (SELECT json_group_array(depends_on) FROM task_dependencies d WHERE d.task_id = work_queue.task_id),
    assigned_to";

fn status_at(r: &Row, idx: usize) -> rusqlite::Result<TaskStatus> {
    let s: String = r.get(idx)?;
    TaskStatus::parse(&s).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, format!("unknown task status {s:?}").into())
    })
}

pub fn task_from_row(r: &Row) -> rusqlite::Result<TaskInfo> {
    let mut depends_on = string_list(r, 18)?;
    depends_on.sort();
    Ok(TaskInfo {
        task_id: r.get(0)?,
        task_type: r.get(1)?,
        task_description: r.get(2)?,
        input_data: opt_json(r, 3)?,
        priority: r.get(4)?,
        status: status_at(r, 5)?,
        pending_dependencies: r.get(6)?,
        created_by: r.get(7)?,
        created_at: ts(r, 8)?,
        claimed_by: r.get(9)?,
        claimed_at: opt_ts(r, 10)?,
        claimed_until: opt_ts(r, 11)?,
        attempts: r.get(12)?,
        max_attempts: r.get(13)?,
        completed_at: opt_ts(r, 14)?,
        result: opt_json(r, 15)?,
        error_message: r.get(16)?,
        failure_reason: r.get(17)?,
        depends_on,
        assigned_to: r.get(19)?,
    })
}

pub fn submit(c: &Connection, now: i64, who: &Identity, t: &NewTask) -> R<SubmitWorkResult> {
    let mut found = HashMap::new();
    if !t.depends_on.is_empty() {
        let mut stmt = c.prepare_cached(
            "SELECT task_id, status FROM work_queue WHERE task_id IN (SELECT value FROM json_each(?1))",
        )?;
        let rows = stmt.query_map([to_json(&t.depends_on)], |r| {
            Ok((r.get::<_, String>(0)?, status_at(r, 1)?))
        })?;
        for row in rows {
            let (id, status) = row?;
            found.insert(id, status);
        }
    }
    let plan = plan_submission(&t.depends_on, &found)?;
    let (error_message, completed_at) = match plan.failure_reason {
        Some(_) => {
            let dead = t
                .depends_on
                .iter()
                .find(|d| found[*d].is_dead_end())
                .cloned()
                .unwrap_or_default();
            (
                Some(format!("dependency {dead} had already failed or been cancelled")),
                Some(now),
            )
        }
        None => (None, None),
    };
    c.prepare_cached(
        "INSERT INTO work_queue (task_id, task_type, task_description, input_data, priority, status,
             pending_deps, created_by, created_by_type, created_at, max_attempts, error_message,
             failure_reason, completed_at, assigned_to)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        t.task_id,
        t.task_type,
        t.task_description,
        t.input_data.as_ref().map(to_json),
        t.priority,
        plan.status.as_str(),
        plan.waiting_on,
        who.agent_id,
        who.agent_type,
        now,
        t.max_attempts,
        error_message,
        plan.failure_reason,
        completed_at,
        t.assigned_to,
    ])?;
    if !t.depends_on.is_empty() {
        c.prepare_cached("INSERT INTO task_dependencies (task_id, depends_on) SELECT ?1, value FROM json_each(?2)")?
            .execute(params![t.task_id, to_json(&t.depends_on)])?;
    }
    Ok(SubmitWorkResult {
        success: true,
        task_id: t.task_id.clone(),
        status: plan.status,
    })
}

pub fn claim(c: &Connection, now: i64, who: &Identity, spec: &ClaimSpec) -> R<GetWorkResult> {
    settle_expired_claims(c, now, coord_domain::queue::CLAIM_SETTLE_BATCH)?;
    let until = now + minutes_to_micros(spec.lease_minutes);
    // Pinned indexes: without statistics SQLite picks the (status, task_type) index and
    // sorts every pending task on each claim.
    let (index, type_filter) = if spec.task_types.is_empty() {
        ("work_queue_claimable", "")
    } else {
        (
            "work_queue_claimable_typed",
            "AND task_type IN (SELECT value FROM json_each(?5))",
        )
    };
    let sql = format!(
        "UPDATE work_queue SET status = 'claimed', claimed_by = ?1, claimed_by_type = ?2, claimed_at = ?3,
             claimed_until = ?4, attempts = attempts + 1
         WHERE seq = (SELECT seq FROM work_queue INDEXED BY {index}
                      WHERE status = 'pending' AND pending_deps = 0 {type_filter}
                        AND (assigned_to IS NULL OR assigned_to = ?1)
                      ORDER BY priority, created_at, seq LIMIT 1)
         RETURNING {TASK_COLS}"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let claimed = if spec.task_types.is_empty() {
        stmt.query_row(params![who.agent_id, who.agent_type, now, until], task_from_row)
    } else {
        stmt.query_row(
            params![who.agent_id, who.agent_type, now, until, to_json(&spec.task_types)],
            task_from_row,
        )
    }
    .optional()?;
    Ok(match claimed {
        Some(t) => GetWorkResult::claimed(&t),
        None => GetWorkResult::none_available(),
    })
}

pub fn complete(c: &Connection, now: i64, who: &Identity, done: &Completion) -> R<CompleteWorkResult> {
    // With the workflow it is a node of, if any: moving that on needs no read of its own.
    let stored: Option<(TaskStatus, Option<String>, String, Option<String>)> = c
        .prepare_cached(
            "SELECT status, claimed_by, task_type,
                 (SELECT workflow_id FROM workflow_tasks w WHERE w.task_id = work_queue.task_id)
             FROM work_queue WHERE task_id = ?1",
        )?
        .query_row([&done.task_id], |r| {
            Ok((status_at(r, 0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let workflow_id = stored.as_ref().and_then(|s| s.3.clone());
    decide_completion(
        stored.as_ref().map(|(s, by, _, _)| (*s, by.as_deref())),
        &done.task_id,
        who,
    )?;
    let skill = match (&done.skill, &stored) {
        (Some(skill), Some((_, _, task_type, _))) => Some(crate::memory::record_skill(
            c,
            now,
            who,
            &skills::completion_use(skill, task_type, done.success),
        )?),
        _ => None,
    };
    let result = done.result.as_ref().map(to_json);
    if done.success {
        c.prepare_cached(
            "UPDATE work_queue SET status = 'completed', completed_at = ?2, result = ?3, error_message = ?4
             WHERE task_id = ?1",
        )?
        .execute(params![done.task_id, now, result, done.error_message])?;
        unblock_dependents(c, &done.task_id)?;
        Ok(CompleteWorkResult {
            success: true,
            task_id: done.task_id.clone(),
            status: TaskStatus::Completed,
            cancelled_dependents: Vec::new(),
            skill,
            workflow_id,
        })
    } else {
        let message = done
            .error_message
            .clone()
            .unwrap_or_else(|| "the agent reported failure".into());
        let cancelled = fail_task(
            c,
            now,
            &done.task_id,
            REASON_AGENT_REPORTED,
            &message,
            result.as_deref(),
        )?;
        Ok(CompleteWorkResult {
            success: true,
            task_id: done.task_id.clone(),
            status: TaskStatus::Failed,
            cancelled_dependents: cancelled,
            skill,
            workflow_id,
        })
    }
}

/// One dependency fewer for each pending task that depends on `task_id` (it completed).
fn unblock_dependents(c: &Connection, task_id: &str) -> R<()> {
    c.prepare_cached(
        // `+status`: the dependents are found through task_dependencies, never by
        // scanning every pending task through the status index.
        "UPDATE work_queue SET pending_deps = pending_deps - 1
         WHERE task_id IN (SELECT task_id FROM task_dependencies WHERE depends_on = ?1)
           AND +status = 'pending'",
    )?
    .execute([task_id])?;
    Ok(())
}

/// Marks a task failed and cancels everything that (transitively) depends on it;
/// returns the cancelled task ids.
fn fail_task(
    c: &Connection,
    now: i64,
    task_id: &str,
    reason: &str,
    message: &str,
    result: Option<&str>,
) -> R<Vec<String>> {
    c.prepare_cached(
        "UPDATE work_queue SET status = 'failed', failure_reason = ?2, error_message = ?3,
             result = COALESCE(?4, result), completed_at = ?5
         WHERE task_id = ?1",
    )?
    .execute(params![task_id, reason, message, result, now])?;
    cancel_dependents(c, now, task_id)
}

/// Cancels every pending task that (transitively) depends on `task_id`; returns their ids.
fn cancel_dependents(c: &Connection, now: i64, task_id: &str) -> R<Vec<String>> {
    let mut cancelled = c
        .prepare_cached(
            "WITH RECURSIVE dependents(id) AS (
                 SELECT task_id FROM task_dependencies WHERE depends_on = ?1
                 UNION
                 SELECT d.task_id FROM task_dependencies d JOIN dependents ON d.depends_on = dependents.id
             )
             UPDATE work_queue SET status = 'cancelled', failure_reason = ?2,
                 error_message = 'dependency ' || ?1 || ' failed', completed_at = ?3
             WHERE task_id IN (SELECT id FROM dependents) AND +status = 'pending'
             RETURNING task_id",
        )?
        .query_map(params![task_id, REASON_DEPENDENCY_FAILED, now], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    cancelled.sort();
    Ok(cancelled)
}

/// Ends a pending or claimed task from outside (its GitHub issue closed or no longer
/// assigned): completed (its dependents move on) or cancelled (theirs are cancelled).
/// Answers the status it moved to, or None when it had already ended.
pub fn end(c: &Connection, now: i64, task_id: &str, end: &TaskEnding) -> R<Option<TaskStatus>> {
    let status = if end.completed {
        TaskStatus::Completed
    } else {
        TaskStatus::Cancelled
    };
    let n = c
        .prepare_cached(
            "UPDATE work_queue SET status = ?2, completed_at = ?3,
                 result = CASE WHEN ?2 = 'completed' THEN json_object('note', ?4) ELSE result END,
                 error_message = CASE WHEN ?2 = 'cancelled' THEN ?4 ELSE error_message END,
                 failure_reason = CASE WHEN ?2 = 'cancelled' THEN ?5 ELSE failure_reason END
             WHERE task_id = ?1 AND status IN ('pending', 'claimed')",
        )?
        .execute(params![task_id, status.as_str(), now, end.note, end.reason])?;
    if n == 0 {
        return Ok(None);
    }
    if end.completed {
        unblock_dependents(c, task_id)?;
    } else {
        cancel_dependents(c, now, task_id)?;
    }
    Ok(Some(status))
}

/// Ends a claim that will not be completed by its holder (lease ran out, or the holder
/// was cleaned up as dead): back to `pending`, or `failed` after the last attempt.
/// Returns the status the task moved to.
pub fn release_claim(
    c: &Connection,
    now: i64,
    task_id: &str,
    attempts: i32,
    max_attempts: i32,
    why: &str,
) -> R<TaskStatus> {
    let next = expired_claim_status(attempts, max_attempts);
    match next {
        TaskStatus::Failed => {
            let message = format!("{why} after {attempts} of {max_attempts} attempts");
            fail_task(c, now, task_id, REASON_MAX_ATTEMPTS, &message, None)?;
        }
        _ => back_to_pending(c, task_id)?,
    }
    Ok(next)
}

/// A claimed task pending again, its claim dropped.
fn back_to_pending(c: &Connection, task_id: &str) -> R<()> {
    c.prepare_cached(
        "UPDATE work_queue SET status = 'pending', claimed_by = NULL, claimed_by_type = NULL,
             claimed_at = NULL, claimed_until = NULL
         WHERE task_id = ?1",
    )?
    .execute([task_id])?;
    Ok(())
}

/// Settles up to `batch` claims whose lease has run out; returns (requeued, failed).
pub fn settle_expired_claims(c: &Connection, now: i64, batch: i64) -> R<(i64, i64)> {
    let expired = c
        .prepare_cached(
            "SELECT task_id, attempts, max_attempts FROM work_queue INDEXED BY work_queue_lease
             WHERE status = 'claimed' AND claimed_until <= ?1 ORDER BY claimed_until LIMIT ?2",
        )?
        .query_map(params![now, batch], |r| {
            Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<Vec<(String, i32, i32)>>>()?;
    settle(c, now, &expired, "claim lease expired")
}

pub fn settle(c: &Connection, now: i64, claims: &[(String, i32, i32)], why: &str) -> R<(i64, i64)> {
    let (mut requeued, mut failed) = (0, 0);
    for (id, attempts, max) in claims {
        match release_claim(c, now, id, *attempts, *max, why)? {
            TaskStatus::Failed => failed += 1,
            _ => requeued += 1,
        }
    }
    Ok((requeued, failed))
}

pub fn get(c: &Connection, task_id: &str) -> R<GetTaskResult> {
    let task = c
        .prepare_cached(&format!("SELECT {TASK_COLS} FROM work_queue WHERE task_id = ?1"))?
        .query_row([task_id], task_from_row)
        .optional()?
        .ok_or_else(|| coord_domain::queue::task_not_found(task_id))?;
    Ok(GetTaskResult { success: true, task })
}

pub fn list(c: &Connection, f: &TaskFilter) -> R<ListTasksResult> {
    let tasks = c
        .prepare_cached(&format!(
            "SELECT {TASK_COLS} FROM work_queue
             WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR task_type = ?2)
             ORDER BY priority, created_at, seq LIMIT ?3"
        ))?
        .query_map(
            params![f.status.map(|s| s.as_str()), f.task_type, f.limit],
            task_from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ListTasksResult { tasks })
}

pub fn claimed_by(c: &Connection, agent_id: &str) -> R<Vec<TaskInfo>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {TASK_COLS} FROM work_queue WHERE status = 'claimed' AND claimed_by = ?1
             ORDER BY claimed_at"
    ))?
    .query_map([agent_id], task_from_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

#[async_trait]
impl QueueStore for SqliteStore {
    async fn cancel_task(&self, ctx: OpCtx, cancel: Cancellation) -> CoordResult<TaskOverrideResult> {
        self.op(ctx, move |c, now, _| cancel_override(c, now, &cancel)).await
    }

    async fn requeue_task(&self, ctx: OpCtx, task_id: String) -> CoordResult<TaskOverrideResult> {
        self.op(ctx, move |c, _, _| requeue_override(c, &task_id)).await
    }

    async fn submit_work(&self, ctx: OpCtx, task: NewTask) -> CoordResult<SubmitWorkResult> {
        self.op(ctx, move |c, now, who| submit(c, now, who, &task)).await
    }

    async fn claim_work(&self, ctx: OpCtx, spec: ClaimSpec) -> CoordResult<GetWorkResult> {
        self.op(ctx, move |c, now, who| claim(c, now, who, &spec)).await
    }

    async fn complete_work(&self, ctx: OpCtx, completion: Completion) -> CoordResult<CompleteWorkResult> {
        self.op(ctx, move |c, now, who| complete(c, now, who, &completion))
            .await
    }

    async fn get_task(&self, ctx: OpCtx, task_id: String) -> CoordResult<GetTaskResult> {
        self.op(ctx, move |c, _, _| get(c, &task_id)).await
    }

    async fn list_tasks(&self, ctx: OpCtx, filter: TaskFilter) -> CoordResult<ListTasksResult> {
        self.op(ctx, move |c, _, _| list(c, &filter)).await
    }

    async fn end_task(&self, ctx: OpCtx, task_id: String, ending: TaskEnding) -> CoordResult<Option<TaskStatus>> {
        self.op(ctx, move |c, now, _| end(c, now, &task_id, &ending)).await
    }
}

// A person's overrides (`coord_domain::overrides`): the task read, the domain
// decides, then the change, in the operation's transaction.

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

fn cancel_override(c: &Connection, now: i64, cancel: &Cancellation) -> R<TaskOverrideResult> {
    let was = decide_cancel(&cancel.task_id, task_state(c, &cancel.task_id)?)?;
    end(c, now, &cancel.task_id, &cancel.ending())?;
    Ok(TaskOverrideResult::cancelled(&cancel.task_id, was))
}

fn requeue_override(c: &Connection, task_id: &str) -> R<TaskOverrideResult> {
    let was = decide_requeue(task_id, task_state(c, task_id)?)?;
    back_to_pending(c, task_id)?;
    Ok(TaskOverrideResult::requeued(task_id, was))
}
