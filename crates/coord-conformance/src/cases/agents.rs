//! Agents coord launches: the pre-flight verdict (spec 000) — only a structured valid
//! verdict or validation switched off lets a launch go ahead; every decision audited.

use crate::cases::profiles::run;
use crate::{Backend, Harness, agent, operator};
use coord_domain::ErrorCode;
use coord_domain::agents::preflight::{LaunchPlanSummary, PreflightRequest, Validator, Verdict, VerdictKind};
use coord_domain::audit::AuditQueryRequest;
use coord_service::ops::{agents as ops, audit};
use serde_json::Value;

fn request(validator: Validator, verdict: Option<(VerdictKind, &[&str])>, failure: Option<&str>) -> PreflightRequest {
    PreflightRequest {
        target_agent_id: "code-reviewer-1".into(),
        plan: LaunchPlanSummary {
            agent: "code-reviewer".into(),
            profile: "read_only".into(),
            runtime: "claude".into(),
            task: "review src/".into(),
            tools: vec!["Read".into()],
            writable: "nothing".into(),
            network_policy: "worker_read_only".into(),
            bash_commands: vec!["git status".into()],
            system_prompt: String::new(),
            model: None,
            model_endpoint: None,
            sandboxed: true,
            tools_enforced: true,
            passed_env: vec![],
            resolve: vec![],
        },
        validator,
        verdict: verdict.map(|(k, r)| Verdict {
            verdict: k,
            reasons: r.iter().map(|s| s.to_string()).collect(),
        }),
        failure: failure.map(String::from),
    }
}

pub async fn agents_preflight_allows_only_a_valid_verdict(b: &dyn Backend) {
    let h = Harness::new(b).await;
    // Launching is the operator's (local-operator: spawn_agent), not any agent's.
    let orchestrator = operator("orchestrator");
    let ok = run::<ops::RecordPreflight>(
        &h,
        &orchestrator,
        request(Validator::Command, Some((VerdictKind::Valid, &[])), None),
    )
    .await
    .unwrap();
    assert!(ok.allowed);
    let off = run::<ops::RecordPreflight>(&h, &orchestrator, request(Validator::Disabled, None, None))
        .await
        .unwrap();
    assert_eq!(off.validator, Validator::Disabled);
    let denied = [
        request(
            Validator::Model,
            Some((VerdictKind::Invalid, &["asks for credentials"])),
            None,
        ),
        request(
            Validator::Command,
            None,
            Some("the validator did not answer a JSON verdict object: \"VALID\""),
        ),
        request(Validator::Command, None, None),
        request(Validator::Model, Some((VerdictKind::Valid, &[])), Some("timed out")),
        request(Validator::Disabled, Some((VerdictKind::Valid, &[])), None),
    ];
    for req in denied {
        let e = run::<ops::RecordPreflight>(&h, &orchestrator, req).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::PreflightDenied, "{e:?}");
        assert_eq!(
            e.details.get("target_agent_id").and_then(Value::as_str),
            Some("code-reviewer-1")
        );
    }
    if h.door != crate::Door::Http {
        let e = run::<ops::RecordPreflight>(&h, &agent("worker"), request(Validator::Disabled, None, None))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::OperationNotPermitted, "{e:?}");
    }
    let mut bad = request(Validator::Command, Some((VerdictKind::Valid, &[])), None);
    bad.target_agent_id = " ".into();
    let e = run::<ops::RecordPreflight>(&h, &orchestrator, bad).await.unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("target_agent_id"))
    );
    let rows = run::<audit::QueryAudit>(
        &h,
        &orchestrator,
        AuditQueryRequest {
            agent_id: Some("orchestrator".into()),
            operation: Some("record_preflight".into()),
            limit: Some(100),
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .entries;
    assert_eq!(rows.len(), 8, "every decision and the bad request audited");
    assert_eq!(rows.iter().filter(|r| r.success).count(), 2);
    assert!(
        rows.iter()
            .any(|r| r.result.to_string().contains("asks for credentials")),
        "the validator's reasons are in the trail"
    );
}
