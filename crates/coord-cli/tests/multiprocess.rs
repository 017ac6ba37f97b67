//! Several OS processes sharing one database, on SQLite and on PostgreSQL.
//!
//! The test binary re-executes itself as worker processes: `mp_worker` is a no-op in a
//! normal run and does the work when started with `COORD_MP_ROLE` set.
//!
//! Lock exclusion is checked independently of the coordinator's answers, three ways:
//! each holder creates a marker file with `O_EXCL` while it holds the lock (two holders
//! at once would collide); a sampler thread queries the lock table directly during the
//! run and checks that a path's fencing token never goes back and that one token never
//! names two holders; afterwards the audit trail must show, per path, grants and
//! releases strictly alternating.

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

use chrono::Utc;
use coord_cli::context::DbTarget;
use coord_conformance::cases::patterns::PATTERNS;
use coord_domain::Caller;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, ReleaseLockRequest};
use coord_domain::queue::{CompleteWorkRequest, GetTaskRequest, GetWorkRequest, SubmitWorkRequest, TaskStatus};
use coord_domain::sessions::{CleanupDeadAgentsRequest, RegisterSessionRequest};
use coord_domain::target::LockTarget;
use coord_service::CoordinationExt as _;
use coord_service::{Clock, CoordConfig, Coordinator, DatabaseClock, ManualClock};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Claude Code's type: its built-in profile (claude-code-cli) may lock and take tasks.
const AGENT_TYPE: &str = "claude_code";

const ROLE: &str = "COORD_MP_ROLE";

async fn coordinator_with(db: &str, clock: Arc<dyn Clock>) -> Coordinator {
    let target = DbTarget::parse(db, Path::new("/")).expect("db target");
    let store = coord_cli::open::open_store_with(&target, 4).await.expect("open store");
    Coordinator::new(store, clock, CoordConfig::default())
}

async fn coordinator(db: &str) -> Coordinator {
    coordinator_with(db, Arc::new(DatabaseClock)).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn env_num(key: &str) -> usize {
    std::env::var(key).unwrap().parse().unwrap()
}

/// Entry point of the worker processes.
#[test]
fn mp_worker() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let db = std::env::var("COORD_MP_DB").unwrap();
    let index = env_num("COORD_MP_INDEX");
    runtime().block_on(async {
        let coord = coordinator(&db).await;
        match role.as_str() {
            "locks" => lock_clients(&coord, index, false).await,
            "patterns" => lock_clients(&coord, index, true).await,
            "tasks" => task_worker(&coord, index).await,
            "holder" => holder(&coord).await,
            other => panic!("unknown role {other}"),
        }
    });
}

/// Runs this process's `COORD_MP_CLIENTS` lock clients (files or patterns) at once and
/// prints how many acquisitions they got.
async fn lock_clients(coord: &Coordinator, index: usize, patterns: bool) {
    let clients = env_num("COORD_MP_CLIENTS");
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let coord = coord.clone();
            let client = index * clients + c;
            tokio::spawn(async move {
                if patterns {
                    pattern_worker(&coord, client).await
                } else {
                    lock_worker(&coord, client).await
                }
            })
        })
        .collect();
    let mut acquired = 0;
    for t in tasks {
        acquired += t.await.unwrap();
    }
    println!("ACQUIRED {acquired}");
}

/// Every audit row of `operation` in the database at `url`, oldest first (paged by id).
fn audit_of(url: &str, operation: &str) -> Vec<coord_domain::audit::AuditEntry> {
    runtime().block_on(async {
        let coord = coordinator(url).await;
        let mut all: Vec<coord_domain::audit::AuditEntry> = Vec::new();
        loop {
            let page = coord
                .query_audit(
                    &Caller::new("checker", "cli"),
                    AuditQueryRequest {
                        operation: Some(operation.into()),
                        after_id: Some(all.last().map_or(0, |e| e.id)),
                        limit: Some(10_000),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .entries;
            if page.is_empty() {
                return all;
            }
            all.extend(page);
        }
    })
}

/// The newest 10,000 audit rows of the database at `url`, newest first.
fn audit_trail(url: &str) -> Vec<coord_domain::audit::AuditEntry> {
    runtime().block_on(async {
        coordinator(url)
            .await
            .query_audit(
                &Caller::new("checker", "cli"),
                AuditQueryRequest {
                    limit: Some(10_000),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .entries
    })
}

fn spawn_workers(role: &str, n: usize, db: &str, extra: &[(&str, String)]) -> Vec<Child> {
    (0..n)
        .map(|i| {
            let mut c = Command::new(std::env::current_exe().unwrap());
            c.args(["mp_worker", "--exact", "--nocapture", "--test-threads", "1"])
                .env(ROLE, role)
                .env("COORD_MP_DB", db)
                .env("COORD_MP_INDEX", i.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            for (k, v) in extra {
                c.env(k, v);
            }
            c.spawn().unwrap()
        })
        .collect()
}

/// Waits for every worker; returns the `KEY value` lines they printed.
fn collect(children: Vec<Child>, key: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "worker failed: {text}");
        // libtest may print its own "test mp_worker ... " prefix on the first line.
        lines.extend(
            text.lines()
                .filter_map(|l| l.find(key).map(|at| l[at + key.len()..].trim().to_string())),
        );
    }
    lines
}

/// How many acquisitions the lock workers reported, in all.
fn acquired_by(workers: Vec<Child>) -> usize {
    collect(workers, "ACQUIRED")
        .iter()
        .map(|n| n.parse::<usize>().unwrap())
        .sum()
}

/// A small deterministic generator: workers must not need a random crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

async fn lock_worker(coord: &Coordinator, client: usize) -> usize {
    let paths = env_num("COORD_MP_PATHS") as u64;
    let attempts = env_num("COORD_MP_ATTEMPTS");
    let me = Caller::new(format!("client-{client}"), AGENT_TYPE);
    let markers = std::path::PathBuf::from(std::env::var("COORD_MP_MARKERS").unwrap());
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (client as u64 + 1));
    let mut acquired = 0;
    for _ in 0..attempts {
        let p = rng.next() % paths;
        let path = format!("f{p}.rs");
        let req = AcquireLockRequest {
            file_path: path.clone(),
            reason: None,
            ttl_minutes: Some(60),
        };
        let r = coord.acquire_lock(&me, req).await.expect("acquire_lock answers");
        if !r.success {
            continue;
        }
        acquired += 1;
        let marker = markers.join(format!("f{p}"));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&marker) {
            Ok(mut f) => f.write_all(me.agent_id.as_bytes()).unwrap(),
            Err(e) => panic!("VIOLATION: {path} has a second live holder ({e})"),
        }
        tokio::task::yield_now().await;
        std::fs::remove_file(&marker).unwrap();
        coord
            .release_lock(&me, ReleaseLockRequest { file_path: path })
            .await
            .expect("the holder can release");
    }
    acquired
}

/// Acquires random patterns; while holding one, asks which live locks overlap it: none
/// may be another agent's.
async fn pattern_worker(coord: &Coordinator, client: usize) -> usize {
    let attempts = env_num("COORD_MP_ATTEMPTS");
    let me = Caller::new(format!("client-{client}"), AGENT_TYPE);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (client as u64 + 1));
    let mut acquired = 0;
    for _ in 0..attempts {
        let path = PATTERNS[(rng.next() % PATTERNS.len() as u64) as usize].to_string();
        let req = AcquireLockRequest {
            file_path: path.clone(),
            reason: None,
            ttl_minutes: Some(60),
        };
        let r = coord.acquire_lock(&me, req).await.expect("acquire_lock answers");
        if !r.success {
            let held = r.locked_path.expect("a refusal names the lock in the way");
            let (asked, held_t) = (LockTarget::parse(&path, None).unwrap(), LockTarget::from_key(&held));
            assert!(
                asked.overlaps(&held_t),
                "VIOLATION: {path} refused for {held}, which does not overlap"
            );
            continue;
        }
        acquired += 1;
        let seen = coord
            .check_locks(
                &me,
                CheckLocksRequest {
                    file_paths: Some(vec![path.clone()]),
                },
            )
            .await
            .expect("check_locks answers");
        for l in seen.locks {
            assert_eq!(l.locked_by, me.agent_id, "VIOLATION: {path} held while {l:?} is live");
        }
        tokio::task::yield_now().await;
        coord
            .release_lock(&me, ReleaseLockRequest { file_path: path })
            .await
            .expect("the holder can release");
    }
    acquired
}

/// Processes race for overlapping files, directories and globs; each worker checks what
/// it sees while holding, and the audit trail, replayed in order, never shows a grant
/// overlapping another agent's unreleased lock.
fn overlapping_patterns_are_exclusive_across_processes(db: &Db, processes: usize, clients: usize, attempts: usize) {
    let url = db.url();
    runtime().block_on(coordinator(&url)); // migrate once before the race
    let workers = spawn_workers(
        "patterns",
        processes,
        &url,
        &[
            ("COORD_MP_CLIENTS", clients.to_string()),
            ("COORD_MP_ATTEMPTS", attempts.to_string()),
        ],
    );
    let acquired = acquired_by(workers);
    assert!(acquired > 0);
    eprintln!("{acquired} grants of {} attempts", processes * clients * attempts);
    let entries = audit_trail(&url);
    let mut held: Vec<(String, String)> = Vec::new();
    let mut grants = 0;
    for e in entries.iter().rev().filter(|e| e.success) {
        let path = e.result["file_path"].as_str().unwrap_or_default().to_string();
        match e.operation.as_str() {
            "acquire_lock" if e.result["success"] == true => {
                let target = LockTarget::from_key(&path);
                for (other, who) in &held {
                    assert!(
                        who == &e.agent_id || !target.overlaps(&LockTarget::from_key(other)),
                        "{path} granted to {} while {who} held {other} (audit id {})",
                        e.agent_id,
                        e.id
                    );
                }
                held.push((path, e.agent_id.clone()));
                grants += 1;
            }
            "release_lock" => {
                let at = held
                    .iter()
                    .position(|(p, who)| p == &path && who == &e.agent_id)
                    .unwrap_or_else(|| panic!("release of {path} not held (audit id {})", e.id));
                held.remove(at);
            }
            _ => {}
        }
    }
    assert_eq!(grants, acquired, "every grant is in the audit trail");
    assert!(held.is_empty());
}

async fn task_worker(coord: &Coordinator, index: usize) {
    let me = Caller::new(format!("worker-{index}"), AGENT_TYPE);
    loop {
        let got = coord
            .get_work(&me, GetWorkRequest::default())
            .await
            .expect("get_work answers");
        match got.task_id {
            Some(id) => {
                coord
                    .complete_work(
                        &me,
                        CompleteWorkRequest {
                            task_id: id.clone(),
                            success: true,
                            result: None,
                            error_message: None,
                            skill: None,
                            changes: None,
                        },
                    )
                    .await
                    .expect("the claimer can complete");
                println!("CLAIMED {id}");
            }
            None => {
                let s = coord.status(&me).await.expect("status answers");
                if s.tasks.pending == 0 && s.tasks.claimed == 0 {
                    break;
                }
                // The remaining tasks wait on dependencies another worker is finishing.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// An agent that takes locks and claims, says READY, then keeps its session alive until
/// its stdin closes (or it is killed).
async fn holder(coord: &Coordinator) {
    let me = Caller::new("doomed", AGENT_TYPE);
    coord
        .register_session(&me, RegisterSessionRequest::default())
        .await
        .unwrap();
    for p in ["a.rs", "b.rs", "c.rs"] {
        let r = coord
            .acquire_lock(
                &me,
                AcquireLockRequest {
                    file_path: p.into(),
                    reason: None,
                    ttl_minutes: Some(480),
                },
            )
            .await
            .unwrap();
        assert!(r.success);
    }
    for _ in 0..2 {
        assert!(coord.get_work(&me, GetWorkRequest::default()).await.unwrap().success);
    }
    println!("READY");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// Samples the lock table directly while workers run: per path, the fencing token never
/// goes back, and one token never names two holders.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(usize, usize, Vec<String>)>,
}

impl Sampler {
    fn start(db: Db) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut seen: HashMap<String, (i64, String)> = HashMap::new();
            let mut violations = Vec::new();
            let (mut samples, mut observed) = (0, 0);
            while !flag.load(Ordering::Relaxed) {
                for (path, agent, token) in rt.block_on(db.live_locks()) {
                    observed += 1;
                    if let Some((last_token, last_agent)) = seen.get(&path)
                        && (token < *last_token || (token == *last_token && agent != *last_agent))
                    {
                        violations.push(format!(
                            "{path}: token {token} by {agent} after {last_token} by {last_agent}"
                        ));
                    }
                    seen.insert(path, (token, agent));
                }
                samples += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            (samples, observed, violations)
        });
        Sampler { stop, handle }
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let (samples, observed, violations) = self.handle.join().unwrap();
        assert!(
            samples > 0 && observed >= 10,
            "the sampler saw only {observed} live locks in {samples} samples"
        );
        assert!(violations.is_empty(), "{violations:#?}");
    }
}

/// A database for one test, and a way to read it without the coordinator.
#[derive(Clone)]
enum Db {
    Sqlite { _dir: Arc<tempfile::TempDir>, path: String },
    Postgres(Arc<pg_support::TestDatabase>),
}

impl Db {
    fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coord.db").display().to_string();
        Db::Sqlite {
            _dir: Arc::new(dir),
            path,
        }
    }

    /// `None` when no PostgreSQL server is reachable (and CI does not require one).
    fn postgres() -> Option<Db> {
        let rt = runtime();
        if !rt.block_on(pg_support::available()) {
            return None;
        }
        Some(Db::Postgres(Arc::new(
            rt.block_on(pg_support::TestDatabase::from_template()),
        )))
    }

    fn url(&self) -> String {
        match self {
            Db::Sqlite { path, .. } => path.clone(),
            Db::Postgres(db) => db.url.clone(),
        }
    }

    async fn live_locks(&self) -> Vec<(String, String, i64)> {
        match self {
            Db::Sqlite { path, .. } => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.busy_timeout(Duration::from_secs(5)).unwrap();
                let mut stmt = c
                    .prepare("SELECT file_path, agent_id, fencing_token FROM file_locks WHERE expires_at > ?1")
                    .unwrap();
                stmt.query_map([Utc::now().timestamp_micros()], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
            }
            Db::Postgres(db) => {
                let c = pg_support::connect(&db.url).await;
                c.query(
                    "SELECT file_path, agent_id, fencing_token FROM file_locks WHERE expires_at > now()",
                    &[],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect()
            }
        }
    }
}

fn locks_are_exclusive_across_processes(db: &Db, processes: usize, clients: usize, paths: usize, attempts: usize) {
    let url = db.url();
    let markers = tempfile::tempdir().unwrap();
    runtime().block_on(coordinator(&url)); // migrate once before the race
    let sampler = Sampler::start(db.clone());
    let workers = spawn_workers(
        "locks",
        processes,
        &url,
        &[
            ("COORD_MP_MARKERS", markers.path().display().to_string()),
            ("COORD_MP_CLIENTS", clients.to_string()),
            ("COORD_MP_PATHS", paths.to_string()),
            ("COORD_MP_ATTEMPTS", attempts.to_string()),
        ],
    );
    let acquired = acquired_by(workers);
    sampler.finish();
    assert!(acquired > 0);

    // From the audit trail: per path, grants and releases alternate.
    let entries = audit_trail(&url);
    let mut holder: HashMap<String, String> = HashMap::new();
    let mut grants = 0;
    for e in entries.iter().rev().filter(|e| e.success) {
        let path = e.result["file_path"].as_str().unwrap_or_default().to_string();
        match e.operation.as_str() {
            "acquire_lock" => {
                assert_eq!(e.result["action"], "acquired");
                if let Some(h) = holder.insert(path.clone(), e.agent_id.clone()) {
                    panic!("{path} granted to {} while {h} held it (audit id {})", e.agent_id, e.id);
                }
                grants += 1;
            }
            "release_lock" => {
                assert_eq!(
                    holder.remove(&path).as_deref(),
                    Some(e.agent_id.as_str()),
                    "audit id {}",
                    e.id
                );
            }
            _ => {}
        }
    }
    assert_eq!(grants, acquired, "every grant is in the audit trail");
    assert!(holder.is_empty());
}

/// Workers in separate processes drain a queue with dependency chains: each task
/// claimed exactly once, none lost, none claimed before its dependency completed.
fn tasks_are_claimed_once_across_processes(db: &Db, processes: usize, count: usize) {
    let url = db.url();
    let rt = runtime();
    let boss = Caller::new("boss", AGENT_TYPE);
    // Submitted by 8 concurrent submitters; every tenth task depends on the tenth before.
    let ids: Vec<String> = rt.block_on(async {
        let coord = coordinator(&url).await;
        let mut ids: Vec<String> = Vec::with_capacity(count);
        for chunk_start in (0..count).step_by(10) {
            let mut batch = Vec::new();
            for k in chunk_start..(chunk_start + 10).min(count) {
                let depends_on = (k >= 10 && k % 10 == 0).then(|| vec![ids[k - 10].clone()]);
                let coord = coord.clone();
                let boss = boss.clone();
                batch.push(tokio::spawn(async move {
                    let req = SubmitWorkRequest {
                        task_type: "t".into(),
                        task_description: format!("task {k}"),
                        priority: Some((k % 10) as i64 + 1),
                        depends_on,
                        input_data: None,
                    };
                    coord.submit_work(&boss, req).await.unwrap().task_id
                }));
            }
            for b in batch {
                ids.push(b.await.unwrap());
            }
        }
        ids
    });
    let claimed = collect(spawn_workers("tasks", processes, &url, &[]), "CLAIMED");
    let mut seen = HashSet::new();
    for id in &claimed {
        assert!(seen.insert(id.clone()), "task {id} claimed twice");
    }
    let all: HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(seen.len(), all.len());
    assert_eq!(seen, all, "every task claimed exactly once, none lost");
    // "Claimed after its dependency completed" in the order of commits, which the audit
    // trail keeps: a row is linked into the chain under its lock before its transaction
    // commits, and a claim can only see a completion that has committed. (Not by the
    // tasks' timestamps: each is taken at its statement's start on its own connection, and
    // a claim's statement can start, be descheduled, and take its snapshot only after the
    // completion it then sees has started and committed.)
    let completed: HashMap<String, i64> = audit_of(&url, "complete_work")
        .into_iter()
        .filter(|e| e.success)
        .map(|e| (e.parameters["task_id"].as_str().unwrap().to_string(), e.id))
        .collect();
    let claimed: HashMap<String, i64> = audit_of(&url, "get_work")
        .into_iter()
        .filter_map(|e| Some((e.result["task_id"].as_str()?.to_string(), e.id)))
        .collect();
    assert_eq!(
        (completed.len(), claimed.len()),
        (count, count),
        "every claim and completion audited"
    );
    rt.block_on(async {
        let coord = coordinator(&url).await;
        for k in (10..count).step_by(10) {
            assert!(
                completed[&ids[k - 10]] < claimed[&ids[k]],
                "task {k} claimed (audit id {}) before its dependency completed (audit id {})",
                claimed[&ids[k]],
                completed[&ids[k - 10]]
            );
            let t = coord
                .get_task(
                    &boss,
                    GetTaskRequest {
                        task_id: ids[k].clone(),
                    },
                )
                .await
                .unwrap()
                .task;
            assert_eq!((t.status, t.attempts), (TaskStatus::Completed, 1));
        }
    });
}

/// `kill -9` an agent holding locks and claims: after the stale threshold (reached by
/// moving an injected clock, not by waiting), cleanup frees its locks and requeues its
/// tasks, which others then claim.
fn a_killed_agent_is_cleaned_up(db: &Db) {
    let url = db.url();
    let rt = runtime();
    let boss = Caller::new("boss", AGENT_TYPE);
    let tasks: Vec<String> = rt.block_on(async {
        let coord = coordinator(&url).await;
        let mut ids = Vec::new();
        for i in 0..2 {
            let req = SubmitWorkRequest {
                task_type: "t".into(),
                task_description: format!("t{i}"),
                ..Default::default()
            };
            ids.push(coord.submit_work(&boss, req).await.unwrap().task_id);
        }
        ids
    });
    let mut child = spawn_workers("holder", 1, &url, &[]).remove(0);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("READY") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "holder exited before READY");
    }
    child.kill().unwrap(); // SIGKILL: no cleanup of its own
    child.wait().unwrap();

    rt.block_on(async {
        let clock = Arc::new(ManualClock::new(Utc::now() + chrono::Duration::minutes(16)));
        let later = coordinator_with(&url, clock).await;
        let r = later
            .cleanup_dead_agents(&boss, CleanupDeadAgentsRequest::default())
            .await
            .unwrap();
        assert_eq!(r.agents, ["doomed"]);
        assert_eq!((r.locks_released, r.tasks_requeued), (3, 2));

        let coord = coordinator(&url).await;
        let other = Caller::new("survivor", AGENT_TYPE);
        let locks = coord.check_locks(&other, CheckLocksRequest::default()).await.unwrap();
        assert!(locks.locks.is_empty(), "{locks:?}");
        let lock = coord
            .acquire_lock(
                &other,
                AcquireLockRequest {
                    file_path: "a.rs".into(),
                    reason: None,
                    ttl_minutes: None,
                },
            )
            .await
            .unwrap();
        assert!(lock.success);
        let mut reclaimed = HashSet::new();
        for _ in 0..2 {
            reclaimed.insert(
                coord
                    .get_work(&other, GetWorkRequest::default())
                    .await
                    .unwrap()
                    .task_id
                    .unwrap(),
            );
        }
        assert_eq!(reclaimed, tasks.into_iter().collect());
    });
}

fn worker_process() -> bool {
    std::env::var(ROLE).is_ok()
}

#[test]
fn sqlite_8_processes_200_attempts_20_paths_never_two_holders() {
    if worker_process() {
        return;
    }
    locks_are_exclusive_across_processes(&Db::sqlite(), 8, 1, 20, 200);
}

#[test]
fn sqlite_6_processes_race_for_overlapping_patterns() {
    if worker_process() {
        return;
    }
    overlapping_patterns_are_exclusive_across_processes(&Db::sqlite(), 6, 1, 150);
}

#[test]
fn sqlite_4_processes_claim_2000_tasks_exactly_once() {
    if worker_process() {
        return;
    }
    tasks_are_claimed_once_across_processes(&Db::sqlite(), 4, 2000);
}

#[test]
fn sqlite_killed_agent_is_cleaned_up() {
    if worker_process() {
        return;
    }
    a_killed_agent_is_cleaned_up(&Db::sqlite());
}

#[test]
fn postgres_16_clients_on_10_paths_never_two_holders() {
    if worker_process() {
        return;
    }
    if let Some(db) = Db::postgres() {
        locks_are_exclusive_across_processes(&db, 8, 2, 10, 200);
    }
}

#[test]
fn postgres_12_clients_race_for_overlapping_patterns() {
    if worker_process() {
        return;
    }
    if let Some(db) = Db::postgres() {
        overlapping_patterns_are_exclusive_across_processes(&db, 6, 2, 150);
    }
}

#[test]
fn postgres_8_workers_claim_20000_tasks_exactly_once() {
    if worker_process() {
        return;
    }
    if let Some(db) = Db::postgres() {
        tasks_are_claimed_once_across_processes(&db, 8, 20_000);
    }
}

#[test]
fn postgres_killed_agent_is_cleaned_up() {
    if worker_process() {
        return;
    }
    if let Some(db) = Db::postgres() {
        a_killed_agent_is_cleaned_up(&db);
    }
}
