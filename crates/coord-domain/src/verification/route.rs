//! Routing: which policies a changeset goes to, and in what state each run starts.

use super::{ChangesetStatus, RunStatus, SKIPS_LOW_TIERS_TRUST, VerificationPolicy};
use crate::error::{CoordError, CoordResult, ErrorCode};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A pattern as stored, or why it cannot be: repository-relative (a leading `./` is
/// dropped), not absolute, and a glob globset compiles with separators literal.
pub(super) fn check_pattern(p: &str) -> Result<String, String> {
    let p = p.trim();
    let p = p.strip_prefix("./").unwrap_or(p);
    if p.is_empty() {
        return Err("empty pattern".into());
    }
    if p.len() > super::MAX_PATTERN_LEN {
        return Err(format!("at most {} bytes", super::MAX_PATTERN_LEN));
    }
    if p.contains('\0') {
        return Err("contains a NUL character".into());
    }
    if p.starts_with('/') {
        return Err(format!("{p:?}: patterns are repository-relative (drop the leading /)"));
    }
    glob(p).map_err(|e| format!("{p:?} is not a glob: {e}"))?;
    Ok(p.to_string())
}

/// `*` and `?` stay within a path segment; `**/` spans zero or more directories.
fn glob(p: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(p)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

fn set(patterns: &[String]) -> Result<GlobSet, globset::Error> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(glob(p)?);
    }
    b.build()
}

/// A policy with its globs compiled.
pub struct Matcher {
    pub policy: VerificationPolicy,
    include: GlobSet,
    exclude: GlobSet,
}

impl Matcher {
    /// Compiles a stored policy; one that no longer compiles is refused (closed) naming
    /// the policy, rather than routing around it.
    pub fn new(policy: VerificationPolicy) -> CoordResult<Matcher> {
        let broken = |e: globset::Error| {
            CoordError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "verification policy {} has a pattern that does not compile ({e}); set it again",
                    policy.name
                ),
            )
        };
        Ok(Matcher {
            include: set(&policy.patterns).map_err(broken)?,
            exclude: set(&policy.exclude_patterns).map_err(broken)?,
            policy,
        })
    }

    /// Whether the policy covers `path`: a pattern matches and no exclude pattern does.
    pub fn covers(&self, path: &str) -> bool {
        self.include.is_match(path) && !self.exclude.is_match(path)
    }
}

/// A policy's run as routing decided it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub policy: VerificationPolicy,
    /// The changeset's files it covers, in the changeset's order.
    pub files: Vec<String>,
    pub status: RunStatus,
    pub reason: Option<String>,
}

/// Every enabled policy covering at least one of `files` gets a run (all of them: a
/// higher tier does not replace a lower one), ordered by tier then name. A submitter of
/// trust 3 or more has tiers 0 and 1 skipped (recorded, with the reason); a policy
/// needing a person's review starts awaiting approval, any other pending for its
/// executor. No run at all means no policy covers the change. `incomplete` (why the
/// file list may miss files): every enabled policy gets a run, covering or not — a
/// missing file must not mean a skipped check.
pub fn route(matchers: &[Matcher], files: &[&str], trust: u8, incomplete: Option<&str>) -> Vec<PlannedRun> {
    let mut runs: Vec<PlannedRun> = matchers
        .iter()
        .filter(|m| m.policy.enabled)
        .filter_map(|m| {
            let covered: Vec<String> = files.iter().filter(|f| m.covers(f)).map(|f| f.to_string()).collect();
            if covered.is_empty() && incomplete.is_none() {
                return None;
            }
            let p = &m.policy;
            let (status, reason) = if p.tier <= 1 && trust >= SKIPS_LOW_TIERS_TRUST {
                (
                    RunStatus::Skipped,
                    Some(format!("trust level {trust} skips tiers 0 and 1")),
                )
            } else if p.needs_review() {
                (RunStatus::AwaitingApproval, Some(review_reason(p)))
            } else {
                (RunStatus::Pending, None)
            };
            let reason = match (covered.is_empty(), incomplete) {
                (true, Some(why)) => Some(format!("runs although no listed file matches: {why}")),
                _ => reason,
            };
            Some(PlannedRun {
                policy: p.clone(),
                files: covered,
                status,
                reason,
            })
        })
        .collect();
    runs.sort_by(|a, b| (a.policy.tier, &a.policy.name).cmp(&(b.policy.tier, &b.policy.name)));
    runs
}

fn review_reason(p: &VerificationPolicy) -> String {
    if p.review_only() {
        "waiting for a person's review".into()
    } else {
        format!("waiting for a person's approval before {} runs", p.executor.as_str())
    }
}

/// A changeset's state from its runs' statuses: failed as soon as one run failed (or
/// erred, timed out, was cancelled), else pending while one is unfinished, else
/// awaiting approval while one waits for a person, else passed; no runs, not required.
pub fn overall(statuses: &[RunStatus]) -> ChangesetStatus {
    use RunStatus::*;
    if statuses.is_empty() {
        ChangesetStatus::NotRequired
    } else if statuses
        .iter()
        .any(|s| matches!(s, Failed | Error | TimedOut | Cancelled))
    {
        ChangesetStatus::Failed
    } else if statuses.iter().any(|s| matches!(s, Pending | Running)) {
        ChangesetStatus::Pending
    } else if statuses.contains(&AwaitingApproval) {
        ChangesetStatus::AwaitingApproval
    } else {
        ChangesetStatus::Passed
    }
}
