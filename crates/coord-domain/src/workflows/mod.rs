//! Graph workflows and swarms (docs/orchestration.md): nodes are tasks of the work queue,
//! edges carry a condition on the upstream task's outcome — `when: success|failure|always`
//! or a CEL expression (`result.status == "passed" && result.coverage > 0.8`) compiled
//! and checked when the workflow is defined. A node starts once every input is resolved
//! and its join holds (`all`, the default: every incoming edge taken; `any`: one);
//! otherwise it is skipped, and skipping propagates. A failed node whose failure no
//! outgoing edge takes fails the workflow. The state is a record in the database, moved
//! on by [`advance`] from the stored task outcomes, so a restarted coordinator picks up
//! where it was. A swarm is a workflow of independent nodes drained by spawned members.
//! Pure: the service stores, starts and follows.

pub mod api;
pub mod condition;
pub mod graph;

#[cfg(test)]
mod tests;

pub use condition::Condition;
pub use graph::{EdgeSpec, Join, NodeSpec, When, check_definition};

use crate::Timestamp;
use crate::agents::FieldError;
use crate::queue::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

pub const MAX_NODES: usize = 50;
pub const MAX_EDGES: usize = 200;
pub const MAX_NAME_LEN: usize = 100;
/// The task type of a node that names none.
pub const DEFAULT_TASK_TYPE: &str = "workflow";
/// The most bytes of upstream results (and the workflow's input) a node's task carries;
/// the queue's input_data limit is 256 KiB.
pub const MAX_INPUTS_BYTES: usize = 192 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Workflow,
    Swarm,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Workflow => "workflow",
            Self::Swarm => "swarm",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowStatus {
    Running,
    Completed,
    Failed,
}

impl WorkflowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Inputs not resolved yet.
    Waiting,
    /// Its task is in the queue (pending or claimed).
    Running,
    Completed,
    Failed,
    /// Not run: its join did not hold (or the workflow failed before it).
    Skipped,
}

impl NodeStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Skipped)
    }
}

/// One node as stored: its definition and where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeState {
    #[serde(flatten)]
    pub spec: NodeSpec,
    pub status: NodeStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Why it was skipped, or an edge condition that could not be evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The agent coord spawned for it (a node with `agent` or `profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_agent_id: Option<String>,
}

/// A workflow (or swarm) as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Workflow {
    pub workflow_id: String,
    pub kind: Kind,
    pub name: String,
    pub created_by: String,
    /// The creator's agent type: the agents spawned for its nodes are spawned as it.
    #[serde(default = "default_type")]
    pub created_by_type: String,
    pub created_at: Timestamp,
    pub status: WorkflowStatus,
    /// In topological order (checked at definition).
    pub nodes: Vec<NodeState>,
    #[serde(default)]
    pub edges: Vec<EdgeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// A swarm's members: the agents spawned to drain its tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
}

fn default_type() -> String {
    "cli".into()
}

/// A node's task type: its own, else `workflow` — or, for a node coord spawns an agent
/// for, one of its own (`workflow-<id>-<node>`), so that agent claims this node's task
/// and no other workflow's.
pub fn task_type_of(workflow_id: &str, node: &NodeState) -> String {
    match (&node.spec.task_type, node.spec.spawns()) {
        (Some(t), _) => t.clone(),
        (None, true) => format!(
            "{DEFAULT_TASK_TYPE}-{}-{}",
            &workflow_id[..workflow_id.len().min(8)],
            node.spec.id
        ),
        (None, false) => DEFAULT_TASK_TYPE.into(),
    }
}

/// What a spawned node's agent is asked: the node's task, and how to claim and end it.
pub fn node_prompt(wf: &Workflow, node: &NodeState) -> String {
    let task_type = task_type_of(&wf.workflow_id, node);
    format!(
        "{task}\n\nThis is node \"{id}\" of workflow \"{name}\" ({wid}); its task is {tid} in coord's work \
         queue. Claim it with coord's get_work tool (task_types [\"{task_type}\"]); its input_data holds the \
         workflow input and the results of the nodes before it. When done, call complete_work with its task_id, \
         success (false if it failed) and result: a JSON object saying what you found (for example {{\"status\": \
         \"passed\"}}); what follows in the workflow depends on it. Then answer with a one-line summary.",
        task = node.spec.task,
        id = node.spec.id,
        name = wf.name,
        wid = wf.workflow_id,
        tid = node.task_id.as_deref().unwrap_or("(not queued)"),
    )
}

impl Workflow {
    /// A new workflow, running, its nodes (in topological order) waiting.
    #[allow(clippy::too_many_arguments)] // the record's fields, named at the call
    pub fn new(
        workflow_id: String,
        kind: Kind,
        name: &str,
        created_by: &crate::Identity,
        created_at: Timestamp,
        order: Vec<NodeSpec>,
        edges: Vec<EdgeSpec>,
        input: Option<Value>,
    ) -> Self {
        Workflow {
            workflow_id,
            kind,
            name: name.to_string(),
            created_by: created_by.agent_id.clone(),
            created_by_type: created_by.agent_type.clone(),
            created_at,
            status: WorkflowStatus::Running,
            nodes: order
                .into_iter()
                .map(|spec| NodeState {
                    spec,
                    status: NodeStatus::Waiting,
                    task_id: None,
                    reason: None,
                    spawned_agent_id: None,
                })
                .collect(),
            edges,
            input,
            error: None,
            ended_at: None,
            members: Vec::new(),
        }
    }
}

/// What the queue says of a node's task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    pub status: TaskStatus,
    pub result: Option<Value>,
    pub attempts: i32,
    pub failure_reason: Option<String>,
    pub error_message: Option<String>,
}

/// What [`advance`] decided: the workflow as it is now, and the nodes whose tasks must
/// be created (in the same transaction as the record).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub workflow: Workflow,
    pub start: Vec<String>,
    /// Whether anything changed (nothing to store otherwise).
    pub changed: bool,
}

/// The node's status from its task's.
fn from_task(t: &TaskOutcome) -> NodeStatus {
    match t.status {
        TaskStatus::Pending | TaskStatus::Claimed => NodeStatus::Running,
        TaskStatus::Completed => NodeStatus::Completed,
        TaskStatus::Failed | TaskStatus::Cancelled => NodeStatus::Failed,
    }
}

/// Whether `edge` is taken, given its source's state and task: `Err` when its condition
/// could not be evaluated (not taken either; the reason is shown on the target).
fn taken(edge: &EdgeSpec, source: &NodeState, task: Option<&TaskOutcome>) -> Result<bool, String> {
    let status = source.status;
    if !matches!(status, NodeStatus::Completed | NodeStatus::Failed) {
        return Ok(false);
    }
    if let Some(src) = &edge.condition {
        let condition = Condition::compile(src).map_err(|e| e.to_string())?;
        return condition.evaluate(&context(source, task));
    }
    Ok(match edge.when.unwrap_or(When::Success) {
        When::Success => status == NodeStatus::Completed,
        When::Failure => status == NodeStatus::Failed,
        When::Always => true,
    })
}

/// The variables a condition sees: `result` (the task's result, `null` when none) and
/// `task` (`status`, `attempts`, `failure_reason`, `error`).
fn context(source: &NodeState, task: Option<&TaskOutcome>) -> (Value, Value) {
    let result = task.and_then(|t| t.result.clone()).unwrap_or(Value::Null);
    let task = serde_json::json!({
        "status": match source.status { NodeStatus::Completed => "completed", _ => "failed" },
        "attempts": task.map_or(0, |t| t.attempts),
        "failure_reason": task.and_then(|t| t.failure_reason.clone()).unwrap_or_default(),
        "error": task.and_then(|t| t.error_message.clone()).unwrap_or_default(),
    });
    (result, task)
}

/// Moves the workflow on from its tasks' outcomes (by task id): nodes follow their
/// tasks; a waiting node whose inputs are all resolved starts (its join holds) or is
/// skipped; a failure no edge takes fails the workflow (nothing more starts, what
/// waits is skipped); the workflow ends when no node waits or runs. Idempotent.
pub fn advance(current: &Workflow, tasks: &HashMap<String, TaskOutcome>, now: Timestamp) -> Step {
    let mut wf = current.clone();
    let mut start = Vec::new();
    if wf.status != WorkflowStatus::Running {
        // Nothing more starts; what was running still follows its task.
        for n in &mut wf.nodes {
            if n.status == NodeStatus::Running
                && let Some(t) = n.task_id.as_ref().and_then(|t| tasks.get(t))
            {
                n.status = from_task(t);
            }
        }
        let changed = wf != *current;
        return Step {
            workflow: wf,
            start,
            changed,
        };
    }
    let index: HashMap<String, usize> = wf
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.spec.id.clone(), i))
        .collect();
    let task_of = |n: &NodeState| n.task_id.as_ref().and_then(|t| tasks.get(t));
    // Nodes are in topological order: one pass resolves everything that can be.
    for i in 0..wf.nodes.len() {
        if wf.nodes[i].status == NodeStatus::Running
            && let Some(t) = task_of(&wf.nodes[i])
        {
            wf.nodes[i].status = from_task(t);
        }
        if wf.nodes[i].status != NodeStatus::Waiting {
            continue;
        }
        let id = wf.nodes[i].spec.id.clone();
        let inputs: Vec<&EdgeSpec> = wf.edges.iter().filter(|e| e.to == id).collect();
        if inputs.iter().any(|e| !wf.nodes[index[&e.from]].status.is_terminal()) {
            continue;
        }
        let mut not_taken = Vec::new();
        let mut any = inputs.is_empty();
        for e in &inputs {
            let source = &wf.nodes[index[&e.from]];
            match taken(e, source, task_of(source)) {
                Ok(true) => any = true,
                Ok(false) => not_taken.push(format!("{} ({})", e.describe(), source_state(source))),
                Err(why) => not_taken.push(format!("{}: condition error: {why}", e.describe())),
            }
        }
        let runs = match wf.nodes[i].spec.join.unwrap_or(Join::All) {
            Join::All => not_taken.is_empty(),
            Join::Any => any,
        };
        if runs {
            wf.nodes[i].status = NodeStatus::Running;
            if !not_taken.is_empty() {
                wf.nodes[i].reason = Some(format!("join any; not taken: {}", not_taken.join("; ")));
            }
            start.push(id);
        } else {
            wf.nodes[i].status = NodeStatus::Skipped;
            wf.nodes[i].reason = Some(format!("not taken: {}", not_taken.join("; ")));
        }
    }
    // A failure that no outgoing edge takes fails the workflow, visibly.
    let unhandled: Vec<String> = wf
        .nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Failed)
        .filter(|n| {
            !wf.edges
                .iter()
                .filter(|e| e.from == n.spec.id)
                .any(|e| taken(e, n, task_of(n)) == Ok(true))
        })
        .map(|n| n.spec.id.clone())
        .collect();
    if !unhandled.is_empty() && wf.kind == Kind::Workflow {
        let nodes: Vec<String> = unhandled
            .iter()
            .map(|id| {
                let n = &wf.nodes[index[id]];
                let why = task_of(n)
                    .and_then(|t| t.error_message.clone().or(t.failure_reason.clone()))
                    .unwrap_or_else(|| "failed".into());
                format!("{id} ({why})")
            })
            .collect();
        wf.status = WorkflowStatus::Failed;
        wf.error = Some(format!(
            "node {} failed and no edge handles the failure (add an edge with when: failure)",
            nodes.join(", ")
        ));
        // What has not started will not: the workflow has failed.
        for n in &mut wf.nodes {
            if n.status == NodeStatus::Waiting {
                n.status = NodeStatus::Skipped;
                n.reason = Some("the workflow failed before its inputs resolved".into());
            }
        }
        start.clear();
        for n in &mut wf.nodes {
            if n.status == NodeStatus::Running && n.task_id.is_none() {
                n.status = NodeStatus::Skipped;
                n.reason = Some("the workflow failed before it started".into());
            }
        }
    } else if wf.nodes.iter().all(|n| n.status.is_terminal()) {
        wf.status = if wf.kind == Kind::Swarm && wf.nodes.iter().any(|n| n.status == NodeStatus::Failed) {
            wf.error = Some("a task of the swarm failed".into());
            WorkflowStatus::Failed
        } else {
            WorkflowStatus::Completed
        };
    }
    if wf.status != WorkflowStatus::Running {
        wf.ended_at = Some(now);
    }
    let changed = wf != *current;
    Step {
        workflow: wf,
        start,
        changed,
    }
}

fn source_state(n: &NodeState) -> &'static str {
    match n.status {
        NodeStatus::Completed => "completed",
        NodeStatus::Failed => "failed",
        NodeStatus::Skipped => "skipped",
        NodeStatus::Waiting => "waiting",
        NodeStatus::Running => "running",
    }
}

/// The task a node's start creates: its text and type, and as input the workflow's
/// input and each upstream node's status and result.
pub fn node_input(wf: &Workflow, node: &str, tasks: &HashMap<String, TaskOutcome>) -> Value {
    let mut inputs = serde_json::Map::new();
    let mut budget = MAX_INPUTS_BYTES.saturating_sub(wf.input.as_ref().map_or(0, |i| i.to_string().len()));
    for e in wf.edges.iter().filter(|e| e.to == node) {
        if let Some(n) = wf.nodes.iter().find(|n| n.spec.id == e.from) {
            let t = n.task_id.as_ref().and_then(|t| tasks.get(t));
            let result = t.and_then(|t| t.result.clone());
            let size = result.as_ref().map_or(0, |r| r.to_string().len());
            // A result that does not fit is passed by its task (get_task reads it), so a
            // large result never stalls the workflow on the task's input limit.
            let entry = if size <= budget {
                budget -= size;
                serde_json::json!({"status": source_state(n), "result": result})
            } else {
                serde_json::json!({"status": source_state(n), "result_in_task": n.task_id})
            };
            inputs.insert(e.from.clone(), entry);
        }
    }
    serde_json::json!({
        "workflow_id": wf.workflow_id,
        "workflow": wf.name,
        "node": node,
        "input": wf.input,
        "inputs": inputs,
    })
}

/// A definition's errors as one refusal: every error in the message, the list in
/// `errors`, the first one's field in `field`.
pub fn definition_error(errors: Vec<FieldError>) -> crate::CoordError {
    let message = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    let mut e = crate::CoordError::new(
        crate::ErrorCode::InvalidArgument,
        format!("the workflow is not valid: {message}"),
    )
    .with_detail("errors", serde_json::json!(errors));
    if let Some(first) = errors.first() {
        e = e.with_field(&first.field);
    }
    e
}
