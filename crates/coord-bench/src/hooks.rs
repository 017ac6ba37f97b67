//! `coord bench hooks`: what Claude Code's PreToolUse hook costs every Write, Edit and
//! Bash of an agent — `coord hook PreToolUse` fed recorded-shape payloads (a Write of a
//! free file: the edit guard; a Bash command: the guardrails), each a whole process
//! with its database opened and its audit row committed — beside the independent floor
//! of the same run: starting the same binary for `coord --version`.

use crate::guardrails::{Latency, latency};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The goal (issue 19): PreToolUse p50 at most 1.5 × process start.
pub const GOAL_RATIO: f64 = 1.5;

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
    pub rounds: usize,
    /// `coord --version`: process start and exit, nothing else.
    pub baseline: Latency,
    pub cases: Vec<HookCase>,
    pub goal_ratio: f64,
    pub goals_met: bool,
}

/// Runs `exe` with `args` (and `stdin`) in `dir`, with none of the caller's coord or
/// Claude Code settings; answers its wall time in nanoseconds.
fn timed(exe: &Path, dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<u64, String> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    clean_env(&mut cmd);
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

/// `rounds` runs of each, interleaved, in a scratch repository under `dir` (removed).
pub fn run(exe: &Path, rounds: usize, dir: &Path) -> Result<HooksReport, String> {
    let repo = dir.join(format!("coord-bench-hooks-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(repo.join(".git")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(repo.join("src")).map_err(|e| e.to_string())?;
    let outcome = measure(exe, rounds.max(5), &repo);
    let _ = std::fs::remove_dir_all(&repo);
    outcome
}

fn measure(exe: &Path, rounds: usize, repo: &Path) -> Result<HooksReport, String> {
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
    let (mut baseline, alone) = interleaved(exe, repo, &cases, rounds)?;
    let mcp = RepositoryCoordinator::start(exe, repo)?;
    let with = interleaved(exe, repo, &cases, rounds);
    mcp.stop();
    let (more, with) = with?;
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
    Ok(HooksReport {
        workload: "hooks",
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

/// `rounds` runs of `coord --version` and of every case, interleaved, after a warm-up
/// (the first call creates and migrates the database).
fn interleaved(
    exe: &Path,
    repo: &Path,
    cases: &[(&'static str, Vec<u8>)],
    rounds: usize,
) -> Result<(Vec<u64>, Vec<Vec<u64>>), String> {
    for (_, p) in cases {
        timed(exe, repo, &["hook", "PreToolUse"], Some(p))?;
    }
    timed(exe, repo, &["--version"], None)?;
    let mut baseline = Vec::new();
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        baseline.push(timed(exe, repo, &["--version"], None)?);
        for (i, (_, p)) in cases.iter().enumerate() {
            samples[i].push(timed(exe, repo, &["hook", "PreToolUse"], Some(p))?);
        }
    }
    Ok((baseline, samples))
}

/// A `coord mcp` of the scratch repository, as a Claude Code session runs one: it starts
/// the repository's coordinator process, which the hooks then use.
struct RepositoryCoordinator(std::process::Child);

impl RepositoryCoordinator {
    fn start(exe: &Path, repo: &Path) -> Result<RepositoryCoordinator, String> {
        let mut cmd = Command::new(exe);
        cmd.arg("mcp")
            .current_dir(repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        clean_env(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {} mcp: {e}", exe.display()))?;
        let started = Instant::now();
        let dir = repo.join(".coord");
        loop {
            let socket = std::fs::read_dir(&dir)
                .into_iter()
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

/// None of the caller's coord or Claude Code settings (every run in the same setting).
fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if (k.starts_with("COORD") && k != "COORD_LOCAL_SERVER") || k.starts_with("CLAUDE") {
            cmd.env_remove(k);
        }
    }
}
