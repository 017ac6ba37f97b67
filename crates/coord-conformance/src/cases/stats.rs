//! The fleet's figures (`get_stats`, behind `coord stats` and `GET /metrics`).

use crate::cases::guardrails::check;
use crate::cases::profiles::run;
use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::memory::{MemoryFeedbackRequest, RememberRequest};
use coord_domain::stats::CLAIM_TO_COMPLETE_BOUNDS;
use coord_domain::{Empty, ErrorCode};
use coord_service::CoordinationExt as _;
use coord_service::ops::audit::{GetStats, QueryAudit};
use coord_service::ops::memory::{MemoryFeedback, Remember};

pub async fn stats_count_the_fleet(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let boss = operator("boss");
    let s = run::<GetStats>(&h, &boss, Empty {})
        .await
        .expect("stats of an empty store");
    assert!(s.success);
    assert_eq!(s.backend, h.store.backend());
    assert_eq!(s.at, h.now());
    assert_eq!((s.locks_held, s.approvals_pending, s.spawned_running), (0, 0, 0));
    assert_eq!(s.claim_to_complete.count, 0);
    assert_eq!(s.claim_to_complete.buckets.len(), CLAIM_TO_COMPLETE_BOUNDS.len());
    assert!(s.guardrail_blocks.is_empty());
    assert_eq!(s.memory_feedback.useful_share(), None);

    let (a, c) = (agent("a"), agent("c"));
    // Two tasks completed: one held a minute, one twenty minutes.
    let first = h.submit(&boss, "t", 1, &[]).await;
    let second = h.submit(&boss, "t", 5, &[&first]).await;
    let third = h.submit(&boss, "t", 9, &[]).await;
    h.submit(&boss, "t", 9, &[&third]).await;
    assert_eq!(h.claimed_id(&a).await, first);
    h.advance(1);
    h.complete(&a, &first, true).await.expect("complete");
    assert_eq!(h.claimed_id(&c).await, second);
    h.advance(20);
    h.complete(&c, &second, true).await.expect("complete");
    // Two guardrail blocks of different kinds; the first becomes a pending approval.
    let force = check(&h, &a, "git push --force origin main").await.unwrap_err();
    let rm = check(&h, &a, "rm -rf src").await.unwrap_err();
    // Votes: two useful, one not.
    let m = run::<Remember>(
        &h,
        &a,
        RememberRequest {
            event_type: "bug_fix".into(),
            summary: "the login test flakes when the clock skews".into(),
            ..Default::default()
        },
    )
    .await
    .expect("remember");
    for (who, useful) in [("c", true), ("d", true), ("e", false)] {
        run::<MemoryFeedback>(
            &h,
            &agent(who),
            MemoryFeedbackRequest {
                memory_id: m.memory_id.clone(),
                useful,
            },
        )
        .await
        .expect("vote");
    }
    h.lock(&a, "x.rs", None).await;
    h.lock(&c, "y.rs", None).await;

    let s = run::<GetStats>(&h, &boss, Empty {}).await.expect("stats");
    let status = h.coord.status(&boss).await.expect("status");
    assert_eq!(s.at, h.now());
    assert_eq!(s.locks_held, 2);
    assert_eq!(s.locks_held, status.live_locks);
    assert_eq!(s.tasks, status.tasks);
    assert_eq!(s.agents, status.agents);
    assert_eq!(
        (s.tasks.pending, s.tasks.waiting, s.tasks.completed),
        (2, 1, 2),
        "{:?}",
        s.tasks
    );
    let held = &s.claim_to_complete;
    assert_eq!((held.count, held.sum_seconds), (2, 60.0 + 1200.0));
    let at = |le: f64| held.buckets.iter().find(|b| b.le == le).map(|b| b.count);
    let want = [(30.0, 0), (60.0, 1), (900.0, 1), (1800.0, 2), (86400.0, 2)];
    for (le, n) in want {
        assert_eq!(at(le), Some(n), "bucket le {le}: {:?}", held.buckets);
    }
    let approvals = [&force, &rm]
        .iter()
        .filter(|e| e.details.contains_key("approval_id"))
        .count() as i64;
    assert!(approvals >= 1, "the push became an approval request: {force:?}");
    assert_eq!(s.approvals_pending, approvals);
    let category = |e: &coord_domain::CoordError| e.details["category"].as_str().unwrap().to_string();
    let mut blocks: Vec<(String, i64)> = s
        .guardrail_blocks
        .iter()
        .map(|c| (c.category.clone(), c.count))
        .collect();
    blocks.sort();
    let mut want = vec![(category(&force), 1), (category(&rm), 1)];
    if want[0].0 == want[1].0 {
        want = vec![(want[0].0.clone(), 2)];
    }
    want.sort();
    assert_eq!(blocks, want);
    assert_eq!((s.memory_feedback.useful, s.memory_feedback.not_useful), (2, 1));

    // Only administrators read them; a refusal is audited like any other. (Through HTTP
    // the suite holds an operator key, which administers whoever it names.)
    let by_agent = run::<GetStats>(&h, &a, Empty {}).await;
    if h.door == Door::Http {
        assert!(by_agent.is_ok(), "{by_agent:?}");
        return;
    }
    let e = by_agent.unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
    let rows = run::<QueryAudit>(
        &h,
        &boss,
        coord_domain::audit::AuditQueryRequest {
            operation: Some("get_stats".into()),
            ..Default::default()
        },
    )
    .await
    .expect("audit")
    .entries;
    assert_eq!(rows.len(), 3, "two reads and the refusal");
    assert_eq!(rows.iter().filter(|r| !r.success).count(), 1);
}
