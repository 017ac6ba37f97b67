//! `work_queue` and `task_dependencies`. Claiming takes the first claimable row with
//! `FOR UPDATE SKIP LOCKED`, so concurrent workers never wait on, or take, each other's
//! candidate.

use crate::PgStore;
use crate::plans::{INDEX_SCANS_ONLY, index_scans_only};
use crate::predicted::{Param, Sent};
use crate::rows::{NOW, get, id_text, int, uuid, uuids};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::overrides::{Cancellation, TaskOverrideResult, TaskState, decide_cancel, decide_requeue};
use coord_domain::queue::{
    ClaimSpec, CompleteWorkResult, Completion, GetTaskResult, GetWorkResult, ListTasksResult, NewTask,
    REASON_AGENT_REPORTED, REASON_DEPENDENCY_FAILED, REASON_MAX_ATTEMPTS, SubmitWorkResult, TaskEnding, TaskFilter,
    TaskInfo, TaskStatus, decide_completion, expired_claim_status, plan_submission,
};
use coord_domain::{CoordError, Timestamp};
use coord_store::OpCtx;
use coord_store::QueueStore;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::LazyLock;
use tokio_postgres::Row;
use uuid::Uuid;

pub const TASK_COLS: &str = "task_id, task_type, task_description, input_data, priority, status, pending_deps,
    created_by, created_at, claimed_by, claimed_at, claimed_until, attempts, max_attempts, completed_at,
    result, error_message, failure_reason,
    ARRAY(SELECT d.depends_on FROM task_dependencies d WHERE d.task_id = work_queue.task_id ORDER BY d.depends_on),
    assigned_to";

fn status(s: &str) -> R<TaskStatus> {
    TaskStatus::parse(s).ok_or_else(|| {
        tracing::error!(status = s, "unknown task status in postgres");
        crate::Fail::Coord(CoordError::internal())
    })
}

pub fn task_from_row(r: &Row) -> R<TaskInfo> {
    Ok(TaskInfo {
        task_id: id_text(get(r, 0)?),
        task_type: get(r, 1)?,
        task_description: get(r, 2)?,
        input_data: get(r, 3)?,
        priority: get::<i32>(r, 4)? as i64,
        status: status(get(r, 5)?)?,
        pending_dependencies: get::<i32>(r, 6)? as i64,
        created_by: get(r, 7)?,
        created_at: get(r, 8)?,
        claimed_by: get(r, 9)?,
        claimed_at: get(r, 10)?,
        claimed_until: get(r, 11)?,
        attempts: get(r, 12)?,
        max_attempts: get(r, 13)?,
        completed_at: get(r, 14)?,
        result: get(r, 15)?,
        error_message: get(r, 16)?,
        failure_reason: get(r, 17)?,
        depends_on: get::<Vec<Uuid>>(r, 18)?.into_iter().map(id_text).collect(),
        assigned_to: get(r, 19)?,
    })
}

pub async fn submit(tx: &Tx<'_>, ctx: &OpCtx, t: &NewTask) -> R<SubmitWorkResult> {
    let deps = uuids(&t.depends_on)?;
    let mut found = HashMap::new();
    if !deps.is_empty() {
        // FOR SHARE holds the dependencies' state until this task is committed: a
        // concurrent completion or failure then sees the new dependency row.
        let rows = tx
            .query(
                &tx.prepare_cached("SELECT task_id, status FROM work_queue WHERE task_id = ANY($1) FOR SHARE")
                    .await?,
                &[&deps],
            )
            .await?;
        for r in &rows {
            found.insert(id_text(get(r, 0)?), status(get(r, 1)?)?);
        }
    }
    let plan = plan_submission(&t.depends_on, &found)?;
    let error_message = plan.failure_reason.map(|_| {
        let dead = t
            .depends_on
            .iter()
            .find(|d| found[*d].is_dead_end())
            .cloned()
            .unwrap_or_default();
        format!("dependency {dead} had already failed or been cancelled")
    });
    let id = uuid(&t.task_id)?;
    // Its answer is not needed (the result is decided): sent without waiting (`Tx::send`).
    tx.send(
        &tx.prepare_cached(&format!(
            "INSERT INTO work_queue (task_id, task_type, task_description, input_data, priority, status,
                 pending_deps, created_by, created_by_type, created_at, max_attempts, error_message,
                 failure_reason, completed_at, assigned_to)
             VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10, {NOW}, $11, $12, $13,
                     CASE WHEN $13::text IS NULL THEN NULL ELSE {NOW} END, $14)"
        ))
        .await?,
        &[
            &ctx.now,
            &id,
            &t.task_type,
            &t.task_description,
            &t.input_data,
            &int(t.priority),
            &plan.status.as_str(),
            &int(plan.waiting_on),
            &ctx.who.agent_id,
            &ctx.who.agent_type,
            &t.max_attempts,
            &error_message,
            &plan.failure_reason,
            &t.assigned_to,
        ],
    )?;
    if !deps.is_empty() {
        tx.send(
            &tx.prepare_cached("INSERT INTO task_dependencies (task_id, depends_on) SELECT $1, unnest($2::uuid[])")
                .await?,
            &[&id, &deps],
        )?;
    }
    Ok(SubmitWorkResult {
        success: true,
        task_id: t.task_id.clone(),
        status: plan.status,
    })
}

static CLAIM_ANY_SQL: LazyLock<String> = LazyLock::new(|| claim_sql(""));
static CLAIM_TYPED_SQL: LazyLock<String> = LazyLock::new(|| claim_sql("AND task_type = ANY($5)"));

fn claim_sql(type_filter: &str) -> String {
    format!(
        "UPDATE work_queue SET status = 'claimed', claimed_by = $2, claimed_by_type = $3, claimed_at = {NOW},
             claimed_until = {NOW} + make_interval(mins => $4), attempts = attempts + 1
         WHERE task_id = (SELECT task_id FROM work_queue
                          WHERE status = 'pending' AND pending_deps = 0 {type_filter}
                            AND (assigned_to IS NULL OR assigned_to = $2)
                          ORDER BY priority, created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING {TASK_COLS}"
    )
}

pub async fn claim(tx: &Tx<'_>, ctx: &OpCtx, spec: &ClaimSpec) -> R<GetWorkResult> {
    let lease = int(spec.lease_minutes);
    let typed = !spec.task_types.is_empty();
    let (expired, claim) = (
        tx.prepare_cached(&EXPIRED_SQL).await?,
        tx.prepare_cached(if typed { &CLAIM_TYPED_SQL } else { &CLAIM_ANY_SQL })
            .await?,
    );
    let batch = coord_domain::queue::CLAIM_SETTLE_BATCH;
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&ctx.now, &ctx.who.agent_id, &ctx.who.agent_type, &lease];
    if typed {
        params.push(&spec.task_types);
    }
    // The expired claims are read and a task claimed in one round trip. Expired claims
    // settle first in the queue's order (a requeued task may come before the one
    // claimed): when there are any, the claim is undone to its savepoint and made again
    // after them, which costs round trips only then.
    let (savepoint, undo) = (
        tx.prepare_cached("SAVEPOINT coord_claim").await?,
        tx.prepare_cached("ROLLBACK TO SAVEPOINT coord_claim").await?,
    );
    let expired_params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&ctx.now, &batch];
    let (expired, saved, row) = tokio::join!(
        biased;
        tx.query(&expired, &expired_params),
        tx.execute(&savepoint, &[]),
        tx.query_opt(&claim, &params)
    );
    let (expired, mut row) = (expired?, row?);
    saved?;
    if !expired.is_empty() {
        tx.execute(&undo, &[]).await?;
        settle(tx, ctx.now, &expired, "claim lease expired").await?;
        row = tx.query_opt(&claim, &params).await?;
    }
    Ok(match row {
        Some(r) => GetWorkResult::claimed(&task_from_row(&r)?),
        None => GetWorkResult::none_available(),
    })
}

pub async fn complete(tx: &Tx<'_>, ctx: &OpCtx, done: &Completion) -> R<CompleteWorkResult> {
    let id = uuid(&done.task_id)?;
    let row = tx
        .query_opt(
            // With the workflow it is a node of, if any: moving that on needs no read of its own.
            &tx.prepare_cached(
                "SELECT status, claimed_by, task_type,
                     (SELECT workflow_id FROM workflow_tasks w WHERE w.task_id = work_queue.task_id)
                 FROM work_queue WHERE task_id = $1 FOR UPDATE",
            )
            .await?,
            &[&id],
        )
        .await?;
    let stored = match &row {
        Some(r) => Some((status(get(r, 0)?)?, get::<Option<String>>(r, 1)?, get::<String>(r, 2)?)),
        None => None,
    };
    let workflow_id = match &row {
        Some(r) => get::<Option<String>>(r, 3)?,
        None => None,
    };
    decide_completion(
        stored.as_ref().map(|(s, by, _)| (*s, by.as_deref())),
        &done.task_id,
        &ctx.who,
    )?;
    let skill = match (&done.skill, &stored) {
        (Some(skill), Some((_, _, task_type))) => Some(
            crate::memory::record_skill(
                tx,
                ctx,
                &coord_domain::memory::skills::completion_use(skill, task_type, done.success),
            )
            .await?,
        ),
        _ => None,
    };
    if done.success {
        let (completed, settings, unblock) = (
            tx.prepare_cached(&COMPLETED_SQL).await?,
            tx.prepare_cached(INDEX_SCANS_ONLY).await?,
            tx.prepare_cached(UNBLOCK_SQL).await?,
        );
        // The task and its dependents, sent without waiting (`Tx::send`): they travel
        // with the audit row and the commit. (The dependents' update is planned with
        // index scans only, as `unblock_dependents` explains.)
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&ctx.now, &id, &done.result, &done.error_message];
        tx.send(&completed, &params)?;
        tx.send(&settings, &[])?;
        tx.send(&unblock, &[&id])?;
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
        let cancelled = fail_task(tx, ctx.now, id, REASON_AGENT_REPORTED, &message, done.result.as_ref()).await?;
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

/// One dependency fewer for each pending task that depends on `id` (it completed).
/// Planned with index scans only ([`crate::plans`]): without statistics the planner
/// would read every pending task for each completion.
async fn unblock_dependents(tx: &Tx<'_>, id: Uuid) -> R<()> {
    let stmt = tx.prepare_cached(UNBLOCK_SQL).await?;
    index_scans_only(tx, tx.execute(&stmt, &[&id])).await?;
    Ok(())
}

/// A claimed task completed (the caller decided it may).
static COMPLETED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE work_queue SET status = 'completed', completed_at = {NOW}, result = $3, error_message = $4
         WHERE task_id = $2"
    )
});

/// [`COMPLETED_SQL`] as the premise of a predicted completion: fails unless `$5` held the
/// claim (what `decide_completion` grants) and the task is no workflow's node (whose
/// workflow the service moves on, so the completion answers which one: read first).
static COMPLETED_PREMISE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH t AS ({} AND status = 'claimed' AND claimed_by = $5 RETURNING task_id)
         SELECT coord_expect(count(*) = 1 AND NOT EXISTS (SELECT 1 FROM workflow_tasks w WHERE w.task_id = $2))
         FROM t",
        *COMPLETED_SQL
    )
});

/// A successful completion's statements when nothing but the claim decides it (no skill
/// to record): predicted completed (`predicted`), its dependents unblocked.
fn predicted_completion(ctx: &OpCtx, done: &Completion) -> Option<(CompleteWorkResult, Vec<Sent>)> {
    if !done.success || done.skill.is_some() {
        return None;
    }
    let id = uuid(&done.task_id).ok()?;
    let premise: Vec<Param> = vec![
        Box::new(ctx.now),
        Box::new(id),
        Box::new(done.result.clone()),
        Box::new(done.error_message.clone()),
        Box::new(ctx.who.agent_id.clone()),
    ];
    let sent = vec![
        Sent::new(COMPLETED_PREMISE.as_str(), premise),
        Sent::new(INDEX_SCANS_ONLY, vec![]),
        Sent::new(UNBLOCK_SQL, vec![Box::new(id)]),
    ];
    let result = CompleteWorkResult {
        success: true,
        task_id: done.task_id.clone(),
        status: TaskStatus::Completed,
        cancelled_dependents: Vec::new(),
        skill: None,
        workflow_id: None,
    };
    Some((result, sent))
}

/// Run by [`unblock_dependents`] and [`complete`] only, after [`crate::plans::INDEX_SCANS_ONLY`].
const UNBLOCK_SQL: &str = "UPDATE work_queue SET pending_deps = pending_deps - 1
     WHERE status = 'pending'
       AND task_id IN (SELECT task_id FROM task_dependencies WHERE depends_on = $1)";

/// Marks a task failed and cancels everything that (transitively) depends on it.
async fn fail_task(
    tx: &Tx<'_>,
    now: Option<Timestamp>,
    id: Uuid,
    reason: &str,
    message: &str,
    result: Option<&Value>,
) -> R<Vec<String>> {
    tx.execute(
        &tx.prepare_cached(&format!(
            "UPDATE work_queue SET status = 'failed', failure_reason = $3, error_message = $4,
                 result = COALESCE($5, result), completed_at = {NOW}
             WHERE task_id = $2"
        ))
        .await?,
        &[&now, &id, &reason, &message, &result],
    )
    .await?;
    cancel_dependents(tx, now, id).await
}

/// Cancels every pending task that (transitively) depends on `id`; answers their ids.
async fn cancel_dependents(tx: &Tx<'_>, now: Option<Timestamp>, id: Uuid) -> R<Vec<String>> {
    // The cascade reads task_dependencies through its statement's snapshot, which
    // cannot see a dependent submitted concurrently (its submit holds the dependency
    // FOR SHARE, so this statement waits for it to commit, but keeps its old snapshot).
    // Running the cascade again with a fresh snapshot until it finds nothing new catches
    // every such late dependent.
    let cascade = tx
        .prepare_cached(&format!(
            "WITH RECURSIVE dependents(id) AS (
                 SELECT task_id FROM task_dependencies WHERE depends_on = $2
                 UNION
                 SELECT d.task_id FROM task_dependencies d JOIN dependents ON d.depends_on = dependents.id
             )
             UPDATE work_queue SET status = 'cancelled', failure_reason = $3,
                 error_message = 'dependency ' || $2::text || ' failed', completed_at = {NOW}
             WHERE status = 'pending' AND task_id IN (SELECT id FROM dependents)
             RETURNING task_id"
        ))
        .await?;
    // Planned with index scans only, as `unblock_dependents` is (its first run sends the
    // settings; they last for the transaction).
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&now, &id, &REASON_DEPENDENCY_FAILED];
    let mut rows = Vec::new();
    let mut more = index_scans_only(tx, tx.query(&cascade, &params)).await?;
    while !more.is_empty() {
        rows.extend(more);
        more = tx.query(&cascade, &params).await?;
    }
    let mut cancelled: Vec<String> = rows.iter().map(|r| get(r, 0).map(id_text)).collect::<R<_>>()?;
    cancelled.sort();
    Ok(cancelled)
}

/// Ends a pending or claimed task from outside (its GitHub issue closed or no longer
/// assigned): completed (its dependents move on) or cancelled (theirs are cancelled).
/// Answers the status it moved to, or None when it had already ended.
pub async fn end(tx: &Tx<'_>, ctx: &OpCtx, task_id: &str, end: &TaskEnding) -> R<Option<TaskStatus>> {
    let Ok(id) = uuid(task_id) else { return Ok(None) };
    let status = if end.completed {
        TaskStatus::Completed
    } else {
        TaskStatus::Cancelled
    };
    let n = tx
        .execute(
            &tx.prepare_cached(&format!(
                "UPDATE work_queue SET status = $3, completed_at = {NOW},
                     result = CASE WHEN $3 = 'completed' THEN jsonb_build_object('note', $4::text) ELSE result END,
                     error_message = CASE WHEN $3 = 'cancelled' THEN $4 ELSE error_message END,
                     failure_reason = CASE WHEN $3 = 'cancelled' THEN $5 ELSE failure_reason END
                 WHERE task_id = $2 AND status IN ('pending', 'claimed')"
            ))
            .await?,
            &[&ctx.now, &id, &status.as_str(), &end.note, &end.reason],
        )
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if end.completed {
        unblock_dependents(tx, id).await?;
    } else {
        cancel_dependents(tx, ctx.now, id).await?;
    }
    Ok(Some(status))
}

/// Ends a claim its holder will not complete: back to `pending`, or `failed` after
/// the last attempt (the rule is the domain's).
async fn release_claim(
    tx: &Tx<'_>,
    now: Option<Timestamp>,
    id: Uuid,
    attempts: i32,
    max: i32,
    why: &str,
) -> R<TaskStatus> {
    let next = expired_claim_status(attempts, max);
    if next == TaskStatus::Failed {
        let message = format!("{why} after {attempts} of {max} attempts");
        fail_task(tx, now, id, REASON_MAX_ATTEMPTS, &message, None).await?;
    } else {
        back_to_pending(tx, id).await?;
    }
    Ok(next)
}

/// A claimed task pending again, its claim dropped.
async fn back_to_pending(tx: &Tx<'_>, id: Uuid) -> R<()> {
    tx.execute(
        &tx.prepare_cached(
            "UPDATE work_queue SET status = 'pending', claimed_by = NULL, claimed_by_type = NULL,
                 claimed_at = NULL, claimed_until = NULL
             WHERE task_id = $1",
        )
        .await?,
        &[&id],
    )
    .await?;
    Ok(())
}

pub async fn settle(tx: &Tx<'_>, now: Option<Timestamp>, claims: &[Row], why: &str) -> R<(i64, i64)> {
    let (mut requeued, mut failed) = (0, 0);
    for r in claims {
        match release_claim(tx, now, get(r, 0)?, get(r, 1)?, get(r, 2)?, why).await? {
            TaskStatus::Failed => failed += 1,
            _ => requeued += 1,
        }
    }
    Ok((requeued, failed))
}

/// Settles up to `batch` claims whose lease ran out; returns (requeued, failed).
pub async fn settle_expired_claims(tx: &Tx<'_>, now: Option<Timestamp>, batch: i64) -> R<(i64, i64)> {
    let expired = tx
        .query(&tx.prepare_cached(&EXPIRED_SQL).await?, &[&now, &batch])
        .await?;
    settle(tx, now, &expired, "claim lease expired").await
}

/// Claims whose lease ran out, up to `$2`, locked for settling.
static EXPIRED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT task_id, attempts, max_attempts FROM work_queue
         WHERE status = 'claimed' AND claimed_until <= {NOW}
         ORDER BY claimed_until LIMIT $2 FOR UPDATE SKIP LOCKED"
    )
});

pub async fn get_task(tx: &Tx<'_>, task_id: &str) -> R<Option<TaskInfo>> {
    let row = tx
        .query_opt(
            &tx.prepare_cached(&format!("SELECT {TASK_COLS} FROM work_queue WHERE task_id = $1"))
                .await?,
            &[&uuid(task_id)?],
        )
        .await?;
    row.as_ref().map(task_from_row).transpose()
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
pub async fn show(tx: &Tx<'_>, task_id: &String) -> R<GetTaskResult> {
    let task = get_task(tx, task_id)
        .await?
        .ok_or_else(|| coord_domain::queue::task_not_found(task_id))?;
    Ok(GetTaskResult { success: true, task })
}

pub async fn list(tx: &Tx<'_>, f: &TaskFilter) -> R<ListTasksResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {TASK_COLS} FROM work_queue
                 WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR task_type = $2)
                 ORDER BY priority, created_at, seq LIMIT $3"
            ))
            .await?,
            &[&f.status.map(|s| s.as_str()), &f.task_type, &f.limit],
        )
        .await?;
    Ok(ListTasksResult {
        tasks: rows.iter().map(task_from_row).collect::<R<_>>()?,
    })
}

pub async fn claimed_by(tx: &Tx<'_>, agent_id: &str) -> R<Vec<TaskInfo>> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {TASK_COLS} FROM work_queue WHERE status = 'claimed' AND claimed_by = $1 ORDER BY claimed_at"
            ))
            .await?,
            &[&agent_id],
        )
        .await?;
    rows.iter().map(task_from_row).collect()
}

#[async_trait]
impl QueueStore for PgStore {
    async fn cancel_task(&self, ctx: OpCtx, cancel: Cancellation) -> CoordResult<TaskOverrideResult> {
        self.op(ctx, cancel, |tx, ctx, a| Box::pin(cancel_override(tx, ctx, a)))
            .await
    }

    async fn requeue_task(&self, ctx: OpCtx, task_id: String) -> CoordResult<TaskOverrideResult> {
        self.op(ctx, task_id, |tx, _, a| Box::pin(requeue_override(tx, a)))
            .await
    }

    async fn submit_work(&self, ctx: OpCtx, task: NewTask) -> CoordResult<SubmitWorkResult> {
        self.op(ctx, task, |tx, ctx, a| Box::pin(submit(tx, ctx, a))).await
    }

    async fn claim_work(&self, ctx: OpCtx, spec: ClaimSpec) -> CoordResult<GetWorkResult> {
        self.op(ctx, spec, |tx, ctx, a| Box::pin(claim(tx, ctx, a))).await
    }

    /// Predicted (one round trip) for a successful completion of a claimed task that is
    /// no workflow's node and records no skill.
    async fn complete_work(&self, ctx: OpCtx, completion: Completion) -> CoordResult<CompleteWorkResult> {
        let f: crate::OpFn<Completion, CompleteWorkResult> = |tx, ctx, a| Box::pin(complete(tx, ctx, a));
        match predicted_completion(&ctx, &completion) {
            Some((result, sent)) => self.op_predicted(ctx, result, sent, completion, f).await,
            None => self.op(ctx, completion, f).await,
        }
    }

    async fn get_task(&self, ctx: OpCtx, task_id: String) -> CoordResult<GetTaskResult> {
        self.op(ctx, task_id, |tx, _, a| Box::pin(show(tx, a))).await
    }

    async fn list_tasks(&self, ctx: OpCtx, filter: TaskFilter) -> CoordResult<ListTasksResult> {
        self.op(ctx, filter, |tx, _, a| Box::pin(list(tx, a))).await
    }

    async fn end_task(&self, ctx: OpCtx, task_id: String, ending: TaskEnding) -> CoordResult<Option<TaskStatus>> {
        self.op(ctx, (task_id, ending), |tx, ctx, (id, e)| Box::pin(end(tx, ctx, id, e)))
            .await
    }
}

// A person's overrides (`coord_domain::overrides`): the task read (and locked), the domain
// decides, then the change, in the operation's transaction.

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

async fn cancel_override(tx: &Tx<'_>, ctx: &OpCtx, cancel: &Cancellation) -> R<TaskOverrideResult> {
    let was = decide_cancel(&cancel.task_id, task_state(tx, &cancel.task_id).await?)?;
    end(tx, ctx, &cancel.task_id, &cancel.ending()).await?;
    Ok(TaskOverrideResult::cancelled(&cancel.task_id, was))
}

async fn requeue_override(tx: &Tx<'_>, task_id: &str) -> R<TaskOverrideResult> {
    let was = decide_requeue(task_id, task_state(tx, task_id).await?)?;
    back_to_pending(tx, uuid(task_id)?).await?;
    Ok(TaskOverrideResult::requeued(task_id, was))
}

#[cfg(test)]
mod tests {
    //! On a real server, on temporary `work_queue` and `task_dependencies` (they hide the
    //! real tables for their session): a temporary table is never analyzed by autovacuum,
    //! so these stay without statistics, as a queue that just grew is.
    use super::*;
    use crate::plans::tests::explain;
    use crate::tx::tests::connection;
    use deadpool_postgres::Object;

    const ROOT: &str = "00000000-0000-0000-0000-000000000000";

    /// 20,000 pending tasks; every tenth from the tenth on depends on the one ten before.
    async fn grown(c: &Object) {
        c.batch_execute(
            // The columns and indexes the migrations leave (the planner's estimates follow
            // the row width), without the constraints.
            "CREATE TEMP TABLE work_queue (task_id uuid PRIMARY KEY, seq bigint GENERATED ALWAYS AS IDENTITY,
                 task_type text NOT NULL DEFAULT 't', task_description text NOT NULL DEFAULT 'a task',
                 input_data jsonb, priority integer NOT NULL DEFAULT 5, status text NOT NULL,
                 pending_deps integer NOT NULL DEFAULT 0, created_by text NOT NULL DEFAULT 'boss',
                 created_by_type text NOT NULL DEFAULT 'cli', created_at timestamptz NOT NULL DEFAULT now(),
                 claimed_by text, claimed_by_type text, claimed_at timestamptz, claimed_until timestamptz,
                 attempts integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL DEFAULT 3,
                 completed_at timestamptz, result jsonb, error_message text, failure_reason text,
                 assigned_to text);
             CREATE INDEX ON work_queue (priority, created_at, seq) WHERE status = 'pending' AND pending_deps = 0;
             CREATE INDEX ON work_queue (task_type, priority, created_at, seq) WHERE status = 'pending' AND pending_deps = 0;
             CREATE INDEX ON work_queue (claimed_by) WHERE status = 'claimed';
             CREATE INDEX ON work_queue (claimed_until) WHERE status = 'claimed';
             CREATE INDEX ON work_queue (status, task_type);
             CREATE TEMP TABLE task_dependencies (task_id uuid NOT NULL, depends_on uuid NOT NULL,
                 PRIMARY KEY (task_id, depends_on));
             CREATE INDEX ON task_dependencies (depends_on, task_id);
             INSERT INTO work_queue (task_id, status, pending_deps)
                 SELECT ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid, 'pending',
                        CASE WHEN i % 10 = 0 AND i > 0 THEN 1 ELSE 0 END
                 FROM generate_series(0, 19999) i;
             INSERT INTO task_dependencies
                 SELECT ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid,
                        ('00000000-0000-0000-0000-' || lpad((i - 10)::text, 12, '0'))::uuid
                 FROM generate_series(10, 19999, 10) i;",
        )
        .await
        .unwrap();
    }

    /// The plan of [`UNBLOCK_SQL`] for the root's dependents after `setup`, as node types.
    async fn plan(c: &Object, setup: &str) -> Vec<String> {
        let statement = UNBLOCK_SQL.replace("$1", &format!("'{ROOT}'::uuid"));
        explain(c, setup, "", &statement).await.0
    }

    #[tokio::test]
    async fn a_completion_finds_its_dependents_by_index_without_statistics() {
        let Some((_store, c)) = connection().await else { return };
        grown(&c).await;
        // What the planner does left to itself: it reads every pending task.
        let nodes = plan(&c, "").await;
        assert!(
            nodes.iter().any(|n| n == "Hash Join"),
            "without the settings: {nodes:?}"
        );
        let nodes = plan(&c, &format!("{};", crate::plans::INDEX_SCANS_ONLY)).await;
        assert!(
            nodes
                .iter()
                .all(|n| ["ModifyTable", "Nested Loop", "Index Scan", "Index Only Scan"].contains(&n.as_str())),
            "with them: {nodes:?}"
        );
        // The store's statement sends the settings in its transaction, and does its work.
        let tx = Tx::new(&c);
        unblock_dependents(&tx, uuid(ROOT).unwrap()).await.unwrap();
        let row = tx
            .query_one(
                "SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan'),
                        (SELECT pending_deps FROM work_queue WHERE task_id = '00000000-0000-0000-0000-000000000010')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            (row.get::<_, String>(0), row.get::<_, String>(1), row.get::<_, i32>(2)),
            ("off".into(), "off".into(), 0)
        );
    }
}
