use super::WorkerProfile;
use super::spawn::*;
use crate::ErrorCode;
use crate::profiles::{Profile, builtin};

fn profile(name: &str) -> Profile {
    builtin().profiles.iter().find(|p| p.name == name).unwrap().clone()
}

fn record(tools: &[&str], depth: u32, status: SpawnStatus) -> SpawnedAgent {
    let mut definition = generic_definition(WorkerProfile::Write);
    definition.tools = tools.iter().map(|t| t.to_string()).collect();
    definition.delegates_to = vec!["*".into()];
    let mut r = SpawnedAgent::new("parent-1", "orchestrator", definition, super::Runtime::Claude, "t", "x");
    r.depth = depth;
    r.status = status;
    r.deadline_minutes = 30;
    r
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn admission_limits_depth_running_and_tools() {
    let limits = SpawnLimits {
        depth_limit: 2,
        max_running: 3,
    };
    let running = record(&["Read", "Grep", "Edit"], 1, SpawnStatus::Running);
    let deep = record(&["Read"], 2, SpawnStatus::Running);
    let ended = record(&["Read"], 1, SpawnStatus::Completed);
    let mut silent = record(&["Read"], 1, SpawnStatus::Running);
    silent.definition.delegates_to.clear();
    type Case<'a> = (Option<&'a SpawnedAgent>, &'a [&'a str], i64, Result<u32, ErrorCode>);
    let cases: Vec<Case> = vec![
        (None, &["Read", "Write"], 0, Ok(1)),
        (None, &["Read"], 2, Ok(1)),
        (None, &["Read"], 3, Err(ErrorCode::ResourceLimitExceeded)),
        (Some(&running), &["Read", "Grep"], 0, Ok(2)),
        (
            Some(&running),
            &["Read", "Write"],
            0,
            Err(ErrorCode::OperationNotPermitted),
        ),
        (Some(&deep), &["Read"], 0, Err(ErrorCode::ResourceLimitExceeded)),
        (Some(&ended), &["Read"], 0, Err(ErrorCode::ToolExecutionDenied)),
        (Some(&silent), &["Read"], 0, Err(ErrorCode::ToolExecutionDenied)),
    ];
    for (parent, tools, n, want) in cases {
        let mut child = generic_definition(WorkerProfile::ReadOnly);
        child.tools = strings(tools);
        let got = admit(parent, &child, n, limits).map_err(|e| e.code);
        assert_eq!(got, want, "{tools:?} running {n} parent {:?}", parent.map(|p| p.depth));
    }
}

#[test]
fn a_child_never_holds_more_than_its_parent() {
    let cases = [
        ("local-operator", "worker-write", Ok(())),
        ("local-operator", "worker-read-only", Ok(())),
        ("strands-orchestrator", "worker-design", Ok(())),
        ("strands-orchestrator", "worker-verification", Ok(())),
        (
            "worker-read-only",
            "worker-write",
            Err(ErrorCode::InsufficientTrustLevel),
        ),
        (
            "claude-code-web-reviewer",
            "worker-write",
            Err(ErrorCode::OperationNotPermitted),
        ),
        (
            "least-privilege",
            "worker-read-only",
            Err(ErrorCode::InsufficientTrustLevel),
        ),
    ];
    for (parent, child, want) in cases {
        let got = check_privileges(&profile(parent), &profile(child)).map_err(|e| e.code);
        assert_eq!(got, want, "{parent} → {child}");
    }
}

#[test]
fn deadlines_follow_the_request_capped_by_the_profile() {
    let l = SpawnLimits::default();
    let parent = profile("local-operator");
    let cases = [
        ("worker-read-only", None, 30),
        ("worker-read-only", Some(5), 5),
        ("worker-read-only", Some(600), 30),
        ("worker-write", None, 120),
    ];
    for (child, asked, want) in cases {
        let a = admit_spawn(
            &parent,
            &profile(child),
            None,
            &generic_definition(WorkerProfile::ReadOnly),
            0,
            l,
            asked,
        )
        .unwrap();
        assert_eq!(
            (a.deadline_minutes, a.lease_minutes),
            (want, want + 5),
            "{child} {asked:?}"
        );
    }
    let mut unlimited = profile("worker-write");
    unlimited.resource_limits.max_execution_time = Default::default();
    let a = admit_spawn(
        &parent,
        &unlimited,
        None,
        &generic_definition(WorkerProfile::ReadOnly),
        0,
        l,
        None,
    )
    .unwrap();
    assert_eq!(a.deadline_minutes, DEFAULT_DEADLINE_MINUTES);
}

#[test]
fn activation_needs_an_active_run_and_a_declared_tool() {
    let active = record(&["Read", "Grep"], 1, SpawnStatus::Running);
    let mut stopping = active.clone();
    stopping.stop_requested = true;
    let cases: [(&SpawnedAgent, Option<&str>, bool); 7] = [
        (&active, None, true),
        (&active, Some("Read"), true),
        (&active, Some("mcp__coord__acquire_lock"), true),
        (&active, Some("Write"), false),
        (&active, Some("Bash"), false),
        (&stopping, Some("Read"), false),
        (&record(&["Read"], 1, SpawnStatus::Lost), None, false),
    ];
    for (agent, tool, ok) in cases {
        let got = check_activation(agent, tool);
        assert_eq!(got.is_ok(), ok, "{tool:?} {:?}", agent.status);
        if let Err(e) = got {
            assert_eq!(e.code, ErrorCode::ToolExecutionDenied);
            assert!(e.details.contains_key("reason"));
        }
    }
}

#[test]
fn a_record_moves_forward_only() {
    let now = chrono::Utc::now();
    let r = record(&["Read"], 1, SpawnStatus::Starting);
    let started = SpawnUpdate::Started {
        host: "h".into(),
        pid: 7,
        run_dir: "/r".into(),
        key_id: "k".into(),
        worktree: None,
    };
    let launched = SpawnUpdate::Launched {
        host: "h".into(),
        pid: 7,
        pid_started: Some(99),
    };
    let r = r.apply(&launched, now).unwrap();
    assert_eq!(
        (r.status, r.pid, r.pid_started),
        (SpawnStatus::Starting, Some(7), Some(99))
    );
    // Stopped before its supervisor started it: it never starts.
    let stopped = r.apply(&SpawnUpdate::StopRequested { reason: None }, now).unwrap();
    assert_eq!(
        stopped.apply(&started, now).unwrap_err().code,
        ErrorCode::AgentNotRunning
    );
    let r = r.apply(&started, now).unwrap();
    assert_eq!((r.status, r.pid), (SpawnStatus::Running, Some(7)));
    // One supervisor, once.
    assert_eq!(r.apply(&started, now).unwrap_err().code, ErrorCode::AgentNotRunning);
    assert_eq!(r.apply(&launched, now).unwrap_err().code, ErrorCode::AgentNotRunning);
    // Overdue only past its deadline and the grace, and only while active.
    let due = r.expires_at();
    assert_eq!(due, r.created_at + chrono::Duration::minutes(30 + REPORT_GRACE_MINUTES));
    assert!(!r.overdue(due) && r.overdue(due + chrono::Duration::seconds(1)));
    let r = r.apply(&SpawnUpdate::StopRequested { reason: None }, now).unwrap();
    assert!(r.stop_requested && r.status.is_active());
    let still_running = SpawnUpdate::Ended {
        status: SpawnStatus::Running,
        exit_code: None,
        result: None,
        error: None,
        permission_denials: vec![],
        worktree: None,
    };
    assert_eq!(
        r.apply(&still_running, now).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let done = SpawnUpdate::Ended {
        status: SpawnStatus::Completed,
        exit_code: Some(0),
        result: Some("ok".into()),
        error: None,
        permission_denials: vec![],
        worktree: None,
    };
    let r = r.apply(&done, now).unwrap();
    assert_eq!((r.status, r.result.as_deref()), (SpawnStatus::Completed, Some("ok")));
    assert_eq!(r.apply(&started, now).unwrap_err().code, ErrorCode::AgentNotRunning);
    // Every status reads back.
    for s in [
        "starting",
        "running",
        "completed",
        "failed",
        "stopped",
        "timed_out",
        "lost",
    ] {
        assert_eq!(SpawnStatus::parse(s).map(|x| x.as_str()), Some(s));
    }
}

#[test]
fn requests_are_checked_on_their_own() {
    let req = |agent: Option<&str>, profile: Option<&str>, task: &str, runtime: Option<&str>, timeout: Option<i64>| {
        SpawnAgentRequest {
            agent: agent.map(String::from),
            profile: profile.map(String::from),
            task: task.into(),
            runtime: runtime.map(String::from),
            task_type: None,
            timeout_minutes: timeout,
            isolation: None,
            keep_worktree: None,
        }
    };
    let long = "x".repeat(MAX_TASK_BYTES + 1);
    let bad = [
        (req(Some("a"), None, "", None, None), "task"),
        (req(Some("a"), None, &long, None, None), "task"),
        (req(Some("a"), None, "t", Some("vim"), None), "runtime"),
        (req(Some("a"), None, "t", None, Some(0)), "timeout_minutes"),
        (req(Some("a/../b"), None, "t", None, None), "agent"),
        (req(None, None, "t", None, None), "agent"),
        (req(Some("a"), Some("write"), "t", None, None), "profile"),
        (req(None, Some("admin"), "t", None, None), "profile"),
        (
            SpawnAgentRequest {
                keep_worktree: Some(true),
                ..req(Some("a"), None, "t", None, None)
            },
            "keep_worktree",
        ),
        (
            SpawnAgentRequest {
                keep_worktree: Some(true),
                isolation: Some(super::isolation::Isolation::Shared),
                ..req(Some("a"), None, "t", None, None)
            },
            "keep_worktree",
        ),
    ];
    for (r, field) in bad {
        let e = validate_request(&r).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some(field)),
            "{r:?}"
        );
    }
    let (runtime, task_type, which) =
        validate_request(&req(None, Some("read-only"), "t", Some("codex"), Some(5))).unwrap();
    assert_eq!(
        (runtime, task_type.as_str()),
        (Some(super::Runtime::Codex), DEFAULT_TASK_TYPE)
    );
    assert_eq!(which, Err(WorkerProfile::ReadOnly));
    let d = generic_definition(WorkerProfile::Design);
    assert_eq!((d.name.as_str(), d.tools.len()), ("design-worker", 6));
    // A definition round-trips through the record (stored as JSON).
    let d = named("r", &[]);
    let back: super::AgentDefinition = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
    assert_eq!(back, d);
    assert_eq!(tail("héllo", 4), "llo");
}

/// A read-only definition of this name, delegating to these agents (what a
/// `.claude/agents/<name>.md` with `tools: Read` and `delegatesTo:` reads as).
fn named(name: &str, delegates_to: &[&str]) -> super::AgentDefinition {
    let mut d = generic_definition(WorkerProfile::ReadOnly);
    d.name = name.into();
    d.tools = vec!["Read".into()];
    d.prompt = "hi".into();
    d.delegates_to = delegates_to.iter().map(|s| s.to_string()).collect();
    d
}

#[test]
fn a_spawned_agent_delegates_only_as_its_definition_says() {
    let lead = named("lead", &["researcher"]);
    let researcher = named("researcher", &[]);
    let mut child = researcher.clone();
    child.name = "helper".into();
    child.parent = Some("researcher".into());
    let mut parent_of_helper = researcher.clone();
    parent_of_helper.children = vec!["helper".into()];
    let cases = [
        (&lead, &researcher, true, "named in delegatesTo"),
        (&researcher, &lead, false, "delegates to nobody"),
        (&lead, &child, false, "not named"),
        (
            &researcher,
            &child,
            false,
            "a parent_id alone proves nothing (it may be planted later)",
        ),
        (&parent_of_helper, &child, true, "its child (the registry's children)"),
    ];
    for (parent, child, want, why) in cases {
        assert_eq!(
            parent.may_delegate_to(child),
            want,
            "{} → {}: {why}",
            parent.name,
            child.name
        );
    }
    // The grant: a worker profile without spawn_agent gets it only when the definition
    // delegates at all, and never past a block.
    let worker = profile("worker-read-only");
    let spawned =
        |d: &super::AgentDefinition| SpawnedAgent::new("x-1", "p", d.clone(), super::Runtime::Claude, "t", "task");
    let need = crate::profiles::Need::new(crate::profiles::Permission::SpawnAgent, 0);
    assert!(
        crate::profiles::decide(
            &delegation_grant(worker.clone(), &spawned(&lead)),
            "delegate_task",
            need
        )
        .is_ok()
    );
    assert!(
        crate::profiles::decide(
            &delegation_grant(worker.clone(), &spawned(&parent_of_helper)),
            "delegate_task",
            need
        )
        .is_ok()
    );
    assert!(
        crate::profiles::decide(
            &delegation_grant(worker.clone(), &spawned(&researcher)),
            "delegate_task",
            need
        )
        .is_err()
    );
    let mut blocked = worker;
    blocked.blocked_operations.push(crate::profiles::Permission::SpawnAgent);
    assert!(crate::profiles::decide(&delegation_grant(blocked, &spawned(&lead)), "delegate_task", need).is_err());
}
