//! `queue`: claim+complete pairs by N concurrent workers over a prefilled queue,
//! through the service or as the store's raw statements. After the run, every task the
//! workers claimed must be completed exactly once and none may be left claimed.

use crate::driver::{Shared, Tally, report, run_clients, run_threads};
use crate::target::{Handle, Scratch};
use crate::{BenchOptions, BenchResult, Report};
use coord_domain::queue::{CompleteWorkRequest, GetWorkRequest};
use coord_domain::{Caller, CoordResult, Identity};
use coord_service::Coordination;
use coord_service::CoordinationExt as _;
use std::sync::Arc;
use std::time::Instant;

fn who(client: usize) -> Identity {
    Identity {
        agent_id: format!("worker-{client}"),
        agent_type: crate::AGENT_TYPE.into(),
    }
}

/// Enough tasks that the run ends by time, not by an empty queue, at rates well above
/// what this machine kind reaches.
fn prefill_count(opts: &BenchOptions, backend: &str) -> i64 {
    let per_second = if backend == "sqlite" { 40_000.0 } else { 12_000.0 };
    ((opts.seconds * per_second) as i64).clamp(1_000, 5_000_000)
}

async fn prefill(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<i64> {
    let n = prefill_count(opts, scratch.backend);
    match &scratch.handle {
        Handle::Sqlite(s) => {
            let s = s.clone();
            tokio::task::spawn_blocking(move || s.prefill_tasks(n))
                .await
                .map_err(|e| crate::BenchError::Setup(e.to_string()))??
        }
        Handle::Postgres(s) => s.prefill_tasks(n).await?,
    }
    Ok(n)
}

/// The after-run checks: what the database holds must match what the workers did. Every
/// prefilled task is still there (none lost), none failed or was cancelled, and — unless
/// errors explain it — every claim was completed exactly once and none is left claimed.
async fn check(scratch: &Scratch, shared: &Shared, prefilled: i64, completed: u64) -> BenchResult<()> {
    let counts = scratch.task_counts().await?;
    let total = counts.pending + counts.claimed + counts.completed + counts.ended_otherwise;
    if total != prefilled {
        shared
            .invariants
            .violation(&format!("{prefilled} tasks prefilled, {total} in the queue afterwards"));
    }
    if counts.ended_otherwise != 0 {
        shared
            .invariants
            .violation(&format!("{} tasks failed or were cancelled", counts.ended_otherwise));
    }
    if shared.errors() > 0 {
        return Ok(());
    }
    if counts.claimed != 0 {
        shared.invariants.violation(&format!(
            "{} tasks left claimed after every worker finished",
            counts.claimed
        ));
    }
    if counts.completed as u64 != completed {
        shared.invariants.violation(&format!(
            "{} tasks completed in the database, {completed} by the workers",
            counts.completed
        ));
    }
    if shared.invariants.claimed_count() != completed {
        shared.invariants.violation(&format!(
            "{} tasks claimed, {completed} completed",
            shared.invariants.claimed_count()
        ));
    }
    Ok(())
}

fn after_pair(shared: &Shared, tally: &mut Tally, t0: Instant, outcome: CoordResult<Option<String>>) -> bool {
    match outcome {
        Ok(Some(_)) => {
            tally.main.record(t0.elapsed());
            shared.op_done();
            true
        }
        Ok(None) => {
            tally.count("queue_empty");
            false
        }
        Err(e) => {
            shared.error("claim+complete", e);
            true
        }
    }
}

pub async fn service(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    let prefilled = prefill(opts, scratch).await?;
    let coord: Arc<dyn Coordination> = Arc::new(scratch.coordinator());
    let shared = Shared::new(opts.seconds);
    shared.count_round_trips(scratch.round_trips(), opts.clients == 1);
    let label = format!("queue {} service", scratch.backend);
    let (tally, elapsed) = run_clients(opts, label, &shared, opts.clients, |i, shared| {
        let coord = coord.clone();
        async move {
            let me = who(i);
            let caller = Caller::new(me.agent_id, me.agent_type);
            let mut tally = Tally::default();
            while shared.running() {
                let t0 = Instant::now();
                let outcome = async {
                    let timer = shared.timer();
                    let claimed = coord.get_work(&caller, GetWorkRequest::default()).await;
                    tally.timed("get_work", &timer, &shared);
                    let claimed = claimed?;
                    let Some(task_id) = claimed.task_id else {
                        return Ok(None);
                    };
                    shared.invariants.claimed(&task_id);
                    let done = CompleteWorkRequest {
                        task_id: task_id.clone(),
                        success: true,
                        result: None,
                        error_message: None,
                        skill: None,
                        changes: None,
                    };
                    let timer = shared.timer();
                    let completed = coord.complete_work(&caller, done).await;
                    tally.timed("complete_work", &timer, &shared);
                    completed?;
                    Ok(Some(task_id))
                }
                .await;
                if !after_pair(&shared, &mut tally, t0, outcome) {
                    break;
                }
            }
            tally
        }
    })
    .await;
    check(scratch, &shared, prefilled, tally.main.len() as u64).await?;
    Ok(report(
        opts,
        scratch.backend,
        "service",
        opts.clients,
        &shared,
        tally,
        elapsed,
    ))
}

pub async fn raw(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    let prefilled = prefill(opts, scratch).await?;
    let shared = Shared::new(opts.seconds);
    shared.count_round_trips(scratch.round_trips(), opts.clients == 1);
    let label = format!("queue {} raw", scratch.backend);
    let (tally, elapsed) = match &scratch.handle {
        Handle::Sqlite(store) => {
            let raw = store.raw_baseline();
            run_threads(opts, label, &shared, opts.clients, move |i, shared| {
                let me = who(i);
                let mut tally = Tally::default();
                while shared.running() {
                    let t0 = Instant::now();
                    let outcome = raw.claim_complete(&me, |id| shared.invariants.claimed(id));
                    if !after_pair(shared, &mut tally, t0, outcome) {
                        break;
                    }
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
                    let mut tally = Tally::default();
                    while shared.running() {
                        let t0 = Instant::now();
                        let outcome = raw.claim_complete(&me, |id| shared.invariants.claimed(id)).await;
                        if !after_pair(&shared, &mut tally, t0, outcome) {
                            break;
                        }
                    }
                    tally
                }
            })
            .await
        }
    };
    check(scratch, &shared, prefilled, tally.main.len() as u64).await?;
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
