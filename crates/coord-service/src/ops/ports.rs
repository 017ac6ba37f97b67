//! Port blocks for isolated environments (a file shared by the machine's processes).
//! A block belongs to the agent that allocated it; a key bound to one agent holds at
//! most `PORT_ALLOC_MAX_PER_AGENT`. Through the pipeline every allocation and release is
//! audited (`coord port` on the machine itself uses the file alone, without a store).

use crate::op::{Audit, Http, Input, Operation};
use crate::{Coordinator, Ports};
use coord_domain::access::{Access, Effect};
use coord_domain::ports::{
    self, AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{Caller, CoordResult, Empty, Identity};
use coord_store::OpCtx;

fn caller(ctx: &OpCtx) -> Caller {
    Caller::new(ctx.who.agent_id.clone(), ctx.who.agent_type.clone())
}

/// The answer of a port change, with its audit row (the change is in the machine's
/// state file, not in the store: the row is appended on its own).
async fn audited<T: serde::Serialize>(c: &Coordinator, ctx: &OpCtx, answer: CoordResult<T>) -> CoordResult<T> {
    match &answer {
        Ok(v) => c.audit_success(ctx, v).await,
        Err(e) => c.audit_refusal(ctx, e).await,
    }
    answer
}

pub struct AllocatePorts;
impl Operation for AllocatePorts {
    const NAME: &'static str = "allocate_ports";
    const SUMMARY: &'static str = "Lease a block of four ports for a session";
    const DESCRIPTION: &'static str = "Lease a block of four free ports for an isolated environment (database, \
        REST, realtime, API) under session_id, e.g. a worktree name. The same session always gets the same block \
        and refreshes its lease. Answers {success:true, allocation:{db_port, rest_port, realtime_port, api_port, \
        compose_project_name, expires_at}, env_snippet} — env_snippet holds `export` lines for \
        AGENT_COORDINATOR_*_PORT, API_PORT, COMPOSE_PROJECT_NAME and SUPABASE_URL. When every block is taken: \
        {success:false, error:\"no_ports_available\"}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::Execute, 1);
    const HTTP: &'static [Http] = &[Http::post("/ports/allocate").errors(&[409])];
    const EXAMPLE: &'static str = "{\"session_id\": \"feature-login\"}";
    type Request = AllocatePortsRequest;
    type Response = AllocatePortsResult;
    type Args = AllocatePortsRequest;

    fn validate(_: &Coordinator, _: &Identity, req: AllocatePortsRequest) -> CoordResult<AllocatePortsRequest> {
        Ok(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult> {
        let admin = ports::administers(ctx.credential);
        let answer = match c.local_ports() {
            Ok(p) => p.allocate_as(&caller(&ctx), admin, req).await,
            Err(e) => Err(e),
        };
        audited(c, &ctx, answer).await
    }
}

pub struct ReleasePorts;
impl Operation for ReleasePorts {
    const NAME: &'static str = "release_ports";
    const SUMMARY: &'static str = "Release a session's ports (idempotent)";
    const DESCRIPTION: &'static str = "Give back the port block leased under session_id when the environment is \
        torn down. Releasing an unknown or already released session also answers {success:true}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::Execute, 1);
    const HTTP: &'static [Http] = &[Http::post("/ports/release")];
    const EXAMPLE: &'static str = "{\"session_id\": \"feature-login\"}";
    type Request = ReleasePortsRequest;
    type Response = ReleasePortsResult;
    type Args = ReleasePortsRequest;

    fn validate(_: &Coordinator, _: &Identity, req: ReleasePortsRequest) -> CoordResult<ReleasePortsRequest> {
        Ok(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult> {
        let admin = ports::administers(ctx.credential);
        let answer = match c.local_ports() {
            Ok(p) => p.release_as(&caller(&ctx), admin, req).await,
            Err(e) => Err(e),
        };
        audited(c, &ctx, answer).await
    }
}

pub struct PortsStatus;
impl Operation for PortsStatus {
    const NAME: &'static str = "ports_status";
    const SUMMARY: &'static str = "Live port leases";
    const DESCRIPTION: &'static str = "List every live port lease on this machine: session_id, the four ports, \
        compose_project_name and remaining_minutes.";
    const ACCESS: Access = Access::Read;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const AUDIT: Audit = Audit::Never;
    const HTTP: &'static [Http] = &[Http::get("/ports/status").input(Input::None)];
    type Request = Empty;
    type Response = PortsStatusResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<PortsStatusResult> {
        c.local_ports()?.ports_status(&caller(&ctx)).await
    }
}
