//! Agent memory: episodic memories (experiences and their outcomes, merged when an agent
//! repeats itself within an hour), procedural memories (skills with their success
//! counts) and working memory (a session's active context under a token budget).
//!
//! Everything here is pure: validation, the merge of a repeated memory, the query
//! terms handed to the stores' full-text engines ([`query`]), the ranking ([`rank`]),
//! skills' effectiveness ([`skills`]) and working-memory compaction ([`working`]).
//! One database is one project, so memories are scoped to the database they live in.

pub mod query;
pub mod rank;
pub mod retention;
pub mod session_start;
pub mod skills;
pub mod working;

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::time::Timestamp;
use crate::validate::{self, MAX_SHORT_TEXT};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The window in which the same agent storing the same event type and summary merges
/// into the existing memory instead of creating another (sliding: measured from the
/// memory's `last_seen_at`, so a recurring event keeps merging).
pub const MERGE_WINDOW_MINUTES: i64 = 60;
pub const MAX_SUMMARY: usize = 1000;
pub const MAX_DETAILS_BYTES: usize = 8 * 1024;
pub const MAX_LESSONS: usize = 10;
pub const MAX_LESSON: usize = 500;
/// Lessons kept on a memory that keeps merging (the oldest are dropped beyond this).
pub const MAX_MERGED_LESSONS: usize = 20;
pub const MAX_TAGS: usize = 16;
pub const MAX_TAG: usize = 64;
pub const MAX_EVENT_TYPE: usize = 64;
pub const DEFAULT_RECALL_LIMIT: i64 = 5;
pub const MAX_RECALL_LIMIT: i64 = 50;
/// Candidates each store hands to the ranking per source (text hits, tag hits).
pub const CANDIDATES: i64 = 100;
/// Matching memories a store scores with every word of a query before bounding the
/// work (see the stores' `recall`): the newest this many.
pub const SCORED: i64 = 100;
/// The most postings (the sum of the chosen query words' document frequencies) a
/// store reads for one query: the rarest words are chosen up to it.
pub const POSTINGS: i64 = 2000;
/// A query word held by at most this many memories is rare: every memory holding it is
/// scored, however old.
pub const RARE: i64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// An experience and its outcome (`remember`).
    Episodic,
    /// A skill with its success counts (`record_skill_use`).
    Procedural,
}

impl MemoryType {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Episodic => "episodic",
            MemoryType::Procedural => "procedural",
        }
    }

    pub fn parse(s: &str) -> Option<MemoryType> {
        match s {
            "episodic" => Some(MemoryType::Episodic),
            "procedural" => Some(MemoryType::Procedural),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Positive,
    Negative,
    Neutral,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Positive => "positive",
            Outcome::Negative => "negative",
            Outcome::Neutral => "neutral",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        match s {
            "positive" => Some(Outcome::Positive),
            "negative" => Some(Outcome::Negative),
            "neutral" => Some(Outcome::Neutral),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    /// What kind of event: `error`, `fix`, `decision`, `test_failure`, ... (lowercase
    /// letters, digits, `_`, `-`, `.`, `:`).
    #[schemars(length(min = 1, max = 64))]
    pub event_type: String,
    /// One sentence: what happened. The same agent storing the same event type and
    /// summary within an hour merges into the existing memory.
    #[schemars(length(min = 1, max = 1000), regex(pattern = r"\S"))]
    pub summary: String,
    /// Specifics (paths, commands, error text): a string or a JSON object, at most 8 KiB.
    #[serde(default)]
    pub details: Option<Value>,
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// What to do next time (at most 10, 500 characters each).
    #[serde(default)]
    pub lessons: Option<Vec<String>>,
    /// Categories, normalised to lowercase (at most 16, 64 characters each).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// A validated `remember`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// The id a new memory gets (a merge answers the existing one's).
    pub memory_id: String,
    pub event_type: String,
    pub summary: String,
    pub details: Option<Value>,
    pub outcome: Option<Outcome>,
    pub lessons: Vec<String>,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RememberResult {
    pub success: bool,
    #[schemars(extend("format" = "uuid"))]
    pub memory_id: String,
    /// True when this merged into a memory stored within the hour (same agent, event
    /// type and summary): `memory_id` is that memory's.
    pub merged: bool,
    /// How many times this memory has been stored.
    pub occurrences: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    /// What you are about to do, in your own words; may be empty when `tags` are given.
    #[serde(default)]
    pub task_description: String,
    /// Tags that matter (memories sharing them rank higher; with no text, only they match).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// How many, most relevant first; default 5, at most 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<i64>,
    /// Only memories this agent stored (its agent id). Not named `agent_id`: on the HTTP
    /// API a body's `agent_id` is the caller's own identity claim.
    #[serde(default)]
    pub author: Option<String>,
    /// Only `episodic` or only `procedural` memories (default both).
    #[serde(default)]
    pub memory_type: Option<MemoryType>,
    /// Include each memory's score breakdown (`explain`).
    #[serde(default)]
    pub explain: Option<bool>,
}

/// A validated `recall`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallQuery {
    pub text: query::TextQuery,
    pub tags: Vec<String>,
    pub limit: i64,
    pub author: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub explain: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecallResult {
    /// Most relevant first (ties: most recently seen, then id).
    pub memories: Vec<RecalledMemory>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecalledMemory {
    pub memory_type: MemoryType,
    #[schemars(extend("format" = "uuid"))]
    pub memory_id: String,
    /// The memory as text: summary, lessons and outcome (a skill: what it is, for which
    /// task type, how often it worked).
    pub content: String,
    /// 0..1, relative to this query (see docs/memory.md).
    pub relevance: f64,
    /// The event type (a skill: its task type).
    pub event_type: String,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    pub occurrences: i64,
    pub agent_id: String,
    pub last_seen_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<rank::Explain>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryFeedbackRequest {
    #[schemars(extend("format" = "uuid"))]
    pub memory_id: String,
    /// Whether the memory helped with the task you recalled it for.
    pub useful: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryFeedbackResult {
    pub success: bool,
    pub memory_id: String,
    /// Agents that found it useful / not useful (one vote per agent, the latest counts).
    pub useful_count: i64,
    pub not_useful_count: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    #[schemars(extend("format" = "uuid"))]
    pub memory_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ForgetResult {
    pub success: bool,
    pub memory_id: String,
}

/// A memory id as the stores key it: a UUID, checked before it reaches SQL.
pub fn validate_memory_id(id: &str) -> CoordResult<String> {
    uuid::Uuid::parse_str(id.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "memory_id",
                format!("memory_id must be a UUID (what remember or recall answered), got {id:?}"),
            )
        })
}

pub fn memory_not_found(id: &str) -> CoordError {
    CoordError::new(ErrorCode::NotFound, format!("no memory {id}")).with_detail("memory_id", id)
}

pub fn not_memory_author(id: &str, author: &str) -> CoordError {
    CoordError::new(
        ErrorCode::Forbidden,
        format!("memory {id} was stored by {author}: only its author or an administrator (trust 4) may forget it"),
    )
    .with_detail("memory_id", id)
}

/// A short lowercase word: an event type or a task type (inner spaces become `-`, as in
/// tags: "Flaky test" is `flaky-test`).
pub fn validate_kind_word(field: &str, value: &str) -> CoordResult<String> {
    let v = value.split_whitespace().collect::<Vec<_>>().join("-").to_lowercase();
    if v.is_empty() || v.chars().count() > MAX_EVENT_TYPE || !v.chars().all(is_tag_char) {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            field,
            format!(
                "{field} must be 1 to {MAX_EVENT_TYPE} characters of letters, digits, '_', '-', '.', ':', '/' (spaces become '-'), got {value:?}"
            ),
        ));
    }
    Ok(v)
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/')
}

/// Tags as stored: trimmed, lowercase, inner whitespace as `-`, without repeats, in the
/// order given. Refuses rather than silently dropping what it cannot keep.
pub fn normalise_tags(field: &str, tags: Option<Vec<String>>) -> CoordResult<Vec<String>> {
    let tags = tags.unwrap_or_default();
    if tags.len() > MAX_TAGS {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            field,
            format!("at most {MAX_TAGS} tags, got {}", tags.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let n = t.split_whitespace().collect::<Vec<_>>().join("-").to_lowercase();
        if n.is_empty() || n.chars().count() > MAX_TAG || !n.chars().all(is_tag_char) {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                field,
                format!("tag {t:?} must be 1 to {MAX_TAG} characters of letters, digits, '_', '-', '.', ':', '/'"),
            ));
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

pub fn validate_remember(req: RememberRequest, memory_id: String) -> CoordResult<NewMemory> {
    let event_type = validate_kind_word("event_type", &req.event_type)?;
    let summary = validate::required_text("summary", req.summary.trim(), MAX_SUMMARY)?;
    let details = match validate::json_payload("details", req.details)? {
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(v @ (Value::String(_) | Value::Object(_))) => {
            let size = serde_json::to_string(&v).map_or(usize::MAX, |s| s.len());
            if size > MAX_DETAILS_BYTES {
                return Err(CoordError::field(
                    ErrorCode::PayloadTooLarge,
                    "details",
                    format!("details is {size} bytes; the limit is {MAX_DETAILS_BYTES}"),
                ));
            }
            Some(v)
        }
        Some(_) => {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "details",
                "details must be a string or a JSON object",
            ));
        }
        None => None,
    };
    let lessons = validate::text_list("lessons", req.lessons, MAX_LESSONS, MAX_LESSON)?;
    let mut unique: Vec<String> = Vec::with_capacity(lessons.len());
    for l in lessons {
        let l = l.trim().to_string();
        if !unique.contains(&l) {
            unique.push(l);
        }
    }
    Ok(NewMemory {
        memory_id,
        event_type,
        summary,
        details,
        outcome: req.outcome,
        lessons: unique,
        tags: normalise_tags("tags", req.tags)?,
    })
}

pub fn validate_recall(req: RecallRequest) -> CoordResult<RecallQuery> {
    let description = validate::optional_text("task_description", Some(req.task_description), 4 * 1024)?;
    let tags = normalise_tags("tags", req.tags)?;
    let limit = validate::int_in_range(
        "limit",
        req.limit,
        DEFAULT_RECALL_LIMIT,
        1,
        MAX_RECALL_LIMIT,
        ErrorCode::InvalidArgument,
    )?;
    Ok(RecallQuery {
        text: query::TextQuery::of(description.as_deref().unwrap_or("")),
        tags,
        limit,
        author: validate::optional_text("author", req.author, MAX_SHORT_TEXT)?.map(|a| a.trim().to_string()),
        memory_type: req.memory_type,
        explain: req.explain.unwrap_or(false),
    })
}

/// The key repeated memories share: the agent, the event type and the summary with
/// whitespace collapsed and case folded (so "Build  failed" and "build failed" merge).
pub fn merge_key(agent_id: &str, event_type: &str, summary: &str) -> String {
    let folded = summary.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut h = Sha256::new();
    for part in [agent_id, event_type, &folded] {
        h.update(part.as_bytes());
        h.update([0x1f]);
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a stored memory holds that a merge changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Mergeable {
    pub details: Option<Value>,
    pub outcome: Option<Outcome>,
    pub lessons: Vec<String>,
    pub tags: Vec<String>,
    pub occurrences: i64,
}

/// A repeated memory merged into the stored one: one more occurrence, the latest
/// outcome (when given), tags united, lessons appended without repeats (the newest
/// [`MAX_MERGED_LESSONS`] kept), details: two objects merge key by key (the new value
/// wins; when that would exceed [`MAX_DETAILS_BYTES`], the new details alone),
/// otherwise the new details replace the old when given.
pub fn merge(old: Mergeable, new: &NewMemory) -> Mergeable {
    let details = match (old.details, &new.details) {
        (Some(Value::Object(mut o)), Some(Value::Object(n))) => {
            o.extend(n.iter().map(|(k, v)| (k.clone(), v.clone())));
            Some(Value::Object(o))
        }
        (_, Some(n)) => Some(n.clone()),
        (o, None) => o,
    };
    // Merged objects stay within the bound of one: past it, the new details alone.
    let details = match details {
        Some(d) if serde_json::to_string(&d).map_or(usize::MAX, |s| s.len()) > MAX_DETAILS_BYTES => new.details.clone(),
        d => d,
    };
    let mut lessons = old.lessons;
    for l in &new.lessons {
        if !lessons.contains(l) {
            lessons.push(l.clone());
        }
    }
    if lessons.len() > MAX_MERGED_LESSONS {
        lessons.drain(..lessons.len() - MAX_MERGED_LESSONS);
    }
    let mut tags = old.tags;
    for t in &new.tags {
        if !tags.contains(t) && tags.len() < MAX_TAGS {
            tags.push(t.clone());
        }
    }
    Mergeable {
        details,
        outcome: new.outcome.or(old.outcome),
        lessons,
        tags,
        occurrences: old.occurrences.saturating_add(1),
    }
}

/// The text of `details` the full-text index reads: a string as it is, an object's
/// string leaves (and keys) joined.
pub fn details_text(details: Option<&Value>) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(m) => m.iter().for_each(|(k, v)| {
                out.push(k.clone());
                walk(v, out)
            }),
            Value::Number(n) => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(v) = details {
        walk(v, &mut out);
    }
    out.join(" ")
}

/// A memory as it is shown: the summary, then its lessons and outcome.
pub fn episodic_content(summary: &str, lessons: &[String], outcome: Option<Outcome>) -> String {
    let mut s = summary.to_string();
    if !lessons.is_empty() {
        s.push_str("\nLessons: ");
        s.push_str(&lessons.join("; "));
    }
    if let Some(o) = outcome {
        s.push_str("\nOutcome: ");
        s.push_str(o.as_str());
    }
    s
}

/// The answer of `recall`: `candidates` ranked ([`rank::rank`]) and shown.
pub fn answer(
    candidates: Vec<rank::Candidate>,
    q: &RecallQuery,
    now: Timestamp,
    params: rank::RankParams,
) -> RecallResult {
    let scored = rank::rank(candidates, &q.tags, !q.text.is_empty(), now, params, q.limit as usize);
    RecallResult {
        memories: scored
            .into_iter()
            .map(|s| {
                let c = s.candidate;
                let content = match c.memory_type {
                    MemoryType::Episodic => episodic_content(&c.summary, &c.lessons, c.outcome),
                    MemoryType::Procedural => skills::content(&c.summary, &c.event_type, c.successes, c.failures),
                };
                RecalledMemory {
                    memory_type: c.memory_type,
                    memory_id: c.memory_id,
                    content,
                    relevance: rank::round(s.relevance),
                    event_type: c.event_type,
                    tags: c.tags,
                    outcome: c.outcome,
                    occurrences: c.occurrences,
                    agent_id: c.agent_id,
                    last_seen_at: c.last_seen_at,
                    explain: q.explain.then_some(s.explain),
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
