//! The policy facts of each caller's last call, for the operations the pipeline may
//! decide on them (`Operation::POLICY_FROM_LAST_CALL`) on a store that checks them in the
//! operation's own transaction (`coord_store::PolicyCheck`): a database a round trip
//! away then reads them with the operation instead of before it.

use coord_store::PolicyFacts;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Callers remembered at most; past it the cache starts again (a miss costs one read).
const MAX_CALLERS: usize = 4096;

#[derive(Default)]
pub(crate) struct PolicyCache(Mutex<HashMap<(String, String), (PolicyFacts, Instant)>>);

impl PolicyCache {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (PolicyFacts, Instant)>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The caller's last facts, as read, and as of `now` (the injected clock's reading),
    /// else of their database time moved on by the time since: the execution-time limit
    /// is judged by it.
    pub(crate) fn get(
        &self,
        agent_id: &str,
        agent_type: &str,
        now: Option<coord_domain::Timestamp>,
    ) -> Option<(PolicyFacts, PolicyFacts)> {
        let map = self.map();
        let (facts, at) = map.get(&(agent_id.to_string(), agent_type.to_string()))?;
        let mut current = facts.clone();
        current.now = now.unwrap_or_else(|| facts.now + chrono::Duration::from_std(at.elapsed()).unwrap_or_default());
        Some((facts.clone(), current))
    }

    pub(crate) fn put(&self, agent_id: &str, agent_type: &str, facts: PolicyFacts) {
        let mut map = self.map();
        if map.len() >= MAX_CALLERS {
            map.clear();
        }
        map.insert((agent_id.to_string(), agent_type.to_string()), (facts, Instant::now()));
    }

    pub(crate) fn forget(&self, agent_id: &str, agent_type: &str) {
        self.map().remove(&(agent_id.to_string(), agent_type.to_string()));
    }
}
