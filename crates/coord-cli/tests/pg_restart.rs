//! PostgreSQL restarted under load. This binary holds one test on purpose: it stops the
//! shared server, which no other test may be using meanwhile (`cargo test` runs test
//! binaries one after another).
//!
//! Needs `pg_ctlcluster` and the right to use it (root, or the postgres user); skipped
//! loudly without, failed under CI.

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

use coord_cli::context::DbTarget;
use coord_domain::queue::{GetTaskRequest, SubmitWorkRequest};
use coord_domain::{Caller, ErrorCode};
use coord_service::CoordinationExt as _;
use coord_service::{CoordConfig, Coordinator, DatabaseClock};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Claude Code's type: its built-in profile (claude-code-cli) may lock and take tasks.
const AGENT_TYPE: &str = "claude_code";

fn cluster_version() -> Option<String> {
    let mut versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    versions.sort();
    versions.pop()
}

fn pg_ctl(version: &str, action: &str) {
    let status = Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", version, "main", action, "-m", "fast"])
        .status()
        .expect("run pg_ctlcluster");
    assert!(status.success(), "pg_ctlcluster {action} failed");
}

/// Starts the server again if the test fails while it is down, so later tests find it.
struct RestartOnDrop(String);

impl Drop for RestartOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", &self.0, "main", "start"])
            .status();
    }
}

struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<String>>>,
    refused: Arc<AtomicUsize>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(coord: &Coordinator) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(AtomicUsize::new(0));
        let workers = (0..4)
            .map(|w| {
                let (coord, stop, acked, refused) = (coord.clone(), stop.clone(), acked.clone(), refused.clone());
                tokio::spawn(async move {
                    let me = Caller::new(format!("loader-{w}"), AGENT_TYPE);
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let req = SubmitWorkRequest {
                            task_type: "load".into(),
                            task_description: format!("{w}-{n}"),
                            ..Default::default()
                        };
                        match coord.submit_work(&me, req).await {
                            Ok(r) => acked.lock().unwrap().push(r.task_id),
                            Err(e) => {
                                assert_eq!(e.code, ErrorCode::DatabaseUnavailable, "unexpected failure: {e:?}");
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            acked,
            refused,
            workers,
        }
    }

    fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    async fn until_acked(&self, n: usize) {
        while self.acked() < n {
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_mid_load_loses_no_acknowledged_write() {
    if !pg_support::available().await {
        return;
    }
    let Some(version) = cluster_version().filter(|_| Command::new("pg_ctlcluster").arg("--help").output().is_ok())
    else {
        assert!(!pg_support::required(), "pg_ctlcluster is required under CI");
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPING the PostgreSQL restart test: no pg_ctlcluster here.\n"
        );
        return;
    };
    let db = pg_support::TestDatabase::from_template().await;
    let target = DbTarget::parse(&db.url, Path::new("/")).unwrap();
    let store = coord_cli::open::open_store_with(&target, 4).await.unwrap();
    let coord = Coordinator::new(store, Arc::new(DatabaseClock), CoordConfig::default());
    let load = Load::start(&coord);
    load.until_acked(200).await;

    let _guard = RestartOnDrop(version.clone());
    tokio::task::spawn_blocking({
        let v = version.clone();
        move || pg_ctl(&v, "stop")
    })
    .await
    .unwrap();
    // While the server is down every call is refused as unavailable, never a panic or hang.
    let probe = Caller::new("probe", AGENT_TYPE);
    for _ in 0..5 {
        let e = coord
            .submit_work(
                &probe,
                SubmitWorkRequest {
                    task_type: "p".into(),
                    task_description: "p".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
    }
    let before_restart = load.acked();
    tokio::task::spawn_blocking(move || pg_ctl(&version, "start"))
        .await
        .unwrap();

    // The pool recovers by itself: the same coordinator, no restart of coord.
    load.until_acked(before_restart + 200).await;
    load.stop.store(true, Ordering::Relaxed);
    for w in load.workers {
        w.await.unwrap();
    }
    assert!(load.refused.load(Ordering::Relaxed) > 0, "the load saw the outage");
    let acked = load.acked.lock().unwrap().clone();
    for id in &acked {
        let t = coord.get_task(&probe, GetTaskRequest { task_id: id.clone() }).await;
        assert!(t.is_ok(), "acknowledged task {id} was lost: {t:?}");
    }
}
