//! schemathesis (from PyPI, installed by `.ci/run` into `.ci/venv`) generates requests
//! from `GET /openapi.json` against a real `coord serve` and checks that nothing answers
//! 5xx and that every answer matches the documented statuses, content types and
//! schemas. Without schemathesis the test says so loudly and skips — except under CI.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_coord");

fn schemathesis() -> Option<PathBuf> {
    let candidate = std::env::var_os("COORD_TEST_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv/bin/schemathesis"));
    if Command::new(&candidate)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(candidate);
    }
    let required = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(
        !required,
        "schemathesis is required under CI but {} does not run",
        candidate.display()
    );
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPING schemathesis: {} not found. Run .ci/run once, or set COORD_TEST_SCHEMATHESIS.\n",
        candidate.display()
    );
    None
}

#[test]
fn schemathesis_finds_no_server_error_and_no_schema_violation() {
    let Some(st) = schemathesis() else { return };
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
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("address")
        .to_string();
    let out = Command::new(&st)
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
