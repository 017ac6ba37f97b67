//! How a launch ended: the agent's final answer, read from what its runtime wrote.

use coord_agents::LaunchPlan;
use coord_domain::agents::Runtime;
use std::path::Path;

/// A launch's outcome, as printed and as `--json`.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    pub success: bool,
    /// Why it was stopped before it ended: deadline, interrupted, terminated, stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Its runtime said the final answer is an error.
    #[serde(skip)]
    pub result_is_error: bool,
    pub agent_id: String,
    pub agent: String,
    pub runtime: &'static str,
    pub profile: String,
    pub exit_code: i32,
    pub timed_out: bool,
    pub result: Option<String>,
    pub permission_denials: Vec<serde_json::Value>,
    pub run_dir: String,
    /// Its worktree (--isolation worktree), and what became of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<coord_domain::agents::isolation::IsolatedWorktree>,
    /// The deadline it ran under.
    #[serde(skip)]
    pub deadline: std::time::Duration,
}

/// The final `result` line of Claude Code's stream-json output, or Codex's last message.
/// How much of the end of a run's output is read for its final answer.
const FINAL_OUTPUT_BYTES: usize = 1 << 20;

/// Also whether the runtime marked it an error.
pub(super) fn final_result(plan: &LaunchPlan, run_dir: &Path) -> (Option<String>, Vec<serde_json::Value>, bool) {
    match plan.runtime {
        Runtime::Claude => {
            // The end is enough (the result line is last); read safely: the agent can write
            // its run directory.
            let text = read_tail(&run_dir.join("output.jsonl"), FINAL_OUTPUT_BYTES).unwrap_or_default();
            text.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| v["type"] == "result")
                .map(|v| {
                    (
                        v["result"].as_str().map(String::from),
                        v["permission_denials"].as_array().cloned().unwrap_or_default(),
                        v["is_error"].as_bool().unwrap_or(false),
                    )
                })
                .unwrap_or_default()
        }
        Runtime::Codex => (
            read_tail(&run_dir.join("last-message.txt"), FINAL_OUTPUT_BYTES),
            Vec::new(),
            false,
        ),
        // Aider has no structured output: what it printed (its answer, the edits it
        // applied, or why it could not) is the result.
        Runtime::Aider => (
            read_tail(&run_dir.join("output.jsonl"), FINAL_OUTPUT_BYTES)
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            Vec::new(),
            false,
        ),
    }
}

/// The last `max` bytes of a file the agent could have replaced (its run directory is
/// writable inside the sandbox): never through a symlink (`O_NOFOLLOW`), only a regular
/// file (a FIFO or a device would hang the reader: `O_NONBLOCK` for the open), at most
/// `max` bytes read.
pub fn read_tail(path: &Path, max: usize) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let max = u64::try_from(max).unwrap_or(u64::MAX);
    if meta.len() > max {
        f.seek(SeekFrom::Start(meta.len() - max)).ok()?;
    }
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
