//! Who is calling. Doors hand the service a raw [`Caller`]; the service validates it
//! into an [`Identity`] before anything is stored under that name.

use crate::error::{CoordError, CoordResult, ErrorCode};
use serde::{Deserialize, Serialize};

/// An unvalidated identity as a door received it (flag, env var, API key binding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Caller {
    pub agent_id: String,
    pub agent_type: String,
}

/// A validated identity: trimmed, non-empty, bounded, printable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    pub agent_id: String,
    pub agent_type: String,
}

pub const MAX_AGENT_ID_LEN: usize = 128;
pub const MAX_AGENT_TYPE_LEN: usize = 64;

impl Caller {
    pub fn new(agent_id: impl Into<String>, agent_type: impl Into<String>) -> Self {
        Caller {
            agent_id: agent_id.into(),
            agent_type: agent_type.into(),
        }
    }

    pub fn validate(&self) -> CoordResult<Identity> {
        Ok(Identity {
            agent_id: check_name("agent_id", &self.agent_id, MAX_AGENT_ID_LEN)?,
            agent_type: check_name("agent_type", &self.agent_type, MAX_AGENT_TYPE_LEN)?,
        })
    }

    /// A bounded copy fit for an audit row even when validation failed.
    pub fn for_audit(&self) -> Identity {
        fn clip(s: &str, n: usize) -> String {
            s.chars().filter(|c| !c.is_control()).take(n).collect()
        }
        Identity {
            agent_id: clip(&self.agent_id, MAX_AGENT_ID_LEN),
            agent_type: clip(&self.agent_type, MAX_AGENT_TYPE_LEN),
        }
    }
}

fn check_name(field: &str, raw: &str, max: usize) -> CoordResult<String> {
    let v = raw.trim();
    // Which setting supplies the identity depends on the door (a flag, an environment
    // variable, an API key's binding); the door says so, not the domain.
    let bad = |why: &str| CoordError::field(ErrorCode::InvalidIdentity, field, format!("{field} {why}"));
    if v.is_empty() {
        return Err(bad("is empty"));
    }
    if v.chars().count() > max {
        return Err(bad(&format!("is longer than {max} characters")));
    }
    if v.chars().any(|c| c.is_control()) {
        return Err(bad("contains control characters"));
    }
    Ok(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (agent_id, agent_type, validated pair or the offending field)
    type Case = (
        &'static str,
        &'static str,
        Result<(&'static str, &'static str), &'static str>,
    );

    #[test]
    fn identity_rules() {
        let cases: &[Case] = &[
            ("alice", "claude_code", Ok(("alice", "claude_code"))),
            ("  bob ", " codex ", Ok(("bob", "codex"))),
            ("", "cli", Err("agent_id")),
            ("   ", "cli", Err("agent_id")),
            ("a\nb", "cli", Err("agent_id")),
            ("ok", "", Err("agent_type")),
        ];
        for (id, ty, want) in cases {
            let got = Caller::new(*id, *ty).validate();
            match (got, want) {
                (Ok(i), Ok((wid, wty))) => {
                    assert_eq!((i.agent_id.as_str(), i.agent_type.as_str()), (*wid, *wty))
                }
                (Err(e), Err(field)) => {
                    assert_eq!(e.code, ErrorCode::InvalidIdentity);
                    assert_eq!(e.field.as_deref(), Some(*field));
                }
                (got, want) => panic!("{id:?}/{ty:?}: got {got:?}, want {want:?}"),
            }
        }
        let long = "x".repeat(MAX_AGENT_ID_LEN + 1);
        assert!(Caller::new(long.clone(), "t").validate().is_err());
        assert_eq!(Caller::new(long, "t").for_audit().agent_id.len(), MAX_AGENT_ID_LEN);
    }
}
