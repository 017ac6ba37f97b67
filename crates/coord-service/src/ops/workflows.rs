//! Graph workflows and swarms (docs/orchestration.md): `create_workflow` checks the graph
//! (conditions compiled, cycles refused), stores it and puts its first nodes' tasks in
//! the queue; every end of a node's task moves it on ([`moved_on`], run as the follow-up
//! of the operation that ended it, and by every status read, so a workflow whose
//! coordinator restarted between a task's end and its step catches up). `create_swarm`
//! is a workflow of independent tasks with one shared task type and the members spawned
//! to drain them.

use super::{answer, refuse};
use crate::Coordinator;
use crate::follow_up::FollowUp;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::agents::spawn::SpawnAgentRequest;
use coord_domain::profiles::{Need, Permission};
use coord_domain::queue::{NewTask, SubmitWorkRequest, TaskInfo, TaskStatus, validate_submission};
use coord_domain::workflows::api::{
    CreateSwarmRequest, CreateSwarmResult, CreateWorkflowRequest, CreateWorkflowResult, ListWorkflowsRequest,
    ListWorkflowsResult, MAX_SWARM_MEMBERS, MAX_SWARM_TASKS, MemberView, NodeView, SwarmRef, WorkflowRef,
    WorkflowSummary, WorkflowView,
};
use coord_domain::workflows::{self, Kind, NodeSpec, NodeStatus, TaskOutcome, Workflow};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode, Identity};
use coord_store::OpCtx;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The audited operation of a workflow moving on.
const WORKFLOW_STEP: &str = "workflow_step";
/// The largest workflow input.
const MAX_INPUT_BYTES: usize = 64 * 1024;
/// Tries of a step that lost a race with another step before giving up.
const STEP_TRIES: usize = 8;

pub struct CreateWorkflow;
impl Operation for CreateWorkflow {
    const NAME: &'static str = "create_workflow";
    const SUMMARY: &'static str = "Define a graph of tasks with conditional edges and start it";
    const DESCRIPTION: &'static str = "Create a graph workflow: nodes are tasks of the work queue ({id, task, \
        task_type (default workflow), priority, join: all|any}), edges say when a node follows another ({from, to, \
        when: success|failure|always} or {from, to, if: a CEL expression on result and task, e.g. \
        result.status == \"passed\" && result.coverage > 0.8}). Checked whole before anything is stored: every \
        error with its field (nodes[1].id, edges[0].if), conditions compiled (unknown variables are errors), cycles \
        refused. The nodes without inputs are queued at once; a node is queued when every input has ended and its \
        join holds (all: every incoming edge taken; any: one), else skipped; a failure no edge takes fails the \
        workflow. Workers claim node tasks with get_work(task_type) and end them with complete_work; each task's \
        input_data has the workflow input and its inputs' results. Answers {success:true, workflow_id, status, \
        started, order}; follow it with get_workflow_status.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::ManageSwarm, 0).starting_work();
    const HTTP: &'static [Http] = &[Http::post("/workflows").errors(&[403])];
    const EXAMPLE: &'static str = "{\"name\": \"fix-and-review\", \"nodes\": [{\"id\": \"test\", \"task\": \"Run \
        the tests; answer {status, coverage}\"}, {\"id\": \"fix\", \"task\": \"Fix the failing tests\"}, {\"id\": \
        \"review\", \"task\": \"Review the change\"}], \"edges\": [{\"from\": \"test\", \"to\": \"fix\", \"when\": \
        \"failure\"}, {\"from\": \"test\", \"to\": \"review\", \"if\": \"result.status == 'passed'\"}]}";
    type Request = CreateWorkflowRequest;
    type Response = CreateWorkflowResult;
    type Args = Workflow;

    fn validate(c: &Coordinator, who: &Identity, req: CreateWorkflowRequest) -> CoordResult<Workflow> {
        let order =
            workflows::check_definition(&req.name, &req.nodes, &req.edges).map_err(workflows::definition_error)?;
        // The agents its nodes name exist here (and agents can be spawned at all).
        for (i, n) in req.nodes.iter().enumerate() {
            if !n.spawns() {
                continue;
            }
            let field = format!("nodes[{i}].agent");
            let launcher = c.launcher().map_err(|e| e.with_field(&field))?;
            if let Some(name) = &n.agent {
                launcher
                    .definition(name)
                    .map_err(|e| CoordError::new(e.code, format!("{field}: {}", e.message)).with_field(&field))?;
            }
        }
        let input = coord_domain::validate::json_payload("input", req.input)?;
        // Every node's task carries it (and its inputs' results) within the queue's limit.
        if input.as_ref().is_some_and(|i| i.to_string().len() > MAX_INPUT_BYTES) {
            return Err(CoordError::new(
                ErrorCode::PayloadTooLarge,
                format!("input: larger than {MAX_INPUT_BYTES} bytes (every node's task carries it)"),
            )
            .with_field("input"));
        }
        Ok(new_workflow(
            who,
            Kind::Workflow,
            req.name.trim(),
            order,
            req.edges,
            input,
        ))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, wf: Workflow) -> CoordResult<CreateWorkflowResult> {
        if wf.nodes.iter().any(|n| n.spec.spawns())
            && let Err(e) = spawns_for_later(&ctx)
        {
            return refuse(c, &ctx, e).await;
        }
        let (wf, tasks) = match first_step(c, wf) {
            Ok(step) => step,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let started = tasks.iter().map(|(n, _)| n.clone()).collect();
        let result = CreateWorkflowResult {
            success: true,
            workflow_id: wf.workflow_id.clone(),
            status: wf.status,
            started,
            order: wf.nodes.iter().map(|n| n.spec.id.clone()).collect(),
            spawned: Default::default(),
            not_spawned: Default::default(),
        };
        let started: Vec<String> = tasks.iter().map(|(n, _)| n.clone()).collect();
        let answer = serde_json::to_value(&result).unwrap_or(Value::Null);
        c.store().create_workflow(ctx, wf.clone(), tasks, answer).await?;
        let mut result = result;
        let followed = c.follow(node_spawns(&wf, &started)).await;
        for spawned in followed
            .spawned
            .into_iter()
            .filter(|s| s.workflow.as_ref() == Some(&wf.workflow_id))
        {
            match spawn_outcome(&spawned.agent) {
                Ok(agent) => result.spawned.insert(spawned.label, agent),
                Err(why) => result.not_spawned.insert(spawned.label, why),
            };
        }
        Ok(result)
    }
}

/// Agents spawned on a caller's behalf after its request (a workflow's later nodes, a
/// swarm's members) are spawned as its identity without its key: a managed key's limits,
/// expiry and revocation could not follow them. So only a local or operator caller may
/// ask for them (least privilege; a cloud agent with a key spawns with spawn_agent).
fn spawns_for_later(ctx: &OpCtx) -> CoordResult<()> {
    match &ctx.origin {
        None => Ok(()),
        Some(_) => Err(CoordError::new(
            ErrorCode::OperationNotPermitted,
            "nodes or members that coord spawns later need a local or operator caller: a managed key's limits \
             and revocation cannot follow spawns made after its request (spawn with spawn_agent instead)",
        )),
    }
}

/// The follow-ups of nodes just queued that name an agent: each spawned as the
/// workflow's creator (spawn_agent's every rule applies), then each agent, or why it
/// could not be spawned, recorded on its node. A node whose agent could not be spawned
/// keeps its task in the queue for any worker.
fn node_spawns(wf: &Workflow, started: &[String]) -> Vec<FollowUp> {
    let creator =
        coord_domain::access::Principal::local(Caller::new(wf.created_by.clone(), wf.created_by_type.clone()));
    let nodes: Vec<_> = wf
        .nodes
        .iter()
        .filter(|n| started.contains(&n.spec.id) && n.spec.spawns())
        .collect();
    if nodes.is_empty() {
        return Vec::new();
    }
    let mut follow_ups: Vec<FollowUp> = nodes
        .iter()
        .map(|node| FollowUp::Spawn {
            by: creator.clone(),
            label: node.spec.id.clone(),
            workflow: Some(wf.workflow_id.clone()),
            request: Box::new(SpawnAgentRequest {
                agent: node.spec.agent.clone(),
                profile: node.spec.profile.clone(),
                task: workflows::node_prompt(wf, node),
                runtime: node.spec.runtime.clone(),
                task_type: Some("workflow_node".into()),
                timeout_minutes: None,
                isolation: None,
                keep_worktree: None,
            }),
        })
        .collect();
    follow_ups.push(FollowUp::RecordSpawned {
        workflow_id: wf.workflow_id.clone(),
        nodes: nodes.iter().map(|n| n.spec.id.clone()).collect(),
    });
    follow_ups
}

/// A node's spawn as its record keeps it: the agent, or why there is none.
pub(crate) fn spawn_outcome(agent: &CoordResult<String>) -> Result<String, String> {
    match agent {
        Ok(agent) => Ok(agent.clone()),
        Err(e) => Err(format!(
            "its agent could not be spawned: {} [{}]",
            e.message,
            e.code.as_str()
        )),
    }
}

/// Records on the workflow's nodes the agents spawned for them, or why none was (another
/// step may come first: tried again on what it stored).
pub(crate) async fn record_spawned(c: &Coordinator, workflow_id: &str, outcomes: &[(String, Result<String, String>)]) {
    if outcomes.is_empty() {
        return;
    }
    let spawned: Vec<Value> = outcomes
        .iter()
        .map(|(n, o)| json!({"node": n, "agent": o.as_ref().ok(), "error": o.as_ref().err()}))
        .collect();
    for _ in 0..STEP_TRIES {
        let Ok(Some((mut current, version, _))) = c.store().workflow(workflow_id).await else {
            break;
        };
        for (id, outcome) in outcomes {
            if let Some(n) = current.nodes.iter_mut().find(|n| &n.spec.id == id) {
                match outcome {
                    Ok(agent) => n.spawned_agent_id = Some(agent.clone()),
                    Err(why) => n.reason = Some(why.clone()),
                }
            }
        }
        let who = Caller::new(current.created_by.clone(), current.created_by_type.clone()).for_audit();
        let parameters = json!({"workflow_id": current.workflow_id, "spawned": spawned});
        let ctx = OpCtx::internal(c.clock.now(), who, WORKFLOW_STEP, parameters);
        match c.store().step_workflow(ctx, version, current, Vec::new()).await {
            Ok(true) => return,
            Ok(false) => continue,
            Err(e) if e.code == ErrorCode::WorkflowBusy => continue,
            Err(e) => {
                tracing::warn!(workflow = %workflow_id, error = %e, "could not record the agents spawned for its nodes");
                return;
            }
        }
    }
}

fn new_workflow(
    who: &Identity,
    kind: Kind,
    name: &str,
    order: Vec<NodeSpec>,
    edges: Vec<workflows::EdgeSpec>,
    input: Option<Value>,
) -> Workflow {
    // Its time is set from the coordinator's clock by its first step.
    Workflow::new(
        crate::new_id(),
        kind,
        name,
        who,
        chrono::Utc::now(),
        order,
        edges,
        input,
    )
}

/// The workflow's first step (no task has ended): the nodes without inputs started.
fn first_step(c: &Coordinator, mut wf: Workflow) -> CoordResult<(Workflow, Vec<(String, NewTask)>)> {
    let now = c.clock.now().unwrap_or_else(chrono::Utc::now);
    wf.created_at = now;
    let step = workflows::advance(&wf, &HashMap::new(), now);
    let mut next = step.workflow;
    let tasks = node_tasks(c, &mut next, &step.start, &HashMap::new())?;
    Ok((next, tasks))
}

/// The tasks of the nodes `start` (their ids set on the nodes).
fn node_tasks(
    c: &Coordinator,
    wf: &mut Workflow,
    start: &[String],
    outcomes: &HashMap<String, TaskOutcome>,
) -> CoordResult<Vec<(String, NewTask)>> {
    let mut tasks = Vec::new();
    for id in start {
        let input = workflows::node_input(wf, id, outcomes);
        // The inputs that completed, as the task's dependencies: the queue holds the
        // order too (they are done, so the task is claimable at once).
        let depends_on: Vec<String> = wf
            .edges
            .iter()
            .filter(|e| &e.to == id)
            .filter_map(|e| wf.nodes.iter().find(|n| n.spec.id == e.from))
            .filter(|n| n.status == NodeStatus::Completed)
            .filter_map(|n| n.task_id.clone())
            .collect();
        let Some(node) = wf.nodes.iter_mut().find(|n| &n.spec.id == id) else {
            continue;
        };
        let task = validate_submission(
            SubmitWorkRequest {
                task_type: workflows::task_type_of(&wf.workflow_id, node),
                task_description: node.spec.task.clone(),
                input_data: Some(input),
                priority: node.spec.priority,
                depends_on: (!depends_on.is_empty()).then_some(depends_on),
            },
            crate::new_id(),
            c.config().max_attempts,
        )?;
        node.task_id = Some(task.task_id.clone());
        tasks.push((id.clone(), task));
    }
    Ok(tasks)
}

fn outcomes(tasks: &[TaskInfo]) -> HashMap<String, TaskOutcome> {
    tasks
        .iter()
        .map(|t| {
            (
                t.task_id.clone(),
                TaskOutcome {
                    status: t.status,
                    result: t.result.clone(),
                    attempts: t.attempts,
                    failure_reason: t.failure_reason.clone(),
                    error_message: t.error_message.clone(),
                },
            )
        })
        .collect()
}

fn not_found(id: &str, kind: Kind) -> CoordError {
    let (what, field) = match kind {
        Kind::Workflow => ("workflow", "workflow_id"),
        Kind::Swarm => ("swarm", "swarm_id"),
    };
    CoordError::new(ErrorCode::NotFound, format!("no {what} {id}")).with_field(field)
}

/// A workflow moved on and its follow-ups run: the workflow and its tasks as they are
/// after (read again when agents were spawned for its nodes, which their records name).
async fn caught_up(c: &Coordinator, workflow_id: &str) -> CoordResult<Option<(Workflow, Vec<TaskInfo>)>> {
    let mut follow_ups = Vec::new();
    let found = moved_on(c, workflow_id, &mut follow_ups).await;
    if follow_ups.is_empty() {
        return found;
    }
    // Run even when a later step failed: the steps stored before it queued their nodes.
    c.follow(follow_ups).await;
    found?;
    Ok(c.store().workflow(workflow_id).await?.map(|(wf, _, tasks)| (wf, tasks)))
}

/// Moves the workflow on from its tasks as stored (`workflows::advance`), as many steps
/// as it takes; answers it and its tasks as they are after. The follow-ups of the steps
/// this call stored (the agents of the nodes they queued) go to `follow_ups` as each is
/// stored, so a failure after one was stored does not lose them. A step that lost a race
/// with another is tried again on what that one stored.
pub(crate) async fn moved_on(
    c: &Coordinator,
    workflow_id: &str,
    follow_ups: &mut Vec<FollowUp>,
) -> CoordResult<Option<(Workflow, Vec<TaskInfo>)>> {
    for _ in 0..STEP_TRIES {
        let Some((wf, version, tasks)) = c.store().workflow(workflow_id).await? else {
            return Ok(None);
        };
        let now = c.clock.now().unwrap_or_else(chrono::Utc::now);
        let known = outcomes(&tasks);
        let step = workflows::advance(&wf, &known, now);
        if !step.changed {
            return Ok(Some((wf, tasks)));
        }
        let mut next = step.workflow;
        let new = node_tasks(c, &mut next, &step.start, &known)?;
        let parameters = json!({
            "workflow_id": next.workflow_id,
            "status": next.status,
            "started": step.start,
            "error": next.error,
        });
        let who = Caller::new(next.created_by.clone(), next.created_by_type.clone()).for_audit();
        let ctx = OpCtx::internal(c.clock.now(), who, WORKFLOW_STEP, parameters);
        let stored = match c.store().step_workflow(ctx, version, next.clone(), new).await {
            Ok(stored) => stored,
            Err(e) if e.code == ErrorCode::WorkflowBusy => false,
            Err(e) => return Err(e),
        };
        if stored {
            // This step won: the agents of the nodes it queued are its to spawn.
            follow_ups.extend(node_spawns(&next, &step.start));
            if step.start.is_empty() {
                // Nothing new was queued: what was read is what there is.
                let found = c.store().workflow(workflow_id).await?;
                return Ok(found.map(|(wf, _, tasks)| (wf, tasks)));
            }
        }
        // Queued new tasks (or lost a race): read again; the next round settles.
    }
    Err(CoordError::new(
        ErrorCode::WorkflowBusy,
        format!("workflow {workflow_id} is being moved on by others: try again"),
    ))
}

/// The follow-up of an operation that ended a task: its workflow, if it is a node's,
/// moves on (its next nodes queued, or skipped).
pub(crate) fn node_ended(workflow_id: Option<&String>) -> Vec<FollowUp> {
    workflow_id
        .map(|id| FollowUp::WorkflowMoves(id.clone()))
        .into_iter()
        .collect()
}

fn view(wf: &Workflow, tasks: &[TaskInfo], members: Vec<MemberView>) -> WorkflowView {
    let by_id: HashMap<&str, &TaskInfo> = tasks.iter().map(|t| (t.task_id.as_str(), t)).collect();
    let mut results = serde_json::Map::new();
    let mut summary = serde_json::Map::new();
    let nodes: Vec<NodeView> = wf
        .nodes
        .iter()
        .map(|n| {
            let t = n.task_id.as_deref().and_then(|id| by_id.get(id).copied());
            let status = serde_json::to_value(n.status).unwrap_or(Value::Null);
            let key = status.as_str().unwrap_or("unknown").to_string();
            let count = summary.get(&key).and_then(Value::as_u64).unwrap_or(0) + 1;
            summary.insert(key, json!(count));
            results.insert(
                n.spec.id.clone(),
                json!({"status": status, "result": t.and_then(|t| t.result.clone())}),
            );
            let started_at = t.and_then(|t| t.claimed_at);
            let completed_at = t.and_then(|t| t.completed_at);
            NodeView {
                id: n.spec.id.clone(),
                status: n.status,
                task: n.spec.task.clone(),
                task_type: workflows::task_type_of(&wf.workflow_id, n),
                task_id: n.task_id.clone(),
                agent: t.and_then(|t| t.claimed_by.clone()),
                spawned_agent_id: n.spawned_agent_id.clone(),
                attempts: t.map_or(0, |t| t.attempts),
                result: t.and_then(|t| t.result.clone()),
                error: t.and_then(|t| t.error_message.clone().or(t.failure_reason.clone())),
                reason: n.reason.clone(),
                started_at,
                completed_at,
                duration_seconds: match (started_at, completed_at) {
                    (Some(s), Some(e)) => Some((e - s).num_milliseconds() as f64 / 1000.0),
                    _ => None,
                },
            }
        })
        .collect();
    WorkflowView {
        success: true,
        workflow_id: wf.workflow_id.clone(),
        kind: wf.kind,
        name: wf.name.clone(),
        status: wf.status,
        error: wf.error.clone(),
        created_by: wf.created_by.clone(),
        created_at: wf.created_at,
        ended_at: wf.ended_at,
        nodes,
        results,
        summary,
        members,
        task_type: (wf.kind == Kind::Swarm)
            .then(|| wf.nodes.first().and_then(|n| n.spec.task_type.clone()))
            .flatten(),
    }
}

fn workflow_ref(id: &str, field: &str) -> CoordResult<String> {
    coord_domain::queue::parse_task_id(field, id).map_err(|_| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            format!("{field}: {id:?} is not an id coord gave"),
        )
        .with_field(field)
    })
}

pub struct GetWorkflowStatus;
impl Operation for GetWorkflowStatus {
    const NAME: &'static str = "get_workflow_status";
    const SUMMARY: &'static str = "Where a workflow is: each node's status, task, agent and result";
    const DESCRIPTION: &'static str = "The state of a workflow create_workflow made: answers {success:true, \
        workflow_id, name, status (running, completed, failed), error (why it failed), nodes: [{id, status \
        (waiting, running, completed, failed, skipped), task_id, agent, attempts, result, error, reason (why \
        skipped), started_at, completed_at, duration_seconds}], results: {node: {status, result}} (the aggregated \
        results), summary (nodes by status)}. Moves the workflow on first if a task ended since.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::get("/workflows/{workflow_id}")
        .input(Input::Path("workflow_id"))
        .errors(&[404])];
    const EXAMPLE: &'static str = "{\"workflow_id\": \"0f8fad5b-d9cb-469f-a165-70867728950e\"}";
    type Request = WorkflowRef;
    type Response = WorkflowView;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: WorkflowRef) -> CoordResult<String> {
        workflow_ref(&req.workflow_id, "workflow_id")
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<WorkflowView> {
        let found = match caught_up(c, &id).await {
            Ok(Some((wf, tasks))) if wf.kind == Kind::Workflow => view(&wf, &tasks, Vec::new()),
            Ok(_) => return refuse(c, &ctx, not_found(&id, Kind::Workflow)).await,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        answer(c, &ctx, found).await
    }
}

pub struct ListWorkflows;
impl Operation for ListWorkflows {
    const NAME: &'static str = "list_workflows";
    const SUMMARY: &'static str = "The workflows and swarms, newest first";
    const DESCRIPTION: &'static str = "Lists workflows and swarms (yours; an administrator's: everyone's), \
        newest first, at most limit (default 50, at most 500). Answers {success:true, workflows: [{workflow_id, \
        kind, name, status, created_by, created_at, nodes}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::get("/workflows")];
    type Request = ListWorkflowsRequest;
    type Response = ListWorkflowsResult;
    type Args = i64;

    fn validate(_: &Coordinator, _: &Identity, req: ListWorkflowsRequest) -> CoordResult<i64> {
        coord_domain::validate::int_in_range("limit", req.limit, 50, 1, 500, ErrorCode::InvalidArgument)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, limit: i64) -> CoordResult<ListWorkflowsResult> {
        let mine = (!ctx.audit_admin).then(|| ctx.who.agent_id.clone());
        let rows = match c.store().workflows(mine, limit).await {
            Ok(rows) => rows,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let workflows = rows
            .into_iter()
            .map(|w| WorkflowSummary {
                nodes: w.nodes.len(),
                workflow_id: w.workflow_id,
                kind: w.kind,
                name: w.name,
                status: w.status,
                created_by: w.created_by,
                created_at: w.created_at,
            })
            .collect();
        answer(
            c,
            &ctx,
            ListWorkflowsResult {
                success: true,
                workflows,
            },
        )
        .await
    }
}

pub struct CreateSwarm;
impl Operation for CreateSwarm {
    const NAME: &'static str = "create_swarm";
    const SUMMARY: &'static str = "Spawn agents that drain a shared queue of tasks together";
    const DESCRIPTION: &'static str = "Create a swarm: the tasks (1 to 50 descriptions) go into the work queue \
        under one task type (task_type, default swarm-<id>), then each member of agents (1 to 10: {agent} of the registry or \
        {profile}, optional runtime) is spawned with spawn_agent (every rule of it: pre-flight, least privilege, \
        limits, supervision) and told the swarm's context: its members, the shared task type, to claim with \
        get_work and complete with complete_work until none is left, to lock files before editing and leave \
        handoffs for the others. Answers {success:true, swarm_id, task_type, tasks, members}; read the aggregated \
        results with get_swarm_results. A member that cannot be spawned is left out (logged, its refusal audited); if \
        none can, the swarm's tasks are failed with the reasons and the answer is spawn_unavailable.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::ManageSwarm, 0).starting_work();
    const HTTP: &'static [Http] = &[Http::post("/swarms").errors(&[403, 404, 409, 503])];
    const EXAMPLE: &'static str = "{\"name\": \"lint-fixes\", \"agents\": [{\"profile\": \"write\"}, {\"profile\": \
        \"write\", \"runtime\": \"codex\"}], \"tasks\": [\"Fix the lint warnings in src/a.rs\", \"Fix the lint \
        warnings in src/b.rs\"]}";
    type Request = CreateSwarmRequest;
    type Response = CreateSwarmResult;
    type Args = (Workflow, Vec<SpawnAgentRequest>);

    fn validate(
        c: &Coordinator,
        who: &Identity,
        req: CreateSwarmRequest,
    ) -> CoordResult<(Workflow, Vec<SpawnAgentRequest>)> {
        let bad = |f: &str, m: String| CoordError::new(ErrorCode::InvalidArgument, m).with_field(f);
        if req.agents.is_empty() || req.agents.len() > MAX_SWARM_MEMBERS {
            return Err(bad("agents", format!("give 1 to {MAX_SWARM_MEMBERS} members")));
        }
        if req.tasks.is_empty() || req.tasks.len() > MAX_SWARM_TASKS {
            return Err(bad("tasks", format!("give 1 to {MAX_SWARM_TASKS} tasks")));
        }
        let id = crate::new_id();
        let task_type = match &req.task_type {
            Some(t) => coord_domain::validate::required_text("task_type", t, coord_domain::validate::MAX_SHORT_TEXT)?,
            None => format!("swarm-{}", &id[..8]),
        };
        let nodes: Vec<NodeSpec> = req
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| NodeSpec {
                id: format!("task-{}", i + 1),
                task: t.clone(),
                task_type: Some(task_type.clone()),
                priority: None,
                join: None,
                agent: None,
                profile: None,
                runtime: None,
            })
            .collect();
        let order = workflows::check_definition(&req.name, &nodes, &[]).map_err(|errors| {
            // A node's field is a task's here.
            let errors = errors
                .into_iter()
                .map(|mut e| {
                    e.field = e.field.replace("nodes[", "tasks[");
                    if let Some(at) = e.field.strip_suffix(".task") {
                        e.field = at.to_string();
                    }
                    e
                })
                .collect();
            workflows::definition_error(errors)
        })?;
        let mut wf = new_workflow(who, Kind::Swarm, req.name.trim(), order, Vec::new(), None);
        wf.workflow_id = id;
        let members: Vec<String> = req
            .agents
            .iter()
            .map(|m| {
                m.agent
                    .clone()
                    .or(m.profile.as_ref().map(|p| format!("a {p} worker")))
                    .unwrap_or_default()
            })
            .collect();
        let mut spawns = Vec::new();
        for (i, m) in req.agents.into_iter().enumerate() {
            let context = member_context(&wf, &task_type, i, &members);
            let spawn = SpawnAgentRequest {
                agent: m.agent,
                profile: m.profile,
                task: context,
                runtime: m.runtime,
                task_type: Some("swarm_member".into()),
                timeout_minutes: req.timeout_minutes,
                isolation: m.isolation,
                keep_worktree: None,
            };
            // Every member checked before anything is created.
            super::spawn::SpawnAgent::validate(c, who, spawn.clone()).map_err(|e| {
                let field = format!("agents[{i}].{}", e.field.clone().unwrap_or_default());
                CoordError::new(e.code, format!("agents[{i}]: {}", e.message)).with_field(field.trim_end_matches('.'))
            })?;
            spawns.push(spawn);
        }
        Ok((wf, spawns))
    }

    async fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        (wf, spawns): (Workflow, Vec<SpawnAgentRequest>),
    ) -> CoordResult<CreateSwarmResult> {
        if let Err(e) = c.launcher().map(|_| ()).and_then(|()| spawns_for_later(&ctx)) {
            return refuse(c, &ctx, e).await;
        }
        let swarm_id = wf.workflow_id.clone();
        let task_type = wf.nodes[0].spec.task_type.clone().unwrap_or_default();
        let (wf, tasks) = match first_step(c, wf) {
            Ok(step) => step,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let task_ids: Vec<String> = tasks.iter().map(|(_, t)| t.task_id.clone()).collect();
        let answer = json!({"swarm_id": swarm_id, "task_type": task_type, "tasks": task_ids});
        c.store().create_workflow(ctx.clone(), wf, tasks, answer).await?;
        // Spawned as the caller (the swarm's operation admitted it; each spawn is held
        // to the caller's profile again).
        let me =
            coord_domain::access::Principal::local(Caller::new(ctx.who.agent_id.clone(), ctx.who.agent_type.clone()));
        let spawns = spawns
            .into_iter()
            .enumerate()
            .map(|(i, request)| FollowUp::Spawn {
                by: me.clone(),
                label: format!("agents[{i}]"),
                workflow: None,
                request: Box::new(request),
            })
            .collect();
        let mut members = Vec::new();
        let mut refusals = Vec::new();
        for spawned in c.follow(spawns).await.spawned {
            match spawned.agent {
                Ok(agent) => members.push(agent),
                Err(e) => refusals.push(format!("{}: {} [{}]", spawned.label, e.message, e.code.as_str())),
            }
        }
        if let Err(e) = record_members(c, &swarm_id, &members).await {
            // The members run whatever happened here: their spawns are recorded and audited.
            tracing::warn!(swarm = %swarm_id, error = %e, "could not record the swarm's members");
        }
        if members.is_empty() {
            // Nobody will do them: they are failed, so nothing waits; its own tasks only
            // (another's of the same task type stay as they are).
            let why = format!("no member of the swarm could be spawned: {}", refusals.join("; "));
            let who = Caller::new(ctx.who.agent_id.clone(), ctx.who.agent_type.clone()).for_audit();
            let fail = OpCtx::internal(
                c.clock.now(),
                who,
                WORKFLOW_STEP,
                json!({"workflow_id": swarm_id, "fail_tasks": task_ids}),
            );
            if let Err(e) = c.store().fail_pending_tasks(fail, task_ids.clone(), why.clone()).await {
                tracing::warn!(swarm = %swarm_id, error = %e, "could not fail the tasks of a swarm without members");
            }
            caught_up(c, &swarm_id).await?;
            let e = CoordError::new(
                ErrorCode::SpawnUnavailable,
                format!("{why} (swarm {swarm_id}: its tasks are failed; see coord swarm results {swarm_id})"),
            )
            .with_detail("swarm_id", swarm_id.clone());
            return refuse(c, &ctx, e).await;
        }
        let result = CreateSwarmResult {
            success: true,
            swarm_id,
            task_type,
            tasks: task_ids,
            members,
        };
        if !refusals.is_empty() {
            tracing::warn!(refused = ?refusals, "some members of the swarm could not be spawned");
        }
        Ok(result)
    }
}

/// What a member is told: the swarm, its members, how to work with them.
fn member_context(wf: &Workflow, task_type: &str, me: usize, members: &[String]) -> String {
    let others: Vec<String> = members
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != me)
        .map(|(_, m)| m.clone())
        .collect();
    format!(
        "You are one of {n} members of the swarm \"{name}\" (swarm_id {id}); the others are: {others}. \
         The swarm's {t} tasks are in coord's work queue under task_type \"{task_type}\". Work through coord's \
         MCP tools until none is left: call get_work with task_types [\"{task_type}\"]; do the task it gives; \
         acquire_lock on a file before you edit it and release_lock after; then complete_work with its task_id, \
         success true and your result (success false and error_message if you cannot do it). Repeat until \
         get_work answers no_tasks_available. Leave notes the others need with write_handoff. Then answer with \
         the task ids you completed.",
        n = members.len(),
        name = wf.name,
        id = wf.workflow_id,
        others = if others.is_empty() {
            "none".to_string()
        } else {
            others.join(", ")
        },
        t = wf.nodes.len(),
    )
}

/// Stores the swarm's members in its record (another step may come first: tried again).
async fn record_members(c: &Coordinator, swarm_id: &str, members: &[String]) -> CoordResult<()> {
    for _ in 0..STEP_TRIES {
        let Some((mut wf, version, _)) = c.store().workflow(swarm_id).await? else {
            return Err(not_found(swarm_id, Kind::Swarm));
        };
        wf.members = members.to_vec();
        let who = Caller::new(wf.created_by.clone(), wf.created_by_type.clone()).for_audit();
        let ctx = OpCtx::internal(
            c.clock.now(),
            who,
            WORKFLOW_STEP,
            json!({"workflow_id": swarm_id, "members": members}),
        );
        match c.store().step_workflow(ctx, version, wf, Vec::new()).await {
            Ok(true) => return Ok(()),
            Ok(false) => continue,
            Err(e) if e.code == ErrorCode::WorkflowBusy => continue,
            Err(e) => return Err(e),
        }
    }
    Err(CoordError::new(
        ErrorCode::WorkflowBusy,
        format!("swarm {swarm_id} is being moved on by others: try again"),
    ))
}

pub struct GetSwarmResults;
impl Operation for GetSwarmResults {
    const NAME: &'static str = "get_swarm_results";
    const SUMMARY: &'static str = "A swarm's aggregated results: each task's status, result, agent and duration";
    const DESCRIPTION: &'static str = "The aggregated results of a swarm create_swarm made: answers {success:true, \
        workflow_id (the swarm_id), name, status (running until every task ended; failed if one failed), \
        task_type, nodes: [{id, task, status, task_id, agent (who did it), attempts, result, error, \
        duration_seconds}], results: {task: {status, result}}, summary (tasks by status), members: [{agent_id, \
        status, completed}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::get("/swarms/{swarm_id}")
        .input(Input::Path("swarm_id"))
        .errors(&[404])];
    const EXAMPLE: &'static str = "{\"swarm_id\": \"0f8fad5b-d9cb-469f-a165-70867728950e\"}";
    type Request = SwarmRef;
    type Response = WorkflowView;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: SwarmRef) -> CoordResult<String> {
        workflow_ref(&req.swarm_id, "swarm_id")
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<WorkflowView> {
        let (wf, tasks) = match caught_up(c, &id).await {
            Ok(Some((wf, tasks))) if wf.kind == Kind::Swarm => (wf, tasks),
            Ok(_) => return refuse(c, &ctx, not_found(&id, Kind::Swarm)).await,
            Err(e) => return refuse(c, &ctx, e).await,
        };
        let mut members = Vec::new();
        for m in &wf.members {
            let status = match c.store().spawned_agent(m).await {
                Ok(Some((a, _))) => a.status.as_str().to_string(),
                Ok(None) => "unknown".into(),
                Err(e) => return refuse(c, &ctx, e).await,
            };
            let completed = tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Completed && t.claimed_by.as_deref() == Some(m.as_str()))
                .count();
            members.push(MemberView {
                agent_id: m.clone(),
                status,
                completed,
            });
        }
        answer(c, &ctx, view(&wf, &tasks, members)).await
    }
}
