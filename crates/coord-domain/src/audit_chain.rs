//! The audit trail's hash chain, its verification and the signed checkpoints a prune
//! leaves.
//!
//! Every row gets a position (`seq`, 1, 2, …), the hash of the row before it and its own
//! hash: SHA-256 over a canonical encoding of its position, that link and its content.
//! Editing, deleting, inserting or reordering rows therefore breaks the chain at the
//! first affected row, which [`ChainVerifier`] names. The hashes are not keyed (anyone
//! who may read the trail can check it); what a prune removes is summarised by a
//! checkpoint signed with HMAC-SHA-256 under a key kept outside the database, so the
//! remaining chain still verifies and a forged checkpoint does not.
//!
//! Canonical encoding: JSON with object keys sorted, and numbers written as the integer
//! they are when |n| ≤ 2^53 and integral, else as the shortest form of their `f64`: the
//! stores keep JSON as text (SQLite) or `jsonb` (PostgreSQL, which reorders keys and
//! rewrites `1e18` as digits), and both must read back what was hashed.

use crate::audit::{AuditEntry, AuditRecord};
use crate::time::{Timestamp, to_micros};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The link of the first row of a chain that starts from nothing.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Default retention of audit rows (the spec's 90 days).
pub const DEFAULT_RETENTION_DAYS: i64 = 90;
pub const MAX_RETENTION_DAYS: i64 = 36_500;

/// A row's place in the chain (defined beside the audit row that carries it).
pub use crate::audit::ChainLink;

/// The newest position of the chain: where the next row links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChainHead {
    pub seq: i64,
    pub hash: String,
}

impl ChainHead {
    pub fn genesis() -> ChainHead {
        ChainHead {
            seq: 0,
            hash: GENESIS.into(),
        }
    }

    /// The link of `record`, written at `timestamp`, appended after this head.
    pub fn next(&self, record: &AuditRecord, timestamp: Timestamp) -> ChainLink {
        let seq = self.seq + 1;
        let hash = HashedContent::of_record(record).hash(seq, &self.hash, to_micros(timestamp));
        ChainLink {
            seq,
            prev_hash: self.hash.clone(),
            hash,
        }
    }
}

/// What a row's hash commits to.
struct Content<'a> {
    seq: i64,
    prev_hash: &'a str,
    timestamp: Timestamp,
    agent_id: &'a str,
    agent_type: &'a str,
    operation: &'a str,
    parameters: &'a Value,
    result: &'a Value,
    success: bool,
    error_code: Option<&'a str>,
    duration_ms: f64,
    origin: Option<&'a Value>,
}

fn row_hash(c: &Content) -> String {
    HashedContent::of(c).hash(c.seq, c.prev_hash, to_micros(c.timestamp))
}

/// A row's hashed content without its place in the chain and its time: what a store
/// that links rows in SQL (PostgreSQL, inside the statement that reads the head) sends
/// beside the statement, to be hashed as [`HashedContent::hash`] lays it out:
///
/// `coord-audit-v1 LF seq LF "prev_hash" LF before_time LF micros LF after_time`
///
/// (seq and micros in decimal; prev_hash, 64 hex digits, as a JSON string.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedContent {
    /// The agent, its type and the operation, each canonical JSON, joined by LF.
    pub before_time: String,
    /// Parameters, result, success, error code, duration and origin, joined by LF.
    pub after_time: String,
}

impl HashedContent {
    /// The content of `record`, as [`ChainHead::next`] hashes it.
    pub fn of_record(record: &AuditRecord) -> HashedContent {
        let origin = record.origin.as_ref().and_then(|o| serde_json::to_value(o).ok());
        HashedContent::of(&Content {
            seq: 0,
            prev_hash: "",
            timestamp: Timestamp::default(),
            agent_id: &record.agent.agent_id,
            agent_type: &record.agent.agent_type,
            operation: record.operation,
            parameters: &record.parameters,
            result: &record.result,
            success: record.success,
            error_code: record.error_code,
            duration_ms: record.duration_ms,
            origin: origin.as_ref(),
        })
    }

    fn of(c: &Content) -> HashedContent {
        let mut before_time = String::with_capacity(64);
        for (i, part) in [c.agent_id, c.agent_type, c.operation].into_iter().enumerate() {
            if i > 0 {
                before_time.push('\n');
            }
            canonical(&Value::String(part.into()), &mut before_time);
        }
        let mut out = String::with_capacity(192);
        for (i, v) in [c.parameters, c.result].into_iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            canonical(v, &mut out);
        }
        out.push('\n');
        out.push_str(if c.success { "true" } else { "false" });
        out.push('\n');
        match c.error_code {
            Some(code) => canonical(&Value::String(code.into()), &mut out),
            None => out.push_str("null"),
        }
        out.push('\n');
        number(c.duration_ms, None, &mut out);
        out.push('\n');
        match c.origin {
            Some(o) => canonical(o, &mut out),
            None => out.push_str("null"),
        }
        HashedContent {
            before_time,
            after_time: out,
        }
    }

    /// SHA-256 (hex) of this content at position `seq` after `prev_hash`, written at
    /// `micros` (microseconds since the Unix epoch).
    pub fn hash(&self, seq: i64, prev_hash: &str, micros: i64) -> String {
        let mut out = String::with_capacity(96 + self.before_time.len() + self.after_time.len());
        out.push_str("coord-audit-v1\n");
        canonical(&Value::from(seq), &mut out);
        out.push('\n');
        canonical(&Value::String(prev_hash.into()), &mut out);
        out.push('\n');
        out.push_str(&self.before_time);
        out.push('\n');
        out.push_str(&micros.to_string());
        out.push('\n');
        out.push_str(&self.after_time);
        hex(&Sha256::digest(out.as_bytes()))
    }
}

/// The hash `entry` should have, from its content and its stored link (`None` for a row
/// written before the chain existed).
pub fn entry_hash(entry: &AuditEntry) -> Option<String> {
    let link = entry.chain.as_ref()?;
    let origin = entry.origin.as_ref().and_then(|o| serde_json::to_value(o).ok());
    Some(row_hash(&Content {
        seq: link.seq,
        prev_hash: &link.prev_hash,
        timestamp: entry.timestamp,
        agent_id: &entry.agent_id,
        agent_type: &entry.agent_type,
        operation: &entry.operation,
        parameters: &entry.parameters,
        result: &entry.result,
        success: entry.success,
        error_code: entry.error_code.as_deref(),
        duration_ms: entry.duration_ms,
        origin: origin.as_ref(),
    }))
}

/// Writes `v` as canonical JSON: keys sorted, numbers normalised (see the module doc).
pub fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_u64() {
            Some(u) if u > i64::MAX as u64 => out.push_str(&u.to_string()),
            _ => number(n.as_f64().unwrap_or(0.0), n.as_i64(), out),
        },
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// Integers are written exactly, however they were typed: `3.0` and `3` are one value
/// (jsonb keeps `3.0`, a float 1e18 comes back from jsonb as the integer
/// 1000000000000000000), and an integer beyond 2^53 keeps every digit. Other floats are
/// written in their shortest form (serde_json's `float_roundtrip` parses them back to
/// the same float).
fn number(f: f64, exact: Option<i64>, out: &mut String) {
    const I64_END: f64 = 9_223_372_036_854_775_808.0; // 2^63
    const U64_END: f64 = 18_446_744_073_709_551_616.0; // 2^64
    match exact {
        Some(i) => out.push_str(&i.to_string()),
        None if f.is_finite() && f.fract() == 0.0 && (-I64_END..I64_END).contains(&f) => {
            out.push_str(&(f as i64).to_string())
        }
        None if f.is_finite() && f.fract() == 0.0 && (0.0..U64_END).contains(&f) => {
            out.push_str(&(f as u64).to_string())
        }
        None => out.push_str(&serde_json::Number::from_f64(f).map_or("0".into(), |n| n.to_string())),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key checkpoints are signed with. It lives outside the database (a file next to
/// the SQLite database, or wherever `COORD_AUDIT_KEY_FILE` says), so that someone who can
/// write the database cannot forge the summary of what a prune removed.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditKey(Vec<u8>);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.id())
    }
}

impl AuditKey {
    pub fn new(secret: impl Into<Vec<u8>>) -> AuditKey {
        AuditKey(secret.into())
    }

    /// A short public name of the key, stored with each checkpoint it signs.
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"coord-audit-key-id\n");
        h.update(&self.0);
        hex(&h.finalize()[..8])
    }

    pub fn sign(&self, cp: &CheckpointBody) -> String {
        use hmac::{KeyInit, Mac};
        let mut mac =
            <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(cp.message().as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `signature` is this key's signature of `cp` (compared in constant time).
    pub fn verifies(&self, cp: &CheckpointBody, signature: &str) -> bool {
        use hmac::{KeyInit, Mac};
        let Some(bytes) = unhex(signature) else { return false };
        let mut mac =
            <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(cp.message().as_bytes());
        mac.verify_slice(&bytes).is_ok()
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// A prune signs with this server's key only when the last checkpoint was signed with
/// it too: two servers with two keys would each make the other's checkpoints
/// uncheckable.
pub fn same_key_as_last(last_key_id: Option<&str>, key: &AuditKey) -> crate::CoordResult<()> {
    match last_key_id {
        Some(last) if last != key.id() => Err(crate::CoordError::new(
            crate::ErrorCode::AuditKeyMissing,
            format!(
                "the last audit checkpoint was signed with key {last} and this server holds key {}: give every \
                 server of this database the same key file (COORD_AUDIT_KEY_FILE) before pruning",
                key.id()
            ),
        )),
        _ => Ok(()),
    }
}

/// What a checkpoint says (everything but its signature and id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckpointBody {
    pub created_at: Timestamp,
    /// The last pruned position of the chain: the next row links to `through_hash`.
    pub through_seq: i64,
    pub through_hash: String,
    /// Rows older than this were pruned.
    pub cutoff: Timestamp,
    pub pruned_rows: i64,
    /// [`AuditKey::id`] of the key that signed it.
    pub key_id: String,
}

impl CheckpointBody {
    fn message(&self) -> String {
        format!(
            "coord-audit-checkpoint-v1\n{}\n{}\n{}\n{}\n{}\n{}",
            self.through_seq,
            self.through_hash,
            to_micros(self.created_at),
            to_micros(self.cutoff),
            self.pruned_rows,
            self.key_id
        )
    }
}

/// A stored checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Checkpoint {
    pub id: i64,
    #[serde(flatten)]
    pub body: CheckpointBody,
    pub signature: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyAuditRequest {
    /// A head recorded earlier (`coord audit verify` prints it): the chain must still
    /// hold that row, which detects rows cut from the end.
    #[serde(default)]
    pub expect_head: Option<ChainHead>,
}

/// A validated check: the key checkpoints are checked with, if this server has one.
#[derive(Debug, Clone)]
pub struct VerifyAudit {
    pub key: Option<AuditKey>,
    pub expect_head: Option<ChainHead>,
}

/// Rows read per batch while verifying.
pub const VERIFY_BATCH: i64 = 1000;

/// What is wrong with the chain, at its first bad row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChainProblem {
    /// `edited` (a row's content or position no longer matches its hash), `missing`
    /// (positions absent: rows deleted), `broken_link` (a row does not follow the one
    /// before it: rows reordered or replaced), `inserted` (a row outside the chain or a
    /// repeated position), `bad_checkpoint` (a checkpoint whose signature or hash does
    /// not match).
    pub kind: String,
    /// The position of the first bad row (absent when the row is outside the chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// The `id` of the first bad row, as `query_audit` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerifyAuditResult {
    pub success: bool,
    /// Whether every chained row, checkpoint and the expected head check out.
    pub intact: bool,
    /// Chained rows checked.
    pub rows_checked: i64,
    /// Rows written before the chain existed (not covered by it).
    pub unchained_rows: i64,
    /// The newest position: record it and pass it as `expect_head` next time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<ChainHead>,
    /// Where the remaining chain starts (after the latest prune).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<i64>,
    pub checkpoints: i64,
    /// `verified` (every checkpoint signed by this server's key), `unchecked` (no key
    /// here to check them with), `foreign: …` (some signed with a key this server does
    /// not hold) or `none` (no checkpoints).
    pub signatures: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<ChainProblem>,
}

/// Checks a chain fed in order of position. Stops at the first problem.
pub struct ChainVerifier {
    key: Option<AuditKey>,
    checkpoints: Vec<Checkpoint>,
    /// Index of `checkpoints` by `through_seq` (a prune a day for years is many).
    by_seq: std::collections::HashMap<i64, usize>,
    head: Option<ChainHead>,
    first_seq: Option<i64>,
    rows: i64,
    problem: Option<ChainProblem>,
    anchor: Option<ChainHead>,
    anchor_seen: bool,
}

fn problem(kind: &str, seq: Option<i64>, id: Option<i64>, message: String) -> Option<ChainProblem> {
    Some(ChainProblem {
        kind: kind.into(),
        seq,
        id,
        message,
    })
}

impl ChainVerifier {
    /// `checkpoints` in any order; `key` checks their signatures when present.
    pub fn new(key: Option<AuditKey>, mut checkpoints: Vec<Checkpoint>, anchor: Option<ChainHead>) -> ChainVerifier {
        checkpoints.sort_by_key(|c| c.body.through_seq);
        let by_seq = checkpoints
            .iter()
            .enumerate()
            .map(|(i, c)| (c.body.through_seq, i))
            .collect();
        let mut v = ChainVerifier {
            key,
            checkpoints,
            by_seq,
            head: None,
            first_seq: None,
            rows: 0,
            problem: None,
            anchor,
            anchor_seen: false,
        };
        if let Some(k) = &v.key {
            // A checkpoint signed with another key cannot be checked here (reported as
            // `foreign` signatures); one that claims this key must carry its signature.
            v.problem = v
                .checkpoints
                .iter()
                .find(|c| c.body.key_id == k.id() && !k.verifies(&c.body, &c.signature))
                .and_then(|c| {
                    problem(
                        "bad_checkpoint",
                        Some(c.body.through_seq),
                        None,
                        format!(
                            "checkpoint {} (through position {}) is not signed by this server's audit key {}: it was forged, edited, or signed with another key ({})",
                            c.id,
                            c.body.through_seq,
                            k.id(),
                            c.body.key_id
                        ),
                    )
                });
        }
        v
    }

    fn checkpoint_at(&self, seq: i64) -> Option<&Checkpoint> {
        self.by_seq.get(&seq).map(|i| &self.checkpoints[*i])
    }

    /// Whether verification goes on (false once a problem is found).
    pub fn ok(&self) -> bool {
        self.problem.is_none()
    }

    /// The next chained row, in order of position.
    pub fn feed(&mut self, entry: &AuditEntry) {
        if self.problem.is_some() {
            return;
        }
        let Some(link) = entry.chain.as_ref() else { return };
        let (seq, id) = (Some(link.seq), Some(entry.id));
        let expected = match &self.head {
            Some(h) => h.clone(),
            None => {
                // The first row: it starts the chain or follows the latest checkpoint.
                self.first_seq = Some(link.seq);
                if link.seq == 1 {
                    ChainHead::genesis()
                } else if let Some(c) = self.checkpoint_at(link.seq.saturating_sub(1)) {
                    ChainHead {
                        seq: c.body.through_seq,
                        hash: c.body.through_hash.clone(),
                    }
                } else {
                    self.problem = problem(
                        "missing",
                        seq,
                        id,
                        format!(
                            "the chain starts at position {} but no checkpoint covers positions 1 to {}: rows were deleted",
                            link.seq,
                            link.seq.saturating_sub(1)
                        ),
                    );
                    return;
                }
            }
        };
        if link.seq <= expected.seq {
            self.problem = problem(
                "inserted",
                seq,
                id,
                format!("position {} appears twice: a row was inserted", link.seq),
            );
        } else if link.seq > expected.seq.saturating_add(1) {
            self.problem = problem(
                "missing",
                seq,
                id,
                format!(
                    "positions {} to {} are missing before row {}: rows were deleted",
                    expected.seq.saturating_add(1),
                    link.seq.saturating_sub(1),
                    entry.id
                ),
            );
        } else if entry_hash(entry).as_deref() != Some(link.hash.as_str()) {
            self.problem = problem(
                "edited",
                seq,
                id,
                format!(
                    "row {} (position {}) no longer matches its hash: its content or position was changed",
                    entry.id, link.seq
                ),
            );
        } else if link.prev_hash != expected.hash {
            self.problem = problem(
                "broken_link",
                seq,
                id,
                format!(
                    "row {} (position {}) does not follow position {}: rows were reordered or replaced",
                    entry.id, link.seq, expected.seq
                ),
            );
        } else if let Some(c) = self
            .checkpoint_at(link.seq)
            .filter(|c| c.body.through_hash != link.hash)
        {
            self.problem = problem(
                "bad_checkpoint",
                seq,
                id,
                format!(
                    "checkpoint {} disagrees with row {} at position {}",
                    c.id, entry.id, link.seq
                ),
            );
        } else if let Some(a) = &self.anchor
            && a.seq == link.seq
            && a.hash != link.hash
        {
            self.problem = problem(
                "missing",
                seq,
                id,
                format!(
                    "the row recorded at position {} earlier is gone and row {} holds that position now: rows were \
                     cut from the end and new ones appended",
                    link.seq, entry.id
                ),
            );
        }
        if self.problem.is_none() {
            if self.anchor.as_ref().is_some_and(|a| a.seq == link.seq) {
                self.anchor_seen = true;
            }
            self.rows += 1;
            self.head = Some(ChainHead {
                seq: link.seq,
                hash: link.hash.clone(),
            });
        }
    }

    /// The verdict. `unchained` counts rows without a position; `late_unchained` is the
    /// id of one written after the chain began (an insertion), if any.
    pub fn finish(mut self, unchained: i64, late_unchained: Option<i64>) -> VerifyAuditResult {
        if self.problem.is_none()
            && let Some(id) = late_unchained
        {
            self.problem = problem(
                "inserted",
                None,
                Some(id),
                format!("row {id} has no position in the chain but was written after the chain began: it was inserted"),
            );
        }
        let head = self.head.clone().or_else(|| {
            self.checkpoints.last().map(|c| ChainHead {
                seq: c.body.through_seq,
                hash: c.body.through_hash.clone(),
            })
        });
        if self.problem.is_none()
            && let Some(a) = &self.anchor
            && !self.anchor_seen
        {
            let newest = head.as_ref().map_or(0, |h| h.seq);
            let pruned = self.checkpoints.last().map_or(0, |c| c.body.through_seq);
            if a.seq > newest {
                self.problem = problem(
                    "missing",
                    Some(a.seq),
                    None,
                    format!(
                        "the chain ends at position {newest} but position {} was recorded earlier: rows were cut from the end",
                        a.seq
                    ),
                );
            } else if a.seq > pruned
                || self
                    .checkpoints
                    .iter()
                    .any(|c| c.body.through_seq == a.seq && c.body.through_hash != a.hash)
            {
                self.problem = problem(
                    "missing",
                    Some(a.seq),
                    None,
                    format!("position {} recorded earlier is not in the chain", a.seq),
                );
            }
        }
        VerifyAuditResult {
            success: true,
            intact: self.problem.is_none(),
            rows_checked: self.rows,
            unchained_rows: unchained,
            head,
            first_seq: self.first_seq,
            checkpoints: self.checkpoints.len() as i64,
            signatures: match (&self.key, self.checkpoints.is_empty()) {
                (_, true) => "none".into(),
                (Some(k), false) => {
                    let foreign: Vec<&str> = self
                        .checkpoints
                        .iter()
                        .filter(|c| c.body.key_id != k.id())
                        .map(|c| c.body.key_id.as_str())
                        .collect();
                    if foreign.is_empty() {
                        "verified".into()
                    } else {
                        format!(
                            "foreign: {} of {} checkpoints are signed with key {} and this server holds key {} (share one key file between servers: COORD_AUDIT_KEY_FILE)",
                            foreign.len(),
                            self.checkpoints.len(),
                            foreign[0],
                            k.id()
                        )
                    }
                }
                (None, false) => "unchecked".into(),
            },
            problem: self.problem,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneAuditRequest {
    /// Remove rows older than this many days (default: the server's retention, 90 days
    /// unless configured).
    #[serde(default)]
    #[schemars(range(min = 1, max = 36500))]
    pub older_than_days: Option<i64>,
    /// Say what would be removed without removing it.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// A validated prune: rows before `cutoff` go.
#[derive(Debug, Clone)]
pub struct PruneAudit {
    pub older_than_days: i64,
    pub dry_run: bool,
    pub key: AuditKey,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PruneAuditResult {
    pub success: bool,
    pub dry_run: bool,
    /// Rows older than this were (or would be) removed.
    pub cutoff: Timestamp,
    /// Rows removed (or that would be).
    pub pruned_rows: i64,
    /// The checkpoint left in their place (absent when nothing was removed or on a dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

#[cfg(test)]
#[path = "audit_chain_tests.rs"]
mod tests;
