//! What must never happen, checked while the benchmark runs. A lock granted twice shows
//! as two recorded holders of one path (the window is the time a client holds the lock:
//! long in `agents`, short in `locks`), as a fencing token that does not grow, as the
//! first holder's release refused (`not_lock_owner`: the row changed hands under it), or
//! as locks left held after the run. A task claimed twice is caught by its id. What the
//! store acknowledged (tasks submitted, completions) is kept, so that a run with faults
//! (`chaos`) can check afterwards that none of it was lost.

use coord_domain::{CoordError, ErrorCode};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Invariants {
    holders: Mutex<HashMap<String, (usize, i64)>>,
    last_token: Mutex<HashMap<String, i64>>,
    claimed: Mutex<HashSet<String>>,
    submitted: Mutex<Vec<String>>,
    completed: Mutex<HashSet<String>>,
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
    /// `fresh` is false for a refresh of a lock the client already held (after a release
    /// that failed), which keeps its token.
    pub fn acquired(&self, client: usize, path: &str, token: Option<i64>, fresh: bool) {
        let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((other, _)) = holders.get(path) {
            self.violation(&format!(
                "{path} granted to client {client} while client {other} holds it"
            ));
        }
        if let Some(token) = token.filter(|_| fresh) {
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

    /// Sorts a failed release of a lock this client was granted: refused as not ours means
    /// someone else was granted it meanwhile (a violation); anything else is an error.
    pub fn release_failed(&self, shared_error: impl FnOnce(&CoordError), client: usize, path: &str, e: &CoordError) {
        if e.code == ErrorCode::NotLockOwner {
            self.violation(&format!(
                "client {client} held {path}, but its release was refused: {}",
                e.message
            ));
        } else {
            shared_error(e);
        }
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

    /// The store acknowledged the submission of `task_id`.
    pub fn submitted(&self, task_id: &str) {
        self.submitted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task_id.to_string());
    }

    /// The store acknowledged the completion of `task_id`: twice is a violation.
    pub fn completed(&self, task_id: &str) {
        let fresh = self
            .completed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task_id.to_string());
        if !fresh {
            self.violation(&format!("task {task_id} completed twice"));
        }
    }

    /// What the store acknowledged: (submitted, completed) task ids.
    pub fn acknowledged(&self) -> (Vec<String>, Vec<String>) {
        let submitted = self.submitted.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let completed = self
            .completed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        (submitted, completed)
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
        i.acquired(1, "a", Some(1), true);
        i.releasing("a");
        i.acquired(2, "a", Some(2), true);
        assert_eq!(i.violations(), 0);
        i.acquired(3, "a", Some(3), true);
        assert_eq!(i.violations(), 1, "two live holders");
        i.releasing("a");
        i.acquired(4, "a", Some(3), true);
        assert_eq!(i.violations(), 2, "token did not grow");
        i.releasing("a");
        i.acquired(4, "a", Some(3), false);
        assert_eq!(i.violations(), 2, "a refresh keeps its token");
        i.releasing("a");
        i.claimed("t1");
        i.claimed("t2");
        i.claimed("t1");
        assert_eq!((i.violations(), i.claimed_count()), (3, 2));
        i.submitted("t1");
        i.completed("t1");
        i.completed("t1");
        assert_eq!(i.violations(), 4, "completed twice");
        assert_eq!(i.acknowledged(), (vec!["t1".to_string()], vec!["t1".to_string()]));
        let mut errors = 0;
        let refused = CoordError::new(ErrorCode::NotLockOwner, "taken");
        i.release_failed(|_| errors += 1, 1, "b", &refused);
        assert_eq!((i.violations(), errors), (5, 0), "a refused release is a double grant");
        i.release_failed(|_| errors += 1, 1, "b", &CoordError::unavailable("down"));
        assert_eq!((i.violations(), errors), (5, 1), "an outage is an error");
    }
}
