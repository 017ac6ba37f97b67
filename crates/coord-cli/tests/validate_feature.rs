//! The shipped `validate-feature` skill, run for real: it leases ports, starts an
//! isolated `coord serve` on them, runs its checks through the remote CLI and releases
//! the lease. Also pins the spec's rule that the skill never hard-codes a port.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_coord");

fn skill_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../skills/validate-feature")
}

#[test]
fn validate_feature_skill_passes_and_releases_its_ports() {
    let state = tempfile::tempdir().unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let ports_state = state.path().join("ports.json");
    // A base unlikely to collide with another test run on the same machine.
    let base = 20_000 + (std::process::id() % 400) * 100;
    let out = Command::new(skill_dir().join("validate.sh"))
        .current_dir(worktree.path())
        .env("COORD", BIN)
        .env("COORD_PORTS_STATE", &ports_state)
        .env("PORT_ALLOC_BASE", base.to_string())
        .env("VALIDATE_SESSION", "validate-test")
        // As in a cloud agent: remote mode configured; the skill must still work locally.
        .env("COORDINATION_API_URL", "http://127.0.0.1:9/not-here")
        .env("COORDINATION_API_KEY", "unrelated")
        .env_remove("COORD_DATABASE_URL")
        .env_remove("AGENT_COORDINATOR_REST_PORT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "validate.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    assert!(
        stdout.contains(&format!("rest={}", base + 1)),
        "the server ran on the leased REST port: {stdout}"
    );

    let status = Command::new(BIN)
        .args(["--json", "ports", "status"])
        .env("COORD_PORTS_STATE", &ports_state)
        .env("PORT_ALLOC_BASE", base.to_string())
        .output()
        .unwrap();
    assert!(status.status.success());
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["allocations"], serde_json::json!([]), "lease released: {status}");
}

#[test]
fn validate_feature_skill_takes_every_port_from_the_environment() {
    for entry in std::fs::read_dir(skill_dir()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for literal in ["localhost:3000", "127.0.0.1:3000", "localhost:54322", ":3000/"] {
                assert!(
                    !line.contains(literal),
                    "{}:{}: hard-coded port `{literal}`: {line}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    let checks = std::fs::read_to_string(skill_dir().join("checks.sh")).unwrap();
    assert!(checks.contains("${AGENT_COORDINATOR_REST_PORT:-3000}"));
    let validate = std::fs::read_to_string(skill_dir().join("validate.sh")).unwrap();
    for var in [
        "AGENT_COORDINATOR_DB_PORT=\"$AGENT_COORDINATOR_DB_PORT\"",
        "AGENT_COORDINATOR_REST_PORT=\"$AGENT_COORDINATOR_REST_PORT\"",
        "AGENT_COORDINATOR_REALTIME_PORT=\"$AGENT_COORDINATOR_REALTIME_PORT\"",
    ] {
        assert!(validate.contains(var), "docker compose gets {var}");
    }
}

#[test]
fn validate_feature_skill_stops_when_no_ports_are_left() {
    let state = tempfile::tempdir().unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let ports_state = state.path().join("ports.json");
    let base = 30_000 + (std::process::id() % 300) * 100;
    let lease = |session: &str| {
        Command::new(BIN)
            .args(["ports", "allocate", session])
            .env("COORD_PORTS_STATE", &ports_state)
            .env("PORT_ALLOC_BASE", base.to_string())
            .env("PORT_ALLOC_MAX_SESSIONS", "1")
            .output()
            .unwrap()
    };
    assert!(lease("someone-else").status.success());
    let out = Command::new(skill_dir().join("validate.sh"))
        .current_dir(worktree.path())
        .env("COORD", BIN)
        .env("COORD_PORTS_STATE", &ports_state)
        .env("PORT_ALLOC_BASE", base.to_string())
        .env("PORT_ALLOC_MAX_SESSIONS", "1")
        // Stale values a failed allocation must not fall back on.
        .env("AGENT_COORDINATOR_REST_PORT", "1")
        .env_remove("COORDINATION_API_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "validate.sh went on without ports");
    assert!(stderr.contains("no ports"), "{stderr}");
}
