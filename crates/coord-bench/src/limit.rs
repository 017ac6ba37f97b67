//! The independent limit of `coord bench locks --compare`: a client of the database that
//! is not coord — Python's `sqlite3` for SQLite, `pgbench` for PostgreSQL — runs the
//! leanest statements we know that give coord's guarantees (durable before answering,
//! an acquire that respects live holders and pattern locks, fencing tokens in acquisition
//! order, one hash-chained audit row per operation with its parameters and result,
//! indexed for the audit queries), on a fresh database, with as many clients, in the same
//! run. The scripts are in `crates/coord-bench/limits/`; their headers say what each
//! statement is for. The raw baseline (the store's own statements) stays beside it: it
//! shows what the layers above the SQL cost, this shows what the SQL itself costs.

use crate::target::EmptyScratch;
use crate::{BenchDb, BenchError, BenchOptions, BenchResult, Report};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::Command;

const SQLITE_SCRIPT: &str = include_str!("../limits/locks_sqlite.py");
const PG_SCHEMA: &str = include_str!("../limits/locks_postgres_schema.sql");
const PG_SCRIPT: &str = include_str!("../limits/locks_postgres.sql");

/// The limit's run, or why it could not run (a missing tool is not an error of the
/// benchmark: coord's own figures still stand, without this ratio).
pub enum Limit {
    Measured(Box<Report>),
    Unavailable(String),
}

pub async fn locks(opts: &BenchOptions) -> BenchResult<Limit> {
    let scratch = EmptyScratch::create(&opts.db, "limit").await?;
    let outcome = match &opts.db {
        BenchDb::Sqlite { .. } => sqlite(opts, &scratch.db_arg).await,
        BenchDb::Postgres { .. } => postgres(opts, &scratch.db_arg).await,
    };
    scratch.dispose().await;
    outcome
}

/// A script written where the tool can read it, removed when dropped.
struct ScriptFile(PathBuf);

impl ScriptFile {
    fn write(name: &str, text: &str) -> BenchResult<ScriptFile> {
        let path = std::env::temp_dir().join(format!("coord-bench-{}-{name}", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, text).map_err(|e| BenchError::Setup(format!("cannot write {}: {e}", path.display())))?;
        Ok(ScriptFile(path))
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `program` to completion (at most `limit`); `None` when it is not installed.
async fn output(
    program: &str,
    args: &[String],
    limit: std::time::Duration,
) -> BenchResult<Option<std::process::Output>> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    match child {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BenchError::Setup(format!("cannot run {program}: {e}"))),
        Ok(child) => match tokio::time::timeout(limit, child.wait_with_output()).await {
            Ok(out) => out.map(Some).map_err(|e| BenchError::Setup(format!("{program}: {e}"))),
            // Dropping the wait kills the child (kill_on_drop).
            Err(_) => Err(BenchError::Setup(format!("{program} did not finish within {limit:?}"))),
        },
    }
}

fn failed(program: &str, out: &std::process::Output) -> BenchError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    BenchError::Setup(format!(
        "the independent limit ({program}) failed ({}): {}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
    ))
}

fn limit_report(opts: &BenchOptions, backend: &'static str, mode: &'static str) -> Report {
    Report {
        workload: opts.workload.name(),
        backend,
        mode,
        clients: opts.clients,
        seconds: 0.0,
        ops: 0,
        ops_per_sec: 0.0,
        p50_us: 0,
        p99_us: 0,
        errors: 0,
        invariant_violations: 0,
        baseline: None,
        limit: None,
        limit_unavailable: None,
        per_operation: BTreeMap::new(),
        counts: BTreeMap::new(),
        rtt_ms: opts.db.rtt().map(|d| d.as_secs_f64() * 1000.0),
        round_trips_per_op: None,
        serve_rtt_ms: None,
    }
}

/// How long a limit's run may take: its seconds, start-up and teardown.
fn allowed(opts: &BenchOptions) -> std::time::Duration {
    std::time::Duration::from_secs_f64(opts.seconds * 2.0 + 120.0)
}

/// `COORD_BENCH_PYTHON`, else `python3`.
async fn sqlite(opts: &BenchOptions, db: &str) -> BenchResult<Limit> {
    let python = std::env::var("COORD_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = ScriptFile::write("locks_sqlite.py", SQLITE_SCRIPT)?;
    let args = vec![
        script.0.display().to_string(),
        "--db".into(),
        db.into(),
        "--clients".into(),
        opts.clients.to_string(),
        "--seconds".into(),
        opts.seconds.to_string(),
        "--paths".into(),
        opts.paths.to_string(),
    ];
    let Some(out) = output(&python, &args, allowed(opts)).await? else {
        return Ok(Limit::Unavailable(format!(
            "{python} is not installed (set COORD_BENCH_PYTHON to a Python 3)"
        )));
    };
    if !out.status.success() {
        return Err(failed(&python, &out));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| BenchError::Setup(format!("{python} printed {line:?}, not the limit's JSON line ({e})")))?;
    let n = |k: &str| v[k].as_f64().unwrap_or(0.0);
    let mut r = limit_report(opts, "sqlite", "python-sqlite3");
    r.seconds = n("seconds");
    r.ops = n("ops") as u64;
    r.ops_per_sec = n("ops_per_sec").round();
    r.p50_us = n("p50_us") as u64;
    r.p99_us = n("p99_us") as u64;
    // The script counts a fencing token that did not grow, or a release of its own live
    // lock that found nothing, as errors: the same invariants coord's runs check.
    r.invariant_violations = n("errors") as u64;
    r.counts.insert("blocked", n("blocked") as u64);
    Ok(Limit::Measured(Box::new(r)))
}

/// `COORD_BENCH_PGBENCH`, else `pgbench` on the PATH, else PostgreSQL's own directory.
fn pgbench_program() -> String {
    if let Ok(p) = std::env::var("COORD_BENCH_PGBENCH") {
        return p;
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join("pgbench").is_file()))
        .unwrap_or(false);
    if on_path {
        return "pgbench".into();
    }
    // Debian keeps server tools beside the server (/usr/lib/postgresql/<major>/bin).
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("bin/pgbench"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
        .pop()
        .map_or_else(|| "pgbench".into(), |p| p.display().to_string())
}

async fn postgres(opts: &BenchOptions, url: &str) -> BenchResult<Limit> {
    coord_postgres::run_script(url, PG_SCHEMA).await?;
    let pgbench = pgbench_program();
    let script = ScriptFile::write("locks_postgres.sql", PG_SCRIPT)?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(opts.clients);
    // Every transaction's latency, for percentiles (the summary has only the mean).
    let logs = std::env::temp_dir().join(format!("coord-bench-pgbench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&logs).map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", logs.display())))?;
    let outcome = pgbench_run(opts, url, &pgbench, &script, threads, &logs).await;
    let _ = std::fs::remove_dir_all(&logs);
    outcome
}

async fn pgbench_run(
    opts: &BenchOptions,
    url: &str,
    pgbench: &str,
    script: &ScriptFile,
    threads: usize,
    logs: &std::path::Path,
) -> BenchResult<Limit> {
    let args = vec![
        "--no-vacuum".into(),
        format!("--client={}", opts.clients),
        format!("--jobs={threads}"),
        // pgbench runs whole seconds.
        format!("--time={}", opts.seconds.ceil().max(1.0) as u64),
        "--protocol=prepared".into(),
        format!("--define=paths={}", opts.paths),
        format!("--file={}", script.0.display()),
        "--log".into(),
        format!("--log-prefix={}", logs.join("tx").display()),
        url.into(),
    ];
    let Some(out) = output(pgbench, &args, allowed(opts)).await? else {
        return Ok(Limit::Unavailable(format!(
            "{pgbench} is not installed (PostgreSQL's client tools; or set COORD_BENCH_PGBENCH)"
        )));
    };
    if !out.status.success() {
        return Err(failed(pgbench, &out));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let parsed = parse_pgbench(&stdout)
        .ok_or_else(|| BenchError::Setup(format!("could not read pgbench's summary: {stdout:?}")))?;
    let mut r = limit_report(opts, "postgres", "pgbench");
    r.seconds = opts.seconds.ceil().max(1.0);
    r.ops = parsed.transactions;
    r.ops_per_sec = parsed.tps.round();
    let mut samples = crate::Samples::default();
    for entry in std::fs::read_dir(logs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for us in text.lines().filter_map(transaction_latency_us) {
            samples.record(std::time::Duration::from_micros(us));
        }
    }
    // Without the log (it could not be written), the summary's mean stands for both.
    let mean = (parsed.latency_ms * 1000.0).round() as u64;
    r.p50_us = if samples.is_empty() {
        mean
    } else {
        samples.percentile(50.0)
    };
    r.p99_us = if samples.is_empty() {
        mean
    } else {
        samples.percentile(99.0)
    };
    r.errors = parsed.failed;
    Ok(Limit::Measured(Box::new(r)))
}

/// A line of pgbench's per-transaction log (`client_id transaction_no time script_no
/// time_epoch time_us …`): the transaction's latency in µs; failed ones say `failed`.
fn transaction_latency_us(line: &str) -> Option<u64> {
    line.split_whitespace().nth(2)?.parse().ok()
}

#[derive(Debug, PartialEq)]
struct PgbenchSummary {
    transactions: u64,
    failed: u64,
    latency_ms: f64,
    tps: f64,
}

/// The lines of pgbench's summary coord reads (pgbench 14 and later).
fn parse_pgbench(out: &str) -> Option<PgbenchSummary> {
    let after = |prefix: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    };
    Some(PgbenchSummary {
        transactions: after("number of transactions actually processed:")?
            .split('/')
            .next()?
            .parse()
            .ok()?,
        failed: after("number of failed transactions:")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        latency_ms: after("latency average =")?.parse().ok()?,
        tps: after("tps =")?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_summaries() {
        let pg15 = "transaction type: locks.sql\nscaling factor: 1\nquery mode: prepared\nnumber of clients: 8\n\
                    number of threads: 2\nmaximum number of tries: 1\nduration: 5 s\n\
                    number of transactions actually processed: 670\nnumber of failed transactions: 2 (0.298%)\n\
                    latency average = 59.625 ms\ninitial connection time = 75.574 ms\n\
                    tps = 134.172170 (without initial connection time)\n";
        assert_eq!(
            parse_pgbench(pg15),
            Some(PgbenchSummary {
                transactions: 670,
                failed: 2,
                latency_ms: 59.625,
                tps: 134.17217
            })
        );
        // pgbench 14 has no failed-transactions line; with -t, the count reads "n/m".
        let pg14 = "number of transactions actually processed: 80/80\nlatency average = 1.5 ms\ntps = 600.5 (x)\n";
        assert_eq!(
            parse_pgbench(pg14),
            Some(PgbenchSummary {
                transactions: 80,
                failed: 0,
                latency_ms: 1.5,
                tps: 600.5
            })
        );
        assert_eq!(parse_pgbench("pgbench: error: connection refused"), None);
        assert_eq!(transaction_latency_us("0 199 2241 0 1764213874 123456"), Some(2241));
        assert_eq!(
            transaction_latency_us("3 12 failed 0 1764213874 123456 serialization"),
            None
        );
        assert_eq!(transaction_latency_us(""), None);
        assert_eq!(
            parse_pgbench("number of transactions actually processed: x\ntps = 1\nlatency average = 1 ms"),
            None
        );
    }
}
