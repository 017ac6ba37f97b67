//! Working memory: a session's active context (entries under keys), kept under a token
//! budget by a deterministic compaction — no model call.
//!
//! Tokens are estimated, not counted: `ceil(bytes(key) + bytes(content)) / 4) + 4` per
//! entry (Codex uses 4 bytes per token; the 4 extra stand for the entry's framing). Over
//! budget, [`compact`] works down to 80% of it so the next write does not compact again:
//! 1. protected: every critical entry, and the newest entries until they fill half the
//!    budget (the newest one always);
//! 2. the other entries, oldest first, are cut to their head and tail
//!    ([`COMPRESSED_TOKENS`]), state `compressed`, the original kept;
//! 3. still over: compressed entries, oldest first, are folded into one `digest` entry
//!    (a line each: key and first line), state `folded`, the original kept;
//! 4. still over (critical and protected entries alone exceed it): `over_budget`, and
//!    nothing critical is ever cut.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::time::Timestamp;
use crate::validate;
use serde::{Deserialize, Serialize};

pub const DEFAULT_BUDGET: i64 = 4000;
pub const MIN_BUDGET: i64 = 200;
pub const MAX_BUDGET: i64 = 1_000_000;
/// What a compressed entry is cut to.
pub const COMPRESSED_TOKENS: i64 = 64;
pub const MAX_ENTRIES_PER_CALL: usize = 64;
pub const MAX_ENTRIES: usize = 512;
/// Folded entries (out of the context, kept for their originals) a session keeps.
pub const MAX_FOLDED: usize = 256;
pub const MAX_KEY: usize = 128;
pub const MAX_CONTENT: usize = 16 * 1024;
/// The digest's key.
pub const DIGEST_KEY: &str = "digest";
const DIGEST_LINE: usize = 80;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// What the session is doing.
    Task,
    Plan,
    Decision,
    /// Something learnt while working.
    Finding,
    Error,
    /// A file and why it matters.
    File,
    #[default]
    Note,
    /// What compaction folded (written by coord only).
    Digest,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Task => "task",
            EntryKind::Plan => "plan",
            EntryKind::Decision => "decision",
            EntryKind::Finding => "finding",
            EntryKind::Error => "error",
            EntryKind::File => "file",
            EntryKind::Note => "note",
            EntryKind::Digest => "digest",
        }
    }

    pub fn parse(s: &str) -> Option<EntryKind> {
        Some(match s {
            "task" => EntryKind::Task,
            "plan" => EntryKind::Plan,
            "decision" => EntryKind::Decision,
            "finding" => EntryKind::Finding,
            "error" => EntryKind::Error,
            "file" => EntryKind::File,
            "note" => EntryKind::Note,
            "digest" => EntryKind::Digest,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Verbatim.
    Active,
    /// Cut to its head and tail; the original is kept.
    Compressed,
    /// Folded into the digest; not in the context any more, the original is kept.
    Folded,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Active => "active",
            EntryState::Compressed => "compressed",
            EntryState::Folded => "folded",
        }
    }

    pub fn parse(s: &str) -> Option<EntryState> {
        Some(match s {
            "active" => EntryState::Active,
            "compressed" => EntryState::Compressed,
            "folded" => EntryState::Folded,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryInput {
    /// Names the entry: writing a key again replaces it (and makes it the newest).
    #[schemars(length(min = 1, max = 128))]
    pub key: String,
    #[serde(default)]
    pub kind: EntryKind,
    /// The context itself; an empty content removes the entry.
    pub content: String,
    /// Critical entries are never compressed.
    #[serde(default)]
    pub critical: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWorkingMemoryRequest {
    /// Entries to write, in order (at most 64 per call).
    pub entries: Vec<EntryInput>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetWorkingMemoryRequest {
    /// Also return what compaction folded away, with the originals of compressed and
    /// folded entries.
    #[serde(default)]
    pub include_originals: Option<bool>,
}

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entry {
    pub key: String,
    pub kind: EntryKind,
    /// As it stands in the context (cut when compressed).
    pub content: String,
    pub critical: bool,
    pub state: EntryState,
    /// Estimated tokens of `content`.
    pub tokens: i64,
    /// The content as written, when compaction changed it (with `include_originals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// Write order (higher is newer).
    pub position: i64,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Compressed {
    pub key: String,
    pub state: EntryState,
    pub tokens_before: i64,
    pub tokens_after: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkingMemoryResult {
    pub success: bool,
    pub session_id: String,
    pub budget: i64,
    /// Estimated tokens of the entries as written (before any compaction).
    pub tokens_before: i64,
    /// Estimated tokens of the context now.
    pub tokens: i64,
    /// Critical and recent entries alone exceed the budget (nothing critical is cut).
    pub over_budget: bool,
    /// The context, oldest first, critical entries included (folded ones only with
    /// `include_originals`).
    pub entries: Vec<Entry>,
    /// What compaction changed, oldest first.
    pub compressed: Vec<Compressed>,
}

/// A validated update.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkingUpdate {
    pub entries: Vec<EntryInput>,
    pub budget: i64,
}

pub fn estimate_tokens(key: &str, content: &str) -> i64 {
    ((key.len() + content.len()).div_ceil(4) + 4) as i64
}

pub fn validate_update(req: UpdateWorkingMemoryRequest, budget: i64) -> CoordResult<WorkingUpdate> {
    if req.entries.is_empty() || req.entries.len() > MAX_ENTRIES_PER_CALL {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "entries",
            format!(
                "entries must hold 1 to {MAX_ENTRIES_PER_CALL} entries, got {}",
                req.entries.len()
            ),
        ));
    }
    let mut entries = Vec::with_capacity(req.entries.len());
    for (i, e) in req.entries.into_iter().enumerate() {
        let key = validate::required_text(&format!("entries[{i}].key"), e.key.trim(), MAX_KEY)?;
        if key == DIGEST_KEY || e.kind == EntryKind::Digest {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                &format!("entries[{i}]"),
                "the digest is written by compaction only (key \"digest\", kind \"digest\")",
            ));
        }
        let content: String = validate::optional_text(&format!("entries[{i}].content"), Some(e.content), MAX_CONTENT)?
            .unwrap_or_default();
        entries.push(EntryInput { key, content, ..e });
    }
    Ok(WorkingUpdate { entries, budget })
}

/// The entries after an update: written keys replaced and moved to the newest
/// position, empty contents removed. Refuses more than [`MAX_ENTRIES`] live entries.
pub fn apply(mut entries: Vec<Entry>, update: &[EntryInput], now: Timestamp) -> CoordResult<Vec<Entry>> {
    let mut next = entries.iter().map(|e| e.position).max().unwrap_or(0);
    for input in update {
        entries.retain(|e| e.key != input.key);
        if input.content.is_empty() {
            continue;
        }
        next += 1;
        entries.push(Entry {
            key: input.key.clone(),
            kind: input.kind,
            tokens: estimate_tokens(&input.key, &input.content),
            content: input.content.clone(),
            critical: input.critical,
            state: EntryState::Active,
            original: None,
            position: next,
            updated_at: now,
        });
    }
    if entries.iter().filter(|e| e.state != EntryState::Folded).count() > MAX_ENTRIES {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "entries",
            format!("working memory holds at most {MAX_ENTRIES} entries; remove some (empty content)"),
        ));
    }
    Ok(entries)
}

/// What is in the context: every entry but the folded ones.
pub fn context_tokens(entries: &[Entry]) -> i64 {
    entries
        .iter()
        .filter(|e| e.state != EntryState::Folded)
        .map(|e| e.tokens)
        .sum()
}

/// Tokens the entries would take as written.
pub fn original_tokens(entries: &[Entry]) -> i64 {
    entries
        .iter()
        .filter(|e| e.kind != EntryKind::Digest)
        .map(|e| estimate_tokens(&e.key, e.original.as_deref().unwrap_or(&e.content)))
        .sum()
}

/// `content` cut to about `tokens` tokens: its head (60%) and tail (40%) around a marker
/// saying how much went, on character boundaries.
pub fn middle_truncate(content: &str, tokens: i64) -> String {
    let keep = (tokens.max(8) as usize) * 4;
    if content.len() <= keep {
        return content.to_string();
    }
    let head_len = keep * 6 / 10;
    let tail_len = keep - head_len;
    let mut head_end = head_len;
    while !content.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = content.len() - tail_len;
    while !content.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let elided = (tail_start - head_end).div_ceil(4);
    format!(
        "{}…[{elided} tokens elided]…{}",
        &content[..head_end],
        &content[tail_start..]
    )
}

/// Compacts `entries` (in any order) to fit `budget`, as the module documentation
/// says; answers the entries by position and whether the budget could not be met.
/// Deterministic and idempotent: compacting a compacted set changes nothing.
pub fn compact(mut entries: Vec<Entry>, budget: i64, now: Timestamp) -> (Vec<Entry>, bool) {
    entries.sort_by_key(|e| e.position);
    if context_tokens(&entries) <= budget {
        return (entries, false);
    }
    let target = budget * 8 / 10;
    // 1. Protected: critical entries, and the newest until half the budget (at least one).
    let mut protected = vec![false; entries.len()];
    let mut recent = 0;
    for (i, e) in entries.iter().enumerate().rev() {
        if e.kind == EntryKind::Digest || e.state == EntryState::Folded {
            continue;
        }
        if recent == 0 || recent + e.tokens <= budget / 2 {
            recent += e.tokens;
            protected[i] = true;
        } else {
            break;
        }
    }
    for (i, e) in entries.iter().enumerate() {
        if e.critical {
            protected[i] = true;
        }
    }
    // 2. Compress the others, oldest first.
    for i in 0..entries.len() {
        if context_tokens(&entries) <= target {
            break;
        }
        let e = &mut entries[i];
        if protected[i] || e.state != EntryState::Active || e.kind == EntryKind::Digest {
            continue;
        }
        let cut = middle_truncate(&e.content, COMPRESSED_TOKENS);
        if cut.len() < e.content.len() {
            e.original = Some(std::mem::replace(&mut e.content, cut));
            e.tokens = estimate_tokens(&e.key, &e.content);
            e.state = EntryState::Compressed;
        }
    }
    // 3. Fold compressed (and still unprotected active) entries into the digest.
    let mut lines: Vec<String> = Vec::new();
    for i in 0..entries.len() {
        if context_tokens(&entries) + digest_tokens(&entries, &lines) <= target {
            break;
        }
        let e = &mut entries[i];
        if protected[i] || e.state == EntryState::Folded || e.kind == EntryKind::Digest {
            continue;
        }
        let first = e.original.as_deref().unwrap_or(&e.content).lines().next().unwrap_or("");
        let line: String = format!("{} ({}): {first}", e.key, e.kind.as_str())
            .chars()
            .take(DIGEST_LINE)
            .collect();
        lines.push(line);
        if e.original.is_none() {
            e.original = Some(e.content.clone());
        }
        e.state = EntryState::Folded;
    }
    if !lines.is_empty() {
        let old = entries
            .iter()
            .position(|e| e.kind == EntryKind::Digest)
            .map(|i| entries.remove(i));
        let mut all: Vec<String> = old
            .map(|d| d.content.lines().map(str::to_string).collect())
            .unwrap_or_default();
        all.extend(lines);
        // The digest itself stays within a quarter of the budget: its oldest lines go
        // first (their entries are still kept, folded).
        while all.len() > 1 && estimate_tokens(DIGEST_KEY, &all.join("\n")) > budget / 4 {
            all.remove(0);
        }
        let content = all.join("\n");
        let position = entries.iter().map(|e| e.position).min().unwrap_or(1) - 1;
        entries.push(Entry {
            key: DIGEST_KEY.into(),
            kind: EntryKind::Digest,
            tokens: estimate_tokens(DIGEST_KEY, &content),
            content,
            critical: false,
            state: EntryState::Active,
            original: None,
            position,
            updated_at: now,
        });
        entries.sort_by_key(|e| e.position);
    }
    // Folded entries are kept for their originals, but not forever: beyond
    // MAX_FOLDED, the oldest go (the digest may still name them).
    let folded = entries.iter().filter(|e| e.state == EntryState::Folded).count();
    if folded > MAX_FOLDED {
        let mut drop = folded - MAX_FOLDED;
        entries.retain(|e| {
            if drop > 0 && e.state == EntryState::Folded {
                drop -= 1;
                false
            } else {
                true
            }
        });
    }
    let over = context_tokens(&entries) > budget;
    (entries, over)
}

fn digest_tokens(entries: &[Entry], new_lines: &[String]) -> i64 {
    if new_lines.is_empty() {
        return 0;
    }
    let existing = entries.iter().any(|e| e.kind == EntryKind::Digest);
    let added: usize = new_lines.iter().map(|l| l.len() + 1).sum();
    (added.div_ceil(4) as i64) + if existing { 0 } else { 4 + 2 }
}

/// What compaction changed, from the entries as stored.
pub fn compressed(entries: &[Entry]) -> Vec<Compressed> {
    entries
        .iter()
        .filter(|e| e.state != EntryState::Active)
        .map(|e| Compressed {
            key: e.key.clone(),
            state: e.state,
            tokens_before: estimate_tokens(&e.key, e.original.as_deref().unwrap_or(&e.content)),
            tokens_after: if e.state == EntryState::Folded { 0 } else { e.tokens },
        })
        .collect()
}

/// The answer of both working-memory operations.
pub fn result(session_id: String, budget: i64, entries: Vec<Entry>, originals: bool) -> WorkingMemoryResult {
    let tokens_before = original_tokens(&entries);
    let tokens = context_tokens(&entries);
    let over = tokens > budget;
    let compressed = compressed(&entries);
    let entries = entries
        .into_iter()
        .filter(|e| originals || e.state != EntryState::Folded)
        .map(|mut e| {
            if !originals {
                e.original = None;
            }
            e
        })
        .collect();
    WorkingMemoryResult {
        success: true,
        session_id,
        budget,
        tokens_before,
        tokens,
        over_budget: over,
        entries,
        compressed,
    }
}

#[cfg(test)]
mod tests;
