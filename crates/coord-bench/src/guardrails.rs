//! `coord bench guardrails`: the destructive-operation analysis on the labelled corpus —
//! how much of the destructive part it refuses, how much of the benign part it flags, and
//! how long one command takes, beside the independent floor of the same run: parsing the
//! command line alone with brush-parser (what any parser-based guard must pay).

use coord_guardrails::labelled::{self, Case, Score};
use serde::Serialize;
use std::time::Instant;

/// The goals of the guardrails issue.
pub const GOAL_BLOCKED: f64 = 0.99;
pub const GOAL_FLAGGED: f64 = 0.01;
pub const GOAL_P99_NS: u64 = 1_000_000;

/// Latencies of one pass kind, in nanoseconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Latency {
    pub samples: usize,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GuardrailsReport {
    pub workload: &'static str,
    pub commands: usize,
    pub rounds: usize,
    pub score: Score,
    pub blocked_ratio: f64,
    pub flagged_ratio: f64,
    /// `analyze` (parse, walk, every rule and pattern), per command.
    pub analysis: Latency,
    /// The baseline: brush-parser's parse alone, per command.
    pub parse_only: Latency,
    /// analysis p99 / parse-only p99.
    pub ratio_p99: f64,
    pub goals_met: bool,
}

pub(crate) fn latency(mut ns: Vec<u64>) -> Latency {
    ns.sort_unstable();
    let at = |p: f64| {
        if ns.is_empty() {
            return 0;
        }
        let rank = ((p / 100.0) * ns.len() as f64).ceil() as usize;
        ns[rank.clamp(1, ns.len()) - 1]
    };
    Latency {
        samples: ns.len(),
        p50_ns: at(50.0),
        p99_ns: at(99.0),
        max_ns: ns.last().copied().unwrap_or_default(),
    }
}

/// Times `f` on every command, `rounds` times, interleaved with the baseline so both see
/// the same machine state.
fn timed(cases: &[Case], rounds: usize) -> (Latency, Latency) {
    let (mut analysis, mut parse) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for c in cases {
            let t = Instant::now();
            std::hint::black_box(coord_guardrails::analyze(std::hint::black_box(&c.command)));
            analysis.push(t.elapsed().as_nanos() as u64);
            let t = Instant::now();
            let _ = std::hint::black_box(coord_guardrails::walk::parse(std::hint::black_box(&c.command)));
            parse.push(t.elapsed().as_nanos() as u64);
        }
    }
    (latency(analysis), latency(parse))
}

/// Scores and times the analysis on `cases` (the built-in corpus unless given).
pub fn run(cases: Option<Vec<Case>>, rounds: usize) -> GuardrailsReport {
    let cases = cases.unwrap_or_else(labelled::corpus);
    let score = labelled::score(&cases, coord_guardrails::analyze);
    // One warm-up round: the first call compiles the pattern registry.
    let _ = timed(&cases, 1);
    let (analysis, parse_only) = timed(&cases, rounds.max(1));
    let (blocked_ratio, flagged_ratio) = (score.blocked_ratio(), score.flagged_ratio());
    GuardrailsReport {
        workload: "guardrails",
        commands: cases.len(),
        rounds: rounds.max(1),
        goals_met: blocked_ratio >= GOAL_BLOCKED && flagged_ratio < GOAL_FLAGGED && analysis.p99_ns < GOAL_P99_NS,
        ratio_p99: analysis.p99_ns as f64 / parse_only.p99_ns.max(1) as f64,
        blocked_ratio,
        flagged_ratio,
        analysis,
        parse_only,
        score,
    }
}

/// Reads a corpus of one's own: JSON lines as in `corpus/commands.jsonl`.
pub fn read_corpus(text: &str) -> Result<Vec<Case>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_the_corpus_it_is_given() {
        let cases = read_corpus(
            "{\"command\":\"git push --force\",\"label\":\"destructive\",\"operation\":\"force_push\",\"source\":\"t\"}\n\
             {\"command\":\"ls\",\"label\":\"benign\",\"source\":\"t\"}\n\
             {\"command\":\"rm -rf /\",\"label\":\"benign\",\"source\":\"t\"}\n",
        )
        .unwrap();
        let r = run(Some(cases), 1);
        assert_eq!((r.commands, r.score.destructive, r.score.blocked), (3, 1, 1));
        assert_eq!((r.score.benign, r.score.flagged), (2, 1));
        assert_eq!(r.score.mistakes.len(), 1);
        assert_eq!(r.analysis.samples, 3);
        assert!(!r.goals_met, "half the benign commands flagged");
        assert!(read_corpus("{\"command\": 1}").unwrap_err().starts_with("line 1"));
    }
}
