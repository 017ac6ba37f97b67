//! Requirements "Agent Sessions", "Agent Discovery", "Heartbeat and Dead Agent Detection".

use crate::{Backend, Harness, agent};
use coord_domain::ErrorCode;
use coord_domain::locks::{CheckLocksRequest, LockAction};
use coord_domain::queue::{REASON_MAX_ATTEMPTS, TaskStatus};
use coord_domain::sessions::{
    AgentStatus, CleanupDeadAgentsRequest, DiscoverAgentsRequest, HeartbeatRequest, RegisterSessionRequest,
};
use coord_service::CoordinationExt as _;

fn caps(c: &[&str]) -> Option<Vec<String>> {
    Some(c.iter().map(|s| s.to_string()).collect())
}

pub async fn sessions_register_and_discover(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let ra = h
        .coord
        .register_session(
            &a,
            RegisterSessionRequest {
                capabilities: caps(&["coding", "testing"]),
                current_task: Some("locks".into()),
                team: None,
                worktree: Some("/src/app-wt2".into()),
                branch: Some("feature/login".into()),
            },
        )
        .await
        .unwrap();
    assert!(ra.success);
    h.advance(1);
    h.coord
        .register_session(
            &bb,
            RegisterSessionRequest {
                capabilities: caps(&["review"]),
                current_task: None,
                team: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let all = h
        .coord
        .discover_agents(&a, DiscoverAgentsRequest::default())
        .await
        .unwrap();
    let ids: Vec<_> = all.agents.iter().map(|x| x.agent_id.as_str()).collect();
    assert_eq!(ids, ["agent-b", "agent-a"], "most recently seen first");
    let found_a = &all.agents[1];
    assert_eq!(found_a.session_id.as_deref(), Some(ra.session_id.as_str()));
    assert_eq!(found_a.capabilities, ["coding", "testing"]);
    assert_eq!(found_a.status, AgentStatus::Active);
    assert_eq!(found_a.current_task.as_deref(), Some("locks"));
    // Where it works: its worktree and branch (docs/worktrees.md).
    assert_eq!(
        (found_a.worktree.as_deref(), found_a.branch.as_deref()),
        (Some("/src/app-wt2"), Some("feature/login"))
    );
    assert_eq!(found_a.agent_type, crate::harness::AGENT_TYPE);
    assert_eq!(found_a.last_heartbeat, h.now() - chrono::Duration::minutes(1));
    let v = serde_json::to_value(found_a).unwrap();
    for key in [
        "agent_id",
        "agent_type",
        "capabilities",
        "status",
        "current_task",
        "last_heartbeat",
    ] {
        assert!(v.get(key).is_some(), "discover_agents entries carry {key}");
    }

    let testing = h
        .coord
        .discover_agents(
            &bb,
            DiscoverAgentsRequest {
                capability: Some("testing".into()),
                status: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(testing.agents.len(), 1);
    assert_eq!(testing.agents[0].agent_id, "agent-a");
    let none = h
        .coord
        .discover_agents(
            &bb,
            DiscoverAgentsRequest {
                capability: Some("deploying".into()),
                status: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&none).unwrap(), serde_json::json!({"agents": []}));
    let idle = h
        .coord
        .discover_agents(
            &bb,
            DiscoverAgentsRequest {
                capability: None,
                status: Some(AgentStatus::Idle),
            },
        )
        .await
        .unwrap();
    assert!(idle.agents.is_empty());

    // Registering again starts a new session.
    let again = h
        .coord
        .register_session(&a, RegisterSessionRequest::default())
        .await
        .unwrap();
    assert_ne!(again.session_id, ra.session_id);
    let e = h
        .coord
        .register_session(
            &a,
            RegisterSessionRequest {
                capabilities: caps(&[""]),
                current_task: None,
                team: None,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("capabilities"))
    );
}

pub async fn sessions_heartbeat(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    // A heartbeat without a session starts one.
    let first = h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
    assert!(first.success);
    h.advance(5);
    let second = h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
    assert_eq!(second.session_id, first.session_id, "heartbeats keep the session");
    let seen = h
        .coord
        .discover_agents(&a, DiscoverAgentsRequest::default())
        .await
        .unwrap();
    assert_eq!(seen.agents[0].last_heartbeat, h.now());
    assert_eq!(seen.agents[0].started_at, h.now() - chrono::Duration::minutes(5));

    let reg = h
        .coord
        .register_session(
            &a,
            RegisterSessionRequest {
                capabilities: Some(vec!["x".into()]),
                current_task: None,
                team: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let hb = h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
    assert_eq!(hb.session_id, reg.session_id);
}

pub async fn sessions_cleanup_frees_dead_agents_only(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (dead, live, boss) = (agent("dead"), agent("live"), agent("boss"));
    for who in [&dead, &live] {
        h.coord
            .register_session(who, RegisterSessionRequest::default())
            .await
            .unwrap();
    }
    h.lock(&dead, "dead.rs", None).await;
    h.lock(&live, "live.rs", None).await;
    let dead_task = h.submit(&boss, "t", 1, &[]).await;
    let live_task = h.submit(&boss, "t", 2, &[]).await;
    assert_eq!(h.claimed_id(&dead).await, dead_task);
    assert_eq!(h.claimed_id(&live).await, live_task);

    h.advance(10);
    h.coord.heartbeat(&live, HeartbeatRequest {}).await.unwrap();
    let early = h
        .coord
        .cleanup_dead_agents(&boss, CleanupDeadAgentsRequest::default())
        .await
        .unwrap();
    assert_eq!(
        early.agents_cleaned, 0,
        "10 minutes is within the default 15-minute threshold"
    );

    h.advance(6);
    let r = h
        .coord
        .cleanup_dead_agents(&boss, CleanupDeadAgentsRequest::default())
        .await
        .unwrap();
    assert!(r.success);
    assert_eq!(r.agents_cleaned, 1);
    assert_eq!(r.agents, ["dead"]);
    assert_eq!(r.locks_released, 1);
    assert_eq!((r.tasks_requeued, r.tasks_failed), (1, 0));

    let agents = h
        .coord
        .discover_agents(&boss, DiscoverAgentsRequest::default())
        .await
        .unwrap();
    let status = |id: &str| agents.agents.iter().find(|x| x.agent_id == id).unwrap().status;
    assert_eq!(status("dead"), AgentStatus::Disconnected);
    assert_eq!(status("live"), AgentStatus::Active);
    let locks = h.coord.check_locks(&boss, CheckLocksRequest::default()).await.unwrap();
    let held: Vec<_> = locks.locks.iter().map(|l| l.file_path.as_str()).collect();
    assert_eq!(held, ["live.rs"]);
    assert_eq!(h.lock(&boss, "dead.rs", None).await.action, LockAction::Acquired);
    assert_eq!(h.task(&dead_task).await.status, TaskStatus::Pending);
    assert_eq!(h.task(&live_task).await.claimed_by.as_deref(), Some("live"));
    assert_eq!(
        h.claimed_id(&boss).await,
        dead_task,
        "the dead agent's task is claimable again"
    );

    let again = h
        .coord
        .cleanup_dead_agents(&boss, CleanupDeadAgentsRequest::default())
        .await
        .unwrap();
    assert_eq!(again.agents_cleaned, 0, "disconnected agents are not cleaned twice");
    let custom = h
        .coord
        .cleanup_dead_agents(
            &boss,
            CleanupDeadAgentsRequest {
                stale_threshold_minutes: Some(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(custom.agents, ["live"], "live last beat 6 minutes ago");
    let e = h
        .coord
        .cleanup_dead_agents(
            &boss,
            CleanupDeadAgentsRequest {
                stale_threshold_minutes: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("stale_threshold_minutes"));

    // A cleaned-up agent that turns out to be alive starts a new session by heartbeat.
    let back = h.coord.heartbeat(&dead, HeartbeatRequest {}).await.unwrap();
    let seen = h
        .coord
        .discover_agents(
            &boss,
            DiscoverAgentsRequest {
                capability: None,
                status: Some(AgentStatus::Active),
            },
        )
        .await
        .unwrap();
    let revived = seen.agents.iter().find(|x| x.agent_id == "dead").unwrap();
    assert_eq!(revived.session_id, Some(back.session_id));
    assert_eq!(revived.started_at, h.now());
}

pub async fn sessions_cleanup_fails_tasks_out_of_attempts(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.max_attempts = 1).await;
    let (dead, boss) = (agent("dead"), agent("boss"));
    h.coord
        .register_session(&dead, RegisterSessionRequest::default())
        .await
        .unwrap();
    let id = h.submit(&boss, "t", 1, &[]).await;
    h.claimed_id(&dead).await;
    h.advance(20);
    let r = h
        .coord
        .cleanup_dead_agents(&boss, CleanupDeadAgentsRequest::default())
        .await
        .unwrap();
    assert_eq!((r.tasks_requeued, r.tasks_failed), (0, 1));
    let t = h.task(&id).await;
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.failure_reason.as_deref(), Some(REASON_MAX_ATTEMPTS));
}

pub async fn sessions_cleanup_also_sweeps_expired_rows(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    h.lock(&a, "short.rs", Some(1)).await;
    h.advance(2);
    let r = h
        .coord
        .cleanup_dead_agents(&a, CleanupDeadAgentsRequest::default())
        .await
        .unwrap();
    assert_eq!(r.agents_cleaned, 0);
    let after = h.sweep().await.unwrap();
    assert_eq!(
        after.expired_locks_deleted, 0,
        "cleanup already removed the expired row"
    );
}

pub async fn sessions_mark_idle_keeps_locks(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let e = h.coord.mark_idle(&a).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "no session yet");
    let s = h
        .coord
        .register_session(&a, RegisterSessionRequest::default())
        .await
        .unwrap();
    h.lock(&a, "kept.rs", None).await;
    let idle = h.coord.mark_idle(&a).await.unwrap();
    assert_eq!(idle.session_id, s.session_id);
    let seen = h
        .coord
        .discover_agents(
            &a,
            DiscoverAgentsRequest {
                capability: None,
                status: Some(AgentStatus::Idle),
            },
        )
        .await
        .unwrap();
    assert_eq!(seen.agents.len(), 1);
    assert_eq!(
        h.lock(&agent("other"), "kept.rs", None).await.action,
        LockAction::Blocked,
        "locks stay"
    );
    // A heartbeat brings the same session back to active.
    let back = h.coord.heartbeat(&a, HeartbeatRequest {}).await.unwrap();
    assert_eq!(back.session_id, s.session_id);
}

/// `end_session`: one transaction releases the caller's locks, writes the final handoff
/// completed with the released files and the still-claimed tasks, and marks it idle;
/// other agents' locks stay; without a session it still releases and writes.
pub async fn sessions_end_session_releases_hands_off_and_idles(b: &dyn Backend) {
    use coord_domain::handoffs::{ReadHandoffRequest, WriteHandoffRequest};
    use coord_domain::queue::{GetWorkRequest, SubmitWorkRequest};
    use coord_domain::sessions::EndSessionRequest;
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    h.coord.register_session(&a, Default::default()).await.unwrap();
    h.lock(&a, "src/a.rs", None).await;
    h.lock(&a, "src/b.rs", None).await;
    h.lock(&bb, "src/theirs.rs", None).await;
    h.coord
        .submit_work(
            &bb,
            SubmitWorkRequest {
                task_type: "parse".into(),
                task_description: "finish the parser".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    h.coord.get_work(&a, GetWorkRequest::default()).await.unwrap();
    let request = EndSessionRequest {
        release_locks: None,
        handoff: Some(WriteHandoffRequest {
            summary: "stopping for today".into(),
            relevant_files: Some(vec!["docs/plan.md".into()]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let ended = h.coord.end_session(&a, request.clone()).await.unwrap();
    assert_eq!(ended.released, ["src/a.rs", "src/b.rs"]);
    assert_eq!(ended.status, Some(AgentStatus::Idle));
    let handoff = h
        .coord
        .read_handoff(&a, ReadHandoffRequest::default())
        .await
        .unwrap()
        .handoffs;
    let handoff = &handoff[0];
    assert_eq!(Some(&handoff.id), ended.handoff_id.as_ref());
    assert_eq!(handoff.relevant_files, ["docs/plan.md", "src/a.rs", "src/b.rs"]);
    assert!(handoff.in_progress[0].contains("finish the parser"), "{handoff:?}");
    let left = h
        .coord
        .check_locks(&bb, CheckLocksRequest::default())
        .await
        .unwrap()
        .locks;
    assert_eq!(
        left.iter().map(|l| l.file_path.as_str()).collect::<Vec<_>>(),
        ["src/theirs.rs"]
    );
    // Without a session (never registered): nothing to idle, no error.
    let none = h
        .coord
        .end_session(&agent("agent-c"), EndSessionRequest::default())
        .await
        .unwrap();
    assert_eq!((none.released.len(), none.handoff_id, none.status), (0, None, None));
    // Keeping locks (a connection closing): only the status changes.
    h.lock(&bb, "src/kept.rs", None).await;
    h.coord.register_session(&bb, Default::default()).await.unwrap();
    let kept = EndSessionRequest {
        release_locks: Some(false),
        ..Default::default()
    };
    assert!(h.coord.end_session(&bb, kept).await.unwrap().released.is_empty());
    assert_eq!(
        h.coord
            .check_locks(&bb, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .len(),
        2
    );
    // Requeueing gives claimed tasks back, each attempt counted; `if_session` ends only
    // the session it names (a reconnect's new session is left alone).
    let c = agent("agent-d");
    let first = h
        .coord
        .register_session(&c, Default::default())
        .await
        .unwrap()
        .session_id;
    h.coord
        .submit_work(
            &bb,
            SubmitWorkRequest {
                task_type: "parse".into(),
                task_description: "second".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let task = h
        .coord
        .get_work(&c, GetWorkRequest::default())
        .await
        .unwrap()
        .task_id
        .unwrap();
    let _reconnected = h.coord.register_session(&c, Default::default()).await.unwrap();
    let stale = EndSessionRequest {
        requeue_tasks: Some(true),
        if_session: Some(first),
        ..Default::default()
    };
    let skipped = h.coord.end_session(&c, stale).await.unwrap();
    assert!(
        !skipped.ended && skipped.released.is_empty() && skipped.tasks_requeued == 0,
        "{skipped:?}"
    );
    let now_current = EndSessionRequest {
        requeue_tasks: Some(true),
        ..Default::default()
    };
    let done = h.coord.end_session(&c, now_current).await.unwrap();
    assert_eq!((done.ended, done.tasks_requeued, done.tasks_failed), (true, 1, 0));
    let back = h
        .coord
        .get_task(&bb, coord_domain::queue::GetTaskRequest { task_id: task })
        .await
        .unwrap()
        .task;
    assert_eq!(
        (back.status, back.attempts, back.claimed_by),
        (TaskStatus::Pending, 1, None)
    );
    // A bad handoff refuses the whole operation: nothing released.
    let bad = EndSessionRequest {
        release_locks: Some(true),
        handoff: Some(WriteHandoffRequest::default()),
        ..Default::default()
    };
    let e = h.coord.end_session(&bb, bad).await.unwrap_err();
    assert_eq!(e.field.as_deref(), Some("summary"), "{e:?}");
    assert_eq!(
        h.coord
            .check_locks(&bb, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks
            .len(),
        2
    );
}

/// Cleanup by session id (what a reaper asks once the process serving a session is
/// gone): that session's agent is disconnected at once, whatever its heartbeat; a session
/// the agent has replaced by registering again is left alone; bad ids are refused.
pub async fn sessions_cleanup_by_session_id(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (gone, back, boss) = (agent("gone"), agent("back"), agent("boss"));
    let gone_session = h
        .coord
        .register_session(&gone, RegisterSessionRequest::default())
        .await
        .unwrap()
        .session_id;
    h.lock(&gone, "src/g.rs", None).await;
    h.submit(&boss, "t", 5, &[]).await;
    let task = h.claimed_id(&gone).await;
    let old = h
        .coord
        .register_session(&back, RegisterSessionRequest::default())
        .await
        .unwrap()
        .session_id;
    h.lock(&back, "src/b.rs", None).await;
    // `back` reconnected: a new session replaces the one the reaper saw die.
    h.coord
        .register_session(&back, RegisterSessionRequest::default())
        .await
        .unwrap();
    let req = CleanupDeadAgentsRequest {
        sessions: Some(vec![gone_session.to_uppercase(), old]),
        ..Default::default()
    };
    let r = h.coord.cleanup_dead_agents(&boss, req).await.unwrap();
    assert_eq!(r.agents, ["gone"]);
    assert_eq!((r.locks_released, r.tasks_requeued), (1, 1));
    assert_eq!(h.task(&task).await.status, coord_domain::queue::TaskStatus::Pending);
    let locks = h.coord.check_locks(&boss, Default::default()).await.unwrap().locks;
    assert_eq!(locks.iter().map(|l| l.locked_by.as_str()).collect::<Vec<_>>(), ["back"]);
    for bad in [
        vec!["not-a-uuid".to_string()],
        vec!["7b7c2a4e-0000-4000-8000-000000000001".to_string(); 1001],
    ] {
        let e = h
            .coord
            .cleanup_dead_agents(
                &boss,
                CleanupDeadAgentsRequest {
                    sessions: Some(bad),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sessions"));
    }
}

/// The security review's eviction (issue 57, finding 2): an agent's key listed another
/// agent's live session in a cleanup, disconnected it, took its lock and had its task
/// requeued. A key bound to one agent sees no other agent's session id, may not list a
/// live session of another agent (`session_alive`, audited, nothing changed) nor call a
/// session stale sooner than 15 minutes; what is really stale it still cleans up, and its
/// own session it may always end. An operator may do all of it.
pub async fn sessions_cleanup_by_an_agent_key_spares_live_sessions(b: &dyn Backend) {
    use coord_domain::access::{Credential, Principal};
    use coord_service::ops::sessions::{CleanupDeadAgents, DiscoverAgents};
    let h = Harness::new(b).await;
    let (alice, mallory, boss) = (agent("alice"), agent("mallory"), agent("boss"));
    let as_key = Principal::new(mallory.clone(), Credential::Bound);
    let alice_session = h
        .coord
        .register_session(&alice, RegisterSessionRequest::default())
        .await
        .unwrap()
        .session_id;
    h.coord
        .register_session(&mallory, RegisterSessionRequest::default())
        .await
        .unwrap();
    h.lock(&alice, "src/a.rs", Some(240)).await;
    h.submit(&boss, "t", 5, &[]).await;
    let task = h.claimed_id(&alice).await;

    let seen = coord_service::call::<DiscoverAgents, _>(&h.local, &as_key, DiscoverAgentsRequest::default())
        .await
        .unwrap();
    let session_of = |name: &str| {
        seen.agents
            .iter()
            .find(|a| a.agent_id == name)
            .unwrap()
            .session_id
            .clone()
    };
    assert_eq!(
        session_of("alice"),
        None,
        "another agent's session id is not shown to a key"
    );
    assert!(session_of("mallory").is_some(), "its own is");
    let listed = |sessions: Vec<String>, minutes: Option<i64>| CleanupDeadAgentsRequest {
        stale_threshold_minutes: minutes,
        sessions: Some(sessions),
    };
    let e = coord_service::call::<CleanupDeadAgents, _>(&h.local, &as_key, listed(vec![alice_session.clone()], None))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SessionAlive, "{e:?}");
    let e = coord_service::call::<CleanupDeadAgents, _>(&h.local, &as_key, listed(vec![], Some(1)))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::Forbidden, Some("stale_threshold_minutes"))
    );
    // Nothing changed: alice keeps her lock and her task; both refusals are audited.
    let locks = h
        .coord
        .check_locks(&boss, CheckLocksRequest::default())
        .await
        .unwrap()
        .locks;
    assert_eq!(
        locks.iter().map(|l| l.locked_by.as_str()).collect::<Vec<_>>(),
        ["alice"]
    );
    assert_eq!(h.task(&task).await.status, TaskStatus::Claimed);
    let refused = h.audit_rows("cleanup_dead_agents").await;
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|r| !r.success && r.agent_id == "mallory"));

    // Really stale: the key cleans it up, naming it or not.
    h.advance(16);
    h.coord.heartbeat(&mallory, HeartbeatRequest::default()).await.unwrap();
    let r = coord_service::call::<CleanupDeadAgents, _>(&h.local, &as_key, listed(vec![alice_session], None))
        .await
        .unwrap();
    assert_eq!(r.agents, ["alice"]);
    assert_eq!((r.locks_released, r.tasks_requeued), (1, 1));

    // An operator may disconnect a live session, and use a short threshold.
    let bob = agent("bob");
    let bob_session = h
        .coord
        .register_session(&bob, RegisterSessionRequest::default())
        .await
        .unwrap()
        .session_id;
    let operator = Principal::new(boss.clone(), Credential::Operator);
    let r = coord_service::call::<CleanupDeadAgents, _>(&h.local, &operator, listed(vec![bob_session], Some(1)))
        .await
        .unwrap();
    assert_eq!(r.agents, ["bob"]);
}

/// An agent type nothing gives a profile is never silently least-privilege: it cannot
/// register (trust 0), and the refusal names its type's problem, the types that have a
/// default profile, and how an operator gives one. A known type registers.
pub async fn sessions_an_unprofiled_agent_type_is_told_why(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let stranger = coord_domain::Caller::new("stranger-1", "mystery_runtime");
    let e = h
        .coord
        .register_session(&stranger, RegisterSessionRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
    for part in ["no default profile", "claude_code", "codex", "coord profile assign"] {
        assert!(e.message.contains(part), "{part}: {e:?}");
    }
    let known = coord_domain::Caller::new("claude-1", "claude_code");
    assert!(
        h.coord
            .register_session(&known, RegisterSessionRequest::default())
            .await
            .unwrap()
            .success
    );
}
