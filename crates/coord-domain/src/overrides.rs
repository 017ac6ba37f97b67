//! A person's overrides of other agents' coordination (`manage_work`, trust 4 or an
//! operator key): release a lock whoever holds it, cancel a task, put a claimed task back
//! in the queue. What an agent does to its own locks and claims lives in `locks` and
//! `queue`; these are for the lock of an agent that went quiet and the claim it will
//! never finish. Every one is audited as the person who asked.

use crate::locks::LockInfo;
use crate::queue::{TaskEnding, TaskStatus, parse_task_id, task_not_found};
use crate::target::LockTarget;
use crate::{CoordError, CoordResult, ErrorCode, Timestamp, validate};
use serde::{Deserialize, Serialize};

/// The `failure_reason` of a task a person cancelled.
pub const REASON_CANCELLED: &str = "cancelled_by_person";
const MAX_REASON: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakLockRequest {
    /// The locked path, as its holder named it ("src/auth/" for a directory lock, the glob
    /// for a glob lock).
    #[schemars(length(min = 1, max = 4096), regex(pattern = r"\S"))]
    pub file_path: String,
    /// Why, for the audit trail.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BreakLockResult {
    pub success: bool,
    pub released: bool,
    pub file_path: String,
    /// Who held it.
    pub locked_by: String,
    pub agent_type: String,
    /// The token the holder's writes carried: a write with it is now refused as stale.
    pub fencing_token: i64,
}

/// A lock a person may release: only a live one (an expired lock is nobody's).
pub fn decide_break(existing: Option<&LockInfo>, path: &str, now: Timestamp) -> CoordResult<BreakLockResult> {
    match existing {
        Some(l) if l.is_live(now) => Ok(BreakLockResult {
            success: true,
            released: true,
            file_path: path.to_string(),
            locked_by: l.locked_by.clone(),
            agent_type: l.agent_type.clone(),
            fencing_token: l.fencing_token,
        }),
        _ => Err(CoordError::new(
            ErrorCode::LockNotHeld,
            format!("{path} is not locked (the lock may have expired)"),
        )
        .with_detail("file_path", path)),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelTaskRequest {
    /// The task's id, or a unique prefix of it (at least 4 characters).
    #[schemars(regex(pattern = r"^\s*[0-9a-fA-F-]{4,36}\s*$"))]
    pub task_id: String,
    /// Why, kept as the task's error message and in the audit trail.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequeueTaskRequest {
    /// The claimed task's id, or a unique prefix of it (at least 4 characters).
    #[schemars(regex(pattern = r"^\s*[0-9a-fA-F-]{4,36}\s*$"))]
    pub task_id: String,
}

/// A validated cancellation.
#[derive(Debug, Clone, PartialEq)]
pub struct Cancellation {
    pub task_id: String,
    /// The task's error message.
    pub note: String,
}

impl Cancellation {
    /// How the task ends: cancelled, saying who and why.
    pub fn ending(&self) -> TaskEnding {
        TaskEnding {
            completed: false,
            note: self.note.clone(),
            reason: REASON_CANCELLED.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskOverrideResult {
    pub success: bool,
    pub task_id: String,
    /// Its status now: `cancelled`, or `pending` again.
    pub status: TaskStatus,
    /// Its status before.
    pub was: TaskStatus,
    /// Who had claimed it, if anyone (their completion is now refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// The workflow the task is a node of (the service moves it on); not part of the
    /// answer.
    #[serde(skip)]
    #[schemars(skip)]
    pub workflow_id: Option<String>,
}

/// A task as an override finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    pub status: TaskStatus,
    pub claimed_by: Option<String>,
    pub workflow_id: Option<String>,
}

impl TaskOverrideResult {
    fn of(task_id: &str, status: TaskStatus, was: TaskState) -> Self {
        TaskOverrideResult {
            success: true,
            task_id: task_id.to_string(),
            status,
            was: was.status,
            claimed_by: was.claimed_by,
            workflow_id: was.workflow_id,
        }
    }

    pub fn cancelled(task_id: &str, was: TaskState) -> Self {
        TaskOverrideResult::of(task_id, TaskStatus::Cancelled, was)
    }

    pub fn requeued(task_id: &str, was: TaskState) -> Self {
        TaskOverrideResult::of(task_id, TaskStatus::Pending, was)
    }
}

pub fn validate_cancel(req: CancelTaskRequest, by: &str) -> CoordResult<Cancellation> {
    let task_id = parse_task_id("task_id", &req.task_id)?;
    let reason = validate::optional_text("reason", req.reason, MAX_REASON)?;
    Ok(Cancellation {
        task_id,
        note: match reason {
            Some(r) => format!("cancelled by {by}: {r}"),
            None => format!("cancelled by {by}"),
        },
    })
}

/// The lock's key, named as its holder named it; the reason only bounded (it is kept in
/// the audit row, as asked).
pub fn validate_break(req: BreakLockRequest, repo_root: Option<&str>) -> CoordResult<String> {
    validate::optional_text("reason", req.reason, MAX_REASON)?;
    Ok(LockTarget::parse(&req.file_path, repo_root)?.into_key())
}

pub fn validate_requeue(req: RequeueTaskRequest) -> CoordResult<String> {
    parse_task_id("task_id", &req.task_id)
}

/// Whether a task in `stored` state (`None`: no such task) may be cancelled: only one that
/// has not ended. Answers the state it was in.
pub fn decide_cancel(task_id: &str, stored: Option<TaskState>) -> CoordResult<TaskState> {
    match stored {
        None => Err(task_not_found(task_id)),
        Some(t) if matches!(t.status, TaskStatus::Pending | TaskStatus::Claimed) => Ok(t),
        Some(TaskState { status: s, .. }) => Err(CoordError::new(
            ErrorCode::TaskEnded,
            format!("task {task_id} has already ended ({})", s.as_str()),
        )
        .with_detail("task_id", task_id)
        .with_detail("status", s.as_str())),
    }
}

/// Whether a task in `stored` state may go back to the queue: only a claimed one (its
/// claim dropped; the attempt it used still counts, and one at its last attempt gets
/// one more: a person decided so). Answers the state it was in.
pub fn decide_requeue(task_id: &str, stored: Option<TaskState>) -> CoordResult<TaskState> {
    match stored {
        None => Err(task_not_found(task_id)),
        Some(t) if t.status == TaskStatus::Claimed => Ok(t),
        Some(TaskState { status: s, .. }) => Err(CoordError::new(
            ErrorCode::TaskNotClaimed,
            format!(
                "task {task_id} is {}, not claimed: only a claim goes back to the queue",
                s.as_str()
            ),
        )
        .with_detail("task_id", task_id)
        .with_detail("status", s.as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    const ID: &str = "5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a";

    #[test]
    fn only_a_live_lock_is_released() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let lock = |minutes: i64| LockInfo {
            file_path: "a.rs".into(),
            locked_by: "alice".into(),
            agent_type: "claude_code".into(),
            session_id: None,
            reason: None,
            locked_at: now - chrono::Duration::minutes(5),
            expires_at: now + chrono::Duration::minutes(minutes),
            fencing_token: 7,
        };
        let r = decide_break(Some(&lock(10)), "a.rs", now).unwrap();
        assert_eq!((r.locked_by.as_str(), r.fencing_token, r.released), ("alice", 7, true));
        for stored in [Some(lock(-1)), Some(lock(0)), None] {
            assert_eq!(
                decide_break(stored.as_ref(), "a.rs", now).unwrap_err().code,
                ErrorCode::LockNotHeld
            );
        }
    }

    #[test]
    fn what_may_be_cancelled_or_requeued() {
        use TaskStatus::*;
        #[rustfmt::skip]
        let cases: &[(Option<TaskStatus>, Option<ErrorCode>, Option<ErrorCode>)] = &[
            // stored,        cancel,                          requeue
            (None,            Some(ErrorCode::TaskNotFound),   Some(ErrorCode::TaskNotFound)),
            (Some(Pending),   None,                            Some(ErrorCode::TaskNotClaimed)),
            (Some(Claimed),   None,                            None),
            (Some(Completed), Some(ErrorCode::TaskEnded),      Some(ErrorCode::TaskNotClaimed)),
            (Some(Failed),    Some(ErrorCode::TaskEnded),      Some(ErrorCode::TaskNotClaimed)),
            (Some(Cancelled), Some(ErrorCode::TaskEnded),      Some(ErrorCode::TaskNotClaimed)),
        ];
        let state = |status: TaskStatus| TaskState {
            status,
            claimed_by: None,
            workflow_id: None,
        };
        for (stored, cancel, requeue) in cases {
            let stored = stored.map(state);
            assert_eq!(
                decide_cancel(ID, stored.clone()).err().map(|e| e.code),
                *cancel,
                "{stored:?}"
            );
            assert_eq!(
                decide_requeue(ID, stored.clone()).err().map(|e| e.code),
                *requeue,
                "{stored:?}"
            );
        }
    }

    #[test]
    fn a_cancellation_says_who_and_why() {
        let req = |reason: Option<&str>| CancelTaskRequest {
            task_id: ID.to_uppercase(),
            reason: reason.map(String::from),
        };
        let c = validate_cancel(req(Some("superseded")), "ops-lead").unwrap();
        assert_eq!(
            (c.task_id.as_str(), c.note.as_str()),
            (ID, "cancelled by ops-lead: superseded")
        );
        assert_eq!(
            validate_cancel(req(None), "ops-lead").unwrap().note,
            "cancelled by ops-lead"
        );
        let long = "x".repeat(MAX_REASON + 1);
        assert_eq!(
            validate_cancel(req(Some(&long)), "p").unwrap_err().field.as_deref(),
            Some("reason")
        );
        let long_reason = BreakLockRequest {
            file_path: "src/a.rs".into(),
            reason: Some(long.clone()),
        };
        assert_eq!(
            validate_break(long_reason, None).unwrap_err().field.as_deref(),
            Some("reason")
        );
        let req = BreakLockRequest {
            file_path: "./src//a.rs".into(),
            reason: None,
        };
        assert_eq!(validate_break(req, None).unwrap(), "src/a.rs");
        let bad = RequeueTaskRequest { task_id: "nope".into() };
        assert_eq!(validate_requeue(bad).unwrap_err().code, ErrorCode::InvalidTaskId);
    }
}
