//! GitHub state as coordination: an issue's `locked:` labels become file locks for the
//! agent its `agent:<id>` label names, `agent:<id>` with `status:assigned` becomes a
//! task assigned to that agent, and files pushed to an `agent/<id>/<task>` branch are
//! locked to that agent until the branch is merged or deleted.
//!
//! Deliveries arrive out of order and more than once, so each issue or branch is a
//! *link* holding what coord last applied for it (its agent, the locks it took, its
//! task, the issue's `updated_at`); an event is reconciled against the link, never
//! replayed on its own. The plans here are pure; `coord_service::ops::github` applies
//! them.

use crate::labels::{self, LockLabel};
use crate::webhook::{Named, agent_branch};
use coord_domain::queue::{DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY};
use coord_domain::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The task type of the tasks issues become.
pub const ISSUE_TASK_TYPE: &str = "github_issue";
/// Label locks last this long and are renewed by every event on their issue: a
/// coordinator that stops hearing from GitHub lets them go rather than hold them forever.
pub const LABEL_LOCK_TTL_MINUTES: i64 = 8 * 60;
/// Branch locks last this long, renewed by every push to the branch.
pub const BRANCH_LOCK_TTL_MINUTES: i64 = 4 * 60;
/// At most this many locks per issue or branch (GitHub allows 100 labels an issue).
pub const MAX_LINK_LOCKS: usize = 1000;

const AGENT_PREFIX: &str = "agent:";
const STATUS_ASSIGNED: &str = "status:assigned";
const PRIORITY_PREFIX: &str = "priority:";

#[derive(Debug, Clone, Deserialize)]
pub struct Label {
    pub name: String,
}

pub use crate::webhook::Repository;

/// The fields of an issue (or a pull request: labels on pull requests arrive as
/// `pull_request` events with the same fields) coord reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    pub number: i64,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub state_reason: Option<String>,
    pub updated_at: Timestamp,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// Set when the issue is a pull request (as the issues API shows one).
    #[serde(default)]
    pub pull_request: Option<IssuePullRequest>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssuePullRequest {
    #[serde(default)]
    pub merged_at: Option<String>,
}

/// An `issues` delivery.
#[derive(Debug, Clone, Deserialize)]
pub struct IssuesEvent {
    pub action: String,
    pub issue: Issue,
    pub repository: Repository,
    #[serde(default)]
    pub sender: Option<Named>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestHead {
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The head's repository (a fork's, for a pull request from one).
    #[serde(default)]
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    #[serde(default)]
    pub merged: bool,
    pub head: PullRequestHead,
}

/// A `pull_request` delivery: its labels are reconciled like an issue's, and a merge
/// ends its head branch's locks.
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub pull_request: serde_json::Value,
    pub repository: Repository,
}

/// A `delete` delivery (a branch or tag removed; short ref).
#[derive(Debug, Clone, Deserialize)]
pub struct DeleteEvent {
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub ref_type: String,
    pub repository: Repository,
}

/// A GitHub Actions run, as `workflow_run` deliveries and the runs API show it.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRun {
    pub id: i64,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub display_title: Option<String>,
}

/// A `workflow_run` delivery.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRunEvent {
    pub action: String,
    pub workflow_run: WorkflowRun,
}

/// A repository's `owner/name` as GitHub spells it (letters, digits, `.`, `_`, `-`),
/// or None.
pub fn repository_name(s: &str) -> Option<String> {
    let (owner, name) = s.trim().split_once('/')?;
    let ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 100
            && p != "."
            && p != ".."
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    (ok(owner) && ok(name)).then(|| format!("{owner}/{name}"))
}

/// What coord last applied for an issue or a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub repo_id: i64,
    /// `issue:<number>` or `branch:<name>`.
    pub key: String,
    pub repository: String,
    /// The agent the locks and the task are (were) for.
    pub agent_id: Option<String>,
    /// Paths whose locks coord took for this link.
    pub locks: Vec<String>,
    pub task_id: Option<String>,
    /// The issue's `updated_at` last applied (branches: the push's time).
    pub updated_at: Option<Timestamp>,
    /// The last comment coord queued for it (the same one is not posted twice).
    pub notice: Option<String>,
}

impl Link {
    pub fn new(repo_id: i64, key: String, repository: String) -> Link {
        Link {
            repo_id,
            key,
            repository,
            agent_id: None,
            locks: Vec::new(),
            task_id: None,
            updated_at: None,
            notice: None,
        }
    }
}

pub fn issue_key(number: i64) -> String {
    format!("issue:{number}")
}

pub fn branch_key(branch: &str) -> String {
    format!("branch:{}", branch.strip_prefix("refs/heads/").unwrap_or(branch))
}

/// A task an issue asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedTask {
    pub title: String,
    pub priority: i64,
}

/// What an issue's labels ask for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub agent: Option<String>,
    pub locks: Vec<String>,
    pub task: Option<WantedTask>,
    /// Why a label asks for nothing (for the issue, as a comment).
    pub problems: Vec<String>,
}

fn prefixed<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    let name = name.trim();
    name.get(..prefix.len())
        .filter(|p| p.eq_ignore_ascii_case(prefix))
        .map(|_| name[prefix.len()..].trim())
}

/// Agent ids GitHub can carry: in a label after `agent:` (50 characters in all) and in
/// a branch name — letters, digits, `.`, `_` and `-`, at most 44 characters.
pub fn github_agent_id(id: &str) -> Result<String, &'static str> {
    let id = id.trim();
    if id.is_empty() || id.len() > 44 {
        return Err("an agent id on GitHub is 1 to 44 characters");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        || id.starts_with('.')
    {
        return Err("an agent id on GitHub is letters, digits, '.', '_' and '-'");
    }
    Ok(id.to_string())
}

/// Whether an issue is closed (or gone) for coordination.
pub fn issue_closed(action: &str, issue: &Issue) -> bool {
    matches!(action, "closed" | "deleted" | "transferred") || issue.state == "closed"
}

/// Whether a closing completes the issue's task: closed as completed (a pull request:
/// merged); deleted, transferred, not planned or anything else cancels it.
pub fn closed_as_completed(action: &str, issue: &Issue, merged: bool) -> bool {
    if !issue_closed(action, issue) || matches!(action, "deleted" | "transferred") {
        return false;
    }
    merged || issue.state_reason.as_deref() == Some("completed")
}

/// The id of the task a delivery makes for an issue: the same delivery acted on twice
/// (a restart mid-way) makes the same id, so the task is found rather than made again.
pub fn task_id_for(delivery_id: &str, repo_id: i64, key: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{delivery_id}\n{repo_id}\n{key}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    // The queue's ids are version-4 UUIDs; these look the same.
    uuid::Builder::from_random_bytes(b).into_uuid().hyphenated().to_string()
}

/// What an issue's labels ask for: exactly one `agent:` label names the agent (none or
/// several: no locks and no task — nobody's locks are anonymous); `locked:` labels name
/// paths, resolved by `labels::resolve` against the body's block and `known`; a task when
/// `status:assigned` is there too (`priority:<1-10>` sets its priority). A closed issue
/// asks for nothing.
pub fn wanted(issue: &Issue, closed: bool, known: &[String]) -> Wanted {
    let mut out = Wanted {
        agent: None,
        locks: Vec::new(),
        task: None,
        problems: Vec::new(),
    };
    if closed {
        return out;
    }
    let names: Vec<&str> = issue.labels.iter().map(|l| l.name.as_str()).collect();
    let agents: Vec<&str> = names.iter().filter_map(|n| prefixed(n, AGENT_PREFIX)).collect();
    let lock_labels: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| prefixed(n, labels::LOCK_PREFIX).is_some())
        .collect();
    match agents.as_slice() {
        [] => {
            if !lock_labels.is_empty() {
                out.problems
                    .push("locked: labels lock nothing without an agent:<id> label naming whose locks they are".into());
            }
            return out;
        }
        [one] => match github_agent_id(one) {
            Ok(id) => out.agent = Some(id),
            Err(why) => {
                out.problems.push(format!("agent:{one} names no agent: {why}"));
                return out;
            }
        },
        several => {
            out.problems.push(format!(
                "{} agent: labels ({}): coord takes no locks and makes no task until exactly one remains",
                several.len(),
                several.join(", ")
            ));
            return out;
        }
    }
    let listed = labels::listed_paths(issue.body.as_deref().unwrap_or(""));
    for name in lock_labels {
        // As a lock key: a label may name a directory (`src/auth/`) or a glob.
        let key = labels::parse_label(name)
            .and_then(|l: LockLabel| labels::resolve(&l, &listed, known))
            .and_then(|path| {
                coord_domain::target::LockTarget::parse(&path, None)
                    .map(|t| t.into_key())
                    .map_err(|e| labels::Unresolved::BadPath(e.message))
            });
        match key {
            Ok(key) if !out.locks.contains(&key) && out.locks.len() < MAX_LINK_LOCKS => out.locks.push(key),
            Ok(_) => {}
            Err(why) => out.problems.push(why.message(name.trim())),
        }
    }
    out.locks.sort();
    if names.iter().any(|n| n.trim().eq_ignore_ascii_case(STATUS_ASSIGNED)) {
        let priority = names
            .iter()
            .filter_map(|n| prefixed(n, PRIORITY_PREFIX))
            .find_map(|p| p.parse::<i64>().ok())
            .filter(|p| (MIN_PRIORITY..=MAX_PRIORITY).contains(p))
            .unwrap_or(DEFAULT_PRIORITY);
        let title = if issue.title.trim().is_empty() {
            format!("GitHub issue #{}", issue.number)
        } else {
            issue.title.trim().to_string()
        };
        out.task = Some(WantedTask { title, priority });
    }
    out
}

/// How a task ends when its issue no longer asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    /// The issue was closed as completed: the task is completed.
    Complete,
    /// Closed otherwise, or a label removed: the task is cancelled.
    Cancel,
}

/// What to do to bring coord in line with what is wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconcile {
    /// Locks to release: (owner, path).
    pub release: Vec<(String, String)>,
    /// Locks to take (or renew) for `agent`.
    pub acquire: Vec<String>,
    pub agent: Option<String>,
    pub end_task: Option<(String, TaskEnd)>,
    pub create_task: Option<WantedTask>,
}

/// Compares what a link holds with what is wanted. Every wanted lock is (re)acquired, so
/// its TTL is renewed; locks no longer wanted, or held for another agent, are released;
/// a task no longer wanted (or for another agent) ends, one wanted and missing is made.
pub fn reconcile(
    link: &Link,
    agent: Option<&str>,
    locks: &[String],
    task: Option<&WantedTask>,
    completed: bool,
) -> Reconcile {
    let same_agent = link.agent_id.as_deref() == agent;
    let release = match &link.agent_id {
        Some(owner) => link
            .locks
            .iter()
            .filter(|p| !same_agent || !locks.contains(p))
            .map(|p| (owner.clone(), p.clone()))
            .collect(),
        None => Vec::new(),
    };
    let end_task = match (&link.task_id, task) {
        (Some(_), Some(_)) if same_agent => None,
        (Some(id), _) => Some((id.clone(), if completed { TaskEnd::Complete } else { TaskEnd::Cancel })),
        (None, _) => None,
    };
    let create_task = match task {
        Some(t) if agent.is_some() && (link.task_id.is_none() || end_task.is_some()) => Some(t.clone()),
        _ => None,
    };
    Reconcile {
        release,
        acquire: if agent.is_some() { locks.to_vec() } else { Vec::new() },
        agent: agent.map(str::to_string),
        end_task,
        create_task,
    }
}

/// Whether an issue event is older than what its link already applied (deliveries are
/// not ordered): it is then ignored.
pub fn stale(link: &Link, updated_at: Timestamp) -> bool {
    link.updated_at.is_some_and(|applied| updated_at < applied)
}

/// The agent whose branch this is and its task, when the ref is `agent/<id>/<task>` and
/// the id is a valid agent id.
pub fn branch_agent(git_ref: &str) -> Option<(String, String)> {
    let (agent, task) = agent_branch(git_ref)?;
    Some((github_agent_id(agent).ok()?, task.to_string()))
}

/// The comment telling an issue which of its labels coord could not apply, and why.
pub fn lock_comment(contested: &[(String, String)], problems: &[String]) -> Option<String> {
    if contested.is_empty() && problems.is_empty() {
        return None;
    }
    let mut body = String::from("**coord** could not apply every label of this issue:\n");
    for (path, holder) in contested {
        body.push_str(&format!(
            "\n- `{path}` is locked by {holder} in coord: the coordinator's lock wins, this issue's agent does not hold it"
        ));
    }
    for p in problems {
        body.push_str(&format!("\n- {p}"));
    }
    Some(body)
}

/// A request for GitHub's REST API, queued in the outbox and sent by `coord serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GithubRequest {
    pub method: String,
    /// Under the API's base URL: `/repos/{owner}/{repo}/...`.
    pub path: String,
    pub body: serde_json::Value,
}

/// A queued request with its outbox id and how often it was tried.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedRequest {
    pub id: i64,
    pub attempts: i32,
    pub request: GithubRequest,
}

/// A request in the outbox as `coord github outbox` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxRow {
    pub id: i64,
    pub method: String,
    pub path: String,
    pub attempts: i32,
    pub created_at: Timestamp,
    /// When it is tried next (not sent yet).
    pub next_attempt_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<Timestamp>,
    /// Why the last try failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A comment on an issue (or pull request) of `repository` (`owner/name`).
pub fn issue_comment(repository: &str, number: i64, body: String) -> GithubRequest {
    GithubRequest {
        method: "POST".into(),
        path: format!("/repos/{repository}/issues/{number}/comments"),
        body: serde_json::json!({ "body": body }),
    }
}

/// A commit status (`state`: pending, success, failure or error) on `sha`;
/// GitHub keeps 140 characters of the description.
pub fn commit_status(repository: &str, sha: &str, state: &str, context: &str, description: &str) -> GithubRequest {
    let description: String = description.chars().take(140).collect();
    GithubRequest {
        method: "POST".into(),
        path: format!("/repos/{repository}/statuses/{sha}"),
        body: serde_json::json!({ "state": state, "context": context, "description": description }),
    }
}

/// Sent requests (and given-up ones) are kept this long, then pruned by the sweeper.
pub const OUTBOX_KEEP_DAYS: i64 = 7;
/// Deliveries acted on are kept this long (GitHub offers redelivery for 3 days; a
/// redelivery of a pruned one would be acted on again), then pruned by the sweeper.
pub const DELIVERIES_KEEP_DAYS: i64 = 30;

/// A request tried this often stays in the outbox with its last error, not tried again.
pub const MAX_REQUEST_ATTEMPTS: i32 = 10;

/// A request a sender has taken is not due again for this long, in seconds (the
/// sender's timeout is shorter).
pub const REQUEST_TAKEN_SECONDS: i64 = 120;

/// Seconds before the next try of a request tried `attempts` times: 30 s doubling to
/// an hour.
pub fn retry_seconds(attempts: i32) -> i64 {
    (30i64 << attempts.clamp(0, 7)).min(3600)
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
