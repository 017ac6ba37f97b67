//! `chaos`: agents at work while faults are injected; then what must never happen,
//! checked from the store and its audit chain.
//!
//! The agents are the `agents` workload's — HTTP clients of `--nodes` real `coord serve`
//! processes (at least two), locking, submitting, claiming, completing, heartbeating —
//! plus real `coord mcp` processes that claim a task and are killed. One fault at a time,
//! in turn, every [`FAULT_EVERY`]:
//! - `kill_node`: a `coord serve` SIGKILLed, started again on its port after [`OUTAGE`];
//! - `stop_node`: a `coord serve` stopped (SIGSTOP) for [`OUTAGE`], then continued;
//! - `kill_agent`: a `coord mcp` that has just claimed a task is SIGKILLed;
//! - `db_outage` (PostgreSQL): every connection to the database cut and new ones refused
//!   for [`OUTAGE`] — what a restart or a partition looks like from coord — by a TCP gate
//!   the nodes reach the database through.
//!
//! Checked: while running, the agents' own records (never two holders of a lock, fencing
//! tokens that grow, no release refused as another's, no task claimed or completed twice);
//! after each fault, the node (or the database) answering again within [`RECOVERY_LIMIT`];
//! every killed agent's claim back in the queue within its grace period and
//! [`REQUEUE_SLACK`]; at the end, every acknowledged submission present and every
//! acknowledged completion completed, no task with two successful completions in the
//! audit trail, and the audit chain intact. Not injected here: a full disk (it needs a
//! file system of its own) and stale fencing tokens on file writes (the file tools'
//! tests cover those).

use crate::agents;
use crate::driver::Shared;
use crate::mcp::McpClient;
use crate::remote::ServeChild;
use crate::target::Scratch;
use crate::{BenchError, BenchOptions, BenchResult, Report};
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::audit_chain::VerifyAuditRequest;
use coord_domain::locks::CheckLocksRequest;
use coord_domain::queue::{GetTaskRequest, SubmitWorkRequest, TaskStatus};
use coord_service::{Coordination, CoordinationExt as _, Coordinator};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Time between the end of one fault and the start of the next.
pub const FAULT_EVERY: Duration = Duration::from_secs(2);
/// How long a node stays dead or stopped, or the database unreachable.
pub const OUTAGE: Duration = Duration::from_secs(1);
/// A node (or the store through it) must answer again this soon after a fault ends.
pub const RECOVERY_LIMIT: Duration = Duration::from_secs(30);
/// A killed agent's claim must be back in the queue this long after its grace period.
pub const REQUEUE_SLACK: Duration = Duration::from_secs(30);
/// The grace period of the killed agents (`COORD_RELEASE_GRACE_SECONDS`).
const AGENT_GRACE_SECONDS: u64 = 1;
/// The checks read the whole audit trail and verify the chain: a person's work (the
/// `cli` type's profile).
const OPERATOR_TYPE: &str = "cli";
/// The type of the tasks killed agents claim, one per agent (`chaos-claim-N`): a task
/// requeued from one killed agent is not claimed by the next, whose death would count
/// another attempt against it (and fail it, once its attempts are used up). The HTTP
/// agents take only their own type.
const CLAIMED_TYPE: &str = "chaos-claim";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    KillNode,
    StopNode,
    KillAgent,
    DbOutage,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::KillNode => "kill_node",
            Fault::StopNode => "stop_node",
            Fault::KillAgent => "kill_agent",
            Fault::DbOutage => "db_outage",
        }
    }
}

/// The faults a backend gets, in the order they are injected.
fn faults(backend: &str) -> &'static [Fault] {
    match backend {
        "postgres" => &[Fault::KillNode, Fault::KillAgent, Fault::DbOutage, Fault::StopNode],
        _ => &[Fault::KillNode, Fault::KillAgent, Fault::StopNode],
    }
}

/// A TCP gate in front of the database: open, it passes connections through; cut, it
/// drops every connection it carries and refuses new ones.
struct Gate {
    /// The database URL through the gate.
    url: String,
    open: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Gate {
    async fn start(db_url: &str) -> BenchResult<Gate> {
        let (listener, upstream, url) = crate::link::in_front_of(db_url, "chaos").await?;
        let (open, watcher) = watch::channel(true);
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if !*watcher.borrow() {
                    continue; // dropped: refused while cut
                }
                tokio::spawn(Gate::carry(inbound, upstream, watcher.clone()));
            }
        });
        Ok(Gate { url, open, task })
    }

    async fn carry(mut inbound: TcpStream, upstream: SocketAddr, mut open: watch::Receiver<bool>) {
        let Ok(mut outbound) = TcpStream::connect(upstream).await else {
            return;
        };
        // Small request and answer packets: without it, delayed ACKs cost ~40 ms a round trip.
        let _ = inbound.set_nodelay(true);
        let _ = outbound.set_nodelay(true);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
            _ = open.wait_for(|open| !*open) => {}
        }
    }

    fn set(&self, open: bool) {
        let _ = self.open.send(open);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One `coord serve` the agents talk to, restartable on its port.
struct Node {
    port: u16,
    serve: Option<ServeChild>,
}

impl Node {
    async fn start(opts: &BenchOptions, scratch: &Scratch, db: &str) -> BenchResult<Node> {
        let serve = ServeChild::start_on(opts, scratch, db, 0).await?;
        let port = serve
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches('/').parse().ok())
            .ok_or_else(|| BenchError::Setup(format!("chaos: no port in {}", serve.url)))?;
        Ok(Node {
            port,
            serve: Some(serve),
        })
    }

    fn signal(&self, name: &str) {
        if let Some(pid) = self.serve.as_ref().and_then(ServeChild::pid) {
            let _ = std::process::Command::new("kill")
                .args([&format!("-{name}"), &pid.to_string()])
                .status();
        }
    }
}

/// What the faults did and found.
#[derive(Default)]
struct Findings {
    injected: BTreeMap<&'static str, u64>,
    /// The longest time a node took to answer after a fault ended.
    recovery_max: Duration,
    /// Each killed agent's wait for its task to be requeued (how long it took).
    requeues: Vec<tokio::task::JoinHandle<Option<Duration>>>,
}

struct Chaos<'a> {
    opts: &'a BenchOptions,
    scratch: &'a Scratch,
    nodes: Vec<Node>,
    clients: Vec<Arc<dyn Coordination>>,
    node_db: String,
    gate: Option<Gate>,
    agents_dir: &'a Path,
    shared: Arc<Shared>,
    findings: Findings,
}

impl Chaos<'_> {
    /// Injects one fault after another until the run's deadline.
    async fn inject(&mut self) -> BenchResult<()> {
        let order = faults(self.scratch.backend);
        let mut n = 0usize;
        loop {
            let next = (Instant::now() + FAULT_EVERY).min(self.shared.stop_at());
            tokio::time::sleep_until(next.into()).await;
            if !self.shared.running() {
                return Ok(());
            }
            let fault = order[n % order.len()];
            let node = (n / order.len()) % self.nodes.len();
            n += 1;
            *self.findings.injected.entry(fault.name()).or_default() += 1;
            match fault {
                Fault::KillNode => {
                    if let Some(serve) = self.nodes[node].serve.take() {
                        serve.stop().await;
                    }
                    tokio::time::sleep(OUTAGE).await;
                    // The fault ends when the node is started again: its start-up counts.
                    let ended = Instant::now();
                    let port = self.nodes[node].port;
                    let serve = ServeChild::start_on(self.opts, self.scratch, &self.node_db, port).await?;
                    self.nodes[node].serve = Some(serve);
                    self.recovered(node, fault, ended).await;
                }
                Fault::StopNode => {
                    self.nodes[node].signal("STOP");
                    tokio::time::sleep(OUTAGE).await;
                    self.nodes[node].signal("CONT");
                    self.recovered(node, fault, Instant::now()).await;
                }
                Fault::DbOutage => {
                    if let Some(gate) = &self.gate {
                        gate.set(false);
                        tokio::time::sleep(OUTAGE).await;
                        gate.set(true);
                    }
                    // Every node lost its connections.
                    let ended = Instant::now();
                    for each in 0..self.nodes.len() {
                        self.recovered(each, fault, ended).await;
                    }
                }
                Fault::KillAgent => self.kill_agent(n).await?,
            }
        }
    }

    /// Waits until `node` answers a request again; a violation past [`RECOVERY_LIMIT`].
    async fn recovered(&mut self, node: usize, fault: Fault, ended: Instant) {
        let probe = Caller::new("chaos-probe", crate::AGENT_TYPE);
        loop {
            let asked = self.clients[node].check_locks(&probe, CheckLocksRequest::default());
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), asked).await {
                self.findings.recovery_max = self.findings.recovery_max.max(ended.elapsed());
                return;
            }
            if ended.elapsed() > RECOVERY_LIMIT {
                return self.shared.invariants.violation(&format!(
                    "node {node} did not answer within {RECOVERY_LIMIT:?} after {}",
                    fault.name()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A `coord mcp` claims a task of its own and is killed.
    async fn kill_agent(&mut self, n: usize) -> BenchResult<()> {
        let coordinator = self.scratch.coordinator();
        let dispatcher = Caller::new("chaos-dispatcher", crate::AGENT_TYPE);
        let task_type = format!("{CLAIMED_TYPE}-{n}");
        let task = SubmitWorkRequest {
            task_type: task_type.clone(),
            task_description: format!("claimed by a killed agent ({n})"),
            input_data: None,
            priority: Some(1),
            depends_on: None,
        };
        coordinator.submit_work(&dispatcher, task).await?;
        let agent = format!("chaos-mcp-{n}");
        let grace = AGENT_GRACE_SECONDS.to_string();
        let mut mcp = McpClient::spawn(self.opts, self.scratch, &agent, &grace, Some(self.agents_dir)).await?;
        let claimed = mcp.tool("get_work", json!({"task_types": [task_type]})).await;
        let _ = mcp.child.start_kill();
        let _ = mcp.child.wait().await;
        match claimed {
            Ok(v) => match v["task_id"].as_str() {
                Some(task) => {
                    let watch = requeued(coordinator, task.to_string(), Instant::now(), self.shared.clone());
                    self.findings.requeues.push(tokio::spawn(watch));
                }
                None => self.shared.error("kill_agent", format!("{agent} claimed nothing: {v}")),
            },
            Err(e) => self.shared.error("kill_agent", e),
        }
        Ok(())
    }
}

/// How long a killed agent's task took to be back in the queue; a violation (and
/// `None`) past its grace period and [`REQUEUE_SLACK`].
async fn requeued(coordinator: Coordinator, task: String, killed_at: Instant, shared: Arc<Shared>) -> Option<Duration> {
    let me = Caller::new("chaos-checker", OPERATOR_TYPE);
    let limit = Duration::from_secs(AGENT_GRACE_SECONDS) + REQUEUE_SLACK;
    loop {
        let status = coordinator
            .get_task(&me, GetTaskRequest { task_id: task.clone() })
            .await
            .map(|t| t.task.status);
        if let Ok(TaskStatus::Pending) = status {
            return Some(killed_at.elapsed());
        }
        if killed_at.elapsed() > limit {
            shared.invariants.violation(&format!(
                "task {task} of a killed agent not requeued within {limit:?}: {status:?}"
            ));
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the store and the audit trail say at the end, against what was acknowledged.
async fn settled(coordinator: &Coordinator, shared: &Shared) -> BenchResult<BTreeMap<&'static str, u64>> {
    let me = Caller::new("chaos-checker", OPERATOR_TYPE);
    let (submitted, completed) = shared.invariants.acknowledged();
    let mut statuses = HashMap::new();
    for task in submitted.iter().chain(&completed) {
        if statuses.contains_key(task) {
            continue;
        }
        let found = coordinator
            .get_task(&me, GetTaskRequest { task_id: task.clone() })
            .await;
        statuses.insert(task.clone(), found.map(|t| t.task.status).ok());
    }
    for task in &submitted {
        if statuses.get(task).is_none_or(Option::is_none) {
            shared
                .invariants
                .violation(&format!("task {task} was acknowledged as submitted and is gone"));
        }
    }
    for task in &completed {
        if !matches!(statuses.get(task), Some(Some(TaskStatus::Completed))) {
            shared.invariants.violation(&format!(
                "task {task} was acknowledged as completed and is {:?}",
                statuses.get(task)
            ));
        }
    }
    // Two successful completions of one task in the audit trail.
    let mut completions: HashMap<String, u32> = HashMap::new();
    // Oldest first, page after page (without `after_id` it is newest first).
    let mut after_id = Some(0);
    loop {
        let page = coordinator
            .query_audit(
                &me,
                AuditQueryRequest {
                    operation: Some("complete_work".into()),
                    success: Some(true),
                    after_id,
                    limit: Some(1000),
                    ..Default::default()
                },
            )
            .await?;
        let Some(last) = page.entries.last() else { break };
        after_id = Some(last.id);
        for e in &page.entries {
            if let Some(task) = e.parameters["task_id"].as_str() {
                *completions.entry(task.to_string()).or_default() += 1;
            }
        }
    }
    for (task, n) in completions.iter().filter(|(_, n)| **n > 1) {
        shared
            .invariants
            .violation(&format!("task {task} completed {n} times in the audit trail"));
    }
    let verified = coord_service::call::<coord_service::ops::audit::VerifyAudit, _>(
        coordinator,
        &Principal::local(me.clone()),
        VerifyAuditRequest { expect_head: None },
    )
    .await?;
    if !verified.intact {
        shared
            .invariants
            .violation(&format!("the audit chain does not verify: {:?}", verified.problem));
    }
    Ok(BTreeMap::from([
        ("checked_submissions", submitted.len() as u64),
        ("checked_completions", completed.len() as u64),
        ("audited_completions", completions.values().map(|n| u64::from(*n)).sum()),
        ("chain_rows_checked", verified.rows_checked.max(0) as u64),
    ]))
}

pub async fn run(opts: &BenchOptions) -> BenchResult<Report> {
    let scratch = Scratch::create(&opts.db, "chaos", 2).await?;
    let agents_dir = std::env::temp_dir().join(format!("coord-chaos-{}", uuid::Uuid::new_v4().simple()));
    let outcome = match std::fs::create_dir_all(&agents_dir) {
        Ok(()) => measure(opts, &scratch, &agents_dir).await,
        Err(e) => Err(BenchError::Setup(format!("chaos: {}: {e}", agents_dir.display()))),
    };
    let _ = std::fs::remove_dir_all(&agents_dir);
    scratch.dispose().await;
    outcome
}

async fn measure(opts: &BenchOptions, scratch: &Scratch, agents_dir: &Path) -> BenchResult<Report> {
    let gate = match scratch.backend {
        "postgres" => Some(Gate::start(&scratch.db_arg).await?),
        _ => None,
    };
    let node_db = gate.as_ref().map_or_else(|| scratch.db_arg.clone(), |g| g.url.clone());
    let mut nodes = Vec::new();
    for _ in 0..opts.nodes.max(2) {
        nodes.push(Node::start(opts, scratch, &node_db).await?);
    }
    let mut clients: Vec<Arc<dyn Coordination>> = Vec::new();
    for n in &nodes {
        if let Some(serve) = &n.serve {
            clients.push(Arc::new(serve.client()?));
        }
    }
    // A sibling that stays: where no coordinator process serves the agents
    // (PostgreSQL), it is the `coord mcp` that reaps the killed ones.
    let witness = McpClient::spawn(opts, scratch, "chaos-witness", "1", Some(agents_dir)).await?;
    let shared = Shared::new(opts.seconds);
    let mut chaos = Chaos {
        opts,
        scratch,
        nodes,
        clients: clients.clone(),
        node_db,
        gate,
        agents_dir,
        shared: shared.clone(),
        findings: Findings::default(),
    };
    let (report, injected) = tokio::join!(agents::simulate(opts, clients, scratch, shared.clone()), chaos.inject());
    let mut requeue_max = Duration::ZERO;
    for watch in chaos.findings.requeues.drain(..) {
        if let Ok(Some(took)) = watch.await {
            requeue_max = requeue_max.max(took);
        }
    }
    let checks = settled(&scratch.coordinator(), &shared).await;
    witness.close().await;
    for node in chaos.nodes.drain(..) {
        if let Some(serve) = node.serve {
            serve.stop().await;
        }
    }
    if let Err(e) = injected {
        // A node that cannot be started again is a service that did not come back.
        shared.invariants.violation(&format!("fault injection stopped: {e}"));
    }
    let mut report = report?;
    report.invariant_violations = shared.invariants.violations();
    report.counts.extend(checks?);
    for (fault, n) in &chaos.findings.injected {
        report.counts.insert(fault, *n);
    }
    report
        .counts
        .insert("recovery_max_ms", chaos.findings.recovery_max.as_millis() as u64);
    report.counts.insert("requeue_max_ms", requeue_max.as_millis() as u64);
    report.counts.insert("nodes", chaos.clients.len() as u64);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_gets_every_fault_it_can_have() {
        assert_eq!(faults("sqlite").len(), 3);
        assert!(faults("postgres").contains(&Fault::DbOutage));
        assert!(!faults("sqlite").contains(&Fault::DbOutage));
    }
}
