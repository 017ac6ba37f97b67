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

/// A histogram in a line: how many, the mean, upper bounds of p50 and p95.
fn spread(h: &coord_domain::stats::Histogram, what: &str, none: &str) -> String {
    match h.mean_seconds() {
        None => none.to_string(),
        Some(mean) => {
            let bound = |q| {
                h.quantile_bound(q)
                    .map_or_else(|| "more".to_string(), |b| format!("≤ {}", seconds(b)))
            };
            format!(
                "{} {what}, mean {}, p50 {}, p95 {}",
                h.count,
                seconds(mean),
                bound(0.5),
                bound(0.95)
            )
        }
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
    row(
        "claim to complete",
        spread(&s.claim_to_complete, "tasks", "no completed task yet"),
        "coord_task_claim_to_complete_seconds",
    );
    let v = &s.verification;
    row(
        "verification runs",
        match v.pass_rate() {
            None => format!("none judged yet ({} could not judge)", v.error),
            Some(rate) => format!(
                "{:.0}% passed: {} passed, {} failed, {} timed out, {} could not judge",
                rate * 100.0,
                v.passed,
                v.failed,
                v.timed_out,
                v.error
            ),
        },
        "coord_verification_runs{status}",
    );
    row(
        "time to verify",
        spread(&v.time_to_verify, "runs", "no run ended yet"),
        "coord_verification_time_to_verify_seconds",
    );
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
