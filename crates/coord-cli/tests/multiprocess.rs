//! Several OS processes sharing one database.
//!
//! The test binary re-executes itself as worker processes: `mp_worker` is a no-op in a
//! normal run and does the work when started with `COORD_MP_ROLE` set. Mutual exclusion
//! is checked twice, independently of the coordinator's own answers: each lock holder
//! creates a marker file with `O_EXCL` while it holds the lock (two holders at once
//! would collide), and afterwards the audit trail must show, per path, acquisitions
//! and releases strictly alternating.

use coord_cli::context::DbTarget;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::{AcquireLockRequest, ReleaseLockRequest};
use coord_domain::queue::{CompleteWorkRequest, GetTaskRequest, GetWorkRequest, SubmitWorkRequest};
use coord_domain::Caller;
use coord_service::{Coordination, CoordConfig, Coordinator, DatabaseClock};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

const ROLE: &str = "COORD_MP_ROLE";

async fn coordinator(db: &str) -> Coordinator {
    let target = DbTarget::parse(db, Path::new("/")).expect("db target");
    let store = coord_cli::open::open_store(&target).await.expect("open store");
    Coordinator::new(store, Arc::new(DatabaseClock), CoordConfig::default())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Entry point of the worker processes.
#[test]
fn mp_worker() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let db = std::env::var("COORD_MP_DB").unwrap();
    let index: usize = std::env::var("COORD_MP_INDEX").unwrap().parse().unwrap();
    runtime().block_on(async {
        let coord = coordinator(&db).await;
        match role.as_str() {
            "locks" => lock_worker(&coord, index).await,
            "tasks" => task_worker(&coord, index).await,
            other => panic!("unknown role {other}"),
        }
    });
}

fn spawn_workers(role: &str, n: usize, db: &str, extra: &[(&str, String)]) -> Vec<Child> {
    (0..n)
        .map(|i| {
            let mut c = Command::new(std::env::current_exe().unwrap());
            c.args(["mp_worker", "--exact", "--nocapture", "--test-threads", "1"])
                .env(ROLE, role)
                .env("COORD_MP_DB", db)
                .env("COORD_MP_INDEX", i.to_string())
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
        lines.extend(text.lines().filter_map(|l| l.find(key).map(|at| l[at + key.len()..].trim().to_string())));
    }
    lines
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

const LOCK_PATHS: u64 = 20;
const LOCK_ATTEMPTS: usize = 200;

async fn lock_worker(coord: &Coordinator, index: usize) {
    let me = Caller::new(format!("proc-{index}"), "test");
    let markers = std::path::PathBuf::from(std::env::var("COORD_MP_MARKERS").unwrap());
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1));
    let mut acquired = 0;
    for _ in 0..LOCK_ATTEMPTS {
        let p = rng.next() % LOCK_PATHS;
        let path = format!("f{p}.rs");
        let req = AcquireLockRequest { file_path: path.clone(), reason: None, ttl_minutes: Some(60) };
        let r = coord.acquire_lock(&me, req).await.expect("acquire_lock answers");
        if !r.success {
            continue;
        }
        acquired += 1;
        let marker = markers.join(format!("f{p}"));
        if let Err(e) = std::fs::OpenOptions::new().write(true).create_new(true).open(&marker) {
            panic!("VIOLATION: {path} has a second live holder ({e})");
        }
        std::thread::yield_now();
        std::fs::remove_file(&marker).unwrap();
        coord
            .release_lock(&me, ReleaseLockRequest { file_path: path })
            .await
            .expect("the holder can release");
    }
    println!("ACQUIRED {acquired}");
}

async fn task_worker(coord: &Coordinator, index: usize) {
    let me = Caller::new(format!("worker-{index}"), "test");
    loop {
        let got = coord.get_work(&me, GetWorkRequest::default()).await.expect("get_work answers");
        match got.task_id {
            Some(id) => {
                coord
                    .complete_work(&me, CompleteWorkRequest { task_id: id.clone(), success: true, result: None, error_message: None })
                    .await
                    .expect("the claimer can complete");
                println!("CLAIMED {id}");
            }
            None => {
                let s = coord.status(&me).await.expect("status answers");
                if s.tasks.pending == 0 && s.tasks.claimed == 0 {
                    break;
                }
                // Remaining tasks wait on dependencies another worker is finishing.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// 8 processes x 200 attempts on 20 paths: never two live holders.
pub fn locks_are_exclusive_across_processes(db: &str) {
    let markers = tempfile::tempdir().unwrap();
    runtime().block_on(coordinator(db)); // migrate once before the race
    let workers = spawn_workers("locks", 8, db, &[("COORD_MP_MARKERS", markers.path().display().to_string())]);
    let acquired: usize = collect(workers, "ACQUIRED").iter().map(|n| n.parse::<usize>().unwrap()).sum();
    assert!(acquired > 0);

    // Independent check from the audit trail: per path, acquire and release alternate.
    let entries = runtime().block_on(async {
        let coord = coordinator(db).await;
        coord
            .query_audit(&Caller::new("checker", "test"), AuditQueryRequest { limit: Some(10_000), ..Default::default() })
            .await
            .unwrap()
            .entries
    });
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
                assert_eq!(holder.remove(&path).as_deref(), Some(e.agent_id.as_str()), "audit id {}", e.id);
            }
            _ => {}
        }
    }
    assert_eq!(grants, acquired, "every grant is in the audit trail");
    assert!(holder.is_empty());
}

/// 4 processes claiming 2,000 tasks (with dependency chains): each claimed exactly once,
/// none lost, and no task claimed before its dependency completed.
pub fn tasks_are_claimed_once_across_processes(db: &str) {
    let rt = runtime();
    let boss = Caller::new("boss", "test");
    let ids: Vec<String> = rt.block_on(async {
        let coord = coordinator(db).await;
        let mut ids: Vec<String> = Vec::new();
        for k in 0..2000 {
            let depends_on = (k >= 10 && k % 10 == 0).then(|| vec![ids[k - 10].clone()]);
            let r = coord
                .submit_work(
                    &boss,
                    SubmitWorkRequest {
                        task_type: "t".into(),
                        task_description: format!("task {k}"),
                        priority: Some((k % 10) as i64 + 1),
                        depends_on,
                        input_data: None,
                    },
                )
                .await
                .unwrap();
            ids.push(r.task_id);
        }
        ids
    });
    let claimed = collect(spawn_workers("tasks", 4, db, &[]), "CLAIMED");
    let mut seen = HashSet::new();
    for id in &claimed {
        assert!(seen.insert(id.clone()), "task {id} claimed twice");
    }
    let all: HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(seen, all, "every task claimed exactly once, none lost");
    rt.block_on(async {
        let coord = coordinator(db).await;
        for k in (10..2000).step_by(10) {
            let t = coord.get_task(&boss, GetTaskRequest { task_id: ids[k].clone() }).await.unwrap().task;
            let dep = coord.get_task(&boss, GetTaskRequest { task_id: ids[k - 10].clone() }).await.unwrap().task;
            assert!(dep.completed_at.unwrap() <= t.claimed_at.unwrap(), "task {k} claimed before its dependency completed");
            assert_eq!(t.attempts, 1);
        }
    });
}

fn sqlite_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("coord.db").display().to_string();
    (dir, db)
}

#[test]
fn sqlite_locks_are_exclusive_across_processes() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_dir, db) = sqlite_db();
    locks_are_exclusive_across_processes(&db);
}

#[test]
fn sqlite_tasks_are_claimed_once_across_processes() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_dir, db) = sqlite_db();
    tasks_are_claimed_once_across_processes(&db);
}
