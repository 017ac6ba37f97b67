//! Network egress policies: what an agent may connect to, decided by one pure function
//! ([`rules::decide`]) over a normalised target ([`target::parse_target`]). Policies are
//! data: the built-in ones (`builtin.json`, the spec's five profile policies plus
//! `deny_all`) and rows of `network_policies` that replace or add to them; categories
//! are named sets of entries a policy includes as `@name`, with the trust level they
//! are a default for.

pub mod rules;
pub mod target;
#[cfg(test)]
mod tests;

use crate::guardrail_rules::RuleSource;
use crate::profiles::Profile;
use crate::{CoordError, CoordResult, ErrorCode, Timestamp};
pub use rules::{AddressRules, Decision, DefaultAction, Entry, Pattern, Ports, Reason, decide, is_reserved};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;
pub use target::{Host, MAX_TARGET, Target, parse_target};

/// The policy of a profile that names none, and of one naming a policy that does not
/// exist: nothing.
pub const DENY_ALL: &str = "deny_all";
/// At most this many entries in each of a policy's lists.
pub const MAX_ENTRIES: usize = 256;
/// At most this many resolved addresses in one check.
pub const MAX_ADDRESSES: usize = 64;

/// A network policy as stored and shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkPolicy {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// What happens to a host no entry names.
    pub default: DefaultAction,
    /// Entries that allow: `host`, `*.host` (subdomains only), an address or network,
    /// `@category`; `:port` or `:*` (no port: 80 and 443).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Entries that refuse (no port: every port); deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Whether the categories the caller's trust level gets by default are allowed too.
    #[serde(default)]
    pub trust_defaults: bool,
}

/// A named set of entries (`@name` in a policy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Category {
    pub name: String,
    pub description: String,
    /// The lowest trust level this category is a default for (`trust_defaults`).
    pub trust_level: u8,
    pub domains: Vec<String>,
}

#[derive(Deserialize)]
struct Builtin {
    categories: Vec<Category>,
    policies: Vec<NetworkPolicy>,
}

fn builtin() -> &'static Builtin {
    static B: std::sync::OnceLock<Builtin> = std::sync::OnceLock::new();
    B.get_or_init(|| serde_json::from_str(include_str!("builtin.json")).expect("builtin.json parses (unit-tested)"))
}

/// The built-in categories; `coordination` holds `coordination` (the coordinator's own
/// hosts) and `model_providers` also holds `models` (model endpoints), both from
/// configuration.
pub fn categories(coordination: &[String], models: &[String]) -> Vec<Category> {
    builtin()
        .categories
        .iter()
        .cloned()
        .map(|mut c| {
            match c.name.as_str() {
                "coordination" => c.domains.extend(coordination.iter().cloned()),
                "model_providers" => c.domains.extend(models.iter().cloned()),
                _ => {}
            }
            c
        })
        .collect()
}

/// The built-in policies.
pub fn builtin_policies() -> &'static [NetworkPolicy] {
    &builtin().policies
}

/// A row of `network_policies`: a policy replacing the built-in one of its name, or a new one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRow {
    pub policy: NetworkPolicy,
    pub updated_by: String,
    pub updated_at: Timestamp,
}

/// One policy in effect, as `list_network_policies` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolicyEntry {
    pub source: RuleSource,
    #[serde(flatten)]
    pub policy: NetworkPolicy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// The policies in effect: the built-in ones as rows left or replaced them, then the
/// ones rows added, by name.
pub fn merge(rows: &[PolicyRow]) -> Vec<PolicyEntry> {
    let mut out: Vec<PolicyEntry> = builtin_policies()
        .iter()
        .map(|p| PolicyEntry {
            source: RuleSource::Builtin,
            policy: p.clone(),
            updated_by: None,
            updated_at: None,
        })
        .collect();
    for row in rows {
        let entry = |source| PolicyEntry {
            source,
            policy: row.policy.clone(),
            updated_by: Some(row.updated_by.clone()),
            updated_at: Some(row.updated_at),
        };
        match out.iter().position(|e| e.policy.name == row.policy.name) {
            Some(i) => out[i] = entry(RuleSource::Modified),
            None => out.push(entry(RuleSource::Custom)),
        }
    }
    out
}

/// What of a caller's profile egress decisions need.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EgressProfile {
    pub profile: String,
    /// The policy the profile names; `deny_all` when it names none.
    pub policy: String,
    pub trust_level: u8,
    /// Hosts the profile needs whatever its policy (`required_domains`).
    pub required: Vec<String>,
}

impl EgressProfile {
    pub fn of(p: &Profile) -> EgressProfile {
        EgressProfile {
            profile: p.name.clone(),
            policy: p.network_policy.clone().unwrap_or_else(|| DENY_ALL.into()),
            trust_level: p.trust_level,
            required: p.required_domains.clone(),
        }
    }
}

/// A policy with its categories expanded: what [`decide`] runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub policy: String,
    pub default: DefaultAction,
    pub allow: Vec<Entry>,
    pub deny: Vec<Entry>,
    /// The profile names a policy that does not exist (or no longer reads): only its
    /// required hosts are allowed, and everything else is refused as `unknown_policy`.
    pub unknown: bool,
}

impl Rules {
    /// The rules of `who`'s policy among `policies`: its entries with `@category`
    /// expanded, the trust level's default categories when the policy asks for them,
    /// the profile's required hosts. A policy that does not exist, or whose entries no
    /// longer read, allows only the required hosts (see [`Rules::unknown`]).
    pub fn new(who: &EgressProfile, policies: &[PolicyEntry], categories: &[Category]) -> Rules {
        let required: Vec<Entry> = who.required.iter().filter_map(|d| Entry::parse(d).ok()).collect();
        Rules::of_policy(who, policies, categories, &required).unwrap_or_else(|| Rules {
            policy: who.policy.clone(),
            default: DefaultAction::Deny,
            allow: required,
            deny: Vec::new(),
            unknown: true,
        })
    }

    fn of_policy(
        who: &EgressProfile,
        policies: &[PolicyEntry],
        categories: &[Category],
        required: &[Entry],
    ) -> Option<Rules> {
        let p = &policies.iter().find(|e| e.policy.name == who.policy)?.policy;
        let expand = |list: &[String]| -> Option<Vec<Entry>> {
            let mut out = Vec::new();
            for text in list {
                let e = Entry::parse(text).ok()?;
                match &e.pattern {
                    Pattern::Category(name) => {
                        let c = categories.iter().find(|c| &c.name == name)?;
                        out.extend(c.domains.iter().filter_map(|d| Entry::parse(d).ok()));
                    }
                    _ => out.push(e),
                }
            }
            Some(out)
        };
        let mut allow = expand(&p.allow)?;
        if p.trust_defaults {
            for c in categories.iter().filter(|c| c.trust_level <= who.trust_level) {
                allow.extend(c.domains.iter().filter_map(|d| Entry::parse(d).ok()));
            }
        }
        allow.extend(required.iter().cloned());
        Some(Rules {
            policy: p.name.clone(),
            default: p.default,
            allow,
            deny: expand(&p.deny)?,
            unknown: false,
        })
    }
}

fn invalid(field: &str, message: impl Into<String>) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, message)
}

/// `check_network_access`'s request.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckNetworkAccessRequest {
    /// A URL (http, https, ws, wss) or host[:port] (port 443 when absent).
    #[serde(alias = "url", alias = "host")]
    pub target: String,
    /// The addresses the host resolved to, when the caller has resolved it (the egress
    /// proxy does): only those the policy admits may be dialled; none at all (the name
    /// did not resolve) is refused. At most 64; beyond that only the first 64 count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    /// The caller will resolve the name and ask again with `addresses` (the egress proxy
    /// does, so that a refused name is never resolved): a pass is provisional and not
    /// logged; a refusal is final and logged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resolve_next: bool,
}

/// A validated check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub target: Target,
    /// `None`: not resolved (the decision is on the name alone).
    pub addresses: Option<Vec<IpAddr>>,
    /// A pass is provisional: not logged (see `resolve_next`).
    pub provisional: bool,
}

pub fn validate_check(req: CheckNetworkAccessRequest) -> CoordResult<Check> {
    let target = parse_target(&req.target)?;
    if req.resolve_next && req.addresses.is_some() {
        return Err(invalid(
            "resolve_next",
            "resolve_next is for a check before the name is resolved: without addresses",
        ));
    }
    let addresses = match req.addresses {
        None => None,
        Some(list) => Some(
            list.iter()
                .take(MAX_ADDRESSES)
                .map(|a| {
                    a.trim()
                        .parse::<IpAddr>()
                        .map_err(|_| invalid("addresses", format!("{a:?} is not an IP address")))
                })
                .collect::<CoordResult<Vec<_>>>()?,
        ),
    };
    Ok(Check {
        target,
        addresses,
        provisional: req.resolve_next,
    })
}

/// `check_network_access`'s answer when the request is allowed (a refusal is the
/// error `domain_blocked`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckNetworkAccessResult {
    pub success: bool,
    pub allowed: bool,
    /// The normalised host.
    pub domain: String,
    pub port: u16,
    /// The policy that decided.
    pub policy: String,
    pub reason: Reason,
    /// The entry that allowed it (none when the policy allows by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Of the addresses given, those that may be dialled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
}

/// The host as answers and logs show it (IPv6 without brackets).
pub fn domain_of(t: &Target) -> String {
    match &t.host {
        Host::Name(n) => n.clone(),
        Host::Ip(ip) => ip.to_string(),
    }
}

/// The answer to a check: the result, or `domain_blocked` naming the domain (with the
/// port, the reason and the policy, which the access log keeps).
pub fn answer(rules: &Rules, check: &Check) -> CoordResult<CheckNetworkAccessResult> {
    let domain = domain_of(&check.target);
    let mut decision = decide(
        rules.default,
        &rules.allow,
        &rules.deny,
        &check.target,
        check.addresses.as_deref(),
    );
    if rules.unknown && decision.reason == Reason::NotAllowlisted {
        decision.reason = Reason::UnknownPolicy;
    }
    let policy = rules.policy.clone();
    if !decision.allowed() {
        let mut e = CoordError::new(
            ErrorCode::DomainBlocked,
            format!(
                "{domain} port {} is not allowed by network policy {policy} ({})",
                check.target.port,
                decision.reason.as_str()
            ),
        )
        .with_detail("domain", domain)
        .with_detail("port", check.target.port)
        .with_detail("reason", decision.reason.as_str())
        .with_detail("policy", policy);
        if let Some(rule) = decision.rule {
            e = e.with_detail("rule", rule);
        }
        return Err(e);
    }
    Ok(CheckNetworkAccessResult {
        success: true,
        allowed: true,
        domain,
        port: check.target.port,
        policy,
        reason: decision.reason,
        rule: decision.rule,
        addresses: decision.addresses.iter().map(IpAddr::to_string).collect(),
    })
}

/// A row of `network_access_log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkAccess {
    pub agent_id: String,
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// Every refusal raises an alert.
    pub alert: bool,
    pub policy: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl NetworkAccess {
    /// The row an allowed check writes.
    pub fn of_pass(agent_id: &str, r: &CheckNetworkAccessResult) -> NetworkAccess {
        NetworkAccess {
            agent_id: agent_id.into(),
            host: r.domain.clone(),
            port: r.port,
            allowed: true,
            alert: false,
            policy: r.policy.clone(),
            reason: r.reason.as_str().into(),
            rule: r.rule.clone(),
        }
    }

    /// The row a `domain_blocked` refusal writes (`None` for any other refusal).
    pub fn of_refusal(agent_id: &str, e: &CoordError) -> Option<NetworkAccess> {
        if e.code != ErrorCode::DomainBlocked {
            return None;
        }
        let s = |k: &str| e.details.get(k).and_then(Value::as_str).map(str::to_string);
        Some(NetworkAccess {
            agent_id: agent_id.into(),
            host: s("domain")?,
            port: e
                .details
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())?,
            allowed: false,
            alert: true,
            policy: s("policy").unwrap_or_default(),
            reason: s("reason").unwrap_or_default(),
            rule: s("rule"),
        })
    }
}

/// `list_network_policies`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListNetworkPoliciesResult {
    pub success: bool,
    pub policies: Vec<PolicyEntry>,
    pub categories: Vec<Category>,
}

/// `set_network_policy`'s request: the whole policy (a built-in name replaces it).
/// Unknown fields are refused: a misspelt `deny` must not store a policy without one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetNetworkPolicyRequest {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// What happens to a host no entry names: allow or deny.
    pub default: DefaultAction,
    /// Entries that allow: `host`, `*.host` (subdomains only), an address or network,
    /// `@category`; `:port` or `:*` (no port: 80 and 443).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Entries that refuse (no port: every port); deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Whether the categories the caller's trust level gets by default are allowed too.
    #[serde(default)]
    pub trust_defaults: bool,
}

impl From<SetNetworkPolicyRequest> for NetworkPolicy {
    fn from(r: SetNetworkPolicyRequest) -> NetworkPolicy {
        NetworkPolicy {
            name: r.name,
            description: r.description,
            default: r.default,
            allow: r.allow,
            deny: r.deny,
            trust_defaults: r.trust_defaults,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetNetworkPolicyResult {
    pub success: bool,
    pub policy: PolicyEntry,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetNetworkPolicyRequest {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResetNetworkPolicyResult {
    pub success: bool,
    pub name: String,
    /// Whether a built-in policy of that name is in effect again.
    pub builtin_restored: bool,
}

/// A policy name: 1–64 lowercase letters, digits, `_` or `-`.
pub fn validate_name(name: &str) -> CoordResult<String> {
    let name = name.trim();
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        return Err(invalid(
            "name",
            format!("name {name:?}: 1 to 64 lowercase letters, digits, '_' or '-'"),
        ));
    }
    Ok(name.into())
}

/// A policy to store: a valid name, a description of at most 500 characters, at most
/// [`MAX_ENTRIES`] entries per list, every entry readable and every category known.
pub fn validate_policy(mut p: NetworkPolicy, categories: &[Category]) -> CoordResult<NetworkPolicy> {
    p.name = validate_name(&p.name)?;
    p.description = p.description.trim().to_string();
    if p.description.chars().count() > 500 {
        return Err(invalid("description", "description: at most 500 characters"));
    }
    for (field, list) in [("allow", &mut p.allow), ("deny", &mut p.deny)] {
        if list.len() > MAX_ENTRIES {
            return Err(invalid(field, format!("at most {MAX_ENTRIES} entries")));
        }
        for (i, text) in list.iter_mut().enumerate() {
            let e = Entry::parse(text).map_err(|m| invalid(&format!("{field}[{i}]"), format!("{field}[{i}]: {m}")))?;
            if let Pattern::Category(name) = &e.pattern
                && !categories.iter().any(|c| &c.name == name)
            {
                let known: Vec<&str> = categories.iter().map(|c| c.name.as_str()).collect();
                return Err(invalid(
                    &format!("{field}[{i}]"),
                    format!("{field}[{i}]: no category {name} (there are {})", known.join(", ")),
                ));
            }
            *text = e.text;
        }
    }
    Ok(p)
}

/// At most this many rows in `network_policies`.
pub const MAX_POLICIES: usize = 256;

/// `resource_limit_exceeded` for a new policy past [`MAX_POLICIES`].
pub fn too_many_policies() -> CoordError {
    CoordError::new(
        ErrorCode::ResourceLimitExceeded,
        format!("at most {MAX_POLICIES} network policies can be stored; reset one first"),
    )
}

/// `not_found` for a policy name with no row.
pub fn no_policy_row(name: &str) -> CoordError {
    CoordError::new(
        ErrorCode::NotFound,
        format!("no stored network policy named {name} (built-in policies without changes have no row)"),
    )
}

/// `network_access_log`'s request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkAccessLogRequest {
    /// Whose attempts (administrators: anyone's; others: their own, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Only allowed (true) or only refused (false) attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
    /// At most this many rows, newest first (1–1000, default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// What rows of the access log to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogFilter {
    pub agent_id: Option<String>,
    pub allowed: Option<bool>,
    pub limit: u32,
}

/// The filter for a request: `limit` bounded, the agent scoped to the caller unless
/// `admin` (an agent naming another one is refused).
pub fn access_log_filter(req: NetworkAccessLogRequest, caller: &str, admin: bool) -> CoordResult<AccessLogFilter> {
    let limit = req.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(invalid("limit", "limit: between 1 and 1000"));
    }
    let agent_id = match req.agent_id.map(|a| a.trim().to_string()) {
        Some(a) if !admin && a != caller => {
            return Err(CoordError::new(
                ErrorCode::Forbidden,
                "only an administrator (manage_audit) reads another agent's network access log",
            ));
        }
        Some(a) => Some(a),
        None if admin => None,
        None => Some(caller.to_string()),
    };
    Ok(AccessLogFilter {
        agent_id,
        allowed: req.allowed,
        limit,
    })
}

/// A row of the access log as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkAccessRow {
    pub id: i64,
    pub at: Timestamp,
    #[serde(flatten)]
    pub access: NetworkAccess,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkAccessLogResult {
    pub success: bool,
    pub entries: Vec<NetworkAccessRow>,
}

/// How a sandboxed run's egress is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// The network namespace: the proxy is the only way out.
    Namespace,
    /// Only the proxy variables (`--no-sandbox`): a program can ignore them.
    Advisory,
}

/// `record_sandbox_run`'s request: what `coord sandbox run` is about to run.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxRunRequest {
    /// The command line (at most 256 arguments of at most 4096 characters each).
    pub command: Vec<String>,
    pub enforcement: Enforcement,
    /// The writable directory.
    pub workspace: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxRunResult {
    pub success: bool,
    pub enforcement: Enforcement,
    /// The network policy the run's connections are held to.
    pub policy: String,
}

pub fn validate_sandbox_run(req: SandboxRunRequest) -> CoordResult<SandboxRunRequest> {
    if req.command.is_empty() || req.command.len() > 256 {
        return Err(invalid("command", "1 to 256 arguments"));
    }
    if req.command.iter().any(|a| a.chars().count() > 4096) || req.workspace.chars().count() > 4096 {
        return Err(invalid("command", "an argument longer than 4096 characters"));
    }
    Ok(req)
}
