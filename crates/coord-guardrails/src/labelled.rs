//! The labelled corpus (`corpus/commands.jsonl`) and its score: what `coord bench
//! guardrails` reports and the corpus test demands.
//!
//! Each line is one command line with our label: `destructive` (with the operation it
//! must be refused as; `*` for any refusal), `benign` (nothing may refuse it), `warning`
//! (allowed, with the named finding), or `held` (benign in intent, but refused by design
//! because it depends on what only run time knows, e.g. `$(echo ls)` as a command word;
//! `note` says why). `source` names where it comes from: `coord` for our own cases
//! (written from the bypass reports in `research/guardrails.md`), or the public test suite
//! it was taken from, with our label where it differs from that suite's (`note`).

use coord_domain::guardrails::{Action, Finding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Destructive,
    Benign,
    Warning,
    Held,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub command: String,
    pub label: Label,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The development corpus built into this crate: the rules were refined on it.
pub fn corpus() -> Vec<Case> {
    parse(include_str!("../corpus/commands.jsonl"))
}

/// The tuning part of the independent corpus (`corpus/independent/`): rules may learn
/// from its mistakes.
pub fn tuning() -> Vec<Case> {
    parse(include_str!("../corpus/independent/tuning.jsonl"))
}

/// The frozen held-out part of the independent corpus: its figures are reported, its
/// mistakes never are (`corpus/LABELS.md`).
pub fn held_out() -> Vec<Case> {
    parse(include_str!("../corpus/independent/heldout.jsonl"))
}

fn parse(text: &str) -> Vec<Case> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("corpus line {l}: {e}")))
        .collect()
}

/// One case judged wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mistake {
    pub command: String,
    pub label: Label,
    pub want: Option<String>,
    /// The findings, as `operation:action`.
    pub got: Vec<String>,
}

/// How the analysis did on a corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Score {
    pub destructive: usize,
    /// Destructive commands refused (whatever the operation named).
    pub blocked: usize,
    /// Of those, refused as the operation the label names.
    pub blocked_as_labelled: usize,
    pub benign: usize,
    /// Benign commands something refused.
    pub flagged: usize,
    /// Benign commands nothing refused but something warned about.
    pub benign_warned: usize,
    pub warnings: usize,
    pub warned: usize,
    pub held: usize,
    pub held_refused: usize,
    pub mistakes: Vec<Mistake>,
}

impl Score {
    pub fn blocked_ratio(&self) -> f64 {
        ratio(self.blocked, self.destructive)
    }

    pub fn flagged_ratio(&self) -> f64 {
        ratio(self.flagged, self.benign)
    }

    /// Of the benign commands, those allowed with a warning.
    pub fn warned_ratio(&self) -> f64 {
        ratio(self.benign_warned, self.benign)
    }

    /// Of the commands only run time can judge, those refused.
    pub fn held_ratio(&self) -> f64 {
        if self.held == 0 {
            1.0
        } else {
            ratio(self.held_refused, self.held)
        }
    }
}

fn ratio(n: usize, of: usize) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

/// Whether a finding refuses the command for an agent of ordinary trust (2) without an
/// approval: everything but a warning.
pub fn refuses(f: &Finding) -> bool {
    f.action != Action::Warn
}

/// Scores `analyze` on `cases`.
pub fn score(cases: &[Case], analyze: impl Fn(&str) -> Vec<Finding>) -> Score {
    let mut s = Score::default();
    for c in cases {
        let found = analyze(&c.command);
        let refusing: Vec<&Finding> = found.iter().filter(|f| refuses(f)).collect();
        let named = |f: &&Finding| c.operation.as_deref().is_none_or(|op| op == "*" || op == f.operation);
        let right = match c.label {
            Label::Destructive => {
                s.destructive += 1;
                if !refusing.is_empty() {
                    s.blocked += 1;
                }
                let as_labelled = refusing.iter().any(named);
                s.blocked_as_labelled += usize::from(as_labelled);
                as_labelled
            }
            Label::Benign => {
                s.benign += 1;
                s.flagged += usize::from(!refusing.is_empty());
                s.benign_warned += usize::from(refusing.is_empty() && !found.is_empty());
                refusing.is_empty()
            }
            Label::Warning => {
                s.warnings += 1;
                let warned = refusing.is_empty() && found.iter().any(|f| named(&f));
                s.warned += usize::from(warned);
                warned
            }
            Label::Held => {
                s.held += 1;
                s.held_refused += usize::from(!refusing.is_empty());
                !refusing.is_empty()
            }
        };
        if !right {
            s.mistakes.push(Mistake {
                command: c.command.clone(),
                label: c.label,
                want: c.operation.clone(),
                got: found
                    .iter()
                    .map(|f| format!("{}:{}", f.operation, action_name(f.action)))
                    .collect(),
            });
        }
    }
    s
}

fn action_name(a: Action) -> String {
    match a {
        Action::Block => "block".into(),
        Action::ManualReview => "manual_review".into(),
        Action::RequireTrust(t) => format!("trust_{t}"),
        Action::Warn => "warn".into(),
    }
}
