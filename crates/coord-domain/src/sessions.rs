//! Agent sessions: registration, heartbeats, discovery and dead-agent cleanup.
//!
//! One row per agent id holds that agent's current session. `register_session` starts
//! a new session (new `session_id`); `heartbeat` keeps it alive and also extends the
//! leases of the tasks the agent has claimed, so a live agent never loses its work to
//! lease expiry while a dead one does.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::time::Timestamp;
use crate::validate::{self, MAX_LIST_ITEMS, MAX_SHORT_TEXT, MAX_TEXT};
use serde::{Deserialize, Serialize};

pub const DEFAULT_STALE_MINUTES: i64 = 15;
pub const MAX_STALE_MINUTES: i64 = 7 * 24 * 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Active,
    Idle,
    Disconnected,
}

impl AgentStatus {
    pub const ALL: [AgentStatus; 3] = [AgentStatus::Active, AgentStatus::Idle, AgentStatus::Disconnected];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Idle => "idle",
            AgentStatus::Disconnected => "disconnected",
        }
    }

    pub fn parse(s: &str) -> Option<AgentStatus> {
        AgentStatus::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

impl std::fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterSessionRequest {
    /// What this agent can do, e.g. `["coding", "testing"]`; others discover it by these.
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
    /// What the agent is working on now.
    #[serde(default)]
    pub current_task: Option<String>,
    /// The team this agent works in (letters, digits, `.`, `_`, `-`; at most 64): a
    /// message to `team:<name>` reaches every live member.
    #[serde(default)]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub team: Option<String>,
    /// The worktree the agent works in (its root directory), so others can see which
    /// checkout of the repository it is in; `coord mcp` and the CLI send it themselves.
    #[serde(default)]
    #[schemars(length(min = 1, max = 4096))]
    pub worktree: Option<String>,
    /// The branch checked out there.
    #[serde(default)]
    #[schemars(length(min = 1, max = 256))]
    pub branch: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverAgentsRequest {
    #[serde(default)]
    pub capability: Option<String>,
    /// `active`, `idle` or `disconnected`; every status when absent.
    #[serde(default)]
    pub status: Option<AgentStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupDeadAgentsRequest {
    /// Minutes without a heartbeat after which an agent counts as dead; default 15.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10080))]
    pub stale_threshold_minutes: Option<i64>,
    /// Also these sessions (ids), whatever their last heartbeat: e.g. the process that
    /// served them is gone. A session that is no longer its agent's current one (the
    /// agent registered again) is left alone. At most 1000.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub sessions: Option<Vec<String>>,
}

/// What `cleanup_dead_agents` disconnects: agents silent for `stale_minutes`, and the
/// listed sessions (normalised UUIDs).
#[derive(Debug, Clone, PartialEq)]
pub struct Cleanup {
    pub stale_minutes: i64,
    pub sessions: Vec<String>,
    /// Whether a listed session that is alive (heartbeat within `stale_minutes`) of
    /// another agent may be disconnected: only by a caller who administers the
    /// coordinator ([`may_disconnect_live`]); anyone else is refused with
    /// `session_alive` rather than evicting a working agent.
    pub live_allowed: bool,
}

/// Whether a caller with `credential` may disconnect another agent's live session, or
/// set a stale threshold below [`DEFAULT_STALE_MINUTES`]: an operator key, or a process
/// on this machine (the reaper of killed `coord mcp` processes; it could open the
/// database itself). A key bound to one agent may only clean up what is really stale.
pub fn may_disconnect_live(credential: crate::access::Credential) -> bool {
    use crate::access::Credential;
    matches!(credential, Credential::Operator | Credential::Local)
}

/// The cleanup `req` asks for, for a caller with `credential`: a caller who may not
/// disconnect live sessions may not call a session stale sooner than the default
/// threshold either (live connections heartbeat every 5 minutes).
pub fn authorize_cleanup(mut cleanup: Cleanup, credential: crate::access::Credential) -> CoordResult<Cleanup> {
    cleanup.live_allowed = may_disconnect_live(credential);
    if !cleanup.live_allowed && cleanup.stale_minutes < DEFAULT_STALE_MINUTES {
        return Err(CoordError::field(
            ErrorCode::Forbidden,
            "stale_threshold_minutes",
            format!(
                "an agent key may call a session stale after {DEFAULT_STALE_MINUTES} minutes without a heartbeat \
                 at the soonest (live agents heartbeat every 5); an operator may choose less"
            ),
        )
        .with_detail("min", DEFAULT_STALE_MINUTES));
    }
    Ok(cleanup)
}

/// `found` as `caller` may see it: other agents' session ids only for a caller who may
/// disconnect live sessions.
pub fn visible_to(
    mut found: DiscoverAgentsResult,
    caller: &str,
    credential: crate::access::Credential,
) -> DiscoverAgentsResult {
    if !may_disconnect_live(credential) {
        for a in found.agents.iter_mut().filter(|a| a.agent_id != caller) {
            a.session_id = None;
        }
    }
    found
}

/// The refusal of a cleanup listing `session_id`, `agent_id`'s live session, by a caller
/// who may not disconnect live sessions.
pub fn session_alive(session_id: &str, agent_id: &str) -> CoordError {
    CoordError::field(
        ErrorCode::SessionAlive,
        "sessions",
        format!(
            "session {session_id} of {agent_id} is alive (it heartbeat within the threshold): only an operator may \
             disconnect a live session; a stale one is cleaned up without naming it"
        ),
    )
    .with_detail("session_id", session_id)
    .with_detail("agent_id", agent_id)
}

pub fn validate_cleanup(req: CleanupDeadAgentsRequest) -> CoordResult<Cleanup> {
    let raw = req.sessions.unwrap_or_default();
    if raw.len() > MAX_CLEANUP_SESSIONS {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "sessions",
            format!("at most {MAX_CLEANUP_SESSIONS} sessions"),
        ));
    }
    let sessions = raw
        .iter()
        .map(|s| {
            uuid::Uuid::parse_str(s.trim())
                .map(|u| u.hyphenated().to_string())
                .map_err(|_| {
                    CoordError::field(
                        ErrorCode::InvalidArgument,
                        "sessions",
                        format!("{:?} is not a session id", s.chars().take(80).collect::<String>()),
                    )
                })
        })
        .collect::<CoordResult<Vec<_>>>()?;
    Ok(Cleanup {
        stale_minutes: validate_stale_threshold(req.stale_threshold_minutes)?,
        sessions,
        live_allowed: false,
    })
}

pub const MAX_CLEANUP_SESSIONS: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    pub session_id: String,
    pub capabilities: Vec<String>,
    pub current_task: Option<String>,
    pub team: Option<String>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionResult {
    pub success: bool,
    pub session_id: String,
}

impl SessionResult {
    pub fn of(session_id: impl Into<String>) -> Self {
        SessionResult {
            success: true,
            session_id: session_id.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentInfo {
    pub agent_id: String,
    pub agent_type: String,
    /// The agent's current session: shown to the agent itself and to callers who may
    /// disconnect live sessions ([`may_disconnect_live`]); left out for other agents'
    /// keys, which have no use for it but naming it in a cleanup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub capabilities: Vec<String>,
    pub status: AgentStatus,
    #[serde(default)]
    pub current_task: Option<String>,
    /// The team it registered in, if any.
    #[serde(default)]
    pub team: Option<String>,
    pub last_heartbeat: Timestamp,
    pub started_at: Timestamp,
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
    /// Its violation counter: destructive operations the guardrails blocked for it.
    #[serde(default)]
    pub guardrail_violations: i64,
    /// The worktree it works in (its root), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The branch checked out there, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiscoverAgentsResult {
    pub agents: Vec<AgentInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CleanupResult {
    pub success: bool,
    /// Number of agents marked `disconnected`.
    pub agents_cleaned: i64,
    pub agents: Vec<String>,
    pub locks_released: i64,
    pub tasks_requeued: i64,
    /// Claimed tasks that had used their last attempt and failed instead.
    pub tasks_failed: i64,
}

impl CleanupResult {
    /// A cleanup that found no stale agent.
    pub fn nothing_stale() -> Self {
        CleanupResult {
            success: true,
            agents_cleaned: 0,
            agents: Vec::new(),
            locks_released: 0,
            tasks_requeued: 0,
            tasks_failed: 0,
        }
    }
}

pub fn validate_registration(req: RegisterSessionRequest, session_id: String) -> CoordResult<NewSession> {
    Ok(NewSession {
        session_id,
        capabilities: validate::text_list("capabilities", req.capabilities, MAX_LIST_ITEMS, MAX_SHORT_TEXT)?,
        current_task: validate::optional_text("current_task", req.current_task, MAX_TEXT)?,
        team: req.team.map(|t| validate_team("team", &t)).transpose()?,
        worktree: validate::optional_text("worktree", req.worktree, 4096)?,
        branch: validate::optional_text("branch", req.branch, 256)?,
    })
}

pub const MAX_TEAM_LEN: usize = 64;

/// A team name: 1 to 64 letters, digits, `.`, `_` or `-` (trimmed).
pub fn validate_team(field: &str, raw: &str) -> CoordResult<String> {
    let name = raw.trim();
    let ok = !name.is_empty()
        && name.len() <= MAX_TEAM_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(CoordError::field(
            ErrorCode::InvalidArgument,
            field,
            format!(
                "team {:?}: use 1 to {MAX_TEAM_LEN} letters, digits, '.', '_' or '-'",
                raw.chars().take(80).collect::<String>()
            ),
        ))
    }
}

pub fn validate_stale_threshold(m: Option<i64>) -> CoordResult<i64> {
    validate::int_in_range(
        "stale_threshold_minutes",
        m,
        DEFAULT_STALE_MINUTES,
        1,
        MAX_STALE_MINUTES,
        ErrorCode::InvalidArgument,
    )
}

pub fn validate_capability(c: Option<String>) -> CoordResult<Option<String>> {
    validate::optional_text("capability", c, MAX_SHORT_TEXT)
}

/// The refusal for an agent without a live (not disconnected) session.
pub fn no_live_session(agent_id: &str) -> crate::CoordError {
    crate::CoordError::new(
        ErrorCode::NotFound,
        format!("{agent_id} has no live session; register first"),
    )
    .with_detail("agent_id", agent_id)
}

/// `end_session`: what ending a session means, decided once for every door (the Claude
/// Code `SessionEnd` hook, an MCP connection closing, a person at the CLI).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSessionRequest {
    /// Release every lock you hold (default true).
    #[serde(default)]
    pub release_locks: Option<bool>,
    /// Leave a final handoff. The files whose locks were released are added to its
    /// relevant_files, and the tasks you still have claimed to its in_progress.
    #[serde(default)]
    pub handoff: Option<crate::handoffs::WriteHandoffRequest>,
    /// Give the tasks you have claimed back to the queue, each attempt counted (a task
    /// out of attempts fails). Default false.
    #[serde(default)]
    pub requeue_tasks: Option<bool>,
    /// End only if your current session is this one (a process ending after a grace
    /// period must not end the session a reconnect started meanwhile).
    #[serde(default)]
    pub if_session: Option<String>,
}

/// A validated `end_session`.
#[derive(Debug, Clone, PartialEq)]
pub struct EndSession {
    pub release_locks: bool,
    pub handoff: Option<crate::handoffs::NewHandoff>,
    pub requeue_tasks: bool,
    pub if_session: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EndSessionResult {
    pub success: bool,
    /// False when `if_session` named a session that is no longer yours: nothing changed.
    pub ended: bool,
    /// Paths whose live locks were released.
    pub released: Vec<String>,
    /// Claimed tasks given back to the queue, and those that failed for lack of attempts.
    pub tasks_requeued: i64,
    pub tasks_failed: i64,
    /// The final handoff, when one was written.
    pub handoff_id: Option<String>,
    /// The session's status now (`idle`), or none when the caller had no live session.
    pub status: Option<AgentStatus>,
    /// The session that ended (pass it as `if_session` to end it again later only if no
    /// new session replaced it).
    pub session_id: Option<String>,
}

pub fn validate_end(req: EndSessionRequest, handoff_id: String) -> CoordResult<EndSession> {
    Ok(EndSession {
        release_locks: req.release_locks.unwrap_or(true),
        handoff: req
            .handoff
            .map(|h| crate::handoffs::validate_handoff(h, handoff_id))
            .transpose()?,
        requeue_tasks: req.requeue_tasks.unwrap_or(false),
        if_session: req
            .if_session
            .map(|s| validate::required_text("if_session", &s, MAX_SHORT_TEXT))
            .transpose()?,
    })
}

/// Why a claim went back to the queue when its claimer's session ended.
pub const REASON_SESSION_ENDED: &str = "the claimer's session ended";

impl EndSessionResult {
    /// The answer of a session that ended: what was released and requeued, the final
    /// handoff, and the session now idle (none when the caller had no live session).
    pub fn ended(
        released: Vec<String>,
        (tasks_requeued, tasks_failed): (i64, i64),
        handoff_id: Option<String>,
        session_id: Option<String>,
    ) -> EndSessionResult {
        EndSessionResult {
            success: true,
            ended: true,
            released,
            tasks_requeued,
            tasks_failed,
            handoff_id,
            status: session_id.as_ref().map(|_| AgentStatus::Idle),
            session_id,
        }
    }

    /// The answer when `if_session` no longer names the caller's session.
    pub fn not_ended() -> EndSessionResult {
        EndSessionResult {
            success: true,
            ended: false,
            released: Vec::new(),
            tasks_requeued: 0,
            tasks_failed: 0,
            handoff_id: None,
            status: None,
            session_id: None,
        }
    }
}

/// Completes a final handoff with what the session leaves behind: released files as
/// relevant files, claimed tasks as work in progress (each list kept within its bound).
pub fn complete_final_handoff(
    h: &mut crate::handoffs::NewHandoff,
    released: &[String],
    claimed: &[crate::queue::TaskInfo],
) {
    fn extend(list: &mut Vec<String>, more: impl Iterator<Item = String>) {
        for item in more {
            if list.len() >= MAX_LIST_ITEMS {
                break;
            }
            if !list.contains(&item) {
                list.push(item);
            }
        }
    }
    extend(&mut h.relevant_files, released.iter().cloned());
    extend(
        &mut h.in_progress,
        claimed.iter().map(|t| {
            let line = format!("task {} [{}]: {}", t.task_id, t.task_type, t.task_description);
            line.chars().take(MAX_TEXT).collect()
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_administrators_disconnect_live_sessions_or_shorten_staleness() {
        use crate::access::Credential::*;
        let cleanup = |m| Cleanup {
            stale_minutes: m,
            sessions: vec![],
            live_allowed: false,
        };
        let cases = [
            (Operator, 1, Ok(true)),
            (Local, 1, Ok(true)),
            (Bound, 15, Ok(false)),
            (Bound, 60, Ok(false)),
            (Bound, 14, Err(ErrorCode::Forbidden)),
            (Anonymous, 1, Err(ErrorCode::Forbidden)),
        ];
        for (credential, minutes, want) in cases {
            let got = authorize_cleanup(cleanup(minutes), credential)
                .map(|c| c.live_allowed)
                .map_err(|e| e.code);
            assert_eq!(got, want, "{credential:?} {minutes}");
        }
    }

    #[test]
    fn other_agents_session_ids_are_for_administrators() {
        use crate::access::Credential::*;
        let info = |id: &str| AgentInfo {
            agent_id: id.into(),
            agent_type: "t".into(),
            session_id: Some(format!("s-{id}")),
            capabilities: vec![],
            status: AgentStatus::Active,
            current_task: None,
            team: None,
            last_heartbeat: Timestamp::default(),
            started_at: Timestamp::default(),
            ended_at: None,
            guardrail_violations: 0,
            worktree: None,
            branch: None,
        };
        let found = || DiscoverAgentsResult {
            agents: vec![info("me"), info("other")],
        };
        let seen = |credential| {
            visible_to(found(), "me", credential)
                .agents
                .into_iter()
                .map(|a| a.session_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(seen(Bound), [Some("s-me".to_string()), None]);
        assert_eq!(seen(Operator), [Some("s-me".to_string()), Some("s-other".to_string())]);
        assert_eq!(seen(Local), [Some("s-me".to_string()), Some("s-other".to_string())]);
    }

    #[test]
    fn thresholds_and_registration() {
        assert_eq!(validate_stale_threshold(None).unwrap(), 15);
        assert!(validate_stale_threshold(Some(0)).is_err());
        let r = validate_registration(
            RegisterSessionRequest {
                capabilities: Some(vec!["".into()]),
                ..Default::default()
            },
            "s".into(),
        );
        assert_eq!(r.unwrap_err().field.as_deref(), Some("capabilities"));
        for (team, ok) in [
            ("backend", Some("backend")),
            (" a.b_c-1 ", Some("a.b_c-1")),
            ("", None),
            ("a b", None),
            ("x/y", None),
        ] {
            let got = validate_team("team", team);
            assert_eq!(got.as_deref().ok(), ok, "{team:?}");
        }
        assert!(validate_team("team", &"t".repeat(65)).is_err());
        assert_eq!(AgentStatus::parse("idle"), Some(AgentStatus::Idle));
        assert_eq!(AgentStatus::parse("gone"), None);
    }
}
