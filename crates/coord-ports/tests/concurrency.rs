//! Processes allocating at once never share a port: the test binary re-executes itself
//! as 8 allocating processes over one state file.

use coord_domain::ports::PortConfig;
use coord_ports::PortAllocator;
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

/// A local process: administers the machine's blocks.
static ROOT: std::sync::LazyLock<coord_domain::ports::Claimant> =
    std::sync::LazyLock::new(|| coord_domain::ports::Claimant {
        agent_id: "root".into(),
        admin: true,
    });

const ROLE: &str = "COORD_PORTS_WORKER";

fn allocator(path: PathBuf) -> PortAllocator {
    PortAllocator::new(
        path,
        PortConfig {
            max_sessions: 20,
            ..PortConfig::default()
        },
    )
}

#[test]
fn ports_worker() {
    let Ok(index) = std::env::var(ROLE) else { return };
    let a = allocator(PathBuf::from(std::env::var("COORD_PORTS_STATE_FILE").unwrap()));
    for k in 0..2 {
        let r = a
            .allocate(&format!("proc-{index}-{k}"), &ROOT, chrono::Utc::now())
            .expect("a block is free");
        let p = &r.allocation;
        println!("PORTS {} {} {} {}", p.db_port, p.rest_port, p.realtime_port, p.api_port);
    }
}

#[test]
fn eight_processes_never_share_a_port() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("ports.json");
    let children: Vec<_> = (0..8)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args(["ports_worker", "--exact", "--nocapture", "--test-threads", "1"])
                .env(ROLE, i.to_string())
                .env("COORD_PORTS_STATE_FILE", &state)
                .output_async()
        })
        .collect();
    let mut ports = HashSet::new();
    let mut count = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some(at) = line.find("PORTS ") else { continue };
            for p in line[at + 6..].split_whitespace() {
                assert!(ports.insert(p.to_string()), "port {p} handed out twice");
                count += 1;
            }
        }
    }
    assert_eq!(count, 8 * 2 * 4, "every process got its two blocks");
    let status = allocator(state).status(chrono::Utc::now()).unwrap();
    assert_eq!(status.allocations.len(), 16);
}

trait SpawnExt {
    fn output_async(&mut self) -> std::process::Child;
}

impl SpawnExt for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}
