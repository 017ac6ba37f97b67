//! The per-repository coordinator: one `coord serve --socket` process per database (and
//! configuration) that the repository's `coord mcp` processes and hooks talk to over a
//! Unix socket, instead of each opening the database itself.
//!
//! Why: SQLite admits one writer at a time, and eight agent processes that each open the
//! database contend for its write lock (and each pays opening it); one process owning the
//! database batches their writes (group commit) and keeps everything compiled and open.
//! Measured in docs/benchmarks.md ("Many local agents"). PostgreSQL is often a network
//! hop away: a hook that connected for every tool call would pay the connection, its
//! authentication and the schema check — about 20 round trips — each time; the
//! coordinator keeps its connections open, so a hook pays the operation's own.
//!
//! How:
//! - The socket sits beside the SQLite database (`<database>.<fingerprint>.sock`, with
//!   `<database>.server.lock` and `<database>.server.log`); for PostgreSQL, which has no
//!   file here, in `.coord/run/` (`pg.<fingerprint>.sock`, …). Named by a fingerprint of everything the
//!   coordinator is built from (binary, database, repository, settings, the `COORD_*`
//!   environment but the per-agent variables): processes configured alike share one
//!   server; a process configured differently, or a new `coord` binary, gets its own.
//! - `coord mcp` starts it on demand ([`connect`] with `start`): under an exclusive lock
//!   on `<database>.server.lock`, so that racing starters start one; a stale socket (its
//!   server died) is removed and replaced. Hooks only use one already running.
//! - The server admits only this user's processes (the kernel's peer credentials), which
//!   could open the database themselves: it trusts the identity they name, as the
//!   embedded coordinator does.
//! - It stops after [`IDLE_EXIT`] without requests, or when its database or socket file
//!   is removed. A request that could not be delivered (no connection: the server died
//!   or stopped) is safe to send again: the next caller starts a new server and sends it
//!   there (or, for a hook, runs it on the embedded coordinator). A request the server
//!   received and died on answers an error: whether it applied is in the database (the
//!   server commits before answering), never half of it.
//! - `COORD_LOCAL_SERVER=off` turns all of this off: every process opens the database.

use crate::context::{Context, DbTarget};
use async_trait::async_trait;
use coord_domain::access::Principal;
use coord_domain::{CoordError, CoordResult};
use coord_service::{Coordination, OpEntry};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a server waits without requests before it stops.
pub const IDLE_EXIT: Duration = Duration::from_secs(300);

/// How long a starter waits for a new server's socket to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// `sun_path` holds 108 bytes with its terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Environment variables that differ per agent, not per coordinator: they never split
/// processes onto different servers. (Identity travels with every request.)
const PER_AGENT: &[&str] = &[
    "COORD_AGENT_ID",
    "COORD_AGENT_TYPE",
    "COORD_TEAM",
    "COORD_LOG",
    "COORD_RELEASE_GRACE_SECONDS",
    "COORD_LOCAL_SERVER",
    "COORD_MCP_DIRECT",
];

/// Whether `COORD_LOCAL_SERVER` allows the per-repository server (default: on).
fn enabled() -> bool {
    match std::env::var("COORD_LOCAL_SERVER") {
        Ok(v) => !matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no"),
        Err(_) => true,
    }
}

/// Where the server of `ctx` listens: `None` when it has none (remote mode, turned off,
/// or a path too long for a socket).
pub fn socket_path(ctx: &Context) -> Option<PathBuf> {
    if ctx.remote.is_some() || !enabled() {
        return None;
    }
    let base = server_base(ctx)?;
    let socket = beside(&base, &format!("{}.sock", fingerprint(ctx, &base)));
    (socket.as_os_str().len() <= MAX_SOCKET_PATH).then_some(socket)
}

/// The path the server's files are named after: the SQLite database itself, or
/// `.coord/run/pg` (PostgreSQL has no file here; `run/` keeps its own `.gitignore`,
/// so nothing else in `.coord/` is hidden from git).
fn server_base(ctx: &Context) -> Option<PathBuf> {
    match &ctx.db {
        DbTarget::Sqlite(db) => std::path::absolute(db).ok(),
        DbTarget::Postgres(_) => std::path::absolute(ctx.state_dir.join("run").join("pg")).ok(),
    }
}

/// `<database>.<suffix>`: the server's files are named after its database.
fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// A digest of everything the coordinator is built from (see the module comment).
fn fingerprint(ctx: &Context, db: &Path) -> String {
    let mut h = Sha256::new();
    let mut part = |label: &str, value: &[u8]| {
        h.update(label.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value);
    };
    part("version", env!("CARGO_PKG_VERSION").as_bytes());
    if let Ok(exe) = std::env::current_exe() {
        part("exe", exe.as_os_str().as_encoded_bytes());
        let modified = std::fs::metadata(&exe).and_then(|m| m.modified()).ok();
        part("exe-modified", format!("{modified:?}").as_bytes());
    }
    part("db", db.as_os_str().as_encoded_bytes());
    if let DbTarget::Postgres(url) = &ctx.db {
        part("url", url.as_bytes());
    }
    part("root", ctx.repo_root.as_os_str().as_encoded_bytes());
    for w in &ctx.workspaces {
        part("workspace", w.as_os_str().as_encoded_bytes());
    }
    part(
        "settings",
        format!(
            "{:?} {:?} {:?} {:?} {:?}",
            ctx.file_size_limit,
            ctx.working_memory_budget,
            ctx.recall_half_life_days,
            ctx.coordination_domains,
            ctx.model_endpoints
        )
        .as_bytes(),
    );
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        // Also what agents the server launches inherit (their credentials, tools and
        // home): a session's sub-agents never run with another session's.
        .filter(|(k, _)| {
            [
                "COORD_",
                "COORDINATION_",
                "PORT_ALLOC_",
                "GITHUB_",
                "ANTHROPIC_",
                "OPENAI_",
            ]
            .iter()
            .any(|p| k.starts_with(p))
                && !PER_AGENT.contains(&k.as_str())
                || ["PATH", "HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"].contains(&k.as_str())
        })
        .collect();
    vars.sort();
    for (k, v) in vars {
        part(&k, v.as_bytes());
    }
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A client of the server of `ctx`: `None` when it has none or (without `start`) none is
/// running, or one could not be started — the caller then opens the database itself.
pub async fn connect(ctx: &Context, start: bool) -> Option<Arc<dyn Coordination>> {
    let socket = socket_path(ctx)?;
    if !mine_or_absent(&socket) {
        tracing::warn!(socket = %socket.display(), "the coordinator socket is another user's; opening the database here");
        return None;
    }
    let answering = std::os::unix::net::UnixStream::connect(&socket).is_ok();
    if !answering {
        if !start {
            return None;
        }
        if let Err(e) = ensure_started(ctx, &socket).await {
            tracing::warn!(error = %e, "could not start the repository's coordinator; opening the database here");
            return None;
        }
    }
    let client = coord_remote::RemoteClient::unix(&socket)
        .ok()?
        .with_local_root(ctx.repo_root.to_string_lossy());
    // Callers say whether they are inside an agent's session by their principal's
    // credential (`open::in_session`, the MCP server's connection credential); the
    // client marks such requests for the socket's server.
    Some(Arc::new(LocalServer {
        client,
        ctx: ctx.clone(),
        socket,
        start,
        fallback: tokio::sync::OnceCell::new(),
    }))
}

/// `coord mcp`'s relay into the repository's coordinator (started if need be): the
/// upgraded connection, and how to reach a coordinator again when this one goes away.
/// `None` when there is none to relay to (remote mode, PostgreSQL, turned off, or it
/// could not be started or does not take relays): the caller serves MCP itself.
pub async fn relay(
    ctx: &Context,
    request: coord_mcp::relay::RelayRequest,
) -> Option<(coord_mcp::relay::Link, coord_mcp::relay::Reconnect)> {
    let socket = socket_path(ctx)?;
    if !mine_or_absent(&socket) {
        return None;
    }
    let ctx = ctx.clone();
    let found = tokio::task::spawn_blocking(move || {
        let link = coord_mcp::relay::connect(&socket, &request)
            .or_else(|_| {
                start_blocking(&ctx, &socket).map_err(std::io::Error::other)?;
                coord_mcp::relay::connect(&socket, &request)
            })
            .inspect_err(|e| tracing::warn!(error = %e, "cannot relay to the repository's coordinator; serving here"))
            .ok()?;
        let reconnect: coord_mcp::relay::Reconnect = Box::new(move |ending| {
            // A removed database is a removed checkout (its coordinator stopped for
            // that): nothing to start again.
            if let DbTarget::Sqlite(db) = &ctx.db
                && !db.exists()
            {
                return Err(std::io::Error::other(format!("{} was removed", db.display())));
            }
            start_blocking(&ctx, &socket).map_err(std::io::Error::other)?;
            let request = coord_mcp::relay::RelayRequest {
                ending: ending.map(str::to_string),
                ..request.clone()
            };
            coord_mcp::relay::connect(&socket, &request)
        });
        Some((link, reconnect))
    });
    found.await.ok().flatten()
}

/// Whether `path` is absent or a file of this process's user (never followed): a socket
/// someone else put in a shared directory is never talked to, nor removed.
fn mine_or_absent(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(m) => m.uid() == rustix::process::getuid().as_raw(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Starts the server unless another process just did (under `<database>.server.lock`).
async fn ensure_started(ctx: &Context, socket: &Path) -> Result<(), String> {
    let (ctx, socket) = (ctx.clone(), socket.to_path_buf());
    tokio::task::spawn_blocking(move || start_blocking(&ctx, &socket))
        .await
        .map_err(|e| e.to_string())?
}

fn start_blocking(ctx: &Context, socket: &Path) -> Result<(), String> {
    let db = server_base(ctx).ok_or("no place for the coordinator's files")?;
    if let Some(dir) = db.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // The server is told its database explicitly, so the default location's
    // `.gitignore` is written here, as an embedded coordinator would.
    if ctx.db_is_default || matches!(ctx.db, DbTarget::Postgres(_)) {
        crate::open::keep_out_of_git(&db);
    }
    let lock_path = beside(&db, "server.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    if !mine_or_absent(socket) {
        return Err(format!("{} is another user's", socket.display()));
    }
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        return Ok(()); // another process started it while this one waited for the lock
    }
    // A socket nobody answers is a dead server's: its successor takes the name.
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot remove the stale socket {}: {e}", socket.display()));
        }
        _ => {}
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the coord binary: {e}"))?;
    let log_path = beside(&db, "server.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
    let mut cmd = std::process::Command::new(exe);
    match &ctx.db {
        DbTarget::Sqlite(_) => cmd.arg("--db").arg(&db),
        // In its environment, not its arguments: a URL may carry a password, and
        // arguments are visible to every user of the machine.
        DbTarget::Postgres(url) => cmd.env("COORD_DATABASE_URL", url),
    };
    for w in &ctx.workspaces {
        cmd.arg("--workspace").arg(w);
    }
    if let Some(n) = ctx.file_size_limit {
        cmd.arg("--file-size-limit").arg(n.to_string());
    }
    if let Some(n) = ctx.working_memory_budget {
        cmd.arg("--working-memory-budget").arg(n.to_string());
    }
    if let Some(n) = ctx.recall_half_life_days {
        cmd.arg("--recall-half-life-days").arg(n.to_string());
    }
    for d in &ctx.coordination_domains {
        cmd.arg("--coordination-domain").arg(d);
    }
    for m in &ctx.model_endpoints {
        cmd.arg("--model-endpoint").arg(m);
    }
    cmd.args(["serve", "--socket"])
        .arg(socket)
        .arg("--idle-exit")
        .arg(IDLE_EXIT.as_secs().to_string())
        .current_dir(&ctx.cwd)
        // Nobody's identity: each request names its own.
        .env_remove("COORD_AGENT_ID")
        .env_remove("COORD_AGENT_TYPE")
        // Settings of a TCP `coord serve` (the proxy port conflicts with --socket).
        .env_remove("COORD_PROXY_PORT")
        .env_remove("API_HOST")
        .env_remove("API_PORT")
        // What the configuration files said is in the environment it inherits; read
        // again, they would put back what was just taken out.
        .env(crate::CONFIG_FILES_OFF.0, crate::CONFIG_FILES_OFF.1)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        // Its own process group: an agent's Ctrl-C or a killed session does not take
        // the repository's coordinator (and every other agent's connection) with it.
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start coord serve: {e}"))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "coord serve --socket exited ({status}) before answering; see {}",
                log_path.display()
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "coord serve --socket did not answer within {START_TIMEOUT:?}; see {}",
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Reaped when it exits, so it never lingers as a zombie of this process.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// The repository's coordinator seen through its socket.
struct LocalServer {
    client: coord_remote::RemoteClient,
    ctx: Context,
    socket: PathBuf,
    /// Whether this process may start a server when the one it used is gone.
    start: bool,
    /// The embedded coordinator, opened the first time the server cannot be reached and
    /// cannot be started.
    fallback: tokio::sync::OnceCell<Arc<dyn Coordination>>,
}

impl LocalServer {
    async fn embedded(&self) -> CoordResult<&Arc<dyn Coordination>> {
        self.fallback
            .get_or_try_init(|| async {
                let coord = crate::open::coordinator_with(&self.ctx, 4).await?;
                Ok::<Arc<dyn Coordination>, CoordError>(Arc::new(coord))
            })
            .await
    }
}

#[async_trait]
impl Coordination for LocalServer {
    async fn invoke(&self, op: &'static OpEntry, who: &Principal, request: CoordResult<Value>) -> CoordResult<Value> {
        if let Some(embedded) = self.fallback.get() {
            return embedded.invoke(op, who, request).await;
        }
        match self.client.invoke(op, who, request.clone()).await {
            // Never delivered: the server is gone (it stopped when idle, or died). Sending
            // again cannot apply anything twice.
            Err(e) if coord_remote::not_delivered(&e) => {
                if self.start && ensure_started(&self.ctx, &self.socket).await.is_ok() {
                    let again = self.client.invoke(op, who, request.clone()).await;
                    match again {
                        Err(e) if coord_remote::not_delivered(&e) => {}
                        answered => return answered,
                    }
                }
                tracing::warn!(socket = %self.socket.display(), "the repository's coordinator is unreachable; opening the database here");
                self.embedded().await?.invoke(op, who, request).await
            }
            answered => answered,
        }
    }
}
