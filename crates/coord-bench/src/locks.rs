//! `locks`: acquire+release pairs on random paths, through the service (audit included)
//! or as the store's raw statements.

use crate::driver::{Rng, Shared, Tally, bench_path, report, run_clients, run_threads};
use crate::link::RoundTrips;
use crate::target::{Handle, Scratch};
use crate::{BenchError, BenchOptions, BenchResult, Report};
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, LockAction, ReleaseLockRequest};
use coord_domain::{Caller, Identity};
use coord_service::Coordination;
use coord_service::CoordinationExt as _;
use std::sync::Arc;
use std::time::Instant;

fn who(client: usize) -> Identity {
    Identity {
        agent_id: format!("bench-{client}"),
        agent_type: crate::AGENT_TYPE.into(),
    }
}

pub async fn service(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    let coord: Arc<dyn Coordination> = Arc::new(scratch.coordinator());
    Ok(through(opts, coord, scratch.backend, "service", scratch.round_trips()).await)
}

/// The lock workload through any `Coordination` (in process, or a remote client).
pub async fn through(
    opts: &BenchOptions,
    coord: Arc<dyn Coordination>,
    backend: &'static str,
    mode: &'static str,
    round_trips: RoundTrips,
) -> Report {
    let shared = Shared::new(opts.seconds);
    shared.count_round_trips(round_trips, opts.clients == 1);
    let paths = opts.paths;
    let label = format!("{} {backend} {mode}", opts.workload.name());
    let (tally, elapsed) = run_clients(opts, label, &shared, opts.clients, |i, shared| {
        let coord = coord.clone();
        async move {
            let me = who(i);
            let caller = Caller::new(me.agent_id, me.agent_type);
            let mut rng = Rng::new(i as u64 + 1);
            let mut tally = Tally::default();
            while shared.running() {
                let path = bench_path(&mut rng, paths);
                let t0 = Instant::now();
                let timer = shared.timer();
                let req = AcquireLockRequest {
                    file_path: path.clone(),
                    reason: None,
                    ttl_minutes: None,
                };
                let answer = coord.acquire_lock(&caller, req).await;
                tally.timed("acquire_lock", &timer, &shared);
                let acquired = match answer {
                    Ok(r) if r.success => r,
                    Ok(_) => {
                        tally.count("blocked");
                        continue;
                    }
                    Err(e) => {
                        shared.error("acquire_lock", e);
                        continue;
                    }
                };
                let fresh = acquired.action == LockAction::Acquired;
                shared.invariants.acquired(i, &path, acquired.fencing_token, fresh);
                shared.invariants.releasing(&path);
                let req = ReleaseLockRequest {
                    file_path: path.clone(),
                };
                let timer = shared.timer();
                let answer = coord.release_lock(&caller, req).await;
                tally.timed("release_lock", &timer, &shared);
                match answer {
                    Ok(_) => {
                        tally.main.record(t0.elapsed());
                        shared.op_done();
                    }
                    Err(e) => shared
                        .invariants
                        .release_failed(|e| shared.error("release_lock", e), i, &path, &e),
                }
            }
            tally
        }
    })
    .await;
    leftover_locks(&shared, coord.as_ref()).await;
    report(opts, backend, mode, opts.clients, &shared, tally, elapsed)
}

const HOLDER: &str = "bench-holder";

/// The `n`-th lock the holder keeps: mostly files, with directories and globs at the
/// measured paths' scopes (`src/bench` and above) so every acquisition has pattern rows to
/// check, and one glob over the whole repository; none can cover `src/bench/file-*.rs`.
pub fn held_target(n: usize) -> String {
    match n % 20 {
        0 if n == 0 => "**/*.lock".to_string(),
        0 => format!("src/held/dir-{n:05}/"),
        1 => format!("src/bench/*.fixture-{n:05}"),
        2 => format!("src/held/**/gen-{n:05}/*.rs"),
        3 => format!("src/bench/data-{n:05}/"),
        _ => format!("src/held/file-{n:05}.rs"),
    }
}

/// Takes `n` live locks as another agent before a run (see [`held_target`]).
pub async fn hold(n: usize, coord: &dyn Coordination) -> BenchResult<()> {
    let holder = Caller::new(HOLDER, crate::AGENT_TYPE);
    for i in 0..n {
        let req = AcquireLockRequest {
            file_path: held_target(i),
            reason: Some("held for the whole run".into()),
            ttl_minutes: Some(480),
        };
        let got = coord.acquire_lock(&holder, req).await?;
        if !got.success {
            return Err(BenchError::Setup(format!("could not hold {}: {got:?}", held_target(i))));
        }
    }
    Ok(())
}

/// Every pair released what it acquired: with no errors, no lock may be left but the
/// holder's.
async fn leftover_locks(shared: &Shared, coord: &dyn Coordination) {
    let checker = Caller::new("bench-checker", crate::AGENT_TYPE);
    match coord.check_locks(&checker, CheckLocksRequest::default()).await {
        Ok(r) => {
            let left = r.locks.iter().filter(|l| l.locked_by != HOLDER).count();
            if left > 0 && shared.errors() == 0 {
                shared
                    .invariants
                    .violation(&format!("{left} locks left held after every client released"));
            }
        }
        Err(e) => shared.error("check_locks after the run", e),
    }
}

/// One raw pair's bookkeeping, shared by the blocking and the async baseline.
fn raw_pair(
    shared: &Shared,
    tally: &mut Tally,
    client: usize,
    path: &str,
    t0: Instant,
    outcome: coord_domain::CoordResult<bool>,
) {
    match outcome {
        Ok(true) => {
            tally.main.record(t0.elapsed());
            shared.op_done();
        }
        Ok(false) => tally.count("blocked"),
        // Only the release answers `not_lock_owner`.
        Err(e) => shared
            .invariants
            .release_failed(|e| shared.error("raw lock pair", e), client, path, &e),
    }
}

pub async fn raw(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    let shared = Shared::new(opts.seconds);
    shared.count_round_trips(scratch.round_trips(), opts.clients == 1);
    let paths = opts.paths;
    let label = format!("locks {} raw", scratch.backend);
    let (tally, elapsed) = match &scratch.handle {
        Handle::Sqlite(store) => {
            let raw = store.raw_baseline();
            run_threads(opts, label, &shared, opts.clients, move |i, shared| {
                let me = who(i);
                let mut rng = Rng::new(i as u64 + 1);
                let mut tally = Tally::default();
                while shared.running() {
                    let path = bench_path(&mut rng, paths);
                    let t0 = Instant::now();
                    let outcome = raw.lock_pair(&me, &path, |token| {
                        shared.invariants.acquired(i, &path, token, true);
                        shared.invariants.releasing(&path);
                    });
                    raw_pair(shared, &mut tally, i, &path, t0, outcome);
                }
                tally
            })
            .await
        }
        Handle::Postgres(store) => {
            let raw = store.raw_baseline();
            run_clients(opts, label, &shared, opts.clients, |i, shared| {
                let raw = raw.clone();
                async move {
                    let me = who(i);
                    let mut rng = Rng::new(i as u64 + 1);
                    let mut tally = Tally::default();
                    while shared.running() {
                        let path = bench_path(&mut rng, paths);
                        let t0 = Instant::now();
                        let outcome = raw
                            .lock_pair(&me, &path, |token| {
                                shared.invariants.acquired(i, &path, token, true);
                                shared.invariants.releasing(&path);
                            })
                            .await;
                        raw_pair(&shared, &mut tally, i, &path, t0, outcome);
                    }
                    tally
                }
            })
            .await
        }
    };
    Ok(report(
        opts,
        scratch.backend,
        "raw",
        opts.clients,
        &shared,
        tally,
        elapsed,
    ))
}
