use super::*;
use crate::labels::{lock_label, short_hash};
use serde_json::json;

fn issue(labels: &[&str], body: &str, state: &str) -> Issue {
    serde_json::from_value(json!({
        "number": 7, "title": "Fix login", "body": body, "state": state,
        "updated_at": "2026-11-26T10:00:00Z",
        "labels": labels.iter().map(|l| json!({"name": l, "color": "ffffff"})).collect::<Vec<_>>(),
        "user": {"login": "octocat"}
    }))
    .unwrap()
}

#[test]
fn labels_become_wanted_locks_and_tasks() {
    let long = "src/very/deep/directory/structure/with/a/long/file_name.rs";
    let hashed = lock_label(long);
    let block = format!("Work on it.\n\n<!-- coord:locks -->\n- `{long}`\n");
    // (labels, body, closed, agent, locks, task priority, problems)
    type Case<'a> = (
        Vec<&'a str>,
        String,
        bool,
        Option<&'a str>,
        Vec<&'a str>,
        Option<i64>,
        usize,
    );
    let cases: Vec<Case> = vec![
        (
            vec!["agent:claude-1", "locked:src/auth/login.ts"],
            String::new(),
            false,
            Some("claude-1"),
            vec!["src/auth/login.ts"],
            None,
            0,
        ),
        // Prefixes in any case, paths normalised and deduplicated.
        (
            vec!["Agent:claude-1", "LOCKED:./src/a.rs", "locked:src/a.rs"],
            String::new(),
            false,
            Some("claude-1"),
            vec!["src/a.rs"],
            None,
            0,
        ),
        (
            vec!["agent:claude-1", "status:assigned"],
            String::new(),
            false,
            Some("claude-1"),
            vec![],
            Some(5),
            0,
        ),
        (
            vec!["agent:claude-1", "Status:Assigned", "priority:2"],
            String::new(),
            false,
            Some("claude-1"),
            vec![],
            Some(2),
            0,
        ),
        (
            vec!["agent:claude-1", "status:assigned", "priority:99"],
            String::new(),
            false,
            Some("claude-1"),
            vec![],
            Some(5),
            0,
        ),
        // Nobody's locks are anonymous.
        (vec!["locked:src/a.rs"], String::new(), false, None, vec![], None, 1),
        (
            vec!["agent:a", "agent:b", "locked:src/a.rs", "status:assigned"],
            String::new(),
            false,
            None,
            vec![],
            None,
            1,
        ),
        (
            vec!["agent:bad id", "locked:src/a.rs"],
            String::new(),
            false,
            None,
            vec![],
            None,
            1,
        ),
        // A path outside the repository, an unlisted hash: no lock, said why.
        (
            vec!["agent:claude-1", "locked:../etc/passwd", "locked:src/b.rs"],
            String::new(),
            false,
            Some("claude-1"),
            vec!["src/b.rs"],
            None,
            1,
        ),
        (
            vec!["agent:claude-1", hashed.as_str()],
            String::new(),
            false,
            Some("claude-1"),
            vec![],
            None,
            1,
        ),
        (
            vec!["agent:claude-1", hashed.as_str()],
            block.clone(),
            false,
            Some("claude-1"),
            vec![long],
            None,
            0,
        ),
        // Closed: nothing wanted.
        (
            vec!["agent:claude-1", "locked:src/a.rs", "status:assigned"],
            String::new(),
            true,
            None,
            vec![],
            None,
            0,
        ),
        (
            vec!["bug", "status:assigned"],
            String::new(),
            false,
            None,
            vec![],
            None,
            0,
        ),
    ];
    for (labels, body, closed, agent, locks, task, problems) in cases {
        let w = wanted(&issue(&labels, &body, "open"), closed, &[]);
        assert_eq!(w.agent.as_deref(), agent, "{labels:?}");
        assert_eq!(w.locks, locks, "{labels:?}");
        assert_eq!(w.task.as_ref().map(|t| t.priority), task, "{labels:?}");
        assert_eq!(w.problems.len(), problems, "{labels:?}: {:?}", w.problems);
    }
    // Known paths resolve a hash the body does not list.
    let w = wanted(&issue(&["agent:x", &hashed], "", "open"), false, &[long.to_string()]);
    assert_eq!(w.locks, vec![long.to_string()]);
    assert_eq!(short_hash(long).len(), 8);
}

#[test]
fn closing_is_read_from_the_action_or_the_state() {
    let open = issue(&[], "", "open");
    let closed = issue(&[], "", "closed");
    for (action, i, want) in [
        ("labeled", &open, false),
        ("closed", &open, true),
        ("deleted", &open, true),
        ("transferred", &open, true),
        ("labeled", &closed, true),
        ("reopened", &open, false),
    ] {
        assert_eq!(issue_closed(action, i), want, "{action}");
    }
}

fn link(agent: Option<&str>, locks: &[&str], task: Option<&str>) -> Link {
    Link {
        agent_id: agent.map(str::to_string),
        locks: locks.iter().map(|s| s.to_string()).collect(),
        task_id: task.map(str::to_string),
        ..Link::new(1, issue_key(7), "o/r".into())
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn reconciling_a_link_with_what_is_wanted() {
    let t = WantedTask {
        title: "t".into(),
        priority: 5,
    };
    // (link, agent, locks, task, completed) → (release, acquire, end, create)
    type Case<'a> = (
        Link,
        Option<&'a str>,
        Vec<&'a str>,
        Option<&'a WantedTask>,
        bool,
        Vec<(&'a str, &'a str)>,
        Vec<&'a str>,
        Option<(&'a str, TaskEnd)>,
        bool,
    );
    let cases: Vec<Case> = vec![
        // First event: take what is wanted, make the task.
        (
            link(None, &[], None),
            Some("a"),
            vec!["x", "y"],
            Some(&t),
            false,
            vec![],
            vec!["x", "y"],
            None,
            true,
        ),
        // A label removed: released; the others renewed.
        (
            link(Some("a"), &["x", "y"], Some("T")),
            Some("a"),
            vec!["y"],
            Some(&t),
            false,
            vec![("a", "x")],
            vec!["y"],
            None,
            false,
        ),
        // The agent changed: every old lock released, the task ended and made again.
        (
            link(Some("a"), &["x"], Some("T")),
            Some("b"),
            vec!["x"],
            Some(&t),
            false,
            vec![("a", "x")],
            vec!["x"],
            Some(("T", TaskEnd::Cancel)),
            true,
        ),
        // Closed as completed: released, task completed.
        (
            link(Some("a"), &["x"], Some("T")),
            None,
            vec![],
            None,
            true,
            vec![("a", "x")],
            vec![],
            Some(("T", TaskEnd::Complete)),
            false,
        ),
        // status:assigned removed: task cancelled, locks kept.
        (
            link(Some("a"), &["x"], Some("T")),
            Some("a"),
            vec!["x"],
            None,
            false,
            vec![],
            vec!["x"],
            Some(("T", TaskEnd::Cancel)),
            false,
        ),
        // Nothing held, nothing wanted.
        (
            link(None, &[], None),
            None,
            vec![],
            None,
            false,
            vec![],
            vec![],
            None,
            false,
        ),
    ];
    for (i, (l, agent, locks, task, completed, release, acquire, end, create)) in cases.into_iter().enumerate() {
        let r = reconcile(&l, agent, &strings(&locks), task, completed);
        let want_release: Vec<(String, String)> = release.iter().map(|(a, p)| (a.to_string(), p.to_string())).collect();
        assert_eq!(r.release, want_release, "case {i}");
        assert_eq!(r.acquire, strings(&acquire), "case {i}");
        assert_eq!(r.end_task, end.map(|(id, e)| (id.to_string(), e)), "case {i}");
        assert_eq!(r.create_task.is_some(), create, "case {i}");
    }
}

#[test]
fn older_events_than_the_applied_one_are_stale() {
    let at = |s: &str| s.parse::<Timestamp>().unwrap();
    let mut l = link(None, &[], None);
    assert!(!stale(&l, at("2026-11-26T10:00:00Z")));
    l.updated_at = Some(at("2026-11-26T10:00:00Z"));
    assert!(
        !stale(&l, at("2026-11-26T10:00:00Z")),
        "a redelivery applies again, harmlessly"
    );
    assert!(!stale(&l, at("2026-11-26T10:00:01Z")));
    assert!(stale(&l, at("2026-11-26T09:59:59Z")));
}

#[test]
fn agent_branches() {
    for (r, want) in [
        ("refs/heads/agent/claude-1/42", Some(("claude-1", "42"))),
        ("agent/claude-1/feature/x", Some(("claude-1", "feature/x"))),
        ("refs/heads/main", None),
        ("agent/claude-1", None),
        ("agent//42", None),
    ] {
        let got = branch_agent(r);
        assert_eq!(got.as_ref().map(|(a, t)| (a.as_str(), t.as_str())), want, "{r}");
    }
    assert_eq!(branch_key("refs/heads/agent/a/1"), "branch:agent/a/1");
    assert_eq!(branch_key("agent/a/1"), "branch:agent/a/1");
}

#[test]
fn the_comment_names_every_contested_path_and_problem() {
    assert_eq!(lock_comment(&[], &[]), None);
    let c = lock_comment(&[("src/a.rs".into(), "codex-2".into())], &["x names no lock".into()]).unwrap();
    assert!(c.contains("`src/a.rs` is locked by codex-2"), "{c}");
    assert!(c.contains("x names no lock"), "{c}");
}

#[test]
fn agent_ids_github_can_carry() {
    for (id, ok) in [
        ("claude-web-1", true),
        ("codex_2.b", true),
        (" claude ", true),
        ("", false),
        ("bad id", false),
        (".hidden", false),
        ("a/b", false),
        ("x".repeat(44).as_str(), true),
        ("x".repeat(45).as_str(), false),
    ] {
        assert_eq!(github_agent_id(id).is_ok(), ok, "{id:?}");
    }
}

#[test]
fn what_completes_a_task() {
    let closed = |reason: Option<&str>| {
        let mut i = issue(&[], "", "closed");
        i.state_reason = reason.map(str::to_string);
        i
    };
    // (action, issue, merged) → completed
    let cases = [
        ("closed", closed(Some("completed")), false, true),
        ("closed", closed(Some("not_planned")), false, false),
        ("closed", closed(None), false, false),
        ("closed", closed(None), true, true),
        ("deleted", closed(Some("completed")), false, false),
        ("transferred", issue(&[], "", "open"), false, false),
        ("labeled", issue(&[], "", "open"), false, false),
    ];
    for (action, i, merged, want) in cases {
        assert_eq!(
            closed_as_completed(action, &i, merged),
            want,
            "{action} {:?}",
            i.state_reason
        );
    }
}

#[test]
fn a_delivery_makes_one_task_id() {
    let a = task_id_for("d-1", 7, "issue:12");
    assert_eq!(a, task_id_for("d-1", 7, "issue:12"));
    assert_ne!(a, task_id_for("d-2", 7, "issue:12"));
    assert_ne!(a, task_id_for("d-1", 7, "issue:13"));
    // The queue's own format: a version-4 UUID.
    assert_eq!(a.len(), 36);
    assert_eq!(&a[14..15], "4");
    assert_eq!(coord_domain::queue::parse_task_id("task_id", &a).unwrap(), a);
}
