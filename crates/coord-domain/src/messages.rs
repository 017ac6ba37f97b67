//! Messages between agents: one sender, recipients named directly or as the holders of
//! a locked path, each recipient with its own read and acknowledged marks.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::{Caller, Identity};
use crate::target::LockTarget;
use crate::time::Timestamp;
use crate::validate::{self, MAX_SHORT_TEXT, MAX_TEXT};
use serde::{Deserialize, Serialize};

/// How much attention a message asks for; `urgent` ones are surfaced to Claude Code
/// sessions by the coordinator's hooks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Importance {
    Low,
    #[default]
    Normal,
    High,
    Urgent,
}

impl Importance {
    pub fn as_str(self) -> &'static str {
        match self {
            Importance::Low => "low",
            Importance::Normal => "normal",
            Importance::High => "high",
            Importance::Urgent => "urgent",
        }
    }

    pub fn parse(s: &str) -> Option<Importance> {
        Some(match s {
            "low" => Importance::Low,
            "normal" => Importance::Normal,
            "high" => Importance::High,
            "urgent" => Importance::Urgent,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageRequest {
    /// An agent id; `holders:<path>` for every other agent holding a live lock that covers
    /// that file, directory or glob; or `team:<name>` for every other live member of a team.
    #[schemars(length(min = 1, max = 4096))]
    pub to: String,
    /// One line (at most 256 characters).
    #[schemars(length(min = 1, max = 256))]
    pub subject: String,
    /// The message (at most 16 KiB).
    #[schemars(length(min = 1, max = 16384))]
    pub body: String,
    /// Reply in this thread (the `thread_id` of an earlier message, or a unique prefix of
    /// it among your threads, at least 4 characters); a new thread when absent.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// low, normal (default), high or urgent.
    #[serde(default)]
    pub importance: Option<Importance>,
}

/// Who a message goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipients {
    Agent(String),
    /// The agents holding a live lock that overlaps this file, directory or glob, the
    /// sender excepted.
    Holders(LockTarget),
    /// The members of this team that are not disconnected (active or idle: an idle agent
    /// reads its mail when it comes back), the sender excepted.
    Team(String),
}

/// A validated message, ready for a store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub message_id: String,
    pub thread_id: String,
    pub to: Recipients,
    pub subject: String,
    pub body: String,
    pub importance: Importance,
}

pub const HOLDERS_PREFIX: &str = "holders:";
pub const TEAM_PREFIX: &str = "team:";

fn message_uuid(field: &str, raw: &str) -> CoordResult<String> {
    uuid::Uuid::parse_str(raw.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                field,
                format!(
                    "{field} {:?} is not a message or thread id (a UUID, or a unique prefix of one: at least 4 of its characters)",
                    raw.chars().take(80).collect::<String>()
                ),
            )
        })
}

pub fn validate_send(req: SendMessageRequest, message_id: String, repo_root: Option<&str>) -> CoordResult<NewMessage> {
    let to = req.to.trim();
    let to = match (to.strip_prefix(HOLDERS_PREFIX), to.strip_prefix(TEAM_PREFIX)) {
        (Some(path), _) => Recipients::Holders(LockTarget::parse(path, repo_root).map_err(|e| e.with_field("to"))?),
        (_, Some(team)) => Recipients::Team(crate::sessions::validate_team("to", team)?),
        _ => {
            let who = Caller::new(to, "agent")
                .validate()
                .map_err(|e| CoordError::field(ErrorCode::InvalidArgument, "to", format!("to: {}", e.message)))?;
            Recipients::Agent(who.agent_id)
        }
    };
    let thread_id = match req.thread_id {
        Some(t) => message_uuid("thread_id", &t)?,
        None => message_id.clone(),
    };
    Ok(NewMessage {
        thread_id,
        message_id,
        to,
        subject: validate::required_text("subject", &req.subject, MAX_SHORT_TEXT)?,
        body: validate::required_text("body", &req.body, MAX_TEXT)?,
        importance: req.importance.unwrap_or_default(),
    })
}

/// The recipients a message reaches: the named agent, or the holders or team members
/// found (`found`), less the sender; none is a refusal (nothing would be delivered).
pub fn decide_recipients(sender: &Identity, to: &Recipients, found: Vec<String>) -> CoordResult<Vec<String>> {
    let mut recipients = match to {
        Recipients::Agent(id) => vec![id.clone()],
        Recipients::Holders(_) | Recipients::Team(_) => found.into_iter().filter(|h| *h != sender.agent_id).collect(),
    };
    recipients.sort();
    recipients.dedup();
    if recipients.is_empty() {
        let named = match to {
            Recipients::Holders(target) => format!("{HOLDERS_PREFIX}{}", target.key()),
            Recipients::Team(team) => format!("{TEAM_PREFIX}{team}"),
            Recipients::Agent(id) => id.clone(),
        };
        let why = match to {
            Recipients::Team(_) => "no other agent that is not disconnected is in that team",
            _ => "nobody else holds a live lock there",
        };
        return Err(CoordError::new(
            ErrorCode::NoRecipients,
            format!("{why} ({named}): the message would reach nobody"),
        )
        .with_detail("to", named));
    }
    Ok(recipients)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendMessageResult {
    pub success: bool,
    pub message_id: String,
    pub thread_id: String,
    /// The agent ids it was delivered to.
    pub recipients: Vec<String>,
}

/// A message as one recipient sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    pub message_id: String,
    pub thread_id: String,
    pub from: String,
    pub from_type: String,
    pub to: String,
    pub subject: String,
    pub body: String,
    pub importance: Importance,
    pub created_at: Timestamp,
    pub read_at: Option<Timestamp>,
    pub acked_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InboxRequest {
    /// Only messages not read yet (default false).
    #[serde(default)]
    pub unread_only: Option<bool>,
    /// At most this many, newest first (1-200, default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InboxQuery {
    pub unread_only: bool,
    pub limit: i64,
}

pub fn validate_inbox(req: InboxRequest) -> CoordResult<InboxQuery> {
    Ok(InboxQuery {
        unread_only: req.unread_only.unwrap_or(false),
        limit: validate::int_in_range("limit", req.limit, 20, 1, 200, ErrorCode::InvalidArgument)?,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InboxResult {
    pub success: bool,
    /// Newest first.
    pub messages: Vec<Message>,
    /// How many of your messages are unread in all.
    pub unread: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageIdRequest {
    /// The message's id (from `inbox`), or a unique prefix of it among your inbox's
    /// messages (at least 4 characters).
    pub message_id: String,
}

pub fn validate_message_id(req: MessageIdRequest) -> CoordResult<String> {
    message_uuid("message_id", &req.message_id)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageResult {
    pub success: bool,
    pub message: Message,
}

/// The refusal for a message that is not in the caller's inbox (whether it exists for
/// someone else is not told).
pub fn message_not_found(message_id: &str) -> CoordError {
    CoordError::new(ErrorCode::NotFound, format!("no message {message_id} in your inbox"))
        .with_detail("message_id", message_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(to: &str) -> SendMessageRequest {
        SendMessageRequest {
            to: to.into(),
            subject: "s".into(),
            body: "b".into(),
            ..Default::default()
        }
    }

    fn holders(path: &str) -> Recipients {
        Recipients::Holders(LockTarget::parse(path, None).unwrap())
    }

    #[test]
    fn recipients_and_validation() {
        let id = "7b7c2a4e-0000-4000-8000-000000000001".to_string();
        let cases: Vec<(SendMessageRequest, Result<Recipients, &str>)> = vec![
            (send("bob"), Ok(Recipients::Agent("bob".into()))),
            (send(" bob "), Ok(Recipients::Agent("bob".into()))),
            (send("holders:./src//a.rs"), Ok(holders("src/a.rs"))),
            (send("holders:/repo/src/a.rs"), Ok(holders("src/a.rs"))),
            (send("holders:src/auth/**"), Ok(holders("src/auth/"))),
            (send("holders:src/{a,b/c}"), Err("to")),
            (send("team:backend"), Ok(Recipients::Team("backend".into()))),
            (send(" team: backend "), Ok(Recipients::Team("backend".into()))),
            (send("team:"), Err("to")),
            (send("team:no spaces"), Err("to")),
            (send("holders:../x"), Err("to")),
            (send(""), Err("to")),
            (
                SendMessageRequest {
                    subject: "".into(),
                    ..send("bob")
                },
                Err("subject"),
            ),
            (
                SendMessageRequest {
                    body: "x".repeat(MAX_TEXT + 1),
                    ..send("bob")
                },
                Err("body"),
            ),
            (
                SendMessageRequest {
                    thread_id: Some("nope".into()),
                    ..send("bob")
                },
                Err("thread_id"),
            ),
        ];
        for (req, want) in cases {
            let got = validate_send(req.clone(), id.clone(), Some("/repo"));
            match (got, want) {
                (Ok(m), Ok(to)) => {
                    assert_eq!(m.to, to);
                    assert_eq!(m.thread_id, id, "a new thread is named after its first message");
                }
                (Err(e), Err(field)) => assert_eq!(e.field.as_deref(), Some(field), "{req:?}: {e:?}"),
                (got, want) => panic!("{req:?}: {got:?} vs {want:?}"),
            }
        }
        let me = Identity {
            agent_id: "me".into(),
            agent_type: "t".into(),
        };
        let holders = holders("a.rs");
        assert_eq!(
            decide_recipients(&me, &holders, vec!["me".into(), "b".into(), "b".into()]).unwrap(),
            ["b"]
        );
        assert_eq!(
            decide_recipients(&me, &holders, vec!["me".into()]).unwrap_err().code,
            ErrorCode::NoRecipients
        );
        assert_eq!(
            decide_recipients(&me, &Recipients::Agent("me".into()), vec![]).unwrap(),
            ["me"]
        );
    }
}
