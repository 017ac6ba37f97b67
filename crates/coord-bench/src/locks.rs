//! `locks`: acquire+release pairs on random paths, through the service (audit included)
//! or as the store's raw statements.

use crate::driver::{Rng, Shared, Tally, bench_path, report, run_clients, run_threads};
use crate::target::{Handle, Scratch};
use crate::{BenchOptions, BenchResult, Report};
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, LockAction, ReleaseLockRequest};
use coord_domain::{Caller, Identity};
use coord_service::Coordination;
use coord_service::CoordinationExt as _;
use std::sync::Arc;
use std::time::Instant;

fn who(client: usize) -> Identity {
    Identity {
        agent_id: format!("bench-{client}"),
        agent_type: "bench".into(),
    }
}

pub async fn service(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    let coord: Arc<dyn Coordination> = Arc::new(scratch.coordinator());
    Ok(through(opts, coord, scratch.backend, "service").await)
}

/// The lock workload through any `Coordination` (in process, or a remote client).
pub async fn through(
    opts: &BenchOptions,
    coord: Arc<dyn Coordination>,
    backend: &'static str,
    mode: &'static str,
) -> Report {
    let shared = Shared::new(opts.seconds);
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
                let req = AcquireLockRequest {
                    file_path: path.clone(),
                    reason: None,
                    ttl_minutes: None,
                };
                let acquired = match coord.acquire_lock(&caller, req).await {
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
                match coord.release_lock(&caller, req).await {
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

/// Every pair released what it acquired: with no errors, no lock may be left.
async fn leftover_locks(shared: &Shared, coord: &dyn Coordination) {
    let checker = Caller::new("bench-checker", "bench");
    match coord.check_locks(&checker, CheckLocksRequest::default()).await {
        Ok(r) if !r.locks.is_empty() && shared.errors() == 0 => {
            shared.invariants.violation(&format!(
                "{} locks left held after every client released",
                r.locks.len()
            ));
        }
        Ok(_) => {}
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
