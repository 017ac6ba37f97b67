//! `coord bench` smoke runs: every workload for about a second on both stores, checking
//! correctness only (no errors, no invariant violations, the report's shape, scratch
//! databases removed) — never speed.

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;
mod support;

use serde_json::Value;
use std::process::Command;
use support::BIN;

/// Runs `coord bench` with `--json`; returns the exit code and the JSON lines.
fn bench(db: &str, args: &[&str]) -> (i32, Vec<Value>, String) {
    let out = Command::new(BIN)
        .args(["--json", "--db", db, "bench"])
        .args(args)
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .env_remove("COORD_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\n{stderr}")))
        .collect();
    (out.status.code().unwrap_or(-1), lines, stderr)
}

fn assert_clean(reports: &[Value], modes: &[&str], stderr: &str) {
    let got: Vec<&str> = reports.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(got, modes, "{reports:?}\n{stderr}");
    for r in reports {
        for field in [
            "workload",
            "backend",
            "clients",
            "ops",
            "ops_per_sec",
            "p50_us",
            "p99_us",
            "errors",
            "invariant_violations",
        ] {
            assert!(r.get(field).is_some(), "{field} missing in {r}");
        }
        assert_eq!(r["errors"], 0, "{r}\n{stderr}");
        assert_eq!(r["invariant_violations"], 0, "{r}\n{stderr}");
        assert!(r["ops"].as_u64().unwrap() > 0, "{r}\n{stderr}");
        assert!(r["p99_us"].as_u64().unwrap() >= r["p50_us"].as_u64().unwrap(), "{r}");
    }
}

const SHORT: &[&str] = &["--seconds", "1", "--clients", "2"];

fn sqlite_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db").to_string_lossy().into_owned();
    (dir, db)
}

fn assert_scratch_removed(dir: &tempfile::TempDir) {
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "scratch files left behind: {left:?}");
}

/// Every workload, briefly, against `db`; each must run clean. Returns every report.
/// `limit` is the independent client `locks --compare` runs (python-sqlite3, pgbench).
fn every_workload_runs_clean(db: &str, limit: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for (workload, extra, modes) in [
        ("locks", &["--compare"][..], &["raw", limit, "service"][..]),
        ("queue", &["--compare"][..], &["raw", "service"][..]),
        ("mcp", &["--compare"][..], &["service", "mcp"][..]),
        ("http", &["--compare"][..], &["service", "http"][..]),
        ("agents", &["--agents", "20", "--time-scale", "30"][..], &["agents"][..]),
        // Two `coord serve` nodes on the one database, the agents split across them.
        (
            "agents",
            &["--agents", "20", "--time-scale", "30", "--nodes", "2"][..],
            &["agents"][..],
        ),
    ] {
        let mut args = vec![workload];
        args.extend_from_slice(SHORT);
        args.extend_from_slice(extra);
        let (code, reports, stderr) = bench(db, &args);
        assert_eq!(code, 0, "{workload}: {stderr}");
        assert_clean(&reports, modes, &stderr);
        let last = reports.last().unwrap();
        if let Some(baseline) = last.get("baseline") {
            assert!(baseline["ratio"].as_f64().unwrap() > 0.0, "{baseline}");
        }
        if workload == "agents" {
            let nodes = if extra.contains(&"--nodes") { 2 } else { 1 };
            assert_eq!(last["counts"]["nodes"], nodes, "{last}");
        }
        if workload == "locks" {
            // The independent limit ran, and the service's figure is read against it.
            assert_eq!(last["limit"]["mode"], limit, "{last}");
            assert!(last["limit"]["ratio"].as_f64().unwrap() > 0.0, "{last}");
            assert!(last.get("limit_unavailable").is_none(), "{last}");
        }
        all.extend(reports);
    }
    all
}

#[test]
fn sqlite_workloads_run_clean() {
    let (dir, db) = sqlite_dir();
    every_workload_runs_clean(&db, "python-sqlite3");
    assert_scratch_removed(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workloads_run_clean() {
    if !pg_support::available().await {
        return;
    }
    let url = pg_support::admin_url();
    let server = url.clone();
    // The recall bench runs here, not in a test of its own: its live scratch database
    // would otherwise show up in the leftover check below.
    let reports = tokio::task::spawn_blocking(move || {
        recall_scores(&server, "postgres");
        round_trips_are_counted(&server);
        every_workload_runs_clean(&server, "pgbench")
    })
    .await
    .unwrap();
    assert!(reports.iter().all(|r| r["backend"] == "postgres"));
    // Scratch databases are dropped.
    let admin = pg_support::connect(&url).await;
    let left = admin
        .query(
            "SELECT datname FROM pg_database WHERE datname LIKE 'coord_bench_%'",
            &[],
        )
        .await
        .unwrap();
    assert!(left.is_empty(), "scratch databases left behind: {}", left.len());
}

/// `--rtt`: the database reached through the counting relay; round trips reported per
/// operation, and a hook with the repository's coordinator running pays the
/// operations' round trips only, not a connection of its own (issue 56).
fn round_trips_are_counted(server: &str) {
    let (code, reports, stderr) = bench(server, &["locks", "--clients", "1", "--seconds", "1", "--rtt", "0"]);
    assert_eq!(code, 0, "{stderr}");
    let r = &reports[0];
    assert_eq!(r["rtt_ms"], 0.0, "{r}");
    // An average: the first calls also prepare their statements (tests/round_trips.rs
    // holds each operation to its budget exactly).
    for (op, most) in [("acquire_lock", 3.5), ("release_lock", 2.5)] {
        let n = r["per_operation"][op]["round_trips"]
            .as_f64()
            .unwrap_or_else(|| panic!("{op}: {r}"));
        assert!(n >= 1.0 && n <= most, "{op}: {n} round trips: {r}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "--json", "--db", server, "bench", "hooks", "--rounds", "5", "--rtt", "0",
        ])
        .env("TMPDIR", tmp.path())
        .env_remove("COORD_DATABASE_URL")
        .output()
        .unwrap();
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["backend"], "postgres", "{r}");
    let trips = |setting: &str| {
        r["round_trips"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p[0] == setting))
            .and_then(|p| p[1].as_f64())
            .unwrap_or_else(|| panic!("{setting}: {r}"))
    };
    // Alone, each hook connects, authenticates and checks the schema (about 20);
    // through the coordinator, a Write pays check_guardrails and check_edit, a Bash
    // check_guardrails, one each once prepared: under 3 on average today.
    assert!(trips("alone") >= 10.0, "{r}");
    assert!(trips("coordinator") <= 4.0, "{r}");
}

#[test]
fn bad_options_are_usage_errors() {
    let (_dir, db) = sqlite_dir();
    for args in [
        &["locks", "--clients", "0"][..],
        &["locks", "--seconds", "0"][..],
        &["locks", "--seconds", "NaN"][..],
        &["locks", "--seconds", "inf"][..],
        &["agents", "--time-scale", "0"][..],
        &["agents", "--nodes", "0"][..],
        &["locks", "--nodes", "2"][..],
        &["http", "--raw"][..],
        &["locks", "--raw", "--compare"][..],
        // No network between coord and a SQLite file; no database at all for guardrails.
        &["locks", "--rtt", "10"][..],
        &["guardrails", "--rtt", "10"][..],
        // --serve-rtt is the link between the clients and coord serve: http only.
        &["locks", "--serve-rtt", "10"][..],
        &["http", "--serve-rtt", "NaN"][..],
        &["http", "--serve-rtt", "20000"][..],
        &["nonsense"][..],
    ] {
        let (code, _, stderr) = bench(&db, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `--serve-rtt`: the clients reach `coord serve` through the relay (agents far from a
/// server that sits next to the database), and the report says so.
#[test]
fn agents_far_from_coord_serve_are_measured() {
    let (_dir, db) = sqlite_dir();
    let (code, reports, stderr) = bench(&db, &["http", "--clients", "1", "--seconds", "1", "--serve-rtt", "0"]);
    assert_eq!(code, 0, "{stderr}");
    let r = &reports[0];
    assert_eq!(r["serve_rtt_ms"], 0.0, "{r}");
    assert!(r["ops"].as_u64().unwrap_or(0) > 0, "{r}");
    assert_eq!(r["errors"], 0, "{r}");
}

/// Ctrl-C in the middle of a run still removes the scratch database.
#[test]
fn an_interrupted_run_removes_its_scratch_database() {
    let (dir, db) = sqlite_dir();
    let child = Command::new(BIN)
        .args([
            "--json",
            "--db",
            &db,
            "bench",
            "locks",
            "--seconds",
            "60",
            "--clients",
            "1",
        ])
        .env_remove("COORD_DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the scratch file exists, i.e. the run is under way.
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_dir(dir.path()).unwrap().next().is_none() {
        assert!(std::time::Instant::now() < guard, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert_scratch_removed(&dir);
}

/// Runs a bench workload that needs no database with its scratch files under a fresh
/// TMPDIR; answers its JSON report (its exit code says only whether a goal was met).
fn scratch_bench(workload: &str, rounds: &str) -> (Value, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--json", "bench", workload, "--rounds", rounds])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(matches!(out.status.code(), Some(0 | 1)), "{r}");
    (r, tmp)
}

/// `coord bench files`: every case measured (confined, plain, through the tool), its
/// scratch workspace and database removed. Correctness only: the exit code says whether
/// the overhead goal was met, which a loaded test machine may miss.
#[test]
fn files_measures_confinement_beside_plain_io() {
    let (r, tmp) = scratch_bench("files", "20");
    let cases = r["cases"].as_array().unwrap();
    let kinds: Vec<(String, u64)> = cases
        .iter()
        .map(|c| (c["op"].as_str().unwrap().to_string(), c["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("read", 4096), ("write", 4096), ("read", 1048576), ("write", 1048576)].map(|(o, b)| (o.to_string(), b))
    );
    for c in cases {
        for part in ["confined", "plain", "tool"] {
            assert!(c[part]["latency"]["samples"].as_u64().unwrap() >= 10, "{part}: {c}");
            assert!(c[part]["latency"]["p50_ns"].as_u64().unwrap() > 0, "{part}: {c}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the scratch workspace is removed: {left:?}");
}

/// `coord bench hooks`: the PreToolUse hook and process start measured in one run, the
/// scratch repository removed (correctness only; the ratio is the benchmark's business).
#[test]
fn hooks_measures_the_pre_tool_use_hook_beside_process_start() {
    let (r, tmp) = scratch_bench("hooks", "5");
    // Process start is measured beside each setting's rounds.
    assert_eq!(r["baseline"]["samples"], 10, "{r}");
    let cases = r["cases"].as_array().unwrap();
    let settings: Vec<&str> = cases.iter().map(|c| c["setting"].as_str().unwrap()).collect();
    // Each payload alone (the hook opens the database) and with the repository's
    // coordinator running (a `coord mcp` of the checkout started it).
    assert_eq!(settings, ["alone", "alone", "coordinator", "coordinator"], "{r}");
    for c in cases {
        assert_eq!(c["latency"]["samples"], 5, "{c}");
        assert!(c["ratio_p50"].as_f64().unwrap() > 0.0, "{c}");
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the scratch repository is removed: {left:?}");
}

/// `coord bench proxy`: direct, forwarded and tunnelled requests measured in one run, the
/// bulk transfers complete, the scratch database removed (correctness only).
#[test]
fn proxy_measures_requests_beside_direct_connections() {
    let (r, tmp) = scratch_bench("proxy", "10");
    for kind in ["direct", "forward", "tunnel"] {
        assert_eq!(r[kind]["samples"], 10, "{kind}: {r}");
        assert!(r[kind]["p50_ns"].as_u64().unwrap() > 0, "{kind}: {r}");
    }
    assert!(
        r["direct_mib_per_s"].as_f64().unwrap() > 0.0 && r["tunnel_mib_per_s"].as_f64().unwrap() > 0.0,
        "{r}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the scratch database is removed: {left:?}");
}

/// `coord bench guardrails`: no database; the corpus scores and the latency report, and a
/// corpus of one's own (with a wrong label the exit code reports).
#[test]
fn guardrails_scores_the_corpus() {
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(["--json", "bench", "guardrails", "--rounds", "1"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The exit code also judges the p99 goal, which a debug build on a busy test machine
    // may miss: speed is the benchmark's business, not the test's (the scores are).
    let scores_met = r["blocked_ratio"].as_f64().unwrap() >= 0.99 && r["flagged_ratio"].as_f64().unwrap() < 0.01;
    assert!(scores_met, "{r}");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{r}");
    assert!(r["score"]["destructive"].as_u64().unwrap() >= 300, "{r}");
    assert!(r["score"]["benign"].as_u64().unwrap() >= 300, "{r}");
    assert_eq!(r["score"]["mistakes"], serde_json::json!([]), "{r}");
    for field in ["p50_ns", "p99_ns", "max_ns", "samples"] {
        assert!(
            r["analysis"][field].is_u64() && r["parse_only"][field].is_u64(),
            "{field}: {r}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine.jsonl");
    std::fs::write(
        &mine,
        "{\"command\": \"rm -rf /\", \"label\": \"benign\", \"source\": \"test\"}\n",
    )
    .unwrap();
    let out = run(&["--corpus", mine.to_str().unwrap()]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), r["score"]["flagged"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );
    std::fs::write(&mine, "not json\n").unwrap();
    let out = run(&["--corpus", mine.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

/// `coord bench recall` (on PostgreSQL from `postgres_workloads_run_clean`): the ranking's scores on the judged fixture (they
/// do not depend on speed) reach the goals and beat the baseline; the speed part runs
/// with a few hundred extra memories (its latency is reported, not asserted).
fn recall_scores(db: &str, backend: &str) {
    let (code, lines, stderr) = bench(db, &["recall", "--memories", "300", "--rounds", "1"]);
    assert!(code == 0 || code == 1, "{code}: {stderr}");
    let r = &lines[0];
    assert_eq!(r["backend"], backend);
    let (coord, base) = (&r["coord"]["overall"], &r["baseline"]["overall"]);
    let hit = coord["hit_at_3"].as_f64().unwrap();
    let mrr = coord["mrr_at_10"].as_f64().unwrap();
    assert!(hit >= 0.8 && mrr >= 0.65, "{r}");
    assert!(
        hit > base["hit_at_3"].as_f64().unwrap() && mrr > base["mrr_at_10"].as_f64().unwrap(),
        "{r}"
    );
    assert_eq!(coord["queries"], 47);
    assert_eq!(r["negative_queries"], 4);
    assert_eq!(r["speed"]["memories"], 454);
    assert_eq!(r["speed"]["recalls"], 47);
}

#[test]
fn recall_scores_the_fixture_on_sqlite() {
    let (dir, db) = sqlite_dir();
    recall_scores(&db, "sqlite");
    assert_scratch_removed(&dir);
}
