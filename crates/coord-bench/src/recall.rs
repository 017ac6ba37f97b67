//! `coord bench recall`: how well `recall` ranks, and how fast it answers.
//!
//! Relevance: the hand-written fixture (`fixtures/recall/`: coding-agent memories and
//! task descriptions with judged relevant memories, graded 2 = directly applicable,
//! 1 = related) is stored through the coordinator on an injected clock (each memory
//! at its age, repeats merged, feedback votes by other agents, skills used), then every
//! query is recalled (limit 10). Reported: top-3 hit rate (a judged memory among the
//! first three) and MRR@10 (1 / rank of the first judged memory), overall and per
//! category, for coord's ranking and, on the same data, for the baseline the spec's
//! original system had: memories sharing a tag with the query (its tags, and the tags
//! its description names), newest first. Queries with no relevant memory ("negative")
//! are reported apart: the relevance of the best memory coord returned for them.
//!
//! Speed: `scale` synthetic memories more (vocabulary drawn from the fixture, so text
//! queries match thousands of them) are added, and the queries are recalled again,
//! timed one at a time through the coordinator (audit row included).

use crate::target::Scratch;
use crate::{BenchDb, BenchError, BenchResult, Samples};
use chrono::Duration;
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_domain::memory::query::TextQuery;
use coord_domain::memory::skills::RecordSkillUseRequest;
use coord_domain::memory::{MemoryFeedbackRequest, Outcome, RecallRequest, RememberRequest, normalise_tags};
use coord_service::call;
use coord_service::ops::memory::{MemoryFeedback, Recall, RecordSkillUse, Remember};
use coord_service::{CoordConfig, Coordinator, ManualClock};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

const MEMORIES: &str = include_str!("../fixtures/recall/memories.jsonl");
const QUERIES: &str = include_str!("../fixtures/recall/queries.jsonl");

pub const GOAL_HIT3: f64 = 0.8;
pub const GOAL_MRR: f64 = 0.65;
pub const GOAL_P99_US: u64 = 10_000;
/// The scale the latency goal is stated for.
pub const GOAL_SCALE: usize = 100_000;

#[derive(Debug, Clone, Deserialize)]
struct FixtureMemory {
    key: String,
    kind: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    details: Option<String>,
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    lessons: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    age_days: f64,
    #[serde(default)]
    occurrences: Option<i64>,
    #[serde(default)]
    useful: i64,
    #[serde(default)]
    not_useful: i64,
    #[serde(default)]
    skill: Option<String>,
    #[serde(default)]
    task_type: Option<String>,
    #[serde(default)]
    successes: i64,
    #[serde(default)]
    failures: i64,
}

#[derive(Debug, Clone, Deserialize)]
struct FixtureQuery {
    key: String,
    task_description: String,
    #[serde(default)]
    tags: Vec<String>,
    category: String,
    relevant: BTreeMap<String, u8>,
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> BenchResult<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| BenchError::Setup(format!("fixture {what} line {}: {e}", i + 1)))
        })
        .collect()
}

/// Hit rate and MRR over a set of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Scores {
    pub queries: usize,
    pub hit_at_3: f64,
    pub mrr_at_10: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub overall: Scores,
    pub by_category: BTreeMap<String, Scores>,
    /// Queries that found no judged memory in their top 3 (key, category).
    pub misses: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Speed {
    /// Memories in the database while timing.
    pub memories: usize,
    pub recalls: usize,
    pub p50_us: u64,
    pub p99_us: u64,
    /// The ranking's scores with the extra memories present.
    pub scores: Scores,
    /// The queries whose slowest round took longest (key, median µs, slowest µs): a tail
    /// that is always the same queries is the algorithm's, not the machine's.
    pub slowest: Vec<(String, u64, u64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RecallReport {
    pub backend: &'static str,
    pub fixture_memories: usize,
    pub fixture_queries: usize,
    pub coord: Ranking,
    pub baseline: Ranking,
    /// Queries with no relevant memory: how many, and the mean relevance of the best
    /// memory coord returned (0 when it returned none).
    pub negative_queries: usize,
    pub negative_top_relevance: f64,
    pub speed: Option<Speed>,
    pub goals_met: bool,
}

/// The first rank (1-based) at which `ranked` holds a judged memory.
fn first_relevant(ranked: &[String], relevant: &BTreeMap<String, u8>) -> Option<usize> {
    ranked
        .iter()
        .position(|k| relevant.get(k).copied().unwrap_or(0) > 0)
        .map(|i| i + 1)
}

fn score(results: &[(&FixtureQuery, Vec<String>)]) -> Ranking {
    let mut by: BTreeMap<String, (usize, f64, f64)> = BTreeMap::new();
    let mut total = (0usize, 0.0, 0.0);
    let mut misses = Vec::new();
    for (q, ranked) in results {
        let first = first_relevant(ranked, &q.relevant);
        let hit = f64::from(u8::from(first.is_some_and(|r| r <= 3)));
        let rr = first.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64);
        if hit == 0.0 {
            misses.push(format!("{} ({})", q.key, q.category));
        }
        for acc in [&mut total, by.entry(q.category.clone()).or_default()] {
            acc.0 += 1;
            acc.1 += hit;
            acc.2 += rr;
        }
    }
    let scores = |(n, h, r): (usize, f64, f64)| Scores {
        queries: n,
        hit_at_3: round(if n > 0 { h / n as f64 } else { 0.0 }),
        mrr_at_10: round(if n > 0 { r / n as f64 } else { 0.0 }),
    };
    Ranking {
        overall: scores(total),
        by_category: by.into_iter().map(|(k, v)| (k, scores(v))).collect(),
        misses,
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The baseline: memories sharing a tag with the query's tags and the tags its
/// description names, newest first (what the original system's recall did).
fn baseline(memories: &[FixtureMemory], q: &FixtureQuery) -> Vec<String> {
    let words: HashSet<String> = TextQuery::of(&q.task_description).terms.into_iter().collect();
    let known: HashSet<&str> = memories
        .iter()
        .flat_map(|m| m.tags.iter().map(String::as_str))
        .collect();
    let mut wanted: HashSet<String> = q.tags.iter().cloned().collect();
    for tag in known {
        // A tag is named when all its words appear in the description.
        let parts = TextQuery::of(tag).terms;
        if !parts.is_empty() && parts.iter().all(|p| words.contains(p)) {
            wanted.insert(tag.to_string());
        }
    }
    let mut hits: Vec<&FixtureMemory> = memories
        .iter()
        .filter(|m| {
            m.tags.iter().any(|t| wanted.contains(t)) || m.task_type.as_ref().is_some_and(|t| wanted.contains(t))
        })
        .collect();
    hits.sort_by(|a, b| a.age_days.total_cmp(&b.age_days).then(a.key.cmp(&b.key)));
    hits.into_iter().take(10).map(|m| m.key.clone()).collect()
}

fn who(agent: &str) -> Principal {
    Principal::local(Caller::new(agent, crate::AGENT_TYPE))
}

/// Stores the fixture through the coordinator; answers fixture key → memory id.
async fn load(
    coord: &Coordinator,
    clock: &ManualClock,
    now: chrono::DateTime<chrono::Utc>,
    memories: &[FixtureMemory],
) -> BenchResult<HashMap<String, String>> {
    let mut ids = HashMap::new();
    // Oldest first, as they would have been stored.
    let mut order: Vec<&FixtureMemory> = memories.iter().collect();
    order.sort_by(|a, b| b.age_days.total_cmp(&a.age_days));
    for m in order {
        clock.set(now - Duration::seconds((m.age_days * 86_400.0) as i64));
        let agent = m.agent.clone().unwrap_or_else(|| "claude-a".into());
        let id = if m.kind == "procedural" {
            let mut id = String::new();
            for i in 0..(m.successes + m.failures).max(1) {
                let r = call::<RecordSkillUse, _>(
                    coord,
                    &who(&agent),
                    RecordSkillUseRequest {
                        skill: m.skill.clone().unwrap_or_default(),
                        task_type: m.task_type.clone().unwrap_or_default(),
                        success: i < m.successes,
                    },
                )
                .await?;
                id = r.skill.memory_id;
            }
            id
        } else {
            let req = RememberRequest {
                event_type: m.event_type.clone().unwrap_or_default(),
                summary: m.summary.clone().unwrap_or_default(),
                details: m.details.clone().map(serde_json::Value::String),
                outcome: m.outcome,
                lessons: Some(m.lessons.clone()),
                tags: Some(m.tags.clone()),
            };
            let mut id = String::new();
            for _ in 0..m.occurrences.unwrap_or(1).max(1) {
                id = call::<Remember, _>(coord, &who(&agent), req.clone()).await?.memory_id;
            }
            id
        };
        for (n, useful) in [(m.useful, true), (m.not_useful, false)] {
            for i in 0..n {
                let req = MemoryFeedbackRequest {
                    memory_id: id.clone(),
                    useful,
                };
                call::<MemoryFeedback, _>(coord, &who(&format!("reviewer-{useful}-{i}")), req).await?;
            }
        }
        ids.insert(m.key.clone(), id);
    }
    clock.set(now);
    Ok(ids)
}

/// Each query's recall times (µs), by query.
type PerQuery = Vec<Vec<u64>>;

async fn recall_all(
    coord: &Coordinator,
    queries: &[FixtureQuery],
    keys: &HashMap<String, String>,
    samples: &mut Samples,
    rounds: usize,
) -> BenchResult<(Vec<Vec<String>>, Vec<f64>, PerQuery)> {
    let reader = who("bench-reader");
    let mut ranked = Vec::new();
    let mut top = Vec::new();
    let mut per_query: PerQuery = vec![Vec::new(); queries.len()];
    for round in 0..rounds.max(1) {
        for (i, q) in queries.iter().enumerate() {
            let req = RecallRequest {
                task_description: q.task_description.clone(),
                tags: (!q.tags.is_empty()).then(|| q.tags.clone()),
                limit: Some(10),
                ..Default::default()
            };
            let t = Instant::now();
            let r = call::<Recall, _>(coord, &reader, req).await?;
            samples.record(t.elapsed());
            per_query[i].push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
            if round == 0 {
                ranked.push(
                    r.memories
                        .iter()
                        .map(|m| keys.get(&m.memory_id).cloned().unwrap_or_else(|| m.memory_id.clone()))
                        .collect(),
                );
                top.push(r.memories.first().map_or(0.0, |m| m.relevance));
            }
        }
    }
    Ok((ranked, top, per_query))
}

/// The `n` queries with the longest slowest round: (key, median µs, slowest µs).
fn slowest(queries: &[FixtureQuery], per_query: &PerQuery, n: usize) -> Vec<(String, u64, u64)> {
    let mut rows: Vec<(String, u64, u64)> = queries
        .iter()
        .zip(per_query)
        .map(|(q, times)| {
            let mut t = times.clone();
            t.sort_unstable();
            (
                q.key.clone(),
                t.get(t.len() / 2).copied().unwrap_or(0),
                t.last().copied().unwrap_or(0),
            )
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.2));
    rows.truncate(n);
    rows
}

/// A deterministic generator (no dependency for a benchmark's noise).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() as usize) % v.len()]
    }
}

/// The vocabulary of the synthetic memories: the fixture's most frequent words recur,
/// as a project's everyday words do (test, build, failed, migration ...), and 20,000
/// generated words stand for everything else a project's memories name (modules,
/// functions, error codes); both drawn with a Zipf-like (log-uniform) rank distribution,
/// so a few words are very common and most are rare, as in real text.
struct Vocabulary {
    common: Vec<String>,
    other: Vec<String>,
}

impl Vocabulary {
    fn new(memories: &[FixtureMemory]) -> Vocabulary {
        let mut df: HashMap<String, usize> = HashMap::new();
        for m in memories {
            let text = format!("{} {}", m.summary.as_deref().unwrap_or(""), m.lessons.join(" "));
            let words: HashSet<String> = TextQuery::of(&text).terms.into_iter().collect();
            for w in words {
                *df.entry(w).or_default() += 1;
            }
        }
        let mut ranked: Vec<(String, usize)> = df.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let common = ranked.into_iter().take(150).map(|(w, _)| w).collect();
        const SYLLABLES: [&str; 24] = [
            "ka", "lo", "mi", "nu", "re", "sa", "to", "vi", "zo", "pe", "du", "ge", "ri", "xa", "bo", "fi", "qu", "ny",
            "ha", "je", "wo", "ty", "cu", "el",
        ];
        let mut rng = Lcg(7);
        let other = (0..20_000)
            .map(|i| {
                let n = 2 + (rng.next() % 3) as usize;
                let w: String = (0..n).map(|_| *rng.pick(&SYLLABLES)).collect();
                format!("{w}{}", i % 97)
            })
            .collect();
        Vocabulary { common, other }
    }

    fn zipf<'a>(rng: &mut Lcg, words: &'a [String]) -> &'a str {
        let u = (rng.next() % 1_000_000) as f64 / 1_000_000.0;
        let i = ((words.len() as f64 + 1.0).powf(u) - 1.0) as usize;
        &words[i.min(words.len() - 1)]
    }

    fn word(&self, rng: &mut Lcg) -> &str {
        if rng.next() % 100 < 35 {
            Self::zipf(rng, &self.common)
        } else {
            Self::zipf(rng, &self.other)
        }
    }
}

/// Adds `n` synthetic memories from 8 concurrent writers, each on a coordinator of its
/// own over the same store with its own clock, so every memory gets an age spread over a
/// year.
async fn fill(
    store: Arc<dyn coord_store::Store>,
    now: chrono::DateTime<chrono::Utc>,
    memories: &[FixtureMemory],
    n: usize,
) -> BenchResult<()> {
    let vocab = Arc::new(Vocabulary::new(memories));
    let tags: Vec<String> = {
        let set: std::collections::BTreeSet<String> = memories.iter().flat_map(|m| m.tags.clone()).collect();
        set.into_iter().collect()
    };
    let workers = 8;
    let per = n.div_ceil(workers);
    let mut handles = Vec::new();
    for w in 0..workers {
        let clock = Arc::new(ManualClock::new(now));
        let coord = Coordinator::new(store.clone(), clock.clone(), CoordConfig::default());
        let vocab = vocab.clone();
        let tags = tags.clone();
        let count = per.min(n.saturating_sub(w * per));
        handles.push(tokio::spawn(async move {
            let mut rng = Lcg(0x9e37_79b9_7f4a_7c15 ^ w as u64);
            let agent = who(&format!("filler-{w}"));
            for i in 0..count {
                clock.set(now - Duration::minutes((rng.next() % (365 * 24 * 60)) as i64));
                let len = 12 + (rng.next() % 14) as usize;
                let summary: Vec<&str> = (0..len).map(|_| vocab.word(&mut rng)).collect();
                let lesson: Vec<&str> = (0..6).map(|_| vocab.word(&mut rng)).collect();
                let req = RememberRequest {
                    event_type: rng
                        .pick(&["error", "fix", "decision", "discovery", "test_failure"])
                        .to_string(),
                    summary: format!("{} (#{w}-{i})", summary.join(" ")),
                    lessons: Some(vec![lesson.join(" ")]),
                    tags: Some(vec![rng.pick(&tags).clone(), rng.pick(&tags).clone()]),
                    ..Default::default()
                };
                call::<Remember, _>(&coord, &agent, req).await?;
            }
            Ok::<(), coord_domain::CoordError>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| BenchError::Setup(format!("fill task: {e}")))??;
    }
    Ok(())
}

/// Runs the relevance and speed measures on one scratch database.
pub async fn run(db: &BenchDb, scale: usize, rounds: usize) -> BenchResult<RecallReport> {
    let memories: Vec<FixtureMemory> = parse(MEMORIES, "memories")?;
    let queries: Vec<FixtureQuery> = parse(QUERIES, "queries")?;
    for m in &memories {
        normalise_tags("tags", Some(m.tags.clone()))?;
    }
    let scratch = Scratch::create(db, "recall", 8).await?;
    let outcome = measure(&scratch, &memories, &queries, scale, rounds).await;
    scratch.dispose().await;
    outcome
}

async fn measure(
    scratch: &Scratch,
    memories: &[FixtureMemory],
    queries: &[FixtureQuery],
    scale: usize,
    rounds: usize,
) -> BenchResult<RecallReport> {
    let now = chrono::Utc::now();
    let clock = Arc::new(ManualClock::new(now));
    let coord = Coordinator::new(scratch.store(), clock.clone(), CoordConfig::default());
    let ids = load(&coord, &clock, now, memories).await?;
    let keys: HashMap<String, String> = ids.iter().map(|(k, v)| (v.clone(), k.clone())).collect();
    let (judged, negative): (Vec<&FixtureQuery>, Vec<&FixtureQuery>) =
        queries.iter().partition(|q| q.category != "negative");
    let judged_owned: Vec<FixtureQuery> = judged.iter().map(|q| (*q).clone()).collect();
    let negative_owned: Vec<FixtureQuery> = negative.iter().map(|q| (*q).clone()).collect();
    let mut unused = Samples::default();
    let (ranked, _, _) = recall_all(&coord, &judged_owned, &keys, &mut unused, 1).await?;
    let (_, neg_top, _) = recall_all(&coord, &negative_owned, &keys, &mut unused, 1).await?;
    let coord_ranking = score(&judged.iter().copied().zip(ranked).collect::<Vec<_>>());
    let base = score(&judged.iter().map(|q| (*q, baseline(memories, q))).collect::<Vec<_>>());
    let speed = if scale > 0 {
        fill(scratch.store(), now, memories, scale).await?;
        scratch.settle().await?;
        let mut samples = Samples::default();
        let (ranked, _, per_query) = recall_all(&coord, &judged_owned, &keys, &mut samples, rounds).await?;
        let scores = score(&judged.iter().copied().zip(ranked).collect::<Vec<_>>()).overall;
        Some(Speed {
            memories: memories.len() + scale,
            recalls: samples.len(),
            p50_us: samples.percentile(50.0),
            p99_us: samples.percentile(99.0),
            scores,
            slowest: slowest(&judged_owned, &per_query, 5),
        })
    } else {
        None
    };
    let c = &coord_ranking.overall;
    let goals_met = c.hit_at_3 >= GOAL_HIT3
        && c.mrr_at_10 >= GOAL_MRR
        && c.hit_at_3 > base.overall.hit_at_3
        && c.mrr_at_10 > base.overall.mrr_at_10
        && speed.as_ref().is_none_or(|s| s.p99_us < GOAL_P99_US);
    Ok(RecallReport {
        backend: scratch.backend,
        fixture_memories: memories.len(),
        fixture_queries: queries.len(),
        coord: coord_ranking,
        baseline: base,
        negative_queries: neg_top.len(),
        negative_top_relevance: round(neg_top.iter().sum::<f64>() / neg_top.len().max(1) as f64),
        speed,
        goals_met,
    })
}
