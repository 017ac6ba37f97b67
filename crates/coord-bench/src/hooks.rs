//! `coord bench hooks`: what Claude Code's PreToolUse hook costs every Write, Edit and
//! Bash of an agent — `coord hook PreToolUse` fed recorded-shape payloads (a Write of a
//! free file: the edit guard; a Bash command: the guardrails), each a whole process
//! with its database opened and its audit row committed — beside the independent floor
//! of the same run: starting the same binary for `coord --version`.
//!
//! On PostgreSQL (`--db postgres://…`), in a fresh database, optionally reached through a
//! [`crate::link::Link`] (`--rtt`): what a hook costs when the database is a network hop
//! away, alone (connecting for each call) and with the repository's coordinator running.

use crate::guardrails::{Latency, latency};
use crate::link::RoundTrips;
use crate::target::{BenchDb, EmptyScratch};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The goal (issue 19): PreToolUse p50 at most 1.5 × process start.
pub const GOAL_RATIO: f64 = 1.5;

/// The goal across a network (issue 56): a hook decision's p50 at most this many
/// round-trip times (25 ms at 10 ms).
pub const GOAL_RTTS: f64 = 2.5;

#[derive(Debug, Clone, Serialize)]
pub struct HookCase {
    pub payload: &'static str,
    /// `alone`: the hook opens the database itself; `coordinator`: the repository's
    /// coordinator process is running (a `coord mcp` of the checkout started it, as in
    /// a Claude Code session), and the hook sends its check there.
    pub setting: &'static str,
    pub latency: Latency,
    /// p50 ÷ the baseline's p50.
    pub ratio_p50: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HooksReport {
    pub workload: &'static str,
    pub backend: &'static str,
    /// The round-trip time added between the hooks and PostgreSQL (`--rtt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Round trips to PostgreSQL per hook call, by setting (`--rtt`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub round_trips: Vec<(&'static str, f64)>,
    pub rounds: usize,
    /// `coord --version`: process start and exit, nothing else.
    pub baseline: Latency,
    pub cases: Vec<HookCase>,
    pub goal_ratio: f64,
    pub goals_met: bool,
}

/// Runs `exe` with `args` (and `stdin`) in `dir`, with none of the caller's coord or
/// Claude Code settings; answers its wall time in nanoseconds.
fn timed(exe: &Path, dir: &Path, db: Option<&str>, args: &[&str], stdin: Option<&[u8]>) -> Result<u64, String> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    clean_env(&mut cmd, db);
    let t = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(input)
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let ns = t.elapsed().as_nanos() as u64;
    if !out.status.success() {
        return Err(format!(
            "coord {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(ns)
}

fn payload(dir: &Path, session: &str, tool: &str, input: serde_json::Value) -> Vec<u8> {
    serde_json::json!({
        "session_id": session,
        "transcript_path": dir.join("transcript.jsonl"),
        "cwd": dir,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_bench",
    })
    .to_string()
    .into_bytes()
}

/// `rounds` runs of each, interleaved, in a scratch repository under `dir` (removed); on
/// `db`'s SQLite (the repository's default database) or in a fresh PostgreSQL database.
pub async fn run(exe: &Path, rounds: usize, dir: &Path, db: &BenchDb) -> Result<HooksReport, String> {
    // Short: the coordinator's socket path under it must fit in 107 bytes.
    let id = uuid::Uuid::new_v4().simple().to_string();
    let repo = dir.join(format!("coord-bench-hooks-{}", &id[..12]));
    std::fs::create_dir_all(repo.join(".git")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(repo.join("src")).map_err(|e| e.to_string())?;
    let scratch = match db {
        BenchDb::Sqlite { .. } => None,
        BenchDb::Postgres { .. } => Some(EmptyScratch::create(db, "hooks").await.map_err(|e| e.to_string())?),
    };
    let settings = Settings {
        database: scratch.as_ref().map(|s| s.db_arg.clone()),
        round_trips: scratch.as_ref().map(EmptyScratch::round_trips).unwrap_or_default(),
    };
    let (exe, at) = (exe.to_path_buf(), repo.clone());
    // Whole processes, waited for: off the runtime's threads, which carry the link.
    let outcome = tokio::task::spawn_blocking(move || measure(&exe, rounds.max(5), &at, &settings))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    let _ = std::fs::remove_dir_all(&repo);
    if let Some(s) = scratch {
        s.dispose().await;
    }
    let mut report = outcome?;
    if matches!(db, BenchDb::Postgres { .. }) {
        report.backend = "postgres";
    }
    report.rtt_ms = db.rtt().map(|d| d.as_secs_f64() * 1000.0);
    if let Some(rtt) = db.rtt().filter(|d| !d.is_zero()) {
        // Across a network, the goal is the hook decision's own time.
        let limit = (rtt.as_nanos() as f64 * GOAL_RTTS) as u64;
        report.goals_met = report
            .cases
            .iter()
            .filter(|c| c.setting == "coordinator")
            .all(|c| c.latency.p50_ns <= limit);
    }
    Ok(report)
}

/// Where the hooks' database is: the scratch repository's default SQLite, or this URL.
struct Settings {
    database: Option<String>,
    round_trips: RoundTrips,
}

fn measure(exe: &Path, rounds: usize, repo: &Path, settings: &Settings) -> Result<HooksReport, String> {
    let db = settings.database.as_deref();
    let session = uuid::Uuid::new_v4().to_string();
    let cases: [(&'static str, Vec<u8>); 2] = [
        (
            "Write (edit guard)",
            payload(
                repo,
                &session,
                "Write",
                serde_json::json!({"file_path": repo.join("src/free.rs"), "content": "fn main() {}\n"}),
            ),
        ),
        (
            "Bash (guardrails)",
            payload(
                repo,
                &session,
                "Bash",
                serde_json::json!({"command": "cargo test -p coord-files && git status", "description": "test"}),
            ),
        ),
    ];
    let trips = &settings.round_trips;
    let (mut baseline, alone, alone_trips) = interleaved(exe, repo, db, &cases, rounds, trips)?;
    let mcp = RepositoryCoordinator::start(exe, repo, db)?;
    let with = interleaved(exe, repo, db, &cases, rounds, trips);
    mcp.stop();
    let (more, with, with_trips) = with?;
    baseline.extend(more);
    let baseline = latency(baseline);
    let mut out = Vec::new();
    for (setting, samples) in [("alone", alone), ("coordinator", with)] {
        for ((name, _), ns) in cases.iter().zip(samples) {
            let l = latency(ns);
            out.push(HookCase {
                payload: name,
                setting,
                ratio_p50: l.p50_ns as f64 / baseline.p50_ns.max(1) as f64,
                latency: l,
            });
        }
    }
    let round_trips = [("alone", alone_trips), ("coordinator", with_trips)]
        .into_iter()
        .filter_map(|(setting, n)| Some((setting, n?)))
        .collect();
    Ok(HooksReport {
        workload: "hooks",
        backend: "sqlite",
        rtt_ms: None,
        round_trips,
        rounds,
        // The goal is for the setting agents run in: a session's `coord mcp` running.
        goals_met: out
            .iter()
            .filter(|c| c.setting == "coordinator")
            .all(|c| c.ratio_p50 <= GOAL_RATIO),
        baseline,
        cases: out,
        goal_ratio: GOAL_RATIO,
    })
}

/// Process starts, each case's samples, and the round trips per hook call when counted.
type Runs = (Vec<u64>, Vec<Vec<u64>>, Option<f64>);

/// `rounds` runs of `coord --version` and of every case, interleaved, after a warm-up
/// (the first call creates and migrates the database, the first through a coordinator
/// prepares its statements).
fn interleaved(
    exe: &Path,
    repo: &Path,
    db: Option<&str>,
    cases: &[(&'static str, Vec<u8>)],
    rounds: usize,
    trips: &RoundTrips,
) -> Result<Runs, String> {
    let hook = ["hook", "PreToolUse"];
    for (_, p) in cases {
        timed(exe, repo, db, &hook, Some(p))?;
    }
    timed(exe, repo, db, &["--version"], None)?;
    let before = trips.now();
    let mut baseline = Vec::new();
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        baseline.push(timed(exe, repo, db, &["--version"], None)?);
        for (i, (_, p)) in cases.iter().enumerate() {
            samples[i].push(timed(exe, repo, db, &hook, Some(p))?);
        }
    }
    // Per hook call: `coord --version` makes none.
    let calls = (rounds * cases.len()) as f64;
    let made = trips
        .now()
        .zip(before)
        .map(|(a, b)| crate::driver::round2((a - b) as f64 / calls));
    Ok((baseline, samples, made))
}

/// A `coord mcp` of the scratch repository, as a Claude Code session runs one: it starts
/// the repository's coordinator process, which the hooks then use.
struct RepositoryCoordinator(std::process::Child);

impl RepositoryCoordinator {
    fn start(exe: &Path, repo: &Path, db: Option<&str>) -> Result<RepositoryCoordinator, String> {
        let mut cmd = Command::new(exe);
        cmd.arg("mcp")
            .current_dir(repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        clean_env(&mut cmd, db);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {} mcp: {e}", exe.display()))?;
        let started = Instant::now();
        // Beside the SQLite database, or in `run/` for PostgreSQL.
        let dirs = [repo.join(".coord"), repo.join(".coord").join("run")];
        loop {
            let socket = dirs
                .iter()
                .flat_map(std::fs::read_dir)
                .flatten()
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "sock"));
            if socket {
                return Ok(RepositoryCoordinator(child));
            }
            if started.elapsed() > std::time::Duration::from_secs(20) {
                RepositoryCoordinator(child).stop();
                return Err("coord mcp started no repository coordinator (is COORD_LOCAL_SERVER off?)".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Ends the `coord mcp`; the coordinator stops when the scratch repository goes.
    fn stop(mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// None of the caller's coord or Claude Code settings (every run in the same setting),
/// but the bench's database when it is not the repository's default.
fn clean_env(cmd: &mut Command, db: Option<&str>) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if (k.starts_with("COORD") && k != "COORD_LOCAL_SERVER") || k.starts_with("CLAUDE") {
            cmd.env_remove(k);
        }
    }
    if let Some(url) = db {
        cmd.env("COORD_DATABASE_URL", url);
    }
}
