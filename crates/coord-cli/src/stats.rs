//! `coord stats`: the fleet's figures (`get_stats`) as a table, each row naming the
//! Prometheus metric of `GET /metrics` that carries it.

use crate::output::table;
use coord_domain::stats::StatsResult;

fn seconds(s: f64) -> String {
    match s {
        s if s < 120.0 => format!("{s:.0}s"),
        s if s < 7200.0 => format!("{:.0}m", s / 60.0),
        s => format!("{:.1}h", s / 3600.0),
    }
}

pub fn render(s: &StatsResult) -> String {
    let mut t = table(&["FIGURE", "VALUE", "METRIC"]);
    let mut row = |figure: &str, value: String, metric: &str| {
        t.add_row(vec![figure.to_string(), value, metric.to_string()]);
    };
    let a = &s.agents;
    row(
        "agents",
        format!("{} active, {} idle, {} disconnected", a.active, a.idle, a.disconnected),
        "coord_agents{status}",
    );
    row("locks held", s.locks_held.to_string(), "coord_locks_held");
    let q = &s.tasks;
    row(
        "tasks",
        format!(
            "{} ready, {} waiting, {} claimed, {} completed, {} failed, {} cancelled",
            q.pending - q.waiting,
            q.waiting,
            q.claimed,
            q.completed,
            q.failed,
            q.cancelled
        ),
        "coord_tasks{state}",
    );
    row(
        "approvals pending",
        s.approvals_pending.to_string(),
        "coord_approvals_pending",
    );
    row(
        "spawned agents running",
        s.spawned_running.to_string(),
        "coord_spawned_agents_running",
    );
    let h = &s.claim_to_complete;
    let held = match h.mean_seconds() {
        None => "no completed task yet".to_string(),
        Some(mean) => {
            let bound = |q| {
                h.quantile_bound(q)
                    .map_or_else(|| "more".to_string(), |b| format!("≤ {}", seconds(b)))
            };
            format!(
                "{} tasks, mean {}, p50 {}, p95 {}",
                h.count,
                seconds(mean),
                bound(0.5),
                bound(0.95)
            )
        }
    };
    row("claim to complete", held, "coord_task_claim_to_complete_seconds");
    let total: i64 = s.guardrail_blocks.iter().map(|c| c.count).sum();
    let by: Vec<String> = s
        .guardrail_blocks
        .iter()
        .map(|c| format!("{} {}", c.category, c.count))
        .collect();
    row(
        "guardrail blocks",
        if by.is_empty() {
            "0".to_string()
        } else {
            format!("{total}: {}", by.join(", "))
        },
        "coord_guardrail_blocks_total{category}",
    );
    let f = &s.memory_feedback;
    row(
        "memory feedback",
        match f.useful_share() {
            None => "no votes yet".to_string(),
            Some(share) => format!(
                "{} useful, {} not ({:.0}% useful)",
                f.useful,
                f.not_useful,
                share * 100.0
            ),
        },
        "coord_memory_feedback_votes{useful}",
    );
    format!(
        "Agent Coordinator figures — {} at {}\n{t}",
        s.backend,
        s.at.format("%Y-%m-%d %H:%M:%SZ")
    )
}
