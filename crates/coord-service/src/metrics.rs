//! Prometheus metrics (`GET /metrics`). Two halves: what this process saw — every
//! operation the pipeline ran, its outcome and its latency, counted as it happens — and
//! the fleet's figures read from the store at scrape time (`get_stats`: agents, locks,
//! queue, approvals, claim-to-complete, guardrail blocks, memory feedback), so several
//! `coord serve` nodes on one database report the same fleet. Encoded by
//! `prometheus-client` in the OpenMetrics text format.

use coord_domain::stats::StatsResult;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The content type of [`Metrics::render`]'s answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    operation: &'static str,
    /// `ok` or the error code (a closed set: the cardinality stays bounded).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Op {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DoorRefusal {
    /// Why (a closed set the doors name: `anonymous_rate`, `failed_keys`, `no_key`, `host`).
    reason: &'static str,
}

fn latency_histogram() -> Histogram {
    // 0.25 ms to about 4 s: a lock round trip to a slow PostgreSQL statement.
    Histogram::new(exponential_buckets(0.00025, 2.0, 15))
}

/// A change some operation made (or tried to make), as the live dashboard hears of it:
/// every operation that may write, and every refusal (it left rows behind). Reads that
/// succeed are not changes, so the dashboard's own reads never wake it again.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub operation: &'static str,
    pub agent_id: String,
    pub agent_type: String,
    /// `ok` or the error code.
    pub outcome: &'static str,
}

/// This process's operation counters and its feed of changes; cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Metrics {
    operations: Family<Outcome, Counter>,
    durations: Family<Op, Histogram, fn() -> Histogram>,
    door_refusals: Family<DoorRefusal, Counter>,
    changes: tokio::sync::broadcast::Sender<Change>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            operations: Family::default(),
            durations: Family::new_with_constructor(latency_histogram),
            door_refusals: Family::default(),
            // A slow listener misses changes (it is told it lagged) rather than holding
            // memory or slowing operations down.
            changes: tokio::sync::broadcast::channel(256).0,
        }
    }
}

impl Metrics {
    /// Counts one run of `operation` (by the pipeline, once per call, refusals included).
    pub fn observe(&self, operation: &'static str, outcome: &'static str, took: Duration) {
        self.operations.get_or_create(&Outcome { operation, outcome }).inc();
        self.durations
            .get_or_create(&Op { operation })
            .observe(took.as_secs_f64());
    }

    /// Counts a request a door refused before any operation ran (not audited: an
    /// anonymous client must not be able to grow the audit trail at will).
    pub fn door_refused(&self, reason: &'static str) {
        self.door_refusals.get_or_create(&DoorRefusal { reason }).inc();
    }

    /// Tells the listeners (the live dashboards) of an operation that may have changed
    /// something; nobody listening costs nothing.
    pub fn changed(&self, change: impl FnOnce() -> Change) {
        if self.changes.receiver_count() > 0 {
            let _ = self.changes.send(change());
        }
    }

    /// The changes from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Every metric in the OpenMetrics text format: this process's counters, then the
    /// fleet's figures when `stats` could be read (`coord_store_up` says whether).
    pub fn render(&self, stats: Option<StatsResult>) -> String {
        let mut registry = Registry::default();
        registry.register(
            "coord_operations",
            "Operations this process ran, by operation and outcome (ok or the error code)",
            self.operations.clone(),
        );
        registry.register(
            "coord_operation_duration_seconds",
            "Time this process took to run an operation, refusals included",
            self.durations.clone(),
        );
        registry.register(
            "coord_http_refused",
            "Requests the HTTP door refused before any operation ran, not audited (too many without a key, \
             after failed keys, without a key where one is needed, a foreign Host or Origin), by reason",
            self.door_refusals.clone(),
        );
        registry.register_collector(Box::new(Fleet(stats)));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// The store's figures, encoded as they were read (none: the store did not answer).
#[derive(Debug)]
struct Fleet(Option<StatsResult>);

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> std::fmt::Result {
    e.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&v)
}

fn labelled(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    label: &'static str,
    values: &[(&str, i64)],
) -> std::fmt::Result {
    let mut m = e.encode_descriptor(name, help, None, kind)?;
    for (value, n) in values {
        let labels = [(label, *value)];
        let mut f = m.encode_family(&labels)?;
        match kind {
            MetricType::Counter => f.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                &(u64::try_from(*n).unwrap_or(0)),
                None,
            )?,
            _ => f.encode_gauge(n)?,
        }
    }
    Ok(())
}

impl Collector for Fleet {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        gauge(
            &mut e,
            "coord_store_up",
            "Whether the database answered this scrape (1) or not (0: the fleet's figures are missing)",
            i64::from(self.0.is_some()),
        )?;
        let Some(s) = &self.0 else {
            return Ok(());
        };
        labelled(
            &mut e,
            "coord_agents",
            "Agents by session status",
            MetricType::Gauge,
            "status",
            &[
                ("active", s.agents.active),
                ("idle", s.agents.idle),
                ("disconnected", s.agents.disconnected),
            ],
        )?;
        gauge(&mut e, "coord_locks_held", "File locks not yet expired", s.locks_held)?;
        let t = &s.tasks;
        labelled(
            &mut e,
            "coord_tasks",
            "Work-queue tasks by state (ready and waiting are the pending ones with and without unmet dependencies)",
            MetricType::Gauge,
            "state",
            &[
                ("ready", t.pending - t.waiting),
                ("waiting", t.waiting),
                ("claimed", t.claimed),
                ("completed", t.completed),
                ("failed", t.failed),
                ("cancelled", t.cancelled),
            ],
        )?;
        gauge(
            &mut e,
            "coord_approvals_pending",
            "Approval requests waiting for a decision",
            s.approvals_pending,
        )?;
        gauge(
            &mut e,
            "coord_spawned_agents_running",
            "Spawned agents starting or running",
            s.spawned_running,
        )?;
        histogram(
            &mut e,
            "coord_task_claim_to_complete_seconds",
            "Time completed tasks were held, from their claim to their completion",
            &s.claim_to_complete,
        )?;
        let blocks: Vec<(&str, i64)> = s
            .guardrail_blocks
            .iter()
            .map(|c| (c.category.as_str(), c.count))
            .collect();
        labelled(
            &mut e,
            "coord_guardrail_blocks",
            "Destructive operations the guardrails refused, by category",
            MetricType::Counter,
            "category",
            &blocks,
        )?;
        let f = &s.memory_feedback;
        labelled(
            &mut e,
            "coord_memory_feedback_votes",
            "memory_feedback votes on recalled memories, by whether the memory helped",
            MetricType::Gauge,
            "useful",
            &[("true", f.useful), ("false", f.not_useful)],
        )?;
        let v = &s.verification;
        labelled(
            &mut e,
            "coord_verification_runs",
            "Verification runs that ended, by outcome (the pass rate is passed over passed, failed and timed_out)",
            MetricType::Gauge,
            "status",
            &[
                ("passed", v.passed),
                ("failed", v.failed),
                ("timed_out", v.timed_out),
                ("error", v.error),
            ],
        )?;
        histogram(
            &mut e,
            "coord_verification_time_to_verify_seconds",
            "Time from a changeset's submission to the end of each of its verification runs",
            &v.time_to_verify,
        )
    }
}

/// A stored histogram in OpenMetrics' shape.
fn histogram(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    h: &coord_domain::stats::Histogram,
) -> std::fmt::Result {
    let buckets: Vec<(f64, u64)> = h
        .buckets
        .iter()
        .scan(0u64, |below, b| {
            // OpenMetrics buckets are cumulative as stored; prometheus-client takes
            // per-bucket counts and accumulates them itself.
            let cumulative = u64::try_from(b.count).unwrap_or(0);
            let own = cumulative.saturating_sub(*below);
            *below = cumulative;
            Some((b.le, own))
        })
        // prometheus-client writes `+Inf` for f64::MAX.
        .chain(std::iter::once((
            f64::MAX,
            u64::try_from(h.count - h.buckets.last().map_or(0, |b| b.count)).unwrap_or(0),
        )))
        .collect();
    e.encode_descriptor(name, help, None, MetricType::Histogram)?
        .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            h.sum_seconds,
            u64::try_from(h.count).unwrap_or(0),
            &buckets,
            None,
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use coord_domain::stats::{CLAIM_TO_COMPLETE_BOUNDS, CategoryCount, FeedbackCounts, Histogram as Held};

    fn stats() -> StatsResult {
        StatsResult {
            success: true,
            backend: "sqlite".into(),
            at: chrono::Utc::now(),
            agents: Default::default(),
            locks_held: 4,
            tasks: coord_domain::status::TaskCounts {
                pending: 5,
                waiting: 2,
                ..Default::default()
            },
            approvals_pending: 1,
            spawned_running: 0,
            // 60 s, 1200 s and one beyond the last bound.
            claim_to_complete: Held::of(
                &CLAIM_TO_COMPLETE_BOUNDS,
                3,
                100_000.0 + 1260.0,
                &[0, 0, 1, 1, 1, 2, 2, 2, 2, 2],
            ),
            guardrail_blocks: vec![CategoryCount {
                category: "git_force".into(),
                count: 3,
            }],
            memory_feedback: FeedbackCounts {
                useful: 7,
                not_useful: 3,
            },
            verification: Default::default(),
        }
    }

    #[test]
    fn renders_both_halves() {
        let m = Metrics::default();
        m.observe("acquire_lock", "ok", Duration::from_millis(3));
        m.observe("acquire_lock", "file_locked", Duration::from_millis(1));
        m.observe("acquire_lock", "ok", Duration::from_millis(2));
        let text = m.render(Some(stats()));
        let lines = [
            "coord_operations_total{operation=\"acquire_lock\",outcome=\"ok\"} 2",
            "coord_operations_total{operation=\"acquire_lock\",outcome=\"file_locked\"} 1",
            "coord_operation_duration_seconds_count{operation=\"acquire_lock\"} 3",
            "coord_store_up 1",
            "coord_locks_held 4",
            "coord_tasks{state=\"ready\"} 3",
            "coord_tasks{state=\"waiting\"} 2",
            "coord_approvals_pending 1",
            "coord_task_claim_to_complete_seconds_count 3",
            "coord_task_claim_to_complete_seconds_sum 101260.0",
            "coord_task_claim_to_complete_seconds_bucket{le=\"30.0\"} 0",
            "coord_task_claim_to_complete_seconds_bucket{le=\"60.0\"} 1",
            "coord_task_claim_to_complete_seconds_bucket{le=\"1800.0\"} 2",
            "coord_task_claim_to_complete_seconds_bucket{le=\"86400.0\"} 2",
            "coord_task_claim_to_complete_seconds_bucket{le=\"+Inf\"} 3",
            "coord_guardrail_blocks_total{category=\"git_force\"} 3",
            "coord_memory_feedback_votes{useful=\"true\"} 7",
            "coord_memory_feedback_votes{useful=\"false\"} 3",
        ];
        for line in lines {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn a_store_that_did_not_answer_leaves_only_the_process_half() {
        let text = Metrics::default().render(None);
        assert!(text.lines().any(|l| l == "coord_store_up 0"), "{text}");
        assert!(!text.contains("coord_locks_held"));
    }
}
