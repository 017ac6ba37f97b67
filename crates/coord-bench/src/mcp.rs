//! `mcp`: acquire_lock/release_lock round trips through `coord mcp` child processes
//! over stdio, measured from the client side of the pipe (one process per client, as
//! one agent runs one MCP server). On SQLite the children share the repository's
//! coordinator process they start (local_server.rs in coord-runtime), unless the bench runs
//! with `COORD_LOCAL_SERVER=off`, when each opens the database itself. Ops are acquire+release pairs, as in `locks`; each
//! tool call's own latency is in `per_operation`.

use crate::driver::{Rng, Shared, Tally, bench_path, report, run_clients};
use crate::target::Scratch;
use crate::{BenchError, BenchOptions, BenchResult, Report};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub(crate) struct McpClient {
    pub(crate) child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl McpClient {
    async fn start(opts: &BenchOptions, scratch: &Scratch, agent: &str) -> BenchResult<McpClient> {
        // The scratch database is dropped after the run: nothing to wait for.
        McpClient::spawn(opts, scratch, agent, "0", None).await
    }

    /// `coord mcp` as `agent`, with that grace period, in `cwd` (where its checkout's
    /// `.coord/processes` is: siblings reap each other there), initialised.
    pub(crate) async fn spawn(
        opts: &BenchOptions,
        scratch: &Scratch,
        agent: &str,
        grace: &str,
        cwd: Option<&std::path::Path>,
    ) -> BenchResult<McpClient> {
        let mut command = Command::new(&opts.exe);
        if let Some(dir) = cwd {
            command.current_dir(dir);
        }
        let mut child = command
            .args(["--db", &scratch.db_arg, "mcp"])
            .env("COORD_AGENT_ID", agent)
            .env("COORD_AGENT_TYPE", crate::AGENT_TYPE)
            .env("COORD_RELEASE_GRACE_SECONDS", grace)
            .env("COORD_AUDIT_KEY_FILE", &scratch.audit_key)
            .env_remove("COORDINATION_API_URL")
            .env_remove("COORD_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::Setup(format!("cannot run {} mcp: {e}", opts.exe.display())))?;
        let stdin = child.stdin.take().ok_or_else(|| BenchError::Setup("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Setup("no stdout".into()))?;
        let mut c = McpClient {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "coord-bench", "version": env!("CARGO_PKG_VERSION")}}),
        )
        .await?;
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(c)
    }

    async fn send(&mut self, message: &Value) -> BenchResult<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| BenchError::Setup(format!("coord mcp stdin: {e}")))
    }

    async fn request(&mut self, method: &str, params: Value) -> BenchResult<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| BenchError::Setup(format!("coord mcp stdout: {e}")))?
                .ok_or_else(|| BenchError::Setup("coord mcp closed its stdout".into()))?;
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| BenchError::Setup(format!("coord mcp wrote a line that is not JSON ({e})")))?;
            if v["id"] == json!(id) {
                if let Some(err) = v.get("error") {
                    return Err(BenchError::Setup(format!("{method}: {err}")));
                }
                return Ok(v["result"].clone());
            }
        }
    }

    /// A tool's structured result; a refusal is a result, an `isError` is an error.
    pub(crate) async fn tool(&mut self, name: &str, args: Value) -> BenchResult<Value> {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        if r["isError"] == json!(true) {
            return Err(BenchError::Setup(format!("{name}: {}", r["structuredContent"])));
        }
        Ok(r["structuredContent"].clone())
    }

    pub(crate) async fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait().await;
    }
}

pub async fn run(opts: &BenchOptions) -> BenchResult<Report> {
    let scratch = Scratch::create(&opts.db, "mcp", 1).await?;
    let outcome = measure(opts, &scratch).await;
    scratch.dispose().await;
    outcome
}

async fn measure(opts: &BenchOptions, scratch: &Scratch) -> BenchResult<Report> {
    // Start (and initialise) every server before the clock runs.
    let mut clients = Vec::new();
    for i in 0..opts.clients {
        clients.push(McpClient::start(opts, scratch, &format!("bench-mcp-{i}")).await?);
    }
    let clients: Vec<_> = clients.into_iter().map(|c| std::sync::Mutex::new(Some(c))).collect();
    let clients = std::sync::Arc::new(clients);
    let shared = Shared::new(opts.seconds);
    // Per unit only: the children's round trips interleave.
    shared.count_round_trips(scratch.round_trips(), false);
    let paths = opts.paths;
    let label = format!("mcp {}", scratch.backend);
    let finished = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (tally, elapsed) = run_clients(opts, label, &shared, opts.clients, |i, shared| {
        let clients = clients.clone();
        let finished = finished.clone();
        async move {
            let mut tally = Tally::default();
            let Some(mut client) = clients[i].lock().ok().and_then(|mut c| c.take()) else {
                return tally;
            };
            let mut rng = Rng::new(i as u64 + 1);
            while shared.running() {
                let path = bench_path(&mut rng, paths);
                let t0 = Instant::now();
                let acquired = match client.tool("acquire_lock", json!({"file_path": path})).await {
                    Ok(v) => v,
                    Err(e) => {
                        shared.error("acquire_lock", e);
                        break;
                    }
                };
                tally.op("acquire_lock", t0.elapsed());
                if acquired["success"] != json!(true) {
                    tally.count("blocked");
                    continue;
                }
                let fresh = acquired["action"] == json!("acquired");
                shared
                    .invariants
                    .acquired(i, &path, acquired["fencing_token"].as_i64(), fresh);
                shared.invariants.releasing(&path);
                let t1 = Instant::now();
                match client.tool("release_lock", json!({"file_path": path})).await {
                    Ok(v) if v["success"] == json!(true) => {
                        tally.op("release_lock", t1.elapsed());
                        tally.main.record(t0.elapsed());
                        shared.op_done();
                    }
                    Ok(v) if v["error"] == json!("not_lock_owner") => shared
                        .invariants
                        .violation(&format!("client {i} held {path}, but its release was refused: {v}")),
                    Ok(v) => shared.error("release_lock", v),
                    Err(e) => {
                        shared.error("release_lock", e);
                        break;
                    }
                }
            }
            // Closed after the clock stops: shutting a server down is not an operation.
            if let Ok(mut done) = finished.lock() {
                done.push(client);
            }
            tally
        }
    })
    .await;
    let done: Vec<McpClient> = finished.lock().map(|mut d| d.drain(..).collect()).unwrap_or_default();
    for client in done {
        client.close().await;
    }
    Ok(report(
        opts,
        scratch.backend,
        "mcp",
        opts.clients,
        &shared,
        tally,
        elapsed,
    ))
}
