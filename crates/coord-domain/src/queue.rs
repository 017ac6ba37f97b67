//! The work queue: tasks with priorities, dependencies and claim leases.
//!
//! Life of a task: `pending` -> (claimed by `get_work`) `claimed` -> `completed` | `failed`.
//! A task waits while any dependency is not `completed`; when a dependency fails or is
//! cancelled, every task depending on it (transitively) becomes `cancelled` with
//! `failure_reason = "dependency_failed"`. A claim is a lease (`claimed_until`): when it
//! runs out the task returns to `pending`, and once `max_attempts` claims have run out it
//! becomes `failed` with `failure_reason = "max_attempts_exceeded"`.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::Identity;
use crate::time::Timestamp;
use crate::validate::{self, MAX_LONG_TEXT, MAX_SHORT_TEXT, MAX_TEXT};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub const DEFAULT_PRIORITY: i64 = 5;
pub const MIN_PRIORITY: i64 = 1;
pub const MAX_PRIORITY: i64 = 10;
pub const DEFAULT_MAX_ATTEMPTS: i32 = 3;
pub const DEFAULT_CLAIM_LEASE_MINUTES: i64 = 60;
pub const MAX_DEPENDENCIES: usize = 100;
pub const MAX_TASK_TYPES: usize = 50;
pub const DEFAULT_LIST_LIMIT: i64 = 100;
pub const MAX_LIST_LIMIT: i64 = 10_000;
/// Expired claims `get_work` settles inline before it picks a task; the rest wait for the
/// next call or the background sweep.
pub const CLAIM_SETTLE_BATCH: i64 = 32;

pub const REASON_DEPENDENCY_FAILED: &str = "dependency_failed";
pub const REASON_MAX_ATTEMPTS: &str = "max_attempts_exceeded";
pub const REASON_AGENT_REPORTED: &str = "agent_reported_failure";
/// A swarm's task nobody could be spawned to do.
pub const REASON_NO_WORKER: &str = "no_worker";
pub const REASON_NO_TASKS: &str = "no_tasks_available";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Claimed,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Pending,
        TaskStatus::Claimed,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Claimed => "claimed",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// A dependency in this state can never complete: its dependents are cancelled.
    pub fn is_dead_end(self) -> bool {
        matches!(self, TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitWorkRequest {
    /// Category of work, e.g. `test`, `refactor`, `review`; workers filter on it.
    #[schemars(length(min = 1, max = 256), regex(pattern = r"\S"))]
    pub task_type: String,
    /// What needs to be done, for the agent that claims it.
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    pub task_description: String,
    /// Any JSON the worker needs.
    #[serde(default)]
    pub input_data: Option<Value>,
    /// 1 (most urgent) to 10; default 5.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub priority: Option<i64>,
    /// Task ids (or unique prefixes of them, at least 4 characters) that must complete
    /// before this task can be claimed.
    #[serde(default)]
    #[schemars(length(max = 100), inner(regex(pattern = r"^\s*[0-9a-fA-F-]{4,36}\s*$")))]
    pub depends_on: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetWorkRequest {
    /// Claim only tasks of these types; any type when absent.
    #[serde(default)]
    #[schemars(length(max = 50), inner(length(min = 1, max = 256), regex(pattern = r"\S")))]
    pub task_types: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteWorkRequest {
    /// The id `get_work` returned (or a unique prefix of it, at least 4 characters).
    #[schemars(regex(pattern = r"^\s*[0-9a-fA-F-]{4,36}\s*$"))]
    pub task_id: String,
    /// Whether the work succeeded (`completed`) or not (`failed`).
    pub success: bool,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub error_message: Option<String>,
    /// The code changes of a successful completion: destructive commands, credential
    /// files and destructive lines added to scripts block the completion (see
    /// `check_guardrails`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<crate::guardrails::WorkChanges>,
    /// The skill (technique, in words) the work used: its use is counted for the task's
    /// type, as a success or not (see `record_skill_use`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1000))]
    pub skill: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskRequest {
    /// The task's id, or a unique prefix of it (at least 4 characters).
    #[schemars(regex(pattern = r"^\s*[0-9a-fA-F-]{4,36}\s*$"))]
    pub task_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksRequest {
    #[serde(default)]
    pub status: Option<TaskStatus>,
    #[serde(default)]
    pub task_type: Option<String>,
    /// At most this many tasks, most urgent first; default 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<i64>,
}

/// A validated submission, ready for a store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub task_id: String,
    pub task_type: String,
    pub task_description: String,
    pub input_data: Option<Value>,
    pub priority: i64,
    pub depends_on: Vec<String>,
    pub max_attempts: i32,
    /// Only this agent may claim it (a GitHub issue's `agent:` label); anyone when none.
    pub assigned_to: Option<String>,
}

/// A task ended from outside its claim (its GitHub issue closed, or no longer assigned).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnding {
    /// Completed (the issue was closed as completed), else cancelled.
    pub completed: bool,
    /// Why, for people: the result's `note` or the error message.
    pub note: String,
    /// The cancelled task's `failure_reason`.
    pub reason: String,
}

/// A validated claim request.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSpec {
    pub task_types: Vec<String>,
    pub lease_minutes: i64,
}

/// A validated completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub task_id: String,
    pub success: bool,
    pub result: Option<Value>,
    pub error_message: Option<String>,
    /// The skill used and the id it gets if it is new.
    pub skill: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskFilter {
    pub status: Option<TaskStatus>,
    pub task_type: Option<String>,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SubmitWorkResult {
    pub success: bool,
    pub task_id: String,
    /// `pending`, or `cancelled` when a dependency had already failed.
    pub status: TaskStatus,
}

/// `get_work` answer: the claimed task, or `{success: false, reason: "no_tasks_available"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetWorkResult {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_until: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl GetWorkResult {
    pub fn claimed(t: &TaskInfo) -> Self {
        GetWorkResult {
            success: true,
            task_id: Some(t.task_id.clone()),
            task_type: Some(t.task_type.clone()),
            task_description: Some(t.task_description.clone()),
            // Present even when null: workers read `input_data` unconditionally.
            input_data: Some(t.input_data.clone().unwrap_or(Value::Null)),
            priority: Some(t.priority),
            attempt: Some(t.attempts),
            claimed_until: t.claimed_until,
            reason: None,
        }
    }

    pub fn none_available() -> Self {
        GetWorkResult {
            success: false,
            task_id: None,
            task_type: None,
            task_description: None,
            input_data: None,
            priority: None,
            attempt: None,
            claimed_until: None,
            reason: Some(REASON_NO_TASKS.to_string()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompleteWorkResult {
    pub success: bool,
    pub task_id: String,
    pub status: TaskStatus,
    /// Tasks cancelled because this one failed (transitively).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled_dependents: Vec<String>,
    /// The skill whose use this completion counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<crate::memory::skills::Skill>,
    /// The workflow the task is a node of, read in the completion's own statement (the
    /// service moves it on); not part of the answer.
    #[serde(skip)]
    #[schemars(skip)]
    pub workflow_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskInfo {
    pub task_id: String,
    pub task_type: String,
    pub task_description: String,
    #[serde(default)]
    pub input_data: Option<Value>,
    pub priority: i64,
    pub status: TaskStatus,
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Dependencies not yet completed; the task is claimable only at 0.
    pub pending_dependencies: i64,
    pub created_by: String,
    pub created_at: Timestamp,
    #[serde(default)]
    pub claimed_by: Option<String>,
    #[serde(default)]
    pub claimed_at: Option<Timestamp>,
    #[serde(default)]
    pub claimed_until: Option<Timestamp>,
    pub attempts: i32,
    pub max_attempts: i32,
    #[serde(default)]
    pub completed_at: Option<Timestamp>,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub error_message: Option<String>,
    /// Why the task ended without success: `agent_reported_failure`,
    /// `dependency_failed` or `max_attempts_exceeded`.
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// The only agent that may claim it (tasks made from GitHub issues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_to: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetTaskResult {
    pub success: bool,
    pub task: TaskInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListTasksResult {
    pub tasks: Vec<TaskInfo>,
}

/// Canonical form of a task id (a UUID); anything else is refused before a store sees it.
pub fn parse_task_id(field: &str, raw: &str) -> CoordResult<String> {
    uuid::Uuid::parse_str(raw.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            CoordError::field(
                ErrorCode::InvalidTaskId,
                field,
                format!(
                    "{field} {:?} is not a task id (a UUID, or a unique prefix of one: at least 4 of its characters)",
                    raw.chars().take(80).collect::<String>()
                ),
            )
        })
}

pub fn validate_priority(p: Option<i64>) -> CoordResult<i64> {
    validate::int_in_range(
        "priority",
        p,
        DEFAULT_PRIORITY,
        MIN_PRIORITY,
        MAX_PRIORITY,
        ErrorCode::PriorityOutOfRange,
    )
}

/// Validates a submission. `task_id` is generated by the caller (ids are random).
pub fn validate_submission(req: SubmitWorkRequest, task_id: String, max_attempts: i32) -> CoordResult<NewTask> {
    let task_type = validate::required_text("task_type", &req.task_type, MAX_SHORT_TEXT)?;
    let task_description = validate::required_text("task_description", &req.task_description, MAX_LONG_TEXT)?;
    let priority = validate_priority(req.priority)?;
    let input_data = validate::json_payload("input_data", req.input_data)?;
    let raw_deps = req.depends_on.unwrap_or_default();
    if raw_deps.len() > MAX_DEPENDENCIES {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "depends_on",
            format!("a task may depend on at most {MAX_DEPENDENCIES} tasks"),
        ));
    }
    let mut seen = HashSet::new();
    let mut depends_on = Vec::with_capacity(raw_deps.len());
    for d in &raw_deps {
        let id = parse_task_id("depends_on", d)?;
        if seen.insert(id.clone()) {
            depends_on.push(id);
        }
    }
    Ok(NewTask {
        task_id,
        task_type,
        task_description,
        input_data,
        priority,
        depends_on,
        max_attempts,
        assigned_to: None,
    })
}

pub fn validate_claim(req: GetWorkRequest, lease_minutes: i64) -> CoordResult<ClaimSpec> {
    let task_types = validate::text_list("task_types", req.task_types, MAX_TASK_TYPES, MAX_SHORT_TEXT)?;
    Ok(ClaimSpec {
        task_types,
        lease_minutes,
    })
}

pub fn validate_completion(req: CompleteWorkRequest, skill_id: String) -> CoordResult<Completion> {
    Ok(Completion {
        task_id: parse_task_id("task_id", &req.task_id)?,
        success: req.success,
        result: validate::json_payload("result", req.result)?,
        error_message: validate::optional_text("error_message", req.error_message, MAX_TEXT)?,
        skill: validate::optional_text("skill", req.skill, crate::memory::MAX_SUMMARY)?
            .map(|s| (s.trim().to_string(), skill_id)),
    })
}

pub fn validate_task_filter(req: ListTasksRequest) -> CoordResult<TaskFilter> {
    Ok(TaskFilter {
        status: req.status,
        task_type: validate::optional_text("task_type", req.task_type, MAX_SHORT_TEXT)?,
        limit: validate::int_in_range(
            "limit",
            req.limit,
            DEFAULT_LIST_LIMIT,
            1,
            MAX_LIST_LIMIT,
            ErrorCode::InvalidArgument,
        )?,
    })
}

/// How a new task starts, given the stored state of the dependencies it names.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitPlan {
    pub status: TaskStatus,
    /// Dependencies not yet completed.
    pub waiting_on: i64,
    pub failure_reason: Option<&'static str>,
}

pub fn plan_submission(depends_on: &[String], found: &HashMap<String, TaskStatus>) -> CoordResult<SubmitPlan> {
    let missing: Vec<&String> = depends_on.iter().filter(|d| !found.contains_key(*d)).collect();
    if !missing.is_empty() {
        return Err(CoordError::field(
            ErrorCode::UnknownDependency,
            "depends_on",
            format!(
                "unknown dependency task id(s): {}",
                missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )
        .with_detail(
            "unknown",
            missing.iter().map(|s| Value::String((*s).clone())).collect::<Vec<_>>(),
        ));
    }
    let statuses = depends_on.iter().map(|d| found[d]);
    let waiting_on = statuses.clone().filter(|s| *s != TaskStatus::Completed).count() as i64;
    if statuses.clone().any(TaskStatus::is_dead_end) {
        return Ok(SubmitPlan {
            status: TaskStatus::Cancelled,
            waiting_on,
            failure_reason: Some(REASON_DEPENDENCY_FAILED),
        });
    }
    Ok(SubmitPlan {
        status: TaskStatus::Pending,
        waiting_on,
        failure_reason: None,
    })
}

/// The refusal for a task id nothing is stored under.
pub fn task_not_found(task_id: &str) -> CoordError {
    CoordError::new(ErrorCode::TaskNotFound, format!("no task {task_id}")).with_detail("task_id", task_id)
}

/// Whether `me` may complete the task, given its stored status and claimer.
pub fn decide_completion(stored: Option<(TaskStatus, Option<&str>)>, task_id: &str, me: &Identity) -> CoordResult<()> {
    match stored {
        None => Err(task_not_found(task_id)),
        Some((TaskStatus::Claimed, Some(by))) if by == me.agent_id => Ok(()),
        Some((TaskStatus::Claimed, by)) => Err(CoordError::new(
            ErrorCode::NotTaskOwner,
            format!(
                "task {task_id} is claimed by {}, not by {}",
                by.unwrap_or("?"),
                me.agent_id
            ),
        )
        .with_detail("task_id", task_id)
        .with_detail("claimed_by", by.unwrap_or_default())),
        Some((status, _)) => Err(CoordError::new(
            ErrorCode::TaskNotClaimed,
            format!("task {task_id} is {status}, not claimed; only a claimed task can be completed"),
        )
        .with_detail("task_id", task_id)
        .with_detail("status", status.as_str())),
    }
}

/// What happens to a claim whose lease ran out after `attempts` claims.
pub fn expired_claim_status(attempts: i32, max_attempts: i32) -> TaskStatus {
    if attempts >= max_attempts {
        TaskStatus::Failed
    } else {
        TaskStatus::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "00000000-0000-4000-8000-00000000000a";
    const B: &str = "00000000-0000-4000-8000-00000000000b";

    #[test]
    fn submission_plans() {
        use TaskStatus::*;
        let deps = vec![A.to_string(), B.to_string()];
        type Found = &'static [(&'static str, TaskStatus)];
        type Planned = Result<(TaskStatus, i64), ErrorCode>;
        let cases: &[(Found, Planned)] = &[
            (&[(A, Completed), (B, Completed)], Ok((Pending, 0))),
            (&[(A, Completed), (B, Pending)], Ok((Pending, 1))),
            (&[(A, Claimed), (B, Pending)], Ok((Pending, 2))),
            (&[(A, Failed), (B, Pending)], Ok((Cancelled, 2))),
            (&[(A, Completed), (B, Cancelled)], Ok((Cancelled, 1))),
            (&[(A, Completed)], Err(ErrorCode::UnknownDependency)),
            (&[], Err(ErrorCode::UnknownDependency)),
        ];
        for (found, want) in cases {
            let found: HashMap<String, TaskStatus> = found.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let got = plan_submission(&deps, &found)
                .map(|p| (p.status, p.waiting_on))
                .map_err(|e| e.code);
            assert_eq!(&got, want, "{found:?}");
        }
        assert_eq!(plan_submission(&[], &HashMap::new()).unwrap().status, Pending);
    }

    #[test]
    fn completion_rules() {
        use TaskStatus::*;
        let me = Identity {
            agent_id: "me".into(),
            agent_type: "t".into(),
        };
        type Stored = Option<(TaskStatus, Option<&'static str>)>;
        let cases: &[(Stored, Option<ErrorCode>)] = &[
            (None, Some(ErrorCode::TaskNotFound)),
            (Some((Claimed, Some("me"))), None),
            (Some((Claimed, Some("other"))), Some(ErrorCode::NotTaskOwner)),
            (Some((Pending, None)), Some(ErrorCode::TaskNotClaimed)),
            (Some((Completed, Some("me"))), Some(ErrorCode::TaskNotClaimed)),
            (Some((Failed, Some("me"))), Some(ErrorCode::TaskNotClaimed)),
            (Some((Cancelled, None)), Some(ErrorCode::TaskNotClaimed)),
        ];
        for (stored, want) in cases {
            let got = decide_completion(*stored, A, &me).err().map(|e| e.code);
            assert_eq!(&got, want, "{stored:?}");
        }
    }

    #[test]
    fn submission_validation() {
        let ok = SubmitWorkRequest {
            task_type: "test".into(),
            task_description: "write tests".into(),
            depends_on: Some(vec![A.to_uppercase(), A.into()]),
            ..Default::default()
        };
        let t = validate_submission(ok.clone(), "id".into(), 3).unwrap();
        assert_eq!(t.priority, 5);
        assert_eq!(
            t.depends_on,
            vec![A.to_string()],
            "ids are canonicalised and deduplicated"
        );
        let cases: &[(SubmitWorkRequest, ErrorCode, &str)] = &[
            (
                SubmitWorkRequest {
                    task_type: " ".into(),
                    ..ok.clone()
                },
                ErrorCode::InvalidArgument,
                "task_type",
            ),
            (
                SubmitWorkRequest {
                    task_description: "".into(),
                    ..ok.clone()
                },
                ErrorCode::InvalidArgument,
                "task_description",
            ),
            (
                SubmitWorkRequest {
                    priority: Some(0),
                    ..ok.clone()
                },
                ErrorCode::PriorityOutOfRange,
                "priority",
            ),
            (
                SubmitWorkRequest {
                    priority: Some(11),
                    ..ok.clone()
                },
                ErrorCode::PriorityOutOfRange,
                "priority",
            ),
            (
                SubmitWorkRequest {
                    depends_on: Some(vec!["nope".into()]),
                    ..ok.clone()
                },
                ErrorCode::InvalidTaskId,
                "depends_on",
            ),
        ];
        for (req, code, field) in cases {
            let e = validate_submission(req.clone(), "id".into(), 3).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (*code, Some(*field)));
        }
    }

    #[test]
    fn leases_run_out_into_retry_then_failure() {
        assert_eq!(expired_claim_status(1, 3), TaskStatus::Pending);
        assert_eq!(expired_claim_status(2, 3), TaskStatus::Pending);
        assert_eq!(expired_claim_status(3, 3), TaskStatus::Failed);
        assert_eq!(expired_claim_status(1, 1), TaskStatus::Failed);
    }

    #[test]
    fn no_tasks_shape() {
        let v = serde_json::to_value(GetWorkResult::none_available()).unwrap();
        assert_eq!(v, serde_json::json!({"success": false, "reason": "no_tasks_available"}));
    }
}
