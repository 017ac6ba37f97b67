//! `coord bench chaos` on both stores, briefly: agents at work while nodes are killed and
//! stopped, agents holding a claim are killed and (PostgreSQL) the database is cut off;
//! every kind of fault must have been injected and no invariant violated. A test binary
//! of its own: its scratch PostgreSQL database must not show up in `bench.rs`'s check
//! for leftovers, and its processes do not compete with other tests' (test binaries run
//! one after another).

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;
mod support;

use serde_json::Value;
use std::process::Command;
use support::BIN;

fn chaos(db: &str, seconds: &str, faults: &[&str]) {
    let out = Command::new(BIN)
        .args([
            "--json",
            "--db",
            db,
            "bench",
            "chaos",
            "--seconds",
            seconds,
            "--agents",
            "8",
        ])
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .env_remove("COORD_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no report: {stdout}\n{stderr}"));
    assert_eq!(out.status.code(), Some(0), "{report}\n{stderr}");
    assert_eq!(report["invariant_violations"], 0, "{report}\n{stderr}");
    let counts = &report["counts"];
    for fault in faults {
        assert!(counts[fault].as_u64() >= Some(1), "{fault} was not injected: {report}");
    }
    // Not vacuous: the faults cost requests, and there was work to check.
    assert!(
        report["errors"].as_u64() > Some(0),
        "no request failed under the faults: {report}"
    );
    for checked in [
        "checked_submissions",
        "checked_completions",
        "audited_completions",
        "chain_rows_checked",
    ] {
        assert!(counts[checked].as_u64() > Some(0), "nothing {checked}: {report}");
    }
}

#[test]
fn sqlite_keeps_every_invariant_under_faults() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chaos.db").to_string_lossy().into_owned();
    chaos(&db, "12", &["kill_node", "stop_node", "kill_agent"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_every_invariant_under_faults() {
    if !pg_support::available().await {
        return;
    }
    let url = pg_support::admin_url();
    tokio::task::spawn_blocking(move || chaos(&url, "16", &["kill_node", "stop_node", "kill_agent", "db_outage"]))
        .await
        .unwrap();
}
