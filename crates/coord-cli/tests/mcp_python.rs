//! The official MCP Python SDK (`pip install mcp`) as a real client of `coord mcp` over
//! stdio and of `coord serve`'s `/mcp` over streamable HTTP. `.ci/run` installs it into
//! `.ci/venv`; elsewhere point `COORD_TEST_PYTHON` at a Python that has it. Without one
//! the tests say so loudly and skip — except under CI, where they fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{BIN, served_address, venv_tool};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_two_agents.py")
}

/// A Python with the MCP SDK, or `None` (after saying why) when there is none here.
fn python() -> Option<PathBuf> {
    venv_tool(
        "COORD_TEST_PYTHON",
        "bin/python",
        &["-c", "import mcp, httpx2"],
        "MCP Python SDK",
    )
}

/// An SDK client's type has no default profile (it would be read-only): give it one, as
/// its user would (`db`: `--db URL` or nothing for the repository's own database).
fn give_the_sdk_a_profile(cwd: &Path, db: &[&str]) {
    let out = Command::new(BIN)
        .current_dir(cwd)
        .args(db)
        .args(["profile", "assign", "claude-code-cli", "--type", "python_sdk"])
        .env_remove("COORD_AGENT_TYPE")
        .env_remove("COORD_AGENT_ID")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn run_script(python: &Path, args: &[&str]) {
    let out = Command::new(python).arg(script()).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\"ok\": true"), "{stdout}");
}

#[test]
fn python_sdk_over_stdio() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    give_the_sdk_a_profile(dir.path(), &[]);
    run_script(
        &python,
        &["stdio", "--coord", BIN, "--cwd", dir.path().to_str().unwrap()],
    );
}

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

/// The same scenario with both `coord mcp` processes sharing one PostgreSQL database.
#[test]
fn python_sdk_over_stdio_on_postgres() {
    let Some(python) = python() else { return };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if !rt.block_on(pg_support::available()) {
        return;
    }
    let db = rt.block_on(pg_support::TestDatabase::from_template());
    let dir = tempfile::tempdir().unwrap();
    give_the_sdk_a_profile(dir.path(), &["--db", &db.url]);
    run_script(
        &python,
        &[
            "stdio",
            "--coord",
            BIN,
            "--cwd",
            dir.path().to_str().unwrap(),
            "--db",
            &db.url,
        ],
    );
    drop(db);
}

#[test]
fn python_sdk_over_streamable_http() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("coord.db");
    give_the_sdk_a_profile(dir.path(), &["--db", db.to_str().unwrap()]);
    let mut server = Command::new(BIN)
        .args(["serve", "--port", "0", "--db", db.to_str().unwrap()])
        .env_remove("API_PORT")
        .env_remove("API_HOST")
        .env("COORDINATION_API_KEYS", "py-operator-key")
        .env(
            "COORDINATION_API_KEY_IDENTITIES",
            r#"{"py-bound-key": {"agent_id": "py-agent-a", "agent_type": "python_sdk"}}"#,
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = served_address(&mut server);
    run_script(
        &python,
        &[
            "http",
            "--url",
            &format!("{url}/mcp"),
            "--bound-key",
            "py-bound-key",
            "--operator-key",
            "py-operator-key",
        ],
    );
    // SIGTERM: graceful shutdown, exit code 0.
    let term = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = server.wait().unwrap();
    assert!(status.success(), "coord serve exits cleanly on SIGTERM: {status:?}");
}
