//! What must never happen, checked while the benchmark runs: two live holders of one
//! path, a fencing token that does not grow, a task claimed twice.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Invariants {
    holders: Mutex<HashMap<String, (usize, i64)>>,
    last_token: Mutex<HashMap<String, i64>>,
    claimed: Mutex<HashSet<String>>,
    violations: AtomicU64,
}

impl Invariants {
    pub fn violations(&self) -> u64 {
        self.violations.load(Ordering::Relaxed)
    }

    pub fn violation(&self, what: &str) {
        if self.violations.fetch_add(1, Ordering::Relaxed) < 5 {
            eprintln!("coord bench: INVARIANT VIOLATED: {what}");
        }
    }

    /// Call after the store granted `path` to `client`. A holder must be forgotten
    /// (`releasing`) before its release reaches the store, so a recorded holder is
    /// always a live one.
    pub fn acquired(&self, client: usize, path: &str, token: Option<i64>) {
        let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((other, _)) = holders.get(path) {
            self.violation(&format!(
                "{path} granted to client {client} while client {other} holds it"
            ));
        }
        if let Some(token) = token {
            let mut last = self.last_token.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(prev) = last.insert(path.to_string(), token).filter(|p| *p >= token) {
                self.violation(&format!("fencing token of {path} went from {prev} to {token}"));
            }
        }
        holders.insert(path.to_string(), (client, token.unwrap_or(0)));
    }

    pub fn releasing(&self, path: &str) {
        self.holders.lock().unwrap_or_else(|e| e.into_inner()).remove(path);
    }

    pub fn claimed(&self, task_id: &str) {
        let fresh = self
            .claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task_id.to_string());
        if !fresh {
            self.violation(&format!("task {task_id} claimed twice"));
        }
    }

    pub fn claimed_count(&self) -> u64 {
        self.claimed.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_counts_its_violations() {
        let i = Invariants::default();
        i.acquired(1, "a", Some(1));
        i.releasing("a");
        i.acquired(2, "a", Some(2));
        assert_eq!(i.violations(), 0);
        i.acquired(3, "a", Some(3));
        assert_eq!(i.violations(), 1, "two live holders");
        i.releasing("a");
        i.acquired(4, "a", Some(3));
        assert_eq!(i.violations(), 2, "token did not grow");
        i.claimed("t1");
        i.claimed("t2");
        i.claimed("t1");
        assert_eq!((i.violations(), i.claimed_count()), (3, 2));
    }
}
