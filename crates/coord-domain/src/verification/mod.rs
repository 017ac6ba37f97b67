//! The verification gateway's rules: policies (which files go to which tier and
//! executor), changesets (what an agent changed), routing a changeset to the policies
//! that match it, and the statuses of the runs that follow. Pure: the service reads
//! policies and the caller's trust, the stores keep what routing decided.

mod route;
#[cfg(test)]
mod tests;

pub use route::{Matcher, PlannedRun, overall, route};

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::path::normalize_path;
use crate::time::Timestamp;
use crate::validate::{self, MAX_SHORT_TEXT, MAX_TEXT};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many rows in `verification_policies`.
pub const MAX_POLICIES: usize = 256;
/// Patterns per list (`patterns`, `exclude_patterns`).
pub const MAX_PATTERNS: usize = 64;
pub const MAX_PATTERN_LEN: usize = 512;
pub const MAX_REQUIRED_ENV: usize = 32;
pub const MAX_COMMAND_ARGS: usize = 64;
pub const MAX_ARG_LEN: usize = 4096;
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 300;
pub const MAX_TIMEOUT_SECONDS: u32 = 24 * 60 * 60;
/// Files in one changeset: GitHub reports at most 3,000 per commit, so does this.
pub const MAX_FILES: usize = 3000;
/// The diff a changeset may carry (kept for reviewers, not read by routing).
pub const MAX_DIFF_BYTES: usize = 256 * 1024;
/// The highest tier: a person reviews.
pub const MANUAL_TIER: u8 = 4;
/// Trust at or above this skips tiers 0 and 1 (spec 001, "Elevated").
pub const SKIPS_LOW_TIERS_TRUST: u8 = 3;
/// The name approval requests for a person's review of a changeset carry as their
/// operation (`coord approval list` shows them beside refused operations).
pub const REVIEW_OPERATION: &str = "verify_changeset";

fn invalid(field: &str, message: impl Into<String>) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, message)
}

/// Who runs a policy's checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// `command` in the coordinator's sandbox (lint, type checks).
    Inline,
    /// `command` on this machine (a local runner such as NTM), in the same sandbox.
    Local,
    /// A GitHub Actions workflow (`workflow`), dispatched through the REST API.
    GithubActions,
    /// An E2B sandbox from `template`.
    E2b,
    /// A person, through the approval queue.
    Manual,
}

impl Executor {
    pub fn as_str(self) -> &'static str {
        match self {
            Executor::Inline => "inline",
            Executor::Local => "local",
            Executor::GithubActions => "github_actions",
            Executor::E2b => "e2b",
            Executor::Manual => "manual",
        }
    }

    pub fn parse(s: &str) -> Option<Executor> {
        [
            Executor::Inline,
            Executor::Local,
            Executor::GithubActions,
            Executor::E2b,
            Executor::Manual,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_SECONDS
}

/// A verification policy: the files it covers and what verifies them. Also
/// `set_verification_policy`'s request (unknown fields refused: a misspelt
/// `exclude_patterns` must not store a policy that covers too much).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerificationPolicy {
    /// 1 to 64 lowercase letters, digits, `_` or `-`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// 0 static analysis, 1 unit tests, 2 integration, 3 system, 4 a person's review.
    #[schemars(range(max = 4))]
    pub tier: u8,
    pub executor: Executor,
    /// Globs over repository-relative paths; `*` stays within a directory, `**/`
    /// spans any number (also none: `**/*.rs` matches `main.rs`).
    pub patterns: Vec<String>,
    /// Files matching one of these are not covered even when a pattern matches.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Environment variable names the executor needs (names only, never values); a
    /// run without one fails with the missing names.
    #[serde(default)]
    pub required_env: Vec<String>,
    /// Seconds a run may take (default 300, at most a day).
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: u32,
    /// A person must approve before the executor runs (the manual executor — tier 4 —
    /// is a person's review and needs no flag).
    #[serde(default)]
    pub requires_approval: bool,
    /// A disabled policy routes nothing.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// inline, local and e2b: the program and its arguments (no shell; e2b runs it in
    /// the sandbox).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// github_actions: the workflow's file name (`ci.yml`) or id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// e2b: the sandbox template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

impl VerificationPolicy {
    /// Whether a run of this policy waits for a person's decision.
    pub fn needs_review(&self) -> bool {
        self.requires_approval || self.review_only()
    }

    /// Whether a person's review is the whole check (nothing runs after it).
    pub fn review_only(&self) -> bool {
        self.executor == Executor::Manual
    }
}

/// A policy as stored: who changed it last and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerificationPolicyRow {
    pub policy: VerificationPolicy,
    pub updated_by: String,
    pub updated_at: Timestamp,
}

/// `set_verification_policy`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetVerificationPolicyResult {
    pub success: bool,
    pub policy: VerificationPolicyRow,
}

/// `list_verification_policies`' answer, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListVerificationPoliciesResult {
    pub success: bool,
    pub policies: Vec<VerificationPolicyRow>,
}

/// `delete_verification_policy`'s request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteVerificationPolicyRequest {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeleteVerificationPolicyResult {
    pub success: bool,
    pub name: String,
}

/// A policy name: the same rule as network policies.
pub fn validate_name(name: &str) -> CoordResult<String> {
    crate::network::validate_name(name)
}

/// A policy to store: every pattern compiles, the executor has what it needs and
/// nothing meant for another executor (a `command` on a manual policy would read as if
/// something ran).
pub fn validate_policy(mut p: VerificationPolicy) -> CoordResult<VerificationPolicy> {
    p.name = validate_name(&p.name)?;
    p.description = p.description.trim().to_string();
    if p.description.chars().count() > 500 {
        return Err(invalid("description", "description: at most 500 characters"));
    }
    if p.tier > MANUAL_TIER {
        return Err(invalid("tier", format!("tier {}: tiers are 0 to 4", p.tier)));
    }
    if p.tier == MANUAL_TIER && p.executor != Executor::Manual {
        return Err(invalid(
            "executor",
            format!(
                "executor {}: tier 4 is a person's review (executor manual)",
                p.executor.as_str()
            ),
        ));
    }
    if p.patterns.is_empty() {
        return Err(invalid(
            "patterns",
            "patterns: at least one glob (\"**\" covers every file)",
        ));
    }
    for (field, list) in [
        ("patterns", &mut p.patterns),
        ("exclude_patterns", &mut p.exclude_patterns),
    ] {
        if list.len() > MAX_PATTERNS {
            return Err(invalid(field, format!("{field}: at most {MAX_PATTERNS} patterns")));
        }
        for (i, pattern) in list.iter_mut().enumerate() {
            *pattern = route::check_pattern(pattern)
                .map_err(|m| invalid(&format!("{field}[{i}]"), format!("{field}[{i}]: {m}")))?;
        }
    }
    if p.required_env.len() > MAX_REQUIRED_ENV {
        return Err(invalid(
            "required_env",
            format!("required_env: at most {MAX_REQUIRED_ENV} names"),
        ));
    }
    for (i, name) in p.required_env.iter().enumerate() {
        let ok = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(invalid(
                &format!("required_env[{i}]"),
                format!(
                    "required_env[{i}] {name:?}: an environment variable name (letters, digits, '_'; not starting with a digit)"
                ),
            ));
        }
    }
    if p.timeout_seconds == 0 || p.timeout_seconds > MAX_TIMEOUT_SECONDS {
        return Err(invalid(
            "timeout_seconds",
            format!("timeout_seconds: 1 to {MAX_TIMEOUT_SECONDS}, got {}", p.timeout_seconds),
        ));
    }
    // e2b runs the command inside its sandbox.
    let uses_command = matches!(p.executor, Executor::Inline | Executor::Local | Executor::E2b);
    if uses_command {
        if p.command.is_empty() {
            return Err(invalid(
                "command",
                format!(
                    "command: the {} executor runs a program: give it and its arguments",
                    p.executor.as_str()
                ),
            ));
        }
        if p.command.len() > MAX_COMMAND_ARGS {
            return Err(invalid(
                "command",
                format!("command: at most {MAX_COMMAND_ARGS} arguments"),
            ));
        }
        for (i, arg) in p.command.iter().enumerate() {
            if arg.contains('\0') || arg.len() > MAX_ARG_LEN || (i == 0 && arg.trim().is_empty()) {
                return Err(invalid(
                    &format!("command[{i}]"),
                    format!("command[{i}]: not empty (the program), no NUL, at most {MAX_ARG_LEN} bytes"),
                ));
            }
        }
    } else if !p.command.is_empty() {
        return Err(invalid(
            "command",
            format!(
                "command: only the inline, local and e2b executors run a command, not {}",
                p.executor.as_str()
            ),
        ));
    }
    p.workflow = only_for(p.workflow, p.executor, Executor::GithubActions, "workflow")?;
    p.template = only_for(p.template, p.executor, Executor::E2b, "template")?;
    Ok(p)
}

/// `value` is required for `owner` and refused for every other executor; a name of
/// letters, digits and `._-/:`.
fn only_for(value: Option<String>, executor: Executor, owner: Executor, field: &str) -> CoordResult<Option<String>> {
    let value = value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    match (executor == owner, value) {
        (true, None) => Err(invalid(
            field,
            format!("{field}: the {} executor needs it", owner.as_str()),
        )),
        (false, Some(_)) => Err(invalid(
            field,
            format!(
                "{field}: only for the {} executor, not {}",
                owner.as_str(),
                executor.as_str()
            ),
        )),
        (_, Some(v))
            if v.len() > 255
                || !v
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b':')) =>
        {
            Err(invalid(
                field,
                format!("{field} {v:?}: at most 255 letters, digits, '.', '_', '-', '/' or ':'"),
            ))
        }
        (_, v) => Ok(v),
    }
}

/// The state of one policy's run over a changeset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for its executor.
    Pending,
    Running,
    /// Waiting for a person's decision in the approval queue.
    AwaitingApproval,
    Passed,
    Failed,
    /// The executor could not judge (missing environment, unreachable service).
    Error,
    TimedOut,
    /// Not run, and why (`reason`): the submitter's trust skips the tier.
    Skipped,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::AwaitingApproval => "awaiting_approval",
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::Error => "error",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Skipped => "skipped",
            RunStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        use RunStatus::*;
        [
            Pending,
            Running,
            AwaitingApproval,
            Passed,
            Failed,
            Error,
            TimedOut,
            Skipped,
            Cancelled,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// Whether nothing more will happen to the run.
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            RunStatus::Pending | RunStatus::Running | RunStatus::AwaitingApproval
        )
    }
}

/// A changeset's overall state, from its runs ([`overall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangesetStatus {
    /// No enabled policy covers any of its files.
    NotRequired,
    /// Some run has not finished.
    Pending,
    /// Every unfinished run waits for a person.
    AwaitingApproval,
    /// Every run passed or was skipped.
    Passed,
    /// A run failed, erred, timed out or was cancelled.
    Failed,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Modified,
    Removed,
}

/// A file of a changeset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangedFile {
    pub path: String,
    pub change: Change,
}

/// `submit_changeset`'s request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitChangesetRequest {
    /// Files added or modified (repository-relative, or absolute inside the caller's
    /// checkout).
    #[serde(default)]
    pub files: Vec<String>,
    /// Files deleted: routed like the others (removing a migration is a migration change).
    #[serde(default)]
    pub removed: Vec<String>,
    /// The branch the change is on (`agent/<id>/<task>` by convention).
    #[serde(default)]
    pub branch: Option<String>,
    /// The commit (hex, 7 to 64 digits). With it, submitting the same branch and commit
    /// again answers the changeset already recorded.
    #[serde(default)]
    pub commit: Option<String>,
    /// What the change is, for reviewers.
    #[serde(default)]
    pub description: Option<String>,
    /// The diff, for reviewers (at most 256 KiB; routing reads the file list).
    #[serde(default)]
    pub diff: Option<String>,
}

/// A validated changeset, before routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChangeset {
    pub files: Vec<ChangedFile>,
    /// Why the file list may be incomplete (a push GitHub listed partly): every policy
    /// then runs. Never from an agent's request.
    pub incomplete: Option<String>,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub description: Option<String>,
    pub diff: Option<String>,
    /// The GitHub repository (`owner/name`) a push came from: its runs' results are
    /// reported there as commit statuses. Never from an agent's request.
    pub repository: Option<String>,
}

impl NewChangeset {
    pub fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.path.as_str()).collect()
    }
}

/// Paths normalised (a file listed twice counts once; listed as changed and removed, it
/// is removed), a branch git would accept, a commit in hex, bounded texts.
pub fn validate_changeset(req: SubmitChangesetRequest, repo_root: Option<&str>) -> CoordResult<NewChangeset> {
    if req.files.is_empty() && req.removed.is_empty() {
        return Err(invalid("files", "files: name at least one changed or removed file"));
    }
    if req.files.len() + req.removed.len() > MAX_FILES {
        return Err(invalid(
            "files",
            format!("files: at most {MAX_FILES} files in one changeset"),
        ));
    }
    let mut files: Vec<ChangedFile> = Vec::new();
    for (field, list, change) in [
        ("files", &req.files, Change::Modified),
        ("removed", &req.removed, Change::Removed),
    ] {
        for (i, raw) in list.iter().enumerate() {
            let path = normalize_path(raw, repo_root).map_err(|mut e| {
                e.field = Some(format!("{field}[{i}]"));
                e
            })?;
            match files.iter_mut().find(|f| f.path == path) {
                Some(f) => f.change = f.change.max_removed(change),
                None => files.push(ChangedFile { path, change }),
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let branch = req.branch.map(|b| b.trim().to_string()).filter(|b| !b.is_empty());
    if let Some(b) = &branch {
        check_branch(b)?;
    }
    let commit = commit_hex(req.commit)?;
    let description = validate::optional_text("description", req.description, MAX_TEXT)?;
    let diff = match req.diff {
        Some(d) if d.len() > MAX_DIFF_BYTES => {
            return Err(CoordError::field(
                ErrorCode::PayloadTooLarge,
                "diff",
                format!("diff: at most {MAX_DIFF_BYTES} bytes, got {}", d.len()),
            ));
        }
        Some(d) if d.contains('\0') => return Err(invalid("diff", "diff contains a NUL character")),
        d => d.filter(|d| !d.is_empty()),
    };
    Ok(NewChangeset {
        files,
        incomplete: None,
        branch,
        commit,
        description,
        diff,
        repository: None,
    })
}

impl Change {
    /// A file both changed and removed in one changeset ends removed.
    fn max_removed(self, other: Change) -> Change {
        if self == Change::Removed || other == Change::Removed {
            Change::Removed
        } else {
            self
        }
    }
}

/// A commit as hex, lower-cased (7 to 64 digits: abbreviated, SHA-1 or SHA-256); blank is none.
fn commit_hex(value: Option<String>) -> CoordResult<Option<String>> {
    let commit = value.map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty());
    if let Some(c) = &commit
        && (c.len() < 7 || c.len() > 64 || !c.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(invalid("commit", format!("commit {c:?}: 7 to 64 hexadecimal digits")));
    }
    Ok(commit)
}

/// A branch name git accepts (`git check-ref-format --branch`, the rules that matter
/// here): no control characters, spaces or `~^:?*[\`, no `..`, `@{` or `//`, no leading
/// `-` or `/`, no trailing `/`, `.` or `.lock`, at most 255 bytes.
pub fn check_branch(b: &str) -> CoordResult<()> {
    let bad = b.len() > 255
        || b.starts_with(['-', '/'])
        || b.ends_with(['/', '.'])
        || b.ends_with(".lock")
        || b.contains("..")
        || b.contains("@{")
        || b.contains("//")
        || b == "@"
        || b.split('/').any(|part| part.starts_with('.'))
        || b.chars()
            .any(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'));
    if bad {
        return Err(invalid("branch", format!("branch {b:?} is not a name git accepts")));
    }
    Ok(())
}

/// One policy's run over a changeset, as `get_verification` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerificationRun {
    pub policy: String,
    pub tier: u8,
    pub executor: Executor,
    pub status: RunStatus,
    /// Why it has this status (skipped by trust, a person's decision, a missing variable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The changeset's files the policy covers (the first [`RUN_FILES_SHOWN`]).
    pub files: Vec<String>,
    pub file_count: usize,
    /// The approval request a person decides (tier 4, manual, requires_approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// The end of the executor's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Where the executor runs it (a GitHub Actions run's page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_url: Option<String>,
}

/// A recorded changeset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Changeset {
    pub changeset_id: String,
    pub agent_id: String,
    pub agent_type: String,
    /// `agent` (submit_changeset) or `github` (a push).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub files: Vec<ChangedFile>,
    /// Whether a diff was submitted (`get_verification` with `diff:true` shows it).
    pub has_diff: bool,
    /// The submitter's trust level when it was routed.
    pub trust_level: u8,
    pub created_at: Timestamp,
    /// The GitHub repository a push came from (results go there as commit statuses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
}

/// `submit_changeset`'s and `get_verification`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerificationResult {
    pub success: bool,
    pub changeset: Changeset,
    pub status: ChangesetStatus,
    pub runs: Vec<VerificationRun>,
    /// submit_changeset: true when this branch and commit were already submitted (the
    /// recorded changeset is answered, nothing routed again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub existing: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// `get_verification`'s request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetVerificationRequest {
    #[schemars(length(min = 1, max = 64))]
    pub changeset_id: String,
    /// Include the submitted diff.
    #[serde(default)]
    pub diff: bool,
}

/// A changeset id as `submit_changeset` makes them (`cs_` and 32 hex digits).
pub fn validate_changeset_id(id: &str) -> CoordResult<String> {
    let id = id.trim();
    let ok = id.len() == 35 && id.starts_with("cs_") && id[3..].bytes().all(|b| b.is_ascii_hexdigit());
    if !ok {
        return Err(invalid(
            "changeset_id",
            format!(
                "changeset_id {:?}: the id submit_changeset answered (cs_ and 32 hex digits)",
                truncate(id)
            ),
        ));
    }
    Ok(id.to_ascii_lowercase())
}

fn truncate(s: &str) -> String {
    s.chars().take(MAX_SHORT_TEXT).collect()
}

pub fn new_changeset_id() -> String {
    format!("cs_{}", uuid::Uuid::new_v4().simple())
}

/// `not_found` for a changeset id with no row.
pub fn changeset_not_found(id: &str) -> CoordError {
    CoordError::new(ErrorCode::NotFound, format!("no changeset {id}")).with_detail("changeset_id", id)
}

/// `resource_limit_exceeded` for a new policy past [`MAX_POLICIES`].
pub fn too_many_policies() -> CoordError {
    CoordError::new(
        ErrorCode::ResourceLimitExceeded,
        format!("at most {MAX_POLICIES} verification policies can be stored; delete one first"),
    )
}

/// `not_found` for a policy name with no row.
pub fn no_policy(name: &str) -> CoordError {
    CoordError::new(ErrorCode::NotFound, format!("no verification policy named {name}"))
}

/// What the approval request for a person's review holds: enough to decide without
/// another lookup.
pub fn review_parameters(changeset_id: &str, run: &PlannedRun, description: Option<&str>) -> Value {
    serde_json::json!({
        "changeset_id": changeset_id,
        "policy": run.policy.name,
        "tier": run.policy.tier,
        "files": run.files.iter().take(RUN_FILES_SHOWN).collect::<Vec<_>>(),
        "file_count": run.files.len(),
        "description": description,
    })
}

/// A person's decision on a review request, as stored (not the approval's effective
/// status: an approval nobody spends would read as expired once its grant ran out).
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub status: crate::approvals::ApprovalStatus,
    pub expires_at: Timestamp,
    pub decided_by: Option<String>,
    pub note: Option<String>,
}

/// A run's status as read: one waiting for a person follows its approval request —
/// approved: passed when the person was the check (`review_only`: the manual
/// executor), else pending for its executor; denied: failed; still pending past its
/// expiry: timed out. Any other keeps what was stored.
pub fn with_review(
    status: RunStatus,
    reason: Option<String>,
    review: Option<&Review>,
    review_only: bool,
    now: Timestamp,
) -> (RunStatus, Option<String>) {
    use crate::approvals::ApprovalStatus as A;
    let (RunStatus::AwaitingApproval, Some(r)) = (status, review) else {
        return (status, reason);
    };
    let who = r.decided_by.as_ref().map(|b| format!(" by {b}")).unwrap_or_default();
    let why = r.note.as_ref().map(|n| format!(": {n}")).unwrap_or_default();
    match r.status {
        A::Approved | A::Used if review_only => (RunStatus::Passed, Some(format!("approved{who}{why}"))),
        A::Approved | A::Used => (
            RunStatus::Pending,
            Some(format!("approved{who}{why}; waiting for its executor")),
        ),
        A::Denied => (RunStatus::Failed, Some(format!("denied{who}{why}"))),
        A::Expired => (
            RunStatus::TimedOut,
            Some("nobody reviewed it before the request expired".into()),
        ),
        A::Pending if r.expires_at <= now => (
            RunStatus::TimedOut,
            Some("nobody reviewed it before the request expired".into()),
        ),
        A::Pending => (RunStatus::AwaitingApproval, reason),
    }
}

/// The answer about a changeset from what the store read: each run waiting for a person
/// follows its review (`reviews` by approval id), then the overall status.
pub fn assemble(
    changeset: Changeset,
    runs: Vec<VerificationRun>,
    reviews: &[(String, Review)],
    now: Timestamp,
    diff: Option<String>,
    existing: bool,
) -> VerificationResult {
    let runs: Vec<VerificationRun> = runs
        .into_iter()
        .map(|mut run| {
            let review = run
                .approval_id
                .as_ref()
                .and_then(|id| reviews.iter().find(|(rid, _)| rid == id).map(|(_, r)| r));
            let review_only = run.executor == Executor::Manual;
            (run.status, run.reason) = with_review(run.status, run.reason.take(), review, review_only, now);
            run
        })
        .collect();
    let status = overall(&runs.iter().map(|r| r.status).collect::<Vec<_>>());
    VerificationResult {
        success: true,
        changeset,
        status,
        runs,
        existing,
        diff,
    }
}

/// How many of a run's files are kept with it (the count is kept whole).
pub const RUN_FILES_SHOWN: usize = 100;

/// The end of an executor's output kept with a run.
pub const MAX_OUTPUT_TAIL: usize = 64 * 1024;
/// How long a claim outlives the policy's timeout before another worker may take the
/// run over (a worker that died).
pub const CLAIM_GRACE_SECONDS: i64 = 60;

/// `claim_verification_run`'s request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimVerificationRunRequest {
    /// The executors this worker runs (default inline and local; never manual).
    #[serde(default)]
    pub executors: Vec<Executor>,
    /// The commit this worker's checkout is at (hex): only runs of changesets at that
    /// commit (or naming none) are claimed, so a worker never fails others' runs for
    /// being elsewhere.
    #[serde(default)]
    pub commit: Option<String>,
}

/// What a worker claims: runs of these executors, at this commit (or any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimFilter {
    pub executors: Vec<Executor>,
    pub commit: Option<String>,
}

/// The executors a claim asks for (given ones without repeats, or inline and local) and
/// the worker's commit.
pub fn validate_claim(req: ClaimVerificationRunRequest) -> CoordResult<ClaimFilter> {
    let commit = commit_hex(req.commit)?;
    Ok(ClaimFilter {
        executors: executors(req.executors)?,
        commit,
    })
}

fn executors(asked: Vec<Executor>) -> CoordResult<Vec<Executor>> {
    let req = ClaimVerificationRunRequest {
        executors: asked,
        commit: None,
    };
    if req.executors.contains(&Executor::Manual) {
        return Err(invalid(
            "executors",
            "executors: a person's review is decided in the approval queue, not claimed",
        ));
    }
    let mut list: Vec<Executor> = Vec::new();
    for e in req.executors {
        if !list.contains(&e) {
            list.push(e);
        }
    }
    if list.is_empty() {
        list = vec![Executor::Inline, Executor::Local];
    }
    Ok(list)
}

impl Default for ClaimFilter {
    fn default() -> Self {
        ClaimFilter {
            executors: vec![Executor::Inline, Executor::Local],
            commit: None,
        }
    }
}

/// A run a worker claimed: what it needs to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClaimedRun {
    pub changeset_id: String,
    pub attempt: u32,
    /// The policy as routed.
    pub policy: VerificationPolicy,
    pub files: Vec<String>,
    pub file_count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Report before this, or another worker may take the run over.
    pub lease_until: Timestamp,
    /// The executor's run already started elsewhere (a GitHub Actions run id): follow
    /// it, never start another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_url: Option<String>,
    /// The GitHub repository of the changeset, when it came from a push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClaimVerificationRunResult {
    pub success: bool,
    /// None: nothing to run.
    pub run: Option<ClaimedRun>,
}

/// `report_verification_run`'s request: the outcome of a claimed run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportVerificationRunRequest {
    #[schemars(length(min = 1, max = 64))]
    pub changeset_id: String,
    pub policy: String,
    /// The attempt claimed (default 1).
    #[serde(default)]
    pub attempt: Option<u32>,
    /// passed, failed, error (could not judge) or timed_out; or running, with
    /// external_id, when the run was started elsewhere (a dispatched GitHub Actions run):
    /// recorded so no other worker starts it again, the lease renewed.
    pub status: RunStatus,
    /// The executor's id of the run started elsewhere (a GitHub Actions run id).
    #[serde(default)]
    #[schemars(length(min = 1, max = 128))]
    pub external_id: Option<String>,
    /// Where to see it (the run's page).
    #[serde(default)]
    #[schemars(length(max = 2048))]
    pub external_url: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// The end of the output (longer text keeps its last 64 KiB).
    #[serde(default)]
    pub output_tail: Option<String>,
    /// Why, in a sentence (a missing variable, the wrong commit checked out).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A validated report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub changeset_id: String,
    pub policy: String,
    pub attempt: u32,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<i64>,
    pub output_tail: Option<String>,
    pub reason: Option<String>,
    /// The run started elsewhere: (id, page).
    pub external: Option<(String, Option<String>)>,
}

/// The last bytes of an output, cut at a character boundary (the same as a spawned
/// agent's output tail).
pub use crate::agents::spawn::tail;

pub fn validate_report(req: ReportVerificationRunRequest) -> CoordResult<RunReport> {
    let external = match (req.external_id, req.external_url) {
        (None, None) => None,
        (None, Some(_)) => return Err(invalid("external_id", "external_url goes with external_id")),
        (Some(id), url) => {
            let id = id.trim().to_string();
            if id.is_empty()
                || id.len() > 128
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
            {
                return Err(invalid(
                    "external_id",
                    "external_id: 1 to 128 letters, digits, '-', '_', '.' or ':'",
                ));
            }
            let url = match url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty()) {
                Some(u) if u.len() > 2048 || !(u.starts_with("https://") || u.starts_with("http://")) => {
                    return Err(invalid(
                        "external_url",
                        "external_url: an http(s) URL of at most 2048 bytes",
                    ));
                }
                u => u,
            };
            Some((id, url))
        }
    };
    let running = req.status == RunStatus::Running && external.is_some();
    if !running
        && !matches!(
            req.status,
            RunStatus::Passed | RunStatus::Failed | RunStatus::Error | RunStatus::TimedOut
        )
    {
        return Err(invalid(
            "status",
            format!(
                "status {}: a report is passed, failed, error or timed_out (running only with external_id)",
                req.status.as_str()
            ),
        ));
    }
    if req.duration_ms.is_some_and(|d| d < 0) {
        return Err(invalid("duration_ms", "duration_ms: not negative"));
    }
    let output_tail = req
        .output_tail
        .map(|t| tail(&t.replace('\0', ""), MAX_OUTPUT_TAIL).to_string())
        .filter(|t| !t.is_empty());
    Ok(RunReport {
        changeset_id: validate_changeset_id(&req.changeset_id)?,
        policy: validate_name(&req.policy).map_err(|mut e| {
            e.field = Some("policy".into());
            e
        })?,
        attempt: req.attempt.unwrap_or(1).max(1),
        status: req.status,
        exit_code: req.exit_code,
        duration_ms: req.duration_ms,
        output_tail,
        reason: validate::optional_text("reason", req.reason, 1000)?,
        external,
    })
}

/// A run started elsewhere that finished there (a `workflow_run` webhook).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFinish {
    pub executor: Executor,
    pub external_id: String,
    pub status: RunStatus,
    pub reason: Option<String>,
    pub url: Option<String>,
}

/// A GitHub Actions run's conclusion as a run status: success passes; failure,
/// timed_out and startup_failure fail; anything else (cancelled, skipped, neutral,
/// stale, action_required, none) could not judge the change.
pub fn conclusion_status(conclusion: Option<&str>) -> RunStatus {
    match conclusion {
        Some("success") => RunStatus::Passed,
        Some("failure" | "startup_failure") => RunStatus::Failed,
        Some("timed_out") => RunStatus::TimedOut,
        _ => RunStatus::Error,
    }
}

/// The commit status state GitHub shows for a run.
pub fn commit_state(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Passed | RunStatus::Skipped => "success",
        RunStatus::Failed | RunStatus::TimedOut => "failure",
        RunStatus::Error | RunStatus::Cancelled => "error",
        RunStatus::Pending | RunStatus::Running | RunStatus::AwaitingApproval => "pending",
    }
}

/// What the store read about a run someone reports on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunClaim {
    pub status: RunStatus,
    pub claimed_by: Option<String>,
    pub submitter: String,
}

/// Only the worker holding the claim reports, only on a running run, and never on its
/// own changeset (nobody verifies their own change).
pub fn decide_report(claim: &RunClaim, reporter: &str, report: &RunReport) -> CoordResult<()> {
    if claim.submitter == reporter {
        return Err(CoordError::new(
            ErrorCode::Forbidden,
            format!(
                "{reporter} submitted changeset {}: another worker reports on its runs",
                report.changeset_id
            ),
        ));
    }
    if claim.status != RunStatus::Running || claim.claimed_by.as_deref() != Some(reporter) {
        return Err(CoordError::new(
            ErrorCode::Forbidden,
            format!(
                "the run of policy {} on changeset {} is {}{}: only the worker that claimed it reports, while it runs",
                report.policy,
                report.changeset_id,
                claim.status.as_str(),
                claim
                    .claimed_by
                    .as_ref()
                    .map(|w| format!(" (claimed by {w})"))
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// `not_found` for a run that does not exist.
pub fn run_not_found(report: &RunReport) -> CoordError {
    CoordError::new(
        ErrorCode::NotFound,
        format!(
            "changeset {} has no run of policy {} (attempt {})",
            report.changeset_id, report.policy, report.attempt
        ),
    )
}
