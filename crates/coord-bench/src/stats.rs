//! Latency samples and the numbers a run reports.

use serde::Serialize;

/// Latencies of one kind of operation, in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<u32>, RoundTripSum);

/// Round trips counted over some of the samples: (sum, samples counted).
#[derive(Debug, Clone, Copy, Default)]
struct RoundTripSum(u64, u64);

impl Samples {
    pub fn record(&mut self, elapsed: std::time::Duration) {
        self.0.push(u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX));
    }

    /// The round trips one recorded sample made.
    pub fn round_trips(&mut self, n: u64) {
        self.1.0 += n;
        self.1.1 += 1;
    }

    pub fn merge(&mut self, other: Samples) {
        self.0.extend(other.0);
        self.1.0 += other.1.0;
        self.1.1 += other.1.1;
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `p`-th percentile (nearest rank), or 0 without samples.
    pub fn percentile(&mut self, p: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        self.0.sort_unstable();
        let rank = ((p / 100.0) * self.0.len() as f64).ceil() as usize;
        u64::from(self.0[rank.clamp(1, self.0.len()) - 1])
    }

    pub fn summary(&mut self) -> OpStats {
        OpStats {
            count: self.0.len() as u64,
            p50_us: self.percentile(50.0),
            p99_us: self.percentile(99.0),
            round_trips: (self.1.1 > 0).then(|| (self.1.0 as f64 / self.1.1 as f64 * 100.0).round() / 100.0),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpStats {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Round trips to the database per operation, on average (`--rtt`, one client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_trips: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn nearest_rank_percentiles() {
        let cases: &[(&[u64], f64, u64)] = &[
            (&[], 50.0, 0),
            (&[7], 50.0, 7),
            (&[7], 99.0, 7),
            (&[1, 2, 3, 4], 50.0, 2),
            (&[4, 3, 2, 1], 99.0, 4),
            (&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90.0, 9),
        ];
        for (values, p, want) in cases {
            let mut s = Samples::default();
            for v in *values {
                s.record(Duration::from_micros(*v));
            }
            assert_eq!(s.percentile(*p), *want, "{values:?} p{p}");
        }
        let mut hundred = Samples::default();
        for v in 1..=100 {
            hundred.record(Duration::from_micros(v));
        }
        assert_eq!(
            hundred.summary(),
            OpStats {
                count: 100,
                p50_us: 50,
                p99_us: 99,
                round_trips: None
            }
        );
    }
}
