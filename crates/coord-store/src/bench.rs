//! What `coord bench` needs from a store besides the `Store` trait: its raw baselines
//! (the store's own statements run with no service layer) share these types.

use coord_domain::Identity;
use coord_domain::audit::AuditRecord;
use serde_json::Value;

/// Tasks by status, for the queue benchmark's after-run checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueTotals {
    pub pending: i64,
    pub claimed: i64,
    pub completed: i64,
    /// Failed or cancelled.
    pub ended_otherwise: i64,
}

impl QueueTotals {
    /// Adds `n` tasks of the stored status `status`.
    pub fn add(&mut self, status: &str, n: i64) {
        match status {
            "pending" => self.pending += n,
            "claimed" => self.claimed += n,
            "completed" => self.completed += n,
            _ => self.ended_otherwise += n,
        }
    }
}

/// The task type prefilled tasks carry.
pub const BENCH_TASK_TYPE: &str = "bench";

/// The audit row a raw baseline appends: the same insert as the service's, with a small
/// fixed body (the service's is the request and result as JSON).
pub fn raw_audit_record(who: &Identity, operation: &'static str, parameters: Value) -> AuditRecord {
    AuditRecord {
        agent: who.clone(),
        operation,
        parameters,
        result: serde_json::json!({"success": true}),
        success: true,
        error_code: None,
        duration_ms: 0.0,
        origin: None,
    }
}
