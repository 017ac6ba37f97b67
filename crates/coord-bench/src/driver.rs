//! Running N clients until the deadline, and turning what they measured into a report.

use crate::invariants::Invariants;
use crate::link::RoundTrips;
use crate::progress::Progress;
use crate::stats::Samples;
use crate::{BenchOptions, Report};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// State every client of a run shares.
pub struct Shared {
    started: Instant,
    stop_at: Instant,
    ops: AtomicU64,
    errors: AtomicU64,
    pub invariants: Invariants,
    /// The run's link to the database, when it has one (`--rtt`): its round trips.
    round_trips: std::sync::OnceLock<(RoundTrips, u64, bool)>,
}

/// When an operation started, for [`Tally::timed`].
pub struct Timer {
    start: Instant,
    round_trips: Option<u64>,
}

impl crate::progress::Counts for Shared {
    fn elapsed(&self) -> Duration {
        Shared::elapsed(self)
    }
    fn ops(&self) -> u64 {
        Shared::ops(self)
    }
    fn errors(&self) -> u64 {
        Shared::errors(self)
    }
    fn violations(&self) -> u64 {
        self.invariants.violations()
    }
}

impl Shared {
    pub fn new(seconds: f64) -> Arc<Shared> {
        let started = Instant::now();
        Arc::new(Shared {
            started,
            stop_at: started + Duration::from_secs_f64(seconds),
            ops: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            invariants: Invariants::default(),
            round_trips: std::sync::OnceLock::new(),
        })
    }

    /// Counts the round trips of `link` from now on; per operation only when `exact`
    /// (one client: nothing else runs between an operation's start and its end).
    pub fn count_round_trips(&self, link: RoundTrips, exact: bool) {
        if let Some(now) = link.now() {
            let _ = self.round_trips.set((link, now, exact));
        }
    }

    /// Round trips since counting started, when counted.
    pub fn round_trips(&self) -> Option<u64> {
        let (link, start, _) = self.round_trips.get()?;
        Some(link.now()? - start)
    }

    /// Starts timing an operation.
    pub fn timer(&self) -> Timer {
        Timer {
            start: Instant::now(),
            round_trips: self
                .round_trips
                .get()
                .filter(|(_, _, exact)| *exact)
                .and_then(|(link, _, _)| link.now()),
        }
    }

    pub fn running(&self) -> bool {
        Instant::now() < self.stop_at
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn stop_at(&self) -> Instant {
        self.stop_at
    }

    pub fn op_done(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Counts an error; the first few are shown, so a failing run says why.
    pub fn error(&self, what: &str, e: impl std::fmt::Display) {
        if self.errors.fetch_add(1, Ordering::Relaxed) < 5 {
            eprintln!("coord bench: {what}: {e}");
        }
    }
}

/// What one client measured.
#[derive(Default)]
pub struct Tally {
    /// The unit the report's p50/p99 describe.
    pub main: Samples,
    pub per_op: BTreeMap<&'static str, Samples>,
    pub counts: BTreeMap<&'static str, u64>,
}

impl Tally {
    pub fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    pub fn op(&mut self, what: &'static str, elapsed: Duration) {
        self.per_op.entry(what).or_default().record(elapsed);
    }

    /// Records the operation `timer` timed: its latency, and its round trips when the run
    /// counts them per operation.
    pub fn timed(&mut self, what: &'static str, timer: &Timer, shared: &Shared) {
        let samples = self.per_op.entry(what).or_default();
        samples.record(timer.start.elapsed());
        let now = shared.round_trips.get().and_then(|(link, _, _)| link.now());
        if let (Some(start), Some(now)) = (timer.round_trips, now) {
            samples.round_trips(now - start);
        }
    }

    fn merge(&mut self, other: Tally) {
        self.main.merge(other.main);
        for (k, v) in other.per_op {
            self.per_op.entry(k).or_default().merge(v);
        }
        for (k, v) in other.counts {
            *self.counts.entry(k).or_default() += v;
        }
    }
}

/// Runs `clients` async clients until the deadline.
pub async fn run_clients<F, Fut>(
    opts: &BenchOptions,
    label: String,
    shared: &Arc<Shared>,
    clients: usize,
    client: F,
) -> (Tally, Duration)
where
    F: Fn(usize, Arc<Shared>) -> Fut,
    Fut: Future<Output = Tally> + Send + 'static,
{
    let progress = Progress::start(opts.progress, label, shared.clone(), opts.seconds);
    let handles: Vec<_> = (0..clients).map(|i| tokio::spawn(client(i, shared.clone()))).collect();
    let mut total = Tally::default();
    for h in handles {
        match h.await {
            Ok(t) => total.merge(t),
            Err(e) => shared.error("a client task failed", e),
        }
    }
    let elapsed = shared.elapsed();
    progress.finish();
    (total, elapsed)
}

/// Runs `clients` blocking clients on OS threads until the deadline.
pub async fn run_threads<F>(
    opts: &BenchOptions,
    label: String,
    shared: &Arc<Shared>,
    clients: usize,
    client: F,
) -> (Tally, Duration)
where
    F: Fn(usize, &Shared) -> Tally + Send + Sync + 'static,
{
    let progress = Progress::start(opts.progress, label, shared.clone(), opts.seconds);
    let s = shared.clone();
    let joined = tokio::task::spawn_blocking(move || {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..clients)
                .map(|i| {
                    let (s, client) = (&s, &client);
                    scope.spawn(move || client(i, s))
                })
                .collect();
            let mut total = Tally::default();
            for h in handles {
                match h.join() {
                    Ok(t) => total.merge(t),
                    Err(_) => s.error("a client thread", "panicked"),
                }
            }
            total
        })
    })
    .await;
    let total = joined.unwrap_or_default();
    let elapsed = shared.elapsed();
    progress.finish();
    (total, elapsed)
}

/// The report of a finished run.
pub fn report(
    opts: &BenchOptions,
    backend: &'static str,
    mode: &'static str,
    clients: usize,
    shared: &Shared,
    mut tally: Tally,
    elapsed: Duration,
) -> Report {
    let seconds = elapsed.as_secs_f64();
    let ops = tally.main.len() as u64;
    let round_trips = shared.round_trips().filter(|_| ops > 0);
    Report {
        workload: opts.workload.name(),
        backend,
        mode,
        clients,
        seconds: (seconds * 100.0).round() / 100.0,
        ops,
        ops_per_sec: if seconds > 0.0 {
            (ops as f64 / seconds).round()
        } else {
            0.0
        },
        p50_us: tally.main.percentile(50.0),
        p99_us: tally.main.percentile(99.0),
        errors: shared.errors(),
        invariant_violations: shared.invariants.violations(),
        baseline: None,
        limit: None,
        limit_unavailable: None,
        per_operation: tally.per_op.iter_mut().map(|(k, v)| (*k, v.summary())).collect(),
        counts: tally.counts,
        rtt_ms: opts.db.rtt().map(|d| d.as_secs_f64() * 1000.0),
        round_trips_per_op: round_trips.map(|n| round2(n as f64 / ops as f64)),
        serve_rtt_ms: opts.serve_rtt.map(|d| d.as_secs_f64() * 1000.0),
    }
}

pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A small fast generator for choosing paths and think times (no need for quality).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n.max(1)
    }
}

/// The file a lock workload's client touches next.
pub fn bench_path(rng: &mut Rng, paths: usize) -> String {
    format!("src/bench/file-{:05}.rs", rng.below(paths))
}
