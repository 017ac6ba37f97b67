//! The one-screen summary behind `coord status`.

use crate::handoffs::Handoff;
use crate::identity::Identity;
use crate::locks::LockInfo;
use crate::queue::TaskInfo;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskCounts {
    pub pending: i64,
    /// Pending tasks still waiting on dependencies (included in `pending`).
    pub waiting: i64,
    pub claimed: i64,
    pub completed: i64,
    pub failed: i64,
    pub cancelled: i64,
}

impl TaskCounts {
    /// Counts `n` tasks stored with `status`, `waiting` of them on dependencies (stores
    /// group by status; the mapping to fields is one rule, not one per store).
    pub fn add(&mut self, status: &str, n: i64, waiting: i64) {
        match crate::queue::TaskStatus::parse(status) {
            Some(crate::queue::TaskStatus::Pending) => {
                self.pending += n;
                self.waiting += waiting;
            }
            Some(crate::queue::TaskStatus::Claimed) => self.claimed += n,
            Some(crate::queue::TaskStatus::Completed) => self.completed += n,
            Some(crate::queue::TaskStatus::Failed) => self.failed += n,
            Some(crate::queue::TaskStatus::Cancelled) => self.cancelled += n,
            None => {}
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentCounts {
    pub active: i64,
    pub idle: i64,
    pub disconnected: i64,
}

impl AgentCounts {
    pub fn add(&mut self, status: crate::sessions::AgentStatus, n: i64) {
        use crate::sessions::AgentStatus;
        match status {
            AgentStatus::Active => self.active += n,
            AgentStatus::Idle => self.idle += n,
            AgentStatus::Disconnected => self.disconnected += n,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatusResult {
    pub success: bool,
    pub backend: String,
    pub database: String,
    pub identity: Identity,
    pub live_locks: i64,
    pub my_locks: Vec<LockInfo>,
    pub tasks: TaskCounts,
    pub my_tasks: Vec<TaskInfo>,
    pub agents: AgentCounts,
    #[serde(default)]
    pub latest_handoff: Option<Handoff>,
}
