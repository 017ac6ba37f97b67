use super::*;

#[test]
fn profiles_parse_and_name() {
    for p in WorkerProfile::ALL {
        assert_eq!(WorkerProfile::parse(p.name()), Some(p));
        assert!(p.tools().iter().all(|t| KNOWN_TOOLS.contains(t)));
        assert!(p.coord_profile().starts_with("worker-"));
    }
    assert_eq!(WorkerProfile::parse("READ-ONLY"), Some(WorkerProfile::ReadOnly));
    assert_eq!(WorkerProfile::parse("root"), None);
    assert_eq!(Runtime::parse("Claude-Code"), Some(Runtime::Claude));
}

#[test]
fn only_a_structured_verdict_is_a_verdict() {
    use preflight::{VerdictKind, parse_verdict};
    let ok: &[(&str, VerdictKind, usize)] = &[
        (r#"{"verdict":"valid","reasons":[]}"#, VerdictKind::Valid, 0),
        ("  {\"verdict\": \"valid\"}\n", VerdictKind::Valid, 0),
        (
            r#"{"verdict":"invalid","reasons":["asks for credentials"]}"#,
            VerdictKind::Invalid,
            1,
        ),
    ];
    for (text, kind, n) in ok {
        let v = parse_verdict(text).unwrap();
        assert_eq!((v.verdict, v.reasons.len()), (*kind, *n), "{text}");
    }
    let refused = [
        "",
        "   ",
        "VALID",
        "INVALID",
        "The plan is VALID.",
        "Sure! {\"verdict\":\"valid\"}",
        "```json\n{\"verdict\":\"valid\"}\n```",
        "{\"verdict\":\"VALID\"}",
        "{\"verdict\":\"yes\"}",
        "{\"verdict\":true}",
        "{\"reasons\":[]}",
        "{\"verdict\":\"valid\",\"extra\":1}",
        "{\"verdict\":\"valid\",\"reasons\":\"none\"}",
        "{\"verdict\":\"valid\"",
        "{\"verdict\":\"valid\"} trailing",
        "[{\"verdict\":\"valid\"}]",
    ];
    for text in refused {
        assert!(parse_verdict(text).is_err(), "{text:?} must not be a verdict");
    }
    let long = format!("{{\"verdict\":\"invalid\",\"reasons\":[\"{}\"]}}", "x".repeat(600));
    assert!(parse_verdict(&long).is_err());
}

#[test]
fn preflight_decisions() {
    use preflight::*;
    let plan = LaunchPlanSummary {
        agent: "a".into(),
        profile: "read_only".into(),
        runtime: "claude".into(),
        task: "t".into(),
        tools: vec![],
        writable: "nothing".into(),
        network_policy: "worker_read_only".into(),
        bash_commands: vec![],
        system_prompt: String::new(),
        model: None,
        model_endpoint: None,
        sandboxed: true,
        tools_enforced: true,
        passed_env: vec![],
        resolve: vec![],
    };
    let req = |validator, verdict: Option<(VerdictKind, &[&str])>, failure: Option<&str>| PreflightRequest {
        target_agent_id: "a-1".into(),
        plan: plan.clone(),
        validator,
        verdict: verdict.map(|(k, r)| Verdict {
            verdict: k,
            reasons: r.iter().map(|s| s.to_string()).collect(),
        }),
        failure: failure.map(String::from),
    };
    assert!(decide(&req(Validator::Disabled, None, None)).is_ok());
    assert!(decide(&req(Validator::Command, Some((VerdictKind::Valid, &[])), None)).is_ok());
    assert!(decide(&req(Validator::Model, Some((VerdictKind::Valid, &["fine"])), None)).is_ok());
    let e = decide(&req(
        Validator::Command,
        Some((VerdictKind::Invalid, &["exfiltration"])),
        None,
    ))
    .unwrap_err();
    assert!(e.contains("exfiltration"), "{e}");
    assert!(decide(&req(Validator::Command, None, Some("timed out after 30s"))).is_err());
    assert!(decide(&req(Validator::Command, None, None)).is_err());
    assert!(decide(&req(Validator::Disabled, Some((VerdictKind::Valid, &[])), None)).is_err());
    // An error beside a valid verdict is still a denial.
    assert!(decide(&req(Validator::Model, Some((VerdictKind::Valid, &[])), Some("x"))).is_err());
    let msg = serde_json::json!({"type": "message", "content": [{"type": "text", "text": "{\"verdict\":"}, {"type": "text", "text": "\"valid\"}"}]});
    assert_eq!(messages_text(&msg).unwrap(), "{\"verdict\":\"valid\"}");
    assert!(messages_text(&serde_json::json!({"type": "error", "error": {"message": "overloaded"}})).is_err());
}

#[test]
fn runtime_versions_older_than_verified_or_unreadable_are_refused() {
    let cases = [
        (Runtime::Claude, "2.1.330 (Claude Code)", true),
        (Runtime::Claude, "2.2.0 (Claude Code)", true),
        (Runtime::Claude, "2.1.329 (Claude Code)", false),
        (Runtime::Claude, "2.1.197 (Claude Code)", false),
        (Runtime::Claude, "Claude Code", false),
        (Runtime::Claude, "", false),
        (Runtime::Codex, "codex-cli 0.169.0", true),
        (Runtime::Codex, "codex-cli v0.170.1", true),
        (Runtime::Codex, "codex-cli 0.168.9", false),
        (Runtime::Codex, "codex-cli 0.169", false),
        (Runtime::Aider, "whatever", true),
    ];
    for (runtime, out, ok) in cases {
        assert_eq!(runtime.check_version(out).is_ok(), ok, "{runtime:?} {out:?}");
    }
}
