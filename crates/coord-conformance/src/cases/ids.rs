//! Short ids: a unique prefix of a task, approval or message id is accepted wherever the
//! id is, on every door; an ambiguous one is refused listing the candidates (audited);
//! a message or thread prefix finds only what the caller can see.

use crate::cases::approvals::{awaiting, check, limited};
use crate::cases::profiles::run;
use crate::{Backend, Harness, agent, operator};
use coord_domain::approvals::{DecideApprovalRequest, Decision, GetApprovalRequest};
use coord_domain::messages::{MessageIdRequest, SendMessageRequest};
use coord_domain::queue::{GetTaskRequest, NewTask, SubmitWorkRequest, TaskInfo};
use coord_domain::{CoordResult, ErrorCode};
use coord_service::ops::approvals::{DecideApproval, GetApproval};
use coord_service::ops::messages::{ReadMessage, SendMessage};
use coord_service::ops::queue::{GetTask, SubmitWork};
use coord_store::OpCtx;
use serde_json::json;

const FIRST: &str = "5b0c6a1e-1000-4000-8000-000000000001";
const SECOND: &str = "5b0c6a1e-2000-4000-8000-000000000002";

async fn get_task(h: &Harness, id: &str) -> CoordResult<TaskInfo> {
    let req = GetTaskRequest { task_id: id.into() };
    run::<GetTask>(h, &agent("reader"), req).await.map(|r| r.task)
}

pub async fn ids_a_unique_prefix_names_a_task(b: &dyn Backend) {
    let h = Harness::new(b).await;
    // Ids are random: two that share their first 8 characters are written to the store.
    for id in [FIRST, SECOND] {
        let ctx = OpCtx::internal(Some(h.now()), agent("boss").for_audit(), "submit_work", json!({}));
        let task = NewTask {
            task_id: id.into(),
            task_type: "t".into(),
            task_description: format!("task {id}"),
            input_data: None,
            priority: 5,
            depends_on: Vec::new(),
            max_attempts: 3,
            assigned_to: None,
        };
        h.store.submit_work(ctx, task).await.expect("submit");
    }
    for short in ["5b0c6a1e-1", "5B0C6A1E1", " 5b0c6a1e-10 "] {
        assert_eq!(get_task(&h, short).await.expect(short).task_id, FIRST, "{short}");
    }
    let e = get_task(&h, "5b0c6a1e").await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::AmbiguousId, Some("task_id")),
        "{e:?}"
    );
    assert_eq!(e.details["candidates"], json!([FIRST, SECOND]), "{e:?}");
    assert!(e.message.contains(FIRST) && e.message.contains(SECOND), "{}", e.message);
    assert_eq!(
        get_task(&h, "ffff").await.unwrap_err().code,
        ErrorCode::TaskNotFound,
        "only the two exist"
    );
    assert_eq!(
        get_task(&h, "5b0").await.unwrap_err().code,
        ErrorCode::InvalidTaskId,
        "too short to be a prefix"
    );

    // The audit trail holds the whole id, and the ambiguous request's refusal.
    let rows = h.audit_rows("get_task").await;
    assert!(
        rows.iter().any(|r| r.success && r.parameters["task_id"] == FIRST),
        "{rows:?}"
    );
    assert!(
        rows.iter().any(|r| r.error_code.as_deref() == Some("ambiguous_id")),
        "{rows:?}"
    );

    // Dependencies, claims and completions take prefixes too.
    let a = agent("agent-a");
    let req = SubmitWorkRequest {
        task_type: "later".into(),
        task_description: "after the second".into(),
        depends_on: Some(vec!["5b0c6a1e2".into()]),
        ..Default::default()
    };
    let later = run::<SubmitWork>(&h, &a, req)
        .await
        .expect("submit with a short dependency");
    assert_eq!(
        get_task(&h, &later.task_id).await.unwrap().depends_on,
        vec![SECOND.to_string()]
    );
    let req = SubmitWorkRequest {
        task_type: "t".into(),
        task_description: "d".into(),
        depends_on: Some(vec!["5b0c".into()]),
        ..Default::default()
    };
    let e = run::<SubmitWork>(&h, &a, req).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::AmbiguousId, Some("depends_on"))
    );
    // More ids than any request takes: refused before any is looked up.
    let req = SubmitWorkRequest {
        task_type: "t".into(),
        task_description: "d".into(),
        depends_on: Some(vec!["5b0c6a1e2".into(); 101]),
        ..Default::default()
    };
    let e = run::<SubmitWork>(&h, &a, req).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("depends_on"))
    );
    let absent = if later.task_id.starts_with("ffff") {
        "0000"
    } else {
        "ffff"
    };
    let req = SubmitWorkRequest {
        task_type: "t".into(),
        task_description: "d".into(),
        depends_on: Some(vec![absent.into()]),
        ..Default::default()
    };
    let e = run::<SubmitWork>(&h, &a, req).await.unwrap_err();
    let named = (e.code, e.field.as_deref());
    assert_eq!(
        named,
        (ErrorCode::UnknownDependency, Some("depends_on")),
        "as for a whole id"
    );
    let claimed = h.claimed_id(&a).await;
    assert_eq!(claimed, FIRST, "same priority: the older");
    assert!(
        h.complete(&a, "5b0c6a1e-1000", true)
            .await
            .expect("complete by prefix")
            .success
    );
    assert_eq!(get_task(&h, FIRST).await.unwrap().status.as_str(), "completed");
}

pub async fn ids_a_unique_prefix_names_an_approval(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (asker, _) = limited(&h).await;
    let id = awaiting(check(&h, &asker, "src/over.rs").await.unwrap_err());
    let digits = id.strip_prefix("apr_").expect("apr_ id");
    for short in [
        format!("apr_{}", &digits[..6]),
        digits[..6].to_string(),
        format!("APR_{}", digits[..6].to_uppercase()),
        id.to_uppercase(),
    ] {
        let req = GetApprovalRequest {
            approval_id: short.clone(),
        };
        let got = run::<GetApproval>(&h, &agent("anyone"), req).await.expect(&short);
        assert_eq!(got.approval.approval_id, id, "{short}");
    }
    let req = DecideApprovalRequest {
        approval_id: id[..8].into(),
        decision: Decision::Approve,
        note: None,
        valid_minutes: None,
    };
    let decided = run::<DecideApproval>(&h, &operator("person"), req)
        .await
        .expect("decide by prefix");
    assert_eq!(
        (decided.approval.approval_id.as_str(), decided.approval.status.as_str()),
        (id.as_str(), "approved")
    );
    let other = if digits.starts_with("ffff") {
        "apr_0000"
    } else {
        "apr_ffff"
    };
    let req = GetApprovalRequest {
        approval_id: other.into(),
    };
    assert_eq!(
        run::<GetApproval>(&h, &agent("anyone"), req).await.unwrap_err().code,
        ErrorCode::NotFound
    );
}

pub async fn ids_a_message_prefix_names_only_what_the_caller_can_see(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb, c) = (agent("agent-a"), agent("agent-b"), agent("agent-c"));
    let req = SendMessageRequest {
        to: "agent-b".into(),
        subject: "hello".into(),
        body: "body".into(),
        ..Default::default()
    };
    let sent = run::<SendMessage>(&h, &a, req).await.expect("send");
    let short = &sent.message_id[..8];
    let read = |who, id: &str| run::<ReadMessage>(&h, who, MessageIdRequest { message_id: id.into() });
    assert_eq!(
        read(&bb, short).await.expect("its recipient").message.message_id,
        sent.message_id
    );
    for outsider in [&c, &a] {
        let e = read(outsider, short).await.unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::NotFound, Some("message_id")),
            "{e:?}"
        );
    }
    let reply = |who, thread: &str| {
        let req = SendMessageRequest {
            to: "agent-a".into(),
            subject: "re".into(),
            body: "body".into(),
            thread_id: Some(thread.into()),
            ..Default::default()
        };
        run::<SendMessage>(&h, who, req)
    };
    let answered = reply(&bb, &sent.thread_id[..6]).await.expect("a thread it is in");
    assert_eq!(answered.thread_id, sent.thread_id);
    let e = reply(&c, &sent.thread_id[..6]).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::NotFound, Some("thread_id")),
        "{e:?}"
    );
}
