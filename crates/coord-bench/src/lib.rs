//! `coord bench`: measures the coordinator against the physical limit of its database.
//!
//! Every run uses a scratch database of its own (a fresh SQLite file, or a fresh
//! PostgreSQL database on the given server, dropped afterwards), checks the invariants
//! while it runs, and reports one [`Report`]. With `--compare`, a baseline run precedes
//! the measured one in the same invocation: the store's raw SQL for `locks` and `queue`,
//! the in-process service for `http` and `mcp`; the report carries the ratio. `locks`
//! also runs the independent limit ([`limit`]): a client that is not coord, running the
//! leanest statements with coord's guarantees.
//!
//! Workloads: `locks`, `queue`, `mcp` (through `coord mcp` child processes), `http`
//! (`remote`: through a `coord serve` child), `agents` (simulated agents against one
//! `coord serve`), `chaos` (the agents while nodes are killed and stopped, agents killed
//! holding a claim and PostgreSQL cut off, then the invariants checked from the store and
//! the audit chain); and, needing no bench database, `guardrails` (beside a parse-only
//! baseline), `files` (confined I/O beside plain `std::fs`), `hooks` (the PreToolUse hook
//! beside process start), `recall` (scored on the judged fixture `fixtures/recall/` beside
//! a tag-and-recency baseline, then timed) and `proxy` (requests through the egress proxy
//! beside direct ones). Around them: scratch databases (`target`), clients and reports
//! (`driver`), invariant checks (`invariants`), percentiles (`stats`). The raw baselines
//! are `RawSqlite` and `RawPostgres` in the stores' `bench` modules, and `limits/` holds
//! the independent limit's statements; these are the only SQL of the bench.

/// The agent type of every bench client: Claude Code's, whose built-in profile
/// (claude-code-cli) has no limits. The profile check is part of every operation, so it
/// is part of what is measured.
pub const AGENT_TYPE: &str = "claude_code";

mod agents;
mod chaos;
mod driver;
pub mod files;
pub mod guardrails;
pub mod hooks;
mod invariants;
mod limit;
pub mod link;
mod locks;
mod mcp;
mod progress;
pub mod proxy;
mod queue;
pub mod recall;
mod remote;
mod stats;
mod target;

pub use stats::{OpStats, Samples};
pub use target::{BenchDb, abandon};

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Locks,
    Queue,
    Mcp,
    Http,
    Agents,
    Chaos,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Locks => "locks",
            Workload::Queue => "queue",
            Workload::Mcp => "mcp",
            Workload::Http => "http",
            Workload::Agents => "agents",
            Workload::Chaos => "chaos",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The measured path only.
    Measured,
    /// The raw SQL baseline only (`locks`, `queue`).
    Raw,
    /// The baseline, then the measured path, with their ratio.
    Compare,
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub workload: Workload,
    pub db: BenchDb,
    pub clients: usize,
    pub seconds: f64,
    pub mode: Mode,
    /// Distinct file paths the lock workloads draw from.
    pub paths: usize,
    /// `locks`: live locks (files, directories, globs) another agent holds for the whole
    /// run, none overlapping the measured paths: every acquisition checks against them.
    pub held: usize,
    /// `http`: the round-trip time a relay adds between the clients and `coord serve`.
    pub serve_rtt: Option<std::time::Duration>,
    /// `agents`: how many simulated agents.
    pub agents: usize,
    /// `agents`: how many `coord serve` processes share the database (agents split
    /// across them).
    pub nodes: usize,
    /// `agents`: how many times faster than real time the agents live (heartbeat every
    /// 30 s and think times of 1-3 s, divided by this).
    pub time_scale: f64,
    /// The `coord` binary, for the workloads that run `coord mcp` / `coord serve`.
    pub exe: PathBuf,
    /// Show a progress line on stderr.
    pub progress: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    pub mode: &'static str,
    pub ops_per_sec: f64,
    /// This run's ops/s over the baseline's.
    pub ratio: f64,
}

/// One run's result: one JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub workload: &'static str,
    pub backend: &'static str,
    /// `service`, `raw`, `mcp`, `http` or `agents`: the path measured.
    pub mode: &'static str,
    pub clients: usize,
    pub seconds: f64,
    /// Completed units: acquire+release pairs (`locks`, `http`, `mcp`), claim+complete
    /// pairs (`queue`), requests (`agents`).
    pub ops: u64,
    pub ops_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub errors: u64,
    pub invariant_violations: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// The independent limit (`locks --compare`): Python's sqlite3 or pgbench running
    /// the leanest statements with the same guarantees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Baseline>,
    /// Why the independent limit did not run (its tool is not installed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_unavailable: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_operation: BTreeMap<&'static str, OpStats>,
    /// Workload-specific counts (blocked acquisitions, empty claims, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<&'static str, u64>,
    /// The round-trip time the run added between coord and the database (`--rtt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Round trips to the database per completed unit, all clients' (`--rtt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_trips_per_op: Option<f64>,
    /// The round-trip time the run added between the clients and `coord serve`
    /// (`--serve-rtt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_rtt_ms: Option<f64>,
}

impl Report {
    fn ratio_to(&self, other: &Report) -> Baseline {
        let ratio = if other.ops_per_sec > 0.0 {
            self.ops_per_sec / other.ops_per_sec
        } else {
            0.0
        };
        Baseline {
            mode: other.mode,
            ops_per_sec: other.ops_per_sec,
            ratio: (ratio * 1000.0).round() / 1000.0,
        }
    }

    fn with_baseline(mut self, baseline: &Report) -> Report {
        self.baseline = Some(self.ratio_to(baseline));
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Coord(#[from] coord_domain::CoordError),
    #[error("{0}")]
    Setup(String),
}

pub type BenchResult<T> = Result<T, BenchError>;

/// Runs the benchmark; each report is handed to `emit` as soon as its run ends.
pub async fn run(opts: &BenchOptions, mut emit: impl FnMut(&Report)) -> BenchResult<Vec<Report>> {
    let seconds_ok = opts.seconds.is_finite() && opts.seconds > 0.0 && opts.seconds <= 86_400.0;
    let scale_ok = opts.time_scale.is_finite() && opts.time_scale > 0.0;
    if opts.clients == 0 || opts.paths == 0 || opts.agents == 0 || !seconds_ok || !scale_ok {
        return Err(BenchError::Setup(
            "--clients, --paths, --agents and --time-scale must be positive, --seconds between 0 and 86400".into(),
        ));
    }
    let many_nodes = matches!(opts.workload, Workload::Agents | Workload::Chaos);
    if opts.nodes == 0 || opts.nodes > 16 || (opts.nodes > 1 && !many_nodes) {
        return Err(BenchError::Setup(
            "--nodes takes 1 to 16, and applies to agents and chaos only".into(),
        ));
    }
    let mut reports = Vec::new();
    let mut push = |r: Report, reports: &mut Vec<Report>| {
        emit(&r);
        reports.push(r);
    };
    match opts.workload {
        Workload::Locks | Workload::Queue => {
            let raw = matches!(opts.mode, Mode::Raw | Mode::Compare);
            let baseline = if raw {
                let r = run_store_workload(opts, true).await?;
                push(r.clone(), &mut reports);
                Some(r)
            } else {
                None
            };
            let limit = if opts.mode == Mode::Compare && opts.workload == Workload::Locks {
                // A limit that cannot run (or fails) is reported with the service's
                // figures, never instead of them.
                Some(match limit::locks(opts).await {
                    Ok(limit::Limit::Measured(r)) => {
                        push((*r).clone(), &mut reports);
                        Ok(*r)
                    }
                    Ok(limit::Limit::Unavailable(why)) => Err(why),
                    Err(e) => Err(e.to_string()),
                })
            } else {
                None
            };
            if opts.mode != Mode::Raw {
                let mut r = run_store_workload(opts, false).await?;
                if let Some(b) = &baseline {
                    r = r.with_baseline(b);
                }
                match limit {
                    Some(Ok(l)) => r.limit = Some(r.ratio_to(&l)),
                    Some(Err(why)) => r.limit_unavailable = Some(why),
                    None => {}
                }
                push(r, &mut reports);
            }
        }
        Workload::Mcp | Workload::Http => {
            if opts.mode == Mode::Raw {
                return Err(BenchError::Setup(format!(
                    "--raw applies to locks and queue; {} compares with the in-process service (--compare)",
                    opts.workload.name()
                )));
            }
            let baseline = if opts.mode == Mode::Compare {
                let in_process = BenchOptions {
                    workload: Workload::Locks,
                    serve_rtt: None,
                    ..opts.clone()
                };
                let mut r = run_store_workload(&in_process, false).await?;
                r.workload = opts.workload.name();
                push(r.clone(), &mut reports);
                Some(r)
            } else {
                None
            };
            let mut r = if opts.workload == Workload::Mcp {
                mcp::run(opts).await?
            } else {
                remote::run_http_locks(opts).await?
            };
            if let Some(b) = &baseline {
                r = r.with_baseline(b);
            }
            push(r, &mut reports);
        }
        Workload::Agents => {
            let r = agents::run(opts).await?;
            push(r, &mut reports);
        }
        Workload::Chaos => {
            let r = chaos::run(opts).await?;
            push(r, &mut reports);
        }
    }
    Ok(reports)
}

async fn run_store_workload(opts: &BenchOptions, raw: bool) -> BenchResult<Report> {
    let scratch = target::Scratch::create(&opts.db, opts.workload.name(), opts.clients).await?;
    if opts.workload == Workload::Locks {
        locks::hold(opts.held, &scratch.coordinator()).await?;
    }
    let outcome = match (opts.workload, raw) {
        (Workload::Queue, true) => queue::raw(opts, &scratch).await,
        (Workload::Queue, false) => queue::service(opts, &scratch).await,
        (_, true) => locks::raw(opts, &scratch).await,
        (_, false) => locks::service(opts, &scratch).await,
    };
    scratch.dispose().await;
    outcome
}
