//! Graph workflows (`create_workflow`, `get_workflow_status`) and swarms
//! (`create_swarm`, `get_swarm_results`): a definition checked whole (field paths,
//! conditions compiled, cycles refused); nodes queued as their inputs end and their
//! conditions hold; a failure edge, then the success path; skipping; an unhandled
//! failure failing the workflow; a workflow that catches up from the stored outcomes
//! after its coordinator missed a task's end; a swarm's members spawned with its context
//! and its results aggregated.

use crate::cases::profiles::run;
use crate::cases::spawn::Recorder;
use crate::{Harness, agent, operator};
use coord_domain::Caller;
use coord_domain::ErrorCode;
use coord_domain::agents::preflight::{Validator, Verdict, VerdictKind};
use coord_domain::queue::{CompleteWorkRequest, Completion, GetWorkRequest, TaskStatus};
use coord_domain::workflows::api::{SwarmRef, WorkflowRef};
use coord_domain::workflows::{NodeStatus, WorkflowStatus};
use coord_service::CoordinationExt;
use coord_service::ops::{queue, workflows as ops};
use coord_store::OpCtx;
use serde_json::{Value, json};
use std::sync::Arc;

/// implement → test; test → fix when it fails; test → review if its result says
/// passed; fix → review; review joins any.
fn fix_graph() -> Value {
    json!({
        "name": "fix-and-review",
        "input": {"issue": 42},
        "nodes": [
            {"id": "implement", "task": "Implement issue 42", "task_type": "implement"},
            {"id": "test", "task": "Run the tests; answer {status, coverage}", "task_type": "test"},
            {"id": "fix", "task": "Fix the failing tests", "task_type": "fix"},
            {"id": "review", "task": "Review the change", "task_type": "review", "join": "any"}
        ],
        "edges": [
            {"from": "implement", "to": "test"},
            {"from": "test", "to": "fix", "when": "failure"},
            {"from": "test", "to": "review", "if": "result.status == \"passed\" && result.coverage > 0.8"},
            {"from": "fix", "to": "review"}
        ]
    })
}

async fn status(h: &Harness, id: &str) -> coord_domain::workflows::api::WorkflowView {
    run::<ops::GetWorkflowStatus>(h, &agent("observer"), WorkflowRef { workflow_id: id.into() })
        .await
        .unwrap()
}

fn node<'a>(v: &'a coord_domain::workflows::api::WorkflowView, id: &str) -> &'a coord_domain::workflows::api::NodeView {
    v.nodes.iter().find(|n| n.id == id).unwrap()
}

/// Claims the one task of `task_type` and ends it.
async fn work(h: &Harness, who: &Caller, task_type: &str, success: bool, result: Value) -> String {
    let got = run::<queue::GetWork>(
        h,
        who,
        GetWorkRequest {
            task_types: Some(vec![task_type.into()]),
        },
    )
    .await
    .unwrap();
    let task_id = got
        .task_id
        .clone()
        .unwrap_or_else(|| panic!("no {task_type} task: {got:?}"));
    run::<queue::CompleteWork>(
        h,
        who,
        CompleteWorkRequest {
            task_id: task_id.clone(),
            success,
            result: Some(result),
            error_message: (!success).then(|| "2 tests failed".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    task_id
}

async fn nothing_of(h: &Harness, who: &Caller, task_type: &str) {
    let got = run::<queue::GetWork>(
        h,
        who,
        GetWorkRequest {
            task_types: Some(vec![task_type.into()]),
        },
    )
    .await
    .unwrap();
    assert!(!got.success, "no {task_type} task yet: {got:?}");
}

pub async fn workflows_run_by_their_conditions_and_catch_up(b: &dyn crate::Backend) {
    let h = Harness::new(b).await;
    let lead = operator("lead");
    let worker = agent("worker-1");

    // Checked whole before anything is stored: every error with its field.
    let bad = json!({
        "name": "bad",
        "nodes": [{"id": "a", "task": "x"}, {"id": "b", "task": "y"}, {"id": "A b", "task": " "}],
        "edges": [
            {"from": "a", "to": "b", "if": "reslt.ok"},
            {"from": "a", "to": "zz"},
            {"from": "b", "to": "a", "when": "sometimes"}
        ]
    });
    let e = h
        .coord
        .invoke(
            coord_service::op_named("create_workflow").unwrap(),
            &coord_domain::access::Principal::local(lead.clone()),
            Ok(bad),
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::InvalidArgument,
        "an unknown `when` is unreadable: {e:?}"
    );
    let bad = json!({
        "name": "bad",
        "nodes": [{"id": "a", "task": "x"}, {"id": "b", "task": "y"}, {"id": "A b", "task": " "}],
        "edges": [{"from": "a", "to": "b", "if": "reslt.ok"}, {"from": "a", "to": "zz"}]
    });
    let e = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(bad).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("nodes[2].id")),
        "{e:?}"
    );
    let fields: Vec<&str> = e.details["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["nodes[2].id", "nodes[2].task", "edges[0].if", "edges[1].to"],
        "{e:?}"
    );
    let cycle = json!({
        "name": "loop",
        "nodes": [{"id": "a", "task": "x"}, {"id": "b", "task": "y"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a", "when": "failure"}]
    });
    let e = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(cycle).unwrap())
        .await
        .unwrap_err();
    assert!(e.message.contains("a cycle: a → b → a"), "{e:?}");
    // Creating needs manage_swarm (a Claude Code profile has none).
    let e = run::<ops::CreateWorkflow>(&h, &worker, serde_json::from_value(fix_graph()).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted, "{e:?}");
    let listed = h.coord.list_tasks(&lead, Default::default()).await.unwrap().tasks;
    assert!(listed.is_empty(), "nothing stored for a refused definition: {listed:?}");

    // The failure edge runs, then the success path.
    let created = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(fix_graph()).unwrap())
        .await
        .unwrap();
    assert_eq!(created.started, ["implement"]);
    assert_eq!(created.order, ["implement", "test", "fix", "review"]);
    let id = created.workflow_id.clone();
    nothing_of(&h, &worker, "test").await;
    work(&h, &worker, "implement", true, json!({"files": ["src/a.rs"]})).await;
    let v = status(&h, &id).await;
    assert_eq!(node(&v, "test").status, NodeStatus::Running);
    let test_task = h.task(node(&v, "test").task_id.as_deref().unwrap()).await;
    assert_eq!(test_task.input_data.as_ref().unwrap()["input"], json!({"issue": 42}));
    assert_eq!(
        test_task.input_data.as_ref().unwrap()["inputs"]["implement"]["result"],
        json!({"files": ["src/a.rs"]})
    );
    assert_eq!(test_task.depends_on.len(), 1, "its completed input, as a dependency");
    work(&h, &worker, "test", false, json!({"status": "failed", "coverage": 0.5})).await;
    let v = status(&h, &id).await;
    assert_eq!(
        (node(&v, "fix").status, node(&v, "review").status, v.status),
        (NodeStatus::Running, NodeStatus::Waiting, WorkflowStatus::Running)
    );
    nothing_of(&h, &worker, "review").await;
    work(&h, &worker, "fix", true, json!({"fixed": 2})).await;
    let v = status(&h, &id).await;
    assert_eq!(node(&v, "review").status, NodeStatus::Running);
    assert!(
        node(&v, "review")
            .reason
            .as_deref()
            .unwrap()
            .contains("not taken: test → review"),
        "{v:?}"
    );
    work(&h, &worker, "review", true, json!("approved")).await;
    let v = status(&h, &id).await;
    assert_eq!(v.status, WorkflowStatus::Completed, "{v:?}");
    assert_eq!(
        v.results["review"],
        json!({"status": "completed", "result": "approved"})
    );
    assert_eq!(v.results["test"]["status"], "failed");
    assert_eq!(node(&v, "implement").agent.as_deref(), Some("worker-1"));
    assert!(v.ended_at.is_some() && node(&v, "fix").duration_seconds.is_some());

    // The success path: the fix is skipped.
    let created = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(fix_graph()).unwrap())
        .await
        .unwrap();
    work(&h, &worker, "implement", true, json!({})).await;
    work(&h, &worker, "test", true, json!({"status": "passed", "coverage": 0.93})).await;
    let v = status(&h, &created.workflow_id).await;
    assert_eq!(
        (node(&v, "fix").status, node(&v, "review").status),
        (NodeStatus::Skipped, NodeStatus::Running)
    );
    work(&h, &worker, "review", true, json!("ok")).await;
    assert_eq!(status(&h, &created.workflow_id).await.status, WorkflowStatus::Completed);

    // An unhandled failure fails the workflow, visibly; what waited is skipped.
    let created = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(fix_graph()).unwrap())
        .await
        .unwrap();
    work(&h, &worker, "implement", false, json!(null)).await;
    let v = status(&h, &created.workflow_id).await;
    assert_eq!(v.status, WorkflowStatus::Failed);
    assert!(
        v.error
            .as_deref()
            .unwrap()
            .contains("node implement (2 tests failed) failed"),
        "{v:?}"
    );
    assert!(v.nodes[1..].iter().all(|n| n.status == NodeStatus::Skipped), "{v:?}");

    // A coordinator that missed a task's end (it stopped right after the store wrote
    // it) catches up from what is stored: the next look moves the workflow on.
    let created = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(fix_graph()).unwrap())
        .await
        .unwrap();
    let got = run::<queue::GetWork>(
        &h,
        &worker,
        GetWorkRequest {
            task_types: Some(vec!["implement".into()]),
        },
    )
    .await
    .unwrap();
    let ctx = OpCtx::internal(None, worker.for_audit(), "complete_work", json!({}));
    let done = Completion {
        task_id: got.task_id.unwrap(),
        success: true,
        result: Some(json!({})),
        error_message: None,
        skill: None,
    };
    h.store.complete_work(ctx, done).await.unwrap();
    nothing_of(&h, &worker, "test").await;
    let v = status(&h, &created.workflow_id).await;
    assert_eq!(node(&v, "test").status, NodeStatus::Running, "caught up: {v:?}");
    work(&h, &worker, "test", true, json!({"status": "passed", "coverage": 1.0})).await;

    // Unknown ids and listings.
    let e = run::<ops::GetWorkflowStatus>(
        &h,
        &lead,
        WorkflowRef {
            workflow_id: "nope".into(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("workflow_id"))
    );
    let e = run::<ops::GetWorkflowStatus>(
        &h,
        &lead,
        WorkflowRef {
            workflow_id: "0f8fad5b-d9cb-469f-a165-70867728950e".into(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let mine = run::<ops::ListWorkflows>(&h, &lead, Default::default()).await.unwrap();
    assert_eq!(mine.workflows.len(), 4, "{mine:?}");
}

pub async fn workflows_swarm_members_drain_a_shared_queue(b: &dyn crate::Backend) {
    let recorder = Arc::new(Recorder::default());
    let h = Harness::with_launcher(b, recorder.clone(), |_| {}).await;
    let lead = operator("lead");
    let req = json!({
        "name": "lint",
        "agents": [{"agent": "reviewer"}, {"profile": "read_only", "runtime": "codex"}],
        "tasks": ["Check src/a.rs", "Check src/b.rs", "Check src/c.rs"]
    });
    let s = run::<ops::CreateSwarm>(&h, &lead, serde_json::from_value(req).unwrap())
        .await
        .unwrap();
    assert_eq!((s.tasks.len(), s.members.len()), (3, 2), "{s:?}");
    assert_eq!(*recorder.started.lock().unwrap(), s.members);
    // Each member was told the swarm's context.
    let spawned = run::<coord_service::ops::spawn::GetAgentStatus>(
        &h,
        &lead,
        coord_domain::agents::spawn::AgentRef {
            target_agent_id: s.members[0].clone(),
        },
    )
    .await
    .unwrap();
    let own = h.task(&spawned.task_id).await;
    assert!(own.task_description.contains(&s.task_type), "{own:?}");
    assert!(own.task_description.contains("2 members"), "{own:?}");
    // The members drain the queue (played here); each task done once.
    let (m1, m2) = (
        Caller::new(s.members[0].clone(), "worker"),
        Caller::new(s.members[1].clone(), "worker"),
    );
    work(&h, &m1, &s.task_type, true, json!("a is clean")).await;
    work(&h, &m2, &s.task_type, true, json!("b has 2 warnings")).await;
    let r = run::<ops::GetSwarmResults>(
        &h,
        &lead,
        SwarmRef {
            swarm_id: s.swarm_id.clone(),
        },
    )
    .await
    .unwrap();
    assert_eq!(r.status, WorkflowStatus::Running);
    work(&h, &m1, &s.task_type, false, json!(null)).await;
    nothing_of(&h, &m2, &s.task_type).await;
    let r = run::<ops::GetSwarmResults>(
        &h,
        &lead,
        SwarmRef {
            swarm_id: s.swarm_id.clone(),
        },
    )
    .await
    .unwrap();
    assert_eq!(r.status, WorkflowStatus::Failed, "a task failed: {r:?}");
    assert_eq!(r.summary["completed"], 2);
    assert_eq!(r.summary["failed"], 1);
    let by: Vec<(Option<&str>, TaskStatus)> = r
        .nodes
        .iter()
        .map(|n| {
            (
                n.agent.as_deref(),
                match n.status {
                    NodeStatus::Completed => TaskStatus::Completed,
                    _ => TaskStatus::Failed,
                },
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            (Some(s.members[0].as_str()), TaskStatus::Completed),
            (Some(s.members[1].as_str()), TaskStatus::Completed),
            (Some(s.members[0].as_str()), TaskStatus::Failed)
        ]
    );
    assert_eq!(r.members.len(), 2);
    assert_eq!((r.members[0].completed, r.members[1].completed), (1, 1));
    assert_eq!(r.task_type.as_deref(), Some(s.task_type.as_str()));
    let e = run::<ops::GetWorkflowStatus>(
        &h,
        &lead,
        WorkflowRef {
            workflow_id: s.swarm_id.clone(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "a swarm is not a workflow");

    // A node naming an agent: coord spawns it, as the workflow's creator, when the node
    // is queued; it is told the node's task and how to claim and end it.
    let graph = json!({
        "name": "reviewed",
        "nodes": [
            {"id": "build", "task": "Build it", "task_type": "build"},
            {"id": "review", "task": "Review the build", "task_type": "review", "agent": "reviewer"}
        ],
        "edges": [{"from": "build", "to": "review"}]
    });
    let before = recorder.started.lock().unwrap().len();
    let created = run::<ops::CreateWorkflow>(&h, &lead, serde_json::from_value(graph).unwrap())
        .await
        .unwrap();
    assert_eq!(recorder.started.lock().unwrap().len(), before, "review waits for build");
    work(&h, &agent("builder"), "build", true, json!({"ok": true})).await;
    let v = run::<ops::GetWorkflowStatus>(
        &h,
        &lead,
        WorkflowRef {
            workflow_id: created.workflow_id.clone(),
        },
    )
    .await
    .unwrap();
    let review = v.nodes.iter().find(|n| n.id == "review").unwrap();
    let spawned = review.spawned_agent_id.clone().expect("an agent spawned for the node");
    assert!(spawned.starts_with("reviewer-"), "{review:?}");
    assert_eq!(recorder.started.lock().unwrap().last(), Some(&spawned));
    let own = run::<coord_service::ops::spawn::GetAgentStatus>(
        &h,
        &lead,
        coord_domain::agents::spawn::AgentRef {
            target_agent_id: spawned.clone(),
        },
    )
    .await
    .unwrap();
    let prompt = h.task(&own.task_id).await.task_description;
    assert!(
        prompt.contains(review.task_id.as_deref().unwrap()) && prompt.contains("\"review\""),
        "{prompt}"
    );
    let e = run::<ops::CreateWorkflow>(
        &h,
        &lead,
        serde_json::from_value(json!({"name": "x", "nodes": [{"id": "a", "task": "t", "agent": "nobody"}]})).unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::NotFound, Some("nodes[0].agent")),
        "{e:?}"
    );

    // A caller with a managed key may not have agents spawned after its request: the
    // key's limits and revocation could not follow them.
    let keyed = coord_domain::access::Principal::new(lead.clone(), coord_domain::access::Credential::Bound)
        .with_origin(Some(coord_domain::keys::KeyOrigin {
            key_id: "key-1".into(),
            ..Default::default()
        }));
    let req = json!({"name": "k", "agents": [{"agent": "reviewer"}], "tasks": ["t"]});
    let e = coord_service::call::<ops::CreateSwarm, _>(&h.local, &keyed, serde_json::from_value(req).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted, "{e:?}");
    let req = json!({"name": "k", "nodes": [{"id": "a", "task": "t", "profile": "read_only"}]});
    let e = coord_service::call::<ops::CreateWorkflow, _>(&h.local, &keyed, serde_json::from_value(req).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted, "{e:?}");
    let req = json!({"name": "k", "nodes": [{"id": "a", "task": "t"}]});
    coord_service::call::<ops::CreateWorkflow, _>(&h.local, &keyed, serde_json::from_value(req).unwrap())
        .await
        .expect("a workflow that spawns nothing is fine with a key");

    // Bad members are refused before anything is created; a swarm nobody can join
    // fails its tasks rather than leave them waiting.
    let bad = json!({"name": "x", "agents": [{"agent": "nobody"}], "tasks": ["t"]});
    let e = run::<ops::CreateSwarm>(&h, &lead, serde_json::from_value(bad).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e:?}");
    assert!(e.message.starts_with("agents[0]: "), "{e:?}");
    let bad = json!({"name": "x", "agents": [], "tasks": ["t"]});
    let e = run::<ops::CreateSwarm>(&h, &lead, serde_json::from_value(bad).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("agents"))
    );
    *recorder.verdict.lock().unwrap() = Some((
        Validator::Command,
        Some(Verdict {
            verdict: VerdictKind::Invalid,
            reasons: vec!["no".into()],
        }),
        None,
    ));
    let denied = json!({"name": "x", "agents": [{"agent": "reviewer"}], "tasks": ["t1", "t2"]});
    let e = run::<ops::CreateSwarm>(&h, &lead, serde_json::from_value(denied).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SpawnUnavailable, "{e:?}");
    let swarm_id = e.details["swarm_id"].as_str().unwrap().to_string();
    let r = run::<ops::GetSwarmResults>(&h, &lead, SwarmRef { swarm_id })
        .await
        .unwrap();
    assert_eq!(r.status, WorkflowStatus::Failed);
    assert!(r.nodes.iter().all(|n| n.status == NodeStatus::Failed), "{r:?}");
    assert!(
        r.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no member of the swarm could be spawned")
    );
}
