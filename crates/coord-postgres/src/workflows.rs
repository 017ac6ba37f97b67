//! `workflows` and `workflow_tasks`: graph workflows and swarms, a JSON record each,
//! moved on under a version.

use crate::rows::{NOW, get, uuid};
use crate::{Fail, PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::queue::{NewTask, TaskInfo};
use coord_domain::workflows::Workflow;
use coord_store::{OpCtx, WorkflowStore};
use tokio_postgres::types::Json;

/// Submits the started nodes' tasks and maps them to the workflow.
async fn start_nodes(tx: &Tx<'_>, ctx: &OpCtx, workflow_id: &str, tasks: &[(String, NewTask)]) -> R<()> {
    for (node, task) in tasks {
        crate::queue::submit(tx, ctx, task).await?;
        tx.execute(
            &tx.prepare_cached("INSERT INTO workflow_tasks (task_id, workflow_id, node) VALUES ($1, $2, $3)")
                .await?,
            &[&uuid(&task.task_id)?, &workflow_id, node],
        )
        .await?;
    }
    Ok(())
}

async fn create(
    tx: &Tx<'_>,
    ctx: &OpCtx,
    (wf, tasks, answer): &(Workflow, Vec<(String, NewTask)>, serde_json::Value),
) -> R<serde_json::Value> {
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO workflows (workflow_id, kind, name, created_by, status, version, created_at, updated_at, record)
             VALUES ($2, $3, $4, $5, $6, 1, {NOW}, {NOW}, $7)"
        ))
        .await?,
        &[
            &ctx.now,
            &wf.workflow_id,
            &wf.kind.as_str(),
            &wf.name,
            &wf.created_by,
            &wf.status.as_str(),
            &Json(wf),
        ],
    )
    .await?;
    start_nodes(tx, ctx, &wf.workflow_id, tasks).await?;
    Ok(answer.clone())
}

async fn step(tx: &Tx<'_>, ctx: &OpCtx, (version, next, tasks): &(i64, Workflow, Vec<(String, NewTask)>)) -> R<bool> {
    let moved = tx
        .execute(
            &tx.prepare_cached(&format!(
                "UPDATE workflows SET status = $4, version = version + 1, updated_at = {NOW}, record = $5
                 WHERE workflow_id = $2 AND version = $3"
            ))
            .await?,
            &[&ctx.now, &next.workflow_id, version, &next.status.as_str(), &Json(next)],
        )
        .await?;
    if moved == 0 {
        // Another step came first: nothing written; the service reads again.
        return Err(coord_domain::CoordError::new(
            coord_domain::ErrorCode::WorkflowBusy,
            "another step of this workflow came first",
        )
        .into());
    }
    start_nodes(tx, ctx, &next.workflow_id, tasks).await?;
    Ok(true)
}

async fn fail_pending(tx: &Tx<'_>, ctx: &OpCtx, (task_ids, reason): &(Vec<String>, String)) -> R<Vec<String>> {
    let mut failed = Vec::new();
    for id in task_ids {
        let n = tx
            .execute(
                &tx.prepare_cached(&format!(
                    "UPDATE work_queue SET status = 'failed', failure_reason = $3, error_message = $4,
                         completed_at = {NOW} WHERE task_id = $2 AND status = 'pending'"
                ))
                .await?,
                &[&ctx.now, &uuid(id)?, &coord_domain::queue::REASON_NO_WORKER, reason],
            )
            .await?;
        if n == 1 {
            failed.push(id.clone());
        }
    }
    Ok(failed)
}

#[async_trait]
impl WorkflowStore for PgStore {
    async fn create_workflow(
        &self,
        ctx: OpCtx,
        workflow: Workflow,
        tasks: Vec<(String, NewTask)>,
        answer: serde_json::Value,
    ) -> CoordResult<serde_json::Value> {
        self.op(ctx, (workflow, tasks, answer), |tx, ctx, a| {
            Box::pin(create(tx, ctx, a))
        })
        .await
    }

    async fn workflow(&self, workflow_id: &str) -> CoordResult<Option<(Workflow, i64, Vec<TaskInfo>)>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT record, version FROM workflows WHERE workflow_id = $1",
                &[&workflow_id],
            )
            .await
            .map_err(Fail::from)?;
        let Some(row) = row else { return Ok(None) };
        let wf = get::<Json<Workflow>>(&row, 0)?.0;
        let version: i64 = get(&row, 1)?;
        let rows = client
            .query(
                &format!(
                    "SELECT {} FROM work_queue WHERE task_id IN
                     (SELECT task_id FROM workflow_tasks WHERE workflow_id = $1)",
                    crate::queue::TASK_COLS
                ),
                &[&workflow_id],
            )
            .await
            .map_err(Fail::from)?;
        let tasks = rows.iter().map(crate::queue::task_from_row).collect::<R<Vec<_>>>()?;
        Ok(Some((wf, version, tasks)))
    }

    async fn step_workflow(
        &self,
        ctx: OpCtx,
        version: i64,
        next: Workflow,
        tasks: Vec<(String, NewTask)>,
    ) -> CoordResult<bool> {
        self.op(ctx, (version, next, tasks), |tx, ctx, a| Box::pin(step(tx, ctx, a)))
            .await
    }

    async fn fail_pending_tasks(&self, ctx: OpCtx, task_ids: Vec<String>, reason: String) -> CoordResult<Vec<String>> {
        self.op(ctx, (task_ids, reason), |tx, ctx, a| Box::pin(fail_pending(tx, ctx, a)))
            .await
    }

    async fn workflows(&self, created_by: Option<String>, limit: i64) -> CoordResult<Vec<Workflow>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT record FROM workflows WHERE ($1::text IS NULL OR created_by = $1)
                 ORDER BY created_at DESC, workflow_id LIMIT $2",
                &[&created_by, &limit],
            )
            .await
            .map_err(Fail::from)?;
        Ok(rows
            .iter()
            .map(|r| get::<Json<Workflow>>(r, 0).map(|j| j.0))
            .collect::<R<Vec<_>>>()?)
    }
}
