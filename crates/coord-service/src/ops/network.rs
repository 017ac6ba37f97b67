//! Network egress policies: `check_network_access` decides whether the caller may
//! connect to a host (the policy its profile names; `coord_domain::network::decide`)
//! and logs the decision to `network_access_log`; the egress proxy asks it for every
//! connection. Policies are data: built in, replaced or added by administrators.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::guardrail_rules::RuleSource;
use coord_domain::network::{
    self, AccessLogFilter, Check, CheckNetworkAccessRequest, CheckNetworkAccessResult, EgressProfile,
    ListNetworkPoliciesResult, NetworkAccessLogRequest, NetworkAccessLogResult, NetworkPolicy,
    ResetNetworkPolicyRequest, ResetNetworkPolicyResult, Rules, SandboxRunRequest, SandboxRunResult,
    SetNetworkPolicyRequest, SetNetworkPolicyResult, categories, merge,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordError, CoordResult, Empty, Identity};
use coord_store::OpCtx;

/// The built-in categories with this coordinator's configured hosts.
fn configured_categories(c: &Coordinator) -> Vec<coord_domain::network::Category> {
    categories(&c.config().coordination_domains, &c.config().model_endpoints)
}

pub struct CheckNetworkAccess;
impl Operation for CheckNetworkAccess {
    const NAME: &'static str = "check_network_access";
    const SUMMARY: &'static str = "Ask whether you may connect to a URL or host (your network policy decides; logged)";
    const DESCRIPTION: &'static str = "Before fetching a URL or connecting to a host, ask: target is a URL \
        (http, https, ws, wss) or host[:port] (port 443 when absent). The policy your profile names decides: \
        deny entries win, then allow entries (host, *.host for subdomains only, addresses and networks, \
        @category; without :port an entry means ports 80 and 443), then the policy's default; an address in a \
        reserved range (loopback, private, link-local, metadata) needs an entry naming it. Hosts are \
        normalised first (case, trailing dot, IDNA, every IPv4 spelling; in a URL the host is what follows \
        any user@). Answers {success:true, allowed:true, domain, port, policy, reason, rule} or \
        {success:false, error:\"domain_blocked\", domain, port, reason, policy}. Every decision is written to \
        the network access log; refusals raise an alert. With addresses (what the host resolved to), only \
        those the policy admits may be dialled; resolve_next:true marks a check before resolving (a pass is \
        then not logged: the caller asks again with the addresses). Inside `coord sandbox run` the egress proxy asks this \
        for every connection, so what it refuses cannot be reached at all.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    // Asked for every connection an agent makes through the proxy: not an API call to
    // count against max_api_calls.
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::post("/network/check").errors(&[403])];
    const EXAMPLE: &'static str = "{\"target\": \"https://pypi.org/simple/requests/\"}";
    type Request = CheckNetworkAccessRequest;
    type Response = CheckNetworkAccessResult;
    type Args = Check;

    fn validate(_: &Coordinator, _: &Identity, req: CheckNetworkAccessRequest) -> CoordResult<Check> {
        network::validate_check(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, check: Check) -> CoordResult<CheckNetworkAccessResult> {
        // Read on every check: a policy change applies to the next request.
        let policies = merge(&c.store().network_policy_rows().await?);
        let who = ctx.egress.clone().unwrap_or_else(|| EgressProfile {
            policy: network::DENY_ALL.into(),
            ..EgressProfile::default()
        });
        let rules = Rules::new(&who, &policies, &configured_categories(c));
        let outcome = network::answer(&rules, &check);
        c.store().network_decision(ctx, outcome, check.provisional).await
    }
}

pub struct ListNetworkPolicies;
impl Operation for ListNetworkPolicies {
    const NAME: &'static str = "list_network_policies";
    const SUMMARY: &'static str = "List the network policies in effect and the domain categories";
    const DESCRIPTION: &'static str = "List every network policy (source builtin, modified or custom; default \
        allow or deny; allow and deny entries; trust_defaults) and the domain categories policies include as \
        @name (coordination, source_control, package_managers, documentation, cloud_providers), each with the \
        trust level it is a default for. Answers {success:true, policies:[...], categories:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/network/policies").input(Input::None)];
    const EXAMPLE: &'static str = "{}";
    type Request = Empty;
    type Response = ListNetworkPoliciesResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ListNetworkPoliciesResult> {
        let rows = c.store().list_network_policy_rows(ctx).await?;
        Ok(ListNetworkPoliciesResult {
            success: true,
            policies: merge(&rows),
            categories: configured_categories(c),
        })
    }
}

pub struct SetNetworkPolicy;
impl Operation for SetNetworkPolicy {
    const NAME: &'static str = "set_network_policy";
    const SUMMARY: &'static str = "Add a network policy or replace one (administrators)";
    const DESCRIPTION: &'static str = "Store a whole network policy: name (a built-in name replaces that policy), \
        description, default (allow or deny), allow and deny entries (host, *.host, an address or network such \
        as 10.0.0.0/8, @category; optional :port or :*; no bare *), trust_defaults. Every entry is read first: \
        one that does not read, or an unknown category, is refused and nothing is stored. Takes effect on the \
        next check. Trust 4 (manage_policies). Answers {success:true, policy:{...}}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/network/policies/set")];
    const EXAMPLE: &'static str = "{\"name\": \"team\", \"description\": \"registries and our API\", \"default\": \
        \"deny\", \"allow\": [\"@package_managers\", \"api.example.com\", \"*.internal.example.com:8443\"], \"deny\": \
        [\"evil.example.com\"]}";
    type Request = SetNetworkPolicyRequest;
    type Response = SetNetworkPolicyResult;
    type Args = NetworkPolicy;

    fn validate(c: &Coordinator, _: &Identity, req: SetNetworkPolicyRequest) -> CoordResult<NetworkPolicy> {
        network::validate_policy(req.into(), &configured_categories(c))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, policy: NetworkPolicy) -> CoordResult<SetNetworkPolicyResult> {
        let row = c.store().set_network_policy(ctx, policy).await?;
        let policy = merge(std::slice::from_ref(&row))
            .into_iter()
            .find(|e| e.policy.name == row.policy.name && e.source != RuleSource::Builtin)
            .ok_or_else(CoordError::internal)?;
        Ok(SetNetworkPolicyResult { success: true, policy })
    }
}

pub struct ResetNetworkPolicy;
impl Operation for ResetNetworkPolicy {
    const NAME: &'static str = "reset_network_policy";
    const SUMMARY: &'static str = "Remove a custom network policy or restore a built-in one (administrators)";
    const DESCRIPTION: &'static str = "Remove the stored row of name: a custom policy is gone (profiles naming it \
        then allow nothing), a built-in policy is in effect again as shipped. not_found when nothing is stored \
        under that name. Trust 4 (manage_policies). Answers {success:true, name, builtin_restored}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/network/policies/reset").errors(&[404])];
    const EXAMPLE: &'static str = "{\"name\": \"full_access\"}";
    type Request = ResetNetworkPolicyRequest;
    type Response = ResetNetworkPolicyResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: ResetNetworkPolicyRequest) -> CoordResult<String> {
        network::validate_name(&req.name)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, name: String) -> CoordResult<ResetNetworkPolicyResult> {
        let name = c.store().delete_network_policy(ctx, name).await?;
        Ok(ResetNetworkPolicyResult {
            success: true,
            builtin_restored: network::builtin_policies().iter().any(|p| p.name == name),
            name,
        })
    }
}

pub struct NetworkAccessLog;
impl Operation for NetworkAccessLog {
    const NAME: &'static str = "network_access_log";
    const SUMMARY: &'static str = "Read the network access log, newest first";
    const DESCRIPTION: &'static str = "Read the log of egress decisions (check_network_access and the egress \
        proxy), newest first: agent_id, host, port, allowed, alert (every refusal), policy, reason, rule, at. \
        Filter by agent_id and allowed; limit 1-1000 (default 100). You read your own; an administrator (trust \
        4, an operator key) reads everyone's. Answers {success:true, entries:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/network/log").errors(&[403])];
    const EXAMPLE: &'static str = "{\"allowed\": false, \"limit\": 20}";
    type Request = NetworkAccessLogRequest;
    type Response = NetworkAccessLogResult;
    type Args = NetworkAccessLogRequest;

    fn validate(_: &Coordinator, _: &Identity, req: NetworkAccessLogRequest) -> CoordResult<NetworkAccessLogRequest> {
        Ok(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: NetworkAccessLogRequest) -> CoordResult<NetworkAccessLogResult> {
        let filter: AccessLogFilter = match network::access_log_filter(req, &ctx.who.agent_id, ctx.audit_admin) {
            Ok(f) => f,
            Err(e) => {
                c.audit_refusal(&ctx, &e).await;
                return Err(e);
            }
        };
        let entries = c.store().network_access_log(ctx, filter).await?;
        Ok(NetworkAccessLogResult { success: true, entries })
    }
}

pub struct RecordSandboxRun;
impl Operation for RecordSandboxRun {
    const NAME: &'static str = "record_sandbox_run";
    const SUMMARY: &'static str = "Record that a command starts under `coord sandbox run` (audit only)";
    const DESCRIPTION: &'static str = "Written by `coord sandbox run` before the command starts, as the agent it \
        runs as: the command line, the workspace and how egress is enforced (namespace: the proxy is the only way \
        out; advisory: --no-sandbox, proxy variables only). Changes nothing but the audit trail. Answers \
        {success:true, enforcement, policy}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::post("/network/sandbox-runs")];
    const EXAMPLE: &'static str =
        "{\"command\": [\"npm\", \"test\"], \"enforcement\": \"namespace\", \"workspace\": \"/work/repo\"}";
    type Request = SandboxRunRequest;
    type Response = SandboxRunResult;
    type Args = SandboxRunRequest;

    fn validate(_: &Coordinator, _: &Identity, req: SandboxRunRequest) -> CoordResult<SandboxRunRequest> {
        network::validate_sandbox_run(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: SandboxRunRequest) -> CoordResult<SandboxRunResult> {
        let result = SandboxRunResult {
            success: true,
            enforcement: req.enforcement,
            policy: ctx
                .egress
                .as_ref()
                .map_or_else(|| network::DENY_ALL.to_string(), |e| e.policy.clone()),
        };
        c.store().append_audit(ctx.now, ctx.audit(Ok(&result))).await?;
        Ok(result)
    }
}
