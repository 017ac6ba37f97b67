//! What the dashboard shows, read through the operations any door calls (each read is
//! audited under the signed-in operator), then cut to what a screen should hold: no
//! task inputs or results, no audit parameters or results, no approval parameters
//! beyond the command or paths being approved.

use coord_domain::CoordError;
use coord_domain::access::Principal;
use coord_domain::secrets::mask_secrets;
use coord_service::{Coordination, op_named};
use serde_json::{Map, Value, json};

/// The audit filters the page passes on (`coord audit`'s).
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct AuditFilters {
    pub agent: Option<String>,
    pub operation: Option<String>,
    /// `allowed`, `refused` or `error`.
    pub result: Option<String>,
    /// Rows on this file (repository-relative).
    pub path: Option<String>,
    /// How far back: `15m`, `1h`, `24h` or `7d`.
    pub since: Option<String>,
    /// `on`: only operations let through as elevated.
    pub elevated: Option<String>,
}

/// The windows the page offers for `since`.
pub fn window(since: &str) -> Option<chrono::Duration> {
    match since {
        "15m" => Some(chrono::Duration::minutes(15)),
        "1h" => Some(chrono::Duration::hours(1)),
        "24h" => Some(chrono::Duration::hours(24)),
        "7d" => Some(chrono::Duration::days(7)),
        _ => None,
    }
}

fn text(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

async fn read(coord: &dyn Coordination, who: &Principal, op: &str, request: Value) -> Value {
    let Ok(entry) = op_named(op) else {
        return json!({"error": "unknown_operation", "message": op});
    };
    match coord.invoke(entry, who, Ok(request)).await {
        Ok(v) => v,
        Err(e) => json!({"error": e.code, "message": e.message}),
    }
}

/// Keeps only `keep` of each object in `list`.
fn only(list: Option<&Value>, keep: &[&str]) -> Value {
    let items = list.and_then(Value::as_array).cloned().unwrap_or_default();
    Value::Array(
        items
            .into_iter()
            .map(|item| {
                let mut m = Map::new();
                for k in keep {
                    if let Some(v) = item.get(*k) {
                        m.insert((*k).to_string(), v.clone());
                    }
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// A panel: the kept fields of `key`'s list, or the error the read answered.
fn panel(answer: &Value, key: &str, keep: &[&str]) -> Value {
    match answer.get("error") {
        Some(e) if answer.get(key).is_none() => json!({"error": e, "message": answer["message"]}),
        _ => json!({"items": only(answer.get(key), keep)}),
    }
}

/// An approval as the operator deciding it needs it: what was asked (a command, paths,
/// a tool — never other parameters) and why it was refused.
fn approvals(answer: &Value) -> Value {
    let mut p = panel(
        answer,
        "approvals",
        &[
            "approval_id",
            "agent_id",
            "agent_type",
            "operation",
            "error",
            "reason",
            "status",
            "requested_at",
            "expires_at",
        ],
    );
    if let (Some(items), Some(all)) = (
        p.get_mut("items").and_then(Value::as_array_mut),
        answer.get("approvals").and_then(Value::as_array),
    ) {
        for (item, full) in items.iter_mut().zip(all) {
            item["asked"] = asked(&full["parameters"]).into();
            // The refusal's reason quotes the command.
            for k in ["reason", "error"] {
                if let Some(text) = item[k].as_str() {
                    item[k] = mask_secrets(text).into();
                }
            }
        }
    }
    p
}

/// What a request asked, for a person deciding on it: its command, paths or tool —
/// never other parameters — with credentials masked.
fn asked(params: &Value) -> String {
    let parts: Vec<String> = ["command", "file_path", "path", "files", "paths", "tool"]
        .iter()
        .filter_map(|k| match &params[*k] {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
            _ => None,
        })
        .filter(|s| !s.is_empty())
        .collect();
    mask_secrets(&parts.join(" "))
}

/// The latest guardrail blocks among refused rows, with what was asked (masked).
fn blocks(answer: &Value) -> Value {
    if answer.get("entries").is_none() {
        return panel(answer, "entries", &[]);
    }
    let items: Vec<Value> = answer["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            matches!(
                e["error_code"].as_str(),
                Some("destructive_operation_blocked" | "credential_file_protected")
            )
        })
        .take(10)
        .map(|e| {
            json!({
                "id": e["id"], "timestamp": e["timestamp"], "agent_id": e["agent_id"],
                "operation": e["operation"], "category": e["result"]["category"],
                "asked": asked(&e["parameters"]),
            })
        })
        .collect();
    json!({"items": items})
}

/// Each agent's effective profile and trust, resolved as the pipeline resolves them
/// (nothing when the listing could not be read).
fn with_profiles(agents: &mut Value, listing: &Value) {
    let Ok(list) = serde_json::from_value::<coord_domain::profiles::ListProfilesResult>(listing.clone()) else {
        return;
    };
    for a in agents
        .get_mut("items")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let (id, ty) = (
            a["agent_id"].as_str().unwrap_or(""),
            a["agent_type"].as_str().unwrap_or(""),
        );
        let (profile, _) = coord_domain::profiles::effective(&list, id, ty);
        a["profile"] = profile.name.into();
        a["trust"] = profile.trust_level.into();
    }
}

/// Lock holders that never registered a session, listed as agents too (status
/// `unregistered`): whoever holds a file is someone the operator looks for.
fn with_unregistered_holders(agents: &mut Value, locks: &Value) {
    let Some(items) = agents.get_mut("items").and_then(Value::as_array_mut) else {
        return;
    };
    for lock in locks.get("locks").and_then(Value::as_array).into_iter().flatten() {
        let (Some(id), ty) = (lock["locked_by"].as_str(), lock["agent_type"].as_str().unwrap_or("")) else {
            continue;
        };
        if !items.iter().any(|a| a["agent_id"] == id) {
            items.push(json!({"agent_id": id, "agent_type": ty, "status": "unregistered"}));
        }
    }
}

/// Audit rows the panel shows.
const AUDIT_ROWS: usize = 50;

/// The trail without the dashboards' own reads: every other agent's rows, merged with
/// the dashboards' decisions (their only writes), newest first, at most [`AUDIT_ROWS`].
fn merged_trail(others: Value, decisions: &Value) -> Value {
    let (Some(rows), Some(decided)) = (
        others.get("entries").and_then(Value::as_array),
        decisions.get("entries").and_then(Value::as_array),
    ) else {
        return others;
    };
    let mut all: Vec<Value> = rows.iter().chain(decided.iter()).cloned().collect();
    all.sort_by_key(|e| std::cmp::Reverse(e["id"].as_i64().unwrap_or(0)));
    all.dedup_by_key(|e| e["id"].as_i64());
    all.truncate(AUDIT_ROWS);
    json!({"entries": all})
}

/// Everything the page draws, in one answer.
pub async fn snapshot(coord: &dyn Coordination, who: &Principal, filters: AuditFilters) -> Value {
    let (audit, decisions, unfiltered) = audit_requests(filters);
    let (stats, agents, locks, approval_list, workflows, audit, decisions, refused, profiles) = tokio::join!(
        read(coord, who, "get_stats", json!({})),
        read(coord, who, "discover_agents", json!({})),
        read(coord, who, "check_locks", json!({})),
        read(coord, who, "list_approvals", json!({"status": "pending"})),
        read(coord, who, "list_workflows", json!({"limit": 10})),
        read(coord, who, "query_audit", audit),
        async {
            if unfiltered {
                read(coord, who, "query_audit", decisions).await
            } else {
                json!({"entries": []})
            }
        },
        read(coord, who, "query_audit", json!({"result": "refused", "limit": 200})),
        read(coord, who, "list_profiles", json!({})),
    );
    let audit = merged_trail(audit, &decisions);
    let (inbox, handoffs, recalled, spawned) = tokio::join!(
        read(coord, who, "inbox", json!({"limit": 20})),
        read(coord, who, "read_handoff", json!({"agent_name": "*", "limit": 10})),
        read(
            coord,
            who,
            "recall",
            json!({"task_description": "", "limit": 10, "explain": true})
        ),
        read(coord, who, "list_spawned_agents", json!({"limit": 20})),
    );
    let tasks = task_board(coord, who).await;
    let running = running_workflows(coord, who, &workflows).await;
    let mut agents = panel(
        &agents,
        "agents",
        &[
            "agent_id",
            "agent_type",
            "status",
            "current_task",
            "last_heartbeat",
            "started_at",
            "guardrail_violations",
            "worktree",
            "branch",
            "session_id",
        ],
    );
    with_unregistered_holders(&mut agents, &locks);
    with_profiles(&mut agents, &profiles);
    json!({
        "stats": stats,
        "agents": agents,
        "locks": panel(&locks, "locks", &["file_path", "locked_by", "agent_type", "locked_at", "expires_at", "fencing_token"]),
        "tasks": panel(&tasks, "tasks", &["task_id", "task_type", "task_description", "priority", "status", "depends_on", "pending_dependencies", "claimed_by", "claimed_at", "completed_at", "attempts"]),
        "approvals": approvals(&approval_list),
        "workflows": panel(&workflows, "workflows", &["workflow_id", "kind", "name", "status", "created_by", "created_at", "nodes"]),
        "workflow_nodes": running,
        "audit": panel(&audit, "entries", &["id", "timestamp", "agent_id", "agent_type", "operation", "success", "error_code", "duration_ms"]),
        "violations": blocks(&refused),
        "inbox": inbox_panel(&inbox),
        "handoffs": panel(&handoffs, "handoffs", &["agent_name", "agent_type", "summary", "in_progress", "next_steps", "created_at"]),
        "memories": memories(&recalled),
        "spawned": panel(&spawned, "agents", &["agent_id", "agent", "parent_agent_id", "runtime", "status", "task_id", "task_status", "created_at", "ended_at", "exit_code", "error"]),
    })
}

/// The signed-in person's own inbox (agents write to a person by their name): messages
/// are private to their sender and recipients, so the page shows no one else's.
fn inbox_panel(answer: &Value) -> Value {
    let mut p = panel(
        answer,
        "messages",
        &[
            "message_id",
            "thread_id",
            "from",
            "subject",
            "body",
            "importance",
            "created_at",
            "read_at",
        ],
    );
    if let Some(unread) = answer.get("unread") {
        p["unread"] = unread.clone();
    }
    p
}

/// Recent memories with their usefulness: the share of `memory_feedback` votes that
/// found them useful (none before any vote), from `recall`'s explanation.
fn memories(answer: &Value) -> Value {
    let mut p = panel(
        answer,
        "memories",
        &[
            "memory_id",
            "memory_type",
            "content",
            "agent_id",
            "occurrences",
            "last_seen_at",
        ],
    );
    let all = answer.get("memories").and_then(Value::as_array);
    if let (Some(items), Some(all)) = (p.get_mut("items").and_then(Value::as_array_mut), all) {
        for (item, m) in items.iter_mut().zip(all) {
            let votes = |k: &str| m.pointer(&format!("/explain/{k}")).and_then(Value::as_i64).unwrap_or(0);
            let (yes, no) = (votes("useful_votes"), votes("not_useful_votes"));
            item["votes"] = (yes + no).into();
            item["usefulness"] = if yes + no > 0 {
                (yes as f64 / (yes + no) as f64).into()
            } else {
                Value::Null
            };
        }
    }
    p
}

/// The `query_audit` requests of the page's filters: the trail's, the dashboards'
/// decisions' (asked for only when unfiltered), and whether the trail is unfiltered.
fn audit_requests(filters: AuditFilters) -> (Value, Value, bool) {
    // Unfiltered, the trail would be mostly dashboards reading it: their successful reads
    // are left out (asked for by agent or operation, everything shows).
    let (agent, operation) = (text(filters.agent), text(filters.operation));
    let unfiltered = agent.is_none() && operation.is_none();
    let mut audit = json!({"limit": AUDIT_ROWS});
    if let Some(a) = agent {
        audit["agent_id"] = a.into();
    }
    if let Some(o) = operation {
        audit["operation"] = o.into();
    }
    if let Some(r) = text(filters.result) {
        audit["result"] = r.into();
    }
    if let Some(p) = text(filters.path) {
        audit["path"] = p.into();
    }
    if let Some(since) = text(filters.since) {
        // Anything but the offered windows reaches query_audit as given, which refuses
        // it naming the field.
        audit["since"] = match window(&since) {
            Some(d) => (chrono::Utc::now() - d).to_rfc3339().into(),
            None => since.into(),
        };
    }
    if text(filters.elevated).is_some() {
        audit["elevated"] = true.into();
    }
    // Unfiltered, the trail would be mostly dashboards reading it: their rows are left out
    // but for their decisions (asked for by agent or operation, everything shows).
    let mut decisions = audit.clone();
    if unfiltered {
        audit["exclude_agent_type"] = super::AGENT_TYPE.into();
        decisions["operation"] = "decide_approval".into();
    }
    (audit, decisions, unfiltered)
}

/// The board: every pending and claimed task (up to a bound), a sample of the ended; a
/// read's error instead when one fails.
async fn task_board(coord: &dyn Coordination, who: &Principal) -> Value {
    let mut tasks = json!({"tasks": []});
    for (status, limit) in [
        ("pending", 300),
        ("claimed", 300),
        ("failed", 30),
        ("cancelled", 30),
        ("completed", 30),
    ] {
        let answer = read(coord, who, "list_tasks", json!({"status": status, "limit": limit})).await;
        match answer.get("tasks").and_then(Value::as_array) {
            Some(list) => {
                if let Some(all) = tasks["tasks"].as_array_mut() {
                    all.extend(list.iter().cloned());
                }
            }
            None => {
                tasks = answer;
                break;
            }
        }
    }
    tasks
}

/// Node states of the workflows still running (a handful: each is one more read).
async fn running_workflows(coord: &dyn Coordination, who: &Principal, workflows: &Value) -> Vec<Value> {
    let mut running = Vec::new();
    if let Some(list) = workflows.get("workflows").and_then(Value::as_array) {
        for w in list.iter().filter(|w| w["status"] == "running").take(5) {
            let view = read(
                coord,
                who,
                "get_workflow_status",
                json!({"workflow_id": w["workflow_id"]}),
            )
            .await;
            running.push(json!({
                "workflow_id": w["workflow_id"],
                "nodes": only(view.get("nodes"), &["id", "status", "task_type", "agent"]),
            }));
        }
    }
    running
}

/// An error as the page's JSON.
pub fn error_json(e: &CoordError) -> Value {
    json!({"error": e.code, "message": e.message})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_keep_only_what_a_screen_should_show() {
        let answer =
            json!({"tasks": [{"task_id": "t", "input_data": {"secret": 1}, "result": "x", "status": "pending"}]});
        assert_eq!(
            panel(&answer, "tasks", &["task_id", "status"]),
            json!({"items": [{"task_id": "t", "status": "pending"}]})
        );
        let refused = json!({"error": "insufficient_trust_level", "message": "no"});
        assert_eq!(
            panel(&refused, "tasks", &["task_id"]),
            json!({"error": "insufficient_trust_level", "message": "no"})
        );
        let a = approvals(&json!({"approvals": [{
            "approval_id": "apr_1", "parameters": {"command": "git push --force", "token": "s3cret", "files": ["a.rs", "b.rs"]}
        }]}));
        assert_eq!(a["items"][0]["asked"], "git push --force a.rs b.rs");
        let a = approvals(&json!({"approvals": [{
            "approval_id": "apr_2", "reason": "force_push (git push https://u:tok@h/r --force): no",
            "parameters": {"command": "GITHUB_TOKEN=tok git push https://u:tok@h/r --force"}
        }]}));
        assert_eq!(
            a["items"][0]["asked"],
            "GITHUB_TOKEN=*** git push https://***@h/r --force"
        );
        assert!(!a.to_string().contains("tok@"), "{a}");
        assert!(!a.to_string().contains("s3cret"));
        // Code in a secret-named assignment is shown as it will run (issue 57, finding 4).
        let hidden = "git push --force origin feature && API_TOKEN=$(rm${IFS}-rf${IFS}$HOME) true";
        let a = approvals(&json!({"approvals": [{"approval_id": "apr_3", "parameters": {"command": hidden}}]}));
        assert_eq!(a["items"][0]["asked"], hidden);
    }

    #[test]
    fn memories_carry_their_usefulness_and_the_inbox_its_unread_count() {
        let recalled = json!({"memories": [
            {"memory_id": "m1", "content": "c", "agent_id": "a", "explain": {"usefulness": 0.6, "useful_votes": 3, "not_useful_votes": 1}},
            {"memory_id": "m2", "content": "d", "agent_id": "b", "explain": {"usefulness": 0.75, "useful_votes": 0, "not_useful_votes": 0}},
        ]});
        let p = memories(&recalled);
        assert_eq!(p["items"][0]["usefulness"], 0.75, "3 of 4 votes");
        assert_eq!(
            (p["items"][1]["usefulness"].clone(), p["items"][1]["votes"].clone()),
            (Value::Null, json!(0)),
            "no vote: no share"
        );
        assert!(p["items"][0].get("explain").is_none(), "{p}");
        let refused = json!({"error": "insufficient_trust_level", "message": "no"});
        assert_eq!(memories(&refused)["error"], "insufficient_trust_level");
        let inbox = inbox_panel(&json!({"unread": 2, "messages": [{"message_id": "x", "to": "me", "subject": "s"}]}));
        assert_eq!(
            inbox,
            json!({"items": [{"message_id": "x", "subject": "s"}], "unread": 2})
        );
    }

    #[test]
    fn lock_holders_without_a_session_are_listed_once() {
        let mut agents = json!({"items": [{"agent_id": "alice", "agent_type": "cli", "status": "active"}]});
        let locks = json!({"locks": [
            {"file_path": "a", "locked_by": "alice", "agent_type": "cli"},
            {"file_path": "b", "locked_by": "ghost", "agent_type": "codex"},
            {"file_path": "c", "locked_by": "ghost", "agent_type": "codex"},
        ]});
        with_unregistered_holders(&mut agents, &locks);
        assert_eq!(
            agents["items"],
            json!([
                {"agent_id": "alice", "agent_type": "cli", "status": "active"},
                {"agent_id": "ghost", "agent_type": "codex", "status": "unregistered"},
            ])
        );
        // An unreadable panel stays the error it is.
        let mut failed = json!({"error": "unavailable"});
        with_unregistered_holders(&mut failed, &locks);
        assert_eq!(failed, json!({"error": "unavailable"}));
    }

    #[test]
    fn since_windows() {
        let cases = [
            ("15m", Some(15)),
            ("1h", Some(60)),
            ("24h", Some(1440)),
            ("7d", Some(10080)),
            ("2h", None),
            ("", None),
        ];
        for (since, minutes) in cases {
            assert_eq!(window(since).map(|d| d.num_minutes()), minutes, "{since}");
        }
    }

    #[test]
    fn the_trail_merges_other_agents_rows_with_the_dashboards_decisions() {
        let others = json!({"entries": [{"id": 9}, {"id": 5}, {"id": 2}]});
        let decisions = json!({"entries": [{"id": 7}, {"id": 5}]});
        let ids: Vec<i64> = merged_trail(others, &decisions)["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [9, 7, 5, 2]);
        let refused = json!({"error": "unauthorized", "message": "no"});
        assert_eq!(merged_trail(refused.clone(), &decisions), refused);
    }

    #[test]
    fn blocks_show_what_was_asked_masked() {
        let refused = json!({"entries": [
            {"id": 3, "error_code": "file_locked", "parameters": {"file_path": "a.rs"}},
            {"id": 2, "error_code": "destructive_operation_blocked", "agent_id": "bob",
             "operation": "check_guardrails", "result": {"category": "git_force"},
             "parameters": {"command": "git push https://bob:s3cret@github.com/o/r --force", "files": null}},
        ]});
        let b = blocks(&refused);
        let items = b["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["category"], "git_force");
        assert_eq!(items[0]["asked"], "git push https://***@github.com/o/r --force");
        assert!(!b.to_string().contains("s3cret"));
    }
}
