//! A person's overrides: releasing another agent's lock, cancelling a task, putting a
//! claimed task back in the queue — a person's only (trust 4 or an operator key), each
//! audited under the person's name, the state they change checked in the same
//! transaction.

use crate::cases::profiles::run;
use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::ErrorCode;
use coord_domain::locks::{CheckLocksRequest, ReleaseLockRequest};
use coord_domain::overrides::{BreakLockRequest, CancelTaskRequest, REASON_CANCELLED, RequeueTaskRequest};
use coord_domain::queue::TaskStatus;
use coord_service::ops::locks::{CheckLocks, ReleaseLock};
use coord_service::ops::overrides::{BreakLock, CancelTask, RequeueTask};

fn breaking(path: &str) -> BreakLockRequest {
    BreakLockRequest {
        file_path: path.into(),
        reason: Some("its agent crashed".into()),
    }
}

pub async fn overrides_a_person_releases_another_agents_lock(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (alice, bob, person) = (agent("alice"), agent("bob"), operator("person"));
    let held = h.lock(&alice, "src/a.rs", None).await;
    assert!(held.success, "{held:?}");

    // (Through HTTP the suite holds an operator key, which administers as whoever it
    // names: the agents' refusals are checked on the other doors.)
    if h.door != Door::Http {
        let e = run::<BreakLock>(&h, &bob, breaking("src/a.rs")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "an agent cannot: {e:?}");
    }
    let r = run::<BreakLock>(&h, &person, breaking("./src/a.rs"))
        .await
        .expect("a person can");
    assert_eq!(
        (r.released, r.file_path.as_str(), r.locked_by.as_str()),
        (true, "src/a.rs", "alice")
    );
    assert_eq!(Some(r.fencing_token), held.fencing_token);
    let left = run::<CheckLocks>(&h, &bob, CheckLocksRequest::default()).await.unwrap();
    assert!(left.locks.is_empty(), "{left:?}");

    let e = run::<BreakLock>(&h, &person, breaking("src/a.rs")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::LockNotHeld);
    let mine = ReleaseLockRequest {
        file_path: "src/a.rs".into(),
    };
    assert_eq!(
        run::<ReleaseLock>(&h, &alice, mine).await.unwrap_err().code,
        ErrorCode::LockNotHeld
    );
    // bob may take it now.
    assert!(h.lock(&bob, "src/a.rs", None).await.success);

    let rows = h.audit_rows("break_lock").await;
    let by: Vec<(&str, bool)> = rows.iter().map(|r| (r.agent_id.as_str(), r.success)).take(2).collect();
    assert_eq!(by, [("person", false), ("person", true)], "newest first");
    assert_eq!(rows[1].parameters["reason"], "its agent crashed");
}

pub async fn overrides_a_person_requeues_and_cancels_tasks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (boss, worker, person) = (agent("boss"), agent("worker"), operator("person"));
    let first = h.submit(&boss, "build", 1, &[]).await;
    let second = h.submit(&boss, "deploy", 5, &[&first]).await;
    assert_eq!(h.claimed_id(&worker).await, first);
    let requeue = |id: &str| RequeueTaskRequest { task_id: id.into() };
    let cancel = |id: &str, reason: Option<&str>| CancelTaskRequest {
        task_id: id.into(),
        reason: reason.map(String::from),
    };

    if h.door != Door::Http {
        let e = run::<RequeueTask>(&h, &worker, requeue(&first)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
        let e = run::<CancelTask>(&h, &worker, cancel(&first, None)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }
    let r = run::<RequeueTask>(&h, &person, requeue(&first[..8]))
        .await
        .expect("requeue by prefix");
    assert_eq!(
        (r.task_id.as_str(), r.status, r.was),
        (first.as_str(), TaskStatus::Pending, TaskStatus::Claimed)
    );
    assert_eq!(r.claimed_by.as_deref(), Some("worker"));
    let t = h.task(&first).await;
    assert_eq!(
        (t.status, t.claimed_by, t.attempts),
        (TaskStatus::Pending, None, 1),
        "the attempt still counts"
    );
    let e = h.complete(&worker, &first, true).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::TaskNotClaimed, "the old claim is gone");
    let e = run::<RequeueTask>(&h, &person, requeue(&first)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::TaskNotClaimed);

    let r = run::<CancelTask>(&h, &person, cancel(&first, Some("superseded")))
        .await
        .expect("cancel");
    assert_eq!(
        (r.status, r.was, r.claimed_by),
        (TaskStatus::Cancelled, TaskStatus::Pending, None)
    );
    let t = h.task(&first).await;
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert_eq!(t.error_message.as_deref(), Some("cancelled by person: superseded"));
    assert_eq!(t.failure_reason.as_deref(), Some(REASON_CANCELLED));
    assert_eq!(h.task(&second).await.status, TaskStatus::Cancelled, "its dependent too");
    let e = run::<CancelTask>(&h, &person, cancel(&first, None)).await.unwrap_err();
    assert_eq!(
        (e.code, e.details["status"].as_str()),
        (ErrorCode::TaskEnded, Some("cancelled"))
    );
    let unknown = "00000000-0000-4000-8000-000000000000";
    let e = run::<CancelTask>(&h, &person, cancel(unknown, None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::TaskNotFound);

    // A claimed task is cancelled with its claimer named.
    let third = h.submit(&boss, "lint", 1, &[]).await;
    assert_eq!(h.claimed_id(&worker).await, third);
    let r = run::<CancelTask>(&h, &person, cancel(&third, None)).await.unwrap();
    assert_eq!((r.was, r.claimed_by.as_deref()), (TaskStatus::Claimed, Some("worker")));
    let e = h.complete(&worker, &third, true).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::TaskNotClaimed);
    let rows = h.audit_rows("cancel_task").await;
    let done: Vec<&str> = rows.iter().filter(|r| r.success).map(|r| r.agent_id.as_str()).collect();
    assert_eq!(done, ["person", "person"], "{rows:?}");
}
