//! `coord profile`: list, show, apply (YAML), assign, unassign, explain. Every
//! subcommand is one registry operation; this module reads YAML and renders tables.

use crate::args::{ProfileCommand, ProfileTarget};
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::profiles::{
    ApplyProfilesRequest, AssignProfileRequest, ExplainProfileRequest, ExplainProfileResult, Limit, ListProfilesResult,
    Permission, Profile, ResourceLimits, TimeLimit, UnassignProfileRequest, format_duration,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::profiles as ops;
use coord_service::{Coordination, Operation, call};
use serde_json::{Map, Value};
use std::io::Read;

async fn run_op<O: Operation>(coord: &dyn Coordination, ctx: &Context, req: O::Request) -> CoordResult<O::Response> {
    call::<O, _>(coord, &Principal::local(ctx.caller.clone()), req).await
}

pub async fn run(cmd: ProfileCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match cmd {
        ProfileCommand::List => out.result(
            run_op::<ops::ListProfiles>(coord, ctx, Default::default()).await,
            render_list,
        ),
        ProfileCommand::Show { name } => {
            let found = run_op::<ops::ListProfiles>(coord, ctx, Default::default())
                .await
                .and_then(|all| {
                    let assigned: Vec<String> = all
                        .assignments
                        .iter()
                        .filter(|a| a.profile == name)
                        .map(|a| format!("{} {}", a.kind, a.value))
                        .collect();
                    let p = all
                        .profiles
                        .into_iter()
                        .find(|p| p.name == name)
                        .ok_or_else(|| coord_domain::profiles::profile_not_found(&name))?;
                    Ok((p, assigned))
                });
            match found {
                Ok((p, _)) if out.json => out.result(Ok(p), |_| String::new()),
                Ok((p, assigned)) => {
                    println!("{}", render_profile(&p, &assigned));
                    crate::output::EXIT_OK
                }
                Err(e) => out.error(&e),
            }
        }
        ProfileCommand::Apply { file } => {
            let (req, names) = match read_profiles(&file) {
                Ok(r) => r,
                Err(e) => return crate::ops::refused::<ops::ApplyProfiles>(out, coord, &ctx.caller, e).await,
            };
            let policies: Vec<(String, String)> = req
                .profiles
                .iter()
                .filter_map(|p| p.network_policy.clone().map(|n| (p.name.clone(), n)))
                .collect();
            let answer = run_op::<ops::ApplyProfiles>(coord, ctx, req)
                .await
                .map_err(|e| name_the_profile(e, &names));
            if answer.is_ok() {
                warn_unknown_policies(coord, ctx, &policies).await;
            }
            out.result(answer, |r| {
                let mut t = table(&["PROFILE", "CHANGE", "TRUST"]);
                for c in &r.changes {
                    let trust = match &c.before {
                        Some(b) if b.trust_level != c.after.trust_level => {
                            format!("{} -> {}", b.trust_level, c.after.trust_level)
                        }
                        _ => c.after.trust_level.to_string(),
                    };
                    t.add_row(vec![c.name.clone(), c.action.clone(), trust]);
                }
                t.to_string()
            })
        }
        ProfileCommand::Assign { profile, target } => {
            let req = AssignProfileRequest {
                profile,
                target_agent_id: target.agent.clone(),
                target_agent_type: target.target_type.clone(),
            };
            out.result(run_op::<ops::AssignProfile>(coord, ctx, req).await, |r| {
                let before = r.before.as_deref().map(|b| format!(" (was {b})")).unwrap_or_default();
                format!(
                    "{} {} -> {}{before}",
                    describe(&target),
                    r.value,
                    r.after.as_deref().unwrap_or("-")
                )
            })
        }
        ProfileCommand::Unassign { target } => {
            let req = UnassignProfileRequest {
                target_agent_id: target.agent.clone(),
                target_agent_type: target.target_type.clone(),
            };
            out.result(run_op::<ops::UnassignProfile>(coord, ctx, req).await, |r| {
                match &r.before {
                    Some(b) => format!("{} {} no longer has {b}", describe(&target), r.value),
                    None => format!("{} {} had no assignment", describe(&target), r.value),
                }
            })
        }
        ProfileCommand::Explain {
            agent,
            target_type,
            operation,
        } => {
            let req = ExplainProfileRequest {
                target_agent_id: agent,
                target_agent_type: target_type,
                operation,
            };
            out.result(run_op::<ops::ExplainProfile>(coord, ctx, req).await, render_explain)
        }
    }
}

fn describe(t: &ProfileTarget) -> &'static str {
    if t.agent.is_some() { "agent" } else { "agent type" }
}

/// Says on stderr which applied profiles name a network policy that does not exist (their
/// agents get no network at all: `unknown_policy`). A profile may be applied before its
/// policy, so this warns and does not refuse.
async fn warn_unknown_policies(coord: &dyn Coordination, ctx: &Context, named: &[(String, String)]) {
    if named.is_empty() {
        return;
    }
    let me = Principal::local(ctx.caller.clone());
    let Ok(list) = call::<coord_service::ops::network::ListNetworkPolicies, _>(coord, &me, Default::default()).await
    else {
        return;
    };
    for (profile, policy) in named {
        if !list.policies.iter().any(|p| &p.policy.name == policy) {
            eprintln!(
                "warning: profile {profile} names network policy {policy}, which does not exist: its agents get no network \
                 until it does (coord network set, coord network policies)"
            );
        }
    }
}

/// A YAML or JSON document from `file` (`-`: stdin).
pub(crate) fn read_document(file: &str) -> CoordResult<Value> {
    let unreadable =
        |e: std::io::Error| CoordError::field(ErrorCode::InvalidArgument, "file", format!("cannot read {file}: {e}"));
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(unreadable)?;
        s
    } else {
        std::fs::read_to_string(file).map_err(unreadable)?
    };
    serde_saphyr::from_str(&text).map_err(|e| {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "file",
            format!("{file} is not valid YAML: {e}"),
        )
    })
}

/// The items of a document that lists named things (`key: [...]`, a list, or a map of
/// name -> item, the name put into each item): `None` when it is none of these.
pub(crate) fn named_items(doc: Value, key: &str) -> Option<Value> {
    match doc {
        Value::Object(mut m) if m.contains_key(key) => Some(m.remove(key).unwrap_or_default()),
        Value::Array(a) => Some(Value::Array(a)),
        // The spec's layout: each item under its name.
        Value::Object(m) if !m.is_empty() && m.values().all(Value::is_object) => Some(Value::Array(
            m.into_iter()
                .map(|(name, body)| {
                    let mut body: Map<String, Value> = body.as_object().cloned().unwrap_or_default();
                    body.entry("name").or_insert(Value::String(name));
                    Value::Object(body)
                })
                .collect(),
        )),
        _ => None,
    }
}

/// The profiles in a YAML or JSON document — `profiles: [...]`, a list, or a map of
/// name → profile — as the request, with the names in order (errors say `profiles[i]`).
pub fn read_profiles(file: &str) -> CoordResult<(ApplyProfilesRequest, Vec<String>)> {
    let doc = read_document(file)?;
    let Some(list) = named_items(doc, "profiles") else {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "file",
            format!("{file}: expected `profiles: [...]`, a list of profiles, or a map of name -> profile"),
        ));
    };
    let names: Vec<String> = list
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p.get("name").and_then(Value::as_str).unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    let req = coord_service::pipeline::parse_named(&serde_json::json!({ "profiles": list }))
        .map_err(|e| name_the_profile(e, &names))?;
    Ok((req, names))
}

/// `profiles[2].trust_level: ...` also names the profile (`"reviewer"`).
fn name_the_profile(mut e: CoordError, names: &[String]) -> CoordError {
    let index = e
        .field
        .as_deref()
        .and_then(|f| f.strip_prefix("profiles["))
        .and_then(|f| f.split(']').next())
        .and_then(|i| i.parse::<usize>().ok());
    if let Some(name) = index.and_then(|i| names.get(i)) {
        e.message = format!("profile {name:?}: {}", e.message);
    }
    e
}

fn perms(ps: &[Permission]) -> String {
    if ps.is_empty() {
        return "-".into();
    }
    ps.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(",")
}

fn count(l: Limit) -> Option<String> {
    l.max().map(|n| n.to_string())
}

fn limits(l: &ResourceLimits) -> String {
    let mut parts = Vec::new();
    let named = [
        ("files", count(l.max_file_modifications)),
        ("reads", count(l.max_file_reads)),
        ("time", l.max_execution_time.max().map(format_duration)),
        ("spawn", count(l.max_spawned_agents)),
        ("calls", count(l.max_api_calls)),
    ];
    for (name, v) in named {
        if let Some(v) = v {
            parts.push(format!("{name} {v}"));
        }
    }
    if parts.is_empty() {
        "unlimited".into()
    } else {
        parts.join(", ")
    }
}

fn render_list(r: &ListProfilesResult) -> String {
    let mut t = table(&[
        "PROFILE",
        "TRUST",
        "ALLOWED",
        "BLOCKED",
        "LIMITS",
        "NETWORK",
        "ASSIGNED TO",
    ]);
    for p in &r.profiles {
        let assigned: Vec<String> = r
            .assignments
            .iter()
            .filter(|a| a.profile == p.name)
            .map(|a| {
                if a.kind == "agent" {
                    format!("agent {}", a.value)
                } else {
                    format!("type {}", a.value)
                }
            })
            .collect();
        t.add_row(vec![
            p.name.clone(),
            p.trust_level.to_string(),
            perms(&p.allowed_operations),
            perms(&p.blocked_operations),
            limits(&p.resource_limits),
            p.network_policy.clone().unwrap_or_else(|| "deny_all".into()),
            if assigned.is_empty() {
                "-".into()
            } else {
                assigned.join(", ")
            },
        ]);
    }
    format!("{t}\n\nAn agent gets the profile assigned to its id, else its type's, else least-privilege (read only).")
}

fn render_profile(p: &Profile, assigned: &[String]) -> String {
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let time = match p.resource_limits.max_execution_time {
        TimeLimit::Unlimited => "unlimited".into(),
        TimeLimit::Max(d) => format_duration(d),
    };
    let list = |v: &[String]| if v.is_empty() { "-".into() } else { v.join(", ") };
    format!(
        "profile      {}\ndescription  {}\nagent type   {}\ntrust level  {}\nallowed      {}\nblocked      {}\nelevated     {}\nlimits       {} (execution time {time})\nnetwork      {}\nguardrails   {}\nassigned to  {}",
        p.name,
        opt(&p.description),
        p.agent_type,
        p.trust_level,
        perms(&p.allowed_operations),
        perms(&p.blocked_operations),
        list(&p.elevated_operations),
        limits(&p.resource_limits),
        opt(&p.network_policy),
        list(&p.guardrails),
        list(assigned),
    )
}

fn render_explain(r: &ExplainProfileResult) -> String {
    let source = match r.source {
        coord_domain::profiles::ProfileSource::AgentAssignment => "assigned to this agent".to_string(),
        coord_domain::profiles::ProfileSource::TypeDefault => format!("the default of agent type {}", r.agent_type),
        coord_domain::profiles::ProfileSource::Fallback => format!(
            "nothing is assigned to this agent or to type {}: least privilege",
            r.agent_type
        ),
    };
    let mut s = format!(
        "{} ({}) has profile {} (trust {}): {source}\nsession: {}\nguardrail violations: {}\n\n",
        r.agent_id,
        r.agent_type,
        r.profile.name,
        r.profile.trust_level,
        r.session_id.as_deref().unwrap_or("none"),
        r.guardrail_violations
    );
    let mut t = table(&["LIMIT", "MAX", "USED"]);
    for l in &r.limits {
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        t.add_row(vec![
            l.limit.as_str().to_string(),
            show(&l.max),
            l.used.as_ref().map(show).unwrap_or_else(|| "-".into()),
        ]);
    }
    s.push_str(&t.to_string());
    s.push_str("\n\n");
    let mut t = table(&["OPERATION", "NEEDS", "VERDICT"]);
    for o in &r.operations {
        t.add_row(vec![
            o.operation.clone(),
            format!("{} (trust {})", o.permission, o.min_trust),
            o.reason.clone(),
        ]);
    }
    s.push_str(&t.to_string());
    s
}
