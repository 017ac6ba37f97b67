//! `coord network`: egress policies from the shell (the operations agents call).

use crate::args::NetworkCommand;
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::network::{
    CheckNetworkAccessRequest, ListNetworkPoliciesResult, NetworkAccessLogRequest, NetworkAccessLogResult,
    ResetNetworkPolicyRequest, SetNetworkPolicyRequest,
};
use coord_domain::{CoordError, ErrorCode};
use coord_service::ops::network::{
    CheckNetworkAccess, ListNetworkPolicies, NetworkAccessLog, ResetNetworkPolicy, SetNetworkPolicy,
};
use coord_service::{Coordination, call};

fn list(v: &[String]) -> String {
    if v.is_empty() { "-".into() } else { v.join(", ") }
}

fn render_policies(r: &ListNetworkPoliciesResult) -> String {
    let mut t = table(&["POLICY", "SOURCE", "DEFAULT", "ALLOW", "DENY", "TRUST DEFAULTS"]);
    for p in &r.policies {
        t.add_row(vec![
            p.policy.name.clone(),
            format!("{:?}", p.source).to_lowercase(),
            format!("{:?}", p.policy.default).to_lowercase(),
            list(&p.policy.allow),
            list(&p.policy.deny),
            if p.policy.trust_defaults { "yes" } else { "no" }.into(),
        ]);
    }
    let mut c = table(&["CATEGORY", "DEFAULT FROM TRUST", "DOMAINS"]);
    for cat in &r.categories {
        c.add_row(vec![
            format!("@{}", cat.name),
            cat.trust_level.to_string(),
            list(&cat.domains),
        ]);
    }
    format!("{t}\n\n{c}")
}

fn render_log(r: &NetworkAccessLogResult) -> String {
    if r.entries.is_empty() {
        return "no network access recorded".into();
    }
    let mut t = table(&["AT", "AGENT", "HOST", "PORT", "DECISION", "REASON", "POLICY", "RULE"]);
    for e in &r.entries {
        let a = &e.access;
        t.add_row(vec![
            e.at.format("%Y-%m-%d %H:%M:%S").to_string(),
            a.agent_id.clone(),
            a.host.clone(),
            a.port.to_string(),
            if a.allowed { "allowed" } else { "REFUSED" }.into(),
            a.reason.clone(),
            a.policy.clone(),
            a.rule.clone().unwrap_or_default(),
        ]);
    }
    t.to_string()
}

pub async fn run(cmd: NetworkCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = Principal::local(ctx.caller.clone());
    match cmd {
        NetworkCommand::Check { target } => {
            let req = CheckNetworkAccessRequest {
                target,
                addresses: None,
                resolve_next: false,
            };
            out.result(call::<CheckNetworkAccess, _>(coord, &me, req).await, |r| {
                let by = r
                    .rule
                    .as_deref()
                    .map_or("its default".to_string(), |rule| format!("entry {rule}"));
                // An IPv6 address in brackets, as in a URL; a name is only the first step.
                let (host, then) = match r.domain.parse::<std::net::IpAddr>() {
                    Ok(std::net::IpAddr::V6(_)) => (format!("[{}]", r.domain), ""),
                    Ok(_) => (r.domain.clone(), ""),
                    Err(_) => (
                        r.domain.clone(),
                        "\n(by name: the addresses it resolves to are checked when the proxy connects)",
                    ),
                };
                format!("allowed: {host}:{} (policy {}, by {by}){then}", r.port, r.policy)
            })
        }
        NetworkCommand::Policies => out.result(
            call::<ListNetworkPolicies, _>(coord, &me, Default::default()).await,
            render_policies,
        ),
        NetworkCommand::Set { file } => {
            let policy = crate::profiles::read_document(&file).and_then(|doc| {
                serde_json::from_value::<SetNetworkPolicyRequest>(doc).map_err(|e| {
                    CoordError::field(
                        ErrorCode::InvalidArgument,
                        "file",
                        format!("{file}: not a network policy: {e}"),
                    )
                })
            });
            let policy = match policy {
                Ok(p) => p,
                Err(e) => return crate::ops::refused::<SetNetworkPolicy>(out, coord, &ctx.caller, e).await,
            };
            out.result(call::<SetNetworkPolicy, _>(coord, &me, policy).await, |r| {
                format!("network policy {} stored ({:?})", r.policy.policy.name, r.policy.source).to_lowercase()
            })
        }
        NetworkCommand::Reset { name } => {
            let req = ResetNetworkPolicyRequest { name };
            out.result(call::<ResetNetworkPolicy, _>(coord, &me, req).await, |r| {
                if r.builtin_restored {
                    format!("network policy {} is the built-in one again", r.name)
                } else {
                    format!("network policy {} removed", r.name)
                }
            })
        }
        NetworkCommand::Log {
            agent,
            refused,
            allowed,
            limit,
        } => {
            let req = NetworkAccessLogRequest {
                agent_id: agent,
                allowed: if refused { Some(false) } else { allowed.then_some(true) },
                limit: Some(limit),
            };
            out.result(call::<NetworkAccessLog, _>(coord, &me, req).await, render_log)
        }
    }
}
