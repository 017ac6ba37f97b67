use super::*;
use serde_json::json;

fn remember(summary: &str) -> RememberRequest {
    RememberRequest {
        event_type: "error".into(),
        summary: summary.into(),
        ..Default::default()
    }
}

#[test]
fn tags_are_normalised_or_refused() {
    let ok: &[(&[&str], &[&str])] = &[
        (&[], &[]),
        (&[" Postgres ", "postgres", "CI"], &["postgres", "ci"]),
        (&["flaky test"], &["flaky-test"]),
        (&["area:billing", "a/b", "v1.2_x"], &["area:billing", "a/b", "v1.2_x"]),
    ];
    for (tags, want) in ok {
        let got = normalise_tags("tags", Some(tags.iter().map(|t| t.to_string()).collect())).unwrap();
        assert_eq!(got, *want);
    }
    let bad: &[&[&str]] = &[&[""], &["  "], &["a\"b"], &["semi;colon"], &["x\0"]];
    for tags in bad {
        let e = normalise_tags("tags", Some(tags.iter().map(|t| t.to_string()).collect())).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tags"), "{tags:?}");
    }
    let many: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
    assert!(normalise_tags("tags", Some(many)).is_err());
    assert!(normalise_tags("tags", Some(vec!["x".repeat(MAX_TAG + 1)])).is_err());
}

#[test]
fn remember_validation_table() {
    let cases: Vec<(RememberRequest, Option<&str>)> = vec![
        (remember("build failed"), None),
        (remember("  "), Some("summary")),
        (remember(&"x".repeat(MAX_SUMMARY + 1)), Some("summary")),
        (
            RememberRequest {
                event_type: "Has!Space".into(),
                ..remember("s")
            },
            Some("event_type"),
        ),
        (
            RememberRequest {
                event_type: "".into(),
                ..remember("s")
            },
            Some("event_type"),
        ),
        (
            RememberRequest {
                details: Some(json!([1, 2])),
                ..remember("s")
            },
            Some("details"),
        ),
        (
            RememberRequest {
                details: Some(json!("x".repeat(MAX_DETAILS_BYTES + 1))),
                ..remember("s")
            },
            Some("details"),
        ),
        (
            RememberRequest {
                lessons: Some(vec!["".into()]),
                ..remember("s")
            },
            Some("lessons"),
        ),
        (
            RememberRequest {
                lessons: Some((0..=MAX_LESSONS).map(|i| i.to_string()).collect()),
                ..remember("s")
            },
            Some("lessons"),
        ),
    ];
    for (req, field) in cases {
        let r = validate_remember(req.clone(), "id".into());
        match field {
            None => assert!(r.is_ok(), "{req:?}: {r:?}"),
            Some(f) => assert_eq!(r.unwrap_err().field.as_deref(), Some(f), "{req:?}"),
        }
    }
    let m = validate_remember(
        RememberRequest {
            event_type: "Test_Failure".into(),
            lessons: Some(vec!["a".into(), " a ".into(), "b".into()]),
            details: Some(json!("   ")),
            ..remember("  flaky  ")
        },
        "id".into(),
    )
    .unwrap();
    assert_eq!(m.event_type, "test_failure");
    assert_eq!(m.summary, "flaky");
    assert_eq!(m.lessons, ["a", "b"]);
    assert_eq!(m.details, None);
}

#[test]
fn merge_key_folds_case_and_whitespace_only() {
    let k = merge_key("a", "error", "Build  failed\n");
    assert_eq!(k, merge_key("a", "error", "build failed"));
    assert_ne!(k, merge_key("b", "error", "build failed"));
    assert_ne!(k, merge_key("a", "fix", "build failed"));
    assert_ne!(k, merge_key("a", "error", "build failed!"));
    // Parts cannot run into each other.
    assert_ne!(merge_key("ab", "c", "d"), merge_key("a", "bc", "d"));
}

#[test]
fn merge_table() {
    let old = Mergeable {
        details: Some(json!({"file": "a.rs", "line": 3})),
        outcome: Some(Outcome::Negative),
        lessons: vec!["l1".into(), "l2".into()],
        tags: vec!["ci".into()],
        occurrences: 2,
    };
    let new = validate_remember(
        RememberRequest {
            details: Some(json!({"line": 9, "cmd": "cargo test"})),
            lessons: Some(vec!["l2".into(), "l3".into()]),
            tags: Some(vec!["CI".into(), "rust".into()]),
            ..remember("s")
        },
        "id".into(),
    )
    .unwrap();
    let m = merge(old.clone(), &new);
    assert_eq!(m.details, Some(json!({"file": "a.rs", "line": 9, "cmd": "cargo test"})));
    assert_eq!(m.outcome, Some(Outcome::Negative), "no new outcome keeps the old");
    assert_eq!(m.lessons, ["l1", "l2", "l3"]);
    assert_eq!(m.tags, ["ci", "rust"]);
    assert_eq!(m.occurrences, 3);
    let positive = NewMemory {
        outcome: Some(Outcome::Positive),
        details: Some(json!("text")),
        ..new.clone()
    };
    let m = merge(old.clone(), &positive);
    assert_eq!(m.outcome, Some(Outcome::Positive));
    assert_eq!(m.details, Some(json!("text")));
    // Objects merging past the size bound keep the new details alone.
    let big = |k: &str| json!({ k: "x".repeat(MAX_DETAILS_BYTES * 2 / 3) });
    let grown = Mergeable {
        details: Some(big("a")),
        ..old.clone()
    };
    let next = NewMemory {
        details: Some(big("b")),
        ..new.clone()
    };
    assert_eq!(merge(grown, &next).details, Some(big("b")));
    let mut long = old;
    long.lessons = (0..MAX_MERGED_LESSONS).map(|i| format!("old{i}")).collect();
    let m = merge(long, &new);
    assert_eq!(m.lessons.len(), MAX_MERGED_LESSONS);
    assert_eq!(m.lessons.last().map(String::as_str), Some("l3"));
}

#[test]
fn details_text_reads_strings_and_objects() {
    assert_eq!(details_text(None), "");
    assert_eq!(details_text(Some(&json!("x y"))), "x y");
    assert_eq!(
        details_text(Some(&json!({"cmd": "cargo test", "n": 3, "l": ["a"]}))),
        "cmd cargo test n 3 l a"
    );
}

#[test]
fn recall_validation() {
    let q = validate_recall(RecallRequest {
        task_description: "Fix the flaky login test".into(),
        tags: Some(vec!["Auth".into()]),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(q.text.terms, ["fix", "flaky", "login", "test"]);
    assert_eq!(q.tags, ["auth"]);
    assert_eq!(q.limit, DEFAULT_RECALL_LIMIT);
    assert_eq!(q.author, None);
    let q = validate_recall(RecallRequest {
        author: Some(" old-hand ".into()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(q.author.as_deref(), Some("old-hand"));
    let e = validate_recall(RecallRequest {
        author: Some("x".repeat(MAX_SHORT_TEXT + 1)),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("author"));
    for limit in [0, MAX_RECALL_LIMIT + 1] {
        let e = validate_recall(RecallRequest {
            limit: Some(limit),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
    }
    assert!(validate_memory_id("not-a-uuid").is_err());
    assert_eq!(
        validate_memory_id(" 6F9619FF-8B86-D011-B42D-00C04FC964FF ").unwrap(),
        "6f9619ff-8b86-d011-b42d-00c04fc964ff"
    );
}
