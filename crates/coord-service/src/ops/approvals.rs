//! The approval queue: refusals a person may lift once. Requests are created by the
//! pipeline's refusals (see `coord_store::OpCtx::approval_request`); these operations
//! read and decide them.

use crate::Coordinator;
use crate::op::{Http, IdSlot, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::approvals::{
    ApprovalFilter, ApprovalResult, DecideApprovalRequest, GetApprovalRequest, ListApprovalsRequest,
    ListApprovalsResult, NewDecision, validate_approval_id, validate_decision, validate_filter,
};
use coord_domain::ids::IdKind;
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct ListApprovals;
impl Operation for ListApprovals {
    const METERED: bool = false;
    const NAME: &'static str = "list_approvals";
    const SUMMARY: &'static str = "Approval requests, newest first (filter by status and requester)";
    const DESCRIPTION: &'static str = "List approval requests, newest first: refused requests (over a resource \
        limit of a profile that allows escalation) waiting for a person, and their decisions. Filter by status \
        (pending, approved, denied, used, expired) and requested_by (an agent id); limit defaults to 100. \
        Answers {success:true, approvals:[{approval_id, agent_id, operation, parameters, error, reason, status, \
        requested_at, expires_at, decided_by, ...}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/approvals")];
    const EXAMPLE: &'static str = "{\"status\": \"pending\"}";
    type Request = ListApprovalsRequest;
    type Response = ListApprovalsResult;
    type Args = ApprovalFilter;

    fn validate(_: &Coordinator, _: &Identity, req: ListApprovalsRequest) -> CoordResult<ApprovalFilter> {
        validate_filter(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, filter: ApprovalFilter) -> CoordResult<ListApprovalsResult> {
        c.store().list_approvals(ctx, filter).await
    }
}

pub struct GetApproval;
impl Operation for GetApproval {
    const METERED: bool = false;
    const NAME: &'static str = "get_approval";
    const SUMMARY: &'static str = "One approval request and its decision";
    const DESCRIPTION: &'static str = "Read one approval request by approval_id (the id a refusal with \
        approval_required:true answered): poll it to wait for a decision. status is pending, approved (the \
        same request by the same agent now passes once, until expires_at), denied, used or expired. Answers \
        {success:true, approval:{...}}; an unknown id is not_found. Like every id, a unique prefix (4+ \
        characters) will do; one naming several is ambiguous_id, listing them.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/approvals/{approval_id}")
        .input(Input::Path("approval_id"))
        .errors(&[404])];
    const EXAMPLE: &'static str = "{\"approval_id\": \"apr_0123456789abcdef\"}";
    type Request = GetApprovalRequest;
    type Response = ApprovalResult;
    type Args = String;

    fn ids(req: &mut GetApprovalRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Approval, "approval_id", &mut req.approval_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: GetApprovalRequest) -> CoordResult<String> {
        validate_approval_id(&req.approval_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<ApprovalResult> {
        c.store().get_approval(ctx, id).await
    }
}

pub struct DecideApproval;
impl Operation for DecideApproval {
    const NAME: &'static str = "decide_approval";
    const SUMMARY: &'static str = "Approve or deny a pending request (trust 4 or an operator key; never your own)";
    const DESCRIPTION: &'static str = "Approve or deny a pending approval request (decision: approve|deny, \
        optional note). An approval is a one-time grant: the same agent's same request (same operation, same \
        parameters) passes once within valid_minutes (default 60). Needs trust level 4 or an operator key; \
        nobody decides their own request (cannot_approve_own_request); a request no longer pending is \
        approval_not_pending. Answers {success:true, approval:{...}}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::DecideApprovals);
    const HTTP: &'static [Http] = &[Http::post("/approvals/decide").errors(&[404, 409])];
    const EXAMPLE: &'static str =
        "{\"approval_id\": \"apr_0123456789abcdef\", \"decision\": \"approve\", \"note\": \"one more file is fine\"}";
    type Request = DecideApprovalRequest;
    type Response = ApprovalResult;
    type Args = NewDecision;

    fn ids(req: &mut DecideApprovalRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Approval, "approval_id", &mut req.approval_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: DecideApprovalRequest) -> CoordResult<NewDecision> {
        validate_decision(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, d: NewDecision) -> CoordResult<ApprovalResult> {
        let (now, who) = (ctx.now, ctx.who.clone());
        let decided = c.store().decide_approval(ctx, d).await?;
        // A person's review of a pushed changeset is its run's result: GitHub hears it
        // as a commit status like any other.
        let a = &decided.approval;
        if a.operation == coord_domain::verification::REVIEW_OPERATION
            && let (Some(cs), Some(policy)) = (
                a.parameters.get("changeset_id").and_then(serde_json::Value::as_str),
                a.parameters.get("policy").and_then(serde_json::Value::as_str),
            )
        {
            let read = OpCtx::internal(now, who, "get_verification", serde_json::json!({"changeset_id": cs}));
            match c.store().get_verification(read, cs.to_string(), false).await {
                Ok(v) => super::verification::report_to_github(c, now, &v, Some(policy)).await,
                Err(e) => tracing::warn!(changeset = cs, error = %e.message, "could not read a reviewed changeset"),
            }
        }
        Ok(decided)
    }
}
