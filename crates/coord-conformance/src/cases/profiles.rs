//! Agent profiles: the built-in ones, assignment precedence, every refusal shape, limits
//! counted per session (also under concurrent calls), administration by trust 4 only,
//! and `explain_profile`.

use crate::{Backend, Door, Harness, agent, operator};
use coord_domain::access::Principal;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::{AcquireLockRequest, CheckEditRequest, CheckLocksRequest, ReleaseLockRequest};
use coord_domain::profiles::{
    self, ApplyProfilesRequest, AssignProfileRequest, ExplainProfileRequest, ExplainProfileResult, Permission, Profile,
    ProfileSource, Resource, UnassignProfileRequest,
};
use coord_domain::sessions::RegisterSessionRequest;
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::ops::{locks, profiles as ops, sessions};
use coord_service::{Operation, call, op_named};
use serde_json::{Value, json};
use std::sync::Arc;

pub(crate) async fn run<O: Operation>(h: &Harness, who: &Caller, req: O::Request) -> CoordResult<O::Response> {
    call::<O, _>(&*h.coord, &Principal::local(who.clone()), req).await
}

pub(crate) fn profile(name: &str, trust: u8, allowed: &[Permission], limits: Value) -> Profile {
    Profile {
        name: name.into(),
        agent_type: "test".into(),
        trust_level: trust,
        description: None,
        connection: None,
        network_policy: None,
        required_domains: vec![],
        allowed_operations: allowed.to_vec(),
        blocked_operations: vec![],
        elevated_operations: vec![],
        resource_limits: serde_json::from_value(limits).expect("limits"),
        guardrails: vec![],
        escalation: false,
    }
}

/// Applies `p` and assigns it to `agent_id`, as the operator.
pub(crate) async fn give(h: &Harness, p: Profile, agent_id: &str) {
    let name = p.name.clone();
    run::<ops::ApplyProfiles>(h, &operator("root"), ApplyProfilesRequest { profiles: vec![p] })
        .await
        .expect("apply");
    run::<ops::AssignProfile>(
        h,
        &operator("root"),
        AssignProfileRequest {
            profile: name,
            target_agent_id: Some(agent_id.into()),
            target_agent_type: None,
        },
    )
    .await
    .expect("assign");
}

async fn lock(h: &Harness, who: &Caller, path: &str) -> CoordResult<bool> {
    let r = run::<locks::AcquireLock>(
        h,
        who,
        AcquireLockRequest {
            file_path: path.into(),
            reason: None,
            ttl_minutes: Some(240),
        },
    )
    .await?;
    Ok(r.success)
}

async fn register(h: &Harness, who: &Caller) {
    run::<sessions::RegisterSession>(h, who, RegisterSessionRequest::default())
        .await
        .expect("register");
}

async fn explain(h: &Harness, who: &Caller, of: Option<&str>) -> ExplainProfileResult {
    run::<ops::ExplainProfile>(
        h,
        who,
        ExplainProfileRequest {
            target_agent_id: of.map(String::from),
            ..Default::default()
        },
    )
    .await
    .expect("explain")
}

fn used(e: &ExplainProfileResult, r: Resource) -> Option<Value> {
    e.limits.iter().find(|l| l.limit == r).and_then(|l| l.used.clone())
}

pub(crate) fn code<T: std::fmt::Debug>(r: CoordResult<T>) -> ErrorCode {
    r.expect_err("refused").code
}

pub async fn profiles_builtin_are_seeded(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let list = run::<ops::ListProfiles>(&h, &agent("reader"), Default::default())
        .await
        .unwrap();
    let builtin = profiles::builtin();
    let mut want = builtin.profiles.clone();
    let mut got = list.profiles.clone();
    want.sort_by(|a, b| a.name.cmp(&b.name));
    got.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(got, want, "the database holds the built-in profiles as defined");
    let defaults: Vec<(String, String)> = list
        .assignments
        .iter()
        .filter(|a| a.kind == "agent_type")
        .map(|a| (a.value.clone(), a.profile.clone()))
        .collect();
    let want: Vec<(String, String)> = builtin
        .type_defaults
        .iter()
        .map(|(t, p)| (t.clone(), p.clone()))
        .collect();
    assert_eq!(defaults, want);
}

pub async fn profiles_assignment_precedence_and_least_privilege(b: &dyn Backend) {
    let h = Harness::new(b).await;
    // A Claude Code web agent gets its type's default: the reviewer, which blocks write.
    let web = Caller::new("web-1", "claude_code_web");
    let e = lock(&h, &web, "src/a.rs").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::OperationNotPermitted);
    let v = e.to_value();
    assert_eq!(
        (v["operation"].as_str(), v["permission"].as_str()),
        (Some("acquire_lock"), Some("write"))
    );
    assert_eq!(explain(&h, &web, None).await.source, ProfileSource::TypeDefault);
    // Its id's assignment wins over its type's.
    run::<ops::AssignProfile>(
        &h,
        &operator("root"),
        AssignProfileRequest {
            profile: "claude-code-web-implementer".into(),
            target_agent_id: Some("web-1".into()),
            target_agent_type: None,
        },
    )
    .await
    .unwrap();
    assert!(lock(&h, &web, "src/a.rs").await.unwrap());
    let x = explain(&h, &operator("root"), Some("web-1")).await;
    assert_eq!(
        (x.source, x.profile.name.as_str()),
        (ProfileSource::AgentAssignment, "claude-code-web-implementer")
    );
    // Removing it falls back to the type's default again.
    let r = run::<ops::UnassignProfile>(
        &h,
        &operator("root"),
        UnassignProfileRequest {
            target_agent_id: Some("web-1".into()),
            target_agent_type: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(r.before.as_deref(), Some("claude-code-web-implementer"));
    assert_eq!(code(lock(&h, &web, "src/b.rs").await), ErrorCode::OperationNotPermitted);

    // An unknown type with no assignment gets least privilege: it may read, nothing else.
    let stranger = Caller::new("stranger", "mystery_agent");
    run::<locks::CheckLocks>(&h, &stranger, CheckLocksRequest::default())
        .await
        .expect("reads are allowed");
    let e = run::<sessions::RegisterSession>(&h, &stranger, RegisterSessionRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    let v = e.to_value();
    assert_eq!((v["required"].clone(), v["actual"].clone()), (json!(1), json!(0)));
    // It says how to get a profile: most often the agent was started without its type.
    assert!(e.message.contains("COORD_AGENT_TYPE"), "{}", e.message);
    assert_eq!(
        code(lock(&h, &stranger, "src/c.rs").await),
        ErrorCode::InsufficientTrustLevel
    );
    // Least privilege assigned by an operator is a choice: no such hint.
    run::<ops::AssignProfile>(
        &h,
        &operator("root"),
        AssignProfileRequest {
            profile: profiles::LEAST_PRIVILEGE.into(),
            target_agent_id: Some("restricted".into()),
            target_agent_type: None,
        },
    )
    .await
    .expect("assign least-privilege");
    let restricted = Caller::new("restricted", "claude_code");
    let e = run::<sessions::RegisterSession>(&h, &restricted, RegisterSessionRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    assert!(!e.message.contains("COORD_AGENT_TYPE"), "{}", e.message);
    let x = explain(&h, &stranger, None).await;
    assert_eq!(
        (x.source, x.profile.name.as_str()),
        (ProfileSource::Fallback, profiles::LEAST_PRIVILEGE)
    );
    let acquire = x.operations.iter().find(|o| o.operation == "acquire_lock").unwrap();
    assert!(
        !acquire.allowed && acquire.reason.starts_with("insufficient_trust_level"),
        "{acquire:?}"
    );

    // Every refusal is in the audit trail, with its code.
    let log = run::<coord_service::ops::audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("stranger".into()),
            limit: Some(50),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let codes: Vec<Option<&str>> = log.entries.iter().map(|e| e.error_code.as_deref()).collect();
    assert!(codes.contains(&Some("insufficient_trust_level")), "{codes:?}");
}

pub async fn profiles_only_trust_4_administers(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let mine = profile("docs-writer", 1, &[Permission::Read, Permission::Write], json!({}));
    let req = || ApplyProfilesRequest {
        profiles: vec![mine.clone()],
    };
    // Through HTTP the suite holds an operator key, which administers whoever it names.
    let operator_key = h.door == Door::Http;
    let by_agent = run::<ops::ApplyProfiles>(&h, &agent("trust-3"), req()).await;
    if operator_key {
        assert!(by_agent.is_ok(), "{by_agent:?}");
    } else {
        let e = by_agent.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
        assert_eq!(
            (e.to_value()["required"].clone(), e.to_value()["actual"].clone()),
            (json!(4), json!(3))
        );
        let assign = run::<ops::AssignProfile>(
            &h,
            &agent("trust-3"),
            AssignProfileRequest {
                profile: "local-operator".into(),
                target_agent_id: Some("trust-3".into()),
                target_agent_type: None,
            },
        )
        .await;
        assert_eq!(
            code(assign),
            ErrorCode::InsufficientTrustLevel,
            "no agent promotes itself"
        );
        let created = run::<ops::ApplyProfiles>(&h, &operator("root"), req()).await.unwrap();
        assert_eq!(created.changes[0].action, "created");
    }
    // Applying again is unchanged; a change answers before and after, and is audited so.
    let again = run::<ops::ApplyProfiles>(&h, &operator("root"), req()).await.unwrap();
    assert_eq!(again.changes[0].action, "unchanged");
    let mut changed = mine.clone();
    changed.trust_level = 2;
    let r = run::<ops::ApplyProfiles>(
        &h,
        &operator("root"),
        ApplyProfilesRequest {
            profiles: vec![changed.clone()],
        },
    )
    .await
    .unwrap();
    assert_eq!(r.changes[0].action, "updated");
    assert_eq!(r.changes[0].before.as_ref().map(|p| p.trust_level), Some(1));
    assert_eq!(r.changes[0].after.trust_level, 2);
    let log = run::<coord_service::ops::audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            operation: Some("apply_profiles".into()),
            limit: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let row = &log.entries[0];
    assert_eq!(row.result["changes"][0]["before"]["trust_level"], 1, "{:?}", row.result);
    assert_eq!(row.result["changes"][0]["after"]["trust_level"], 2);
    // Unknown profiles, the built-in fallback and bad fields are refused with the field.
    let e = run::<ops::AssignProfile>(
        &h,
        &operator("root"),
        AssignProfileRequest {
            profile: "no-such".into(),
            target_agent_type: Some("x".into()),
            target_agent_id: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let op = op_named("apply_profiles").unwrap();
    let who = Principal::local(operator("root"));
    let bad = [
        (
            json!({"profiles": [{"name": "x", "agent_type": "t", "trust_level": 7}]}),
            "profiles[0].trust_level",
        ),
        (
            json!({"profiles": [{"name": "x", "agent_type": "t", "trust_level": 1, "allowed_operations": ["fly"]}]}),
            "profiles[0].allowed_operations[0]",
        ),
        (
            json!({"profiles": [{"name": "x", "agent_type": "t", "trust_level": 1, "resource_limits": {"max_file_modifications": "lots"}}]}),
            "profiles[0].resource_limits.max_file_modifications",
        ),
        (
            json!({"profiles": [{"name": "least-privilege", "agent_type": "t", "trust_level": 4}]}),
            "profiles[0].name",
        ),
    ];
    for (req, field) in bad {
        let e: CoordError = h.coord.invoke(op, &who, Ok(req.clone())).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{req}");
        assert_eq!(e.field.as_deref(), Some(field), "{req}: {}", e.message);
    }
}

/// max_file_modifications: distinct files, counted per session, only for what
/// succeeded; 8 calls racing for the last modification: exactly one gets it.
pub async fn profiles_file_modification_limit_under_concurrency(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let w = Caller::new("limited", "claude_code");
    give(
        &h,
        profile(
            "five-files",
            2,
            &[Permission::Read, Permission::Write],
            json!({"max_file_modifications": 5}),
        ),
        "limited",
    )
    .await;
    register(&h, &w).await;
    for i in 0..4 {
        assert!(lock(&h, &w, &format!("src/f{i}.rs")).await.unwrap());
    }
    // Refreshing a counted file, or asking the edit guard about it, uses nothing new.
    assert!(lock(&h, &w, "src/f0.rs").await.unwrap());
    run::<locks::CheckEdit>(
        &h,
        &w,
        CheckEditRequest {
            paths: vec!["src/f1.rs".into()],
        },
    )
    .await
    .unwrap();
    // A lock another agent holds is not a use.
    assert!(h.lock(&agent("other"), "src/held.rs", None).await.success);
    assert!(!lock(&h, &w, "src/held.rs").await.unwrap());
    assert_eq!(
        used(&explain(&h, &w, None).await, Resource::MaxFileModifications),
        Some(json!(4))
    );

    let coord = Arc::new(h);
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let h = coord.clone();
            let w = w.clone();
            tokio::spawn(async move { lock(&h, &w, &format!("src/race{i}.rs")).await })
        })
        .collect();
    let mut won = 0;
    let mut refused = 0;
    for r in racers {
        match r.await.unwrap() {
            Ok(true) => won += 1,
            Err(e) => {
                assert_eq!(e.code, ErrorCode::ResourceLimitExceeded, "{e:?}");
                assert_eq!(e.to_value()["limit"], "max_file_modifications");
                refused += 1;
            }
            Ok(false) => panic!("nobody else holds these files"),
        }
    }
    assert_eq!((won, refused), (1, 7));
    let h = &*coord;
    assert_eq!(
        used(&explain(h, &w, None).await, Resource::MaxFileModifications),
        Some(json!(5))
    );
    let held = run::<locks::CheckLocks>(h, &w, CheckLocksRequest::default())
        .await
        .unwrap();
    assert_eq!(
        held.locks.iter().filter(|l| l.locked_by == "limited").count(),
        5,
        "no refused lock was kept"
    );
    // The edit guard refuses a sixth file too; releasing never is refused.
    let e = run::<locks::CheckEdit>(
        h,
        &w,
        CheckEditRequest {
            paths: vec!["src/new.rs".into()],
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
    run::<locks::ReleaseLock>(
        h,
        &w,
        ReleaseLockRequest {
            file_path: "src/f0.rs".into(),
        },
    )
    .await
    .unwrap();
    // A new session starts counting again.
    register(h, &w).await;
    assert!(lock(h, &w, "src/new.rs").await.unwrap());
}

pub async fn profiles_execution_time_and_api_calls(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let w = Caller::new("timed", "claude_code");
    give(
        &h,
        profile(
            "one-hour",
            2,
            &[Permission::Read, Permission::Write],
            json!({"max_execution_time": "1h"}),
        ),
        "timed",
    )
    .await;
    register(&h, &w).await;
    assert!(lock(&h, &w, "src/a.rs").await.unwrap());
    h.advance(61);
    let e = lock(&h, &w, "src/b.rs").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimitExceeded);
    assert_eq!(e.to_value()["limit"], "max_execution_time");
    // Winding down is still allowed: release, read.
    run::<locks::ReleaseLock>(
        &h,
        &w,
        ReleaseLockRequest {
            file_path: "src/a.rs".into(),
        },
    )
    .await
    .unwrap();
    run::<locks::CheckLocks>(&h, &w, CheckLocksRequest::default())
        .await
        .unwrap();
    let x = explain(&h, &w, None).await;
    assert_eq!(used(&x, Resource::MaxExecutionTime), Some(json!("1h 1m")));

    let c = Caller::new("chatty", "claude_code");
    give(
        &h,
        profile("three-calls", 1, &[Permission::Read], json!({"max_api_calls": 3})),
        "chatty",
    )
    .await;
    for _ in 0..3 {
        run::<locks::CheckLocks>(&h, &c, CheckLocksRequest::default())
            .await
            .unwrap();
    }
    let e = run::<locks::CheckLocks>(&h, &c, CheckLocksRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.to_value()["limit"].clone()),
        (ErrorCode::ResourceLimitExceeded, json!("max_api_calls"))
    );
}

/// A managed key's usage and time are the key's: a new coordinator session resets
/// neither, so a cloud agent cannot escape its limits by registering again.
pub async fn profiles_a_key_counts_across_sessions(b: &dyn Backend) {
    use coord_domain::access::Credential;
    use coord_domain::keys::CreateApiKeyRequest;
    use coord_service::Server as _;
    let h = Harness::new(b).await;
    give(
        &h,
        profile(
            "one-file-one-hour",
            2,
            &[Permission::Read, Permission::Write],
            json!({"max_file_modifications": 1, "max_execution_time": "1h"}),
        ),
        "cloud-9",
    )
    .await;
    let key = run::<coord_service::ops::keys::CreateApiKey>(
        &h,
        &operator("root"),
        CreateApiKeyRequest {
            bound_agent_id: "cloud-9".into(),
            bound_agent_type: "codex_cloud".into(),
            expires_in_minutes: Some(600),
            task_id: Some("T-9".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let (caller, origin) = h.local.authenticate_key(&key.api_key).await.unwrap().expect("live");
    let as_key = Principal::new(caller, Credential::Bound).with_origin(Some(origin));
    let lock = |path: &str| {
        coord_service::call::<locks::AcquireLock, _>(
            &h.local,
            &as_key,
            AcquireLockRequest {
                file_path: path.into(),
                ..Default::default()
            },
        )
    };
    assert!(lock("src/a.rs").await.unwrap().success);
    let register =
        || coord_service::call::<sessions::RegisterSession, _>(&h.local, &as_key, RegisterSessionRequest::default());
    register().await.unwrap();
    assert_eq!(
        code(lock("src/b.rs").await),
        ErrorCode::ResourceLimitExceeded,
        "a new session resets nothing"
    );
    let mine = coord_service::call::<ops::ExplainProfile, _>(&h.local, &as_key, ExplainProfileRequest::default())
        .await
        .unwrap();
    assert_eq!(used(&mine, Resource::MaxFileModifications), Some(json!(1)));
    // The key's time runs from its issue, across sessions.
    h.advance(61);
    register().await.unwrap();
    let e = lock("src/a.rs").await.unwrap_err();
    assert_eq!(
        (e.code, e.to_value()["limit"].as_str()),
        (ErrorCode::ResourceLimitExceeded, Some("max_execution_time"))
    );
}

/// The security review's finding 12 (issue 57): a managed key for a `strands_agent` got
/// the built-in trust-4 orchestrator profile, and with it guardrail patterns and the
/// audit trail's pruning. A key reaches no administration by its type alone; a process
/// inside an agent's session none at all (`person_required`); an operator's assignment
/// to the key's agent id gives the key what the profile holds.
pub async fn profiles_keys_and_agent_sessions_reach_no_administration_by_type(b: &dyn Backend) {
    use coord_domain::access::Credential;
    use coord_domain::guardrail_rules::SetGuardrailRequest;
    use coord_service::ops::guardrails::SetGuardrail;
    let h = Harness::new(b).await;
    let orchestrator = Caller::new("orchestrator", "strands_agent");
    let disable = || SetGuardrailRequest {
        name: "git-force-push".into(),
        pattern: None,
        enabled: Some(false),
    };
    let as_key = Principal::new(orchestrator.clone(), Credential::Bound);
    let e = call::<SetGuardrail, _>(&h.local, &as_key, disable()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InsufficientTrustLevel, "{e:?}");
    // It still orchestrates: its profile's own permissions stay.
    let spawn = op_named("spawn_agent").unwrap();
    assert!(
        spawn.need.permission == Permission::SpawnAgent,
        "spawn_agent needs its own permission, not trust 4"
    );
    let in_session = Principal::new(orchestrator.clone(), Credential::Session);
    let e = call::<SetGuardrail, _>(&h.local, &in_session, disable())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PersonRequired, "{e:?}");
    run::<ops::AssignProfile>(
        &h,
        &operator("root"),
        AssignProfileRequest {
            profile: "strands-orchestrator".into(),
            target_agent_id: Some("orchestrator".into()),
            target_agent_type: None,
        },
    )
    .await
    .unwrap();
    let r = call::<SetGuardrail, _>(&h.local, &as_key, disable()).await;
    assert!(
        r.as_ref().is_ok() || r.as_ref().is_err_and(|e| e.code == ErrorCode::NotFound),
        "assigned: past the profile ({r:?})"
    );
    let e = call::<SetGuardrail, _>(&h.local, &in_session, disable())
        .await
        .unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::PersonRequired,
        "never from inside an agent's session"
    );
    // Every refusal is audited.
    let refused = h.audit_rows("set_guardrail").await;
    assert!(refused.iter().filter(|r| !r.success).count() >= 3, "{refused:?}");
}
