//! The audit trail and the one-screen status.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::audit::{AuditFilter, AuditQueryRequest, AuditQueryResult, validate_audit_query};
use coord_domain::profiles::Need;
use coord_domain::status::StatusResult;
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::OpCtx;

pub struct QueryAudit;
impl Operation for QueryAudit {
    const NAME: &'static str = "query_audit";
    const SUMMARY: &'static str = "Query the audit trail, newest first";
    const DESCRIPTION: &'static str = "Query the append-only audit trail of coordination operations, newest first, \
        filtered by agent_id, operation, time range (since/until, RFC 3339) and success. Answers {entries:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/audit")];
    const EXAMPLE: &'static str = "{\"operation\": \"acquire_lock\", \"success\": false, \"limit\": 20}";
    type Request = AuditQueryRequest;
    type Response = AuditQueryResult;
    type Args = AuditFilter;

    fn validate(_: &Coordinator, _: &Identity, req: AuditQueryRequest) -> CoordResult<AuditFilter> {
        validate_audit_query(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, f: AuditFilter) -> CoordResult<AuditQueryResult> {
        c.store().query_audit(ctx, f).await
    }
}

pub struct Status;
impl Operation for Status {
    const NAME: &'static str = "status";
    const SUMMARY: &'static str = "One-screen summary for the caller";
    const DESCRIPTION: &'static str = "One summary of the coordinator for you: who you are, your live locks and \
        claimed tasks, queue counts by status, agents by status, the latest handoff, and the backend. Use it to \
        orient yourself at the start of work. Answers {success:true, identity, my_locks, my_tasks, tasks, agents, \
        latest_handoff, ...}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/status").input(Input::None)];
    type Request = Empty;
    type Response = StatusResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<StatusResult> {
        c.store().status(ctx).await
    }
}
