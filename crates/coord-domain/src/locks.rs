//! File locks: leases on repo-relative paths.
//!
//! A lock is live while `now < expires_at`; an expired row is free by that predicate
//! alone, whether or not a sweep has deleted it yet. Every acquisition (not a refresh)
//! takes a new fencing token from a counter that only grows, so tokens strictly increase
//! per path even across expiry, release and deletion.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::Identity;
use crate::target::LockTarget;
use crate::time::Timestamp;
use crate::validate::{self, MAX_TEXT};
use serde::{Deserialize, Serialize};

pub const DEFAULT_TTL_MINUTES: i64 = 120;
pub const MIN_TTL_MINUTES: i64 = 1;
pub const MAX_TTL_MINUTES: i64 = 480;
pub const MAX_PATHS_PER_CHECK: usize = 1000;

pub fn validate_ttl(ttl_minutes: Option<i64>) -> CoordResult<i64> {
    validate::int_in_range(
        "ttl_minutes",
        ttl_minutes,
        DEFAULT_TTL_MINUTES,
        MIN_TTL_MINUTES,
        MAX_TTL_MINUTES,
        ErrorCode::TtlOutOfRange,
    )
}

pub fn validate_reason(reason: Option<String>) -> CoordResult<Option<String>> {
    validate::optional_text("reason", reason, MAX_TEXT)
}

/// A validated acquisition: what to lock (a file, directory or glob), reason, TTL in minutes.
pub fn validate_acquire(
    req: AcquireLockRequest,
    repo_root: Option<&str>,
) -> CoordResult<(LockTarget, Option<String>, i64)> {
    Ok((
        LockTarget::parse(&req.file_path, repo_root)?,
        validate_reason(req.reason)?,
        validate_ttl(req.ttl_minutes)?,
    ))
}

/// Targets for `check_locks` (files, directories or globs), deduplicated; `None` means
/// all locks.
pub fn validate_check(req: CheckLocksRequest, repo_root: Option<&str>) -> CoordResult<Option<Vec<LockTarget>>> {
    let Some(paths) = req.file_paths else { return Ok(None) };
    if paths.len() > MAX_PATHS_PER_CHECK {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "file_paths",
            format!("at most {MAX_PATHS_PER_CHECK} paths per check"),
        ));
    }
    let mut out: Vec<LockTarget> = paths
        .iter()
        .map(|p| LockTarget::parse(p, repo_root).map_err(|e| e.with_field("file_paths")))
        .collect::<CoordResult<_>>()?;
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out.dedup_by(|a, b| a.key() == b.key());
    Ok(Some(out))
}

/// The live locks among `rows` that overlap any of `targets` (rows a store fetched by
/// the targets' candidate scopes), in path order.
pub fn overlapping(targets: &[LockTarget], rows: Vec<LockInfo>) -> Vec<LockInfo> {
    let mut out: Vec<LockInfo> = rows
        .into_iter()
        .filter(|row| {
            let held = LockTarget::from_key(&row.file_path);
            targets.iter().any(|t| t.overlaps(&held))
        })
        .collect();
    out.sort_by(|a, b| a.file_path.cmp(&b.file_path));
    out.dedup_by(|a, b| a.file_path == b.file_path);
    out
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcquireLockRequest {
    /// Path of the file, relative to the repository root (absolute paths inside the
    /// repository are accepted and made relative).
    #[schemars(length(min = 1, max = 4096), regex(pattern = r"\S"))]
    pub file_path: String,
    /// Why the lock is needed; shown to agents that are blocked by it.
    #[serde(default)]
    pub reason: Option<String>,
    /// Lease length in minutes, 1 to 480; default 120.
    #[serde(default)]
    #[schemars(range(min = 1, max = 480))]
    pub ttl_minutes: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseLockRequest {
    /// Path of the locked file, as for `acquire_lock`.
    #[schemars(length(min = 1, max = 4096), regex(pattern = r"\S"))]
    pub file_path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckLocksRequest {
    /// Only these paths; all live locks when absent.
    #[serde(default)]
    pub file_paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockAction {
    Acquired,
    Refreshed,
    Blocked,
}

/// `acquire_lock` answer. Acquired/refreshed: `success`, `action`, `file_path`,
/// `expires_at`, `fencing_token`, `reason`. Blocked: `success: false`,
/// `action: "blocked"`, `file_path` (what was asked for), `locked_path` (the lock in the
/// way: the same path, or a directory or glob that overlaps it), `locked_by`,
/// `expires_at` (the holder's), `lock_reason` (the holder's reason) and a `hint` naming
/// the message that asks the holder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcquireLockResult {
    pub success: bool,
    pub action: LockAction,
    pub file_path: String,
    pub expires_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing_token: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_by_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl AcquireLockResult {
    pub fn granted(action: LockAction, lock: &LockInfo) -> Self {
        AcquireLockResult {
            success: true,
            action,
            file_path: lock.file_path.clone(),
            expires_at: lock.expires_at,
            fencing_token: Some(lock.fencing_token),
            reason: lock.reason.clone(),
            locked_by: None,
            locked_by_type: None,
            lock_reason: None,
            locked_path: None,
            hint: None,
        }
    }

    /// `requested` is refused because `holder`'s lock overlaps it.
    pub fn blocked(requested: &str, holder: &LockInfo) -> Self {
        AcquireLockResult {
            success: false,
            action: LockAction::Blocked,
            file_path: requested.to_string(),
            expires_at: holder.expires_at,
            fencing_token: None,
            reason: None,
            locked_by: Some(holder.locked_by.clone()),
            locked_by_type: Some(holder.agent_type.clone()),
            lock_reason: holder.reason.clone(),
            locked_path: Some(holder.file_path.clone()),
            hint: Some(format!(
                "{} holds {} until {}. Work on something else, or ask them with send_message to \"holders:{}\".",
                holder.locked_by,
                holder.file_path,
                holder.expires_at.format("%Y-%m-%d %H:%M UTC"),
                holder.file_path
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReleaseLockResult {
    pub success: bool,
    pub released: bool,
    pub file_path: String,
}

/// A lock row as stored and as listed by `check_locks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockInfo {
    pub file_path: String,
    pub locked_by: String,
    pub agent_type: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    pub locked_at: Timestamp,
    pub expires_at: Timestamp,
    pub fencing_token: i64,
}

impl LockInfo {
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.expires_at
    }
}

/// `release_my_locks` answer: every lock the caller held, now released.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReleaseAllResult {
    pub success: bool,
    /// Paths whose live lock was released.
    pub released: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckLocksResult {
    pub locks: Vec<LockInfo>,
}

/// `lock_status`: whether one file is locked, and by whom.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockStatusRequest {
    /// Repo-relative path of the file (absolute paths inside the repository are accepted).
    pub file_path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockStatusResult {
    pub success: bool,
    pub file_path: String,
    pub locked: bool,
    pub lock: Option<LockInfo>,
}

impl LockStatusResult {
    /// The answer for `path` given the live locks that overlap it (the lock reported
    /// may be a directory or glob lock covering the file).
    pub fn of(path: String, locks: CheckLocksResult) -> LockStatusResult {
        let lock = locks.locks.into_iter().next();
        LockStatusResult {
            success: true,
            file_path: path,
            locked: lock.is_some(),
            lock,
        }
    }
}

/// `check_edit`: may the caller edit (or commit) these files now?
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckEditRequest {
    /// Files about to be changed: repo-relative (or absolute inside the repository), 1 to 1000.
    #[schemars(length(min = 1, max = 1000))]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckEditResult {
    pub success: bool,
    /// Always true in a success answer: a refusal is the error `file_locked`.
    pub allowed: bool,
    /// The normalised paths that were checked.
    pub paths: Vec<String>,
}

pub const MAX_EDIT_PATHS: usize = 1000;

/// The files an edit touches, taken literally (a file named `[id].tsx` is that file).
pub fn validate_edit(req: CheckEditRequest, repo_root: Option<&str>) -> CoordResult<Vec<LockTarget>> {
    if req.paths.is_empty() || req.paths.len() > MAX_EDIT_PATHS {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "paths",
            format!("paths must list 1 to {MAX_EDIT_PATHS} files"),
        ));
    }
    let mut paths = req
        .paths
        .iter()
        .map(|p| LockTarget::literal_file(p, repo_root).map_err(|e| e.with_field("paths")))
        .collect::<CoordResult<Vec<_>>>()?;
    paths.sort_by(|a, b| a.key().cmp(b.key()));
    paths.dedup_by(|a, b| a.key() == b.key());
    Ok(paths)
}

/// Whether `me` may change files whose overlapping live locks are `locks`: only when none
/// of them is held by another agent. The refusal names every foreign lock and, for the
/// first, who holds it, until when and why, in words a model can act on.
pub fn decide_edit(me: &Identity, paths: Vec<String>, locks: &[LockInfo]) -> CoordResult<CheckEditResult> {
    let foreign: Vec<&LockInfo> = locks.iter().filter(|l| l.locked_by != me.agent_id).collect();
    let Some(held) = foreign.first() else {
        return Ok(CheckEditResult {
            success: true,
            allowed: true,
            paths,
        });
    };
    let mut message = format!(
        "{} is locked by another agent, {} ({}), until {}",
        held.file_path,
        held.locked_by,
        held.agent_type,
        held.expires_at.format("%Y-%m-%d %H:%M UTC")
    );
    if let Some(why) = &held.reason {
        message.push_str(&format!(" — {why}"));
    }
    message.push_str(&format!(
        ". Do not edit it now: work on something else, or ask the holder with send_message to \"holders:{}\".",
        held.file_path
    ));
    let blocked = serde_json::to_value(&foreign).unwrap_or_default();
    Err(CoordError::new(ErrorCode::FileLocked, message)
        .with_detail("file_path", held.file_path.clone())
        .with_detail("locked_by", held.locked_by.clone())
        .with_detail("expires_at", serde_json::to_value(held.expires_at).unwrap_or_default())
        .with_detail("lock_reason", held.reason.clone())
        .with_detail("blocked", blocked))
}

/// What an acquisition does given the live locks that overlap the target.
#[derive(Debug, Clone, PartialEq)]
pub enum AcquireDecision<'a> {
    /// No live lock of the same key and none of another agent's in the way: take it with
    /// a new fencing token (replacing an expired row of the same key, if any).
    Take,
    /// The caller already holds a live lock with this key: extend it, keep its token.
    Refresh,
    /// Another agent holds a live lock that overlaps: this one (the first in path order).
    Blocked(&'a LockInfo),
}

/// `live` are the live locks overlapping the target `key` (see [`overlapping`]). The
/// caller's own overlapping locks never block it: an agent holding `src/auth/` may also
/// take `src/auth/login.rs`.
pub fn decide_acquire<'a>(key: &str, live: &'a [LockInfo], me: &Identity) -> AcquireDecision<'a> {
    if let Some(other) = live.iter().find(|l| l.locked_by != me.agent_id) {
        return AcquireDecision::Blocked(other);
    }
    if live.iter().any(|l| l.file_path == key) {
        AcquireDecision::Refresh
    } else {
        AcquireDecision::Take
    }
}

/// Whether the caller may release, given the stored row; the error says why not.
pub fn decide_release(existing: Option<&LockInfo>, me: &Identity, path: &str, now: Timestamp) -> CoordResult<()> {
    match existing {
        Some(l) if l.is_live(now) && l.locked_by == me.agent_id => Ok(()),
        Some(l) if l.is_live(now) => Err(CoordError::new(
            ErrorCode::NotLockOwner,
            format!("{path} is locked by {}, not by {}", l.locked_by, me.agent_id),
        )
        .with_detail("file_path", path)
        .with_detail("locked_by", l.locked_by.clone())),
        _ => Err(CoordError::new(
            ErrorCode::LockNotHeld,
            format!("{path} is not locked (the lock may have expired)"),
        )
        .with_detail("file_path", path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn lock(holder: &str, expires_in_min: i64, now: Timestamp) -> LockInfo {
        LockInfo {
            file_path: "a.rs".into(),
            locked_by: holder.into(),
            agent_type: "t".into(),
            session_id: None,
            reason: None,
            locked_at: now,
            expires_at: now + chrono::Duration::minutes(expires_in_min),
            fencing_token: 1,
        }
    }

    #[test]
    fn edit_decisions() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let me = Identity {
            agent_id: "me".into(),
            agent_type: "t".into(),
        };
        let paths = || vec!["a.rs".to_string()];
        let mut reasoned = lock("other", 5, now);
        reasoned.reason = Some("refactor".into());
        // (live locks on the paths, refused?, words the refusal must contain)
        let cases: Vec<(Vec<LockInfo>, bool, &[&str])> = vec![
            (vec![], false, &[]),
            (vec![lock("me", 5, now)], false, &[]),
            (vec![lock("other", 5, now)], true, &["a.rs", "other", "Do not edit"]),
            (vec![lock("me", 5, now), reasoned], true, &["other", "refactor"]),
        ];
        for (locks, refused, words) in cases {
            match decide_edit(&me, paths(), &locks) {
                Ok(r) => {
                    assert!(!refused, "{locks:?}");
                    assert!(r.allowed && r.success);
                }
                Err(e) => {
                    assert!(refused, "{locks:?}: {e}");
                    assert_eq!(e.code, ErrorCode::FileLocked);
                    assert_eq!(e.details["locked_by"], "other");
                    for w in words {
                        assert!(e.message.contains(w), "{w} in {}", e.message);
                    }
                }
            }
        }
        for (raw, ok) in [
            (vec![], false),
            (vec!["a".to_string(); 1001], false),
            (vec!["./a".into(), "a".into()], true),
        ] {
            let got = validate_edit(CheckEditRequest { paths: raw }, None);
            assert_eq!(got.is_ok(), ok, "{got:?}");
        }
        let keys = |raw: Vec<String>| {
            validate_edit(CheckEditRequest { paths: raw }, None)
                .unwrap()
                .into_iter()
                .map(LockTarget::into_key)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(vec!["./a".into(), "a".into()]), ["a"]);
        // An edit touches a file: glob characters in its name are just characters.
        assert_eq!(
            keys(vec!["app/[id]/page.tsx".into(), "src/".into()]),
            ["app/[id]/page.tsx", "src"]
        );
    }

    #[test]
    fn acquire_and_release_decisions() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let me = Identity {
            agent_id: "me".into(),
            agent_type: "t".into(),
        };
        let mine_live = lock("me", 5, now);
        let mine_expired = lock("me", 0, now);
        let other_live = lock("other", 5, now);
        let other_expired = lock("other", -1, now);
        let release_cases: &[(Option<&LockInfo>, Option<ErrorCode>)] = &[
            (None, Some(ErrorCode::LockNotHeld)),
            (Some(&mine_live), None),
            (Some(&mine_expired), Some(ErrorCode::LockNotHeld)),
            (Some(&other_live), Some(ErrorCode::NotLockOwner)),
            (Some(&other_expired), Some(ErrorCode::LockNotHeld)),
        ];
        for (existing, want) in release_cases {
            let got = decide_release(*existing, &me, "a.rs", now).err().map(|e| e.code);
            assert_eq!(&got, want, "{existing:?}");
        }
        // Acquisition sees only the live locks that overlap the target.
        let mut my_dir = lock("me", 5, now);
        my_dir.file_path = "src/".into();
        let mut their_dir = lock("other", 5, now);
        their_dir.file_path = "src/".into();
        let a = "a.rs";
        assert_eq!(decide_acquire(a, &[], &me), AcquireDecision::Take);
        assert_eq!(
            decide_acquire(a, std::slice::from_ref(&mine_live), &me),
            AcquireDecision::Refresh
        );
        assert_eq!(
            decide_acquire("src/a.rs", std::slice::from_ref(&my_dir), &me),
            AcquireDecision::Take
        );
        assert_eq!(
            decide_acquire("src/a.rs", std::slice::from_ref(&their_dir), &me),
            AcquireDecision::Blocked(&their_dir)
        );
        let both = [mine_live.clone(), other_live.clone()];
        assert_eq!(decide_acquire(a, &both, &me), AcquireDecision::Blocked(&other_live));
    }

    #[test]
    fn overlapping_rows() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let row = |p: &str| {
            let mut l = lock("x", 5, now);
            l.file_path = p.into();
            l
        };
        let rows = vec![
            row("src/auth/"),
            row("src/a.rs"),
            row("**/*.md"),
            row("src/auth/"),
            row("lib/x.rs"),
        ];
        let t = |s: &str| LockTarget::parse(s, None).unwrap();
        let keys = |v: Vec<LockInfo>| v.into_iter().map(|l| l.file_path).collect::<Vec<_>>();
        assert_eq!(keys(overlapping(&[t("src/auth/x.rs")], rows.clone())), ["src/auth/"]);
        assert_eq!(
            keys(overlapping(&[t("src/")], rows.clone())),
            ["**/*.md", "src/a.rs", "src/auth/"]
        );
        assert_eq!(
            keys(overlapping(&[t("README.md"), t("lib/*")], rows.clone())),
            ["**/*.md", "lib/x.rs"]
        );
        assert!(overlapping(&[t("lib/y.rs")], rows).is_empty());
    }

    #[test]
    fn ttl_bounds() {
        assert_eq!(validate_ttl(None).unwrap(), 120);
        assert_eq!(validate_ttl(Some(0)).unwrap_err().code, ErrorCode::TtlOutOfRange);
        assert_eq!(validate_ttl(Some(481)).unwrap_err().code, ErrorCode::TtlOutOfRange);
    }

    #[test]
    fn wire_shapes() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let l = lock("other", 5, now);
        let v = serde_json::to_value(AcquireLockResult::blocked("a.rs", &l)).unwrap();
        assert_eq!(v["success"], false);
        assert_eq!(v["action"], "blocked");
        assert_eq!(v["locked_by"], "other");
        assert_eq!(v["locked_path"], "a.rs");
        assert!(v["hint"].as_str().unwrap().contains("holders:a.rs"));
        assert!(v.get("fencing_token").is_none());
        let v = serde_json::to_value(AcquireLockResult::granted(LockAction::Acquired, &l)).unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["action"], "acquired");
        assert_eq!(v["expires_at"], "2026-01-01T00:05:00Z");
        assert_eq!(v["fencing_token"], 1);
    }
}
