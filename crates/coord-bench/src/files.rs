//! `coord bench files`: what confinement costs. For 4 KiB and 1 MiB files, confined reads
//! and atomic writes (`coord-files`: `openat2` beneath the workspace handle, `fstat`
//! checks, exclusive temporary file, rename, post-check) beside the plain `std::fs`
//! equivalents, interleaved in the same run (the independent baseline: a read is
//! `std::fs::read`, an atomic write is temporary file + `sync_all` + rename + directory
//! sync); and the whole tool — `read_file` / `write_file` through the coordinator, its
//! audit row committed to a scratch SQLite database — for scale.

use crate::guardrails::{Latency, latency};
use crate::target::{BenchDb, Scratch};
use coord_domain::access::Principal;
use coord_domain::files::{ReadFileRequest, WriteFileRequest};
use coord_files::{DEFAULT_MAX_BYTES, Workspace};
use coord_service::ops::files::{ReadFile, WriteFile};
use coord_service::{CoordConfig, Coordinator, DatabaseClock, WorkspaceDir, call};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The goal: confinement costs less than 20% over plain `std::fs` at 4 KiB (medians).
pub const GOAL_OVERHEAD: f64 = 0.20;
pub const SIZES: [usize; 2] = [4 * 1024, 1024 * 1024];

#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub latency: Latency,
    /// Operations per second at the mean latency (one client).
    pub ops_per_s: f64,
    pub mib_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileCase {
    pub op: &'static str,
    pub bytes: usize,
    pub confined: Timing,
    pub plain: Timing,
    /// confined p50 / plain p50 - 1.
    pub overhead_p50: f64,
    /// `read_file` / `write_file` through the coordinator (audit row included).
    pub tool: Timing,
}

#[derive(Debug, Clone, Serialize)]
pub struct FilesReport {
    pub workload: &'static str,
    pub rounds: usize,
    pub cases: Vec<FileCase>,
    pub goal_overhead: f64,
    pub goals_met: bool,
}

fn timing(ns: Vec<u64>, bytes: usize) -> Timing {
    let mean = ns.iter().sum::<u64>() as f64 / ns.len().max(1) as f64;
    let ops = if mean > 0.0 { 1e9 / mean } else { 0.0 };
    Timing {
        latency: latency(ns),
        ops_per_s: ops,
        mib_per_s: ops * bytes as f64 / (1024.0 * 1024.0),
    }
}

fn elapsed(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

fn plain_atomic_write(dir: &Path, name: &str, content: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".plain-{}.tmp", uuid::Uuid::new_v4().simple()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(content)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

type BenchResult<T> = Result<T, String>;

/// Runs every case: `rounds` reads per size, a tenth as many writes (each syncs twice).
pub async fn run(rounds: usize, dir: &Path) -> BenchResult<FilesReport> {
    let rounds = rounds.max(10);
    let ws_dir = dir.join(format!("coord-bench-files-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&ws_dir).map_err(|e| format!("cannot create {}: {e}", ws_dir.display()))?;
    let outcome = measure(rounds, &ws_dir).await;
    let _ = std::fs::remove_dir_all(&ws_dir);
    outcome
}

async fn measure(rounds: usize, ws_dir: &Path) -> BenchResult<FilesReport> {
    let ws = Workspace::open(ws_dir).map_err(|e| e.to_string())?;
    let scratch = Scratch::create(
        &BenchDb::Sqlite {
            dir: ws_dir.join(".coord"),
        },
        "files",
        1,
    )
    .await
    .map_err(|e| e.to_string())?;
    let coord = Coordinator::new(
        scratch.store(),
        Arc::new(DatabaseClock),
        CoordConfig {
            workspaces: vec![WorkspaceDir {
                dir: ws_dir.to_path_buf(),
                prefix: String::new(),
            }],
            ..CoordConfig::default()
        },
    );
    let who = Principal::local(coord_domain::Caller::new("bench", crate::AGENT_TYPE));
    let mut cases = Vec::new();
    let io = |e: std::io::Error| e.to_string();
    for bytes in SIZES {
        let name = format!("f{bytes}.txt");
        let content = "x".repeat(bytes);
        std::fs::write(ws_dir.join(&name), &content).map_err(io)?;
        // Reads, interleaved (the order alternates so neither always runs first).
        let (mut confined, mut plain, mut tool) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..rounds {
            for first in [i % 2 == 0, i % 2 != 0] {
                if first {
                    let t = Instant::now();
                    std::hint::black_box(ws.read(&name, DEFAULT_MAX_BYTES).map_err(|e| e.to_string())?);
                    confined.push(elapsed(t));
                } else {
                    let t = Instant::now();
                    std::hint::black_box(std::fs::read(ws_dir.join(&name)).map_err(io)?);
                    plain.push(elapsed(t));
                }
            }
        }
        for _ in 0..(rounds / 4).max(10) {
            let req = ReadFileRequest {
                path: name.clone(),
                ..Default::default()
            };
            let t = Instant::now();
            call::<ReadFile, _>(&coord, &who, req)
                .await
                .map_err(|e| e.to_string())?;
            tool.push(elapsed(t));
        }
        cases.push(case("read", bytes, confined, plain, tool));

        let (mut confined, mut plain, mut tool) = (Vec::new(), Vec::new(), Vec::new());
        let writes = (rounds / 10).max(10);
        for i in 0..writes {
            for first in [i % 2 == 0, i % 2 != 0] {
                let t = Instant::now();
                if first {
                    ws.prepare_write(&name, content.as_bytes(), DEFAULT_MAX_BYTES, false)
                        .and_then(|p| p.commit())
                        .map_err(|e| e.to_string())?;
                    confined.push(elapsed(t));
                } else {
                    plain_atomic_write(ws_dir, &name, content.as_bytes()).map_err(io)?;
                    plain.push(elapsed(t));
                }
            }
        }
        for _ in 0..(writes / 2).max(10) {
            let req = WriteFileRequest {
                path: name.clone(),
                content: content.clone(),
                ..Default::default()
            };
            let t = Instant::now();
            call::<WriteFile, _>(&coord, &who, req)
                .await
                .map_err(|e| e.to_string())?;
            tool.push(elapsed(t));
        }
        cases.push(case("write", bytes, confined, plain, tool));
    }
    scratch.dispose().await;
    let goals_met = cases
        .iter()
        .filter(|c| c.bytes == SIZES[0])
        .all(|c| c.overhead_p50 < GOAL_OVERHEAD);
    Ok(FilesReport {
        workload: "files",
        rounds,
        cases,
        goal_overhead: GOAL_OVERHEAD,
        goals_met,
    })
}

fn case(op: &'static str, bytes: usize, confined: Vec<u64>, plain: Vec<u64>, tool: Vec<u64>) -> FileCase {
    let (confined, plain, tool) = (timing(confined, bytes), timing(plain, bytes), timing(tool, bytes));
    FileCase {
        op,
        bytes,
        overhead_p50: confined.latency.p50_ns as f64 / plain.latency.p50_ns.max(1) as f64 - 1.0,
        confined,
        plain,
        tool,
    }
}
