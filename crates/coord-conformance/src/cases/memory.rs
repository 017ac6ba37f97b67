//! Requirements "Episodic Memory", "Working Memory", "Procedural Memory".

use crate::cases::profiles::{code, run};
use crate::{Backend, Harness, agent, operator};
use coord_domain::memory::skills::{GetSkillsRequest, RecordSkillUseRequest};
use coord_domain::memory::working::{
    EntryInput, EntryKind, EntryState, GetWorkingMemoryRequest, UpdateWorkingMemoryRequest,
};
use coord_domain::memory::{
    ForgetRequest, MemoryFeedbackRequest, MemoryType, Outcome, RecallRequest, RecallResult, RememberRequest,
    RememberResult,
};
use coord_domain::queue::CompleteWorkRequest;
use coord_domain::sessions::{EndSessionRequest, RegisterSessionRequest};
use coord_domain::{Caller, CoordResult, ErrorCode};
use coord_service::CoordinationExt as _;
use coord_service::ops::memory as ops;
use serde_json::json;

fn mem(event_type: &str, summary: &str, tags: &[&str]) -> RememberRequest {
    RememberRequest {
        event_type: event_type.into(),
        summary: summary.into(),
        tags: Some(tags.iter().map(|t| t.to_string()).collect()),
        ..Default::default()
    }
}

async fn remember(h: &Harness, who: &Caller, req: RememberRequest) -> RememberResult {
    run::<ops::Remember>(h, who, req).await.expect("remember")
}

async fn recall(h: &Harness, text: &str, tags: &[&str]) -> RecallResult {
    run::<ops::Recall>(
        h,
        &agent("reader"),
        RecallRequest {
            task_description: text.into(),
            tags: (!tags.is_empty()).then(|| tags.iter().map(|t| t.to_string()).collect()),
            limit: Some(10),
            ..Default::default()
        },
    )
    .await
    .expect("recall")
}

fn ids(r: &RecallResult) -> Vec<String> {
    r.memories.iter().map(|m| m.memory_id.clone()).collect()
}

async fn vote(
    h: &Harness,
    who: &str,
    id: &str,
    useful: bool,
) -> CoordResult<coord_domain::memory::MemoryFeedbackResult> {
    run::<ops::MemoryFeedback>(
        h,
        &agent(who),
        MemoryFeedbackRequest {
            memory_id: id.into(),
            useful,
        },
    )
    .await
}

pub async fn memory_merges_within_the_hour_only(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let first = remember(
        &h,
        &a,
        RememberRequest {
            lessons: Some(vec!["run enum changes outside a transaction".into()]),
            outcome: Some(Outcome::Negative),
            details: Some(json!({"file": "migrations/0042.sql"})),
            ..mem("error", "Migration 0042 failed on ALTER TYPE", &["postgres"])
        },
    )
    .await;
    assert!(first.success && !first.merged);
    assert_eq!(first.occurrences, 1);
    h.advance(30);
    // Same agent, event type and summary (whitespace and case folded): merged.
    let again = remember(
        &h,
        &a,
        RememberRequest {
            lessons: Some(vec![
                "run enum changes outside a transaction".into(),
                "use sqlx no-transaction".into(),
            ]),
            outcome: Some(Outcome::Positive),
            details: Some(json!({"command": "sqlx migrate run"})),
            ..mem(
                "error",
                "migration 0042  failed on alter type",
                &["Migrations", "postgres"],
            )
        },
    )
    .await;
    assert_eq!(
        (again.memory_id.as_str(), again.merged, again.occurrences),
        (first.memory_id.as_str(), true, 2)
    );
    let r = recall(&h, "ALTER TYPE migration", &[]).await;
    assert_eq!(ids(&r), [first.memory_id.as_str()], "one memory, not two");
    let m = &r.memories[0];
    assert_eq!(m.tags, ["postgres", "migrations"]);
    assert_eq!(m.outcome, Some(Outcome::Positive));
    assert_eq!(m.occurrences, 2);
    assert!(
        m.content
            .contains("run enum changes outside a transaction; use sqlx no-transaction"),
        "{}",
        m.content
    );
    // The window slides from the last time it was seen: 59 minutes later still merges...
    h.advance(59);
    assert!(
        remember(&h, &a, mem("error", "Migration 0042 failed on ALTER TYPE", &[]))
            .await
            .merged
    );
    // ... more than an hour later does not.
    h.advance(61);
    let later = remember(&h, &a, mem("error", "Migration 0042 failed on ALTER TYPE", &[])).await;
    assert!(!later.merged);
    assert_ne!(later.memory_id, first.memory_id);
    // Another agent, or another event type, is another memory.
    let other = remember(
        &h,
        &agent("agent-b"),
        mem("error", "Migration 0042 failed on ALTER TYPE", &[]),
    )
    .await;
    assert!(!other.merged);
    let fix = remember(&h, &a, mem("fix", "Migration 0042 failed on ALTER TYPE", &[])).await;
    assert!(!fix.merged);
    // Bad input names the field; nothing is stored.
    let cases: Vec<(RememberRequest, &str)> = vec![
        (mem("error", "  ", &[]), "summary"),
        (mem("Bad Type!", "s", &[]), "event_type"),
        (mem("error", "s", &["no;semicolons"]), "tags"),
        (
            RememberRequest {
                details: Some(json!([1])),
                ..mem("error", "s", &[])
            },
            "details",
        ),
    ];
    for (req, field) in cases {
        let e = run::<ops::Remember>(&h, &a, req).await.unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidArgument, Some(field)));
    }
    let unknown_outcome = h
        .coord
        .invoke(
            coord_service::op_named("remember").expect("registered"),
            &coord_domain::access::Principal::local(a.clone()),
            Ok(json!({"event_type": "error", "summary": "s", "outcome": "great"})),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown_outcome.code, ErrorCode::InvalidArgument);
}

pub async fn memory_concurrent_duplicates_merge(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let coord = h.coord.clone();
            tokio::spawn(async move {
                coord_service::call::<ops::Remember, _>(
                    &*coord,
                    &coord_domain::access::Principal::local(agent("racer")),
                    RememberRequest {
                        lessons: Some(vec![format!("lesson {i}")]),
                        ..mem("ci_failure", "cargo test timed out on the runner", &["ci"])
                    },
                )
                .await
                .unwrap()
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    let first = &results[0].memory_id;
    assert!(results.iter().all(|r| &r.memory_id == first), "{results:?}");
    assert_eq!(results.iter().filter(|r| !r.merged).count(), 1);
    let mut counts: Vec<i64> = results.iter().map(|r| r.occurrences).collect();
    counts.sort();
    assert_eq!(counts, (1..=8).collect::<Vec<_>>());
    let r = recall(&h, "cargo test timed out", &[]).await;
    assert_eq!(r.memories.len(), 1);
    assert_eq!(r.memories[0].occurrences, 8);
    assert_eq!(r.memories[0].content.matches("lesson").count(), 8);
}

pub async fn memory_recall_ranks_text_tags_decay_and_feedback(b: &dyn Backend) {
    let h = Harness::new(b).await;
    // Decay: the same text seen 200 days ago and today; the fresh one first.
    h.clock.set(h.clock.get() - chrono::Duration::days(200));
    let old = remember(
        &h,
        &agent("a1"),
        mem("decision", "sessions are stored in Redis", &["auth"]),
    )
    .await;
    h.clock.set(h.clock.get() + chrono::Duration::days(200));
    let new = remember(
        &h,
        &agent("a2"),
        mem("decision", "sessions are stored in Redis", &["auth"]),
    )
    .await;
    let r = recall(&h, "where are sessions stored", &[]).await;
    assert_eq!(ids(&r), [new.memory_id.clone(), old.memory_id.clone()]);
    assert!(r.memories[0].relevance > r.memories[1].relevance);
    assert!(r.memories.iter().all(|m| (0.0..=1.0).contains(&m.relevance)));
    // Feedback: equal memories, three agents find one useless; one agent's repeated
    // votes count once; a changed vote replaces the old one.
    let x = remember(
        &h,
        &agent("b1"),
        mem("fix", "flaky login test fixed by freezing the clock", &[]),
    )
    .await;
    let y = remember(
        &h,
        &agent("b2"),
        mem("fix", "flaky login test fixed by freezing the clock", &[]),
    )
    .await;
    for who in ["v1", "v2", "v3"] {
        vote(&h, who, &x.memory_id, false).await.unwrap();
    }
    for _ in 0..5 {
        let v = vote(&h, "v4", &y.memory_id, true).await.unwrap();
        assert_eq!((v.useful_count, v.not_useful_count), (1, 0));
    }
    let r = recall(&h, "the login test is flaky", &[]).await;
    assert_eq!(ids(&r), [y.memory_id.clone(), x.memory_id.clone()]);
    for who in ["v1", "v2", "v3"] {
        vote(&h, who, &x.memory_id, true).await.unwrap();
    }
    let r = recall(&h, "the login test is flaky", &[]).await;
    assert_eq!(ids(&r), [x.memory_id.clone(), y.memory_id.clone()], "3 useful beat 1");
    assert_eq!(
        code(vote(&h, "v1", "00000000-0000-4000-8000-000000000000", true).await),
        ErrorCode::NotFound
    );
    assert_eq!(code(vote(&h, "v1", "nope", true).await), ErrorCode::InvalidArgument);
    // Tags: with no text, only tagged memories, by share of the asked tags.
    let both = remember(
        &h,
        &agent("c"),
        mem("discovery", "vite build needs NODE_OPTIONS", &["web", "ci"]),
    )
    .await;
    let one = remember(&h, &agent("c"), mem("discovery", "docker layer cache misses", &["ci"])).await;
    let r = recall(&h, "", &["ci", "web"]).await;
    assert_eq!(ids(&r), [both.memory_id.clone(), one.memory_id.clone()]);
    // Unrelated text finds nothing; query syntax in the text is only text.
    assert!(recall(&h, "kubernetes helm chart", &[]).await.memories.is_empty());
    let r = recall(&h, "\"NEAR(* -: ^ AND OR NOT) 'quoted' | ! & vite", &[]).await;
    assert_eq!(ids(&r), [both.memory_id.as_str()]);
    // Filters: by author and by type; skills are recalled too.
    run::<ops::RecordSkillUse>(
        &h,
        &agent("c"),
        RecordSkillUseRequest {
            skill: "rebuild the vite cache with --force".into(),
            task_type: "frontend-build".into(),
            success: true,
        },
    )
    .await
    .unwrap();
    let r = recall(&h, "vite build", &[]).await;
    assert!(
        r.memories.iter().any(|m| m.memory_type == MemoryType::Procedural),
        "{r:?}"
    );
    let only = run::<ops::Recall>(
        &h,
        &agent("reader"),
        RecallRequest {
            task_description: "vite build".into(),
            memory_type: Some(MemoryType::Episodic),
            author: Some("c".into()),
            explain: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(ids(&only), [both.memory_id.as_str()]);
    let explain = only.memories[0].explain.expect("explain");
    assert!(explain.text > 0.0 && explain.recency > 0.99);
    for limit in [0, 51] {
        let e = run::<ops::Recall>(
            &h,
            &agent("reader"),
            RecallRequest {
                limit: Some(limit),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
    }
}

pub async fn memory_forget_by_author_or_admin(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let m = remember(&h, &agent("author"), mem("decision", "we pin axum to 0.6", &[])).await;
    let forget = |who: Caller, id: &str| {
        let req = ForgetRequest { memory_id: id.into() };
        let h = &h;
        async move { run::<ops::Forget>(h, &who, req).await }
    };
    // The HTTP door's conformance client holds an operator key: an administrator there.
    if h.door != crate::Door::Http {
        assert_eq!(code(forget(agent("someone"), &m.memory_id).await), ErrorCode::Forbidden);
        assert_eq!(
            recall(&h, "axum pin", &[]).await.memories.len(),
            1,
            "a refusal changes nothing"
        );
    }
    assert!(forget(agent("author"), &m.memory_id).await.unwrap().success);
    assert!(recall(&h, "axum pin", &[]).await.memories.is_empty());
    assert_eq!(code(forget(agent("author"), &m.memory_id).await), ErrorCode::NotFound);
    assert_eq!(code(vote(&h, "v", &m.memory_id, true).await), ErrorCode::NotFound);
    assert_eq!(
        code(forget(agent("author"), "not-a-uuid").await),
        ErrorCode::InvalidArgument
    );
    // An administrator may forget anyone's.
    let n = remember(&h, &agent("author"), mem("decision", "we use webpack", &[])).await;
    assert!(forget(operator("root"), &n.memory_id).await.unwrap().success);
}

pub async fn memory_skills_rank_by_effectiveness(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let use_skill = |skill: &'static str, success: bool, who: &'static str| {
        let h = &h;
        async move {
            run::<ops::RecordSkillUse>(
                h,
                &agent(who),
                RecordSkillUseRequest {
                    skill: skill.into(),
                    task_type: "flaky-test".into(),
                    success,
                },
            )
            .await
            .unwrap()
        }
    };
    let lucky = use_skill("retry until green", true, "a").await;
    assert_eq!((lucky.skill.successes, lucky.skill.uses), (1, 1));
    for i in 0..10 {
        use_skill(
            "run it alone with --test-threads=1",
            i != 3,
            if i % 2 == 0 { "a" } else { "b" },
        )
        .await;
    }
    // Concurrent uses of one skill are all counted, on one skill.
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let coord = h.coord.clone();
            tokio::spawn(async move {
                coord_service::call::<ops::RecordSkillUse, _>(
                    &*coord,
                    &coord_domain::access::Principal::local(agent("racer")),
                    RecordSkillUseRequest {
                        skill: "Freeze the clock".into(),
                        task_type: "flaky-test".into(),
                        success: false,
                    },
                )
                .await
                .unwrap()
            })
        })
        .collect();
    for r in racers {
        r.await.unwrap();
    }
    let skills = run::<ops::GetSkills>(
        &h,
        &agent("reader"),
        GetSkillsRequest {
            task_type: "Flaky-Test".into(),
            limit: None,
        },
    )
    .await
    .unwrap()
    .skills;
    let names: Vec<(&str, i64, i64)> = skills
        .iter()
        .map(|s| (s.skill.as_str(), s.successes, s.failures))
        .collect();
    assert_eq!(
        names,
        [
            ("run it alone with --test-threads=1", 9, 1),
            ("retry until green", 1, 0),
            ("Freeze the clock", 0, 8)
        ]
    );
    assert!(skills[0].effectiveness > skills[1].effectiveness);
    assert_eq!(skills[1].effectiveness, 0.2065);
    // complete_work with a skill counts it for the task's type.
    let w = agent("worker");
    let task = h.submit(&agent("lead"), "Flaky Test", 1, &[]).await;
    h.claimed_id(&w).await;
    let done = h
        .coord
        .complete_work(
            &w,
            CompleteWorkRequest {
                task_id: task,
                success: true,
                result: None,
                error_message: None,
                changes: None,
                skill: Some("retry until green".into()),
            },
        )
        .await
        .unwrap();
    let counted = done.skill.expect("the skill use");
    assert_eq!((counted.task_type.as_str(), counted.successes), ("flaky-test", 2));
    assert_eq!(
        code(
            run::<ops::GetSkills>(
                &h,
                &agent("reader"),
                GetSkillsRequest {
                    task_type: "has space!".into(),
                    limit: None
                }
            )
            .await
        ),
        ErrorCode::InvalidArgument
    );
}

pub async fn memory_working_memory_is_budgeted_and_session_scoped(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.working_memory_budget = 400).await;
    let a = agent("worker");
    let entry = |key: &str, content: String, critical: bool| EntryInput {
        key: key.into(),
        kind: EntryKind::Finding,
        content,
        critical,
    };
    let update = |entries: Vec<EntryInput>| {
        let h = &h;
        let a = a.clone();
        async move { run::<ops::UpdateWorkingMemory>(h, &a, UpdateWorkingMemoryRequest { entries }).await }
    };
    // Without a live session there is no working memory.
    assert_eq!(
        code(update(vec![entry("k", "v".into(), false)]).await),
        ErrorCode::NotFound
    );
    h.coord
        .register_session(&a, RegisterSessionRequest::default())
        .await
        .unwrap();
    let task = "move sessions from Redis to PostgreSQL; keep the cookie format".to_string();
    update(vec![EntryInput {
        kind: EntryKind::Task,
        ..entry("task", task.clone(), true)
    }])
    .await
    .unwrap();
    for i in 0..12 {
        update(vec![entry(
            &format!("finding-{i:02}"),
            format!("finding {i}: {}", "detail ".repeat(40)),
            false,
        )])
        .await
        .unwrap();
    }
    let got = run::<ops::GetWorkingMemory>(&h, &a, GetWorkingMemoryRequest::default())
        .await
        .unwrap();
    assert!(got.tokens <= got.budget, "{} > {}", got.tokens, got.budget);
    assert!(got.tokens_before > got.tokens);
    assert!(!got.over_budget);
    assert!(!got.compressed.is_empty());
    let by_key = |k: &str| got.entries.iter().find(|e| e.key == k);
    assert_eq!(
        by_key("task").map(|e| e.content.as_str()),
        Some(task.as_str()),
        "critical stays verbatim"
    );
    let newest = by_key("finding-11").expect("newest kept");
    assert_eq!(newest.state, EntryState::Active);
    assert!(by_key("digest").is_some(), "{got:?}");
    // The originals are kept.
    let all = run::<ops::GetWorkingMemory>(
        &h,
        &a,
        GetWorkingMemoryRequest {
            include_originals: Some(true),
        },
    )
    .await
    .unwrap();
    let first = all
        .entries
        .iter()
        .find(|e| e.key == "finding-00")
        .expect("folded entry kept");
    assert!(first.state != EntryState::Active);
    assert!(
        first
            .original
            .as_deref()
            .is_some_and(|o| o.starts_with("finding 0: detail"))
    );
    // Another agent's session does not see it.
    let other = agent("other");
    h.coord
        .register_session(&other, RegisterSessionRequest::default())
        .await
        .unwrap();
    let theirs = run::<ops::GetWorkingMemory>(&h, &other, GetWorkingMemoryRequest::default())
        .await
        .unwrap();
    assert!(theirs.entries.is_empty());
    // Bad input.
    assert_eq!(code(update(vec![]).await), ErrorCode::InvalidArgument);
    assert_eq!(
        code(update(vec![entry("digest", "mine".into(), false)]).await),
        ErrorCode::InvalidArgument
    );
    // The session ends: its working memory is archived, out of the context.
    h.coord.end_session(&a, EndSessionRequest::default()).await.unwrap();
    let after = run::<ops::GetWorkingMemory>(&h, &a, GetWorkingMemoryRequest::default())
        .await
        .unwrap();
    assert!(after.entries.is_empty(), "{after:?}");
}

/// A store bounds what one recall reads once a query's words or tags are common (the
/// newest matches, and every match of a rare word or tag however old): the bound must
/// never hide the old memory that shares the task's rare word or tag, nor a match an
/// author filter asks for.
pub async fn memory_recall_bounds_its_reading_in_a_large_store(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let old = remember(
        &h,
        &agent("old-hand"),
        mem(
            "error",
            "zeppelin cache warmup failed during deploy",
            &["ops", "zeppelin-team"],
        ),
    )
    .await;
    // More memories holding "deploy" and the tag "ops" than a store reads in full.
    let common = 3 * coord_domain::memory::SCORED;
    for i in 0..common {
        remember(
            &h,
            &agent(&format!("filler-{}", i % 4)),
            mem("fix", &format!("deploy step {i} finished cleanly"), &["ops"]),
        )
        .await;
    }
    let r = recall(&h, "the zeppelin deploy is broken again", &[]).await;
    assert_eq!(
        ids(&r).first(),
        Some(&old.memory_id),
        "the rare word's old memory first"
    );
    let r = recall(&h, "", &["zeppelin-team", "ops"]).await;
    assert_eq!(ids(&r).first(), Some(&old.memory_id), "the rare tag's old memory first");
    let r = recall(&h, "deploy step finished", &[]).await;
    assert_eq!(r.memories.len(), 10);
    assert!(r.memories.iter().all(|m| m.memory_id != old.memory_id));
    let r = run::<ops::Recall>(
        &h,
        &agent("reader"),
        RecallRequest {
            task_description: "deploy".into(),
            author: Some("old-hand".into()),
            limit: Some(10),
            ..Default::default()
        },
    )
    .await
    .expect("recall");
    assert_eq!(
        ids(&r),
        vec![old.memory_id.clone()],
        "an author filter reads every match"
    );
}

pub async fn memory_prune_past_retention(b: &dyn Backend) {
    use coord_domain::memory::retention::{PruneMemories, PruneMemoriesRequest};
    use coord_store::OpCtx;
    let h = Harness::new(b).await;
    let (a, boss) = (agent("author"), operator("boss"));
    let old = remember(
        &h,
        &a,
        mem("fix", "the flaky login test needs a fixed clock", &["flaky"]),
    )
    .await;
    let loved = remember(&h, &a, mem("fix", "run migrations before the seed script", &["db"])).await;
    let disliked = remember(&h, &a, mem("fix", "restart the laptop when the build hangs", &["db"])).await;
    for (who, id, useful) in [
        ("c", &loved, true),
        ("d", &loved, true),
        ("e", &loved, false),
        ("c", &disliked, true),
        ("d", &disliked, false),
        ("e", &disliked, false),
    ] {
        vote(&h, who, &id.memory_id, useful).await.expect("vote");
    }
    run::<ops::RecordSkillUse>(
        &h,
        &a,
        RecordSkillUseRequest {
            skill: "bisect the failing commit".into(),
            task_type: "debugging".into(),
            success: true,
        },
    )
    .await
    .expect("skill");
    h.advance(400 * 24 * 60);
    let fresh = remember(&h, &a, mem("fix", "pin the node version in CI", &["db"])).await;
    let prune = |older_than_days: Option<i64>, dry_run: bool| {
        run::<ops::PruneMemories>(
            &h,
            &boss,
            PruneMemoriesRequest {
                older_than_days,
                dry_run: dry_run.then_some(true),
            },
        )
    };

    // A dry run counts: the old and the disliked go, the loved one stays.
    let r = prune(None, true).await.expect("dry run");
    assert_eq!((r.pruned, r.kept_useful, r.more, r.dry_run), (2, 1, false, true));
    assert_eq!(r.cutoff, h.now() - chrono::Duration::days(365));
    assert!(
        ids(&recall(&h, "", &["flaky"]).await).contains(&old.memory_id),
        "nothing went"
    );

    let e = prune(Some(0), false).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("older_than_days"))
    );
    if h.door != crate::Door::Http {
        // (Through HTTP the suite holds an operator key, which administers for anyone.)
        let e = run::<ops::PruneMemories>(&h, &a, PruneMemoriesRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }

    let r = prune(None, false).await.expect("prune");
    assert_eq!((r.pruned, r.kept_useful, r.more, r.dry_run), (2, 1, false, false));
    let left = ids(&recall(&h, "", &["db", "flaky"]).await);
    assert!(
        left.contains(&loved.memory_id) && left.contains(&fresh.memory_id),
        "{left:?}"
    );
    assert!(
        !left.contains(&old.memory_id) && !left.contains(&disliked.memory_id),
        "{left:?}"
    );
    assert!(
        recall(&h, "", &["flaky"]).await.memories.is_empty(),
        "its tags went with it"
    );
    assert!(
        recall(&h, "flaky login clock", &[]).await.memories.is_empty(),
        "and its text"
    );
    let e = vote(&h, "c", &old.memory_id, true).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e:?}");
    let skills = run::<ops::GetSkills>(
        &h,
        &boss,
        GetSkillsRequest {
            task_type: "debugging".into(),
            limit: None,
        },
    )
    .await
    .expect("skills");
    assert_eq!(skills.skills.len(), 1, "skills stay");
    // Again: nothing more past the cutoff; a day's retention spares what was just seen.
    assert_eq!(prune(None, false).await.expect("again").pruned, 0);
    assert_eq!(prune(Some(1), false).await.expect("a day").pruned, 0);

    // More past the cutoff than one prune removes: each removes a batch and says `more`
    // until the last. (The store is called with a batch of 3: the operation's is 1000.)
    for i in 0..3 {
        remember(&h, &a, mem("fix", &format!("batch memory {i}"), &["batch"])).await;
    }
    h.advance(400 * 24 * 60);
    let batch = |dry_run: bool| {
        let ctx = OpCtx::internal(Some(h.now()), boss.for_audit(), "prune_memories", json!({}));
        let p = PruneMemories {
            older_than_days: 365,
            dry_run,
            batch: 3,
        };
        h.store.prune_memories(ctx, p)
    };
    // Past it: the three and `fresh`; `loved` stays on its votes.
    let r = batch(true).await.expect("dry run");
    assert_eq!(
        (r.pruned, r.kept_useful, r.more),
        (4, 1, false),
        "a dry run counts them all"
    );
    let r = batch(false).await.expect("first batch");
    assert_eq!((r.pruned, r.kept_useful, r.more), (3, 1, true));
    let r = batch(false).await.expect("second batch");
    assert_eq!((r.pruned, r.kept_useful, r.more), (1, 1, false));
    let left = ids(&recall(&h, "", &["db", "batch"]).await);
    assert_eq!(left, vec![loved.memory_id.clone()]);
}
