//! Raw baselines for `coord bench`: the store's own statements (transaction, savepoint,
//! the operation's SQL, the audit insert, commit) run directly on the store's connection
//! from the caller's thread — no service layer, no async hop — so the service/raw ratio
//! measures exactly what the layers above the SQL cost.

use crate::{Fail, Inner, R, SqliteStore, audit, locks, queue};
use coord_domain::Identity;
use coord_domain::locks::LockAction;
use coord_domain::queue::{ClaimSpec, Completion};
use coord_domain::time::to_micros;
use coord_domain::{CoordError, CoordResult};
use coord_store::bench::{BENCH_TASK_TYPE, QueueTotals, raw_audit_record};
use rusqlite::{Connection, TransactionBehavior, params};
use std::sync::{Arc, PoisonError};

/// The raw baseline over one store's connection (blocking calls).
#[derive(Clone)]
pub struct RawSqlite {
    inner: Arc<Inner>,
}

impl SqliteStore {
    pub fn raw_baseline(&self) -> RawSqlite {
        RawSqlite {
            inner: self.inner.clone(),
        }
    }
}

fn now() -> i64 {
    to_micros(chrono::Utc::now())
}

impl RawSqlite {
    /// One audited operation the way the store runs it, minus everything above the SQL.
    fn op<T>(
        &self,
        who: &Identity,
        operation: &'static str,
        parameters: serde_json::Value,
        f: impl FnOnce(&Connection, i64) -> R<T>,
    ) -> CoordResult<T> {
        let mut conn = self.inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let run = || -> R<T> {
            let now = now();
            let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = {
                let sp = tx.savepoint()?;
                let out = f(&sp, now)?;
                sp.commit()?;
                out
            };
            audit::insert(&tx, now, &raw_audit_record(who, operation, parameters))?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(CoordError::from)
    }

    /// Acquire then release `path`; `on_acquired` runs in between with the fencing token
    /// (the benchmark's invariant checks). `false` when another holder blocked it.
    pub fn lock_pair(&self, who: &Identity, path: &str, on_acquired: impl FnOnce(Option<i64>)) -> CoordResult<bool> {
        let target = coord_domain::target::LockTarget::literal_file(path, None)?;
        let acquired = self.op(who, "acquire_lock", serde_json::json!({"file_path": path}), |c, now| {
            locks::acquire(c, now, who, &target, None, 120)
        })?;
        if acquired.action != LockAction::Acquired {
            return Ok(false);
        }
        on_acquired(acquired.fencing_token);
        self.op(who, "release_lock", serde_json::json!({"file_path": path}), |c, now| {
            locks::release(c, now, who, path)
        })?;
        Ok(true)
    }

    /// Claim the next task and complete it (`on_claimed` runs in between): its id, or
    /// `None` when the queue is empty.
    pub fn claim_complete(&self, who: &Identity, on_claimed: impl FnOnce(&str)) -> CoordResult<Option<String>> {
        let spec = ClaimSpec {
            task_types: Vec::new(),
            lease_minutes: 60,
        };
        let claimed = self.op(who, "get_work", serde_json::json!({}), |c, now| {
            queue::claim(c, now, who, &spec)
        })?;
        let Some(task_id) = claimed.task_id else {
            return Ok(None);
        };
        on_claimed(&task_id);
        let done = Completion {
            task_id: task_id.clone(),
            success: true,
            result: None,
            error_message: None,
            skill: None,
        };
        self.op(
            who,
            "complete_work",
            serde_json::json!({"task_id": task_id}),
            |c, now| queue::complete(c, now, who, &done),
        )?;
        Ok(Some(task_id))
    }
}

impl SqliteStore {
    /// Adds `n` pending, independent tasks of type `bench` in one transaction (setup for
    /// the queue benchmark; not audited, not timed).
    pub fn prefill_tasks(&self, n: i64) -> CoordResult<()> {
        let mut conn = self.inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut run = || -> R<()> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Ids in the UUID v4 shape the service validates.
            tx.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                 INSERT INTO work_queue (task_id, task_type, task_description, priority, status, pending_deps,
                     created_by, created_by_type, created_at, max_attempts)
                 SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
                        || substr(lower(hex(randomblob(2))), 2) || '-a' || substr(lower(hex(randomblob(2))), 2)
                        || '-' || lower(hex(randomblob(6))),
                        ?2, 'benchmark task ' || i, 5, 'pending', 0, 'bench', 'bench', ?3, 3
                 FROM n",
                params![n, BENCH_TASK_TYPE, now()],
            )?;
            tx.commit()?;
            Ok(())
        };
        run().map_err(CoordError::from)
    }

    pub fn task_counts(&self) -> CoordResult<QueueTotals> {
        let conn = self.inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let run = || -> R<QueueTotals> {
            let mut counts = QueueTotals::default();
            let mut stmt = conn.prepare("SELECT status, count(*) FROM work_queue GROUP BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (status, n) = row?;
                counts.add(&status, n);
            }
            Ok(counts)
        };
        run().map_err(|e: Fail| CoordError::from(e))
    }
}
