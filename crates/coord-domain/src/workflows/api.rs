//! Requests and answers of the workflow and swarm operations.

use super::{EdgeSpec, Kind, NodeSpec, NodeStatus, WorkflowStatus};
use crate::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `create_workflow`'s request.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkflowRequest {
    /// A name for people.
    pub name: String,
    /// The nodes: `{id, task, task_type?, priority?, join?}`, each a task of the queue.
    pub nodes: Vec<NodeSpec>,
    /// The edges: `{from, to, when?}` (success, failure, always) or `{from, to, if}` (CEL
    /// on `result` and `task`).
    #[serde(default)]
    pub edges: Vec<EdgeSpec>,
    /// Given to every node's task as `input_data.input`.
    #[serde(default)]
    pub input: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreateWorkflowResult {
    pub success: bool,
    pub workflow_id: String,
    pub status: WorkflowStatus,
    /// The nodes whose tasks are in the queue now (those without inputs).
    pub started: Vec<String>,
    /// Every node, in the order it can run.
    pub order: Vec<String>,
    /// The agents spawned for queued nodes that name one (node → agent id).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub spawned: std::collections::BTreeMap<String, String>,
    /// Queued nodes whose agent could not be spawned, and why (their tasks wait in the
    /// queue for any worker).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub not_spawned: std::collections::BTreeMap<String, String>,
}

/// Names a workflow.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowRef {
    pub workflow_id: String,
}

/// One node as `get_workflow_status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeView {
    pub id: String,
    pub status: NodeStatus,
    pub task: String,
    pub task_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who claimed its task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The agent coord spawned for it (a node with agent or profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_agent_id: Option<String>,
    pub attempts: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it was skipped, or which inputs a join `any` went without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
    /// From its claim to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
}

/// `get_workflow_status`' and `get_swarm_results`' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkflowView {
    pub success: bool,
    pub workflow_id: String,
    pub kind: Kind,
    pub name: String,
    pub status: WorkflowStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    pub nodes: Vec<NodeView>,
    /// The aggregated results: `{node: {status, result}}`.
    pub results: serde_json::Map<String, Value>,
    /// Counts of nodes by status.
    pub summary: serde_json::Map<String, Value>,
    /// A swarm's members (spawned agents) and their status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberView>,
    /// A swarm's shared task type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemberView {
    pub agent_id: String,
    /// Its spawn's status (starting, running, completed, …).
    pub status: String,
    /// Tasks of the swarm it completed.
    pub completed: usize,
}

/// `list_workflows`' request.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkflowsRequest {
    /// At most this many, newest first (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkflowSummary {
    pub workflow_id: String,
    pub kind: Kind,
    pub name: String,
    pub status: WorkflowStatus,
    pub created_by: String,
    pub created_at: Timestamp,
    pub nodes: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListWorkflowsResult {
    pub success: bool,
    pub workflows: Vec<WorkflowSummary>,
}

/// A member of a swarm: an agent of the registry or a generic worker of a profile.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwarmMemberSpec {
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub profile: Option<String>,
    /// claude, codex or aider (default: the definition's, else claude).
    #[serde(default)]
    pub runtime: Option<String>,
    /// `shared` (default) or `worktree`: a git worktree of its own (as spawn_agent).
    #[serde(default)]
    pub isolation: Option<crate::agents::isolation::Isolation>,
}

/// `create_swarm`'s request.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSwarmRequest {
    pub name: String,
    /// The members to spawn (1 to 10).
    pub agents: Vec<SwarmMemberSpec>,
    /// The tasks they share (1 to 50), each a task description.
    pub tasks: Vec<String>,
    /// The task type of the swarm's tasks (its queue; default `swarm-<id>`).
    #[serde(default)]
    pub task_type: Option<String>,
    /// Stop each member after this many minutes (its profile's max_execution_time caps it).
    #[serde(default)]
    pub timeout_minutes: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreateSwarmResult {
    pub success: bool,
    pub swarm_id: String,
    /// The task type of its tasks: members claim them with get_work(task_type).
    pub task_type: String,
    pub tasks: Vec<String>,
    pub members: Vec<String>,
}

/// Names a swarm.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwarmRef {
    pub swarm_id: String,
}

pub const MAX_SWARM_MEMBERS: usize = 10;
pub const MAX_SWARM_TASKS: usize = 50;
