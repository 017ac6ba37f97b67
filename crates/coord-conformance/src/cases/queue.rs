//! Requirement "Work Queue", with claim leases and failure cascades.

use crate::{Backend, Harness, agent};
use coord_domain::ErrorCode;
use coord_domain::queue::{
    CompleteWorkRequest, GetTaskRequest, GetWorkRequest, ListTasksRequest, REASON_AGENT_REPORTED,
    REASON_DEPENDENCY_FAILED, REASON_MAX_ATTEMPTS, SubmitWorkRequest, TaskStatus,
};
use coord_domain::sessions::HeartbeatRequest;
use coord_service::CoordinationExt as _;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

pub async fn queue_submit_and_get_task(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let r = h
        .coord
        .submit_work(
            &a,
            SubmitWorkRequest {
                task_type: "test".into(),
                task_description: "write tests for the cache".into(),
                input_data: Some(json!({"files": ["src/cache.rs"]})),
                priority: None,
                depends_on: None,
            },
        )
        .await
        .unwrap();
    assert!(r.success);
    assert_eq!(r.status, TaskStatus::Pending);
    assert!(uuid_like(&r.task_id));
    let t = h.task(&r.task_id).await;
    assert_eq!(t.task_type, "test");
    assert_eq!(t.task_description, "write tests for the cache");
    assert_eq!(t.input_data, Some(json!({"files": ["src/cache.rs"]})));
    assert_eq!(t.priority, 5, "default priority");
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.created_by, "agent-a");
    assert_eq!(t.created_at, h.now());
    assert_eq!((t.attempts, t.max_attempts), (0, 3));
    let e = h
        .coord
        .get_task(
            &a,
            GetTaskRequest {
                task_id: "00000000-0000-4000-8000-000000000000".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::TaskNotFound);
    let e = h
        .coord
        .get_task(
            &a,
            GetTaskRequest {
                task_id: "not-an-id".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidTaskId);

    let got = h.claim(&agent("worker")).await;
    assert_eq!(got.task_id.as_deref(), Some(r.task_id.as_str()));
    assert_eq!(got.task_description.as_deref(), Some("write tests for the cache"));
    assert_eq!(got.input_data, Some(json!({"files": ["src/cache.rs"]})));
    assert_eq!((got.priority, got.attempt), (Some(5), Some(1)));
    assert_eq!(got.claimed_until, Some(h.now() + chrono::Duration::minutes(60)));
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

pub async fn queue_claims_most_urgent_then_oldest(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let p5_old = h.submit(&a, "t", 5, &[]).await;
    h.clock.advance(chrono::Duration::seconds(1));
    let p1 = h.submit(&a, "t", 1, &[]).await;
    let p10 = h.submit(&a, "t", 10, &[]).await;
    let p5_new = h.submit(&a, "t", 5, &[]).await;
    let p5_same_instant = h.submit(&a, "t", 5, &[]).await;
    let w = agent("worker");
    let mut order = Vec::new();
    for _ in 0..5 {
        order.push(h.claimed_id(&w).await);
    }
    assert_eq!(order, [p1, p5_old, p5_new, p5_same_instant, p10]);
    assert!(!h.claim(&w).await.success);
}

pub async fn queue_no_tasks_available(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let r = h.claim(&agent("w")).await;
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"success": false, "reason": "no_tasks_available"})
    );
}

pub async fn queue_claim_filters_by_type(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let test = h.submit(&a, "test", 5, &[]).await;
    let review = h.submit(&a, "review", 1, &[]).await;
    let w = agent("w");
    let got = h
        .coord
        .get_work(
            &w,
            GetWorkRequest {
                task_types: Some(vec!["test".into(), "lint".into()]),
            },
        )
        .await
        .unwrap();
    assert_eq!(got.task_id.as_deref(), Some(test.as_str()));
    let none = h
        .coord
        .get_work(
            &w,
            GetWorkRequest {
                task_types: Some(vec!["test".into()]),
            },
        )
        .await
        .unwrap();
    assert!(!none.success);
    assert_eq!(h.claimed_id(&w).await, review);
    let e = h
        .coord
        .get_work(
            &w,
            GetWorkRequest {
                task_types: Some(vec!["".into()]),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("task_types"));
}

pub async fn queue_dependencies_block_until_completed(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let first = h.submit(&a, "build", 9, &[]).await;
    let second = h.submit(&a, "test", 1, &[&first]).await;
    let third = h.submit(&a, "deploy", 1, &[&first, &second]).await;
    assert_eq!(h.task(&third).await.depends_on, {
        let mut v = vec![first.clone(), second.clone()];
        v.sort();
        v
    });
    assert_eq!(h.task(&third).await.pending_dependencies, 2);
    let w = agent("w");
    // Despite its priority, `second` is blocked: the only claimable task is `first`.
    assert_eq!(h.claimed_id(&w).await, first);
    assert!(!h.claim(&w).await.success, "dependents of a claimed task stay blocked");
    let done = h.complete(&w, &first, true).await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(h.task(&third).await.pending_dependencies, 1);
    assert_eq!(h.claimed_id(&w).await, second);
    assert!(!h.claim(&w).await.success);
    h.complete(&w, &second, true).await.unwrap();
    assert_eq!(h.claimed_id(&w).await, third);

    // A dependency that already completed does not block.
    let after = h.submit(&a, "docs", 5, &[&first]).await;
    assert_eq!(h.task(&after).await.pending_dependencies, 0);
    assert_eq!(h.claimed_id(&w).await, after);

    let unknown = "00000000-0000-4000-8000-0000000000ff";
    let e = h
        .coord
        .submit_work(
            &a,
            SubmitWorkRequest {
                task_type: "x".into(),
                task_description: "x".into(),
                depends_on: Some(vec![first.clone(), unknown.into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownDependency);
    assert_eq!(e.details["unknown"], json!([unknown]));
    let listed = h.coord.list_tasks(&a, ListTasksRequest::default()).await.unwrap();
    assert_eq!(listed.tasks.len(), 4, "the refused submission stored nothing");
}

pub async fn queue_failure_cancels_dependents_transitively(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let root = h.submit(&a, "build", 5, &[]).await;
    let child = h.submit(&a, "test", 5, &[&root]).await;
    let grandchild = h.submit(&a, "deploy", 5, &[&child]).await;
    let unrelated = h.submit(&a, "docs", 5, &[]).await;
    let w = agent("w");
    assert_eq!(h.claimed_id(&w).await, root);
    let r = h.complete(&w, &root, false).await.unwrap();
    assert_eq!(r.status, TaskStatus::Failed);
    let mut want = vec![child.clone(), grandchild.clone()];
    want.sort();
    assert_eq!(r.cancelled_dependents, want);
    let root_t = h.task(&root).await;
    assert_eq!(root_t.failure_reason.as_deref(), Some(REASON_AGENT_REPORTED));
    assert_eq!(root_t.error_message.as_deref(), Some("it broke"));
    for id in [&child, &grandchild] {
        let t = h.task(id).await;
        assert_eq!(t.status, TaskStatus::Cancelled);
        assert_eq!(t.failure_reason.as_deref(), Some(REASON_DEPENDENCY_FAILED));
        assert!(t.completed_at.is_some());
    }
    assert_eq!(h.task(&unrelated).await.status, TaskStatus::Pending);
    assert_eq!(h.claimed_id(&w).await, unrelated, "cancelled tasks are never claimed");
    assert!(!h.claim(&w).await.success);
    // Depending on a failed task cancels the new task at once, visibly.
    let late = h
        .coord
        .submit_work(
            &a,
            SubmitWorkRequest {
                task_type: "late".into(),
                task_description: "late".into(),
                depends_on: Some(vec![root.clone()]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(late.status, TaskStatus::Cancelled);
    assert_eq!(
        h.task(&late.task_id).await.failure_reason.as_deref(),
        Some(REASON_DEPENDENCY_FAILED)
    );
}

pub async fn queue_completion_refusals(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, w, other) = (agent("agent-a"), agent("w"), agent("other"));
    let id = h.submit(&a, "t", 5, &[]).await;
    assert_eq!(
        h.complete(&w, &id, true).await.unwrap_err().code,
        ErrorCode::TaskNotClaimed
    );
    h.claimed_id(&w).await;
    let e = h.complete(&other, &id, true).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotTaskOwner);
    assert_eq!(e.details["claimed_by"], "w");
    assert_eq!(
        h.task(&id).await.status,
        TaskStatus::Claimed,
        "a refused completion changes nothing"
    );
    h.complete(&w, &id, true).await.unwrap();
    assert_eq!(
        h.complete(&w, &id, true).await.unwrap_err().code,
        ErrorCode::TaskNotClaimed
    );
    let missing = h
        .complete(&w, "00000000-0000-4000-8000-000000000001", true)
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::TaskNotFound);
    let bad = h
        .coord
        .complete_work(
            &w,
            CompleteWorkRequest {
                task_id: "zzz".into(),
                success: true,
                result: None,
                error_message: None,
                skill: None,
                changes: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (bad.code, bad.field.as_deref()),
        (ErrorCode::InvalidTaskId, Some("task_id"))
    );
    let t = h.task(&id).await;
    assert_eq!(t.status, TaskStatus::Completed);
    assert!(t.completed_at.is_some());
}

pub async fn queue_expired_claims_return_then_fail(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.claim_lease_minutes = 10).await;
    let a = agent("agent-a");
    let id = h.submit(&a, "t", 5, &[]).await;
    let dependent = h.submit(&a, "t", 5, &[&id]).await;
    for attempt in 1..=3 {
        let w = agent(&format!("w{attempt}"));
        let got = h.claim(&w).await;
        assert_eq!(got.task_id.as_deref(), Some(id.as_str()), "attempt {attempt}");
        assert_eq!(got.attempt, Some(attempt));
        h.advance(9);
        assert!(
            !h.claim(&agent("idle")).await.success,
            "a live claim is not handed out again"
        );
        h.advance(1);
        if attempt < 3 {
            let swept = h.sweep().await.unwrap();
            assert_eq!((swept.claims_requeued, swept.claims_failed), (1, 0));
            let t = h.task(&id).await;
            assert_eq!((t.status, t.claimed_by.as_deref()), (TaskStatus::Pending, None));
            // The former claimer can no longer complete it once it is back in the queue.
            let e = h.complete(&w, &id, true).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::TaskNotClaimed);
        }
    }
    let swept = h.sweep().await.unwrap();
    assert_eq!(swept.claims_failed, 1);
    let t = h.task(&id).await;
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.failure_reason.as_deref(), Some(REASON_MAX_ATTEMPTS));
    assert_eq!(t.attempts, 3);
    assert_eq!(h.task(&dependent).await.status, TaskStatus::Cancelled);
    assert!(!h.claim(&agent("w")).await.success);
}

pub async fn queue_heartbeat_extends_claim_leases(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.claim_lease_minutes = 10).await;
    let (a, w) = (agent("agent-a"), agent("w"));
    let id = h.submit(&a, "t", 5, &[]).await;
    h.claimed_id(&w).await;
    for _ in 0..5 {
        h.advance(8);
        h.coord.heartbeat(&w, HeartbeatRequest {}).await.unwrap();
    }
    h.advance(8);
    assert!(
        !h.claim(&agent("other")).await.success,
        "a heartbeating claimer keeps its task"
    );
    let t = h.task(&id).await;
    assert_eq!(t.claimed_until, Some(h.now() + chrono::Duration::minutes(2)));
    h.complete(&w, &id, true).await.unwrap();

    // Without heartbeats the lease runs out and the next get_work hands the task over
    // (settled inline, no sweep needed).
    let next = h.submit(&a, "t", 5, &[]).await;
    h.claimed_id(&w).await;
    h.advance(11);
    let other = agent("other");
    let got = h.claim(&other).await;
    assert_eq!((got.task_id.as_deref(), got.attempt), (Some(next.as_str()), Some(2)));
    assert_eq!(
        h.complete(&w, &next, true).await.unwrap_err().code,
        ErrorCode::NotTaskOwner
    );
    h.complete(&other, &next, true).await.unwrap();
}

pub async fn queue_input_validation(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let base = SubmitWorkRequest {
        task_type: "t".into(),
        task_description: "d".into(),
        ..Default::default()
    };
    let cases = [
        (
            SubmitWorkRequest {
                priority: Some(0),
                ..base.clone()
            },
            ErrorCode::PriorityOutOfRange,
            "priority",
        ),
        (
            SubmitWorkRequest {
                priority: Some(11),
                ..base.clone()
            },
            ErrorCode::PriorityOutOfRange,
            "priority",
        ),
        (
            SubmitWorkRequest {
                task_type: "".into(),
                ..base.clone()
            },
            ErrorCode::InvalidArgument,
            "task_type",
        ),
        (
            SubmitWorkRequest {
                task_description: " ".into(),
                ..base.clone()
            },
            ErrorCode::InvalidArgument,
            "task_description",
        ),
        (
            SubmitWorkRequest {
                depends_on: Some(vec!["x".into()]),
                ..base.clone()
            },
            ErrorCode::InvalidTaskId,
            "depends_on",
        ),
        (
            SubmitWorkRequest {
                input_data: Some(json!("x".repeat(300 * 1024))),
                ..base.clone()
            },
            ErrorCode::PayloadTooLarge,
            "input_data",
        ),
    ];
    for (req, code, field) in cases {
        let e = h.coord.submit_work(&a, req).await.unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (code, Some(field)));
    }
    assert!(
        h.coord
            .list_tasks(&a, ListTasksRequest::default())
            .await
            .unwrap()
            .tasks
            .is_empty()
    );
    for p in [1, 10] {
        h.submit(&a, "t", p, &[]).await;
    }
}

pub async fn queue_listing_filters(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, w) = (agent("agent-a"), agent("w"));
    let t1 = h.submit(&a, "test", 2, &[]).await;
    let t2 = h.submit(&a, "test", 3, &[]).await;
    let r1 = h.submit(&a, "review", 4, &[]).await;
    assert_eq!(h.claimed_id(&w).await, t1);
    let list = |status: Option<TaskStatus>, ty: Option<&str>| {
        let req = ListTasksRequest {
            status,
            task_type: ty.map(String::from),
            limit: None,
        };
        let coord = &h.coord;
        let a = a.clone();
        async move {
            coord
                .list_tasks(&a, req)
                .await
                .unwrap()
                .tasks
                .into_iter()
                .map(|t| t.task_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list(None, None).await, [t1.clone(), t2.clone(), r1.clone()]);
    assert_eq!(list(Some(TaskStatus::Pending), None).await, [t2.clone(), r1.clone()]);
    assert_eq!(list(Some(TaskStatus::Claimed), None).await, std::slice::from_ref(&t1));
    assert_eq!(list(None, Some("test")).await, [t1.clone(), t2.clone()]);
    assert_eq!(
        list(Some(TaskStatus::Pending), Some("test")).await,
        std::slice::from_ref(&t2)
    );
    assert!(list(Some(TaskStatus::Failed), None).await.is_empty());
    let limited = h
        .coord
        .list_tasks(
            &a,
            ListTasksRequest {
                limit: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited.tasks.len(), 1);
    let e = h
        .coord
        .list_tasks(
            &a,
            ListTasksRequest {
                limit: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("limit"));
}

pub async fn queue_concurrent_workers_claim_each_task_once(b: &dyn Backend) {
    let h = Arc::new(Harness::new(b).await);
    let a = agent("agent-a");
    let mut submitted = HashSet::new();
    let mut chain: Vec<String> = Vec::new();
    for i in 0..60 {
        // Every fifth task depends on the previous one of its kind, so order matters.
        let deps: Vec<&str> = if i % 5 == 0 {
            chain.last().map(|s| vec![s.as_str()]).unwrap_or_default()
        } else {
            vec![]
        };
        let id = h.submit(&a, "t", (i % 10) + 1, &deps).await;
        if i % 5 == 0 {
            chain.push(id.clone());
        }
        submitted.insert(id);
    }
    let mut workers = Vec::new();
    for wi in 0..8 {
        let h = h.clone();
        workers.push(tokio::spawn(async move {
            let me = agent(&format!("worker-{wi}"));
            let mut mine = Vec::new();
            let mut idle_rounds = 0;
            while idle_rounds < 50 {
                let got = h.claim(&me).await;
                match got.task_id {
                    Some(id) => {
                        idle_rounds = 0;
                        let t = h.task(&id).await;
                        for dep in &t.depends_on {
                            assert_eq!(
                                h.task(dep).await.status,
                                TaskStatus::Completed,
                                "claimed {id} before {dep}"
                            );
                        }
                        h.complete(&me, &id, true).await.unwrap();
                        mine.push(id);
                    }
                    None => {
                        idle_rounds += 1;
                        tokio::task::yield_now().await;
                    }
                }
            }
            mine
        }));
    }
    let mut seen = HashSet::new();
    for w in workers {
        for id in w.await.unwrap() {
            assert!(seen.insert(id.clone()), "task {id} claimed twice");
        }
    }
    assert_eq!(seen, submitted, "every task claimed exactly once, none lost");
}

/// Failing a task while dependents of its dependents are being submitted: every task
/// that (transitively) depends on the failed one ends cancelled, none stays pending.
pub async fn queue_failure_cascade_races_with_new_dependents(b: &dyn Backend) {
    let h = Arc::new(Harness::new(b).await);
    let (boss, w) = (agent("boss"), agent("w"));
    for round in 0..25 {
        let root = h.submit(&boss, "root", 1, &[]).await;
        let child = h.submit(&boss, "child", 5, &[&root]).await;
        assert_eq!(h.claimed_id(&w).await, root, "round {round}");
        let submitter = {
            let h = h.clone();
            let boss = boss.clone();
            let child = child.clone();
            tokio::spawn(async move {
                let grandchild = h.submit(&boss, "grandchild", 5, &[&child]).await;
                let great = h.submit(&boss, "great", 5, &[&grandchild]).await;
                vec![grandchild, great]
            })
        };
        let failer = {
            let h = h.clone();
            let w = w.clone();
            let root = root.clone();
            tokio::spawn(async move { h.complete(&w, &root, false).await.unwrap() })
        };
        let late = submitter.await.unwrap();
        failer.await.unwrap();
        for id in std::iter::once(&child).chain(late.iter()) {
            let t = h.task(id).await;
            assert_eq!(
                t.status,
                TaskStatus::Cancelled,
                "round {round}: {id} left {:?}",
                t.status
            );
        }
    }
}
