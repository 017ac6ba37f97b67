use super::*;
use crate::approvals::ApprovalStatus;
use chrono::{TimeZone, Utc};
use serde_json::json;

fn policy(v: Value) -> CoordResult<VerificationPolicy> {
    let p: VerificationPolicy = serde_json::from_value(v).expect("the table's JSON reads");
    validate_policy(p)
}

fn lint() -> Value {
    json!({"name": "lint", "tier": 0, "executor": "inline", "patterns": ["**/*.rs"], "command": ["cargo", "clippy"]})
}

fn with(base: Value, patch: Value) -> Value {
    let mut b = base;
    for (k, v) in patch.as_object().unwrap() {
        if v.is_null() {
            b.as_object_mut().unwrap().remove(k);
        } else {
            b[k] = v.clone();
        }
    }
    b
}

#[test]
fn policies_are_checked_field_by_field() {
    // (patch over a valid inline policy, the field the error names; None = valid)
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!({}), None),
        (json!({"name": "Lint"}), Some("name")),
        (json!({"name": ""}), Some("name")),
        (json!({"tier": 5}), Some("tier")),
        (json!({"tier": 4}), Some("executor")),
        (json!({"patterns": []}), Some("patterns")),
        (json!({"patterns": ["src/**", "/etc/*"]}), Some("patterns[1]")),
        (json!({"patterns": ["src/[a"]}), Some("patterns[0]")),
        (json!({"patterns": [" "]}), Some("patterns[0]")),
        (json!({"exclude_patterns": ["{a,b"]}), Some("exclude_patterns[0]")),
        (json!({"required_env": ["GITHUB_TOKEN", "1X"]}), Some("required_env[1]")),
        (json!({"required_env": ["A-B"]}), Some("required_env[0]")),
        (json!({"timeout_seconds": 0}), Some("timeout_seconds")),
        (json!({"timeout_seconds": 86401}), Some("timeout_seconds")),
        (json!({"command": []}), Some("command")),
        (json!({"command": [" ", "x"]}), Some("command[0]")),
        (json!({"command": ["a", "b\u{0}"]}), Some("command[1]")),
        (json!({"workflow": "ci.yml"}), Some("workflow")),
        (json!({"template": "base"}), Some("template")),
        (json!({"executor": "manual", "tier": 4}), Some("command")),
        (json!({"executor": "manual", "tier": 4, "command": null}), None),
        (json!({"executor": "manual", "tier": 2, "command": null}), None),
        (
            json!({"executor": "github_actions", "tier": 1, "command": null}),
            Some("workflow"),
        ),
        (
            json!({"executor": "github_actions", "tier": 1, "command": null, "workflow": "ci.yml"}),
            None,
        ),
        (
            json!({"executor": "github_actions", "tier": 1, "command": null, "workflow": "c i.yml"}),
            Some("workflow"),
        ),
        (json!({"executor": "e2b", "tier": 2, "command": null}), Some("command")),
        (json!({"executor": "e2b", "tier": 2}), Some("template")),
        (json!({"executor": "e2b", "tier": 2, "template": "rust-1.95"}), None),
        (json!({"executor": "local", "tier": 2}), None),
        (json!({"description": "x".repeat(501)}), Some("description")),
    ];
    for (patch, field) in cases {
        let got = policy(with(lint(), patch.clone()));
        match field {
            None => assert!(got.is_ok(), "{patch}: {got:?}"),
            Some(f) => {
                let e = got.expect_err(&patch.to_string());
                assert_eq!(e.code, ErrorCode::InvalidArgument, "{patch}");
                assert_eq!(e.field.as_deref(), Some(f), "{patch}: {}", e.message);
            }
        }
    }
}

#[test]
fn policies_are_normalised_and_unknown_fields_refused() {
    let p = policy(with(
        lint(),
        json!({"patterns": ["./src/**/*.rs", " docs/*.md "], "description": " x "}),
    ))
    .unwrap();
    assert_eq!(p.patterns, ["src/**/*.rs", "docs/*.md"]);
    assert_eq!(p.description, "x");
    assert_eq!(p.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    assert!(p.enabled);
    assert!(serde_json::from_value::<VerificationPolicy>(with(lint(), json!({"exclude_pattern": ["x"]}))).is_err());
}

fn matcher(v: Value) -> Matcher {
    Matcher::new(policy(v).unwrap()).unwrap()
}

#[test]
fn globs_keep_separators_literal() {
    // (pattern, path, covered)
    let cases = [
        ("**/*.py", "setup.py", true),
        ("**/*.py", "a/b/setup.py", true),
        ("*.py", "a/setup.py", false),
        ("src/*.rs", "src/a/b.rs", false),
        ("src/**", "src/a/b.rs", true),
        ("src/**", "srcx/a.rs", false),
        ("migrations/**/*.sql", "migrations/0001.sql", true),
        ("**/Cargo.toml", "Cargo.toml", true),
        ("*.RS", "main.rs", false),
        ("docs/?.md", "docs/a.md", true),
        ("docs/?.md", "docs/ab.md", false),
    ];
    for (pattern, path, covered) in cases {
        let m = matcher(with(lint(), json!({"patterns": [pattern]})));
        assert_eq!(m.covers(path), covered, "{pattern} {path}");
    }
    let m = matcher(with(
        lint(),
        json!({"patterns": ["**"], "exclude_patterns": ["**/*.md", "vendor/**"]}),
    ));
    assert!(m.covers("src/main.rs"));
    assert!(!m.covers("README.md"));
    assert!(!m.covers("vendor/x/y.rs"));
}

fn set_of() -> Vec<Matcher> {
    vec![
        matcher(
            json!({"name": "lint", "tier": 0, "executor": "inline", "patterns": ["**/*.rs"], "command": ["cargo", "clippy"]}),
        ),
        matcher(
            json!({"name": "unit", "tier": 1, "executor": "github_actions", "patterns": ["src/**"], "workflow": "ci.yml"}),
        ),
        matcher(
            json!({"name": "integration", "tier": 2, "executor": "local", "patterns": ["src/db/**"], "command": ["make", "it"]}),
        ),
        matcher(json!({"name": "security", "tier": 4, "executor": "manual", "patterns": ["src/auth/**", "**/*.pem"]})),
        matcher(
            json!({"name": "deploy", "tier": 3, "executor": "e2b", "patterns": ["deploy/**"], "template": "t", "command": ["make", "e2e"], "requires_approval": true}),
        ),
        matcher(
            json!({"name": "off", "tier": 0, "executor": "inline", "patterns": ["**"], "command": ["true"], "enabled": false}),
        ),
    ]
}

fn plan(files: &[&str], trust: u8) -> Vec<(String, RunStatus, Vec<String>)> {
    route(&set_of(), files, trust, None)
        .into_iter()
        .map(|r| (r.policy.name, r.status, r.files))
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn routing_runs_every_matching_policy_by_tier() {
    use RunStatus::*;
    assert_eq!(
        plan(&["src/auth/login.rs", "src/db/pool.rs", "README.md"], 2),
        vec![
            ("lint".into(), Pending, s(&["src/auth/login.rs", "src/db/pool.rs"])),
            ("unit".into(), Pending, s(&["src/auth/login.rs", "src/db/pool.rs"])),
            ("integration".into(), Pending, s(&["src/db/pool.rs"])),
            ("security".into(), AwaitingApproval, s(&["src/auth/login.rs"])),
        ]
    );
    // Nothing covers it (the disabled catch-all does not count).
    assert_eq!(plan(&["README.md"], 2), vec![]);
    // Trust 3 skips tiers 0 and 1, with the reason; higher tiers stay.
    let runs = route(&set_of(), &["src/db/pool.rs"], 3, None);
    let st: Vec<_> = runs.iter().map(|r| (r.policy.name.as_str(), r.status)).collect();
    assert_eq!(st, [("lint", Skipped), ("unit", Skipped), ("integration", Pending)]);
    assert_eq!(runs[0].reason.as_deref(), Some("trust level 3 skips tiers 0 and 1"));
    // Trust 4 too; trust 2 does not.
    assert_eq!(plan(&["a.rs"], 4), vec![("lint".into(), Skipped, s(&["a.rs"]))]);
    assert_eq!(plan(&["a.rs"], 0), vec![("lint".into(), Pending, s(&["a.rs"]))]);
    // requires_approval holds a non-manual executor until a person approves.
    let runs = route(&set_of(), &["deploy/app.yaml"], 2, None);
    assert_eq!(runs[0].status, AwaitingApproval);
    assert_eq!(
        runs[0].reason.as_deref(),
        Some("waiting for a person's approval before e2b runs")
    );
    // A file list that may be incomplete: every enabled policy runs, saying why.
    let all = route(&set_of(), &["README.md"], 0, Some("a forced push"));
    let names: Vec<&str> = all.iter().map(|r| r.policy.name.as_str()).collect();
    assert_eq!(names, ["lint", "unit", "integration", "deploy", "security"]);
    assert_eq!(
        all[0].reason.as_deref(),
        Some("runs although no listed file matches: a forced push")
    );
    // A removed private key still goes to review.
    assert_eq!(
        plan(&["certs/server.pem"], 4),
        vec![("security".into(), AwaitingApproval, s(&["certs/server.pem"]))]
    );
}

#[test]
fn a_changeset_is_failed_pending_awaiting_or_passed() {
    use ChangesetStatus as C;
    use RunStatus::*;
    let cases: Vec<(Vec<RunStatus>, ChangesetStatus)> = vec![
        (vec![], C::NotRequired),
        (vec![Passed, Skipped], C::Passed),
        (vec![Skipped], C::Passed),
        (vec![Passed, Pending], C::Pending),
        (vec![Running, AwaitingApproval], C::Pending),
        (vec![Passed, AwaitingApproval], C::AwaitingApproval),
        (vec![Pending, Failed], C::Failed),
        (vec![AwaitingApproval, Error], C::Failed),
        (vec![TimedOut], C::Failed),
        (vec![Cancelled, Passed], C::Failed),
    ];
    for (runs, want) in cases {
        assert_eq!(overall(&runs), want, "{runs:?}");
    }
}

#[test]
fn a_review_decides_a_waiting_run() {
    use RunStatus::*;
    let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
    let later = now + chrono::Duration::hours(1);
    let earlier = now - chrono::Duration::hours(1);
    let r = |status, expires_at, by: Option<&str>| Review {
        status,
        expires_at,
        decided_by: by.map(str::to_string),
        note: Some("looks fine".into()),
    };
    let waiting = Some("waiting".to_string());
    let cases = [
        (
            r(ApprovalStatus::Pending, later, None),
            true,
            AwaitingApproval,
            "waiting",
        ),
        (
            r(ApprovalStatus::Pending, earlier, None),
            true,
            TimedOut,
            "nobody reviewed it before the request expired",
        ),
        // An approval's own grant running out does not undo the decision.
        (
            r(ApprovalStatus::Approved, earlier, Some("lead")),
            true,
            Passed,
            "approved by lead: looks fine",
        ),
        (
            r(ApprovalStatus::Approved, later, Some("lead")),
            false,
            Pending,
            "approved by lead: looks fine; waiting for its executor",
        ),
        (
            r(ApprovalStatus::Denied, later, Some("lead")),
            true,
            Failed,
            "denied by lead: looks fine",
        ),
        (
            r(ApprovalStatus::Expired, later, None),
            true,
            TimedOut,
            "nobody reviewed it before the request expired",
        ),
    ];
    for (review, only, status, reason) in cases {
        let got = with_review(AwaitingApproval, waiting.clone(), Some(&review), only, now);
        assert_eq!(got, (status, Some(reason.to_string())), "{review:?}");
    }
    // Runs not waiting for a person keep their stored status and reason.
    assert_eq!(
        with_review(Failed, Some("exit 1".into()), None, false, now),
        (Failed, Some("exit 1".into()))
    );
}

#[test]
fn changesets_are_checked_and_normalised() {
    let req = |v: Value| serde_json::from_value::<SubmitChangesetRequest>(v).unwrap();
    let ok = validate_changeset(
        req(
            json!({"files": ["./src/b.rs", "src/a.rs", "src//b.rs", "/repo/c.rs"], "removed": ["src/a.rs"],
                   "branch": " agent/claude-1/42 ", "commit": "ABCDEF1"}),
        ),
        Some("/repo"),
    )
    .unwrap();
    assert_eq!(
        ok.files,
        vec![
            ChangedFile {
                path: "c.rs".into(),
                change: Change::Modified
            },
            ChangedFile {
                path: "src/a.rs".into(),
                change: Change::Removed
            },
            ChangedFile {
                path: "src/b.rs".into(),
                change: Change::Modified
            },
        ]
    );
    assert_eq!(ok.branch.as_deref(), Some("agent/claude-1/42"));
    assert_eq!(ok.commit.as_deref(), Some("abcdef1"));
    // (request, field, code)
    let cases: Vec<(Value, &str, ErrorCode)> = vec![
        (json!({}), "files", ErrorCode::InvalidArgument),
        (json!({"files": ["../x"]}), "files[0]", ErrorCode::InvalidPath),
        (
            json!({"files": ["a"], "removed": ["/etc/passwd"]}),
            "removed[0]",
            ErrorCode::InvalidPath,
        ),
        (
            json!({"files": ["a"], "commit": "xyz1234"}),
            "commit",
            ErrorCode::InvalidArgument,
        ),
        (
            json!({"files": ["a"], "commit": "abc12"}),
            "commit",
            ErrorCode::InvalidArgument,
        ),
        (
            json!({"files": ["a"], "branch": "a..b"}),
            "branch",
            ErrorCode::InvalidArgument,
        ),
        (
            json!({"files": ["a"], "diff": "x".repeat(MAX_DIFF_BYTES + 1)}),
            "diff",
            ErrorCode::PayloadTooLarge,
        ),
        (
            json!({"files": vec!["a"; MAX_FILES + 1]}),
            "files",
            ErrorCode::InvalidArgument,
        ),
    ];
    for (v, field, code) in cases {
        let e = validate_changeset(req(v.clone()), Some("/repo")).expect_err(field);
        assert_eq!((e.field.as_deref(), e.code), (Some(field), code), "{}", e.message);
    }
}

#[test]
fn branches_follow_git_rules() {
    for good in ["main", "agent/claude-1/42", "feature/x.y", "release-1.2"] {
        assert!(check_branch(good).is_ok(), "{good}");
    }
    for bad in [
        "-x", "/x", "x/", "x.", "x.lock", "a..b", "a@{1}", "a//b", "@", "a/.b", "a b", "a~1", "a^", "a:b", "a?", "a*",
        "a[", "a\\b", "a\u{7}",
    ] {
        assert!(check_branch(bad).is_err(), "{bad}");
    }
}

#[test]
fn changeset_ids_are_ours() {
    let id = new_changeset_id();
    assert_eq!(validate_changeset_id(&id).unwrap(), id);
    assert_eq!(
        validate_changeset_id(&id.to_uppercase().replace("CS_", "cs_")).unwrap(),
        id
    );
    for bad in ["", "cs_", "cs_xyz", "1234", &format!("{id}0")] {
        assert!(validate_changeset_id(bad).is_err(), "{bad}");
    }
}

#[test]
fn reports_come_from_the_claiming_worker_only() {
    let report = validate_report(ReportVerificationRunRequest {
        changeset_id: new_changeset_id(),
        policy: "lint".into(),
        attempt: None,
        status: RunStatus::Failed,
        exit_code: Some(1),
        duration_ms: Some(12),
        output_tail: Some("é".repeat(MAX_OUTPUT_TAIL)),
        reason: None,
        external_id: None,
        external_url: None,
    })
    .unwrap();
    let kept = report.output_tail.as_deref().unwrap();
    assert!(kept.len() <= MAX_OUTPUT_TAIL && kept.chars().all(|c| c == 'é'));
    let claim = |status, by: Option<&str>| RunClaim {
        status,
        claimed_by: by.map(str::to_string),
        submitter: "dev".into(),
    };
    // (claim, reporter, allowed)
    let cases = [
        (claim(RunStatus::Running, Some("worker")), "worker", true),
        (claim(RunStatus::Running, Some("worker")), "other", false),
        (claim(RunStatus::Running, Some("dev")), "dev", false),
        (claim(RunStatus::Pending, None), "worker", false),
        (claim(RunStatus::Passed, Some("worker")), "worker", false),
    ];
    for (c, who, ok) in cases {
        let got = decide_report(&c, who, &report);
        assert_eq!(got.is_ok(), ok, "{c:?} {who}: {got:?}");
        if let Err(e) = got {
            assert_eq!(e.code, ErrorCode::Forbidden);
        }
    }
    for status in [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Skipped,
        RunStatus::AwaitingApproval,
    ] {
        let e = validate_report(ReportVerificationRunRequest {
            changeset_id: new_changeset_id(),
            policy: "lint".into(),
            attempt: None,
            status,
            exit_code: None,
            duration_ms: None,
            output_tail: None,
            reason: None,
            external_id: None,
            external_url: None,
        })
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("status"));
    }
    // Running, only as "started elsewhere" with the executor's id.
    let started = |id: Option<&str>, url: Option<&str>, status| {
        validate_report(ReportVerificationRunRequest {
            changeset_id: new_changeset_id(),
            policy: "ci".into(),
            attempt: None,
            status,
            exit_code: None,
            duration_ms: None,
            output_tail: None,
            reason: None,
            external_id: id.map(str::to_string),
            external_url: url.map(str::to_string),
        })
    };
    let ok = started(
        Some("30433642"),
        Some("https://github.com/o/r/actions/runs/30433642"),
        RunStatus::Running,
    )
    .unwrap();
    assert_eq!(ok.external.unwrap().0, "30433642");
    for (id, url, status, field) in [
        (None, Some("https://x"), RunStatus::Running, "external_id"),
        (Some("a b"), None, RunStatus::Running, "external_id"),
        (
            Some("1"),
            Some("file:///etc/passwd"),
            RunStatus::Running,
            "external_url",
        ),
        (None, None, RunStatus::Running, "status"),
    ] {
        let e = started(id, url, status).unwrap_err();
        assert_eq!(e.field.as_deref(), Some(field), "{id:?} {url:?}");
    }
    for (conclusion, want) in [
        (Some("success"), RunStatus::Passed),
        (Some("failure"), RunStatus::Failed),
        (Some("startup_failure"), RunStatus::Failed),
        (Some("timed_out"), RunStatus::TimedOut),
        (Some("cancelled"), RunStatus::Error),
        (Some("action_required"), RunStatus::Error),
        (None, RunStatus::Error),
    ] {
        assert_eq!(conclusion_status(conclusion), want, "{conclusion:?}");
    }
    assert_eq!(commit_state(RunStatus::Passed), "success");
    assert_eq!(commit_state(RunStatus::TimedOut), "failure");
    assert_eq!(commit_state(RunStatus::AwaitingApproval), "pending");
    assert_eq!(
        validate_claim(ClaimVerificationRunRequest::default()).unwrap(),
        ClaimFilter::default()
    );
    let claim = |executors: Vec<Executor>, commit: Option<&str>| {
        validate_claim(ClaimVerificationRunRequest {
            executors,
            commit: commit.map(str::to_string),
        })
    };
    assert!(claim(vec![Executor::Manual], None).is_err());
    assert_eq!(
        claim(vec![Executor::E2b, Executor::E2b], Some(" ABCDEF0 ")).unwrap(),
        ClaimFilter {
            executors: vec![Executor::E2b],
            commit: Some("abcdef0".into())
        }
    );
    assert_eq!(claim(vec![], Some("xyz")).unwrap_err().field.as_deref(), Some("commit"));
    assert_eq!(tail("abcdef", 3), "def");
}
