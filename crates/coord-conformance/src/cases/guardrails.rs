//! Destructive-operation guardrails through every door: a blocked command asks for
//! approval and passes once when approved; credential files need manual review; trust
//! and elevated operations decide the rest; every check is audited.

use crate::cases::profiles::{code, give, profile, run};
use crate::{Backend, Harness, agent, operator};
use coord_domain::approvals::{DecideApprovalRequest, Decision};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::guardrail_rules::{
    GuardrailEntry, ResetGuardrailRequest, ResetGuardrailResult, RuleSource, SetGuardrailRequest,
};
use coord_domain::guardrails::{CheckGuardrailsRequest, CheckGuardrailsResult};
use coord_domain::profiles::Permission;
use coord_domain::{Caller, CoordResult, Empty, ErrorCode};
use coord_service::ops::{approvals, audit, guardrails};
use serde_json::json;

pub(crate) async fn check(h: &Harness, who: &Caller, command: &str) -> CoordResult<CheckGuardrailsResult> {
    run::<guardrails::CheckGuardrails>(
        h,
        who,
        CheckGuardrailsRequest {
            command: Some(command.into()),
            files: None,
            tool: None,
            ..Default::default()
        },
    )
    .await
}

pub async fn guardrails_block_and_approve_once(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let me = agent("pusher");
    let ok = check(&h, &me, "git status && cargo test").await.unwrap();
    assert!(ok.allowed && ok.findings.is_empty(), "{ok:?}");
    let warned = check(&h, &me, "git branch -D feature/old").await.unwrap();
    assert_eq!(warned.findings[0].operation, "delete_branch");

    let force = "cd repo && GIT_TRACE=1 git -C . push origin +main";
    let e = check(&h, &me, force).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::DestructiveOperationBlocked);
    let v = e.to_value();
    assert_eq!(
        (v["operation"].as_str(), v["approval_required"].as_bool()),
        (Some("force_push"), Some(true)),
        "{v}"
    );
    let id = v["approval_id"].as_str().unwrap().to_string();
    run::<approvals::DecideApproval>(
        &h,
        &operator("boss"),
        DecideApprovalRequest {
            approval_id: id.clone(),
            decision: Decision::Approve,
            note: None,
            valid_minutes: None,
        },
    )
    .await
    .unwrap();
    let once = check(&h, &me, force).await.unwrap();
    assert_eq!((once.allowed, once.approval_used.as_deref()), (true, Some(id.as_str())));
    let again = check(&h, &me, force).await.unwrap_err();
    assert_ne!(again.to_value()["approval_id"], id.as_str(), "a second use asks again");

    // The security review's hidden payload (issue 57, finding 4): a force push beside a
    // deletion inside a secret-named assignment. The approval request names every
    // finding, and keeps the command exactly as it will run.
    let hidden = "git push --force origin feature && API_TOKEN=$(rm${IFS}-rf${IFS}$HOME) true";
    let e = check(&h, &me, hidden).await.unwrap_err();
    let id = e.to_value()["approval_id"].as_str().unwrap().to_string();
    let asked = run::<approvals::GetApproval>(
        &h,
        &operator("boss"),
        coord_domain::approvals::GetApprovalRequest { approval_id: id },
    )
    .await
    .unwrap();
    assert_eq!(asked.approval.parameters["command"], hidden);
    assert!(
        asked.approval.reason.contains("force_push") && asked.approval.reason.contains("rm${IFS}-rf${IFS}$HOME"),
        "{}",
        asked.approval.reason
    );
    assert_eq!(coord_domain::secrets::mask_secrets(hidden), hidden);

    // Credential files: manual review, whatever the trust.
    let e = run::<guardrails::CheckGuardrails>(
        &h,
        &operator("root"),
        CheckGuardrailsRequest {
            command: None,
            files: Some(vec!["config/.env".into()]),
            tool: None,
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::CredentialFileProtected);
    assert_eq!(e.to_value()["requires"], "manual_review");
    assert_eq!(
        code(check(&h, &me, "echo X=1 >> .env").await),
        ErrorCode::CredentialFileProtected
    );

    // Unparseable input fails closed; empty input is a bad request.
    assert_eq!(
        code(check(&h, &me, "echo \"unterminated").await),
        ErrorCode::DestructiveOperationBlocked
    );
    let e = run::<guardrails::CheckGuardrails>(&h, &me, CheckGuardrailsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);

    // Every check is audited, refusals included.
    let log = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("pusher".into()),
            operation: Some("check_guardrails".into()),
            limit: Some(50),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        log.entries.len(),
        9,
        "{:?}",
        log.entries.iter().map(|e| &e.error_code).collect::<Vec<_>>()
    );
}

pub async fn guardrails_trust_and_elevated_operations(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let migrate = "alembic upgrade head";
    let mut low = profile("standard", 2, &[Permission::Read, Permission::Write], json!({}));
    give(&h, low.clone(), "junior").await;
    let junior = Caller::new("junior", "claude_code");
    let e = check(&h, &junior, migrate).await.unwrap_err();
    assert_eq!(e.to_value()["required_trust"], 3, "{:?}", e.to_value());
    low.name = "elevated".into();
    low.trust_level = 3;
    low.elevated_operations = vec!["force_push".into()];
    give(&h, low, "senior").await;
    let senior = Caller::new("senior", "claude_code");
    assert!(check(&h, &senior, migrate).await.unwrap().allowed);
    let pushed = check(&h, &senior, "git push --force origin feature").await.unwrap();
    assert!(pushed.allowed && pushed.elevated, "{pushed:?}");
    assert_eq!(
        code(check(&h, &senior, "git reset --hard").await),
        ErrorCode::DestructiveOperationBlocked,
        "only the listed operations are elevated"
    );
    let log = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            agent_id: Some("senior".into()),
            operation: Some("check_guardrails".into()),
            success: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(
        log.entries.iter().any(|e| e.result["elevated"] == true),
        "audited with the elevated flag"
    );
    let elevated = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            elevated: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        elevated
            .entries
            .iter()
            .map(|e| (e.agent_id.as_str(), e.operation.as_str()))
            .collect::<Vec<_>>(),
        [("senior", "check_guardrails")],
        "the elevated filter finds exactly the elevated row"
    );
}

/// A completion that reports destructive changes is refused with the matches, the task
/// stays claimed; once a person approves exactly that completion, it goes through.
pub async fn guardrails_block_destructive_completions(b: &dyn Backend) {
    use coord_domain::guardrails::WorkChanges;
    use coord_domain::queue::{CompleteWorkRequest, TaskStatus};
    let h = Harness::new(b).await;
    let worker = agent("worker");
    h.submit(&agent("lead"), "cleanup", 5, &[]).await;
    let task = h.claimed_id(&worker).await;
    let done = |changes: WorkChanges| CompleteWorkRequest {
        task_id: task.clone(),
        success: true,
        result: None,
        error_message: None,
        skill: None,
        changes: Some(changes),
    };
    let destructive = WorkChanges {
        commands: vec!["cargo test".into(), "git push --force origin main".into()],
        files: vec!["src/lib.rs".into()],
        diff: Some("+++ b/scripts/reset.sh\n@@ -0,0 +1 @@\n+rm -rf /var/lib/app\n".into()),
    };
    let e = run::<coord_service::ops::queue::CompleteWork>(&h, &worker, done(destructive.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::DestructiveOperationBlocked);
    let v = e.to_value();
    let ops: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["operation"].as_str())
        .collect();
    assert!(ops.contains(&"force_push") && ops.contains(&"recursive_delete"), "{v}");
    assert_eq!(
        h.task(&task).await.status,
        TaskStatus::Claimed,
        "the task stays claimed"
    );
    let id = v["approval_id"].as_str().unwrap().to_string();
    run::<approvals::DecideApproval>(
        &h,
        &operator("boss"),
        DecideApprovalRequest {
            approval_id: id,
            decision: Decision::Approve,
            note: None,
            valid_minutes: None,
        },
    )
    .await
    .unwrap();
    run::<coord_service::ops::queue::CompleteWork>(&h, &worker, done(destructive))
        .await
        .expect("approved once");
    assert_eq!(h.task(&task).await.status, TaskStatus::Completed);
    // Benign changes complete at once.
    h.submit(&agent("lead"), "docs", 5, &[]).await;
    let next = h.claimed_id(&worker).await;
    let benign = WorkChanges {
        commands: vec!["cargo fmt".into()],
        files: vec!["README.md".into()],
        diff: None,
    };
    run::<coord_service::ops::queue::CompleteWork>(
        &h,
        &worker,
        CompleteWorkRequest {
            task_id: next.clone(),
            success: true,
            result: None,
            error_message: None,
            skill: None,
            changes: Some(benign),
        },
    )
    .await
    .unwrap();
    assert_eq!(h.task(&next).await.status, TaskStatus::Completed);
}

/// Every block is a `guardrail_violations` row and counts against the agent: its counter
/// shows in discover_agents and explain_profile. Warnings and passes do not count.
pub async fn guardrails_violations_are_counted(b: &dyn Backend) {
    use coord_domain::profiles::ExplainProfileRequest;
    use coord_domain::sessions::{DiscoverAgentsRequest, RegisterSessionRequest};
    use coord_service::CoordinationExt as _;
    use coord_service::ops::profiles::ExplainProfile;
    let h = Harness::new(b).await;
    let (me, other) = (agent("pusher"), agent("bystander"));
    for who in [&me, &other] {
        h.coord
            .register_session(who, RegisterSessionRequest::default())
            .await
            .unwrap();
    }
    let force = "git push --force origin main";
    let first = check(&h, &me, force).await.unwrap_err();
    check(&h, &me, "rm -rf src").await.unwrap_err();
    check(&h, &me, "git branch -D feature/old").await.unwrap(); // a warning
    check(&h, &me, "cargo test").await.unwrap();
    let id = first.to_value()["approval_id"].as_str().unwrap().to_string();
    run::<approvals::DecideApproval>(
        &h,
        &operator("boss"),
        DecideApprovalRequest {
            approval_id: id,
            decision: Decision::Approve,
            note: None,
            valid_minutes: None,
        },
    )
    .await
    .unwrap();
    check(&h, &me, force).await.unwrap(); // passes once, by the approval

    let agents = h
        .coord
        .discover_agents(&other, DiscoverAgentsRequest::default())
        .await
        .unwrap()
        .agents;
    let count = |id: &str| agents.iter().find(|a| a.agent_id == id).map(|a| a.guardrail_violations);
    assert_eq!((count("pusher"), count("bystander")), (Some(2), Some(0)), "{agents:?}");
    let explained = run::<ExplainProfile>(
        &h,
        &operator("boss"),
        ExplainProfileRequest {
            target_agent_id: Some("pusher".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(explained.guardrail_violations, 2);
    // The rows are append-only, like the audit trail.
    for sql in [
        "UPDATE guardrail_violations SET blocked = (1 = 0)",
        "DELETE FROM guardrail_violations",
    ] {
        assert!(h.raw.execute(sql).await.is_err(), "{sql} must be refused");
    }
}

/// An elevated pass is reported on the security channel in its own transaction (an
/// outbox), listed for administrators; a dispatcher takes each due notification once,
/// a failed delivery waits for its backoff, a delivered one is done.
pub async fn guardrails_elevated_operations_notify_the_security_channel(b: &dyn Backend) {
    use coord_domain::notifications::ListNotificationsRequest;
    use coord_service::ops::notifications::ListNotifications;
    let h = Harness::new(b).await;
    let mut p = profile(
        "elevated",
        3,
        &[Permission::Read, Permission::Write, Permission::Coordinate],
        json!({}),
    );
    p.elevated_operations = vec!["force_push".into()];
    give(&h, p, "senior").await;
    let senior = Caller::new("senior", "claude_code");
    assert!(
        check(&h, &senior, "git push --force origin feature")
            .await
            .unwrap()
            .elevated
    );
    check(&h, &senior, "git reset --hard HEAD~3").await.unwrap_err(); // blocked: no notification
    check(&h, &senior, "cargo test").await.unwrap();

    let security = operator("security");
    let list = |undelivered| {
        run::<ListNotifications>(
            &h,
            &security,
            ListNotificationsRequest {
                undelivered: Some(undelivered),
                limit: None,
            },
        )
    };
    let all = list(false).await.unwrap().notifications;
    assert_eq!(all.len(), 1, "{all:?}");
    let n = &all[0];
    assert_eq!(
        (n.kind.as_str(), n.channel.as_str(), n.agent_id.as_str()),
        ("elevated_operation", "security", "senior")
    );
    assert!(n.summary.contains("force_push"), "{}", n.summary);
    assert_eq!((n.delivered_at, n.attempts), (None, 0));

    if h.door != crate::Door::Http {
        let e = run::<ListNotifications>(&h, &senior, ListNotificationsRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }

    // Delivery: taken once; a failure waits for its backoff; a success is final.
    let store = &h.store;
    let taken = store.take_due_notifications(Some(h.now()), 10).await.unwrap();
    assert_eq!(
        taken.iter().map(|n| (n.id, n.attempts)).collect::<Vec<_>>(),
        [(n.id, 1)]
    );
    assert!(
        store
            .take_due_notifications(Some(h.now()), 10)
            .await
            .unwrap()
            .is_empty(),
        "taken once"
    );
    store
        .record_delivery(Some(h.now()), n.id, Err("503 from the webhook".into()), 120)
        .await
        .unwrap();
    h.advance(1);
    assert!(
        store
            .take_due_notifications(Some(h.now()), 10)
            .await
            .unwrap()
            .is_empty(),
        "backing off"
    );
    h.advance(2);
    let again = store.take_due_notifications(Some(h.now()), 10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].last_error.as_deref(), Some("503 from the webhook"));
    store.record_delivery(Some(h.now()), n.id, Ok(()), 0).await.unwrap();
    assert!(list(true).await.unwrap().notifications.is_empty());
    let done = &list(false).await.unwrap().notifications[0];
    assert_eq!(
        (done.delivered_at.is_some(), done.attempts, done.last_error.clone()),
        (true, 2, None)
    );
    h.advance(120);
    assert!(
        store
            .take_due_notifications(Some(h.now()), 10)
            .await
            .unwrap()
            .is_empty(),
        "delivered is final"
    );

    // A completion whose changes pass by elevation is reported too, and completes.
    {
        use coord_domain::guardrails::WorkChanges;
        use coord_domain::queue::{CompleteWorkRequest, TaskStatus};
        h.submit(&agent("lead"), "release", 5, &[]).await;
        let task = h.claimed_id(&senior).await;
        run::<coord_service::ops::queue::CompleteWork>(
            &h,
            &senior,
            CompleteWorkRequest {
                task_id: task.clone(),
                success: true,
                result: None,
                error_message: None,
                skill: None,
                changes: Some(WorkChanges {
                    commands: vec!["git push --force origin feature".into()],
                    files: vec![],
                    diff: None,
                }),
            },
        )
        .await
        .expect("an elevated operation of the profile");
        assert_eq!(h.task(&task).await.status, TaskStatus::Completed);
        let now = list(false).await.unwrap().notifications;
        assert_eq!(now.len(), 2, "{now:?}");
        assert!(now[0].summary.contains("force_push"), "{}", now[0].summary);
    }
}

async fn registry(h: &Harness) -> Vec<GuardrailEntry> {
    run::<guardrails::ListGuardrails>(h, &agent("reader"), Empty {})
        .await
        .unwrap()
        .guardrails
}

async fn reset(h: &Harness, who: &Caller, name: &str) -> CoordResult<ResetGuardrailResult> {
    run::<guardrails::ResetGuardrail>(h, who, ResetGuardrailRequest { name: name.into() }).await
}

fn set_rule(name: &str, pattern: Option<serde_json::Value>, enabled: Option<bool>) -> SetGuardrailRequest {
    SetGuardrailRequest {
        name: name.into(),
        pattern,
        enabled,
    }
}

/// The pattern registry is data: trust 4 adds, replaces and switches off patterns, every
/// check sees the change at once, a reset restores the built-in pattern, and nothing
/// invalid is stored.
pub async fn guardrails_pattern_registry_is_editable_by_trust_4(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (me, boss) = (agent("builder"), operator("boss"));
    let builtin = registry(&h).await;
    assert!(builtin.len() >= 80, "{}", builtin.len());
    assert!(builtin.iter().all(|g| g.source == RuleSource::Builtin && g.enabled));
    assert!(check(&h, &me, "make upload").await.is_ok());

    // Added: blocks at once, with its own reason.
    let deploy = json!({"program": "make", "words": ["upload|ship"], "operation": "deploy",
        "category": "production_deployment", "action": "block",
        "reason": "make {words} deploys to production; ask for approval"});
    let set = run::<guardrails::SetGuardrail>(&h, &boss, set_rule("make-deploy", Some(deploy.clone()), None))
        .await
        .unwrap();
    assert_eq!(
        (set.guardrail.source, set.guardrail.enabled),
        (RuleSource::Custom, true)
    );
    let e = check(&h, &me, "cd app && make upload").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::DestructiveOperationBlocked);
    assert!(e.message.contains("make upload deploys to production"), "{}", e.message);
    assert!(check(&h, &me, "make test").await.is_ok());

    // A built-in pattern switched off, and on again; a custom one keeps its definition.
    assert_eq!(
        code(check(&h, &me, "ansible-playbook site.yml").await),
        ErrorCode::DestructiveOperationBlocked
    );
    let off = run::<guardrails::SetGuardrail>(&h, &boss, set_rule("ansible-playbook", None, Some(false)))
        .await
        .unwrap();
    assert_eq!(
        (off.guardrail.source, off.guardrail.enabled),
        (RuleSource::Modified, false)
    );
    assert!(check(&h, &me, "ansible-playbook site.yml").await.is_ok());
    run::<guardrails::SetGuardrail>(&h, &boss, set_rule("make-deploy", None, Some(false)))
        .await
        .unwrap();
    assert!(check(&h, &me, "make upload").await.is_ok());
    let on = run::<guardrails::SetGuardrail>(&h, &boss, set_rule("make-deploy", None, Some(true)))
        .await
        .unwrap();
    assert_eq!(on.guardrail.pattern["words"], json!(["upload|ship"]));
    assert!(check(&h, &me, "make ship").await.is_err());

    // A built-in pattern replaced: the new definition applies.
    let narrower = json!({"program": "terraform|tofu", "words": ["destroy"], "operation": "deploy",
        "category": "production_deployment", "action": "block", "reason": "destroying infrastructure"});
    run::<guardrails::SetGuardrail>(&h, &boss, set_rule("terraform-change", Some(narrower), None))
        .await
        .unwrap();
    assert!(check(&h, &me, "terraform apply").await.is_ok());
    assert!(check(&h, &me, "terraform destroy").await.is_err());
    let listed = registry(&h).await;
    let changed: Vec<(&str, RuleSource, bool)> = listed
        .iter()
        .filter(|g| g.source != RuleSource::Builtin)
        .map(|g| (g.name.as_str(), g.source, g.enabled))
        .collect();
    assert_eq!(
        changed,
        [
            ("terraform-change", RuleSource::Modified, true),
            ("ansible-playbook", RuleSource::Modified, false),
            ("make-deploy", RuleSource::Custom, true),
        ]
    );
    assert_eq!(listed.len(), builtin.len() + 1);
    assert!(
        listed
            .iter()
            .all(|g| g.source == RuleSource::Builtin || g.updated_by.as_deref() == Some("boss"))
    );

    // Reset: a built-in one is back as shipped, a custom one is gone.
    let r = reset(&h, &boss, "terraform-change").await.unwrap();
    assert!(r.builtin_restored);
    assert!(check(&h, &me, "terraform apply").await.is_err());
    let r = reset(&h, &boss, "make-deploy").await.unwrap();
    assert!(!r.builtin_restored);
    assert!(check(&h, &me, "make upload").await.is_ok());
    let e = reset(&h, &boss, "make-deploy").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);

    // Bad input is refused and stores nothing.
    for (name, pattern, enabled) in [
        ("bad name!", Some(deploy.clone()), None),
        (
            "globs",
            Some(json!({"program": "x", "words": ["[unclosed"], "operation": "deploy",
            "category": "production_deployment", "action": "block", "reason": "r"})),
            None,
        ),
        (
            "fields",
            Some(json!({"program": "x", "colour": "red", "operation": "deploy",
            "category": "production_deployment", "action": "block", "reason": "r"})),
            None,
        ),
        (
            "category",
            Some(json!({"program": "x", "operation": "deploy",
            "category": "unverifiable", "action": "block", "reason": "r"})),
            None,
        ),
        (
            "action",
            Some(json!({"program": "x", "operation": "deploy",
            "category": "production_deployment", "action": "allow", "reason": "r"})),
            None,
        ),
        ("other-name", Some(json!({"name": "x", "program": "x"})), None),
    ] {
        let e = run::<guardrails::SetGuardrail>(&h, &boss, set_rule(name, pattern, enabled))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidGuardrail, "{name}: {e:?}");
    }
    let e = run::<guardrails::SetGuardrail>(&h, &boss, set_rule("no-such-pattern", None, Some(false)))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let after = registry(&h).await;
    assert_eq!(
        after.iter().filter(|g| g.source != RuleSource::Builtin).count(),
        1,
        "only ansible-playbook is still changed"
    );

    // Only trust 4 changes the registry; everyone reads it.
    if h.door != crate::Door::Http {
        let e = run::<guardrails::SetGuardrail>(&h, &me, set_rule("ansible-playbook", None, Some(true)))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
        let e = reset(&h, &me, "ansible-playbook").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InsufficientTrustLevel);
    }
    // Changes are audited.
    let log = run::<audit::QueryAudit>(
        &h,
        &operator("auditor"),
        AuditQueryRequest {
            operation: Some("set_guardrail".into()),
            limit: Some(50),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(log.entries.len() >= 5, "{}", log.entries.len());
}
