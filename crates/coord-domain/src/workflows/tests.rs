use super::*;
use crate::queue::TaskStatus;
use serde_json::json;

fn node(id: &str) -> NodeSpec {
    NodeSpec {
        id: id.into(),
        task: format!("do {id}"),
        task_type: None,
        priority: None,
        join: None,
        agent: None,
        profile: None,
        runtime: None,
    }
}

fn edge(from: &str, to: &str, when: Option<When>, cond: Option<&str>) -> EdgeSpec {
    EdgeSpec {
        from: from.into(),
        to: to.into(),
        when,
        condition: cond.map(String::from),
    }
}

fn errors(name: &str, nodes: &[NodeSpec], edges: &[EdgeSpec]) -> Vec<String> {
    match check_definition(name, nodes, edges) {
        Ok(_) => vec![],
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn definitions_are_checked_with_field_paths() {
    let ab = [node("a"), node("b")];
    let mut bad_node = node("B c");
    bad_node.task = " ".into();
    type Case<'a> = (&'a str, Vec<NodeSpec>, Vec<EdgeSpec>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        ("ok", ab.to_vec(), vec![edge("a", "b", None, None)], vec![]),
        (
            " ",
            vec![],
            vec![],
            vec!["name: missing", "nodes: empty: a workflow has at least one node"],
        ),
        (
            "w",
            vec![node("a"), bad_node, node("a")],
            vec![],
            vec![
                "nodes[1].id: \"B c\": use lowercase letters, digits, '-' and '_' (at most 64)",
                "nodes[1].task: empty: say what the node's task asks",
                "nodes[2].id: \"a\" is defined twice",
            ],
        ),
        (
            "w",
            ab.to_vec(),
            vec![edge("a", "z", None, None), edge("a", "a", None, None)],
            vec![
                "edges[0].to: no node \"z\"",
                "edges[1]: a → a: a node cannot follow itself",
            ],
        ),
        (
            "w",
            ab.to_vec(),
            vec![edge("a", "b", Some(When::Success), Some("true"))],
            vec!["edges[0]: give when or if, not both"],
        ),
        (
            "w",
            ab.to_vec(),
            vec![edge("a", "b", None, Some("reslt.status == \"passed\""))],
            vec![
                "edges[0].if: unknown variable \"reslt\": a condition reads result (the upstream task's result) and task (status, attempts, failure_reason, error)",
            ],
        ),
        (
            "w",
            ab.to_vec(),
            vec![edge("a", "b", None, Some(""))],
            vec!["edges[0].if: empty: give a CEL expression such as result.status == \"passed\""],
        ),
        (
            "w",
            vec![node("a"), node("b"), node("c")],
            vec![
                edge("a", "b", None, None),
                edge("b", "c", None, None),
                edge("c", "b", Some(When::Failure), None),
            ],
            vec!["edges: a cycle: b → c → b (a workflow is acyclic; to retry, add a node)"],
        ),
        (
            "w",
            ab.to_vec(),
            vec![edge("a", "b", None, None), edge("a", "b", Some(When::Failure), None)],
            vec!["edges[1]: a → b is given twice: put both conditions in one `if`"],
        ),
    ];
    for (name, nodes, edges, want) in cases {
        assert_eq!(errors(name, &nodes, &edges), want, "{name} {nodes:?} {edges:?}");
    }
    // Syntax errors, depth and size are definition errors too (the message is the parser's).
    for src in [
        "result.status ==",
        "result.status == 'passed' &&& true",
        &"(".repeat(40),
        &"a".repeat(1100),
    ] {
        let got = errors("w", &ab, &[edge("a", "b", None, Some(src))]);
        assert_eq!(got.len(), 1, "{src}: {got:?}");
        assert!(got[0].starts_with("edges[0].if: "), "{got:?}");
    }
    // Topological order, the written order kept among equals.
    let order = check_definition(
        "w",
        &[node("review"), node("test"), node("implement")],
        &[
            edge("implement", "test", None, None),
            edge("test", "review", None, None),
        ],
    )
    .unwrap();
    let ids: Vec<&str> = order.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["implement", "test", "review"]);
}

#[test]
fn conditions_evaluate_on_result_and_task() {
    let c = Condition::compile("result.status == \"passed\" && result.coverage > 0.8").unwrap();
    let task = json!({"status": "completed", "attempts": 1, "failure_reason": "", "error": ""});
    assert_eq!(
        c.evaluate(&(json!({"status": "passed", "coverage": 0.9}), task.clone())),
        Ok(true)
    );
    assert_eq!(
        c.evaluate(&(json!({"status": "passed", "coverage": 0.5}), task.clone())),
        Ok(false)
    );
    assert!(
        c.evaluate(&(json!({"status": "passed"}), task.clone())).is_err(),
        "a missing field is an error"
    );
    let guarded = Condition::compile("has(result.coverage) && result.coverage > 0.8").unwrap();
    assert_eq!(
        guarded.evaluate(&(json!({"status": "passed"}), task.clone())),
        Ok(false)
    );
    let not_bool = Condition::compile("result.coverage").unwrap();
    assert!(not_bool.evaluate(&(json!({"coverage": 1}), task.clone())).is_err());
    let on_task = Condition::compile("task.status == \"failed\" && task.attempts < 3").unwrap();
    assert_eq!(
        on_task.evaluate(&(Value::Null, json!({"status": "failed", "attempts": 1}))),
        Ok(true)
    );
}

/// A workflow as create_workflow stores it: entry nodes running with a task each.
fn workflow(nodes: Vec<NodeSpec>, edges: Vec<EdgeSpec>) -> Workflow {
    let order = check_definition("w", &nodes, &edges).unwrap();
    let me = crate::Caller::new("me", "cli").for_audit();
    let mut wf = Workflow::new(
        "wf".into(),
        Kind::Workflow,
        "w",
        &me,
        chrono::Utc::now(),
        order,
        edges,
        None,
    );
    run(&mut wf, &HashMap::new());
    wf
}

/// One advance, tasks created for the nodes it starts (`t-<node>`).
fn run(wf: &mut Workflow, tasks: &HashMap<String, TaskOutcome>) -> Vec<String> {
    let step = advance(wf, tasks, chrono::Utc::now());
    *wf = step.workflow;
    for id in &step.start {
        let n = wf.nodes.iter_mut().find(|n| &n.spec.id == id).unwrap();
        n.task_id = Some(format!("t-{id}"));
    }
    step.start
}

fn done(tasks: &mut HashMap<String, TaskOutcome>, node: &str, ok: bool, result: Value) {
    tasks.insert(
        format!("t-{node}"),
        TaskOutcome {
            status: if ok { TaskStatus::Completed } else { TaskStatus::Failed },
            result: Some(result),
            attempts: 1,
            failure_reason: (!ok).then(|| "agent_reported_failure".into()),
            error_message: (!ok).then(|| "2 tests failed".into()),
        },
    );
}

fn status(wf: &Workflow) -> Vec<(String, NodeStatus)> {
    wf.nodes.iter().map(|n| (n.spec.id.clone(), n.status)).collect()
}

/// implement → test; test → fix on failure; test → review on success; fix → review;
/// review joins any.
fn fix_graph() -> Workflow {
    let mut review = node("review");
    review.join = Some(Join::Any);
    workflow(
        vec![node("implement"), node("test"), node("fix"), review],
        vec![
            edge("implement", "test", None, None),
            edge("test", "fix", Some(When::Failure), None),
            edge("test", "review", None, Some("result.status == \"passed\"")),
            edge("fix", "review", None, None),
        ],
    )
}

#[test]
fn a_failure_edge_runs_then_the_success_path() {
    use NodeStatus::*;
    let mut wf = fix_graph();
    let mut tasks = HashMap::new();
    assert_eq!(status(&wf)[0], ("implement".into(), Running));
    assert_eq!(
        run(&mut wf, &tasks),
        Vec::<String>::new(),
        "nothing before implement ends"
    );
    done(&mut tasks, "implement", true, json!({"files": 2}));
    assert_eq!(run(&mut wf, &tasks), ["test"]);
    let input = node_input(&wf, "test", &tasks);
    assert_eq!(
        input["inputs"]["implement"],
        json!({"status": "completed", "result": {"files": 2}})
    );
    done(&mut tasks, "test", false, json!({"status": "failed"}));
    assert_eq!(run(&mut wf, &tasks), ["fix"], "the failure edge");
    assert_eq!(
        wf.status,
        WorkflowStatus::Running,
        "a handled failure does not fail the workflow"
    );
    done(&mut tasks, "fix", true, json!({"fixed": true}));
    assert_eq!(run(&mut wf, &tasks), ["review"], "join any: fix's edge is taken");
    assert!(
        wf.nodes[3].reason.as_deref().unwrap().contains("test → review"),
        "{:?}",
        wf.nodes[3]
    );
    done(&mut tasks, "review", true, json!("lgtm"));
    run(&mut wf, &tasks);
    assert_eq!(
        status(&wf),
        [
            ("implement".into(), Completed),
            ("test".into(), Failed),
            ("fix".into(), Completed),
            ("review".into(), Completed)
        ]
    );
    assert_eq!(wf.status, WorkflowStatus::Completed);
    assert!(wf.ended_at.is_some());
    // Idempotent: nothing more to do.
    let again = advance(&wf, &tasks, chrono::Utc::now());
    assert!(!again.changed && again.start.is_empty());
}

#[test]
fn the_success_path_skips_the_fix() {
    use NodeStatus::*;
    let mut wf = fix_graph();
    let mut tasks = HashMap::new();
    done(&mut tasks, "implement", true, json!({}));
    run(&mut wf, &tasks);
    done(&mut tasks, "test", true, json!({"status": "passed"}));
    assert_eq!(run(&mut wf, &tasks), ["review"], "fix skipped, review taken at once");
    assert_eq!(wf.nodes[2].status, Skipped);
    assert_eq!(
        wf.nodes[2].reason.as_deref(),
        Some("not taken: test → fix (when failure) (completed)")
    );
    done(&mut tasks, "review", true, json!({}));
    run(&mut wf, &tasks);
    assert_eq!(wf.status, WorkflowStatus::Completed);
}

#[test]
fn an_unhandled_failure_fails_the_workflow_visibly() {
    use NodeStatus::*;
    let mut wf = fix_graph();
    let mut tasks = HashMap::new();
    done(&mut tasks, "implement", false, json!(null));
    assert!(run(&mut wf, &tasks).is_empty());
    assert_eq!(wf.status, WorkflowStatus::Failed);
    assert_eq!(
        wf.error.as_deref(),
        Some("node implement (2 tests failed) failed and no edge handles the failure (add an edge with when: failure)")
    );
    assert_eq!(
        status(&wf),
        [
            ("implement".into(), Failed),
            ("test".into(), Skipped),
            ("fix".into(), Skipped),
            ("review".into(), Skipped)
        ]
    );
}

#[test]
fn a_condition_error_takes_no_edge_and_says_why() {
    let mut wf = workflow(
        vec![node("test"), node("ship"), node("report")],
        vec![
            edge("test", "ship", None, Some("result.coverage > 0.8")),
            edge("test", "report", Some(When::Always), None),
        ],
    );
    let mut tasks = HashMap::new();
    done(&mut tasks, "test", true, json!({"status": "passed"}));
    assert_eq!(run(&mut wf, &tasks), ["report"]);
    assert_eq!(wf.nodes[1].status, NodeStatus::Skipped);
    let why = wf.nodes[1].reason.as_deref().unwrap();
    assert!(why.contains("condition error"), "{why}");
    done(&mut tasks, "report", true, json!({}));
    run(&mut wf, &tasks);
    assert_eq!(wf.status, WorkflowStatus::Completed, "a skipped node is not a failure");
}

#[test]
fn an_and_join_waits_for_every_input_and_skipping_propagates() {
    use NodeStatus::*;
    let mut wf = workflow(
        vec![node("a"), node("b"), node("join"), node("after")],
        vec![
            edge("a", "join", None, None),
            edge("b", "join", None, Some("result.ok")),
            edge("join", "after", None, None),
        ],
    );
    assert_eq!(status(&wf)[..2], [("a".into(), Running), ("b".into(), Running)]);
    let mut tasks = HashMap::new();
    done(&mut tasks, "a", true, json!({}));
    assert!(run(&mut wf, &tasks).is_empty(), "join waits for b");
    assert_eq!(wf.nodes[2].status, Waiting);
    done(&mut tasks, "b", true, json!({"ok": false}));
    assert!(run(&mut wf, &tasks).is_empty());
    assert_eq!(status(&wf)[2..], [("join".into(), Skipped), ("after".into(), Skipped)]);
    assert_eq!(wf.status, WorkflowStatus::Completed);
}

#[test]
fn conditions_have_no_loops_and_a_size_cap() {
    for src in [
        "result.items.all(i, i > 0)",
        "result.a.map(task, result.a.map(task, 1)) == []",
        "result.items.exists(x, x == 1)",
    ] {
        let e = Condition::compile(src).unwrap_err();
        assert!(e.contains("loops are not allowed"), "{src}: {e}");
    }
    assert!(Condition::compile("size(result.items) > 0 && 3 in result.items").is_ok());
    let c = Condition::compile("result.ok").unwrap();
    let big = json!({"ok": true, "blob": "x".repeat(70 * 1024)});
    assert!(c.evaluate(&(big, json!({}))).unwrap_err().contains("larger than"));
    assert_eq!(
        Condition::compile(&format!("{}1{}", "(".repeat(40), ")".repeat(40))).unwrap_err(),
        "nested more than 32 levels deep"
    );
    assert_eq!(
        Condition::compile("1 + 2").unwrap().evaluate(&(json!({}), json!({}))),
        Err("answered a number, not true or false".into())
    );
}

#[test]
fn a_failed_workflow_still_follows_its_running_nodes() {
    use NodeStatus::*;
    let mut wf = workflow(vec![node("a"), node("b"), node("c")], vec![edge("a", "c", None, None)]);
    let mut tasks = HashMap::new();
    done(&mut tasks, "a", false, json!(null));
    run(&mut wf, &tasks);
    assert_eq!((wf.status, wf.nodes[1].status), (WorkflowStatus::Failed, Running));
    done(&mut tasks, "b", true, json!("late"));
    let step = advance(&wf, &tasks, chrono::Utc::now());
    assert!(step.changed && step.start.is_empty());
    assert_eq!(step.workflow.nodes[1].status, Completed, "b's end is shown");
}

#[test]
fn large_inputs_are_passed_by_their_task_and_spawned_nodes_have_their_own_type() {
    let mut wf = workflow(vec![node("a"), node("b")], vec![edge("a", "b", None, None)]);
    let mut tasks = HashMap::new();
    done(&mut tasks, "a", true, json!({"blob": "x".repeat(200 * 1024)}));
    run(&mut wf, &tasks);
    let input = node_input(&wf, "b", &tasks);
    assert_eq!(
        input["inputs"]["a"],
        json!({"status": "completed", "result_in_task": "t-a"})
    );
    assert_eq!(task_type_of("0f8fad5b-d9cb", &wf.nodes[0]), "workflow");
    let mut spawning = wf.nodes[0].clone();
    spawning.spec.profile = Some("write".into());
    assert_eq!(task_type_of("0f8fad5b-d9cb", &spawning), "workflow-0f8fad5b-a");
    spawning.spec.task_type = Some("build".into());
    assert_eq!(task_type_of("0f8fad5b-d9cb", &spawning), "build");
}
