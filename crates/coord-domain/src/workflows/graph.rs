//! A workflow's definition: nodes (a queue task each) and edges (a condition each),
//! checked all at once — every problem with its field path (`nodes[1].id`,
//! `edges[0].if`) — and ordered topologically; a cycle is refused.

use super::condition::Condition;
use super::{MAX_EDGES, MAX_NAME_LEN, MAX_NODES};
use crate::agents::FieldError;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Success,
    Failure,
    Always,
}

/// How a node with several inputs decides: `all` (default) — every incoming edge taken;
/// `any` — at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Join {
    All,
    Any,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Lowercase letters, digits, `-` and `_`; unique in the workflow.
    pub id: String,
    /// What the node's task asks (its task_description).
    pub task: String,
    /// The queue's task type (default `workflow`): workers claim it with get_work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<Join>,
    /// An agent of the registry coord spawns to do the node's task when it is queued
    /// (spawn_agent's rules all apply). Without agent or profile, any worker claims it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A generic worker of this profile (read_only, write, verification, design) instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The spawned agent's runtime (claude, codex, aider; default: the definition's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

impl NodeSpec {
    /// Whether coord spawns an agent for it.
    pub fn spawns(&self) -> bool {
        self.agent.is_some() || self.profile.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeSpec {
    pub from: String,
    pub to: String,
    /// success (default), failure or always: the upstream task's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// A CEL expression on `result` and `task` instead of `when`.
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl EdgeSpec {
    /// `test → fix (when failure)`, for reasons shown to people.
    pub fn describe(&self) -> String {
        match (&self.condition, self.when) {
            (Some(c), _) => format!("{} → {} (if {c})", self.from, self.to),
            (None, Some(w)) => format!("{} → {} (when {})", self.from, self.to, when_name(w)),
            (None, None) => format!("{} → {} (when success)", self.from, self.to),
        }
    }
}

fn when_name(w: When) -> &'static str {
    match w {
        When::Success => "success",
        When::Failure => "failure",
        When::Always => "always",
    }
}

fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Checks a definition; answers its nodes in topological order (inputs first; ties
/// keep the written order), or every problem found.
pub fn check_definition(name: &str, nodes: &[NodeSpec], edges: &[EdgeSpec]) -> Result<Vec<NodeSpec>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = name.trim();
    if name.is_empty() {
        errors.push(FieldError::new("name", "missing"));
    } else if name.chars().count() > MAX_NAME_LEN {
        errors.push(FieldError::new(
            "name",
            format!("longer than {MAX_NAME_LEN} characters"),
        ));
    }
    if nodes.is_empty() {
        errors.push(FieldError::new("nodes", "empty: a workflow has at least one node"));
    }
    if nodes.len() > MAX_NODES {
        errors.push(FieldError::new("nodes", format!("more than {MAX_NODES} nodes")));
    }
    if edges.len() > MAX_EDGES {
        errors.push(FieldError::new("edges", format!("more than {MAX_EDGES} edges")));
    }
    check_nodes(nodes, &mut errors);
    check_edges(nodes, edges, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    topological(nodes, edges).map_err(|cycle| {
        vec![FieldError::new(
            "edges",
            format!(
                "a cycle: {} (a workflow is acyclic; to retry, add a node)",
                cycle.join(" → ")
            ),
        )]
    })
}

/// Each node: a unique id, then its fields.
fn check_nodes(nodes: &[NodeSpec], errors: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        if !is_id(&n.id) {
            errors.push(FieldError::new(
                format!("nodes[{i}].id"),
                format!("{:?}: use lowercase letters, digits, '-' and '_' (at most 64)", n.id),
            ));
        } else if !seen.insert(n.id.as_str()) {
            errors.push(FieldError::new(
                format!("nodes[{i}].id"),
                format!("{:?} is defined twice", n.id),
            ));
        }
        check_node(i, n, errors);
    }
}

/// Node `i`'s fields but its id: its task, its queue fields and what it spawns.
fn check_node(i: usize, n: &NodeSpec, errors: &mut Vec<FieldError>) {
    if n.task.trim().is_empty() {
        errors.push(FieldError::new(
            format!("nodes[{i}].task"),
            "empty: say what the node's task asks",
        ));
    } else if n.task.len() > crate::validate::MAX_LONG_TEXT {
        errors.push(FieldError::new(
            format!("nodes[{i}].task"),
            format!("longer than {} bytes", crate::validate::MAX_LONG_TEXT),
        ));
    }
    if let Some(t) = &n.task_type
        && let Err(e) = crate::validate::required_text("task_type", t, crate::validate::MAX_SHORT_TEXT)
    {
        errors.push(FieldError::new(format!("nodes[{i}].task_type"), e.message));
    }
    if let Some(p) = n.priority
        && let Err(e) = crate::queue::validate_priority(Some(p))
    {
        errors.push(FieldError::new(format!("nodes[{i}].priority"), e.message));
    }
    // A spawned agent's prompt is the task and the node's instructions.
    if n.spawns() && n.task.len() + 1024 > crate::agents::spawn::MAX_TASK_BYTES {
        errors.push(FieldError::new(
            format!("nodes[{i}].task"),
            format!(
                "longer than {} bytes: a node that spawns an agent gives it the task as its prompt",
                crate::agents::spawn::MAX_TASK_BYTES - 1024
            ),
        ));
    }
    if n.agent.is_some() && n.profile.is_some() {
        errors.push(FieldError::new(
            format!("nodes[{i}]"),
            "give agent or profile, not both",
        ));
    }
    if let Some(p) = &n.profile
        && crate::agents::WorkerProfile::parse(p).is_none()
    {
        errors.push(FieldError::new(
            format!("nodes[{i}].profile"),
            format!("{p:?}: give read_only, write, verification or design"),
        ));
    }
    if let Some(r) = &n.runtime {
        if crate::agents::Runtime::parse(r).is_none() {
            errors.push(FieldError::new(
                format!("nodes[{i}].runtime"),
                format!("{r:?}: give claude, codex or aider"),
            ));
        } else if !n.spawns() {
            errors.push(FieldError::new(
                format!("nodes[{i}].runtime"),
                "a runtime needs an agent or a profile",
            ));
        }
    }
}

/// Each edge: between known nodes, not a loop, given once, with one condition that compiles.
fn check_edges(nodes: &[NodeSpec], edges: &[EdgeSpec], errors: &mut Vec<FieldError>) {
    let known: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let mut pairs = HashSet::new();
    for (i, e) in edges.iter().enumerate() {
        for (field, id) in [("from", &e.from), ("to", &e.to)] {
            if !known.contains(id.as_str()) {
                errors.push(FieldError::new(
                    format!("edges[{i}].{field}"),
                    format!("no node {id:?}"),
                ));
            }
        }
        if e.from == e.to {
            errors.push(FieldError::new(
                format!("edges[{i}]"),
                format!("{} → {}: a node cannot follow itself", e.from, e.to),
            ));
        } else if !pairs.insert((e.from.as_str(), e.to.as_str())) {
            errors.push(FieldError::new(
                format!("edges[{i}]"),
                format!("{} → {} is given twice: put both conditions in one `if`", e.from, e.to),
            ));
        }
        match (&e.condition, e.when) {
            (Some(_), Some(_)) => errors.push(FieldError::new(format!("edges[{i}]"), "give when or if, not both")),
            (Some(src), None) => {
                if let Err(why) = Condition::compile(src) {
                    errors.push(FieldError::new(format!("edges[{i}].if"), why));
                }
            }
            _ => {}
        }
    }
}

/// Kahn's order, or a cycle's nodes (first repeated at the end).
fn topological(nodes: &[NodeSpec], edges: &[EdgeSpec]) -> Result<Vec<NodeSpec>, Vec<String>> {
    let mut indegree: HashMap<&str, usize> = nodes.iter().map(|n| (n.id.as_str(), 0)).collect();
    for e in edges {
        *indegree.entry(e.to.as_str()).or_default() += 1;
    }
    let mut order: Vec<NodeSpec> = Vec::with_capacity(nodes.len());
    let mut done: HashSet<&str> = HashSet::new();
    while order.len() < nodes.len() {
        let Some(next) = nodes
            .iter()
            .find(|n| !done.contains(n.id.as_str()) && indegree[n.id.as_str()] == 0)
        else {
            break;
        };
        done.insert(next.id.as_str());
        for e in edges.iter().filter(|e| e.from == next.id) {
            if let Some(d) = indegree.get_mut(e.to.as_str()) {
                *d -= 1;
            }
        }
        order.push(next.clone());
    }
    if order.len() == nodes.len() {
        return Ok(order);
    }
    // Walk back along inputs from a node left over until one repeats: that is a cycle.
    let left: Vec<&str> = nodes
        .iter()
        .map(|n| n.id.as_str())
        .filter(|id| !done.contains(id))
        .collect();
    let mut path = vec![left[0]];
    loop {
        let at = *path.last().unwrap_or(&left[0]);
        let Some(prev) = edges
            .iter()
            .find(|e| e.to == at && !done.contains(e.from.as_str()))
            .map(|e| e.from.as_str())
        else {
            return Err(path.iter().map(|s| s.to_string()).collect());
        };
        if let Some(p) = path.iter().position(|x| *x == prev) {
            // `path` runs against the edges: prev → path[p] ← … reversed is the cycle.
            let mut cycle = vec![prev.to_string()];
            cycle.extend(path[p..].iter().rev().map(|s| s.to_string()));
            return Err(cycle);
        }
        path.push(prev);
    }
}
