//! Plans that must not depend on the planner's statistics.
//!
//! Two of the store's tables change faster than autovacuum and autoanalyze follow them
//! (a one-minute nap between passes), and the planner's choice for them, left to itself,
//! goes wrong in both directions:
//!
//! - `file_locks` churns: every lock pair deletes a row and the next acquisition of the
//!   path inserts a new one. A deleted row's index entries keep their future `expires_at`,
//!   so until vacuum comes they match every read of the live locks and cost a heap visit
//!   each. A plain index scan marks the entries of rows dead to every transaction as it
//!   meets them, so later scans skip them; a bitmap scan never marks them, and a
//!   sequential scan reads every dead row. The planner picked a bitmap scan on a fresh
//!   table, and a sequential or bitmap scan once statistics said the table was small.
//! - `work_queue` grows in bursts: without statistics (a fresh table, or one that grew
//!   since its last analyze) a completion's update of its dependents hash-joins every
//!   pending task, 2.7 ms at 20,000 pending against 0.1 ms through the primary key.
//!
//! Both are looked up by indexes that always fit them, so plain index scans only is the
//! right plan whatever the statistics say (the history of docs/benchmarks.md).

use crate::{R, Tx};
use std::future::Future;

/// Planner settings for the rest of the transaction: no sequential and no bitmap scans.
/// Transaction-local, so a pooled connection gets its defaults back at the end. A
/// statement planned under them must never run without them: PostgreSQL's plan cache
/// keeps a generic plan whatever the settings of a later transaction.
pub(crate) const INDEX_SCANS_ONLY: &str =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)";

/// Runs `statement` (not yet polled) after [`INDEX_SCANS_ONLY`], both sent in one write:
/// no round trip of its own, past the first prepare on each connection.
pub(crate) async fn index_scans_only<T>(
    tx: &Tx<'_>,
    statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> R<T> {
    let settings = tx.prepare_cached(INDEX_SCANS_ONLY).await?;
    let (set, out) = tokio::join!(biased; tx.execute(&settings, &[]), statement);
    set?;
    Ok(out?)
}

#[cfg(test)]
pub(crate) mod tests {
    use deadpool_postgres::Object;
    use serde_json::Value;

    /// The plan of `statement` (without parameters) in a transaction begun with `setup`,
    /// under PostgreSQL's default page costs whatever the server says (with a
    /// `random_page_cost` tuned for SSDs the planner may pick index scans by itself on a
    /// small test table): its node types, and the whole plan. `options` go into EXPLAIN's
    /// list (`ANALYZE, BUFFERS, `).
    pub(crate) async fn explain(c: &Object, setup: &str, options: &str, statement: &str) -> (Vec<String>, Value) {
        c.batch_execute(&format!(
            "BEGIN; SET LOCAL random_page_cost = 4; SET LOCAL seq_page_cost = 1; {setup}"
        ))
        .await
        .unwrap();
        let top: Value = c
            .query_one(&format!("EXPLAIN ({options}FORMAT JSON) {statement}"), &[])
            .await
            .unwrap()
            .get(0);
        c.batch_execute("ROLLBACK").await.unwrap();
        let mut nodes = Vec::new();
        let mut stack = vec![&top[0]["Plan"]];
        while let Some(node) = stack.pop() {
            nodes.push(node["Node Type"].as_str().unwrap_or_default().to_string());
            stack.extend(node["Plans"].as_array().into_iter().flatten());
        }
        (nodes, top)
    }
}
