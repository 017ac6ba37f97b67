//! Requirement "Network Access Policies": decisions by the caller's profile's policy,
//! the exact refusal, the access log and audit, policies as data changed by trust 4.

use crate::cases::profiles::{give, profile, run};
use crate::{Backend, Harness, agent, operator};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::guardrail_rules::RuleSource;
use coord_domain::network::{
    CheckNetworkAccessRequest, CheckNetworkAccessResult, DefaultAction, NetworkAccessLogRequest, Reason,
    ResetNetworkPolicyRequest, SetNetworkPolicyRequest,
};
use coord_domain::profiles::Permission;
use coord_domain::{Caller, CoordError, CoordResult, Empty, ErrorCode};
use coord_service::ops::{audit, network as ops};
use serde_json::{Value, json};

async fn check(h: &Harness, who: &Caller, target: &str) -> CoordResult<CheckNetworkAccessResult> {
    run::<ops::CheckNetworkAccess>(
        h,
        who,
        CheckNetworkAccessRequest {
            target: target.into(),
            addresses: None,
            resolve_next: false,
        },
    )
    .await
}

fn blocked(r: CoordResult<CheckNetworkAccessResult>, domain: &str, reason: &str) -> CoordError {
    let e = r.expect_err(domain);
    assert_eq!(e.code, ErrorCode::DomainBlocked, "{domain}: {e:?}");
    assert_eq!(e.details.get("domain").and_then(Value::as_str), Some(domain), "{e:?}");
    assert_eq!(
        e.details.get("reason").and_then(Value::as_str),
        Some(reason),
        "{domain}: {e:?}"
    );
    e
}

/// Gives `who` a trust-`trust` profile naming `policy`.
async fn with_policy(h: &Harness, who: &str, trust: u8, policy: &str, required: &[&str]) {
    let mut p = profile(&format!("p-{who}"), trust, &[Permission::Read], json!({}));
    p.network_policy = Some(policy.into());
    p.required_domains = required.iter().map(|s| s.to_string()).collect();
    give(h, p, who).await;
}

async fn log(
    h: &Harness,
    who: &Caller,
    agent_id: Option<&str>,
) -> CoordResult<coord_domain::network::NetworkAccessLogResult> {
    run::<ops::NetworkAccessLog>(
        h,
        who,
        NetworkAccessLogRequest {
            agent_id: agent_id.map(str::to_string),
            ..Default::default()
        },
    )
    .await
}

/// The built-in profiles of launched agents (`coord agent run`), as the store seeded them:
/// each reaches the coordinator and the model provider (the providers' own hosts and the
/// configured endpoint, a loopback address included), and only what its profile adds.
pub async fn network_worker_profiles_reach_their_model(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.model_endpoints = vec!["127.0.0.1:4010".into()]).await;
    let root = operator("root");
    for (who, profile) in [
        ("reviewer-1", "worker-read-only"),
        ("coder-1", "worker-write"),
        ("designer-1", "worker-design"),
    ] {
        let req = coord_domain::profiles::AssignProfileRequest {
            profile: profile.into(),
            target_agent_id: Some(who.into()),
            target_agent_type: None,
        };
        run::<coord_service::ops::profiles::AssignProfile>(&h, &root, req)
            .await
            .unwrap();
    }
    let (reviewer, coder, designer) = (
        Caller::new("reviewer-1", "worker"),
        Caller::new("coder-1", "worker"),
        Caller::new("designer-1", "worker"),
    );
    for who in [&reviewer, &coder, &designer] {
        assert!(check(&h, who, "https://api.anthropic.com/v1/messages").await.is_ok());
        assert!(check(&h, who, "http://127.0.0.1:4010/v1/messages").await.is_ok());
        // The endpoint's port only.
        blocked(check(&h, who, "127.0.0.1:4011").await, "127.0.0.1", "not_allowlisted");
    }
    let ok = check(&h, &reviewer, "api.openai.com").await.unwrap();
    assert_eq!(ok.policy, "worker_read_only");
    blocked(check(&h, &reviewer, "pypi.org").await, "pypi.org", "not_allowlisted");
    blocked(
        check(&h, &reviewer, "github.com").await,
        "github.com",
        "not_allowlisted",
    );
    assert!(check(&h, &designer, "docs.rs").await.is_ok());
    blocked(check(&h, &designer, "pypi.org").await, "pypi.org", "not_allowlisted");
    assert!(check(&h, &coder, "pypi.org").await.is_ok());
    assert!(check(&h, &coder, "github.com").await.is_ok());
    blocked(
        check(&h, &coder, "evil.example").await,
        "evil.example",
        "not_allowlisted",
    );
}

pub async fn network_policies_decide_and_log(b: &dyn Backend) {
    let h = Harness::with_config(b, |c| c.coordination_domains = vec!["coord.example.net".into()]).await;
    // The cases' agents run Claude Code: claude-code-cli, full_access.
    let dev = agent("dev");
    let ok = check(&h, &dev, "https://Example.ORG./x?y=1").await.unwrap();
    assert_eq!(
        (ok.success, ok.allowed, ok.domain.as_str(), ok.port),
        (true, true, "example.org", 443)
    );
    assert_eq!((ok.policy.as_str(), ok.reason), ("full_access", Reason::DefaultAllow));
    blocked(check(&h, &dev, "127.0.0.1:5432").await, "127.0.0.1", "reserved_address");
    blocked(
        check(&h, &dev, "http://2130706433/").await,
        "127.0.0.1",
        "reserved_address",
    );
    blocked(
        check(&h, &dev, "http://169.254.169.254/latest/meta-data").await,
        "169.254.169.254",
        "reserved_address",
    );

    // documentation_only: docs, source control and the coordinator; nothing else.
    with_policy(&h, "reviewer", 2, "documentation_only", &[]).await;
    let reviewer = agent("reviewer");
    let ok = check(&h, &reviewer, "https://docs.python.org/3/").await.unwrap();
    assert_eq!(
        (ok.reason, ok.rule.as_deref()),
        (Reason::Allowlisted, Some("docs.python.org"))
    );
    assert!(
        check(&h, &reviewer, "coord.example.net").await.is_ok(),
        "the coordination category"
    );
    let e = blocked(check(&h, &reviewer, "pypi.org").await, "pypi.org", "not_allowlisted");
    assert_eq!(
        e.details.get("policy").and_then(Value::as_str),
        Some("documentation_only")
    );
    blocked(
        check(&h, &reviewer, "http://docs.python.org@evil.com/").await,
        "evil.com",
        "not_allowlisted",
    );

    // Unknown means least privilege: deny_all. A profile naming no such policy: nothing.
    let stranger = Caller::new("stranger", "mystery");
    blocked(
        check(&h, &stranger, "github.com").await,
        "github.com",
        "not_allowlisted",
    );
    with_policy(&h, "lost", 3, "no_such_policy", &[]).await;
    blocked(
        check(&h, &agent("lost"), "github.com").await,
        "github.com",
        "unknown_policy",
    );
    // Required domains pass whatever the policy.
    with_policy(&h, "cloud", 2, "deny_all", &["api.example.com"]).await;
    assert!(check(&h, &agent("cloud"), "api.example.com").await.is_ok());

    // Unreadable targets are refused as input, audited, and not logged as access.
    for bad in ["allowed.com@evil.com", "", "ftp://x.org/", "*.example.com"] {
        let e = check(&h, &reviewer, bad).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
    }

    // Concurrent checks are each logged.
    let mut racing = tokio::task::JoinSet::new();
    for i in 0..8 {
        let coord = h.coord.clone();
        racing.spawn(async move {
            let target = if i % 2 == 0 { "docs.rs" } else { "evil.com" };
            let who = coord_domain::access::Principal::local(agent("reviewer"));
            let req = CheckNetworkAccessRequest {
                target: target.into(),
                addresses: None,
                resolve_next: false,
            };
            coord_service::call::<ops::CheckNetworkAccess, _>(&*coord, &who, req).await
        });
    }
    let results = racing.join_all().await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 4);

    // The log: the reviewer's decisions, refusals alerting; its own only. (The HTTP
    // door's conformance client holds an operator key: an administrator there.)
    let mine = log(&h, &reviewer, Some("reviewer")).await.unwrap();
    assert_eq!(mine.entries.len(), 4 + 8, "{:?}", mine.entries);
    assert!(mine.entries.iter().all(|e| e.access.agent_id == "reviewer"));
    assert!(mine.entries.iter().all(|e| e.access.alert != e.access.allowed));
    assert_eq!(mine.entries.iter().filter(|e| e.access.allowed).count(), 2 + 4);
    let pypi = mine.entries.iter().find(|e| e.access.host == "pypi.org").unwrap();
    assert_eq!(
        (pypi.access.port, pypi.access.reason.as_str()),
        (443, "not_allowlisted")
    );
    if h.door != crate::Door::Http {
        assert_eq!(
            log(&h, &reviewer, None).await.unwrap().entries.len(),
            4 + 8,
            "the default is your own"
        );
        let e = log(&h, &reviewer, Some("dev")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
    }
    let refused = run::<ops::NetworkAccessLog>(
        &h,
        &operator("root"),
        NetworkAccessLogRequest {
            allowed: Some(false),
            limit: Some(1000),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let agents: std::collections::BTreeSet<&str> = refused.entries.iter().map(|e| e.access.agent_id.as_str()).collect();
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        ["dev", "lost", "reviewer", "stranger"]
    );

    // Every decision is in the audit trail too, refusals with their code.
    let audited = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("reviewer".into()),
            operation: Some("check_network_access".into()),
            limit: Some(100),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(audited.entries.len(), 4 + 4 + 8, "decisions and the refused inputs");
    assert_eq!(
        audited
            .entries
            .iter()
            .filter(|e| e.error_code.as_deref() == Some("domain_blocked"))
            .count(),
        2 + 4
    );
}

fn policy(name: &str, default: DefaultAction, allow: &[&str], deny: &[&str]) -> SetNetworkPolicyRequest {
    SetNetworkPolicyRequest {
        name: name.into(),
        description: format!("{name} for the tests"),
        default,
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        trust_defaults: false,
    }
}

async fn worker_log(h: &Harness) -> usize {
    log(h, &operator("root"), Some("worker")).await.unwrap().entries.len()
}

pub async fn network_policy_changes_apply_to_the_next_request(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let root = operator("root");
    let set = |p: SetNetworkPolicyRequest| run::<ops::SetNetworkPolicy>(&h, &root, p);
    let stored = set(policy(
        "team",
        DefaultAction::Deny,
        &["@package_managers", "api.example.com:8443"],
        &["evil.npmjs.org"],
    ))
    .await
    .unwrap();
    assert_eq!(stored.policy.source, RuleSource::Custom);
    assert_eq!(stored.policy.updated_by.as_deref(), Some("root"));

    with_policy(&h, "worker", 2, "team", &[]).await;
    let worker = agent("worker");
    assert!(check(&h, &worker, "pypi.org").await.is_ok());
    assert!(check(&h, &worker, "a.registry.npmjs.org").await.is_ok());
    blocked(
        check(&h, &worker, "evil.npmjs.org").await,
        "evil.npmjs.org",
        "denylisted",
    );
    assert!(check(&h, &worker, "api.example.com:8443").await.is_ok());
    blocked(
        check(&h, &worker, "api.example.com").await,
        "api.example.com",
        "not_allowlisted",
    );

    // A misspelt field stores nothing.
    let raw = serde_json::json!({"name": "team", "default": "allow", "denny": ["evil.com"]});
    let who = coord_domain::access::Principal::local(root.clone());
    let op = coord_service::op_named("set_network_policy").unwrap();
    let e = h.coord.invoke(op, &who, Ok(raw)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument, "{e:?}");

    // The proxy's two steps: a provisional pass is not logged; the decision with the
    // resolved addresses is, and so is a name that resolved to nothing.
    let ask = |addresses: Option<Vec<&str>>, resolve_next: bool| {
        run::<ops::CheckNetworkAccess>(
            &h,
            &worker,
            CheckNetworkAccessRequest {
                target: "pypi.org".into(),
                addresses: addresses.map(|a| a.into_iter().map(String::from).collect()),
                resolve_next,
            },
        )
    };
    let before = worker_log(&h).await;
    assert!(ask(None, true).await.is_ok());
    assert_eq!(worker_log(&h).await, before, "a provisional pass is not logged");
    let ok = ask(Some(vec!["151.101.0.223", "10.0.0.1"]), false).await.unwrap();
    assert_eq!(
        ok.addresses,
        ["151.101.0.223"],
        "only admitted addresses may be dialled"
    );
    blocked(ask(Some(vec![]), false).await, "pypi.org", "not_resolved");
    assert_eq!(worker_log(&h).await, before + 2);

    // A change applies to the next request.
    set(policy("team", DefaultAction::Deny, &["api.example.com:8443"], &[]))
        .await
        .unwrap();
    blocked(check(&h, &worker, "pypi.org").await, "pypi.org", "not_allowlisted");

    // Only trust 4 changes policies (the HTTP door's client holds an operator key); what
    // does not read is refused and nothing stored.
    if h.door != crate::Door::Http {
        let e = run::<ops::SetNetworkPolicy>(&h, &agent("dev"), policy("team", DefaultAction::Allow, &[], &[]))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
    }
    for (allow, field) in [
        (&["ok.com", "*"][..], "allow[1]"),
        (&["@nope"][..], "allow[0]"),
        (&["*.com"][..], "allow[0]"),
    ] {
        let e = set(policy("team", DefaultAction::Allow, allow, &[])).await.unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some(field)),
            "{allow:?}"
        );
    }
    let e = set(policy("Bad Name", DefaultAction::Deny, &[], &[]))
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("name"));
    blocked(check(&h, &worker, "ok.com").await, "ok.com", "not_allowlisted");

    // A built-in policy replaced, then restored.
    let dev = agent("dev");
    assert!(check(&h, &dev, "a.evil.com").await.is_ok());
    let modified = set(policy("full_access", DefaultAction::Allow, &[], &["*.evil.com"]))
        .await
        .unwrap();
    assert_eq!(modified.policy.source, RuleSource::Modified);
    blocked(check(&h, &dev, "a.evil.com").await, "a.evil.com", "denylisted");
    let listed = run::<ops::ListNetworkPolicies>(&h, &dev, Empty {}).await.unwrap();
    let names: Vec<(&str, RuleSource)> = listed
        .policies
        .iter()
        .map(|p| (p.policy.name.as_str(), p.source))
        .collect();
    assert_eq!(
        names,
        [
            ("full_access", RuleSource::Modified),
            ("documentation_only", RuleSource::Builtin),
            ("package_managers_and_docs", RuleSource::Builtin),
            ("coordination_only", RuleSource::Builtin),
            ("configurable", RuleSource::Builtin),
            ("worker_read_only", RuleSource::Builtin),
            ("worker_design", RuleSource::Builtin),
            ("worker_write", RuleSource::Builtin),
            ("deny_all", RuleSource::Builtin),
            ("team", RuleSource::Custom),
        ]
    );
    assert_eq!(listed.categories.len(), 6);
    let reset = |name: &str| run::<ops::ResetNetworkPolicy>(&h, &root, ResetNetworkPolicyRequest { name: name.into() });
    assert!(reset("full_access").await.unwrap().builtin_restored);
    assert!(check(&h, &dev, "a.evil.com").await.is_ok());
    assert_eq!(reset("full_access").await.unwrap_err().code, ErrorCode::NotFound);
    assert!(!reset("team").await.unwrap().builtin_restored);
    blocked(
        check(&h, &worker, "api.example.com:8443").await,
        "api.example.com",
        "unknown_policy",
    );
}
