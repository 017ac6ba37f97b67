use super::*;
use serde_json::json;

fn named(name: &str) -> Profile {
    builtin()
        .profiles
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("built-in {name}"))
}

#[test]
fn the_builtin_profiles_are_valid_and_complete() {
    let b = builtin();
    for (i, p) in b.profiles.iter().enumerate() {
        let v = validate_profile(&format!("profiles[{i}]"), p.clone()).expect("valid");
        assert_eq!(&v, p, "{} is stored normalised", p.name);
    }
    for name in [
        "claude-code-cli",
        "claude-code-web-reviewer",
        "claude-code-web-implementer",
        "codex-cloud-worker",
        "strands-orchestrator",
        LEAST_PRIVILEGE,
    ] {
        named(name);
    }
    for profile in b.type_defaults.values() {
        assert!(b.profiles.iter().any(|p| &p.name == profile), "{profile}");
    }
    let lp = least_privilege();
    assert_eq!(
        (lp.trust_level, lp.allowed_operations.as_slice()),
        (0, &[Permission::Read][..])
    );
}

/// The spec's five profiles, field by field ("Preconfigured Agent Profiles").
#[test]
fn the_spec_profiles_have_exactly_their_values() {
    use Permission::*;
    let h = |h: u64| TimeLimit::Max(Duration::from_secs(h * 3600));
    let cases = [
        (
            "claude-code-cli",
            "claude_code_cli",
            3,
            "full_access",
            vec![Read, Write, Execute, GitPush],
            vec![GitPushForceMain, CredentialModify],
            ResourceLimits::default(),
            vec!["warn_destructive_git"],
        ),
        (
            "claude-code-web-reviewer",
            "claude_code_web",
            2,
            "documentation_only",
            vec![Read, Analyze, Comment, CreateReview],
            vec![Write, Execute, GitPush],
            ResourceLimits {
                max_file_reads: Limit::Max(500),
                max_execution_time: TimeLimit::Max(Duration::from_secs(30 * 60)),
                ..Default::default()
            },
            vec!["read_only_filesystem"],
        ),
        (
            "claude-code-web-implementer",
            "claude_code_web",
            3,
            "package_managers_and_docs",
            vec![Read, Write, Execute, GitPushBranch],
            vec![GitPushForce, GitPushMain, CredentialModify],
            ResourceLimits {
                max_file_modifications: Limit::Max(100),
                max_execution_time: h(2),
                ..Default::default()
            },
            vec!["no_destructive_git", "lock_before_write", "test_required"],
        ),
        (
            "codex-cloud-worker",
            "codex_cloud",
            2,
            "coordination_only",
            vec![Read, Write, Execute],
            vec![GitPush],
            ResourceLimits {
                max_file_modifications: Limit::Max(50),
                max_execution_time: h(1),
                ..Default::default()
            },
            vec!["no_destructive_git", "lock_before_write"],
        ),
        (
            "strands-orchestrator",
            "strands_agent",
            4,
            "configurable",
            vec![Read, Write, Execute, SpawnAgent, ManageSwarm],
            vec![CredentialModify],
            ResourceLimits {
                max_spawned_agents: Limit::Max(10),
                max_execution_time: h(8),
                ..Default::default()
            },
            vec!["audit_all_operations"],
        ),
    ];
    for (name, ty, trust, net, allowed, blocked, limits, guardrails) in cases {
        let p = named(name);
        assert_eq!(p.agent_type, ty, "{name}");
        assert_eq!(p.trust_level, trust, "{name}");
        assert_eq!(p.network_policy.as_deref(), Some(net), "{name}");
        assert_eq!(p.allowed_operations, allowed, "{name}");
        assert_eq!(p.blocked_operations, blocked, "{name}");
        assert_eq!(p.resource_limits, limits, "{name}");
        assert_eq!(p.guardrails, guardrails, "{name}");
    }
    assert_eq!(
        named("claude-code-web-implementer").required_domains,
        ["coord.yourdomain.com"]
    );
    assert_eq!(named("codex-cloud-worker").required_domains, ["coord.yourdomain.com"]);
}

/// profile × need → verdict (None = allowed, else the error code).
#[test]
fn decisions() {
    use ErrorCode::{InsufficientTrustLevel as Trust, OperationNotPermitted as NotPermitted};
    let write = Need::new(Permission::Write, 1);
    let admin = Need::admin(Permission::ManagePolicies);
    let spawn = Need::new(Permission::SpawnAgent, 3);
    let cases = [
        ("claude-code-cli", Need::READ, None),
        ("claude-code-cli", write, None),
        ("claude-code-cli", Need::COORDINATE, None), // implied at trust ≥ 1
        ("claude-code-cli", admin, Some(Trust)),     // trust 3 < 4
        ("claude-code-cli", spawn, Some(NotPermitted)),
        ("claude-code-web-reviewer", Need::READ, None),
        ("claude-code-web-reviewer", write, Some(NotPermitted)), // blocked
        ("claude-code-web-reviewer", Need::COORDINATE, None),
        ("claude-code-web-implementer", write, None),
        ("codex-cloud-worker", write, None),
        ("codex-cloud-worker", admin, Some(Trust)),
        ("strands-orchestrator", spawn, None),
        ("strands-orchestrator", admin, None), // implied at trust 4
        ("local-operator", admin, None),
        (LEAST_PRIVILEGE, Need::READ, None),
        (LEAST_PRIVILEGE, write, Some(Trust)), // trust 0 < 1 is reported first
        (LEAST_PRIVILEGE, Need::COORDINATE, Some(Trust)),
        (LEAST_PRIVILEGE, Need::new(Permission::Write, 0), Some(NotPermitted)),
    ];
    for (name, need, want) in cases {
        let got = decide(&named(name), "op", need).err().map(|e| e.code);
        assert_eq!(got, want, "{name} needing {need:?}");
    }
}

#[test]
fn blocked_beats_allowed_and_implied() {
    let mut p = named("claude-code-cli");
    p.blocked_operations.push(Permission::Write);
    assert_eq!(p.grant(Permission::Write), Grant::Blocked);
    p.blocked_operations.push(Permission::Coordinate);
    assert_eq!(p.grant(Permission::Coordinate), Grant::Blocked);
    let e = decide(&p, "acquire_lock", Need::new(Permission::Write, 1)).unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted);
    // Blocked is reported even when the trust level is also too low.
    let mut low = least_privilege();
    low.blocked_operations.push(Permission::Write);
    let e = decide(&low, "acquire_lock", Need::new(Permission::Write, 1)).unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted);
}

#[test]
fn refusals_have_the_spec_shapes() {
    let e = decide(
        &named("claude-code-web-reviewer"),
        "acquire_lock",
        Need::new(Permission::Write, 1),
    )
    .unwrap_err();
    let v = e.to_value();
    assert_eq!(v["success"], false);
    assert_eq!(v["error"], "operation_not_permitted");
    assert_eq!(v["operation"], "acquire_lock");
    assert_eq!(v["permission"], "write");
    let e = decide(
        &named("codex-cloud-worker"),
        "apply_profiles",
        Need::admin(Permission::ManagePolicies),
    )
    .unwrap_err();
    let v = e.to_value();
    assert_eq!(v["error"], "insufficient_trust_level");
    assert_eq!((v["required"].clone(), v["actual"].clone()), (json!(4), json!(2)));
    let v = limit_exceeded(Resource::MaxFileModifications, "x".into()).to_value();
    assert_eq!(v["error"], "resource_limit_exceeded");
    assert_eq!(v["limit"], "max_file_modifications");
}

#[test]
fn resolution_precedence() {
    let a = named("claude-code-web-implementer");
    let t = named("claude-code-web-reviewer");
    assert_eq!(
        resolve(Some(a.clone()), Some(t.clone())),
        (a.clone(), ProfileSource::AgentAssignment)
    );
    assert_eq!(resolve(None, Some(t.clone())), (t, ProfileSource::TypeDefault));
    assert_eq!(resolve(Some(a.clone()), None), (a, ProfileSource::AgentAssignment));
    assert_eq!(resolve(None, None), (least_privilege(), ProfileSource::Fallback));
}

#[test]
fn execution_time() {
    let p = named("codex-cloud-worker"); // 1h
    let start = Timestamp::from_timestamp(1_700_000_000, 0).unwrap();
    let at = |secs: i64| start + chrono::Duration::seconds(secs);
    assert!(check_execution_time(&p, start, at(3600)).is_ok());
    let e = check_execution_time(&p, start, at(3601)).unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
    assert_eq!(e.to_value()["limit"], "max_execution_time");
    assert!(check_execution_time(&named("claude-code-cli"), start, at(1_000_000)).is_ok());
    // A clock behind the session start is not an overrun.
    assert!(check_execution_time(&p, start, at(-60)).is_ok());
}

/// Limits parse from what people write in YAML/JSON; errors say what is wrong.
#[test]
fn limits_parse() {
    let ok = [
        (json!({}), ResourceLimits::default()),
        (
            json!({"max_file_modifications": 50, "max_execution_time": "1h"}),
            ResourceLimits {
                max_file_modifications: Limit::Max(50),
                max_execution_time: TimeLimit::Max(Duration::from_secs(3600)),
                ..Default::default()
            },
        ),
        (
            json!({"max_api_calls": "unlimited", "max_execution_time": 90, "max_file_reads": "7"}),
            ResourceLimits {
                max_api_calls: Limit::Unlimited,
                max_execution_time: TimeLimit::Max(Duration::from_secs(90)),
                max_file_reads: Limit::Max(7),
                ..Default::default()
            },
        ),
        (
            json!({"max_execution_time": "1h 30m"}),
            ResourceLimits {
                max_execution_time: TimeLimit::Max(Duration::from_secs(5400)),
                ..Default::default()
            },
        ),
    ];
    for (raw, want) in ok {
        let got: ResourceLimits = serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{raw}: {e}"));
        assert_eq!(got, want, "{raw}");
        let back: ResourceLimits = serde_json::from_value(serde_json::to_value(got).unwrap()).unwrap();
        assert_eq!(back, want, "{raw} round-trips");
    }
    let bad = [
        (json!({"max_file_modifications": -1}), "negative"),
        (json!({"max_file_modifications": "lots"}), "not a limit"),
        (json!({"max_execution_time": "soon"}), "not a duration"),
        (json!({"max_files": 3}), "unknown field"),
        (json!({"max_file_modifications": 1.5}), "count"),
    ];
    for (raw, want) in bad {
        let e = serde_json::from_value::<ResourceLimits>(raw.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{raw}: {e}");
    }
}

#[test]
fn profile_validation_names_the_field() {
    let base = || named("codex-cloud-worker");
    type Edit = fn(&mut Profile);
    let cases: [(Edit, &str); 7] = [
        (|p| p.trust_level = 7, "profiles[0].trust_level"),
        (|p| p.name = "Bad Name".into(), "profiles[0].name"),
        (|p| p.name = "".into(), "profiles[0].name"),
        (|p| p.agent_type = " ".into(), "profiles[0].agent_type"),
        (
            |p| p.guardrails = vec!["ok".into(), "has space".into()],
            "profiles[0].guardrails[1]",
        ),
        (|p| p.description = Some("x".repeat(501)), "profiles[0].description"),
        (|p| p.name = LEAST_PRIVILEGE.into(), "profiles[0].name"),
    ];
    for (edit, field) in cases {
        let mut p = base();
        edit(&mut p);
        let e = validate_apply(ApplyProfilesRequest { profiles: vec![p] }).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.field.as_deref(), Some(field), "{}", e.message);
    }
    let e = validate_apply(ApplyProfilesRequest {
        profiles: vec![base(), base()],
    })
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("profiles[1].name"));
    assert!(validate_apply(ApplyProfilesRequest { profiles: vec![] }).is_err());
    // Normalised: trimmed, duplicates dropped.
    let mut p = base();
    p.name = " mine ".into();
    p.allowed_operations = vec![Permission::Read, Permission::Read];
    let v = validate_apply(ApplyProfilesRequest { profiles: vec![p] }).unwrap();
    assert_eq!(v[0].name, "mine");
    assert_eq!(v[0].allowed_operations, [Permission::Read]);
    // An unknown permission is refused when the request is read.
    let raw = json!({"name": "x", "agent_type": "t", "trust_level": 1, "allowed_operations": ["fly"]});
    let e = serde_json::from_value::<Profile>(raw).unwrap_err().to_string();
    assert!(e.contains("unknown variant `fly`"), "{e}");
}

#[test]
fn assignee_rules() {
    assert_eq!(
        validate_assignee(Some(" a "), None).unwrap(),
        Assignee::Agent("a".into())
    );
    assert_eq!(
        validate_assignee(None, Some("codex")).unwrap(),
        Assignee::AgentType("codex".into())
    );
    assert!(validate_assignee(Some("a"), Some("b")).is_err());
    assert!(validate_assignee(None, None).is_err());
    assert!(validate_assignee(Some(""), None).is_err());
    let e = validate_assign(AssignProfileRequest {
        profile: "NOPE".into(),
        target_agent_id: Some("a".into()),
        target_agent_type: None,
    })
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("profile"));
}

#[test]
fn effective_profiles_from_a_listing() {
    let assign = |kind: &str, value: &str, profile: &str| Assignment {
        kind: kind.into(),
        value: value.into(),
        profile: profile.into(),
    };
    let list = ListProfilesResult {
        success: true,
        profiles: vec![named("claude-code-cli"), named("local-operator")],
        assignments: vec![
            assign("agent_type", "claude_code", "claude-code-cli"),
            assign("agent", "boss", "local-operator"),
            // Names a profile the listing does not hold: as if unassigned.
            assign("agent", "ghost", "gone"),
        ],
    };
    let cases = [
        ("alice", "claude_code", "claude-code-cli", ProfileSource::TypeDefault),
        ("boss", "claude_code", "local-operator", ProfileSource::AgentAssignment),
        ("ghost", "claude_code", "claude-code-cli", ProfileSource::TypeDefault),
        ("x", "unknown", LEAST_PRIVILEGE, ProfileSource::Fallback),
        // Kinds are not interchangeable: an agent named like a type is not that type.
        ("claude_code", "other", LEAST_PRIVILEGE, ProfileSource::Fallback),
    ];
    for (id, ty, want, source) in cases {
        let (p, s) = effective(&list, id, ty);
        assert_eq!((p.name.as_str(), s), (want, source), "{id} {ty}");
    }
}

/// A refusal of an agent nothing is assigned to says how it gets a profile (most often it
/// was started without its type); one whose profile was assigned, least-privilege
/// included, does not, and neither does any other error.
#[test]
fn refusals_of_unassigned_agents_say_how_to_get_a_profile() {
    let trust = decide(&least_privilege(), "acquire_lock", Need::new(Permission::Write, 1)).unwrap_err();
    let other = CoordError::new(ErrorCode::LockNotHeld, "x");
    for (e, source, hinted) in [
        (trust.clone(), ProfileSource::Fallback, true),
        (trust.clone(), ProfileSource::AgentAssignment, false),
        (trust.clone(), ProfileSource::TypeDefault, false),
        (other, ProfileSource::Fallback, false),
    ] {
        let code = e.code;
        let out = with_unassigned_hint(e, source);
        assert_eq!(
            out.message.contains("COORD_AGENT_TYPE"),
            hinted,
            "{source:?}: {}",
            out.message
        );
        assert_eq!(out.code, code);
    }
    let kept = with_unassigned_hint(trust.clone(), ProfileSource::Fallback).to_value();
    assert_eq!((kept["required"].clone(), kept["actual"].clone()), (json!(1), json!(0)));
}

#[test]
fn keys_and_agent_sessions_do_not_reach_administration_by_type() {
    use crate::access::Credential::*;
    let orchestrator = builtin()
        .profiles
        .iter()
        .find(|p| p.name == "strands-orchestrator")
        .unwrap()
        .clone();
    assert_eq!(orchestrator.trust_level, 4);
    let admin = Need::admin(Permission::ManagePolicies);
    let spawn = Need::new(Permission::SpawnAgent, 0);
    // (credential, where the profile came from, may administer, may spawn)
    let cases = [
        (Bound, ProfileSource::TypeDefault, false, true),
        (Bound, ProfileSource::AgentAssignment, true, true),
        (Session, ProfileSource::AgentAssignment, false, true),
        (Session, ProfileSource::TypeDefault, false, true),
        (Local, ProfileSource::TypeDefault, true, true),
        (Operator, ProfileSource::TypeDefault, true, true),
    ];
    for (credential, source, administers, spawns) in cases {
        let p = within_reach(orchestrator.clone(), source, credential);
        assert_eq!(
            decide(&p, "set_guardrail", admin).is_ok(),
            administers,
            "{credential:?} {source:?}"
        );
        assert_eq!(
            decide(&p, "spawn_agent", spawn).is_ok(),
            spawns,
            "{credential:?} {source:?}"
        );
    }
}
