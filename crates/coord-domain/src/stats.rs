//! The fleet's figures behind `get_stats`, `coord stats` and the store half of
//! `GET /metrics`: what the database holds now, counted in one read. The pipeline's own
//! per-process counters (operations, their latency) are the service's, not these.

use crate::status::{AgentCounts, TaskCounts};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Upper bounds (seconds) of the claim-to-complete histogram's buckets: a quick fix to a
/// day-long task. Stores count every completed task against each bound in one query.
pub const CLAIM_TO_COMPLETE_BOUNDS: [f64; 10] =
    [10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 86400.0];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatsResult {
    pub success: bool,
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// When the figures were read (the coordinator's clock).
    pub at: Timestamp,
    /// Agents by session status.
    pub agents: AgentCounts,
    /// File locks not yet expired.
    pub locks_held: i64,
    /// Work-queue tasks by status.
    pub tasks: TaskCounts,
    /// Approval requests waiting for a decision (not expired).
    pub approvals_pending: i64,
    /// Spawned agents still starting or running.
    pub spawned_running: i64,
    /// How long completed tasks were held: from their (last) claim to completion.
    pub claim_to_complete: Histogram,
    /// Destructive operations the guardrails refused, by category, since the trail began
    /// (rows of `guardrail_violations` with `blocked`).
    pub guardrail_blocks: Vec<CategoryCount>,
    /// Votes of `memory_feedback` as stored (one per agent and memory).
    pub memory_feedback: FeedbackCounts,
    /// Verification runs that ended, by outcome, and how long they took.
    #[serde(default)]
    pub verification: VerificationCounts,
}

/// The spec's "verification pass rate" and "mean time to verify", from
/// `verification_results`: runs that ended (skipped and cancelled ones aside), and the
/// time from the changeset's submission to each run's end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerificationCounts {
    pub passed: i64,
    pub failed: i64,
    pub timed_out: i64,
    /// The executor could not judge (a missing variable, an unreachable service).
    pub error: i64,
    /// Submission to the run's end, over runs that ended.
    pub time_to_verify: Histogram,
}

impl VerificationCounts {
    /// Passed among the runs that judged the change (passed, failed, timed out); `None`
    /// before any.
    pub fn pass_rate(&self) -> Option<f64> {
        let judged = self.passed + self.failed + self.timed_out;
        (judged > 0).then(|| self.passed as f64 / judged as f64)
    }
}

/// A histogram as Prometheus has it: cumulative counts per upper bound, plus the count and
/// the sum of every observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Histogram {
    pub count: i64,
    pub sum_seconds: f64,
    /// Observations at most `le` seconds, for each bound of [`CLAIM_TO_COMPLETE_BOUNDS`].
    pub buckets: Vec<Bucket>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bucket {
    pub le: f64,
    pub count: i64,
}

impl Histogram {
    /// The histogram of `count` observations summing to `sum_seconds`, `at_most[i]` of
    /// them within `bounds[i]` (as a store counts them: each bound on its own). Counts
    /// are made cumulative and never above `count`, whatever rounding the store did.
    pub fn of(bounds: &[f64], count: i64, sum_seconds: f64, at_most: &[i64]) -> Histogram {
        let count = count.max(0);
        let mut running = 0;
        let buckets = bounds
            .iter()
            .zip(at_most.iter().chain(std::iter::repeat(&0)))
            .map(|(&le, &n)| {
                running = n.clamp(running, count);
                Bucket { le, count: running }
            })
            .collect();
        Histogram {
            count,
            sum_seconds: if sum_seconds.is_finite() {
                sum_seconds.max(0.0)
            } else {
                0.0
            },
            buckets,
        }
    }

    /// The mean observation, when there is one.
    pub fn mean_seconds(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_seconds / self.count as f64)
    }

    /// The smallest bound holding at least `q` of the observations (an upper estimate
    /// of the quantile; `None` when empty or beyond the last bound).
    pub fn quantile_bound(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let need = (q.clamp(0.0, 1.0) * self.count as f64).ceil() as i64;
        self.buckets.iter().find(|b| b.count >= need.max(1)).map(|b| b.le)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryCount {
    pub category: String,
    pub count: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FeedbackCounts {
    pub useful: i64,
    pub not_useful: i64,
}

impl FeedbackCounts {
    /// The share of votes saying a recalled memory helped (the spec's "more than 70%
    /// useful"); `None` before any vote.
    pub fn useful_share(&self) -> Option<f64> {
        let total = self.useful + self.not_useful;
        (total > 0).then(|| self.useful as f64 / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_bounded() {
        let bounds = [1.0, 10.0, 100.0];
        let cases: &[(i64, &[i64], &[i64])] = &[
            (0, &[0, 0, 0], &[0, 0, 0]),
            (3, &[1, 2, 3], &[1, 2, 3]),
            // A store's counts that dip (they cannot, but rounding) stay cumulative.
            (3, &[2, 1, 3], &[2, 2, 3]),
            // Never above the total.
            (2, &[5, 5, 5], &[2, 2, 2]),
            // Missing counts are zero, then cumulative.
            (4, &[1], &[1, 1, 1]),
        ];
        for (count, at_most, want) in cases {
            let h = Histogram::of(&bounds, *count, 1.5, at_most);
            let got: Vec<i64> = h.buckets.iter().map(|b| b.count).collect();
            assert_eq!(&got, want, "{count} {at_most:?}");
            assert_eq!(h.buckets.iter().map(|b| b.le).collect::<Vec<_>>(), bounds);
        }
        assert_eq!(Histogram::of(&bounds, -1, f64::NAN, &[]).count, 0);
        assert_eq!(Histogram::of(&bounds, 1, f64::NAN, &[1]).sum_seconds, 0.0);
    }

    #[test]
    fn means_and_quantile_bounds() {
        let h = Histogram::of(&[1.0, 10.0, 100.0], 4, 40.0, &[1, 3, 4]);
        assert_eq!(h.mean_seconds(), Some(10.0));
        let cases = [
            (0.0, Some(1.0)),
            (0.25, Some(1.0)),
            (0.5, Some(10.0)),
            (0.75, Some(10.0)),
            (1.0, Some(100.0)),
        ];
        for (q, want) in cases {
            assert_eq!(h.quantile_bound(q), want, "q {q}");
        }
        let beyond = Histogram::of(&[1.0], 2, 10.0, &[1]);
        assert_eq!(beyond.quantile_bound(0.9), None, "beyond the last bound");
        assert_eq!(Histogram::default().mean_seconds(), None);
        assert_eq!(Histogram::default().quantile_bound(0.5), None);
    }

    #[test]
    fn useful_share() {
        let cases = [
            ((0, 0), None),
            ((7, 3), Some(0.7)),
            ((0, 2), Some(0.0)),
            ((5, 0), Some(1.0)),
        ];
        for ((useful, not_useful), want) in cases {
            assert_eq!(FeedbackCounts { useful, not_useful }.useful_share(), want);
        }
    }

    #[test]
    fn bounds_increase() {
        assert!(CLAIM_TO_COMPLETE_BOUNDS.windows(2).all(|w| w[0] < w[1]));
    }
}
