//! State-machine property tests: random operation sequences run against the service
//! and against a small in-memory model of the rules; every answer and the full state
//! must agree after every step. Invariants checked on the way: at most one live holder
//! per path, fencing tokens increase per path, a task is never claimed while a
//! dependency is incomplete, and never held by two agents.
//!
//! Case count: `COORD_PROPTEST_CASES` (default 24), each case on a fresh store.

use crate::{Backend, Harness, agent};
use coord_domain::ErrorCode;
use coord_domain::locks::{CheckLocksRequest, LockAction, ReleaseLockRequest};
use coord_domain::queue::{ListTasksRequest, TaskStatus};
use coord_domain::sessions::HeartbeatRequest;
use coord_service::CoordinationExt as _;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::{BTreeMap, BTreeSet, HashMap};

const AGENTS: usize = 3;
const PATHS: usize = 3;

fn cases() -> u32 {
    std::env::var("COORD_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

fn run_cases<S: Strategy>(strategy: S, body: impl Fn(S::Value)) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |ops| {
            body(ops);
            Ok(())
        })
        .unwrap();
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}

fn name(i: usize) -> String {
    format!("agent-{i}")
}

// ---------------------------------------------------------------------------- locks

#[derive(Debug, Clone)]
enum LockOp {
    Acquire { agent: usize, path: usize, ttl: i64 },
    Release { agent: usize, path: usize },
    Advance(i64),
    Check,
}

fn lock_op() -> impl Strategy<Value = LockOp> {
    prop_oneof![
        4 => (0..AGENTS, 0..PATHS, 1..4i64).prop_map(|(agent, path, ttl)| LockOp::Acquire { agent, path, ttl }),
        2 => (0..AGENTS, 0..PATHS).prop_map(|(agent, path)| LockOp::Release { agent, path }),
        2 => (0..3i64).prop_map(LockOp::Advance),
        1 => Just(LockOp::Check),
    ]
}

#[derive(Debug, Clone)]
struct ModelLock {
    holder: usize,
    expires: i64,
    token: i64,
}

pub fn model_locks_state_machine(b: &dyn Backend) {
    run_cases(proptest::collection::vec(lock_op(), 1..40), |ops| {
        block_on(async {
            let h = Harness::new(b).await;
            let mut locks: HashMap<usize, ModelLock> = HashMap::new();
            let mut last_token: HashMap<usize, i64> = HashMap::new();
            let mut now = 0i64;
            for (step, op) in ops.iter().enumerate() {
                let ctx = format!("step {step} {op:?} in {ops:?}");
                match *op {
                    LockOp::Acquire { agent: who, path, ttl } => {
                        let r = h.lock(&agent(&name(who)), &format!("p{path}.rs"), Some(ttl)).await;
                        match locks.get(&path).filter(|l| l.expires > now).cloned() {
                            Some(l) if l.holder == who => {
                                assert_eq!(r.action, LockAction::Refreshed, "{ctx}");
                                assert_eq!(r.fencing_token, Some(l.token), "{ctx}");
                                locks.insert(
                                    path,
                                    ModelLock {
                                        expires: now + ttl,
                                        ..l
                                    },
                                );
                            }
                            Some(l) => {
                                assert_eq!(r.action, LockAction::Blocked, "{ctx}");
                                assert_eq!(r.locked_by, Some(name(l.holder)), "{ctx}");
                            }
                            None => {
                                assert_eq!(r.action, LockAction::Acquired, "{ctx}");
                                let token = r.fencing_token.expect("token");
                                let prev = last_token.get(&path).copied().unwrap_or(0);
                                assert!(token > prev, "{ctx}: token {token} not above {prev}");
                                last_token.insert(path, token);
                                locks.insert(
                                    path,
                                    ModelLock {
                                        holder: who,
                                        expires: now + ttl,
                                        token,
                                    },
                                );
                            }
                        }
                    }
                    LockOp::Release { agent: who, path } => {
                        let r = h
                            .coord
                            .release_lock(
                                &agent(&name(who)),
                                ReleaseLockRequest {
                                    file_path: format!("p{path}.rs"),
                                },
                            )
                            .await;
                        match locks.get(&path).filter(|l| l.expires > now) {
                            Some(l) if l.holder == who => {
                                assert!(r.is_ok(), "{ctx}: {r:?}");
                                locks.remove(&path);
                            }
                            Some(_) => assert_eq!(r.unwrap_err().code, ErrorCode::NotLockOwner, "{ctx}"),
                            None => assert_eq!(r.unwrap_err().code, ErrorCode::LockNotHeld, "{ctx}"),
                        }
                    }
                    LockOp::Advance(m) => {
                        h.advance(m);
                        now += m;
                    }
                    LockOp::Check => {}
                }
                let listed = h
                    .coord
                    .check_locks(&agent("observer"), CheckLocksRequest::default())
                    .await
                    .unwrap();
                let got: BTreeMap<String, String> = listed
                    .locks
                    .iter()
                    .map(|l| (l.file_path.clone(), l.locked_by.clone()))
                    .collect();
                assert_eq!(got.len(), listed.locks.len(), "{ctx}: a path listed twice");
                let want: BTreeMap<String, String> = locks
                    .iter()
                    .filter(|(_, l)| l.expires > now)
                    .map(|(p, l)| (format!("p{p}.rs"), name(l.holder)))
                    .collect();
                assert_eq!(got, want, "{ctx}");
            }
        })
    });
}

// ---------------------------------------------------------------------------- queue

const LEASE: i64 = 5;
const MAX_ATTEMPTS: i32 = 2;

#[derive(Debug, Clone)]
enum QueueOp {
    Submit { priority: i64, deps: Vec<usize> },
    Claim { agent: usize },
    Complete { agent: usize, pick: usize, success: bool },
    Heartbeat { agent: usize },
    Advance(i64),
}

fn queue_op() -> impl Strategy<Value = QueueOp> {
    prop_oneof![
        4 => (1..4i64, proptest::collection::vec(0..20usize, 0..3))
            .prop_map(|(priority, deps)| QueueOp::Submit { priority, deps }),
        4 => (0..AGENTS).prop_map(|agent| QueueOp::Claim { agent }),
        3 => (0..AGENTS, 0..20usize, prop::bool::weighted(0.75))
            .prop_map(|(agent, pick, success)| QueueOp::Complete { agent, pick, success }),
        1 => (0..AGENTS).prop_map(|agent| QueueOp::Heartbeat { agent }),
        2 => (0..4i64).prop_map(QueueOp::Advance),
    ]
}

#[derive(Debug, Clone)]
struct ModelTask {
    id: String,
    priority: i64,
    deps: Vec<usize>,
    status: TaskStatus,
    claimed_by: Option<usize>,
    claimed_until: i64,
    attempts: i32,
}

struct QueueModel {
    tasks: Vec<ModelTask>,
    now: i64,
}

impl QueueModel {
    fn cancel_dependents_of(&mut self, failed: usize) {
        let mut frontier = vec![failed];
        while let Some(f) = frontier.pop() {
            for i in 0..self.tasks.len() {
                if self.tasks[i].deps.contains(&f) && self.tasks[i].status == TaskStatus::Pending {
                    self.tasks[i].status = TaskStatus::Cancelled;
                    frontier.push(i);
                }
            }
        }
    }

    fn fail(&mut self, i: usize) {
        self.tasks[i].status = TaskStatus::Failed;
        self.cancel_dependents_of(i);
    }

    fn settle_expired(&mut self) {
        for i in 0..self.tasks.len() {
            let t = &self.tasks[i];
            if t.status == TaskStatus::Claimed && t.claimed_until <= self.now {
                if t.attempts >= MAX_ATTEMPTS {
                    self.fail(i);
                } else {
                    self.tasks[i].status = TaskStatus::Pending;
                    self.tasks[i].claimed_by = None;
                }
            }
        }
    }

    fn claimable(&self) -> Option<usize> {
        (0..self.tasks.len())
            .filter(|&i| {
                let t = &self.tasks[i];
                t.status == TaskStatus::Pending && t.deps.iter().all(|&d| self.tasks[d].status == TaskStatus::Completed)
            })
            .min_by_key(|&i| (self.tasks[i].priority, i))
    }
}

pub fn model_queue_state_machine(b: &dyn Backend) {
    run_cases(proptest::collection::vec(queue_op(), 1..40), |ops| {
        block_on(async {
            let h = Harness::with_config(b, |c| {
                c.claim_lease_minutes = LEASE;
                c.max_attempts = MAX_ATTEMPTS;
            })
            .await;
            let mut m = QueueModel {
                tasks: Vec::new(),
                now: 0,
            };
            let boss = agent("boss");
            for (step, op) in ops.iter().enumerate() {
                let ctx = format!("step {step} {op:?} in {ops:?}");
                match op {
                    QueueOp::Submit { priority, deps } => {
                        let deps: Vec<usize> = if m.tasks.is_empty() {
                            Vec::new()
                        } else {
                            deps.iter()
                                .map(|d| d % m.tasks.len())
                                .collect::<BTreeSet<_>>()
                                .into_iter()
                                .collect()
                        };
                        let dep_ids: Vec<&str> = deps.iter().map(|&d| m.tasks[d].id.as_str()).collect();
                        let id = h.submit(&boss, "t", *priority, &dep_ids).await;
                        let dead = deps.iter().any(|&d| m.tasks[d].status.is_dead_end());
                        let status = if dead {
                            TaskStatus::Cancelled
                        } else {
                            TaskStatus::Pending
                        };
                        m.tasks.push(ModelTask {
                            id,
                            priority: *priority,
                            deps,
                            status,
                            claimed_by: None,
                            claimed_until: 0,
                            attempts: 0,
                        });
                    }
                    QueueOp::Claim { agent: who } => {
                        let r = h.claim(&agent(&name(*who))).await;
                        m.settle_expired();
                        match m.claimable() {
                            Some(i) => {
                                assert_eq!(r.task_id.as_deref(), Some(m.tasks[i].id.as_str()), "{ctx}");
                                let t = &mut m.tasks[i];
                                t.status = TaskStatus::Claimed;
                                t.claimed_by = Some(*who);
                                t.claimed_until = m.now + LEASE;
                                t.attempts += 1;
                                assert_eq!(r.attempt, Some(t.attempts), "{ctx}");
                            }
                            None => assert!(!r.success, "{ctx}: claimed {r:?}, model has nothing claimable"),
                        }
                    }
                    QueueOp::Complete {
                        agent: who,
                        pick,
                        success,
                    } => {
                        if m.tasks.is_empty() {
                            continue;
                        }
                        let i = pick % m.tasks.len();
                        let r = h.complete(&agent(&name(*who)), &m.tasks[i].id, *success).await;
                        let t = &m.tasks[i];
                        match (t.status, t.claimed_by) {
                            (TaskStatus::Claimed, Some(by)) if by == *who => {
                                assert!(r.is_ok(), "{ctx}: {r:?}");
                                if *success {
                                    m.tasks[i].status = TaskStatus::Completed;
                                } else {
                                    m.fail(i);
                                }
                            }
                            (TaskStatus::Claimed, _) => {
                                assert_eq!(r.unwrap_err().code, ErrorCode::NotTaskOwner, "{ctx}")
                            }
                            _ => assert_eq!(r.unwrap_err().code, ErrorCode::TaskNotClaimed, "{ctx}"),
                        }
                    }
                    QueueOp::Heartbeat { agent: who } => {
                        h.coord
                            .heartbeat(&agent(&name(*who)), HeartbeatRequest {})
                            .await
                            .unwrap();
                        let now = m.now;
                        for t in m.tasks.iter_mut() {
                            if t.status == TaskStatus::Claimed && t.claimed_by == Some(*who) && t.claimed_until > now {
                                t.claimed_until = t.claimed_until.max(now + LEASE);
                            }
                        }
                    }
                    QueueOp::Advance(minutes) => {
                        h.advance(*minutes);
                        m.now += minutes;
                    }
                }
                let listed = h
                    .coord
                    .list_tasks(
                        &boss,
                        ListTasksRequest {
                            limit: Some(1000),
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap();
                let got: BTreeMap<String, (TaskStatus, Option<String>)> = listed
                    .tasks
                    .iter()
                    .map(|t| {
                        let holder = (t.status == TaskStatus::Claimed)
                            .then(|| t.claimed_by.clone())
                            .flatten();
                        (t.task_id.clone(), (t.status, holder))
                    })
                    .collect();
                let want: BTreeMap<String, (TaskStatus, Option<String>)> = m
                    .tasks
                    .iter()
                    .map(|t| {
                        let holder = (t.status == TaskStatus::Claimed)
                            .then(|| t.claimed_by.map(name))
                            .flatten();
                        (t.id.clone(), (t.status, holder))
                    })
                    .collect();
                assert_eq!(got, want, "{ctx}");
                for t in &listed.tasks {
                    if t.status == TaskStatus::Claimed || t.status == TaskStatus::Completed {
                        for d in &t.depends_on {
                            let dep = listed.tasks.iter().find(|x| &x.task_id == d).unwrap();
                            assert_eq!(dep.status, TaskStatus::Completed, "{ctx}: {} ran before {d}", t.task_id);
                        }
                    }
                }
            }
        })
    });
}
