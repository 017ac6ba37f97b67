//! What the dashboard shows, read through the operations any door calls (each read is
//! audited under the signed-in operator), then cut to what a screen should hold: no
//! task inputs or results, no audit parameters or results, no approval parameters
//! beyond the command or paths being approved.

use coord_domain::CoordError;
use coord_domain::access::Principal;
use coord_service::{Coordination, op_named};
use serde_json::{Map, Value, json};

/// The audit filters the page passes on (`coord audit`'s).
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct AuditFilters {
    pub agent: Option<String>,
    pub operation: Option<String>,
    /// `allowed`, `refused` or `error`.
    pub result: Option<String>,
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
            let params = &full["parameters"];
            let asked: Vec<String> = ["command", "file_path", "files", "paths", "tool"]
                .iter()
                .filter_map(|k| match &params[*k] {
                    Value::String(s) => Some(s.clone()),
                    Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
                    _ => None,
                })
                .filter(|s| !s.is_empty())
                .collect();
            item["asked"] = Value::String(asked.join(" "));
        }
    }
    p
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

/// Audit rows the panel shows.
const AUDIT_ROWS: usize = 50;

/// The trail without the dashboards' own successful reads, at most [`AUDIT_ROWS`].
fn without_dashboard_reads(mut answer: Value) -> Value {
    if let Some(entries) = answer.get_mut("entries").and_then(Value::as_array_mut) {
        entries.retain(|e| {
            let read = e["operation"]
                .as_str()
                .and_then(|o| op_named(o).ok())
                .is_some_and(|o| o.effect == coord_domain::access::Effect::Read);
            !(e["agent_type"] == super::AGENT_TYPE && e["success"] == true && read)
        });
        entries.truncate(AUDIT_ROWS);
    }
    answer
}

/// Everything the page draws, in one answer.
pub async fn snapshot(coord: &dyn Coordination, who: &Principal, filters: AuditFilters) -> Value {
    // Unfiltered, the trail would be mostly dashboards reading it: their successful reads
    // are left out (asked for by agent or operation, everything shows).
    let unfiltered = filters.agent.as_deref().is_none_or(|s| s.trim().is_empty())
        && filters.operation.as_deref().is_none_or(|s| s.trim().is_empty());
    let mut audit = json!({"limit": if unfiltered { 300 } else { AUDIT_ROWS }});
    if let Some(a) = filters.agent.filter(|s| !s.trim().is_empty()) {
        audit["agent_id"] = a.trim().into();
    }
    if let Some(o) = filters.operation.filter(|s| !s.trim().is_empty()) {
        audit["operation"] = o.trim().into();
    }
    if let Some(r) = filters.result.filter(|s| !s.trim().is_empty()) {
        audit["result"] = r.trim().into();
    }
    let (stats, agents, locks, tasks, approval_list, workflows, audit, blocks, profiles) = tokio::join!(
        read(coord, who, "get_stats", json!({})),
        read(coord, who, "discover_agents", json!({})),
        read(coord, who, "check_locks", json!({})),
        read(coord, who, "list_tasks", json!({"limit": 200})),
        read(coord, who, "list_approvals", json!({"status": "pending"})),
        read(coord, who, "list_workflows", json!({"limit": 10})),
        read(coord, who, "query_audit", audit),
        read(
            coord,
            who,
            "query_audit",
            json!({"operation": "check_guardrails", "result": "refused", "limit": 10})
        ),
        read(coord, who, "list_profiles", json!({})),
    );
    let audit = if unfiltered {
        without_dashboard_reads(audit)
    } else {
        audit
    };
    // Node states of the workflows still running (a handful: each is one more read).
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
        ],
    );
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
        "violations": panel(&blocks, "entries", &["id", "timestamp", "agent_id", "error_code"]),
    })
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
        assert!(!a.to_string().contains("s3cret"));
    }

    #[test]
    fn the_trail_leaves_out_dashboards_reading_it() {
        let rows = json!({"entries": [
            {"operation": "get_stats", "agent_type": "dashboard", "success": true},
            {"operation": "get_stats", "agent_type": "dashboard", "success": false},
            {"operation": "decide_approval", "agent_type": "dashboard", "success": true},
            {"operation": "check_locks", "agent_type": "claude_code", "success": true},
        ]});
        let kept: Vec<Value> = without_dashboard_reads(rows)["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["operation"].clone())
            .collect();
        assert_eq!(
            kept,
            [json!("get_stats"), json!("decide_approval"), json!("check_locks")]
        );
    }
}
