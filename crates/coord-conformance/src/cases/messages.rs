//! Messages between agents: direct and to the holders of a locked file, inbox, read and
//! acknowledged marks per recipient, threads, and privacy of other agents' inboxes.

use crate::{Backend, Harness, agent, operator};
use coord_domain::ErrorCode;
use coord_domain::messages::{Importance, InboxRequest, MessageIdRequest, SendMessageRequest};
use coord_service::CoordinationExt as _;
use coord_service::ops::messages::{AckMessage, Inbox, ReadMessage, SendMessage};

fn to(to: &str, subject: &str) -> SendMessageRequest {
    SendMessageRequest {
        to: to.into(),
        subject: subject.into(),
        body: format!("body of {subject}"),
        ..Default::default()
    }
}

fn id(message_id: &str) -> MessageIdRequest {
    MessageIdRequest {
        message_id: message_id.into(),
    }
}

pub async fn messages_direct_inbox_read_ack_and_threads(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, c) = (agent("agent-a"), agent("agent-b"), agent("agent-c"));
    let sent = h.coord.op::<SendMessage>(&a, to("agent-b", "hello")).await.unwrap();
    assert_eq!(
        (sent.recipients.clone(), sent.thread_id.clone()),
        (vec!["agent-b".to_string()], sent.message_id.clone())
    );
    h.advance(1);
    let reply = SendMessageRequest {
        thread_id: Some(sent.thread_id.clone()),
        importance: Some(Importance::Urgent),
        ..to("agent-b", "again")
    };
    let second = h.coord.op::<SendMessage>(&a, reply).await.unwrap();
    assert_eq!(second.thread_id, sent.message_id, "a reply stays in its thread");

    let inbox = h.coord.op::<Inbox>(&bb, InboxRequest::default()).await.unwrap();
    assert_eq!(inbox.unread, 2);
    let subjects: Vec<&str> = inbox.messages.iter().map(|m| m.subject.as_str()).collect();
    assert_eq!(subjects, ["again", "hello"], "newest first");
    assert_eq!(
        (inbox.messages[0].from.as_str(), inbox.messages[0].importance),
        ("agent-a", Importance::Urgent)
    );
    assert!(
        h.coord
            .op::<Inbox>(&c, InboxRequest::default())
            .await
            .unwrap()
            .messages
            .is_empty()
    );

    let read = h
        .coord
        .op::<ReadMessage>(&bb, id(&sent.message_id))
        .await
        .unwrap()
        .message;
    assert_eq!(
        (read.read_at, read.acked_at, read.body.as_str()),
        (Some(h.now()), None, "body of hello")
    );
    let unread_only = InboxRequest {
        unread_only: Some(true),
        limit: None,
    };
    let left = h.coord.op::<Inbox>(&bb, unread_only).await.unwrap();
    assert_eq!((left.unread, left.messages.len()), (1, 1));
    h.advance(1);
    let acked = h
        .coord
        .op::<AckMessage>(&bb, id(&sent.message_id))
        .await
        .unwrap()
        .message;
    assert_eq!(acked.acked_at, Some(h.now()));
    assert_eq!(acked.read_at, read.read_at, "the first read is kept");

    // Other agents' messages are not yours to read, nor to know about.
    for who in [&a, &c] {
        let e = h.coord.op::<ReadMessage>(who, id(&sent.message_id)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
    }
    let e = h.coord.op::<AckMessage>(&bb, id("not-a-uuid")).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("message_id"))
    );
    let e = h.coord.op::<SendMessage>(&a, to("agent-b", "")).await.unwrap_err();
    assert_eq!(e.field.as_deref(), Some("subject"));
    let limited = InboxRequest {
        unread_only: None,
        limit: Some(500),
    };
    let e = h.coord.op::<Inbox>(&bb, limited).await.unwrap_err();
    assert_eq!(e.field.as_deref(), Some("limit"));
    // The audit trail, readable by every agent with a key, keeps who wrote to whom and
    // when, never what.
    let log = h
        .coord
        .query_audit(
            &operator("auditor"),
            coord_domain::audit::AuditQueryRequest {
                agent_id: None,
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut seen = 0;
    for e in log
        .entries
        .iter()
        .filter(|e| e.operation.contains("message") || e.operation == "inbox")
    {
        let text = format!("{} {}", e.parameters, e.result);
        assert!(
            !text.contains("body of hello") && !text.contains("body of again"),
            "{}: {text}",
            e.operation
        );
        seen += 1;
    }
    assert!(seen >= 6, "{seen}");
    let sent_row = log
        .entries
        .iter()
        .find(|e| e.operation == "send_message" && e.success)
        .unwrap();
    assert_eq!(sent_row.parameters["body"], "[redacted]");
    assert_eq!(sent_row.parameters["to"], "agent-b");
}

pub async fn messages_to_the_holders_of_a_file(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, c) = (agent("agent-a"), agent("agent-b"), agent("agent-c"));
    h.lock(&a, "src/x.rs", Some(10)).await;
    let sent = h
        .coord
        .op::<SendMessage>(&c, to("holders:./src//x.rs", "may I have src/x.rs?"))
        .await
        .unwrap();
    assert_eq!(sent.recipients, ["agent-a"]);
    assert_eq!(
        h.coord.op::<Inbox>(&a, InboxRequest::default()).await.unwrap().unread,
        1
    );
    // The holder itself is not its own recipient; a free file has no holders.
    for (who, path) in [(&a, "holders:src/x.rs"), (&bb, "holders:src/free.rs")] {
        let e = h.coord.op::<SendMessage>(who, to(path, "anyone?")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NoRecipients, "{path}");
    }
    h.advance(11);
    let e = h
        .coord
        .op::<SendMessage>(&c, to("holders:src/x.rs", "late"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NoRecipients, "an expired lock has no holder");
    let e = h
        .coord
        .op::<SendMessage>(&c, to("holders:../outside", "x"))
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("to"));
}

pub async fn messages_to_a_team(b: &dyn Backend) {
    use coord_domain::sessions::{EndSessionRequest, RegisterSessionRequest};
    let h = Harness::new(b).await;
    let join = |team: Option<&str>| RegisterSessionRequest {
        team: team.map(String::from),
        ..Default::default()
    };
    let (a, bb, c, d) = (agent("agent-a"), agent("agent-b"), agent("agent-c"), agent("agent-d"));
    h.coord.register_session(&a, join(Some("backend"))).await.unwrap();
    h.coord.register_session(&bb, join(Some(" backend "))).await.unwrap();
    h.coord.register_session(&c, join(Some("frontend"))).await.unwrap();
    h.coord.register_session(&d, join(None)).await.unwrap();
    let listed = h.coord.discover_agents(&d, Default::default()).await.unwrap().agents;
    let team_of = |id: &str| listed.iter().find(|x| x.agent_id == id).unwrap().team.clone();
    assert_eq!(team_of("agent-b").as_deref(), Some("backend"), "team names are trimmed");
    assert_eq!(team_of("agent-d"), None);

    let sent = h
        .coord
        .op::<SendMessage>(&c, to("team:backend", "api change"))
        .await
        .unwrap();
    assert_eq!(sent.recipients, ["agent-a", "agent-b"]);
    let sent = h
        .coord
        .op::<SendMessage>(&a, to("team:backend", "I take auth"))
        .await
        .unwrap();
    assert_eq!(sent.recipients, ["agent-b"], "the sender is not its own recipient");
    let inbox = h.coord.op::<Inbox>(&bb, InboxRequest::default()).await.unwrap();
    assert_eq!(inbox.unread, 2);
    assert_eq!(inbox.messages[0].from, "agent-a");

    // An idle member still gets the team's mail (it reads it when it comes back); a
    // disconnected one does not, and a team of nobody else refuses.
    h.coord.end_session(&bb, EndSessionRequest::default()).await.unwrap();
    let sent = h
        .coord
        .op::<SendMessage>(&a, to("team:backend", "while you were out"))
        .await
        .unwrap();
    assert_eq!(sent.recipients, ["agent-b"]);
    h.advance(16);
    h.coord.heartbeat(&a, Default::default()).await.unwrap();
    h.coord.cleanup_dead_agents(&a, Default::default()).await.unwrap();
    let e = h
        .coord
        .op::<SendMessage>(&a, to("team:backend", "alone?"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NoRecipients);
    let e = h
        .coord
        .op::<SendMessage>(&a, to("team:nobody", "hello?"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NoRecipients);
    let e = h
        .coord
        .op::<SendMessage>(&a, to("team:no spaces", "x"))
        .await
        .unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidArgument, Some("to")));
    let e = h.coord.register_session(&d, join(Some("bad/name"))).await.unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidArgument, Some("team")));
}
