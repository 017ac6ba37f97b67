//! schemathesis (from PyPI, installed by `.ci/run` into `.ci/venv`) generates requests
//! from `GET /openapi.json` against a real `coord serve` and checks that nothing answers
//! 5xx and that every answer matches the documented statuses, content types and
//! schemas. Without schemathesis the test says so loudly and skips — except under CI.

mod support;

use std::process::{Command, Stdio};
use support::{BIN, served_address, venv_tool};

#[test]
fn schemathesis_finds_no_server_error_and_no_schema_violation() {
    let Some(st) = venv_tool(
        "COORD_TEST_SCHEMATHESIS",
        "bin/schemathesis",
        &["--version"],
        "schemathesis",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(BIN)
        .args(["serve", "--port", "0", "--db"])
        .arg(dir.path().join("coord.db"))
        .env("COORDINATION_API_KEYS", "schemathesis-key")
        .env("COORD_PORTS_STATE", dir.path().join("ports.json"))
        .env_remove("API_PORT")
        .env_remove("API_HOST")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = served_address(&mut server);
    // schemathesis writes a cache into its working directory: keep it out of the tree.
    let out = Command::new(&st)
        .current_dir(dir.path())
        .args([
            "run",
            &format!("{url}/openapi.json"),
            "-H",
            "X-API-Key: schemathesis-key",
        ])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--max-examples",
            "25",
            "--seed",
            "20261121",
            "--no-color",
        ])
        .env("SCHEMATHESIS_HOOKS", "")
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("passed"), "{stdout}");
}
