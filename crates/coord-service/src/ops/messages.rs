//! Messages between agents.

use crate::Coordinator;
use crate::op::{Http, IdSlot, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::ids::IdKind;
use coord_domain::messages::{
    InboxQuery, InboxRequest, InboxResult, MessageIdRequest, MessageResult, NewMessage, SendMessageRequest,
    SendMessageResult, validate_inbox, validate_message_id, validate_send,
};
use coord_domain::profiles::Need;
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct SendMessage;
impl Operation for SendMessage {
    const NAME: &'static str = "send_message";
    const SUMMARY: &'static str = "Send a message to an agent, a team, or the holders of a locked file";
    const DESCRIPTION: &'static str = "Send a message to another agent: to is an agent id, or \"holders:<path>\" \
        for every other agent holding a live lock that covers that file, directory (\"holders:src/auth/\") or \
        glob (e.g. to ask them to release it, or to say what you changed), or \"team:<name>\" for every \
        other live member of a team (agents join one with register_session {team}). subject is one line, body at most 16 KiB; importance low|normal|high|urgent (urgent ones \
        are shown to Claude Code sessions at their next prompt); reply in a thread with thread_id. Answers \
        {success:true, message_id, thread_id, recipients:[agent ids]}; no_recipients when nobody else holds the \
        file or is in the team.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    // Messages are for their recipients; the audit trail is every agent's to read.
    const AUDIT_REDACT: &'static [&'static str] = &["body"];
    const HTTP: &'static [Http] = &[Http::post("/messages").errors(&[404, 409])];
    // `holders:<absolute path>` is made repo-relative by a remote client.
    const PATH_FIELDS: &'static [&'static str] = &["to"];
    const EXAMPLE: &'static str = "{\"to\": \"holders:src/auth.rs\", \"subject\": \"may I have src/auth.rs?\", \
        \"body\": \"I need to change the login check; tell me when you are done.\", \"importance\": \"high\"}";
    type Request = SendMessageRequest;
    type Response = SendMessageResult;
    type Args = NewMessage;

    fn ids(req: &mut SendMessageRequest) -> Vec<IdSlot<'_>> {
        IdSlot::each(IdKind::Thread, "thread_id", req.thread_id.as_mut())
    }

    fn validate(c: &Coordinator, _: &Identity, req: SendMessageRequest) -> CoordResult<NewMessage> {
        validate_send(req, crate::new_id(), c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, m: NewMessage) -> CoordResult<SendMessageResult> {
        c.store().send_message(ctx, m).await
    }
}

pub struct Inbox;
impl Operation for Inbox {
    const NAME: &'static str = "inbox";
    const SUMMARY: &'static str = "Your messages, newest first";
    const DESCRIPTION: &'static str = "Read your inbox: messages other agents sent you (directly or as the holder \
        of a locked file), newest first; unread_only for the new ones; limit 1-200 (default 20). Listing does \
        not mark them read: read_message does. Answers {success:true, messages:[{message_id, thread_id, from, \
        subject, body, importance, created_at, read_at, acked_at}], unread}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const AUDIT_REDACT: &'static [&'static str] = &["body"];
    const HTTP: &'static [Http] = &[Http::get("/messages")];
    const EXAMPLE: &'static str = "{\"unread_only\": true, \"limit\": 10}";
    type Request = InboxRequest;
    type Response = InboxResult;
    type Args = InboxQuery;

    fn validate(_: &Coordinator, _: &Identity, req: InboxRequest) -> CoordResult<InboxQuery> {
        validate_inbox(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, q: InboxQuery) -> CoordResult<InboxResult> {
        c.store().inbox(ctx, q).await
    }
}

pub struct ReadMessage;
impl Operation for ReadMessage {
    const NAME: &'static str = "read_message";
    const SUMMARY: &'static str = "Read one of your messages (marks it read)";
    const DESCRIPTION: &'static str = "Read one message of your inbox by message_id (or a unique prefix of it) and mark it read. Answers \
        {success:true, message:{...}}; not_found when it is not addressed to you.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::READ;
    const AUDIT_REDACT: &'static [&'static str] = &["body"];
    const HTTP: &'static [Http] = &[Http::post("/messages/read").errors(&[404])];
    const EXAMPLE: &'static str = "{\"message_id\": \"7b7c2a4e-0000-4000-8000-000000000001\"}";
    type Request = MessageIdRequest;
    type Response = MessageResult;
    type Args = String;

    fn ids(req: &mut MessageIdRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Message, "message_id", &mut req.message_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: MessageIdRequest) -> CoordResult<String> {
        validate_message_id(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<MessageResult> {
        c.store().mark_message(ctx, id, false).await
    }
}

pub struct AckMessage;
impl Operation for AckMessage {
    const NAME: &'static str = "ack_message";
    const SUMMARY: &'static str = "Acknowledge one of your messages (marks it read and acknowledged)";
    const DESCRIPTION: &'static str = "Acknowledge a message of your inbox by message_id: you have acted on it (the \
        sender can see it in the audit trail). Marks it read too. Answers {success:true, message:{..., acked_at}}; \
        not_found when it is not addressed to you.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const AUDIT_REDACT: &'static [&'static str] = &["body"];
    const HTTP: &'static [Http] = &[Http::post("/messages/ack").errors(&[404])];
    const EXAMPLE: &'static str = "{\"message_id\": \"7b7c2a4e-0000-4000-8000-000000000001\"}";
    type Request = MessageIdRequest;
    type Response = MessageResult;
    type Args = String;

    fn ids(req: &mut MessageIdRequest) -> Vec<IdSlot<'_>> {
        vec![IdSlot::new(IdKind::Message, "message_id", &mut req.message_id)]
    }

    fn validate(_: &Coordinator, _: &Identity, req: MessageIdRequest) -> CoordResult<String> {
        validate_message_id(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<MessageResult> {
        c.store().mark_message(ctx, id, true).await
    }
}
