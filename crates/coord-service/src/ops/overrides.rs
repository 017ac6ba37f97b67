//! A person's overrides of other agents' coordination (`coord_domain::overrides`):
//! release a lock whoever holds it, cancel a task, put a claimed task back in the queue.
//! Trust 4 or an operator key (`manage_work`); never from inside an agent's session.

use crate::Coordinator;
use crate::op::{Http, IdSlot, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::ids::IdKind;
use coord_domain::overrides::{
    BreakLockRequest, BreakLockResult, CancelTaskRequest, Cancellation, RequeueTaskRequest, TaskOverrideResult,
    validate_break, validate_cancel, validate_requeue,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct BreakLock;
impl Operation for BreakLock {
    const NAME: &'static str = "break_lock";
    const SUMMARY: &'static str = "Release another agent's lock (a person: trust 4 or an operator key)";
    const DESCRIPTION: &'static str = "Release a live lock whoever holds it — the lock of an agent that went \
        quiet or crashed — named as its holder named it (\"src/auth/\" for a directory lock, the glob for a glob \
        lock); optional reason for the audit trail. The holder's fencing token is then stale: its writes through \
        coord carrying it are refused. Needs trust level 4 or an operator key (manage_work). Answers {success:true, \
        released:true, file_path, locked_by, agent_type, fencing_token}; lock_not_held when nobody holds it.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManageWork);
    const HTTP: &'static [Http] = &[Http::post("/locks/break").errors(&[409])];
    const PATH_FIELDS: &'static [&'static str] = &["file_path"];
    const EXAMPLE: &'static str = "{\"file_path\": \"src/auth.rs\", \"reason\": \"its agent crashed\"}";
    type Request = BreakLockRequest;
    type Response = BreakLockResult;
    type Args = String;

    fn validate(c: &Coordinator, _: &Identity, req: BreakLockRequest) -> CoordResult<String> {
        validate_break(req, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, path: String) -> CoordResult<BreakLockResult> {
        c.store().break_lock(ctx, path).await
    }
}

pub struct CancelTask;
impl Operation for CancelTask {
    const NAME: &'static str = "cancel_task";
    const SUMMARY: &'static str = "Cancel a task that has not ended (a person: trust 4 or an operator key)";
    const DESCRIPTION: &'static str = "Cancel a pending or claimed task (task_id, or a unique prefix of it; \
        optional reason): it ends as cancelled (failure_reason cancelled_by_person, error_message saying who and \
        why), the tasks that depend on it are cancelled too, and its claimer's completion is refused. Needs \
        trust level 4 or an operator key (manage_work). Answers {success:true, task_id, status:\"cancelled\", \
        was, claimed_by}; task_ended when it already ended, task_not_found.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManageWork);
    const HTTP: &'static [Http] = &[Http::post("/work/cancel").errors(&[404, 409])];
    const EXAMPLE: &'static str =
        "{\"task_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\", \"reason\": \"superseded by the new design\"}";
    type Request = CancelTaskRequest;
    type Response = TaskOverrideResult;
    type Args = Cancellation;

    fn ids(req: &mut CancelTaskRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Task, "task_id", &mut req.task_id)]
    }

    fn validate(_: &Coordinator, who: &Identity, req: CancelTaskRequest) -> CoordResult<Cancellation> {
        validate_cancel(req, &who.agent_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, cancel: Cancellation) -> CoordResult<TaskOverrideResult> {
        c.store().cancel_task(ctx, cancel).await
    }

    /// A node of a workflow moves it on, as when its agent ends it.
    fn follow_ups(answer: &CoordResult<TaskOverrideResult>) -> Vec<crate::follow_up::FollowUp> {
        crate::ops::workflows::node_ended(answer.as_ref().ok().and_then(|done| done.workflow_id.as_ref()))
    }
}

pub struct RequeueTask;
impl Operation for RequeueTask {
    const NAME: &'static str = "requeue_task";
    const SUMMARY: &'static str = "Put a claimed task back in the queue (a person: trust 4 or an operator key)";
    const DESCRIPTION: &'static str = "Put a claimed task back in the queue (task_id, or a unique prefix of it): \
        pending again, its claim dropped (the claimer's completion is refused until a new claim), the \
        attempt it used still counted (at its last attempt it gets one more). For a claim whose agent is \
        stuck but still heartbeating, so its lease never runs out. Needs \
        trust level 4 or an operator key (manage_work). Answers {success:true, task_id, status:\"pending\", \
        was:\"claimed\", claimed_by}; task_not_claimed for a task in any other state, task_not_found.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManageWork);
    const HTTP: &'static [Http] = &[Http::post("/work/requeue").errors(&[404, 409])];
    const EXAMPLE: &'static str = "{\"task_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\"}";
    type Request = RequeueTaskRequest;
    type Response = TaskOverrideResult;
    type Args = String;

    fn ids(req: &mut RequeueTaskRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Task, "task_id", &mut req.task_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: RequeueTaskRequest) -> CoordResult<String> {
        validate_requeue(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, task_id: String) -> CoordResult<TaskOverrideResult> {
        c.store().requeue_task(ctx, task_id).await
    }
}
