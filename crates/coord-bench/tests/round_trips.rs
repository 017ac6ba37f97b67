//! Round trips to PostgreSQL per operation, counted through `coord_bench::link::Link` (a
//! relay on loopback adding no delay): a budget, like allocations on a hot path, so that
//! a change cannot add one silently. When a change removes one, lower the ceiling here
//! and the table in docs/benchmarks.md. The statements the server runs for each
//! operation (`Execute` and `Query` messages) have a ceiling too: on a busy server its
//! work per operation follows them.
//!
//! Each operation is run once to warm the connection (statements prepared, the
//! durability probe made), then counted on its second run, as an agent's calls are.
//!
//! Server: `COORD_TEST_DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/postgres);
//! skipped without one, except under CI.

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

use coord_bench::link::Link;
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_postgres::{PgOptions, PgStore};
use coord_service::{CoordConfig, Coordination, Coordinator, DatabaseClock, op_named};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// (operation, round trips today, the goal of issue 56, statements today). The ceilings
/// are today's counts.
const BUDGET: &[(&str, u64, u64, u64)] = &[
    ("register_session", 2, 2, 7),
    ("acquire_lock", 2, 2, 9),
    ("release_lock", 1, 1, 6),
    ("check_edit", 1, 1, 7),
    ("heartbeat", 1, 1, 7),
    ("check_guardrails", 1, 1, 6),
    ("submit_work", 2, 2, 7),
    ("get_work", 2, 2, 9),
    ("complete_work", 1, 2, 8),
];

/// Round trips and statements of one run.
type Made = (u64, u64);

struct Counted {
    coord: Coordinator,
    link: Link,
    who: Principal,
}

impl Counted {
    /// Runs `op` with `request`, answering its result and the round trips and statements
    /// it made.
    async fn run(&self, op: &str, request: Value) -> (Value, Made) {
        let entry = op_named(op).expect("a registered operation");
        let before = (self.link.round_trips(), self.link.statements());
        let answer = self.coord.invoke(entry, &self.who, Ok(request)).await;
        let made = (self.link.round_trips() - before.0, self.link.statements() - before.1);
        (answer.unwrap_or_else(|e| panic!("{op}: {e:?}")), made)
    }

    /// Runs `op` twice (`first`, then `second`) and answers what the second run made.
    async fn warm(&self, op: &str, first: Value, second: Value) -> Made {
        self.run(op, first).await;
        self.run(op, second).await.1
    }
}

#[tokio::test]
async fn operations_stay_within_their_round_trips() {
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let link = Link::start(&db.url, Duration::ZERO).await.expect("the link");
    let options = PgOptions {
        pool_size: 1,
        timeout: Duration::from_secs(10),
    };
    let store = PgStore::connect(&link.url, options)
        .await
        .expect("connect through the link");
    let coord = Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default());
    let who = Principal::local(Caller::new("rt-agent", "claude_code"));
    let c = Counted { coord, link, who };

    let mut measured = Vec::new();
    let session = json!({"capabilities": ["rust"]});
    measured.push((
        "register_session",
        c.warm("register_session", session.clone(), session).await,
    ));
    let lock = |p: &str| json!({"file_path": p});
    c.run("acquire_lock", lock("src/warm.rs")).await;
    c.run("release_lock", lock("src/warm.rs")).await;
    measured.push(("acquire_lock", c.run("acquire_lock", lock("src/a.rs")).await.1));
    measured.push(("release_lock", c.run("release_lock", lock("src/a.rs")).await.1));
    let edit = json!({"paths": ["src/b.rs"]});
    measured.push(("check_edit", c.warm("check_edit", edit.clone(), edit).await));
    measured.push(("heartbeat", c.warm("heartbeat", json!({}), json!({})).await));
    // What Claude Code's and Codex's hooks ask before a shell command runs.
    let command = json!({"command": "cargo test && git status", "tool": "Bash"});
    // The first check reads the rules; the second prepares the statement that confirms
    // them; the third is what every later check costs.
    c.run("check_guardrails", command.clone()).await;
    measured.push((
        "check_guardrails",
        c.warm("check_guardrails", command.clone(), command).await,
    ));
    let task = |n: u32| json!({"task_type": "rt", "task_description": format!("task {n}")});
    measured.push(("submit_work", c.warm("submit_work", task(1), task(2)).await));
    for _ in 0..2 {
        let (claimed, get_work) = c.run("get_work", json!({"task_types": ["rt"]})).await;
        let id = claimed["task_id"].as_str().expect("a task to claim").to_string();
        let (_, complete_work) = c.run("complete_work", json!({"task_id": id, "success": true})).await;
        // The second pair is the one counted.
        measured.retain(|(op, _)| *op != "get_work" && *op != "complete_work");
        measured.push(("get_work", get_work));
        measured.push(("complete_work", complete_work));
    }

    let mut over = Vec::new();
    for (op, ceiling, goal, statements) in BUDGET {
        let made = measured.iter().find(|(o, _)| o == op).map(|(_, n)| *n);
        let (made, sent) = made.unwrap_or_else(|| panic!("{op} was not measured"));
        eprintln!(
            "{op:<18} {made} round trips (ceiling {ceiling}, goal {goal}), {sent} statements (ceiling {statements})"
        );
        if made > *ceiling {
            over.push(format!("{op}: {made} round trips, the budget is {ceiling}"));
        }
        if sent > *statements {
            over.push(format!("{op}: {sent} statements, the budget is {statements}"));
        }
    }
    assert!(over.is_empty(), "more than budgeted:\n{}", over.join("\n"));
    assert_eq!(measured.len(), BUDGET.len(), "every measured operation has a budget");
}

/// Assigns `rt-agent` the least-privilege profile (`on`) or removes it, through a
/// connection of its own: a change made elsewhere.
async fn least_privilege(elsewhere: &tokio_postgres::Client, on: bool) {
    let sql = if on {
        "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
         VALUES ('agent', 'rt-agent', 'least-privilege', now(), 'test')"
    } else {
        "DELETE FROM agent_profile_assignments WHERE value = 'rt-agent'"
    };
    elsewhere.execute(sql, &[]).await.unwrap();
}

/// The round trip saved by deciding on the caller's last policy facts is never a stale
/// decision: another node changes the caller's profile between two calls, and the next
/// call is decided on the new one, a denial as much as a grant.
#[tokio::test]
async fn decisions_on_the_last_calls_facts_follow_a_change_made_elsewhere() {
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let options = PgOptions {
        pool_size: 1,
        timeout: Duration::from_secs(10),
    };
    let store = PgStore::connect(&db.url, options).await.expect("connect");
    let coord = Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default());
    let who = Principal::local(Caller::new("rt-agent", "claude_code"));
    let elsewhere = pg_support::connect(&db.url).await;
    let call = |op: &'static str, path: &'static str| {
        let (coord, who) = (&coord, &who);
        async move {
            let entry = op_named(op).unwrap();
            coord.invoke(entry, who, Ok(json!({"file_path": path}))).await
        }
    };
    call("acquire_lock", "src/x.rs").await.expect("granted");
    call("release_lock", "src/x.rs").await.expect("released");
    least_privilege(&elsewhere, true).await;
    let refused = call("acquire_lock", "src/y.rs").await;
    assert!(refused.is_err(), "decided on the new profile: {refused:?}");
    let held = coord
        .invoke(op_named("check_locks").unwrap(), &who, Ok(json!({})))
        .await
        .unwrap();
    assert_eq!(held["locks"], json!([]), "nothing committed on the old facts");
    least_privilege(&elsewhere, false).await;
    call("acquire_lock", "src/y.rs")
        .await
        .expect("granted again on the facts of the moment");
}

/// The operations answered in one round trip on a prediction (`coord-postgres`'s
/// `predicted.rs`) commit nothing when a premise no longer holds in the database: a
/// change made through another node between two calls — the caller's profile, its
/// session, another agent's lock, the guardrails' rows — is seen, and the call is decided
/// on it.
#[tokio::test]
async fn predicted_operations_see_a_change_made_elsewhere() {
    see_changes_made_elsewhere(None).await;
}

/// The same where the session's commits are asynchronous anyway: the store then commits
/// under the chain's lock (`coord-postgres`'s `durability.rs`), whose statement checks
/// the caller's facts in another form.
#[tokio::test]
async fn predicted_operations_see_a_change_made_elsewhere_under_the_chains_lock() {
    see_changes_made_elsewhere(Some("synchronous_commit=off")).await;
}

/// The predicted operations against changes made through another node, `setting` given
/// to this node's connections.
async fn see_changes_made_elsewhere(setting: Option<&str>) {
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let this_node = match setting {
        None => db.url.clone(),
        Some(s) => {
            let joint = if db.url.contains('?') { '&' } else { '?' };
            format!("{}{joint}options=-c%20{}", db.url, s.replace('=', "%3D"))
        }
    };
    let node = |url: String| async move {
        let options = PgOptions {
            pool_size: 1,
            timeout: Duration::from_secs(10),
        };
        let store = PgStore::connect(&url, options).await.expect("connect");
        Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default())
    };
    let (coord, other_node) = (node(this_node).await, node(db.url.clone()).await);
    let who = Principal::local(Caller::new("rt-agent", "claude_code"));
    let other = Principal::local(Caller::new("rt-other", "claude_code"));
    // A person at a terminal: the `cli` type defaults to the local-operator profile.
    let admin = Principal::local(Caller::new("rt-admin", "cli"));
    let elsewhere = pg_support::connect(&db.url).await;
    let call = |coord: &Coordinator, who: &Principal, op: &'static str, request: Value| {
        let (coord, who) = (coord.clone(), who.clone());
        async move { coord.invoke(op_named(op).unwrap(), &who, Ok(request)).await }
    };
    let path = |p: &str| json!({"file_path": p});
    let locks_on = |p: &'static str| {
        let elsewhere = &elsewhere;
        async move {
            let n: i64 = elsewhere
                .query_one("SELECT count(*) FROM file_locks WHERE file_path = $1", &[&p])
                .await
                .unwrap()
                .get(0);
            n
        }
    };

    // A release on facts that no longer grant it: refused, and the lock is still held.
    call(&coord, &who, "register_session", json!({})).await.unwrap();
    for _ in 0..2 {
        call(&coord, &who, "acquire_lock", path("src/warm.rs")).await.unwrap();
        call(&coord, &who, "release_lock", path("src/warm.rs")).await.unwrap();
    }
    call(&coord, &who, "acquire_lock", path("src/x.rs")).await.unwrap();
    least_privilege(&elsewhere, true).await;
    let refused = call(&coord, &who, "release_lock", path("src/x.rs")).await;
    assert!(refused.is_err(), "decided on the new profile: {refused:?}");
    assert_eq!(locks_on("src/x.rs").await, 1, "nothing committed on the old facts");
    least_privilege(&elsewhere, false).await;
    call(&coord, &who, "release_lock", path("src/x.rs"))
        .await
        .expect("released");
    assert_eq!(locks_on("src/x.rs").await, 0);

    // A completion on facts that no longer grant it: refused, and the task stays claimed.
    call(
        &coord,
        &who,
        "submit_work",
        json!({"task_type": "rt", "task_description": "t"}),
    )
    .await
    .unwrap();
    let claimed = call(&coord, &who, "get_work", json!({"task_types": ["rt"]}))
        .await
        .unwrap();
    let task = claimed["task_id"].as_str().expect("a claim").to_string();
    least_privilege(&elsewhere, true).await;
    let done = json!({"task_id": task, "success": true});
    let refused = call(&coord, &who, "complete_work", done.clone()).await;
    assert!(refused.is_err(), "decided on the new profile: {refused:?}");
    let status: String = elsewhere
        .query_one("SELECT status FROM work_queue WHERE task_id = $1::text::uuid", &[&task])
        .await
        .unwrap()
        .get(0);
    assert_eq!(status, "claimed");
    least_privilege(&elsewhere, false).await;
    call(&coord, &who, "complete_work", done).await.expect("completed");

    // A heartbeat answers the session as it stands, not the one of the last call.
    let beat = call(&coord, &who, "heartbeat", json!({})).await.unwrap();
    let renewed: String = elsewhere
        .query_one(
            "UPDATE agent_sessions SET session_id = gen_random_uuid() WHERE agent_id = 'rt-agent'
             RETURNING session_id::text",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_ne!(beat["session_id"], json!(renewed));
    let beat = call(&coord, &who, "heartbeat", json!({})).await.unwrap();
    assert_eq!(beat["session_id"], json!(renewed));

    // An edit check after another agent locked the file through another node: refused.
    let edit = json!({"paths": ["src/b.rs"]});
    for _ in 0..2 {
        call(&coord, &who, "check_edit", edit.clone())
            .await
            .expect("nobody holds it");
    }
    call(&other_node, &other, "acquire_lock", path("src/b.rs"))
        .await
        .unwrap();
    let refused = call(&coord, &who, "check_edit", edit).await.unwrap_err();
    assert_eq!(refused.code.as_str(), "file_locked", "{refused:?}");

    // A command check after a rule that blocks it was added through another node.
    let command = json!({"command": "cargo test", "tool": "Bash"});
    for _ in 0..3 {
        call(&coord, &who, "check_guardrails", command.clone())
            .await
            .expect("allowed");
    }
    let rule = json!({"name": "no-tests-here", "pattern": {"program": "cargo", "words": ["test"],
        "operation": "deploy", "category": "production_deployment", "action": "block",
        "reason": "cargo test deploys here"}});
    call(&other_node, &admin, "set_guardrail", rule)
        .await
        .expect("an operator sets rules");
    let refused = call(&coord, &who, "check_guardrails", command.clone())
        .await
        .unwrap_err();
    assert_eq!(refused.code.as_str(), "destructive_operation_blocked", "{refused:?}");
    call(&other_node, &admin, "reset_guardrail", json!({"name": "no-tests-here"}))
        .await
        .expect("reset");
    call(&coord, &who, "check_guardrails", command)
        .await
        .expect("allowed again");

    // Each call left one audit row (none for an attempt that did not commit), and the
    // chain holds.
    let releases: Vec<bool> = elsewhere
        .query(
            "SELECT success FROM audit_log WHERE agent_id = 'rt-agent' AND operation = 'release_lock' ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(releases, [true, true, false, true]);
    let verified = call(&coord, &admin, "verify_audit", json!({})).await.unwrap();
    assert_eq!(verified["intact"], json!(true), "{verified}");
}
