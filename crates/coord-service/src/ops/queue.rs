//! The work queue.

use crate::Coordinator;
use crate::op::{Http, IdSlot, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::guardrails::{WorkChanges, validate_changes};
use coord_domain::ids::IdKind;
use coord_domain::profiles::Need;
use coord_domain::queue::{
    ClaimSpec, CompleteWorkRequest, CompleteWorkResult, Completion, GetTaskRequest, GetTaskResult, GetWorkRequest,
    GetWorkResult, ListTasksRequest, ListTasksResult, NewTask, SubmitWorkRequest, SubmitWorkResult, TaskFilter,
    parse_task_id, validate_claim, validate_completion, validate_submission, validate_task_filter,
};
use coord_domain::{CoordResult, ErrorCode, Identity};
use coord_store::OpCtx;

pub struct SubmitWork;
impl Operation for SubmitWork {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "submit_work";
    const SUMMARY: &'static str = "Add a task to the queue";
    const DESCRIPTION: &'static str = "Add a task to the shared work queue for any agent to claim: task_type (e.g. \
        test, refactor, review), task_description, optional input_data (JSON), priority 1 (most urgent) to 10 \
        (default 5), and depends_on (task ids that must complete first). Answers {success:true, task_id, status}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE.starting_work();
    const HTTP: &'static [Http] = &[Http::post("/work/submit")];
    const EXAMPLE: &'static str =
        "{\"task_type\": \"test\", \"task_description\": \"run the test suite\", \"priority\": 3}";
    type Request = SubmitWorkRequest;
    type Response = SubmitWorkResult;
    type Args = NewTask;

    fn ids(req: &mut SubmitWorkRequest) -> Vec<IdSlot<'_>> {
        let slots = IdSlot::each(IdKind::Task, "depends_on", req.depends_on.iter_mut().flatten());
        slots
            .into_iter()
            .map(|s| s.missing(ErrorCode::UnknownDependency))
            .collect()
    }

    fn validate(c: &Coordinator, _: &Identity, req: SubmitWorkRequest) -> CoordResult<NewTask> {
        validate_submission(req, crate::new_id(), c.config().max_attempts)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, task: NewTask) -> CoordResult<SubmitWorkResult> {
        c.store().submit_work(ctx, task).await
    }
}

pub struct GetWork;
impl Operation for GetWork {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "get_work";
    const SUMMARY: &'static str = "Claim the most urgent available task";
    const DESCRIPTION: &'static str = "Claim the most urgent task from the shared work queue (priority 1 first, \
        then oldest) whose dependencies are all completed; optionally only of the given task_types. Answers \
        {success:true, task_id, task_type, task_description, input_data, priority, attempt, claimed_until}, or \
        {success:false, reason:\"no_tasks_available\"}. Finish every claimed task with complete_work; the claim \
        is a lease that heartbeats extend.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE.starting_work();
    const HTTP: &'static [Http] = &[Http::post("/work/claim")];
    const EXAMPLE: &'static str = "{\"task_types\": [\"test\"]}";
    type Request = GetWorkRequest;
    type Response = GetWorkResult;
    type Args = ClaimSpec;

    fn validate(c: &Coordinator, _: &Identity, req: GetWorkRequest) -> CoordResult<ClaimSpec> {
        validate_claim(req, c.config().claim_lease_minutes)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, spec: ClaimSpec) -> CoordResult<GetWorkResult> {
        c.store().claim_work(ctx, spec).await
    }
}

pub struct CompleteWork;
impl Operation for CompleteWork {
    const NAME: &'static str = "complete_work";
    const SUMMARY: &'static str = "Complete (or fail) a task you claimed";
    const DESCRIPTION: &'static str = "Finish a task you claimed with get_work: success=true marks it completed \
        (unblocking tasks that depend on it), success=false marks it failed (tasks depending on it are \
        cancelled). With changes {commands, files, diff} a successful completion is checked by the guardrails \
        first: destructive commands, credential files and destructive lines added to scripts refuse it \
        (destructive_operation_blocked or credential_file_protected, with the findings and an approval_id). \
        With skill (the technique the work used, in words) the use is counted for the task's type as a success \
        or not (see get_skills). Answers {success:true, status:\"completed\"|\"failed\"}; error not_task_owner if \
        another agent claimed it.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    // The guardrail scan decides on the same facts, and every store operation it leads to
    // (the completion, a refusal, an approval spent) confirms them.
    const POLICY_FROM_LAST_CALL: bool = true;
    const HTTP: &'static [Http] = &[Http::post("/work/complete").errors(&[404, 409])];
    const EXAMPLE: &'static str =
        "{\"task_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\", \"success\": true, \"result\": {\"passed\": 12}}";
    type Request = CompleteWorkRequest;
    type Response = CompleteWorkResult;
    type Args = (Completion, Option<WorkChanges>);

    fn ids(req: &mut CompleteWorkRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Task, "task_id", &mut req.task_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: CompleteWorkRequest) -> CoordResult<Self::Args> {
        let changes = validate_changes(req.changes.clone())?;
        Ok((validate_completion(req, crate::new_id())?, changes))
    }

    async fn execute(c: &Coordinator, mut ctx: OpCtx, (done, changes): Self::Args) -> CoordResult<CompleteWorkResult> {
        // A successful completion's code changes go through the guardrails first: a
        // destructive finding refuses the completion (with the matches to address), unless
        // a person approved exactly this completion (that approval is spent, in its own
        // audited step).
        let mut elevated = None;
        if done.success
            && let Some(changes) = &changes
        {
            let patterns = crate::ops::guardrails::patterns(c).await?;
            let findings = coord_guardrails::analyze_changes_with(changes, &patterns);
            elevated = crate::ops::guardrails::enforce(c, &mut ctx, findings).await?;
        }
        let completed = c.store().complete_work(ctx.clone(), done).await?;
        // An elevated pass is reported only for a completion that happened.
        if let Some(passed) = elevated
            && let Err(e) = crate::ops::guardrails::record_elevated(c, ctx, passed).await
        {
            // The completion stands; what failed is its report, which must not undo it.
            tracing::error!(error = %e, "an elevated completion could not be recorded");
        }
        Ok(completed)
    }

    /// A node of a workflow moves it on (its next nodes queued, or skipped).
    fn follow_ups(answer: &CoordResult<CompleteWorkResult>) -> Vec<crate::follow_up::FollowUp> {
        crate::ops::workflows::node_ended(answer.as_ref().ok().and_then(|done| done.workflow_id.as_ref()))
    }
}

pub struct GetTask;
impl Operation for GetTask {
    const NAME: &'static str = "get_task";
    const SUMMARY: &'static str = "One task in full";
    const DESCRIPTION: &'static str = "Show one task in full (task_id, or a unique prefix of it): status (pending, claimed, completed, failed, \
        cancelled), dependencies, claimer, lease, attempts, result and failure reason. Answers {success:true, \
        task:{...}}.";
    // Tasks carry their payloads (input_data, result): reading one needs a key.
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/work/{task_id}")
        .input(Input::Path("task_id"))
        .errors(&[404])];
    const EXAMPLE: &'static str = "{\"task_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\"}";
    type Request = GetTaskRequest;
    type Response = GetTaskResult;
    type Args = String;

    fn ids(req: &mut GetTaskRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Task, "task_id", &mut req.task_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: GetTaskRequest) -> CoordResult<String> {
        parse_task_id("task_id", &req.task_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<GetTaskResult> {
        c.store().get_task(ctx, id).await
    }
}

pub struct ListTasks;
impl Operation for ListTasks {
    const NAME: &'static str = "list_tasks";
    const SUMMARY: &'static str = "List tasks, most urgent first";
    const DESCRIPTION: &'static str = "List tasks in the shared work queue, most urgent first, optionally only \
        those with a status (pending, claimed, completed, failed, cancelled) or a task_type; limit defaults to \
        100. Use it to see what work exists before claiming or submitting. Answers {tasks:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/work")];
    const EXAMPLE: &'static str = "{\"status\": \"pending\", \"limit\": 20}";
    type Request = ListTasksRequest;
    type Response = ListTasksResult;
    type Args = TaskFilter;

    fn validate(_: &Coordinator, _: &Identity, req: ListTasksRequest) -> CoordResult<TaskFilter> {
        validate_task_filter(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, filter: TaskFilter) -> CoordResult<ListTasksResult> {
        c.store().list_tasks(ctx, filter).await
    }
}
