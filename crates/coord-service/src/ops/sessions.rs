//! Agent sessions: registration, liveness, discovery, cleanup, and ending a session.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::profiles::Need;
use coord_domain::sessions::{
    AgentStatus, Cleanup, CleanupDeadAgentsRequest, CleanupResult, DiscoverAgentsRequest, DiscoverAgentsResult,
    EndSession, EndSessionRequest, EndSessionResult, HeartbeatRequest, NewSession, RegisterSessionRequest,
    SessionResult, authorize_cleanup, validate_capability, validate_cleanup, validate_end, validate_registration,
    visible_to,
};
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::OpCtx;

pub struct RegisterSession;
impl Operation for RegisterSession {
    const NAME: &'static str = "register_session";
    const SUMMARY: &'static str = "Start a session (discoverable by others)";
    const DESCRIPTION: &'static str = "Start a new session so other agents can discover you, declaring your \
        capabilities and what you are working on. (This connection registers itself on first use; call this to \
        set capabilities or current_task.) Answers {success:true, session_id}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/sessions/register")];
    const EXAMPLE: &'static str = "{\"capabilities\": [\"coding\", \"review\"], \"current_task\": \"auth refactor\"}";
    type Request = RegisterSessionRequest;
    type Response = SessionResult;
    type Args = NewSession;

    fn validate(_: &Coordinator, _: &Identity, req: RegisterSessionRequest) -> CoordResult<NewSession> {
        validate_registration(req, crate::new_id())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, s: NewSession) -> CoordResult<SessionResult> {
        c.store().register_session(ctx, s).await
    }
}

pub struct Heartbeat;
impl Operation for Heartbeat {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "heartbeat";
    const SUMMARY: &'static str = "Keep your session and task claims alive";
    const DESCRIPTION: &'static str = "Tell the coordinator you are still alive; also extends the leases of tasks \
        you have claimed. This connection heartbeats by itself; call it during very long work. Answers \
        {success:true, session_id}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/sessions/heartbeat")];
    type Request = HeartbeatRequest;
    type Response = SessionResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: HeartbeatRequest) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<SessionResult> {
        let lease = c.config().claim_lease_minutes;
        c.store().heartbeat(ctx, crate::new_id(), lease).await
    }
}

pub struct DiscoverAgents;
impl Operation for DiscoverAgents {
    const NAME: &'static str = "discover_agents";
    const SUMMARY: &'static str = "Discover agents by capability and status";
    const DESCRIPTION: &'static str = "Find other agents: optionally only those with a capability (e.g. review) or \
        a status (active, idle, disconnected). Answers {agents:[{agent_id, agent_type, capabilities, status, \
        current_task, last_heartbeat}]} (session_id too for your own entry).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/agents")];
    const EXAMPLE: &'static str = "{\"capability\": \"review\"}";
    type Request = DiscoverAgentsRequest;
    type Response = DiscoverAgentsResult;
    type Args = (Option<String>, Option<AgentStatus>);

    fn validate(_: &Coordinator, _: &Identity, req: DiscoverAgentsRequest) -> CoordResult<Self::Args> {
        Ok((validate_capability(req.capability)?, req.status))
    }

    async fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        (capability, status): Self::Args,
    ) -> CoordResult<DiscoverAgentsResult> {
        let (caller, credential) = (ctx.who.agent_id.clone(), ctx.credential);
        let found = c.store().discover_agents(ctx, capability, status).await?;
        Ok(visible_to(found, &caller, credential))
    }
}

pub struct CleanupDeadAgents;
impl Operation for CleanupDeadAgents {
    const NAME: &'static str = "cleanup_dead_agents";
    const SUMMARY: &'static str = "Disconnect stale agents, free their locks and tasks";
    const DESCRIPTION: &'static str = "Disconnect agents whose last heartbeat is older than \
        stale_threshold_minutes (default 15), and the sessions listed in sessions (e.g. their process is gone; \
        a session its agent has since replaced is left alone): their locks are released and their claimed tasks \
        go back to the queue. Use it when a crashed agent blocks files or tasks. Only an operator may list a live \
        session of another agent (session_alive) or use a threshold under 15 minutes. Answers {success:true, \
        agents_cleaned, agents, locks_released, tasks_requeued}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/agents/cleanup")];
    const EXAMPLE: &'static str = "{\"stale_threshold_minutes\": 15}";
    type Request = CleanupDeadAgentsRequest;
    type Response = CleanupResult;
    type Args = Cleanup;

    fn validate(_: &Coordinator, _: &Identity, req: CleanupDeadAgentsRequest) -> CoordResult<Cleanup> {
        validate_cleanup(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, cleanup: Cleanup) -> CoordResult<CleanupResult> {
        let cleanup = match authorize_cleanup(cleanup, ctx.credential) {
            Ok(cleanup) => cleanup,
            Err(e) => {
                c.audit_refusal(&ctx, &e).await;
                return Err(e);
            }
        };
        let cleaned = c.store().cleanup_dead_agents(ctx, cleanup).await?;
        // Cleanup is the maintenance command: it also purges one bounded batch of expired
        // rows, so deployments without a long-lived process still shed them.
        if let Err(e) = c.sweep().await {
            tracing::warn!(error = %e, "sweep after cleanup failed");
        }
        Ok(cleaned)
    }
}

pub struct MarkIdle;
impl Operation for MarkIdle {
    const NAME: &'static str = "mark_idle";
    const SUMMARY: &'static str = "Mark your session idle";
    const DESCRIPTION: &'static str = "Mark your session idle (you are pausing, not leaving): other agents see \
        status idle in discover_agents; your locks and claims stay. Answers {success:true, session_id}; \
        not_found when you have no live session. To leave, use end_session.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/sessions/idle").errors(&[404])];
    type Request = Empty;
    type Response = SessionResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<SessionResult> {
        c.store().set_session_status(ctx, AgentStatus::Idle).await
    }
}

pub struct EndSessionOp;
impl Operation for EndSessionOp {
    const NAME: &'static str = "end_session";
    const SUMMARY: &'static str =
        "End your session: release your locks, leave a final handoff, go idle (one transaction)";
    const DESCRIPTION: &'static str = "End your session when you stop working: in one step it releases every lock \
        you hold (unless release_locks is false), writes a final handoff if you give one (the released files and \
        your still-claimed tasks are added to it), and marks you idle. Answers {success:true, released:[paths], \
        handoff_id, status}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/sessions/end")];
    const EXAMPLE: &'static str = "{\"release_locks\": true, \"handoff\": {\"summary\": \"login refactor half done\", \"next_steps\": [\"logout flow\"]}}";
    type Request = EndSessionRequest;
    type Response = EndSessionResult;
    type Args = EndSession;

    fn validate(_: &Coordinator, _: &Identity, req: EndSessionRequest) -> CoordResult<EndSession> {
        validate_end(req, crate::new_id())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, end: EndSession) -> CoordResult<EndSessionResult> {
        c.store().end_session(ctx, end).await
    }
}
