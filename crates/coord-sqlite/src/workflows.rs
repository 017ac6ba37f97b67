//! `workflows` and `workflow_tasks`: graph workflows and swarms, a JSON record each,
//! moved on under a version.

use crate::rows::{json, to_json};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::queue::{NewTask, TaskInfo};
use coord_domain::workflows::Workflow;
use coord_domain::{CoordResult, Identity};
use coord_store::{OpCtx, WorkflowStore};
use rusqlite::{Connection, OptionalExtension, params};

/// Submits the started nodes' tasks and maps them to the workflow.
fn start_nodes(c: &Connection, now: i64, who: &Identity, workflow_id: &str, tasks: &[(String, NewTask)]) -> R<()> {
    for (node, task) in tasks {
        crate::queue::submit(c, now, who, task)?;
        c.prepare_cached("INSERT INTO workflow_tasks (task_id, workflow_id, node) VALUES (?1, ?2, ?3)")?
            .execute(params![task.task_id, workflow_id, node])?;
    }
    Ok(())
}

fn create(c: &Connection, now: i64, who: &Identity, wf: &Workflow, tasks: &[(String, NewTask)]) -> R<()> {
    c.prepare_cached(
        "INSERT INTO workflows (workflow_id, kind, name, created_by, status, version, created_at, updated_at, record)
         VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?7)",
    )?
    .execute(params![
        wf.workflow_id,
        wf.kind.as_str(),
        wf.name,
        wf.created_by,
        wf.status.as_str(),
        now,
        to_json(wf)
    ])?;
    start_nodes(c, now, who, &wf.workflow_id, tasks)
}

fn step(
    c: &Connection,
    now: i64,
    who: &Identity,
    version: i64,
    next: &Workflow,
    tasks: &[(String, NewTask)],
) -> R<bool> {
    let moved = c
        .prepare_cached(
            "UPDATE workflows SET status = ?3, version = version + 1, updated_at = ?4, record = ?5
             WHERE workflow_id = ?1 AND version = ?2",
        )?
        .execute(params![
            next.workflow_id,
            version,
            next.status.as_str(),
            now,
            to_json(next)
        ])?;
    if moved == 0 {
        // Another step came first: nothing written; the service reads again.
        return Err(coord_domain::CoordError::new(
            coord_domain::ErrorCode::WorkflowBusy,
            "another step of this workflow came first",
        )
        .into());
    }
    start_nodes(c, now, who, &next.workflow_id, tasks)?;
    Ok(true)
}

fn tasks_of(c: &Connection, workflow_id: &str) -> R<Vec<TaskInfo>> {
    let sql = format!(
        "SELECT {} FROM work_queue WHERE task_id IN (SELECT task_id FROM workflow_tasks WHERE workflow_id = ?1)",
        crate::queue::TASK_COLS
    );
    Ok(c.prepare_cached(&sql)?
        .query_map([workflow_id], crate::queue::task_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

#[async_trait]
impl WorkflowStore for SqliteStore {
    async fn create_workflow(
        &self,
        ctx: OpCtx,
        workflow: Workflow,
        tasks: Vec<(String, NewTask)>,
        answer: serde_json::Value,
    ) -> CoordResult<serde_json::Value> {
        self.op(ctx, move |c, now, who| {
            create(c, now, who, &workflow, &tasks).map(|()| answer)
        })
        .await
    }

    async fn workflow(&self, workflow_id: &str) -> CoordResult<Option<(Workflow, i64, Vec<TaskInfo>)>> {
        let id = workflow_id.to_string();
        self.read(move |c| {
            let found: Option<(Workflow, i64)> = c
                .prepare_cached("SELECT record, version FROM workflows WHERE workflow_id = ?1")?
                .query_row([&id], |r| Ok((json(r, 0)?, r.get(1)?)))
                .optional()?;
            match found {
                Some((wf, version)) => Ok(Some((wf, version, tasks_of(c, &id)?))),
                None => Ok(None),
            }
        })
        .await
    }

    async fn step_workflow(
        &self,
        ctx: OpCtx,
        version: i64,
        next: Workflow,
        tasks: Vec<(String, NewTask)>,
    ) -> CoordResult<bool> {
        self.op(ctx, move |c, now, who| step(c, now, who, version, &next, &tasks))
            .await
    }

    async fn fail_pending_tasks(&self, ctx: OpCtx, task_ids: Vec<String>, reason: String) -> CoordResult<Vec<String>> {
        self.op(ctx, move |c, now, _| {
            let mut failed = Vec::new();
            for id in &task_ids {
                let n = c
                    .prepare_cached(
                        "UPDATE work_queue SET status = 'failed', failure_reason = ?2, error_message = ?3,
                             completed_at = ?4 WHERE task_id = ?1 AND status = 'pending'",
                    )?
                    .execute(params![id, coord_domain::queue::REASON_NO_WORKER, reason, now])?;
                if n == 1 {
                    failed.push(id.clone());
                }
            }
            Ok(failed)
        })
        .await
    }

    async fn workflows(&self, created_by: Option<String>, limit: i64) -> CoordResult<Vec<Workflow>> {
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT record FROM workflows WHERE (?1 IS NULL OR created_by = ?1)
                 ORDER BY created_at DESC, workflow_id LIMIT ?2",
            )?
            .query_map(params![created_by, limit], |r| json(r, 0))?
            .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }
}
