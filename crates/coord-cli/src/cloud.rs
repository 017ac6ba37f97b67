//! Cloud agents: `coord key issue` mints a short-lived key for one cloud session or task,
//! bound to an identity and its profile; `coord cloud env` also prints the environment
//! the cloud agent needs and the domains its network allowlist must let through.
//! Both are registry operations underneath (`assign_profile`, `create_api_key`,
//! `explain_profile`).

use crate::args::{Cli, CloudCommand, GlobalArgs, IssueArgs};
use crate::context::Context;
use crate::output::{Output, when};
use crate::values::parse_lifetime;
use coord_domain::access::Principal;
use coord_domain::keys::{CreateApiKeyRequest, CreateApiKeyResult};
use coord_domain::profiles::{AssignProfileRequest, ExplainProfileRequest};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::ops::{keys, profiles};
use coord_service::{Coordination, call};
use serde::Serialize;
use std::collections::BTreeMap;

/// A key issued for one session or task, with the profile it acts under.
#[derive(Debug, Serialize)]
pub struct Issued {
    #[serde(flatten)]
    pub key: CreateApiKeyResult,
    pub profile: String,
    /// Domains the profile says the agent must always reach.
    pub required_domains: Vec<String>,
}

/// The key `coord key issue` asks for, from the command line alone: the identity written
/// there (COORD_AGENT_ID/COORD_AGENT_TYPE are the operator's own, never the agent's), one
/// identity per session or task so two cloud agents never share one, and the lifetime.
/// How long such a key may live is the domain's rule (`keys::MAX_WORK_KEY_MINUTES`).
fn key_request(args: &IssueArgs, global: &GlobalArgs) -> CoordResult<CreateApiKeyRequest> {
    let (written_id, written_type) = Cli::written_identity(global);
    let Some(agent_type) = written_type else {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "agent_type",
            "give the agent type the key acts as on the command line: --agent-type claude_code_web (or codex_cloud, ...)",
        ));
    };
    let (session_id, task_id) = (args.work.session.clone(), args.work.task.clone());
    let work = session_id.as_deref().or(task_id.as_deref()).unwrap_or_default().trim();
    if work.is_empty() {
        // A blank id names no work: the domain would read it as a service account's key.
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            if session_id.is_some() { "session_id" } else { "task_id" },
            "name the session or task the key is for: --session ID or --task ID",
        ));
    }
    let minutes = parse_lifetime("ttl", &args.ttl)?;
    let req = CreateApiKeyRequest {
        bound_agent_id: written_id.unwrap_or_else(|| format!("{agent_type}-{work}")),
        bound_agent_type: agent_type,
        expires_in_minutes: Some(minutes),
        session_id,
        task_id,
    };
    // The domain's own validation, before the profile is assigned: a key it would refuse
    // must not leave a profile assignment behind.
    coord_domain::keys::validate_new_key(req.clone(), String::new(), "")?;
    Ok(req)
}

/// Builds the key's request (a request the command line cannot build is refused through
/// the pipeline, so it is audited as `create_api_key`), assigns the profile if asked,
/// creates the key, and reads the profile the key's identity now has.
pub async fn issue(
    args: &IssueArgs,
    coord: &dyn Coordination,
    creator: &Caller,
    global: &GlobalArgs,
) -> CoordResult<Issued> {
    let admin = Principal::local(creator.clone());
    let req = match key_request(args, global) {
        Ok(req) => req,
        Err(e) => return Err(coord_service::refuse::<keys::CreateApiKey, _>(coord, &admin, e).await),
    };
    let (agent_id, agent_type) = (req.bound_agent_id.clone(), req.bound_agent_type.clone());
    if let Some(profile) = &args.profile {
        call::<profiles::AssignProfile, _>(
            coord,
            &admin,
            AssignProfileRequest {
                profile: profile.clone(),
                target_agent_id: Some(agent_id.clone()),
                target_agent_type: None,
            },
        )
        .await?;
    }
    let key = call::<keys::CreateApiKey, _>(coord, &admin, req).await?;
    let explained = call::<profiles::ExplainProfile, _>(
        coord,
        &admin,
        ExplainProfileRequest {
            target_agent_id: Some(agent_id),
            target_agent_type: Some(agent_type),
            operation: None,
        },
    )
    .await?;
    Ok(Issued {
        key,
        profile: explained.profile.name,
        required_domains: explained.profile.required_domains,
    })
}

fn describe(i: &Issued) -> String {
    let k = &i.key;
    let work = match (&k.session_id, &k.task_id) {
        (Some(s), _) => format!("session {s}"),
        (_, Some(t)) => format!("task {t}"),
        _ => "no session or task".into(),
    };
    format!(
        "key {} acts as {} ({}) for {work}, profile {}, expires {}",
        k.key_id,
        k.agent_id,
        k.agent_type,
        i.profile,
        k.expires_at.map(when).unwrap_or_else(|| "never".into())
    )
}

/// `coord key issue`.
pub async fn issue_command(
    args: &IssueArgs,
    coord: &dyn Coordination,
    creator: &Caller,
    global: &GlobalArgs,
    out: Output,
) -> u8 {
    out.result(issue(args, coord, creator, global).await, |i| {
        format!(
            "{}\n\n{}.\nThe secret above is shown only now; give it to the agent as COORDINATION_API_KEY.",
            i.key.api_key,
            describe(i)
        )
    })
}

/// What a cloud agent's environment needs.
#[derive(Debug, Serialize)]
struct CloudEnv {
    env: BTreeMap<&'static str, String>,
    /// Domains to add to the agent's network allowlist.
    allowlist: Vec<String>,
    #[serde(flatten)]
    issued: Issued,
}

/// The host of an http(s) URL, for an allowlist.
fn host_of(raw: &str) -> CoordResult<String> {
    let bad = || {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "url",
            format!("--url {raw:?} is not an http(s) URL like https://coord.example.com:8081"),
        )
    };
    let parsed = url::Url::parse(raw).map_err(|_| bad())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad());
    }
    parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .map(String::from)
        .ok_or_else(bad)
}

pub async fn run(cmd: &CloudCommand, ctx: &Context, global: &GlobalArgs, out: Output) -> u8 {
    let CloudCommand::Env { issue: args, url } = cmd;
    let Some(url) = url.clone().or_else(|| global.remote.clone()) else {
        return out.error(&CoordError::field(
            ErrorCode::InvalidArgument,
            "url",
            "give the address cloud agents reach coord at: --url https://coord.example.com:8081",
        ));
    };
    let host = match host_of(url.trim()) {
        Ok(h) => h,
        Err(e) => return out.error(&e),
    };
    let coord = match crate::open::coordination(ctx, 2).await {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let (creator_id, creator_type) = crate::context::default_identity(false);
    let creator = Caller::new(creator_id, creator_type);
    let issued = match issue(args, coord.as_ref(), &creator, global).await {
        Ok(i) => i,
        Err(e) => return out.error(&e),
    };
    let mut allowlist = vec![host];
    for d in &issued.required_domains {
        if !allowlist.contains(d) {
            allowlist.push(d.clone());
        }
    }
    let env = BTreeMap::from([
        ("COORDINATION_API_URL", url.trim().trim_end_matches('/').to_string()),
        ("COORDINATION_API_KEY", issued.key.api_key.clone()),
        ("AGENT_TYPE", issued.key.agent_type.clone()),
    ]);
    let answer = CloudEnv { env, allowlist, issued };
    out.result(Ok(answer), |a| {
        let mut lines = vec![format!("# {}", describe(&a.issued))];
        lines.push("# The key is shown only now. Put these in the cloud agent's environment (secrets):".into());
        for (k, v) in &a.env {
            lines.push(format!("export {k}={}", shell_quote(v)));
        }
        lines.push("# Add these domains to its network allowlist:".into());
        lines.extend(a.allowlist.iter().map(|d| format!("#   {d}")));
        lines.join("\n")
    })
}

/// Single-quotes a value for POSIX shells when it needs it.
fn shell_quote(v: &str) -> String {
    if v.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c)) && !v.is_empty() {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_for_the_allowlist() {
        let cases = [
            ("https://coord.example.com", Some("coord.example.com")),
            ("https://coord.example.com:8081/", Some("coord.example.com")),
            ("http://user:pw@10.0.0.5:9/x?y", Some("10.0.0.5")),
            ("http://[::1]:8081", Some("[::1]")),
            ("ftp://x", None),
            ("https://", None),
            ("coord.example.com", None),
        ];
        for (url, want) in cases {
            assert_eq!(host_of(url).ok().as_deref(), want, "{url}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("coord_abc"), "coord_abc");
        assert_eq!(shell_quote("https://x:1/a"), "https://x:1/a");
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
    }
}
