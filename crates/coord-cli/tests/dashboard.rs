//! The live dashboard in a real browser: headless Chromium (Debian's `chromium`) driven
//! by Playwright for Python (`tests/python/dashboard_browser.py`) against `coord serve`,
//! on SQLite and on PostgreSQL, while a scripted scenario runs through the HTTP API.
//! `.ci/run` installs both; elsewhere set `COORD_TEST_PYTHON` (a Python with
//! `playwright`) and `COORD_TEST_CHROMIUM`. Without them the tests say so loudly and
//! skip — except under CI, where they fail. The screenshots land in
//! `target/dashboard-shots/<store>/` (`docs/img/` holds the ones the docs show).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{BIN, served_address, under_ci, venv_tool};

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

const KEY: &str = "dashboard-operator-key";

fn python() -> Option<PathBuf> {
    venv_tool(
        "COORD_TEST_PYTHON",
        "bin/python",
        &["-c", "import playwright.sync_api"],
        "dashboard browser (Playwright)",
    )
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("COORD_TEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        !under_ci(),
        "chromium is required under CI but {} is missing",
        path.display()
    );
    eprintln!(
        "\n*** SKIPPING the dashboard browser tests: no {} (apt-get install chromium, or set COORD_TEST_CHROMIUM).\n",
        path.display()
    );
    None
}

fn run_in_browser(store: &str, db: &str) {
    let (Some(python), Some(chromium)) = (python(), chromium()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let mut server = Command::new(BIN)
        .current_dir(dir.path())
        .args(["serve", "--port", "0", "--db", db])
        .env_remove("API_PORT")
        .env_remove("API_HOST")
        .env("COORDINATION_API_KEYS", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = served_address(&mut server);
    let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/dashboard-shots")
        .join(store);
    let out = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/dashboard_browser.py"))
        .args(["--url", &url, "--key", KEY, "--shots"])
        .arg(&shots)
        .arg("--chromium")
        .arg(chromium)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser scenario failed:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\"ok\": true"), "{stdout}");
    for view in ["dashboard", "dashboard-dark", "queue", "graph", "approvals", "audit"] {
        let png = shots.join(format!("{view}.png"));
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1000, "{} was not written", png.display());
    }
}

#[test]
fn dashboard_in_a_browser_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_in_browser("sqlite", dir.path().join("coord.db").to_str().unwrap());
}

#[test]
fn dashboard_in_a_browser_on_postgres() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if !rt.block_on(pg_support::available()) {
        return;
    }
    let db = rt.block_on(pg_support::TestDatabase::from_template());
    run_in_browser("postgres", &db.url);
    drop(db);
}
