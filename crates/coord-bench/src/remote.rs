//! Workloads through a real `coord serve` child process over loopback HTTP.

use crate::link::Link;
use crate::target::Scratch;
use crate::{BenchError, BenchOptions, BenchResult, Report};
use coord_remote::RemoteClient;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BENCH_KEY: &str = "coord-bench-operator-key";

/// `coord serve` on a free loopback port over the scratch database.
pub struct ServeChild {
    child: Child,
    pub url: String,
}

impl ServeChild {
    pub async fn start(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<ServeChild> {
        ServeChild::start_on(opts, scratch, &scratch.db_arg, 0).await
    }

    /// On `port` (0: a free one), reaching the database through `db_arg` (`chaos`: its
    /// gate, and the same port again after a restart).
    pub async fn start_on(opts: &BenchOptions, scratch: &Scratch, db_arg: &str, port: u16) -> BenchResult<ServeChild> {
        let mut child = Command::new(&opts.exe)
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--db",
                db_arg,
            ])
            .env("COORDINATION_API_KEYS", BENCH_KEY)
            .env("COORD_AUDIT_KEY_FILE", &scratch.audit_key)
            .env_remove("COORDINATION_API_KEY_IDENTITIES")
            .env_remove("COORDINATION_API_URL")
            .env_remove("COORD_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::Setup(format!("cannot run {} serve: {e}", opts.exe.display())))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Setup("no stdout".into()))?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .map_err(|e| BenchError::Setup(format!("coord serve did not start: {e}")))?;
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .ok_or_else(|| BenchError::Setup(format!("coord serve did not start: {line:?}")))?
            .to_string();
        Ok(ServeChild { child, url })
    }

    pub fn client(&self) -> BenchResult<RemoteClient> {
        Ok(RemoteClient::new(&self.url, Some(BENCH_KEY.into()))?)
    }

    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// `http`: the lock workload through `coord serve`.
/// With `--serve-rtt`, the clients reach the server through a [`Link`] adding it.
pub async fn run_http_locks(opts: &BenchOptions) -> BenchResult<Report> {
    let scratch = Scratch::create(&opts.db, "http", 1).await?;
    let outcome = async {
        let server = ServeChild::start(opts, &scratch).await?;
        let far = match opts.serve_rtt {
            Some(rtt) => Some(Link::start(&server.url, rtt).await?),
            None => None,
        };
        let url = far.as_ref().map_or(server.url.as_str(), |l| l.url.as_str());
        let coord = Arc::new(RemoteClient::new(url, Some(BENCH_KEY.into()))?);
        let report = crate::locks::through(opts, coord, scratch.backend, "http", scratch.round_trips()).await;
        server.stop().await;
        Ok(report)
    }
    .await;
    scratch.dispose().await;
    outcome
}
