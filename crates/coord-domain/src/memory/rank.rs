//! The ranking of recalled memories: one pure function over the candidates a store's
//! full-text engine and tag index found (docs/memory.md has a worked example).
//!
//! `relevance = C · D · I · U`, each factor in [0, 1]:
//! - C, the match: `T` (text score over the best text score among the candidates, so
//!   the engines' different scales compare) and `G` (share of the asked tags the memory
//!   has): `0.7·T + 0.3·G` when tags were asked, else `T`; with neither text nor tags
//!   every memory matches (C = 1). A memory with C below [`MIN_MATCH`] is not returned.
//! - D, recency: `β + (1−β)·2^(−age/H)` over the days since the memory was last seen,
//!   half-life H (90 days by default), floor β = 0.4 so that durable lessons stay findable.
//! - I, substance: episodic `0.8 + 0.1·[has lessons] + 0.05·[positive or negative
//!   outcome] + 0.05·min(1, log2(occurrences)/3)`; procedural `0.8 + 0.2·W` where W is
//!   the Wilson lower bound of its success rate ([`wilson_lower_bound`]).
//! - U, usefulness: `0.5 + 0.5·(u+1)/(u+n+2)` from agents' `memory_feedback` votes
//!   (0.75 with none; three "not useful" votes give 0.6).
//!
//! D, I and U only modulate: nothing makes an unmatched memory relevant. Recall does not
//! count as being seen (a read is not a write), so showing a memory does not keep it fresh.

use super::{MemoryType, Outcome};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

pub const DEFAULT_HALF_LIFE_DAYS: f64 = 90.0;
pub const DECAY_FLOOR: f64 = 0.4;
/// 95% confidence, for [`wilson_lower_bound`].
const Z: f64 = 1.96;
pub const TEXT_WEIGHT: f64 = 0.7;
pub const TAG_WEIGHT: f64 = 0.3;
pub const MIN_MATCH: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    pub half_life_days: f64,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            half_life_days: DEFAULT_HALF_LIFE_DAYS,
        }
    }
}

/// A memory a store found, with its raw text score (0 when only its tags matched).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub memory_type: MemoryType,
    pub memory_id: String,
    pub agent_id: String,
    pub event_type: String,
    pub summary: String,
    pub outcome: Option<Outcome>,
    pub lessons: Vec<String>,
    pub tags: Vec<String>,
    pub occurrences: i64,
    pub successes: i64,
    pub failures: i64,
    pub useful: i64,
    pub not_useful: i64,
    pub last_seen_at: Timestamp,
    /// Higher is better: `-bm25(...)` in SQLite, `ts_rank(...)` in PostgreSQL.
    pub raw_text: f64,
}

/// Why a memory scored what it did (`recall` with `explain: true`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Explain {
    /// Text match over the best text match among the candidates.
    pub text: f64,
    /// Share of the asked tags the memory has.
    pub tags: f64,
    /// The match, C.
    pub matched: f64,
    /// Recency, D.
    pub recency: f64,
    /// Substance, I.
    pub substance: f64,
    /// Usefulness from feedback, U.
    pub usefulness: f64,
    /// The engine's own text score.
    pub raw_text: f64,
    pub age_days: f64,
    /// The votes U is made of: `memory_feedback` useful, and not useful.
    #[serde(default)]
    pub useful_votes: i64,
    #[serde(default)]
    pub not_useful_votes: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub candidate: Candidate,
    pub relevance: f64,
    pub explain: Explain,
}

pub fn recency(age_days: f64, params: RankParams) -> f64 {
    let age = age_days.max(0.0);
    DECAY_FLOOR + (1.0 - DECAY_FLOOR) * (-age / params.half_life_days).exp2()
}

pub fn usefulness(useful: i64, not_useful: i64) -> f64 {
    let (u, n) = (useful.max(0) as f64, not_useful.max(0) as f64);
    0.5 + 0.5 * (u + 1.0) / (u + n + 2.0)
}

pub fn substance(c: &Candidate) -> f64 {
    match c.memory_type {
        MemoryType::Episodic => {
            let lessons = if c.lessons.is_empty() { 0.0 } else { 0.1 };
            let outcome = match c.outcome {
                Some(Outcome::Positive | Outcome::Negative) => 0.05,
                _ => 0.0,
            };
            let repeats = 0.05 * ((c.occurrences.max(1) as f64).log2() / 3.0).min(1.0);
            0.8 + lessons + outcome + repeats
        }
        MemoryType::Procedural => 0.8 + 0.2 * wilson_lower_bound(c.successes, c.successes + c.failures),
    }
}

/// Scores and orders `candidates` (duplicates by id are scored once) and keeps the best
/// `limit`: relevance descending, then most recently seen, then id, so the order is total.
pub fn rank(
    candidates: Vec<Candidate>,
    tags: &[String],
    text_asked: bool,
    now: Timestamp,
    params: RankParams,
    limit: usize,
) -> Vec<Scored> {
    let mut seen = std::collections::HashSet::new();
    let candidates: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| seen.insert(c.memory_id.clone()))
        .collect();
    let best_text = candidates.iter().map(|c| c.raw_text).fold(0.0_f64, f64::max);
    let listing = !text_asked && tags.is_empty();
    let mut scored: Vec<Scored> = candidates
        .into_iter()
        .filter_map(|c| {
            let text = if best_text > 0.0 {
                (c.raw_text.max(0.0) / best_text).min(1.0)
            } else {
                0.0
            };
            let tag_share = if tags.is_empty() {
                0.0
            } else {
                tags.iter().filter(|t| c.tags.contains(t)).count() as f64 / tags.len() as f64
            };
            let matched = if listing {
                1.0
            } else if tags.is_empty() {
                text
            } else if text_asked {
                TEXT_WEIGHT * text + TAG_WEIGHT * tag_share
            } else {
                tag_share
            };
            if matched < MIN_MATCH {
                return None;
            }
            let age_days = (now - c.last_seen_at).num_milliseconds() as f64 / 86_400_000.0;
            let d = recency(age_days, params);
            let i = substance(&c);
            let u = usefulness(c.useful, c.not_useful);
            let explain = Explain {
                text: round(text),
                tags: round(tag_share),
                matched: round(matched),
                recency: round(d),
                substance: round(i),
                usefulness: round(u),
                raw_text: c.raw_text,
                age_days: round(age_days.max(0.0)),
                useful_votes: c.useful,
                not_useful_votes: c.not_useful,
            };
            Some(Scored {
                relevance: (matched * d * i * u).clamp(0.0, 1.0),
                candidate: c,
                explain,
            })
        })
        .collect();
    scored.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(b.candidate.last_seen_at.cmp(&a.candidate.last_seen_at))
            .then(a.candidate.memory_id.cmp(&b.candidate.memory_id))
    });
    scored.truncate(limit);
    scored
}

/// The lower bound of the Wilson score interval of `successes` out of `total` (0 with
/// no uses).
pub fn wilson_lower_bound(successes: i64, total: i64) -> f64 {
    if total <= 0 {
        return 0.0;
    }
    let n = total as f64;
    let p = (successes.clamp(0, total) as f64) / n;
    let z2 = Z * Z;
    let centre = p + z2 / (2.0 * n);
    let spread = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z2 / n)).max(0.0)
}

/// Four decimals: what a caller can compare, without float noise in audit rows.
pub fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};

    fn now() -> Timestamp {
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
    }

    fn mem(id: &str, raw_text: f64, age_days: i64) -> Candidate {
        Candidate {
            memory_type: MemoryType::Episodic,
            memory_id: id.into(),
            agent_id: "a".into(),
            event_type: "error".into(),
            summary: id.into(),
            outcome: None,
            lessons: vec![],
            tags: vec![],
            occurrences: 1,
            successes: 0,
            failures: 0,
            useful: 0,
            not_useful: 0,
            last_seen_at: now() - Duration::days(age_days),
            raw_text,
        }
    }

    fn order(cands: Vec<Candidate>, tags: &[&str], text: bool) -> Vec<String> {
        let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        rank(cands, &tags, text, now(), RankParams::default(), 10)
            .into_iter()
            .map(|s| s.candidate.memory_id)
            .collect()
    }

    #[test]
    fn decay_values() {
        let p = RankParams::default();
        let cases = [(0.0, 1.0), (90.0, 0.7), (180.0, 0.55), (-5.0, 1.0), (1e9, DECAY_FLOOR)];
        for (age, want) in cases {
            assert!((recency(age, p) - want).abs() < 1e-9, "age {age}: {}", recency(age, p));
        }
        assert!((recency(10.0, RankParams { half_life_days: 10.0 }) - 0.7).abs() < 1e-9);
    }

    #[test]
    fn usefulness_values() {
        let cases = [
            ((0, 0), 0.75),
            ((1, 0), 0.5 + 0.5 * 2.0 / 3.0),
            ((0, 3), 0.6),
            ((5, 0), 0.5 + 0.5 * 6.0 / 7.0),
        ];
        for ((u, n), want) in cases {
            assert!((usefulness(u, n) - want).abs() < 1e-9, "{u}/{n}");
        }
    }

    #[test]
    fn ordering_table() {
        // Equal text: newer first.
        assert_eq!(
            order(vec![mem("old", 5.0, 100), mem("new", 5.0, 1)], &[], true),
            ["new", "old"]
        );
        // A strong old match beats a weak new one (the floor keeps lessons findable).
        assert_eq!(
            order(vec![mem("weak", 1.5, 0), mem("strong", 5.0, 365)], &[], true),
            ["strong", "weak"]
        );
        // No text hit and no tags asked: not returned.
        assert_eq!(order(vec![mem("hit", 5.0, 1), mem("none", 0.0, 0)], &[], true), ["hit"]);
        // Tags asked: a tag-only match is returned, below a text+tag match.
        let mut tagged = mem("tagged", 0.0, 0);
        tagged.tags = vec!["ci".into()];
        let mut both = mem("both", 5.0, 3);
        both.tags = vec!["ci".into()];
        assert_eq!(
            order(vec![tagged.clone(), both, mem("text", 5.0, 0)], &["ci"], true),
            ["both", "text", "tagged"]
        );
        // Tags alone (no text): only tag matches, by share.
        let mut two = mem("two", 0.0, 5);
        two.tags = vec!["ci".into(), "docker".into()];
        assert_eq!(
            order(vec![tagged, two, mem("x", 0.0, 0)], &["ci", "docker"], false),
            ["two", "tagged"]
        );
        // Listing (nothing asked): newest first.
        assert_eq!(order(vec![mem("b", 0.0, 2), mem("a", 0.0, 1)], &[], false), ["a", "b"]);
        // Ties: same relevance and time → id.
        assert_eq!(order(vec![mem("z", 5.0, 1), mem("y", 5.0, 1)], &[], true), ["y", "z"]);
        // Duplicates by id are scored once.
        assert_eq!(order(vec![mem("d", 5.0, 1), mem("d", 5.0, 1)], &[], true), ["d"]);
    }

    #[test]
    fn feedback_and_substance_move_ranking() {
        let mut poor = mem("poor", 5.0, 1);
        poor.not_useful = 3;
        assert_eq!(order(vec![poor, mem("plain", 5.0, 1)], &[], true), ["plain", "poor"]);
        let mut lessons = mem("lessons", 5.0, 1);
        lessons.lessons = vec!["run migrations outside a transaction".into()];
        lessons.outcome = Some(Outcome::Negative);
        assert_eq!(
            order(vec![mem("plain", 5.0, 1), lessons], &[], true),
            ["lessons", "plain"]
        );
        let mut recurring = mem("recurring", 5.0, 1);
        recurring.occurrences = 8;
        assert_eq!(
            order(vec![mem("once", 5.0, 1), recurring], &[], true),
            ["recurring", "once"]
        );
        let mut proven = mem("proven", 5.0, 1);
        proven.memory_type = MemoryType::Procedural;
        (proven.successes, proven.failures) = (95, 5);
        let mut lucky = mem("lucky", 5.0, 1);
        lucky.memory_type = MemoryType::Procedural;
        lucky.successes = 1;
        assert_eq!(order(vec![lucky, proven], &[], true), ["proven", "lucky"]);
    }

    #[test]
    fn relevance_is_bounded_and_monotone() {
        for raw in [0.1, 1.0, 3.0, 10.0] {
            for age in [0, 7, 90, 400] {
                let mut best = mem("m", raw, age);
                best.lessons = vec!["l".into()];
                best.useful = 1000;
                best.occurrences = 1 << 20;
                best.outcome = Some(Outcome::Positive);
                let r = rank(
                    vec![best, mem("top", 10.0, 0)],
                    &[],
                    true,
                    now(),
                    RankParams::default(),
                    10,
                );
                for s in &r {
                    assert!((0.0..=1.0).contains(&s.relevance), "{s:?}");
                }
                // Raising the text score never lowers relevance.
                let lo = rank(
                    vec![mem("m", raw, age), mem("top", 10.0, 0)],
                    &[],
                    true,
                    now(),
                    RankParams::default(),
                    10,
                );
                let hi = rank(
                    vec![mem("m", raw * 1.5, age), mem("top", 10.0, 0)],
                    &[],
                    true,
                    now(),
                    RankParams::default(),
                    10,
                );
                let get = |v: &[Scored]| {
                    v.iter()
                        .find(|s| s.candidate.memory_id == "m")
                        .map_or(0.0, |s| s.relevance)
                };
                assert!(get(&hi) >= get(&lo));
            }
        }
    }
}
