//! `agents`: many simulated agents against one `coord serve`. Each registers, heartbeats
//! every 30 s, and in between acts like an agent at work: locks a file from a shared set
//! (overlapping with others), holds it while "editing", releases it; submits tasks;
//! claims and completes tasks. Think times are 1-3 s. `time_scale` compresses all of
//! it (e.g. 10: heartbeats every 3 s, think times 0.1-0.3 s).

use crate::driver::{Rng, Shared, Tally, bench_path, report, run_clients};
use crate::remote::ServeChild;
use crate::target::Scratch;
use crate::{BenchOptions, BenchResult, Report};
use coord_domain::Caller;
use coord_domain::locks::{AcquireLockRequest, LockAction, ReleaseLockRequest};
use coord_domain::queue::{CompleteWorkRequest, GetWorkRequest, SubmitWorkRequest};
use coord_domain::sessions::{HeartbeatRequest, RegisterSessionRequest};
use coord_service::Coordination;
use coord_service::CoordinationExt as _;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

const HEARTBEAT_EVERY: Duration = Duration::from_secs(30);
const THINK_MIN_MS: usize = 1_000;
const THINK_SPREAD_MS: usize = 2_000;

pub async fn run(opts: &BenchOptions) -> BenchResult<Report> {
    let scratch = Scratch::create(&opts.db, "agents", 1).await?;
    let outcome = async {
        let server = ServeChild::start(opts, &scratch).await?;
        let client: Arc<dyn Coordination> = Arc::new(server.client()?);
        let report = simulate(opts, client, &scratch).await;
        server.stop().await;
        report
    }
    .await;
    scratch.dispose().await;
    outcome
}

/// Times one request, counting it under `name`; `None` when it failed.
async fn timed<T, E: std::fmt::Display>(
    shared: &Shared,
    tally: &mut Tally,
    name: &'static str,
    call: impl Future<Output = Result<T, E>>,
) -> Option<T> {
    let t0 = Instant::now();
    let outcome = call.await;
    let took = t0.elapsed();
    match outcome {
        Ok(v) => {
            tally.main.record(took);
            tally.op(name, took);
            shared.op_done();
            Some(v)
        }
        Err(e) => {
            shared.error(name, e);
            None
        }
    }
}

async fn simulate(opts: &BenchOptions, coord: Arc<dyn Coordination>, scratch: &Scratch) -> BenchResult<Report> {
    let shared = Shared::new(opts.seconds);
    let scale = opts.time_scale.max(0.001);
    let heartbeat_every = HEARTBEAT_EVERY.div_f64(scale);
    let paths = opts.paths;
    let label = format!("agents {} x{}", scratch.backend, opts.agents);
    let (tally, elapsed) = run_clients(opts, label, &shared, opts.agents, |i, shared| {
        let coord = coord.clone();
        async move {
            let mut tally = Tally::default();
            let me = Caller::new(format!("agent-{i:04}"), "bench_agent");
            let mut rng = Rng::new(i as u64 + 7);
            let think = |rng: &mut Rng| {
                Duration::from_millis((THINK_MIN_MS + rng.below(THINK_SPREAD_MS)) as u64).div_f64(scale)
            };
            let pause = |d: Duration, shared: &Shared| {
                let until = (Instant::now() + d).min(shared.stop_at());
                tokio::time::sleep_until(until.into())
            };
            // Agents do not all start in the same millisecond.
            let stagger = think(&mut rng).mul_f64(rng.below(1000) as f64 / 1000.0);
            pause(stagger, &shared).await;
            let register = RegisterSessionRequest {
                capabilities: Some(vec!["bench".into()]),
                current_task: None,
            };
            timed(
                &shared,
                &mut tally,
                "register_session",
                coord.register_session(&me, register),
            )
            .await;
            let mut last_heartbeat = Instant::now();
            while shared.running() {
                if last_heartbeat.elapsed() >= heartbeat_every {
                    let hb = coord.heartbeat(&me, HeartbeatRequest::default());
                    timed(&shared, &mut tally, "heartbeat", hb).await;
                    last_heartbeat = Instant::now();
                }
                let roll = rng.below(100);
                if roll < 60 {
                    let path = bench_path(&mut rng, paths);
                    let req = AcquireLockRequest {
                        file_path: path.clone(),
                        reason: Some("editing".into()),
                        ttl_minutes: None,
                    };
                    match timed(&shared, &mut tally, "acquire_lock", coord.acquire_lock(&me, req)).await {
                        None => {}
                        Some(got) if !got.success => tally.count("blocked"),
                        Some(got) => {
                            let fresh = got.action == LockAction::Acquired;
                            shared.invariants.acquired(i, &path, got.fencing_token, fresh);
                            let edit = think(&mut rng).div_f64(2.0);
                            pause(edit, &shared).await;
                            shared.invariants.releasing(&path);
                            let req = ReleaseLockRequest {
                                file_path: path.clone(),
                            };
                            let t0 = Instant::now();
                            match coord.release_lock(&me, req).await {
                                Ok(_) => {
                                    let took = t0.elapsed();
                                    tally.main.record(took);
                                    tally.op("release_lock", took);
                                    shared.op_done();
                                }
                                Err(e) => {
                                    shared
                                        .invariants
                                        .release_failed(|e| shared.error("release_lock", e), i, &path, &e)
                                }
                            }
                        }
                    }
                } else if roll < 80 {
                    let req = SubmitWorkRequest {
                        task_type: "bench".into(),
                        task_description: format!("work from agent {i}"),
                        input_data: None,
                        priority: Some(1 + rng.below(10) as i64),
                        depends_on: None,
                    };
                    timed(&shared, &mut tally, "submit_work", coord.submit_work(&me, req)).await;
                } else {
                    let claim = coord.get_work(&me, GetWorkRequest::default());
                    if let Some(task_id) = timed(&shared, &mut tally, "get_work", claim)
                        .await
                        .and_then(|w| w.task_id)
                    {
                        shared.invariants.claimed(&task_id);
                        let done = CompleteWorkRequest {
                            task_id,
                            success: true,
                            result: None,
                            error_message: None,
                        };
                        timed(&shared, &mut tally, "complete_work", coord.complete_work(&me, done)).await;
                    } else {
                        tally.count("queue_empty");
                    }
                }
                let t = think(&mut rng);
                pause(t, &shared).await;
            }
            tally
        }
    })
    .await;
    let counts = scratch.task_counts().await?;
    if counts.claimed != 0 && shared.errors() == 0 {
        shared.invariants.violation(&format!(
            "{} tasks left claimed after every agent stopped",
            counts.claimed
        ));
    }
    Ok(report(
        opts,
        scratch.backend,
        "agents",
        opts.agents,
        &shared,
        tally,
        elapsed,
    ))
}
