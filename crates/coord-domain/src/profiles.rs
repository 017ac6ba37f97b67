//! Who may do what: agent profiles (trust level, allowed and blocked permissions,
//! resource limits), how an agent's profile is chosen, and [`decide`], the one rule that
//! joins a profile and what an operation needs. Pure: the stores keep profiles and
//! usage, the service's pipeline asks these functions.
//!
//! Unknown means least privilege: an agent with no assignment whose type has no default
//! profile gets [`least_privilege`] (trust 0, read only), never a powerful fallback.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::{MAX_AGENT_ID_LEN, MAX_AGENT_TYPE_LEN};
use crate::time::Timestamp;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

pub const MAX_TRUST: u8 = 4;
pub const MAX_PROFILE_NAME_LEN: usize = 64;
pub const MAX_DESCRIPTION_LEN: usize = 500;
/// Profiles one `apply_profiles` call may define.
pub const MAX_PROFILES_PER_APPLY: usize = 100;
/// The name of the profile an agent gets when nothing is assigned to it or its type.
pub const LEAST_PRIVILEGE: &str = "least-privilege";
/// The profile guardrail that makes writing through coord (`write_file`) need the
/// caller's lock on the file.
pub const LOCK_BEFORE_WRITE: &str = "lock_before_write";

/// A capability a profile grants (`allowed_operations`) or withholds
/// (`blocked_operations`). Operations of coord need one of them; the others name what an
/// agent does outside coord (pushing, spawning) for guardrails and orchestration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Read coordination state and files.
    Read,
    /// Change files: lock them, ask the edit guard, write through coord.
    Write,
    /// Run commands and dev servers (port blocks).
    Execute,
    /// Take part in coordination: sessions, heartbeats, the queue, handoffs, messages.
    /// Implied at trust 1 and above.
    Coordinate,
    GitPush,
    GitPushBranch,
    GitPushMain,
    GitPushForce,
    GitPushForceMain,
    CredentialModify,
    Analyze,
    Comment,
    CreateReview,
    SpawnAgent,
    ManageSwarm,
    /// Create, change and assign profiles. Implied at trust 4.
    ManagePolicies,
    /// Create, list and revoke API keys. Implied at trust 4.
    ManageKeys,
    /// Approve or deny queued requests. Implied at trust 4.
    DecideApprovals,
    /// Read every agent's audit rows, verify the chain, prune old rows. Implied at trust 4.
    ManageAudit,
    /// Override other agents' coordination: release their locks, cancel tasks, put
    /// claimed tasks back in the queue. Implied at trust 4.
    ManageWork,
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Execute => "execute",
            Permission::Coordinate => "coordinate",
            Permission::GitPush => "git_push",
            Permission::GitPushBranch => "git_push_branch",
            Permission::GitPushMain => "git_push_main",
            Permission::GitPushForce => "git_push_force",
            Permission::GitPushForceMain => "git_push_force_main",
            Permission::CredentialModify => "credential_modify",
            Permission::Analyze => "analyze",
            Permission::Comment => "comment",
            Permission::CreateReview => "create_review",
            Permission::SpawnAgent => "spawn_agent",
            Permission::ManageSwarm => "manage_swarm",
            Permission::ManagePolicies => "manage_policies",
            Permission::ManageKeys => "manage_keys",
            Permission::DecideApprovals => "decide_approvals",
            Permission::ManageAudit => "manage_audit",
            Permission::ManageWork => "manage_work",
        }
    }

    /// The trust level that grants this permission without listing it (the spec's trust
    /// table: 1 "read-write with locks", 4 "can modify policies and profiles").
    pub fn implied_at(self) -> Option<u8> {
        match self {
            Permission::Coordinate => Some(1),
            Permission::ManagePolicies
            | Permission::ManageKeys
            | Permission::DecideApprovals
            | Permission::ManageAudit
            | Permission::ManageWork => Some(MAX_TRUST),
            _ => None,
        }
    }

    /// Permissions that only an operator key grants besides a trust-4 profile.
    pub fn is_administrative(self) -> bool {
        self.implied_at() == Some(MAX_TRUST)
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an operation needs from its caller's profile (declared by every operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Need {
    pub permission: Permission,
    pub min_trust: u8,
    /// Whether it starts new work (a lock, a claim, a task): refused once the session
    /// has run for its profile's `max_execution_time`. Winding down never is.
    pub starts_work: bool,
}

impl Need {
    pub const READ: Need = Need::new(Permission::Read, 0);
    pub const COORDINATE: Need = Need::new(Permission::Coordinate, 1);

    pub const fn new(permission: Permission, min_trust: u8) -> Need {
        Need {
            permission,
            min_trust,
            starts_work: false,
        }
    }

    pub const fn starting_work(mut self) -> Need {
        self.starts_work = true;
        self
    }

    /// An administrative operation: trust 4 (or an operator key).
    pub const fn admin(permission: Permission) -> Need {
        Need::new(permission, MAX_TRUST)
    }
}

/// A count limit: a number, or `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Limit {
    #[default]
    Unlimited,
    Max(u64),
}

impl Limit {
    pub fn max(self) -> Option<u64> {
        match self {
            Limit::Unlimited => None,
            Limit::Max(n) => Some(n),
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::Unlimited => s.serialize_str("unlimited"),
            Limit::Max(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Limit;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a count (0 or more) or \"unlimited\"")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Limit, E> {
                Ok(Limit::Max(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Limit, E> {
                u64::try_from(n).map(Limit::Max).map_err(|_| {
                    E::custom(format!(
                        "{n} is negative: a limit is a count (0 or more) or \"unlimited\""
                    ))
                })
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Limit, E> {
                match s.trim() {
                    "unlimited" => Ok(Limit::Unlimited),
                    t => t.parse().map(Limit::Max).map_err(|_| {
                        E::custom(format!(
                            "{s:?} is not a limit: use a count (0 or more) or \"unlimited\""
                        ))
                    }),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration limit: `"30m"`, `"2h"`, `"8h"`, seconds as a number, or `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeLimit {
    #[default]
    Unlimited,
    Max(Duration),
}

impl TimeLimit {
    pub fn max(self) -> Option<Duration> {
        match self {
            TimeLimit::Unlimited => None,
            TimeLimit::Max(d) => Some(d),
        }
    }
}

/// `2h`, `30m`, `90s`, `1h 30m` (humantime's spelling, whole seconds).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

impl Serialize for TimeLimit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TimeLimit::Unlimited => s.serialize_str("unlimited"),
            TimeLimit::Max(d) => s.serialize_str(&format_duration(*d)),
        }
    }
}

impl<'de> Deserialize<'de> for TimeLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TimeLimit;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration (\"30m\", \"2h\", seconds as a number) or \"unlimited\"")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<TimeLimit, E> {
                Ok(TimeLimit::Max(Duration::from_secs(n)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<TimeLimit, E> {
                u64::try_from(n)
                    .map(|n| TimeLimit::Max(Duration::from_secs(n)))
                    .map_err(|_| E::custom(format!("{n} is negative: a duration is 0 seconds or more")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TimeLimit, E> {
                match s.trim() {
                    "unlimited" => Ok(TimeLimit::Unlimited),
                    t => humantime::parse_duration(t).map(TimeLimit::Max).map_err(|e| {
                        E::custom(format!(
                            "{s:?} is not a duration ({e}): use e.g. \"30m\", \"2h\", \"8h\" or \"unlimited\""
                        ))
                    }),
                }
            }
        }
        d.deserialize_any(V)
    }
}

mod schema {
    use super::{Limit, TimeLimit};
    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
    use std::borrow::Cow;

    impl JsonSchema for Limit {
        fn schema_name() -> Cow<'static, str> {
            "Limit".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A count, or \"unlimited\".",
                "anyOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]
            })
        }
    }

    impl JsonSchema for TimeLimit {
        fn schema_name() -> Cow<'static, str> {
            "TimeLimit".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A duration (\"30m\", \"2h\"; a number is seconds), or \"unlimited\".",
                "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]
            })
        }
    }
}

/// What a profile allows an agent session to use. Absent limits are unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceLimits {
    /// Distinct files the session locked for writing or was allowed to edit.
    #[serde(default)]
    pub max_file_modifications: Limit,
    /// Distinct files the session read through coord.
    #[serde(default)]
    pub max_file_reads: Limit,
    /// How long after its session started an agent may start new work.
    #[serde(default)]
    pub max_execution_time: TimeLimit,
    /// Agents the session may spawn.
    #[serde(default)]
    pub max_spawned_agents: Limit,
    /// Coordination calls the session may make.
    #[serde(default)]
    pub max_api_calls: Limit,
}

/// A resource a profile limits and coord counts per agent session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    MaxFileModifications,
    MaxFileReads,
    MaxExecutionTime,
    MaxSpawnedAgents,
    MaxApiCalls,
}

impl Resource {
    pub const COUNTED: [Resource; 4] = [
        Resource::MaxFileModifications,
        Resource::MaxFileReads,
        Resource::MaxSpawnedAgents,
        Resource::MaxApiCalls,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Resource::MaxFileModifications => "max_file_modifications",
            Resource::MaxFileReads => "max_file_reads",
            Resource::MaxExecutionTime => "max_execution_time",
            Resource::MaxSpawnedAgents => "max_spawned_agents",
            Resource::MaxApiCalls => "max_api_calls",
        }
    }

    pub fn parse(s: &str) -> Option<Resource> {
        [Resource::MaxExecutionTime]
            .into_iter()
            .chain(Resource::COUNTED)
            .find(|r| r.as_str() == s)
    }
}

impl ResourceLimits {
    /// The limit on a counted resource.
    pub fn count(&self, r: Resource) -> Limit {
        match r {
            Resource::MaxFileModifications => self.max_file_modifications,
            Resource::MaxFileReads => self.max_file_reads,
            Resource::MaxSpawnedAgents => self.max_spawned_agents,
            Resource::MaxApiCalls => self.max_api_calls,
            Resource::MaxExecutionTime => Limit::Unlimited,
        }
    }
}

/// A profile: what an agent may do and how much of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Lowercase letters, digits, `-` and `_`, starting with a letter.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[a-z][a-z0-9_-]*$"))]
    pub name: String,
    /// The agent type it is written for (`claude_code_cli`, `codex_cloud`, ...).
    #[schemars(length(min = 1, max = 64))]
    pub agent_type: String,
    /// 0 untrusted (read only) · 1 limited · 2 standard · 3 elevated · 4 admin.
    #[schemars(range(max = 4))]
    pub trust_level: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 500))]
    pub description: Option<String>,
    /// How the agent connects (`mcp`, `http_api`, `agentcore_gateway`); informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// The network policy applied to it, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<String>,
    /// Domains it must always reach (the coordination API).
    #[serde(default)]
    pub required_domains: Vec<String>,
    #[serde(default)]
    pub allowed_operations: Vec<Permission>,
    /// Withheld even when allowed or implied: blocked beats allowed.
    #[serde(default)]
    pub blocked_operations: Vec<Permission>,
    /// Guarded operations it may run at trust 3 or more, logged as elevated.
    #[serde(default)]
    pub elevated_operations: Vec<String>,
    #[serde(default)]
    pub resource_limits: ResourceLimits,
    /// Guardrails applied to it, by name.
    #[serde(default)]
    pub guardrails: Vec<String>,
    /// Whether a request over a resource limit may ask for approval (it then waits in
    /// the approval queue, and once approved passes once) instead of being refused
    /// outright.
    #[serde(default)]
    pub escalation: bool,
}

/// Why a permission is or is not granted by a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    Allowed,
    /// Not listed, but implied by the trust level.
    ImpliedByTrust,
    Blocked,
    NotAllowed,
}

impl Profile {
    pub fn grant(&self, p: Permission) -> Grant {
        if self.blocked_operations.contains(&p) {
            Grant::Blocked
        } else if self.allowed_operations.contains(&p) {
            Grant::Allowed
        } else if p.implied_at().is_some_and(|t| self.trust_level >= t) {
            Grant::ImpliedByTrust
        } else {
            Grant::NotAllowed
        }
    }
}

/// Whether `profile` may run `operation`, which needs `need`. Blocked beats allowed;
/// a trust level too low is `insufficient_trust_level` (so an administrative operation
/// asked by a trust-3 agent says what it lacks), anything else not granted is
/// `operation_not_permitted`.
pub fn decide(profile: &Profile, operation: &str, need: Need) -> CoordResult<()> {
    let grant = profile.grant(need.permission);
    let not_permitted = |why: String| {
        CoordError::new(ErrorCode::OperationNotPermitted, why)
            .with_detail("operation", operation)
            .with_detail("permission", need.permission.as_str())
            .with_detail("profile", profile.name.as_str())
    };
    if grant == Grant::Blocked {
        return Err(not_permitted(format!(
            "{operation} needs `{}`, which profile {} blocks",
            need.permission, profile.name
        )));
    }
    if profile.trust_level < need.min_trust {
        return Err(CoordError::new(
            ErrorCode::InsufficientTrustLevel,
            format!(
                "{operation} needs trust level {} or more; profile {} has {}",
                need.min_trust, profile.name, profile.trust_level
            ),
        )
        .with_detail("operation", operation)
        .with_detail("required", need.min_trust)
        .with_detail("actual", profile.trust_level)
        .with_detail("profile", profile.name.as_str()));
    }
    if grant == Grant::NotAllowed {
        return Err(not_permitted(format!(
            "{operation} needs `{}`, which profile {} does not allow (allowed: {})",
            need.permission,
            profile.name,
            list(&profile.allowed_operations)
        )));
    }
    Ok(())
}

/// A refusal of [`decide`] for an agent whose profile came from nothing assigned to it
/// (least privilege, [`ProfileSource::Fallback`]), saying how it gets one: most often it
/// was started without its type. An operator's assignment of least-privilege is a choice,
/// so it gets no such hint.
pub fn with_unassigned_hint(e: CoordError, source: ProfileSource) -> CoordError {
    let refused = matches!(
        e.code,
        ErrorCode::InsufficientTrustLevel | ErrorCode::OperationNotPermitted
    );
    if source != ProfileSource::Fallback || !refused {
        return e;
    }
    let known: Vec<&str> = builtin().type_defaults.keys().map(String::as_str).collect();
    CoordError {
        message: format!(
            "{} (nothing is assigned to this agent's id and its type has no default profile: set its \
             type — one with a default profile: {} — e.g. COORD_AGENT_TYPE=claude_code, or assign a profile \
             with `coord profile assign`)",
            e.message,
            known.join(", ")
        ),
        ..e
    }
}

fn list(ps: &[Permission]) -> String {
    if ps.is_empty() {
        return "none".into();
    }
    ps.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
}

/// Whether a session that started at `started` may still start new work at `now`.
pub fn check_execution_time(profile: &Profile, started: Timestamp, now: Timestamp) -> CoordResult<()> {
    let Some(max) = profile.resource_limits.max_execution_time.max() else {
        return Ok(());
    };
    let age = (now - started).to_std().unwrap_or_default();
    if age <= max {
        return Ok(());
    }
    Err(limit_exceeded(
        Resource::MaxExecutionTime,
        format!(
            "this session started {} ago; profile {} allows {} of work (finish, hand off and end the session)",
            format_duration(age),
            profile.name,
            format_duration(max)
        ),
    )
    .with_detail("max", format_duration(max)))
}

/// `resource_limit_exceeded` naming the limit, as the spec answers it.
pub fn limit_exceeded(r: Resource, message: String) -> CoordError {
    CoordError::new(ErrorCode::ResourceLimitExceeded, message).with_detail("limit", r.as_str())
}

/// Where an agent's effective profile came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSource {
    /// Assigned to this agent id.
    AgentAssignment,
    /// Assigned to the agent's type.
    TypeDefault,
    /// Nothing assigned: least privilege.
    Fallback,
}

/// The most trust a key bound to one agent gets from its type's default profile: below
/// [`MAX_TRUST`], so no administrative permission comes with a key's type alone (a
/// managed key for a `strands_agent` does not get the trust-4 orchestrator's right to
/// change guardrails or prune the audit trail). An operator who wants a key to
/// administer assigns a profile to its agent id.
pub const KEY_TRUST_CAP: u8 = 3;

/// What `profile` (resolved from `source`) lets a caller with `credential` reach:
/// - a key bound to one agent, unless a profile was assigned to that agent's id, gets at
///   most [`KEY_TRUST_CAP`] and none of the administrative permissions;
/// - a process inside an agent's session never gets the administrative permissions (a
///   person's decisions; the pipeline refuses them with `person_required` first).
///
/// Everyone else gets the profile as it is.
pub fn within_reach(mut profile: Profile, source: ProfileSource, credential: crate::access::Credential) -> Profile {
    use crate::access::Credential;
    let capped = match credential {
        Credential::Bound => source != ProfileSource::AgentAssignment,
        Credential::Session => true,
        Credential::Local | Credential::Operator | Credential::Anonymous => false,
    };
    if capped {
        profile.trust_level = profile.trust_level.min(KEY_TRUST_CAP);
        profile.allowed_operations.retain(|p| !p.is_administrative());
    }
    profile
}

/// An agent's profile: the one assigned to its id, else to its type, else least
/// privilege.
pub fn resolve(by_agent: Option<Profile>, by_type: Option<Profile>) -> (Profile, ProfileSource) {
    match (by_agent, by_type) {
        (Some(p), _) => (p, ProfileSource::AgentAssignment),
        (None, Some(p)) => (p, ProfileSource::TypeDefault),
        (None, None) => (least_privilege(), ProfileSource::Fallback),
    }
}

/// An agent's profile as `list_profiles` shows the profiles and assignments: what the
/// pipeline would resolve for it (the dashboard's column; the pipeline reads its own).
pub fn effective(list: &ListProfilesResult, agent_id: &str, agent_type: &str) -> (Profile, ProfileSource) {
    let assigned = |kind: &str, value: &str| {
        list.assignments
            .iter()
            .find(|a| a.kind == kind && a.value == value)
            .and_then(|a| list.profiles.iter().find(|p| p.name == a.profile))
            .cloned()
    };
    resolve(assigned("agent", agent_id), assigned("agent_type", agent_type))
}

/// The profile of agents nothing is assigned to: trust 0, read only, nothing else. It
/// is built in (always this one, whatever the database holds) and cannot be changed.
pub fn least_privilege() -> Profile {
    builtin()
        .profiles
        .iter()
        .find(|p| p.name == LEAST_PRIVILEGE)
        .cloned()
        .expect("the built-in profiles hold least-privilege (a unit test checks it)")
}

/// The profiles and type defaults a new database starts with (seeded by the stores'
/// migrations from this one definition, `profiles_builtin.json`).
#[derive(Debug, Clone, Deserialize)]
pub struct Builtin {
    pub profiles: Vec<Profile>,
    /// Agent type → profile name.
    pub type_defaults: std::collections::BTreeMap<String, String>,
}

static BUILTIN: std::sync::LazyLock<Builtin> = std::sync::LazyLock::new(|| {
    serde_json::from_str(include_str!("profiles_builtin.json")).expect("profiles_builtin.json parses (unit-tested)")
});

pub fn builtin() -> &'static Builtin {
    &BUILTIN
}

/// Who a profile is assigned to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Assignee {
    Agent(String),
    AgentType(String),
}

impl Assignee {
    pub fn kind(&self) -> &'static str {
        match self {
            Assignee::Agent(_) => "agent",
            Assignee::AgentType(_) => "agent_type",
        }
    }

    pub fn value(&self) -> &str {
        match self {
            Assignee::Agent(v) | Assignee::AgentType(v) => v,
        }
    }
}

// ---- wire types ----

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Assignment {
    /// `agent` or `agent_type`.
    pub kind: String,
    /// The agent id or the agent type.
    pub value: String,
    pub profile: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListProfilesResult {
    pub success: bool,
    pub profiles: Vec<Profile>,
    pub assignments: Vec<Assignment>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyProfilesRequest {
    /// Profiles to create or replace, by name.
    pub profiles: Vec<Profile>,
}

/// One profile an apply created, changed or left as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileChange {
    pub name: String,
    /// `created`, `updated` or `unchanged`.
    pub action: String,
    #[serde(default)]
    pub before: Option<Profile>,
    pub after: Profile,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApplyProfilesResult {
    pub success: bool,
    pub changes: Vec<ProfileChange>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignProfileRequest {
    /// The profile to assign (see list_profiles).
    pub profile: String,
    /// Assign it to this agent id ... (`target_`: `agent_id` in a body is the caller's
    /// own identity claim)
    #[serde(default)]
    pub target_agent_id: Option<String>,
    /// ... or as the default of this agent type (exactly one of the two).
    #[serde(default)]
    pub target_agent_type: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnassignProfileRequest {
    #[serde(default)]
    pub target_agent_id: Option<String>,
    #[serde(default)]
    pub target_agent_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssignProfileResult {
    pub success: bool,
    pub kind: String,
    pub value: String,
    /// The profile assigned before (none when there was none).
    #[serde(default)]
    pub before: Option<String>,
    /// The profile assigned now (none after an unassign).
    #[serde(default)]
    pub after: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainProfileRequest {
    /// The agent to explain; yourself when absent.
    #[serde(default)]
    pub target_agent_id: Option<String>,
    /// Its type; when absent, the type of its current session (or yours, for yourself).
    #[serde(default)]
    pub target_agent_type: Option<String>,
    /// Explain only this operation (else every operation).
    #[serde(default)]
    pub operation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LimitUsage {
    pub limit: Resource,
    /// The profile's limit (`unlimited`, a count, or a duration).
    pub max: serde_json::Value,
    /// What the current session used (a count, or for time how long it has run);
    /// null when nothing is counted (unlimited, or no session).
    #[serde(default)]
    pub used: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OperationVerdict {
    pub operation: String,
    pub permission: Permission,
    pub min_trust: u8,
    pub allowed: bool,
    /// Why: `allowed`, `implied_by_trust`, or the refusal's error code and message.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExplainProfileResult {
    pub success: bool,
    pub agent_id: String,
    pub agent_type: String,
    pub source: ProfileSource,
    pub profile: Profile,
    /// The agent's current session, whose usage is counted.
    #[serde(default)]
    pub session_id: Option<String>,
    pub limits: Vec<LimitUsage>,
    pub operations: Vec<OperationVerdict>,
    /// The agent's violation counter: destructive operations the guardrails blocked.
    #[serde(default)]
    pub guardrail_violations: i64,
}

// ---- validation ----

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn bad(field: &str, message: String) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, format!("{field}: {message}"))
}

/// A profile name, as given to assign or apply.
pub fn validate_profile_name(field: &str, raw: &str) -> CoordResult<String> {
    let v = raw.trim();
    if v.is_empty() || v.len() > MAX_PROFILE_NAME_LEN || !is_name(v) {
        return Err(bad(
            field,
            format!(
                "{raw:?} is not a profile name: lowercase letters, digits, '-' and '_', starting with a letter, at most {MAX_PROFILE_NAME_LEN} characters"
            ),
        ));
    }
    Ok(v.to_string())
}

fn validate_label(field: &str, raw: &str, max: usize) -> CoordResult<String> {
    let v = raw.trim();
    if v.is_empty() || v.chars().count() > max || v.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad(
            field,
            format!("{raw:?} must be 1 to {max} characters without spaces or control characters"),
        ));
    }
    Ok(v.to_string())
}

fn dedup<T: PartialEq + Clone>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

/// One profile, normalised; errors name the field under `at` (`profiles[2]`).
pub fn validate_profile(at: &str, p: Profile) -> CoordResult<Profile> {
    let f = |name: &str| format!("{at}.{name}");
    if p.trust_level > MAX_TRUST {
        return Err(bad(
            &f("trust_level"),
            format!("{} is not a trust level: use 0 (untrusted) to 4 (admin)", p.trust_level),
        ));
    }
    let description = match p.description.as_deref().map(str::trim) {
        Some(d) if d.chars().count() > MAX_DESCRIPTION_LEN => {
            return Err(bad(
                &f("description"),
                format!("is longer than {MAX_DESCRIPTION_LEN} characters"),
            ));
        }
        Some("") | None => None,
        Some(d) => Some(d.to_string()),
    };
    let labels = |name: &str, v: &[String], max: usize| -> CoordResult<Vec<String>> {
        let out = v
            .iter()
            .enumerate()
            .map(|(i, s)| validate_label(&format!("{}[{i}]", f(name)), s, max))
            .collect::<CoordResult<Vec<_>>>()?;
        Ok(dedup(&out))
    };
    let optional = |name: &str, v: Option<&String>| -> CoordResult<Option<String>> {
        v.map(|s| validate_label(&f(name), s, MAX_PROFILE_NAME_LEN)).transpose()
    };
    Ok(Profile {
        name: validate_profile_name(&f("name"), &p.name)?,
        agent_type: validate_label(&f("agent_type"), &p.agent_type, MAX_AGENT_TYPE_LEN)?,
        trust_level: p.trust_level,
        description,
        connection: optional("connection", p.connection.as_ref())?,
        network_policy: optional("network_policy", p.network_policy.as_ref())?,
        required_domains: labels("required_domains", &p.required_domains, 253)?,
        allowed_operations: dedup(&p.allowed_operations),
        blocked_operations: dedup(&p.blocked_operations),
        elevated_operations: labels("elevated_operations", &p.elevated_operations, MAX_PROFILE_NAME_LEN)?,
        resource_limits: p.resource_limits,
        guardrails: labels("guardrails", &p.guardrails, MAX_PROFILE_NAME_LEN)?,
        escalation: p.escalation,
    })
}

/// An `apply_profiles` request: 1 to 100 valid profiles with distinct names.
pub fn validate_apply(req: ApplyProfilesRequest) -> CoordResult<Vec<Profile>> {
    if req.profiles.is_empty() || req.profiles.len() > MAX_PROFILES_PER_APPLY {
        return Err(bad(
            "profiles",
            format!(
                "give 1 to {MAX_PROFILES_PER_APPLY} profiles (got {})",
                req.profiles.len()
            ),
        ));
    }
    let mut out: Vec<Profile> = Vec::with_capacity(req.profiles.len());
    for (i, p) in req.profiles.into_iter().enumerate() {
        let p = validate_profile(&format!("profiles[{i}]"), p)?;
        if p.name == LEAST_PRIVILEGE {
            return Err(bad(
                &format!("profiles[{i}].name"),
                format!(
                    "{LEAST_PRIVILEGE} is built in (what unknown agents get) and cannot be changed; define a profile with another name"
                ),
            ));
        }
        if let Some(j) = out.iter().position(|q| q.name == p.name) {
            return Err(bad(
                &format!("profiles[{i}].name"),
                format!("{:?} is defined twice (also profiles[{j}])", p.name),
            ));
        }
        out.push(p);
    }
    Ok(out)
}

/// Exactly one of an agent id and an agent type.
pub fn validate_assignee(agent_id: Option<&str>, agent_type: Option<&str>) -> CoordResult<Assignee> {
    match (agent_id, agent_type) {
        (Some(id), None) => Ok(Assignee::Agent(validate_label(
            "target_agent_id",
            id,
            MAX_AGENT_ID_LEN,
        )?)),
        (None, Some(ty)) => Ok(Assignee::AgentType(validate_label(
            "target_agent_type",
            ty,
            MAX_AGENT_TYPE_LEN,
        )?)),
        _ => Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "name exactly one of target_agent_id (this agent) and target_agent_type (the default of that type)",
        )),
    }
}

pub fn validate_assign(req: AssignProfileRequest) -> CoordResult<(Assignee, String)> {
    let who = validate_assignee(req.target_agent_id.as_deref(), req.target_agent_type.as_deref())?;
    Ok((who, validate_profile_name("profile", &req.profile)?))
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;

/// Whose usage a resource charge counts: the agent's current session, or the agent
/// itself when it has none (an HTTP caller that never registered).
/// The usage scope of a managed key: everything its bearer does counts here, whatever
/// coordinator sessions it opens.
pub fn key_scope(key_id: &str) -> String {
    format!("key:{key_id}")
}

pub fn usage_scope(agent_id: &str, session_id: Option<&str>) -> String {
    match session_id {
        Some(s) => format!("session:{s}"),
        None => format!("agent:{agent_id}"),
    }
}

/// What applying `after` over `before` (the stored profile of that name) changes.
pub fn change(before: Option<Profile>, after: Profile) -> ProfileChange {
    let action = match &before {
        None => "created",
        Some(b) if *b == after => "unchanged",
        Some(_) => "updated",
    };
    ProfileChange {
        name: after.name.clone(),
        action: action.into(),
        before,
        after,
    }
}

pub fn profile_not_found(name: &str) -> CoordError {
    CoordError::field(
        ErrorCode::NotFound,
        "profile",
        format!("no profile named {name:?} (list them with list_profiles / coord profile list)"),
    )
}

/// The answer of an assignment change.
pub fn assigned(who: &Assignee, before: Option<String>, after: Option<String>) -> AssignProfileResult {
    AssignProfileResult {
        success: true,
        kind: who.kind().into(),
        value: who.value().into(),
        before,
        after,
    }
}
