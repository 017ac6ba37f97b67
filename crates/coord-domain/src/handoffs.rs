//! Handoff documents: what a session leaves for the next one.

use crate::error::{CoordResult, ErrorCode};
use crate::time::Timestamp;
use crate::validate::{self, MAX_LIST_ITEMS, MAX_LONG_TEXT, MAX_SHORT_TEXT, MAX_TEXT};
use serde::{Deserialize, Serialize};

pub const DEFAULT_READ_LIMIT: i64 = 1;
pub const MAX_READ_LIMIT: i64 = 100;
/// `agent_name` value that reads every agent's handoffs.
pub const ALL_AGENTS: &str = "*";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteHandoffRequest {
    /// What was accomplished and where things stand (required).
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    pub summary: String,
    #[serde(default)]
    pub completed_work: Option<Vec<String>>,
    #[serde(default)]
    pub in_progress: Option<Vec<String>>,
    #[serde(default)]
    pub decisions: Option<Vec<String>>,
    #[serde(default)]
    pub next_steps: Option<Vec<String>>,
    #[serde(default)]
    pub relevant_files: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadHandoffRequest {
    /// Whose handoffs: the calling agent's when absent, every agent's with `"*"`.
    #[serde(default)]
    pub agent_name: Option<String>,
    /// How many, newest first; default 1, at most 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewHandoff {
    pub handoff_id: String,
    pub summary: String,
    pub completed_work: Vec<String>,
    pub in_progress: Vec<String>,
    pub decisions: Vec<String>,
    pub next_steps: Vec<String>,
    pub relevant_files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteHandoffResult {
    pub success: bool,
    pub handoff_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Handoff {
    pub id: String,
    pub agent_name: String,
    pub agent_type: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub summary: String,
    pub completed_work: Vec<String>,
    pub in_progress: Vec<String>,
    pub decisions: Vec<String>,
    pub next_steps: Vec<String>,
    pub relevant_files: Vec<String>,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadHandoffResult {
    pub handoffs: Vec<Handoff>,
}

/// `None` agent means every agent.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffQuery {
    pub agent_name: Option<String>,
    pub limit: i64,
}

pub fn validate_handoff(req: WriteHandoffRequest, handoff_id: String) -> CoordResult<NewHandoff> {
    let list = |field: &str, v: Option<Vec<String>>| validate::text_list(field, v, MAX_LIST_ITEMS, MAX_TEXT);
    Ok(NewHandoff {
        handoff_id,
        summary: validate::required_text("summary", &req.summary, MAX_LONG_TEXT)?,
        completed_work: list("completed_work", req.completed_work)?,
        in_progress: list("in_progress", req.in_progress)?,
        decisions: list("decisions", req.decisions)?,
        next_steps: list("next_steps", req.next_steps)?,
        relevant_files: list("relevant_files", req.relevant_files)?,
    })
}

pub fn validate_read(req: ReadHandoffRequest, caller_agent_id: &str) -> CoordResult<HandoffQuery> {
    let limit = validate::int_in_range(
        "limit",
        req.limit,
        DEFAULT_READ_LIMIT,
        1,
        MAX_READ_LIMIT,
        ErrorCode::InvalidArgument,
    )?;
    let agent_name = match validate::optional_text("agent_name", req.agent_name, MAX_SHORT_TEXT)? {
        None => Some(caller_agent_id.to_string()),
        Some(a) if a.trim() == ALL_AGENTS => None,
        Some(a) => Some(a.trim().to_string()),
    };
    Ok(HandoffQuery { agent_name, limit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_defaults_to_the_caller() {
        let q = validate_read(ReadHandoffRequest::default(), "me").unwrap();
        assert_eq!(
            q,
            HandoffQuery {
                agent_name: Some("me".into()),
                limit: 1
            }
        );
        let q = validate_read(
            ReadHandoffRequest {
                agent_name: Some("*".into()),
                limit: Some(5),
            },
            "me",
        )
        .unwrap();
        assert_eq!(
            q,
            HandoffQuery {
                agent_name: None,
                limit: 5
            }
        );
        assert!(
            validate_read(
                ReadHandoffRequest {
                    agent_name: None,
                    limit: Some(0)
                },
                "me"
            )
            .is_err()
        );
        assert!(
            validate_read(
                ReadHandoffRequest {
                    agent_name: None,
                    limit: Some(101)
                },
                "me"
            )
            .is_err()
        );
    }

    #[test]
    fn summary_is_required() {
        let e = validate_handoff(WriteHandoffRequest::default(), "h".into()).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("summary"));
    }
}
