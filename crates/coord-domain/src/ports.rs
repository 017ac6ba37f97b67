//! Port blocks for isolated per-session environments (a worktree's database, REST
//! server, realtime server and API). Each session leases one block of
//! `range_per_session` ports starting at `base + index * range_per_session`, of which it
//! uses the first four. Leases expire after `ttl_minutes`; asking again refreshes.
//!
//! This module holds the arithmetic and the lease rules; where the leases are kept (a
//! state file shared by every process on the machine) is the port allocator's business.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::time::Timestamp;
use crate::validate::{self, MAX_SHORT_TEXT};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const DEFAULT_BASE: u32 = 10_000;
pub const DEFAULT_RANGE: u32 = 100;
pub const DEFAULT_TTL_MINUTES: u32 = 120;
pub const DEFAULT_MAX_SESSIONS: u32 = 20;
pub const DEFAULT_MAX_PER_AGENT: u32 = 4;
pub const MIN_BASE: u32 = 1024;
pub const MIN_RANGE: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    pub base: u32,
    pub range_per_session: u32,
    pub ttl_minutes: u32,
    pub max_sessions: u32,
    /// Blocks one agent may hold at once (a caller that administers the machine —
    /// a local process, an operator key — is not counted).
    pub max_per_agent: u32,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            base: DEFAULT_BASE,
            range_per_session: DEFAULT_RANGE,
            ttl_minutes: DEFAULT_TTL_MINUTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_agent: DEFAULT_MAX_PER_AGENT,
        }
    }
}

/// Reads `PORT_ALLOC_BASE`, `PORT_ALLOC_RANGE`, `PORT_ALLOC_TTL_MINUTES` and
/// `PORT_ALLOC_MAX_SESSIONS` through `var`; an invalid value is an error naming the
/// variable and its minimum.
pub fn port_config_from(var: impl Fn(&str) -> Option<String>) -> CoordResult<PortConfig> {
    let read = |name: &str, default: u32, min: u32| -> CoordResult<u32> {
        // Empty means unset, as for every other variable.
        let Some(raw) = var(name).filter(|r| !r.trim().is_empty()) else {
            return Ok(default);
        };
        let bad = || {
            CoordError::field(
                ErrorCode::InvalidArgument,
                name,
                format!("{name} must be a whole number of at least {min}, got {raw:?}"),
            )
            .with_detail("minimum", min)
        };
        let v: u32 = raw.trim().parse().map_err(|_| bad())?;
        if v < min {
            return Err(bad());
        }
        Ok(v)
    };
    let config = PortConfig {
        base: read("PORT_ALLOC_BASE", DEFAULT_BASE, MIN_BASE)?,
        range_per_session: read("PORT_ALLOC_RANGE", DEFAULT_RANGE, MIN_RANGE)?,
        ttl_minutes: read("PORT_ALLOC_TTL_MINUTES", DEFAULT_TTL_MINUTES, 1)?,
        max_sessions: read("PORT_ALLOC_MAX_SESSIONS", DEFAULT_MAX_SESSIONS, 1)?,
        max_per_agent: read("PORT_ALLOC_MAX_PER_AGENT", DEFAULT_MAX_PER_AGENT, 1)?,
    };
    let last = config.base as u64 + config.range_per_session as u64 * config.max_sessions as u64;
    if last > 65_536 {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "PORT_ALLOC_MAX_SESSIONS",
            format!("PORT_ALLOC_BASE + PORT_ALLOC_RANGE x PORT_ALLOC_MAX_SESSIONS reaches port {last}, beyond 65535"),
        ));
    }
    Ok(config)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllocatePortsRequest {
    /// Who the ports are for, e.g. a worktree or agent session name.
    #[schemars(length(min = 1, max = 256), regex(pattern = r"\S"))]
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleasePortsRequest {
    /// The session the ports were allocated for.
    #[schemars(length(min = 1, max = 256), regex(pattern = r"\S"))]
    pub session_id: String,
}

/// One session's block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortAllocation {
    pub session_id: String,
    pub db_port: u16,
    pub rest_port: u16,
    pub realtime_port: u16,
    pub api_port: u16,
    /// `ac-` and the first 8 hex digits of SHA-256(session_id).
    pub compose_project_name: String,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AllocatePortsResult {
    pub success: bool,
    pub allocation: PortAllocation,
    /// `export VAR=value` lines for the block, ready for `eval`.
    pub env_snippet: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReleasePortsResult {
    pub success: bool,
    /// Whether the session had a live allocation (releasing twice is not an error).
    pub released: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortStatusEntry {
    #[serde(flatten)]
    pub allocation: PortAllocation,
    /// Whole minutes left on the lease (rounded up).
    pub remaining_minutes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortsStatusResult {
    pub success: bool,
    pub allocations: Vec<PortStatusEntry>,
}

/// Ports a session uses from its block: db, rest, realtime, api.
pub const PORTS_PER_SESSION: u32 = 4;

/// A stored lease: the first port of the session's block, and until when. The port
/// itself is stored, not a block number, because processes sharing the leases may run
/// with different `PORT_ALLOC_BASE`/`PORT_ALLOC_RANGE`: what must never overlap are the
/// ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortLease {
    pub session_id: String,
    pub first_port: u32,
    pub expires_at: Timestamp,
    /// The agent that allocated it (none: a lease written before leases had owners,
    /// which only an administrator may release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Who asks for or gives back a block: an agent, and whether it administers the
/// machine's ports (a local process, an operator key: `administers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant {
    pub agent_id: String,
    pub admin: bool,
}

/// Whether a caller with `credential` administers the port blocks: a process of this
/// user (it could edit the state file itself) or an operator key. A key bound to one
/// agent, or a process inside an agent's session, holds only its own blocks.
pub fn administers(credential: crate::access::Credential) -> bool {
    use crate::access::Credential;
    matches!(credential, Credential::Local | Credential::Operator)
}

/// The refusal of a change to `lease` by someone who does not hold it.
fn not_yours(lease: &PortLease, what: &str) -> CoordError {
    CoordError::new(
        ErrorCode::Forbidden,
        format!(
            "the ports of session {} belong to {}: only they (or an operator) may {what} them",
            lease.session_id,
            lease.owner.as_deref().unwrap_or("an earlier version's caller")
        ),
    )
    .with_detail("session_id", lease.session_id.as_str())
}

impl PortLease {
    fn overlaps(&self, first_port: u32) -> bool {
        first_port < self.first_port + PORTS_PER_SESSION && self.first_port < first_port + PORTS_PER_SESSION
    }
}

pub fn validate_session_id(session_id: &str) -> CoordResult<String> {
    validate::required_text("session_id", session_id, MAX_SHORT_TEXT).map(|s| s.trim().to_string())
}

pub fn compose_project_name(session_id: &str) -> String {
    let digest = Sha256::digest(session_id.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("ac-{hex}")
}

pub fn allocation_of(lease: &PortLease) -> PortAllocation {
    // port_config_from keeps every block below 65536.
    let port = |offset: u32| u16::try_from(lease.first_port + offset).unwrap_or(u16::MAX);
    PortAllocation {
        session_id: lease.session_id.clone(),
        db_port: port(0),
        rest_port: port(1),
        realtime_port: port(2),
        api_port: port(3),
        compose_project_name: compose_project_name(&lease.session_id),
        expires_at: lease.expires_at,
    }
}

pub fn env_snippet(a: &PortAllocation) -> String {
    format!(
        "export AGENT_COORDINATOR_DB_PORT={}\nexport AGENT_COORDINATOR_REST_PORT={}\n\
         export AGENT_COORDINATOR_REALTIME_PORT={}\nexport API_PORT={}\n\
         export COMPOSE_PROJECT_NAME={}\nexport SUPABASE_URL=http://localhost:{}\n",
        a.db_port, a.rest_port, a.realtime_port, a.api_port, a.compose_project_name, a.rest_port
    )
}

/// Drops expired leases.
pub fn prune(leases: &mut Vec<PortLease>, now: Timestamp) {
    leases.retain(|l| l.expires_at > now);
}

/// Grants `session_id` a block, or refreshes the one it holds. On exhaustion nothing
/// changes and the answer is `no_ports_available`.
pub fn allocate(
    leases: &mut Vec<PortLease>,
    config: &PortConfig,
    session_id: &str,
    who: &Claimant,
    now: Timestamp,
) -> CoordResult<PortLease> {
    prune(leases, now);
    let expires_at = now + chrono::Duration::minutes(config.ttl_minutes as i64);
    if let Some(existing) = leases.iter_mut().find(|l| l.session_id == session_id) {
        if !who.admin && existing.owner.as_deref() != Some(who.agent_id.as_str()) {
            return Err(not_yours(existing, "refresh"));
        }
        existing.expires_at = expires_at;
        return Ok(existing.clone());
    }
    let held = leases
        .iter()
        .filter(|l| l.owner.as_deref() == Some(who.agent_id.as_str()))
        .count();
    if !who.admin && held >= config.max_per_agent as usize {
        return Err(CoordError::new(
            ErrorCode::ResourceLimitExceeded,
            format!(
                "{} holds {held} port blocks already, the most one agent may (PORT_ALLOC_MAX_PER_AGENT); release one",
                who.agent_id
            ),
        )
        .with_detail("max", config.max_per_agent));
    }
    let free = (0..config.max_sessions)
        .map(|b| config.base + b * config.range_per_session)
        .find(|first| leases.iter().all(|l| !l.overlaps(*first)));
    let Some(first_port) = free else {
        return Err(CoordError::new(
            ErrorCode::NoPortsAvailable,
            format!(
                "all {} port blocks are leased; release one or wait for a lease to expire",
                config.max_sessions
            ),
        ));
    };
    let lease = PortLease {
        session_id: session_id.to_string(),
        first_port,
        expires_at,
        owner: Some(who.agent_id.clone()),
    };
    leases.push(lease.clone());
    Ok(lease)
}

/// Removes the session's lease; `false` when it had none (release is idempotent). Only
/// its owner or an administrator may.
pub fn release(leases: &mut Vec<PortLease>, session_id: &str, who: &Claimant, now: Timestamp) -> CoordResult<bool> {
    prune(leases, now);
    if let Some(lease) = leases.iter().find(|l| l.session_id == session_id)
        && !who.admin
        && lease.owner.as_deref() != Some(who.agent_id.as_str())
    {
        return Err(not_yours(lease, "release"));
    }
    let before = leases.len();
    leases.retain(|l| l.session_id != session_id);
    Ok(leases.len() != before)
}

/// Live leases, lowest ports first.
pub fn status(leases: &[PortLease], now: Timestamp) -> Vec<PortStatusEntry> {
    let mut out: Vec<PortStatusEntry> = leases
        .iter()
        .filter(|l| l.expires_at > now)
        .map(|l| PortStatusEntry {
            allocation: allocation_of(l),
            remaining_minutes: ((l.expires_at - now).num_seconds() + 59) / 60,
        })
        .collect();
    out.sort_by_key(|e| e.allocation.db_port);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn admin() -> Claimant {
        Claimant {
            agent_id: "root".into(),
            admin: true,
        }
    }

    fn agent(id: &str) -> Claimant {
        Claimant {
            agent_id: id.into(),
            admin: false,
        }
    }

    /// The security review's finding 9: any key could release another session's block
    /// and take every block. A block belongs to who allocated it; one agent holds at most
    /// `max_per_agent`; an administrator may do either.
    #[test]
    fn blocks_belong_to_who_allocated_them_and_agents_hold_a_few() {
        let config = PortConfig {
            max_per_agent: 2,
            ..PortConfig::default()
        };
        let mut leases = Vec::new();
        let (alice, mallory) = (agent("alice"), agent("mallory"));
        allocate(&mut leases, &config, "alice-1", &alice, t0()).unwrap();
        let e = release(&mut leases, "alice-1", &mallory, t0()).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        let e = allocate(&mut leases, &config, "alice-1", &mallory, t0()).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden, "not even a refresh of hers");
        allocate(&mut leases, &config, "m-1", &mallory, t0()).unwrap();
        allocate(&mut leases, &config, "m-2", &mallory, t0()).unwrap();
        let e = allocate(&mut leases, &config, "m-3", &mallory, t0()).unwrap_err();
        assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
        assert!(release(&mut leases, "m-1", &mallory, t0()).unwrap());
        allocate(&mut leases, &config, "m-3", &mallory, t0()).unwrap();
        assert!(
            release(&mut leases, "alice-1", &admin(), t0()).unwrap(),
            "an operator may"
        );
        // A lease of an earlier version has no owner: only an administrator releases it.
        leases.push(PortLease {
            session_id: "old".into(),
            first_port: 12_000,
            expires_at: t0() + chrono::Duration::minutes(5),
            owner: None,
        });
        assert!(release(&mut leases, "old", &alice, t0()).is_err());
        assert!(release(&mut leases, "old", &admin(), t0()).unwrap());
        use crate::access::Credential::*;
        assert_eq!(
            [Local, Operator, Bound, Session, Anonymous].map(administers),
            [true, true, false, false, false]
        );
    }

    fn t0() -> Timestamp {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn blocks_offsets_and_names() {
        let config = PortConfig {
            base: 20_000,
            range_per_session: 50,
            ..PortConfig::default()
        };
        let mut leases = Vec::new();
        let a = allocation_of(&allocate(&mut leases, &config, "worktree-1", &admin(), t0()).unwrap());
        assert_eq!(
            (a.db_port, a.rest_port, a.realtime_port, a.api_port),
            (20_000, 20_001, 20_002, 20_003)
        );
        let b = allocation_of(&allocate(&mut leases, &config, "worktree-2", &admin(), t0()).unwrap());
        assert_eq!(b.db_port, 20_050);
        assert_eq!(a.compose_project_name.len(), 11);
        assert!(a.compose_project_name.starts_with("ac-"));
        assert_eq!(
            compose_project_name("worktree-1"),
            a.compose_project_name,
            "stable per session"
        );
        assert_ne!(a.compose_project_name, b.compose_project_name);
        let snippet = env_snippet(&a);
        for var in [
            "AGENT_COORDINATOR_DB_PORT=20000",
            "AGENT_COORDINATOR_REST_PORT=20001",
            "AGENT_COORDINATOR_REALTIME_PORT=20002",
            "API_PORT=20003",
            "COMPOSE_PROJECT_NAME=ac-",
            "SUPABASE_URL=http://localhost:20001",
        ] {
            assert!(
                snippet.lines().any(|l| l.starts_with("export ") && l.contains(var)),
                "{var} in {snippet}"
            );
        }
    }

    #[test]
    fn sha256_prefix_is_the_spec_format() {
        // sha256("worktree-1") starts with these 4 bytes.
        let digest = Sha256::digest(b"worktree-1");
        assert_eq!(
            compose_project_name("worktree-1"),
            format!(
                "ac-{:02x}{:02x}{:02x}{:02x}",
                digest[0], digest[1], digest[2], digest[3]
            )
        );
    }

    #[test]
    fn same_session_same_block_refreshed_and_exhaustion_changes_nothing() {
        let config = PortConfig {
            max_sessions: 2,
            ttl_minutes: 10,
            ..PortConfig::default()
        };
        let mut leases = Vec::new();
        let first = allocate(&mut leases, &config, "s1", &admin(), t0()).unwrap();
        let later = t0() + chrono::Duration::minutes(5);
        let again = allocate(&mut leases, &config, "s1", &admin(), later).unwrap();
        assert_eq!(again.first_port, first.first_port);
        assert_eq!(again.expires_at, later + chrono::Duration::minutes(10), "TTL refreshed");
        allocate(&mut leases, &config, "s2", &admin(), later).unwrap();
        let before = leases.clone();
        let e = allocate(&mut leases, &config, "s3", &admin(), later).unwrap_err();
        assert_eq!(e.code, ErrorCode::NoPortsAvailable);
        assert_eq!(leases, before, "no existing allocation is affected");
        // Expiry frees the block for a new session.
        let much_later = later + chrono::Duration::minutes(11);
        let reused = allocate(&mut leases, &config, "s3", &admin(), much_later).unwrap();
        assert_eq!(reused.first_port, 10_000);
        assert!(release(&mut leases, "s3", &admin(), much_later).unwrap());
        assert!(!release(&mut leases, "s3", &admin(), much_later).unwrap(), "idempotent");
        assert!(!release(&mut leases, "never", &admin(), much_later).unwrap());
    }

    #[test]
    fn processes_with_different_settings_never_share_a_port() {
        // One shared lease list, two configurations whose blocks interleave.
        let a = PortConfig::default();
        let b = PortConfig {
            base: 10_050,
            range_per_session: 50,
            ..PortConfig::default()
        };
        let mut leases = Vec::new();
        let mut used = std::collections::HashSet::new();
        for i in 0..10 {
            let config = if i % 2 == 0 { &a } else { &b };
            let lease = allocate(&mut leases, config, &format!("s{i}"), &admin(), t0()).unwrap();
            for p in lease.first_port..lease.first_port + PORTS_PER_SESSION {
                assert!(used.insert(p), "port {p} handed out twice");
            }
        }
    }

    #[test]
    fn status_reports_remaining_minutes() {
        let config = PortConfig::default();
        let mut leases = Vec::new();
        allocate(&mut leases, &config, "s1", &admin(), t0()).unwrap();
        let s = status(&leases, t0() + chrono::Duration::seconds(90));
        assert_eq!(s[0].remaining_minutes, 119);
        assert_eq!(s[0].allocation.session_id, "s1");
    }

    #[test]
    fn configuration_rules() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(port_config_from(env(&[])).unwrap(), PortConfig::default());
        assert_eq!(
            port_config_from(env(&[("PORT_ALLOC_BASE", ""), ("PORT_ALLOC_RANGE", " ")])).unwrap(),
            PortConfig::default(),
            "empty is unset"
        );
        let c = port_config_from(env(&[("PORT_ALLOC_BASE", "20000"), ("PORT_ALLOC_RANGE", "50")])).unwrap();
        assert_eq!((c.base, c.range_per_session), (20_000, 50));
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Vars, &str, &str)] = &[
            (&[("PORT_ALLOC_BASE", "80")], "PORT_ALLOC_BASE", "1024"),
            (&[("PORT_ALLOC_RANGE", "3")], "PORT_ALLOC_RANGE", "4"),
            (&[("PORT_ALLOC_BASE", "lots")], "PORT_ALLOC_BASE", "1024"),
            (&[("PORT_ALLOC_TTL_MINUTES", "0")], "PORT_ALLOC_TTL_MINUTES", "1"),
            (&[("PORT_ALLOC_BASE", "65000")], "PORT_ALLOC_MAX_SESSIONS", "65535"),
        ];
        for (pairs, var, minimum) in cases {
            let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let e = port_config_from(|k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(*var));
            assert!(e.message.contains(var) && e.message.contains(minimum), "{}", e.message);
        }
    }
}
