//! Handoff documents.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::handoffs::{
    HandoffQuery, NewHandoff, ReadHandoffRequest, ReadHandoffResult, WriteHandoffRequest, WriteHandoffResult,
    validate_handoff, validate_read,
};
use coord_domain::profiles::Need;
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct WriteHandoff;
impl Operation for WriteHandoff {
    const NAME: &'static str = "write_handoff";
    const SUMMARY: &'static str = "Write a handoff document";
    const DESCRIPTION: &'static str = "Leave a handoff document for the next session (yours or another agent's): a \
        summary (required) and lists of completed_work, in_progress, decisions, next_steps and relevant_files. \
        Write one before your session ends or when your context runs low. Answers {success:true, handoff_id}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/handoffs")];
    const EXAMPLE: &'static str = "{\"summary\": \"login refactor half done\", \"next_steps\": [\"logout flow\"], \"relevant_files\": [\"src/auth.rs\"]}";
    type Request = WriteHandoffRequest;
    type Response = WriteHandoffResult;
    type Args = NewHandoff;

    fn validate(_: &Coordinator, _: &Identity, req: WriteHandoffRequest) -> CoordResult<NewHandoff> {
        validate_handoff(req, crate::new_id())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, h: NewHandoff) -> CoordResult<WriteHandoffResult> {
        c.store().write_handoff(ctx, h).await
    }
}

pub struct ReadHandoff;
impl Operation for ReadHandoff {
    const NAME: &'static str = "read_handoff";
    const SUMMARY: &'static str = "Read recent handoff documents";
    const DESCRIPTION: &'static str = "Read the most recent handoff documents, newest first: yours by default, \
        another agent's with agent_name, everyone's with agent_name \"*\"; limit defaults to 1. Read it at the \
        start of a session to resume prior work. Answers {handoffs:[...]} (empty when there are none).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/handoffs")];
    const EXAMPLE: &'static str = "{\"agent_name\": \"*\", \"limit\": 3}";
    type Request = ReadHandoffRequest;
    type Response = ReadHandoffResult;
    type Args = HandoffQuery;

    fn validate(_: &Coordinator, who: &Identity, req: ReadHandoffRequest) -> CoordResult<HandoffQuery> {
        validate_read(req, &who.agent_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, q: HandoffQuery) -> CoordResult<ReadHandoffResult> {
        c.store().read_handoff(ctx, q).await
    }
}
