//! Spawned agents (`spawn_agent`, `get_agent_status`, `get_agent_output`, `stop_agent`):
//! registration with its task and profile, the validator's veto, following and stopping,
//! a dead supervisor's agent reclaimed, the running cap, spec 000's activation check.
//!
//! The launcher here starts no process (the real one, `coord agent supervise`, is driven
//! with real agent CLIs by coord-cli's agents_e2e); it reads real definitions with the
//! real parser and plays the supervisor's reports through `record_agent_run`.

use crate::cases::profiles::{give, profile, run};
use crate::{Backend, Harness, agent, operator};
use async_trait::async_trait;
use coord_agents::parse_definition;
use coord_domain::agents::preflight::{LaunchPlanSummary, Validator, Verdict, VerdictKind};
use coord_domain::agents::spawn::{
    AgentOutputRequest, AgentRef, SpawnAgentRequest, SpawnStatus, SpawnUpdate, StopAgentRequest,
};
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::guardrails::CheckGuardrailsRequest;
use coord_domain::profiles::Permission;
use coord_domain::queue::TaskStatus;
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::ops::{audit, guardrails, spawn as ops};
use coord_service::{CoordinationExt, Judgement, Launcher};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nYou review code.\n";
/// Delegates to itself (a delegation loop) and to generic writers.
const LOOPER: &str = "---\nname: looper\ndescription: Delegates\ntools: Read, Grep\ndelegatesTo: [looper, write-worker]\n---\nDelegate.\n";

/// A launcher that starts nothing (see the module's comment).
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) verdict: Mutex<Option<Judgement>>,
    fail_start: Mutex<bool>,
    pub(crate) started: Mutex<Vec<String>>,
    stopped: Mutex<Vec<u32>>,
    dead: Mutex<Vec<u32>>,
}

#[async_trait]
impl Launcher for Recorder {
    fn definition(&self, name: &str) -> CoordResult<AgentDefinition> {
        let text = match name {
            "reviewer" => REVIEWER,
            "looper" => LOOPER,
            other => {
                return Err(CoordError::new(
                    ErrorCode::NotFound,
                    format!("no agent definition named {other:?}"),
                ));
            }
        };
        parse_definition(text).map_err(|e| CoordError::new(ErrorCode::InvalidArgument, format!("{e:?}")))
    }

    fn plan(&self, d: &AgentDefinition, runtime: Runtime, task: &str, policy: &str) -> LaunchPlanSummary {
        LaunchPlanSummary {
            agent: d.name.clone(),
            profile: d.profile.to_string(),
            runtime: runtime.name().into(),
            task: task.into(),
            tools: d.tools.clone(),
            writable: "nothing".into(),
            network_policy: policy.into(),
            bash_commands: vec![],
            system_prompt: d.prompt.clone(),
            model: None,
            model_endpoint: None,
            sandboxed: true,
            tools_enforced: true,
            passed_env: vec![],
            resolve: vec![],
        }
    }

    async fn ready(&self, _: Runtime) -> CoordResult<()> {
        Ok(())
    }

    async fn judge(&self, _: &LaunchPlanSummary) -> CoordResult<Judgement> {
        Ok(self.verdict.lock().unwrap().clone().unwrap_or((
            Validator::Command,
            Some(Verdict {
                verdict: VerdictKind::Valid,
                reasons: vec![],
            }),
            None,
        )))
    }

    async fn start(&self, agent_id: &str) -> CoordResult<u32> {
        if *self.fail_start.lock().unwrap() {
            return Err(CoordError::new(ErrorCode::AgentStartFailed, "no such program"));
        }
        self.started.lock().unwrap().push(agent_id.into());
        Ok(4242)
    }

    fn host(&self) -> String {
        "conformance-host".into()
    }

    fn started(&self, pid: u32) -> Option<u64> {
        (!self.dead.lock().unwrap().contains(&pid)).then_some(1)
    }

    fn signal_stop(&self, pid: u32, _: Option<u64>) -> bool {
        self.stopped.lock().unwrap().push(pid);
        true
    }

    fn output_tail(&self, _: &str, _: usize) -> Option<String> {
        None
    }
}

fn spawn_req(agent: Option<&str>, profile: Option<&str>, task: &str) -> SpawnAgentRequest {
    SpawnAgentRequest {
        agent: agent.map(String::from),
        profile: profile.map(String::from),
        task: task.into(),
        runtime: None,
        task_type: None,
        timeout_minutes: None,
        isolation: None,
        keep_worktree: None,
    }
}

fn output_req(id: &str, wait_seconds: Option<u64>) -> AgentOutputRequest {
    AgentOutputRequest {
        target_agent_id: id.into(),
        wait_seconds,
    }
}

fn target(id: &str) -> AgentRef {
    AgentRef {
        target_agent_id: id.into(),
    }
}

/// What the supervisor reports once it runs the agent.
async fn started(h: &Harness, id: &str, pid: u32) {
    let update = SpawnUpdate::Started {
        host: "conformance-host".into(),
        pid,
        run_dir: format!("/tmp/runs/{id}"),
        key_id: "no-key".into(),
        worktree: None,
    };
    h.local.record_agent_run(id, update).await.unwrap();
}

fn tool_check(tool: &str) -> CheckGuardrailsRequest {
    CheckGuardrailsRequest {
        command: None,
        files: None,
        tool: Some(tool.into()),
        ..Default::default()
    }
}

pub async fn agents_spawn_follow_stop_and_reclaim(b: &dyn Backend) {
    let recorder = Arc::new(Recorder::default());
    let h = Harness::with_launcher(b, recorder.clone(), |c| c.spawn_limits.max_running = 3).await;
    let orchestrator = operator("orchestrator");

    // Spawned: its task claimed by it, its profile assigned, its supervisor started.
    let s = run::<ops::SpawnAgent>(&h, &orchestrator, spawn_req(Some("reviewer"), None, "review src/"))
        .await
        .unwrap();
    assert!(s.success && s.agent_id.starts_with("reviewer-"), "{s:?}");
    assert_eq!(
        (s.status, s.depth, s.validator),
        (SpawnStatus::Starting, 1, Validator::Command)
    );
    assert_eq!(*recorder.started.lock().unwrap(), vec![s.agent_id.clone()]);
    let task = h.task(&s.task_id).await;
    assert_eq!(task.status, TaskStatus::Claimed);
    assert_eq!(task.claimed_by.as_deref(), Some(s.agent_id.as_str()));
    assert_eq!(task.task_description, "review src/");
    let worker = Caller::new(s.agent_id.clone(), "worker");
    let st = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&s.agent_id))
        .await
        .unwrap();
    assert_eq!(
        (st.status, st.task_status),
        (SpawnStatus::Starting, Some(TaskStatus::Claimed))
    );
    assert_eq!(st.deadline_minutes, 30, "worker-read-only's max_execution_time");
    assert_eq!(st.parent_agent_id, "orchestrator");
    // Only its parent, itself or an administrator follows it.
    // (Over HTTP the cases hold an operator key, which administers.)
    if h.door != crate::Door::Http {
        let e = run::<ops::GetAgentStatus>(&h, &agent("stranger"), target(&s.agent_id))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden, "{e:?}");
    }
    run::<ops::GetAgentStatus>(&h, &worker, target(&s.agent_id))
        .await
        .unwrap();
    // Listing: one's own children; an administrator everyone's.
    let mine = run::<ops::ListSpawnedAgents>(&h, &orchestrator, Default::default())
        .await
        .unwrap();
    assert_eq!(mine.agents.len(), 1);
    assert_eq!(mine.agents[0].agent_id, s.agent_id);
    if h.door != crate::Door::Http {
        let theirs = run::<ops::ListSpawnedAgents>(&h, &agent("stranger"), Default::default())
            .await
            .unwrap();
        assert!(theirs.agents.is_empty(), "{theirs:?}");
    }
    let e = run::<ops::ListSpawnedAgents>(
        &h,
        &orchestrator,
        coord_domain::agents::spawn::ListSpawnedAgentsRequest {
            active_only: None,
            limit: Some(0),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("limit"))
    );

    // Spec 000's activation check: only its declared tools.
    started(&h, &s.agent_id, 4242).await;
    run::<guardrails::CheckGuardrails>(&h, &worker, tool_check("Read"))
        .await
        .unwrap();
    run::<guardrails::CheckGuardrails>(&h, &worker, tool_check("mcp__coord__acquire_lock"))
        .await
        .unwrap();
    let e = run::<guardrails::CheckGuardrails>(&h, &worker, tool_check("Write"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolExecutionDenied, "{e:?}");
    assert_eq!(e.details.get("tool").and_then(|v| v.as_str()), Some("Write"));

    // Stopped: its supervisor is signalled; until it reports, every tool is refused.
    let e = run::<ops::StopAgent>(
        &h,
        &agent("stranger"),
        StopAgentRequest {
            target_agent_id: s.agent_id.clone(),
            reason: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted, "needs spawn_agent: {e:?}");
    let stop = StopAgentRequest {
        target_agent_id: s.agent_id.clone(),
        reason: Some("enough".into()),
    };
    let r = run::<ops::StopAgent>(&h, &orchestrator, stop.clone()).await.unwrap();
    assert!(r.stopping);
    assert_eq!(recorder.stopped.lock().unwrap().as_slice(), [4242]);
    let e = run::<guardrails::CheckGuardrails>(&h, &worker, tool_check("Read"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolExecutionDenied, "{e:?}");
    let ended = SpawnUpdate::Ended {
        status: SpawnStatus::Stopped,
        exit_code: Some(143),
        result: None,
        error: Some("stopped".into()),
        permission_denials: vec![],
        worktree: None,
    };
    h.local.record_agent_run(&s.agent_id, ended.clone()).await.unwrap();
    let e = h.local.record_agent_run(&s.agent_id, ended).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::AgentNotRunning, "an ended run stays as it ended");
    let r = run::<ops::StopAgent>(&h, &orchestrator, stop).await.unwrap();
    assert_eq!((r.stopping, r.status), (false, SpawnStatus::Stopped));
    let active = coord_domain::agents::spawn::ListSpawnedAgentsRequest {
        active_only: Some(true),
        limit: None,
    };
    let live = run::<ops::ListSpawnedAgents>(&h, &orchestrator, active).await.unwrap();
    assert!(live.agents.is_empty(), "an ended agent is not active: {live:?}");
    let out = run::<ops::GetAgentOutput>(&h, &orchestrator, output_req(&s.agent_id, Some(300)))
        .await
        .unwrap();
    assert_eq!(
        (out.status, out.result.as_deref()),
        (SpawnStatus::Stopped, None),
        "an ended run is answered at once"
    );
    let e = run::<ops::GetAgentOutput>(&h, &orchestrator, output_req(&s.agent_id, Some(301)))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("wait_seconds"))
    );

    // Waiting for the answer: the supervisor (another process, played here) reports it
    // while get_agent_output waits.
    let waited = run::<ops::SpawnAgent>(&h, &orchestrator, spawn_req(Some("reviewer"), None, "answer me"))
        .await
        .unwrap();
    started(&h, &waited.agent_id, 4242).await;
    let supervisor = h.local.clone();
    let id = waited.agent_id.clone();
    let report = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        let done = SpawnUpdate::Ended {
            status: SpawnStatus::Completed,
            exit_code: Some(0),
            result: Some("42".into()),
            error: None,
            permission_denials: vec![],
            worktree: None,
        };
        supervisor.record_agent_run(&id, done).await.unwrap();
    });
    let out = run::<ops::GetAgentOutput>(&h, &orchestrator, output_req(&waited.agent_id, Some(60)))
        .await
        .unwrap();
    report.await.unwrap();
    assert_eq!(
        (out.status, out.result.as_deref()),
        (SpawnStatus::Completed, Some("42"))
    );

    // A generic worker of a profile; its supervisor dies: reclaimed on the next look.
    let w = run::<ops::SpawnAgent>(&h, &orchestrator, spawn_req(None, Some("write"), "fix the build"))
        .await
        .unwrap();
    assert!(w.agent_id.starts_with("write-worker-"), "{w:?}");
    started(&h, &w.agent_id, 777).await;
    let writer = Caller::new(w.agent_id.clone(), "worker");
    assert!(h.lock(&writer, "src/lib.rs", None).await.success);
    recorder.dead.lock().unwrap().push(777);
    let st = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&w.agent_id))
        .await
        .unwrap();
    assert_eq!(st.status, SpawnStatus::Lost, "{st:?}");
    assert_eq!(
        st.task_status,
        Some(TaskStatus::Pending),
        "its task is back in the queue"
    );
    assert!(
        h.lock(&agent("someone"), "src/lib.rs", None).await.success,
        "its lock was released"
    );

    // The running cap (3 here), then bad requests, a veto, a start that fails.
    for i in 0..3 {
        run::<ops::SpawnAgent>(
            &h,
            &orchestrator,
            spawn_req(Some("reviewer"), None, &format!("task {i}")),
        )
        .await
        .unwrap();
    }
    let e = run::<ops::SpawnAgent>(&h, &orchestrator, spawn_req(Some("reviewer"), None, "one more"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded, "{e:?}");
    assert_eq!(
        e.details.get("resource").and_then(|v| v.as_str()),
        Some("max_running_agents")
    );
    // Supervisors that never report: past deadline and grace they stop counting, and the
    // next look reclaims them (whatever machine they ran on).
    let third = recorder.started.lock().unwrap()[3].clone();
    let stuck = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&third))
        .await
        .unwrap();
    assert_eq!(stuck.status, SpawnStatus::Starting);
    h.advance(stuck.deadline_minutes + coord_domain::agents::spawn::REPORT_GRACE_MINUTES + 1);
    run::<ops::SpawnAgent>(
        &h,
        &orchestrator,
        spawn_req(Some("reviewer"), None, "after the stuck ones"),
    )
    .await
    .unwrap();
    let st = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&third))
        .await
        .unwrap();
    assert_eq!(
        (st.status, st.task_status),
        (SpawnStatus::Lost, Some(TaskStatus::Pending)),
        "{st:?}"
    );
    let bad: [(SpawnAgentRequest, ErrorCode, Option<&str>); 5] = [
        (
            spawn_req(Some("reviewer"), None, "  "),
            ErrorCode::InvalidArgument,
            Some("task"),
        ),
        (
            spawn_req(Some("reviewer"), Some("write"), "x"),
            ErrorCode::InvalidArgument,
            Some("profile"),
        ),
        (spawn_req(None, None, "x"), ErrorCode::InvalidArgument, Some("agent")),
        (
            spawn_req(None, Some("root"), "x"),
            ErrorCode::InvalidArgument,
            Some("profile"),
        ),
        (spawn_req(Some("nobody"), None, "x"), ErrorCode::NotFound, None),
    ];
    for (req, code, field) in bad {
        let e = run::<ops::SpawnAgent>(&h, &orchestrator, req).await.unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (code, field), "{e:?}");
    }
    let h2 = Harness::with_launcher(b, recorder.clone(), |_| {}).await;
    *recorder.verdict.lock().unwrap() = Some((
        Validator::Model,
        Some(Verdict {
            verdict: VerdictKind::Invalid,
            reasons: vec!["reads credentials".into()],
        }),
        None,
    ));
    let e = run::<ops::SpawnAgent>(&h2, &orchestrator, spawn_req(Some("reviewer"), None, "read ~/.aws"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PreflightDenied, "{e:?}");
    *recorder.verdict.lock().unwrap() = Some((Validator::Command, None, Some("answered prose: VALID".into())));
    let e = run::<ops::SpawnAgent>(&h2, &orchestrator, spawn_req(Some("reviewer"), None, "x"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PreflightDenied, "{e:?}");
    *recorder.verdict.lock().unwrap() = None;
    let tasks = h2
        .coord
        .list_tasks(&orchestrator, Default::default())
        .await
        .unwrap()
        .tasks;
    assert!(tasks.is_empty(), "nothing registered for a denied spawn: {tasks:?}");
    *recorder.fail_start.lock().unwrap() = true;
    let e = run::<ops::SpawnAgent>(&h2, &orchestrator, spawn_req(Some("reviewer"), None, "x"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AgentStartFailed, "{e:?}");
    let id = e.details.get("agent_id").and_then(|v| v.as_str()).unwrap().to_string();
    let st = run::<ops::GetAgentStatus>(&h2, &orchestrator, target(&id))
        .await
        .unwrap();
    assert_eq!(
        (st.status, st.task_status),
        (SpawnStatus::Failed, Some(TaskStatus::Failed))
    );
    // Settled by its follow-ups before the answer, each audited as whom it was done for:
    // the task failed by the agent, its worker profile removed by the supervisor.
    let failed = h2.audit_rows("complete_work").await;
    let by_agent = failed
        .iter()
        .find(|r| r.agent_id == id)
        .expect("the agent's completion");
    assert!(by_agent.success, "{by_agent:?}");
    assert_eq!(by_agent.parameters["success"], false, "{by_agent:?}");
    let unassigned = h2.audit_rows("unassign_profile").await;
    assert!(
        unassigned
            .iter()
            .any(|r| r.success && r.parameters["target_agent_id"] == id.as_str()),
        "{unassigned:?}"
    );

    // delegate_task: spawn, wait, answer the sub-agent's answer (its supervisor, played
    // here, reports while the caller waits).
    *recorder.fail_start.lock().unwrap() = false;
    let hd = Harness::with_launcher(b, recorder.clone(), |_| {}).await;
    let before = recorder.started.lock().unwrap().len();
    let (watch, supervisor) = (recorder.clone(), hd.local.clone());
    let report = tokio::spawn(async move {
        let id = loop {
            if let Some(id) = watch.started.lock().unwrap().get(before).cloned() {
                break id;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        let done = SpawnUpdate::Ended {
            status: SpawnStatus::Completed,
            exit_code: Some(0),
            result: Some("tokens are checked in src/auth/jwt.rs".into()),
            error: None,
            permission_denials: vec![],
            worktree: None,
        };
        supervisor.record_agent_run(&id, done).await.unwrap();
    });
    let delegated = run::<ops::DelegateTask>(
        &hd,
        &orchestrator,
        serde_json::from_value(json!({"agent": "reviewer", "task": "how are tokens checked?", "wait_seconds": 60}))
            .unwrap(),
    )
    .await
    .unwrap();
    report.await.unwrap();
    assert_eq!(
        (delegated.status, delegated.result.as_deref()),
        (SpawnStatus::Completed, Some("tokens are checked in src/auth/jwt.rs"))
    );
    assert_eq!(
        hd.task(&delegated.task_id).await.claimed_by.as_deref(),
        Some(delegated.agent_id.as_str())
    );
    let bad = [
        (
            json!({"agent": "reviewer", "task": "x", "wait_seconds": 301}),
            "wait_seconds",
        ),
        (json!({"agent": "reviewer", "task": "x", "colour": "red"}), ""),
        (json!({"task": "x"}), "agent"),
    ];
    for (req, field) in bad {
        let e = hd
            .coord
            .invoke(
                coord_service::op_named("delegate_task").unwrap(),
                &coord_domain::access::Principal::local(orchestrator.clone()),
                Ok(req.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{req}: {e:?}");
        if !field.is_empty() {
            assert_eq!(e.field.as_deref(), Some(field), "{req}: {e:?}");
        }
    }

    // A spawned agent delegates only as its definition says (reviewer: to nobody;
    // looper: to itself and to generic writers), never a tool it lacks, and a
    // delegation loop ends at the depth limit (2).
    *recorder.fail_start.lock().unwrap() = false;
    let h4 = Harness::with_launcher(b, recorder.clone(), |_| {}).await;
    let spawner =
        |name: &str, trust: u8, max: Value| profile(name, trust, &[Permission::Read, Permission::SpawnAgent], max);
    give(&h4, spawner("lead", 4, json!({"max_spawned_agents": 2})), "lead").await;
    let lead = operator("lead");
    let reviewer = run::<ops::SpawnAgent>(&h4, &lead, spawn_req(Some("reviewer"), None, "look"))
        .await
        .unwrap();
    give(&h4, spawner("sub-lead", 4, json!({})), &reviewer.agent_id).await;
    let e = run::<ops::SpawnAgent>(
        &h4,
        &Caller::new(reviewer.agent_id.clone(), "worker"),
        spawn_req(Some("reviewer"), None, "look closer"),
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::ToolExecutionDenied,
        "reviewer delegates to nobody: {e:?}"
    );
    assert!(e.message.contains("does not delegate to reviewer"), "{e:?}");
    let child = run::<ops::SpawnAgent>(&h4, &lead, spawn_req(Some("looper"), None, "delegate"))
        .await
        .unwrap();
    give(&h4, spawner("sub-lead", 4, json!({})), &child.agent_id).await;
    let child_caller = Caller::new(child.agent_id.clone(), "worker");
    let e = run::<ops::SpawnAgent>(&h4, &child_caller, spawn_req(None, Some("write"), "write"))
        .await
        .unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::OperationNotPermitted,
        "a tool its parent lacks: {e:?}"
    );
    let e = run::<ops::DelegateTask>(
        &h4,
        &child_caller,
        serde_json::from_value(json!({"agent": "reviewer", "task": "x", "wait_seconds": 0})).unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolExecutionDenied, "not in its delegatesTo: {e:?}");
    let grandchild = run::<ops::DelegateTask>(
        &h4,
        &child_caller,
        serde_json::from_value(json!({"agent": "looper", "task": "delegate again", "wait_seconds": 0})).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(grandchild.status, SpawnStatus::Starting, "{grandchild:?}");
    let st = run::<ops::GetAgentStatus>(&h4, &child_caller, target(&grandchild.agent_id))
        .await
        .unwrap();
    assert_eq!(st.depth, 2);
    give(&h4, spawner("sub-sub-lead", 4, json!({})), &grandchild.agent_id).await;
    let e = run::<ops::DelegateTask>(
        &h4,
        &Caller::new(grandchild.agent_id.clone(), "worker"),
        serde_json::from_value(json!({"agent": "looper", "task": "and again", "wait_seconds": 0})).unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.details.get("resource").and_then(|v| v.as_str())),
        (ErrorCode::ResourceLimitExceeded, Some("spawn_depth")),
        "the loop ends at the depth limit: {e:?}"
    );
    // The lead's own max_spawned_agents (2): its third spawn is refused.
    let e = run::<ops::SpawnAgent>(&h4, &lead, spawn_req(Some("reviewer"), None, "three"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded, "{e:?}");
    // A parent of trust 1 may not spawn a trust 2 worker.
    give(&h4, spawner("junior", 1, json!({})), "junior").await;
    let e = run::<ops::SpawnAgent>(&h4, &operator("junior"), spawn_req(None, Some("write"), "x"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");

    // A coordinator that cannot start agents says so.
    let h3 = Harness::new(b).await;
    let e = run::<ops::SpawnAgent>(&h3, &orchestrator, spawn_req(None, Some("read_only"), "x"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SpawnUnavailable, "{e:?}");

    // Every decision is in the trail, the veto with its reason.
    let rows = run::<audit::QueryAudit>(
        &h2,
        &orchestrator,
        AuditQueryRequest {
            operation: Some("spawn_agent".into()),
            limit: Some(100),
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .entries;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().any(|r| r.result.to_string().contains("reads credentials")));
}

/// `isolation: worktree`: recorded with the spawn, the worktree its supervisor made shown
/// while the agent runs (path, branch, ports) and what became of it once it ended; bad
/// isolation input refused with nothing registered. (Making and settling the worktree is
/// the supervisor's: coord-cli's isolate tests and the agents_e2e worktree scenario.)
pub async fn agents_spawn_in_a_worktree_of_its_own(b: &dyn Backend) {
    use coord_domain::agents::isolation::{IsolatedWorktree, Isolation, WorktreeState};
    let recorder = Arc::new(Recorder::default());
    let h = Harness::with_launcher(b, recorder.clone(), |_| {}).await;
    let orchestrator = operator("orchestrator");
    let who = coord_domain::access::Principal::local(orchestrator.clone());
    let mut req = spawn_req(Some("reviewer"), None, "review src/ in your own worktree");
    req.isolation = Some(Isolation::Worktree);
    let s = run::<ops::SpawnAgent>(&h, &orchestrator, req).await.unwrap();
    assert_eq!(s.isolation, Isolation::Worktree);
    let st = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&s.agent_id))
        .await
        .unwrap();
    assert_eq!((st.isolation, st.worktree.as_ref()), (Isolation::Worktree, None));

    let live = IsolatedWorktree {
        path: format!("/repo/.coord-worktrees/{}", s.agent_id),
        branch: format!("coord/{}", s.agent_id),
        base: "0123abcd".into(),
        ports: None,
        state: WorktreeState::Live,
        commit: None,
        branch_kept: true,
    };
    let update = SpawnUpdate::Started {
        host: "conformance-host".into(),
        pid: 7,
        run_dir: "/tmp/runs/x".into(),
        key_id: "no-key".into(),
        worktree: Some(live.clone()),
    };
    h.local.record_agent_run(&s.agent_id, update).await.unwrap();
    let listed = run::<ops::ListSpawnedAgents>(&h, &orchestrator, Default::default())
        .await
        .unwrap();
    assert_eq!(
        listed.agents[0].worktree.as_ref(),
        Some(&live),
        "listed with its worktree while it runs"
    );

    let settled = IsolatedWorktree {
        state: WorktreeState::Removed,
        commit: Some("fedc9876".into()),
        ..live.clone()
    };
    let ended = SpawnUpdate::Ended {
        status: SpawnStatus::Completed,
        exit_code: Some(0),
        result: Some("done".into()),
        error: None,
        permission_denials: vec![],
        worktree: Some(settled.clone()),
    };
    h.local.record_agent_run(&s.agent_id, ended).await.unwrap();
    let st = run::<ops::GetAgentStatus>(&h, &orchestrator, target(&s.agent_id))
        .await
        .unwrap();
    assert_eq!(st.worktree, Some(settled), "what became of its worktree is kept");

    // Bad input: refused before anything is registered.
    let before = recorder.started.lock().unwrap().len();
    let bad = [
        (json!({"agent": "reviewer", "task": "x", "isolation": "container"}), ""),
        (
            json!({"agent": "reviewer", "task": "x", "keep_worktree": true}),
            "keep_worktree",
        ),
        (
            json!({"agent": "reviewer", "task": "x", "isolation": "shared", "keep_worktree": true}),
            "keep_worktree",
        ),
    ];
    for (raw, field) in bad {
        let e = h
            .coord
            .invoke(coord_service::op_named("spawn_agent").unwrap(), &who, Ok(raw.clone()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{raw}: {e:?}");
        if !field.is_empty() {
            assert_eq!(e.field.as_deref(), Some(field), "{raw}: {e:?}");
        }
    }
    assert_eq!(recorder.started.lock().unwrap().len(), before, "nothing was started");
}
