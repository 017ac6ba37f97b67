//! `coord bench guardrails`: the destructive-operation analysis on the labelled corpus —
//! how much of the destructive part it refuses, how much of the benign part it flags, and
//! how long one command takes, beside the independent floor of the same run: parsing the
//! command line alone with brush-parser (what any parser-based guard must pay).

use coord_guardrails::labelled::{self, Case, Score};
use serde::Serialize;
use std::time::Instant;

/// The goals of the guardrails issue, on commands the rules were not refined on.
pub const GOAL_BLOCKED: f64 = 0.99;
pub const GOAL_FLAGGED: f64 = 0.01;
pub const GOAL_WARNED: f64 = 0.03;
pub const GOAL_P99_NS: u64 = 1_000_000;

/// One part of the independent corpus, judged against the goals.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub commands: usize,
    pub destructive: usize,
    pub blocked: usize,
    /// Destructive commands refused (the goal: at least 99%).
    pub recall: f64,
    pub benign: usize,
    pub benign_blocked: usize,
    /// Benign commands refused (at most 1%).
    pub benign_blocked_ratio: f64,
    pub benign_warned: usize,
    /// Benign commands allowed with a warning (at most 3%).
    pub benign_warned_ratio: f64,
    pub held: usize,
    /// Commands only run time can judge, refused (all of them).
    pub held_refused: usize,
    pub goals_met: bool,
    /// The tuning part's mistakes; never the held-out part's (`corpus/LABELS.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mistakes: Option<Vec<labelled::Mistake>>,
}

impl Part {
    fn of(cases: &[Case], show_mistakes: bool) -> Part {
        let s = labelled::score(cases, coord_guardrails::analyze);
        Part {
            commands: cases.len(),
            recall: s.blocked_ratio(),
            benign_blocked_ratio: s.flagged_ratio(),
            benign_warned_ratio: s.warned_ratio(),
            goals_met: s.blocked_ratio() >= GOAL_BLOCKED
                && s.flagged_ratio() <= GOAL_FLAGGED
                && s.warned_ratio() <= GOAL_WARNED
                && s.held_refused == s.held,
            destructive: s.destructive,
            blocked: s.blocked,
            benign: s.benign,
            benign_blocked: s.flagged,
            benign_warned: s.benign_warned,
            held: s.held,
            held_refused: s.held_refused,
            mistakes: show_mistakes.then_some(s.mistakes),
        }
    }
}

/// The independent corpus: its tuning part and its frozen held-out part.
#[derive(Debug, Clone, Serialize)]
pub struct Independent {
    pub tuning: Part,
    pub held_out: Part,
}

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
    /// The development corpus (or the one given): the rules were refined on it.
    pub score: Score,
    pub blocked_ratio: f64,
    pub flagged_ratio: f64,
    /// The independent corpus, when the built-in corpora are judged: the goals are
    /// judged on its held-out part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub independent: Option<Independent>,
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

/// Scores and times the analysis on `cases` (the built-in corpora unless given: the
/// development corpus, then the independent one's tuning and held-out parts).
pub fn run(cases: Option<Vec<Case>>, rounds: usize) -> GuardrailsReport {
    let independent = cases.is_none().then(|| Independent {
        tuning: Part::of(&labelled::tuning(), true),
        held_out: Part::of(&labelled::held_out(), false),
    });
    let given = cases.is_some();
    let cases = cases.unwrap_or_else(labelled::corpus);
    let score = labelled::score(&cases, coord_guardrails::analyze);
    // Timed on every command judged.
    let mut timed_cases = cases.clone();
    if !given {
        timed_cases.extend(labelled::tuning());
        timed_cases.extend(labelled::held_out());
    }
    // One warm-up round: the first call compiles the pattern registry.
    let _ = timed(&timed_cases, 1);
    let (analysis, parse_only) = timed(&timed_cases, rounds.max(1));
    let (blocked_ratio, flagged_ratio) = (score.blocked_ratio(), score.flagged_ratio());
    // Judged where the rules never looked: the held-out part, when there is one.
    let scores_met = match &independent {
        Some(i) => i.held_out.goals_met,
        None => blocked_ratio >= GOAL_BLOCKED && flagged_ratio < GOAL_FLAGGED,
    };
    GuardrailsReport {
        workload: "guardrails",
        commands: timed_cases.len(),
        rounds: rounds.max(1),
        goals_met: scores_met && analysis.p99_ns < GOAL_P99_NS,
        independent,
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
