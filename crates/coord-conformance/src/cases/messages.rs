//! Messages between agents: direct and to the holders of a locked file, inbox, read and
//! acknowledged marks per recipient, threads, and privacy of other agents' inboxes.

use crate::{Backend, Harness, agent};
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
            &agent("auditor"),
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
