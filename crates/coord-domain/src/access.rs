//! Who may run which operation: the access class an operation declares, the credential
//! a door authenticated, and [`authorize`], the one rule that joins them. Doors only
//! authenticate (which key, if any); the service's pipeline authorizes every operation
//! with this function, so HTTP, MCP, the CLI and hooks cannot disagree.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::Caller;
use crate::keys::KeyOrigin;
use serde::Serialize;

/// What an operation needs from its caller's credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Lock status reads: anyone who reaches the server, including callers without a
    /// key (a server may still demand keys for every request; that is authentication).
    Read,
    /// Acting as an agent: needs a key over HTTP (tasks carry payloads, handoffs carry
    /// plans), or a local process.
    Agent,
    /// Managing credentials: only an operator key or a local process.
    Operator,
}

/// What an operation does to coordination state: read-only, a change, or a change that
/// destroys other agents' work or state. MCP clients see it as tool annotations;
/// guardrails and approvals will key on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    Write,
    Destructive,
}

/// How the caller proved who it is, as a door established it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// A process on this machine with the database in reach (CLI, hooks, `coord mcp`
    /// over stdio): it could open the database itself, so it may do anything.
    Local,
    /// No key (HTTP or `/mcp` without one).
    Anonymous,
    /// An operator key (`COORDINATION_API_KEYS`): acts as whoever the request names.
    Operator,
    /// A key bound to one identity (environment binding or managed key).
    Bound,
    /// A process on this machine inside an agent's session (run by Claude Code's, Codex's
    /// or Aider's tools, or under `coord sandbox run`; its environment and its process
    /// ancestry say so): the agent's own work, never a person's decision. It may act as an
    /// agent, but not decide approvals, change profiles, policies or rules, manage keys
    /// or prune the audit trail (`person_required`), and not borrow another identity
    /// (the CLI refuses `--agent-id` there).
    Session,
}

/// The caller of one operation: the identity it acts as and how that was established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub caller: Caller,
    pub credential: Credential,
    /// The managed key (and the cloud session or task it was issued for) the request
    /// came with, recorded in its audit row.
    pub origin: Option<KeyOrigin>,
}

impl Principal {
    pub fn new(caller: Caller, credential: Credential) -> Self {
        Principal {
            caller,
            credential,
            origin: None,
        }
    }

    pub fn with_origin(mut self, origin: Option<KeyOrigin>) -> Self {
        self.origin = origin;
        self
    }

    /// A local process acting as `caller`.
    pub fn local(caller: Caller) -> Self {
        Principal::new(caller, Credential::Local)
    }
}

/// The refusal of a decision only a person may make (approvals, profiles, policies,
/// rules, keys, the audit trail's pruning) to a process inside an agent's session. It
/// says where a person makes it, not how an agent could.
pub fn person_required(what: &str) -> CoordError {
    CoordError::new(
        ErrorCode::PersonRequired,
        format!(
            "{what} is a person's decision and cannot be made from inside an agent's session: a person makes it \
             in the dashboard or in a terminal of their own"
        ),
    )
}

/// Whether `credential` may run an operation that needs `need`. Anonymous callers get
/// `unauthorized` (a key would help); bound keys asking for operator work get
/// `forbidden` (no key of theirs would); a process inside an agent's session gets
/// `person_required`.
pub fn authorize(credential: Credential, need: Access) -> CoordResult<()> {
    use Access as A;
    use Credential as C;
    match (credential, need) {
        (C::Local | C::Operator, _) | (C::Bound | C::Session, A::Read | A::Agent) | (C::Anonymous, A::Read) => Ok(()),
        (C::Session, A::Operator) => Err(person_required("managing credentials")),
        (C::Anonymous, A::Agent | A::Operator) => Err(CoordError::new(
            ErrorCode::Unauthorized,
            "an API key is required: send X-API-Key or Authorization: Bearer",
        )),
        (C::Bound, A::Operator) => Err(CoordError::new(
            ErrorCode::Forbidden,
            "this operation needs an operator key (one listed in COORDINATION_API_KEYS)",
        )),
    }
}

/// Whether `credential` may run `operation`, of access class `access`, whose profile
/// need is `administrative` or not: [`authorize`], and no person's decision from inside an
/// agent's session. (The profile decides the rest.)
pub fn admit(credential: Credential, access: Access, administrative: bool, operation: &str) -> CoordResult<()> {
    authorize(credential, access)?;
    if credential == Credential::Session && administrative {
        return Err(person_required(operation));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_matrix() {
        use Access::{Agent, Read};
        use Credential::{Anonymous, Bound, Local, Session};
        const OP: Access = Access::Operator;
        const OPERATOR: Credential = Credential::Operator;
        // (credential, need, expected: None = allowed, Some(code) = refused)
        let cases = [
            (Local, Read, None),
            (Local, Agent, None),
            (Local, OP, None),
            (OPERATOR, Read, None),
            (OPERATOR, Agent, None),
            (OPERATOR, OP, None),
            (Bound, Read, None),
            (Bound, Agent, None),
            (Bound, OP, Some(ErrorCode::Forbidden)),
            (Anonymous, Read, None),
            (Anonymous, Agent, Some(ErrorCode::Unauthorized)),
            (Anonymous, OP, Some(ErrorCode::Unauthorized)),
            (Session, Read, None),
            (Session, Agent, None),
            (Session, OP, Some(ErrorCode::PersonRequired)),
        ];
        for (credential, need, want) in cases {
            let got = authorize(credential, need).err().map(|e| e.code);
            assert_eq!(got, want, "{credential:?} needing {need:?}");
        }
    }
}
