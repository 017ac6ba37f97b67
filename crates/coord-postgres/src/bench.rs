//! Raw baselines for `coord bench`: the store's own statements (transaction, the
//! operation's SQL, the audit insert, commit) run directly on a pooled connection — no
//! service layer — so the service/raw ratio measures exactly what the layers above the
//! SQL cost.

use crate::{OpFn, PgStore, R, locks, pool_error, queue};
use coord_domain::Identity;
use coord_domain::locks::LockAction;
use coord_domain::queue::{ClaimSpec, Completion};
use coord_domain::{CoordError, CoordResult};
use coord_store::OpCtx;
use coord_store::bench::{BENCH_TASK_TYPE, QueueTotals, raw_audit_record};
use serde_json::{Value, json};
use std::time::Instant;

/// The raw baseline over one store's pool.
#[derive(Clone)]
pub struct RawPostgres {
    store: PgStore,
}

impl PgStore {
    pub fn raw_baseline(&self) -> RawPostgres {
        RawPostgres { store: self.clone() }
    }
}

impl RawPostgres {
    async fn op<A: Sync, T>(
        &self,
        who: &Identity,
        operation: &'static str,
        parameters: Value,
        args: A,
        f: OpFn<A, T>,
    ) -> CoordResult<T> {
        let ctx = OpCtx {
            now: None,
            who: who.clone(),
            operation,
            parameters: Value::Null,
            started: Instant::now(),
            redact: &[],
            charges: Vec::new(),
            escalation: None,
            origin: None,
            audit_admin: false,
            credential: coord_domain::access::Credential::Local,
            events: None,
            lock_before_write: false,
            egress: None,
            policy: None,
        };
        let client = self.store.pool.get().await.map_err(pool_error)?;
        let outcome: R<T> = async {
            let tx = crate::Tx::new(&client);
            let value = f(&tx, &ctx, &args).await?;
            let rec = raw_audit_record(who, operation, parameters);
            crate::chain::insert_and_commit(tx, None, &rec, &self.store.durability, None).await?;
            Ok(value)
        }
        .await;
        outcome.map_err(CoordError::from)
    }

    /// Acquire then release `path`; `on_acquired` runs in between with the fencing token
    /// (the benchmark's invariant checks). `false` when another holder blocked it.
    pub async fn lock_pair(
        &self,
        who: &Identity,
        path: &str,
        on_acquired: impl FnOnce(Option<i64>) + Send,
    ) -> CoordResult<bool> {
        let params = json!({"file_path": path});
        let acquired = self
            .op(
                who,
                "acquire_lock",
                params.clone(),
                (coord_domain::target::LockTarget::literal_file(path, None)?, None, 120),
                |tx, ctx, a| Box::pin(locks::acquire(tx, ctx, a)),
            )
            .await?;
        if acquired.action != LockAction::Acquired {
            return Ok(false);
        }
        on_acquired(acquired.fencing_token);
        self.op(who, "release_lock", params, path.to_string(), |tx, ctx, a| {
            Box::pin(locks::release(tx, ctx, a))
        })
        .await?;
        Ok(true)
    }

    /// Claim the next task and complete it (`on_claimed` runs in between): its id, or
    /// `None` when the queue is empty.
    pub async fn claim_complete(
        &self,
        who: &Identity,
        on_claimed: impl FnOnce(&str) + Send,
    ) -> CoordResult<Option<String>> {
        let spec = ClaimSpec {
            task_types: Vec::new(),
            lease_minutes: 60,
        };
        let claimed = self
            .op(who, "get_work", json!({}), spec, |tx, ctx, a| {
                Box::pin(queue::claim(tx, ctx, a))
            })
            .await?;
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
        self.op(who, "complete_work", json!({"task_id": task_id}), done, |tx, ctx, a| {
            Box::pin(queue::complete(tx, ctx, a))
        })
        .await?;
        Ok(Some(task_id))
    }
}

impl PgStore {
    /// Adds `n` pending, independent tasks of type `bench` in one statement (setup for
    /// the queue benchmark; not audited, not timed).
    pub async fn prefill_tasks(&self, n: i64) -> CoordResult<()> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                "INSERT INTO work_queue (task_id, task_type, task_description, priority, status, pending_deps,
                     created_by, created_by_type, created_at, max_attempts)
                 SELECT gen_random_uuid(), $2, 'benchmark task ' || i, 5, 'pending', 0, 'bench', 'bench',
                        statement_timestamp(), 3
                 FROM generate_series(1::bigint, $1::bigint) AS i",
                &[&n, &BENCH_TASK_TYPE],
            )
            .await
            .map_err(|e| crate::pg_error(&e))?;
        Ok(())
    }

    pub async fn task_counts(&self) -> CoordResult<QueueTotals> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let rows = client
            .query("SELECT status, count(*) FROM work_queue GROUP BY status", &[])
            .await
            .map_err(|e| crate::pg_error(&e))?;
        let mut counts = QueueTotals::default();
        for r in rows {
            let (status, n): (String, i64) = (r.get(0), r.get(1));
            counts.add(&status, n);
        }
        Ok(counts)
    }
}

/// A throw-away database on the server `url` points at, for one benchmark run: created
/// empty (the store migrates it on connect) and dropped by [`drop_scratch_database`].
pub async fn create_scratch_database(url: &str, name: &str) -> CoordResult<String> {
    let admin = admin_client(url).await?;
    admin
        .batch_execute(&format!("CREATE DATABASE {}", quote_ident(name)))
        .await
        .map_err(|e| {
            CoordError::unavailable(format!(
                "cannot create the scratch database {name} (the user needs CREATEDB): {}",
                e.as_db_error()
                    .map(|d| d.message().to_string())
                    .unwrap_or_else(|| e.to_string())
            ))
        })?;
    Ok(with_database(url, name))
}

/// Refreshes the planner's statistics of the database `url` names, as autovacuum does
/// once a table has grown by a tenth: a benchmark that fills a table in a minute would
/// otherwise be planned on the statistics of the empty table.
pub async fn analyze_database(url: &str) -> CoordResult<()> {
    run_script(url, "ANALYZE").await
}

/// Runs `sql` (one or more statements) on the database `url` names: the schema of a
/// benchmark's independent limit, which is not coord's.
pub async fn run_script(url: &str, sql: &str) -> CoordResult<()> {
    admin_client(url)
        .await?
        .batch_execute(sql)
        .await
        .map_err(|e| crate::pg_error(&e))
}

pub async fn drop_scratch_database(url: &str, name: &str) -> CoordResult<()> {
    let admin = admin_client(url).await?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quote_ident(name)))
        .await
        .map_err(|e| crate::pg_error(&e))
}

async fn admin_client(url: &str) -> CoordResult<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| CoordError::unavailable(format!("cannot connect to PostgreSQL at {}: {e}", crate::redact(url))))?;
    tokio::spawn(connection);
    Ok(client)
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `url` with its database name replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (before_query, query) = rest.split_once('?').map_or((rest, None), |(a, q)| (a, Some(q)));
    let authority = before_query.split_once('/').map_or(before_query, |(a, _)| a);
    match query {
        Some(q) => format!("{scheme}://{authority}/{name}?{q}"),
        None => format!("{scheme}://{authority}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_names_are_replaced_in_urls() {
        for (url, want) in [
            ("postgres://u@h:5432/postgres", "postgres://u@h:5432/scratch"),
            (
                "postgres://u:p@h/db?sslmode=disable",
                "postgres://u:p@h/scratch?sslmode=disable",
            ),
            ("postgresql://h", "postgresql://h/scratch"),
            (
                "postgres://h?application_name=x",
                "postgres://h/scratch?application_name=x",
            ),
        ] {
            assert_eq!(super::with_database(url, "scratch"), want, "{url}");
        }
    }
}
