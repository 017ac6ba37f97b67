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
/// The type of the tasks the agents submit and claim.
const TASK_TYPE: &str = "bench";

/// `--nodes N`: N `coord serve` processes on the one database, agent `i` talking to node
/// `i % N` (the scale-out path on PostgreSQL: the invariants must hold across nodes).
pub async fn run(opts: &BenchOptions) -> BenchResult<Report> {
    let scratch = Scratch::create(&opts.db, "agents", 1).await?;
    let mut servers = Vec::new();
    let outcome = async {
        for _ in 0..opts.nodes.max(1) {
            servers.push(ServeChild::start(opts, &scratch).await?);
        }
        let mut clients: Vec<Arc<dyn Coordination>> = Vec::new();
        for s in &servers {
            clients.push(Arc::new(s.client()?));
        }
        let shared = Shared::new(opts.seconds);
        shared.count_round_trips(scratch.round_trips(), false);
        let mut report = simulate(opts, clients, &scratch, shared).await?;
        report.counts.insert("nodes", servers.len() as u64);
        Ok(report)
    }
    .await;
    for s in servers {
        s.stop().await;
    }
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

/// One simulated agent: who it is, its dice, and how fast its time runs.
struct Agent {
    i: usize,
    me: Caller,
    rng: Rng,
    scale: f64,
    coord: Arc<dyn Coordination>,
}

impl Agent {
    fn think(&mut self) -> Duration {
        Duration::from_millis((THINK_MIN_MS + self.rng.below(THINK_SPREAD_MS)) as u64).div_f64(self.scale)
    }

    async fn pause(d: Duration, shared: &Shared) {
        let until = (Instant::now() + d).min(shared.stop_at());
        tokio::time::sleep_until(until.into()).await;
    }

    /// Registers, then acts until the run stops: 60% edit a file under a lock, 20%
    /// submit a task, 20% claim and complete one; heartbeats on schedule.
    async fn live(mut self, shared: &Shared, heartbeat_every: Duration, paths: usize) -> Tally {
        let mut tally = Tally::default();
        // Agents do not all start in the same millisecond.
        let stagger = self.think().mul_f64(self.rng.below(1000) as f64 / 1000.0);
        Agent::pause(stagger, shared).await;
        let register = RegisterSessionRequest {
            capabilities: Some(vec!["bench".into()]),
            current_task: None,
            team: None,
            ..Default::default()
        };
        let registered = self.coord.register_session(&self.me, register);
        timed(shared, &mut tally, "register_session", registered).await;
        let mut last_heartbeat = Instant::now();
        while shared.running() {
            if last_heartbeat.elapsed() >= heartbeat_every {
                let hb = self.coord.heartbeat(&self.me, HeartbeatRequest::default());
                timed(shared, &mut tally, "heartbeat", hb).await;
                last_heartbeat = Instant::now();
            }
            match self.rng.below(100) {
                0..60 => self.edit_a_file(shared, &mut tally, paths).await,
                60..80 => self.submit(shared, &mut tally).await,
                _ => self.claim_and_complete(shared, &mut tally).await,
            }
            let t = self.think();
            Agent::pause(t, shared).await;
        }
        tally
    }

    async fn edit_a_file(&mut self, shared: &Shared, tally: &mut Tally, paths: usize) {
        let path = bench_path(&mut self.rng, paths);
        let req = AcquireLockRequest {
            file_path: path.clone(),
            reason: Some("editing".into()),
            ttl_minutes: None,
        };
        let got = match timed(shared, tally, "acquire_lock", self.coord.acquire_lock(&self.me, req)).await {
            None => return,
            Some(got) if !got.success => return tally.count("blocked"),
            Some(got) => got,
        };
        let fresh = got.action == LockAction::Acquired;
        shared.invariants.acquired(self.i, &path, got.fencing_token, fresh);
        let edit = self.think().div_f64(2.0);
        Agent::pause(edit, shared).await;
        shared.invariants.releasing(&path);
        let req = ReleaseLockRequest {
            file_path: path.clone(),
        };
        let t0 = Instant::now();
        match self.coord.release_lock(&self.me, req).await {
            Ok(_) => {
                let took = t0.elapsed();
                tally.main.record(took);
                tally.op("release_lock", took);
                shared.op_done();
            }
            Err(e) => shared
                .invariants
                .release_failed(|e| shared.error("release_lock", e), self.i, &path, &e),
        }
    }

    async fn submit(&mut self, shared: &Shared, tally: &mut Tally) {
        let req = SubmitWorkRequest {
            task_type: TASK_TYPE.into(),
            task_description: format!("work from agent {}", self.i),
            input_data: None,
            priority: Some(1 + self.rng.below(10) as i64),
            depends_on: None,
        };
        if let Some(done) = timed(shared, tally, "submit_work", self.coord.submit_work(&self.me, req)).await {
            shared.invariants.submitted(&done.task_id);
        }
    }

    async fn claim_and_complete(&mut self, shared: &Shared, tally: &mut Tally) {
        // The work these agents submit (other work in the queue is someone else's: `chaos`).
        let claim = self.coord.get_work(
            &self.me,
            GetWorkRequest {
                task_types: Some(vec![TASK_TYPE.into()]),
            },
        );
        let Some(task_id) = timed(shared, tally, "get_work", claim).await.and_then(|w| w.task_id) else {
            return tally.count("queue_empty");
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
        let completed = self.coord.complete_work(&self.me, done);
        if timed(shared, tally, "complete_work", completed)
            .await
            .is_some_and(|r| r.success)
        {
            shared.invariants.completed(&task_id);
        }
    }
}

/// The agents at work until `shared`'s deadline, against `nodes`.
pub(crate) async fn simulate(
    opts: &BenchOptions,
    nodes: Vec<Arc<dyn Coordination>>,
    scratch: &Scratch,
    shared: Arc<Shared>,
) -> BenchResult<Report> {
    let scale = opts.time_scale.max(0.001);
    let heartbeat_every = HEARTBEAT_EVERY.div_f64(scale);
    let paths = opts.paths;
    let label = format!("agents {} x{}", scratch.backend, opts.agents);
    let (tally, elapsed) = run_clients(opts, label, &shared, opts.agents, |i, shared| {
        let agent = Agent {
            i,
            me: Caller::new(format!("agent-{i:04}"), crate::AGENT_TYPE),
            rng: Rng::new(i as u64 + 7),
            scale,
            coord: nodes[i % nodes.len()].clone(),
        };
        async move { agent.live(&shared, heartbeat_every, paths).await }
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
