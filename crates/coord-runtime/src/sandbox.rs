//! Running a command in the sandbox (`coord sandbox run`, and every launched agent):
//! bubblewrap around it, the egress proxy as its only way out, its run recorded
//! (docs/network.md). The rules are elsewhere: the policy decision is
//! `check_network_access`, the bubblewrap argv `coord_egress::sandbox::bwrap_args`.

use crate::context::Context;
use crate::open;
use coord_domain::access::Principal;
use coord_domain::network::{Enforcement, SandboxRunRequest};
use coord_domain::profiles::{AssignProfileRequest, UnassignProfileRequest};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_egress::git_guard;
use coord_egress::sandbox::{self, Plan, RELAY_PORT};
use coord_egress::{Proxy, Resolver, RunTokens};
use coord_service::call;
use coord_service::ops::{network as net_ops, profiles as profile_ops};
use std::ffi::OsString;
use std::sync::Arc;

/// The agent type of sandboxed runs: no type default, so an agent without an
/// assigned profile is least privilege.
pub const AGENT_TYPE: &str = "sandbox";

/// `coord sandbox run`: which identity, which profile, what passes in, and the command.
#[derive(Debug, Clone, Default)]
pub struct SandboxRunOptions {
    /// Unset: a generated identity of this run's own.
    pub agent: Option<String>,
    pub profile: Option<String>,
    /// NAME=ADDRESS pins for the proxy's resolver.
    pub resolve: Vec<String>,
    /// NAME or NAME=VALUE passed into the sandbox.
    pub env: Vec<String>,
    /// The proxy variables only (advisory): no bubblewrap.
    pub no_sandbox: bool,
    pub command: Vec<OsString>,
}

pub fn resolver(pins: &[String]) -> CoordResult<Resolver> {
    Resolver::with_pins(pins)
        .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, format!("--resolve {m}")).with_field("resolve"))
}

pub fn unavailable(message: String) -> CoordError {
    CoordError::new(ErrorCode::SandboxUnavailable, message)
}

/// Runs `args.command` in the sandbox (or advisory with `no_sandbox`): its exit code.
pub async fn run_sandboxed(args: SandboxRunOptions, ctx: &Context) -> CoordResult<u8> {
    let resolver = resolver(&args.resolve)?;
    if let Some(bad) = args
        .env
        .iter()
        .find(|e| !sandbox::valid_env_name(e.split_once('=').map_or(e.as_str(), |(k, _)| k)))
    {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!("--env {bad:?}: give NAME or NAME=VALUE, NAME of letters, digits and _"),
        )
        .with_field("env"));
    }
    if !args.no_sandbox && !ctx.in_git_repo {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!(
                "coord sandbox run makes the repository writable, and {} is not in a git repository: run it inside one",
                ctx.repo_root.display()
            ),
        ));
    }
    let agent_id = args
        .agent
        .clone()
        .unwrap_or_else(|| format!("sandbox-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]));
    let agent = Caller::new(agent_id.clone(), AGENT_TYPE);
    let me = Principal::local(agent.clone());
    let bwrap = if args.no_sandbox {
        None
    } else {
        let bwrap = sandbox::find_bwrap().ok_or_else(|| {
            unavailable(
                "bubblewrap (bwrap) is not installed: install it (apt-get install bubblewrap), or pass --no-sandbox \
                 to run with the proxy variables only (advisory: a program can ignore them)"
                    .into(),
            )
        })?;
        if let Some(why) = sandbox::unavailable(&bwrap).await {
            return Err(unavailable(format!("{why}; --no-sandbox runs without it (advisory)")));
        }
        Some(bwrap)
    };
    let coord = open::coordination(ctx, 4).await?;
    let operator = Principal::local(ctx.caller.clone());
    if let Some(profile) = &args.profile {
        let req = AssignProfileRequest {
            profile: profile.clone(),
            target_agent_id: Some(agent_id.clone()),
            target_agent_type: None,
        };
        call::<profile_ops::AssignProfile, _>(&*coord, &operator, req).await?;
    }
    let command: Vec<String> = args.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let record = SandboxRunRequest {
        command,
        enforcement: if bwrap.is_some() {
            Enforcement::Namespace
        } else {
            Enforcement::Advisory
        },
        workspace: ctx.repo_root.to_string_lossy().into_owned(),
    };
    let recorded = call::<net_ops::RecordSandboxRun, _>(&*coord, &me, record).await?;
    eprintln!(
        "coord sandbox: {agent_id} runs under network policy {} ({})",
        recorded.policy,
        match recorded.enforcement {
            Enforcement::Namespace => "enforced: the proxy is the only way out",
            Enforcement::Advisory => "advisory: --no-sandbox, proxy variables only",
        }
    );
    let tokens = Arc::new(RunTokens::default());
    let token = tokens.issue(agent);
    let proxy = Arc::new(Proxy::new(coord.clone(), tokens, Arc::new(resolver)));
    let code = match bwrap {
        None => advisory(proxy, &agent_id, &token, &args.command, &args.env).await,
        Some(bwrap) => enforced(proxy, &bwrap, ctx, &agent_id, &token, &args)
            .await
            .map(sandbox::exit_code),
    };
    // A generated identity is this run's only: its assignment goes with it.
    if args.agent.is_none() && args.profile.is_some() {
        let req = UnassignProfileRequest {
            target_agent_id: Some(agent_id.clone()),
            target_agent_type: None,
        };
        if let Err(e) = call::<profile_ops::UnassignProfile, _>(&*coord, &operator, req).await {
            eprintln!(
                "coord sandbox: could not remove {agent_id}'s profile assignment: {}",
                e.message
            );
        }
    }
    Ok(u8::try_from(code?).unwrap_or(255))
}

fn io(what: &str, e: std::io::Error) -> CoordError {
    unavailable(format!("{what}: {e}"))
}

/// The proxy on a loopback port, for a command outside the sandbox: the proxy variables
/// that point at it with the agent's credential (advisory: a program may ignore them).
pub async fn advisory_proxy(proxy: Arc<Proxy>, agent_id: &str, token: &str) -> CoordResult<Vec<(String, String)>> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| io("cannot start the proxy", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| io("cannot start the proxy", e))?
        .port();
    tokio::spawn(proxy.serve_tcp(listener));
    Ok(sandbox::proxy_env(&format!(
        "http://{agent_id}:{token}@127.0.0.1:{port}"
    )))
}

async fn advisory(
    proxy: Arc<Proxy>,
    agent_id: &str,
    token: &str,
    command: &[OsString],
    passed: &[String],
) -> CoordResult<i32> {
    let env = advisory_proxy(proxy, agent_id, token).await?;
    let (program, rest) = command.split_first().ok_or_else(|| unavailable("no command".into()))?;
    let mut cmd = tokio::process::Command::new(program);
    // The same environment as in the sandbox: keys, tokens and coord's own settings stay
    // outside (a command could otherwise act as whoever ran it).
    let here: Vec<(String, String)> = std::env::vars().collect();
    cmd.args(rest)
        .env_clear()
        .envs(sandbox::passed_env(&here, passed))
        .envs(env)
        .env("COORD_AGENT_ID", agent_id)
        .env("COORD_AGENT_TYPE", AGENT_TYPE);
    let name = program.to_string_lossy();
    sandbox::run_like_a_shell(cmd, &name)
        .await
        .map_err(|e| io(&format!("cannot run {name}"), e))
}

async fn enforced(
    proxy: Arc<Proxy>,
    bwrap: &std::path::Path,
    ctx: &Context,
    agent_id: &str,
    token: &str,
    args: &SandboxRunOptions,
) -> CoordResult<std::process::ExitStatus> {
    let run_dir = tempfile::Builder::new()
        .prefix("coord-sandbox-")
        .tempdir()
        .map_err(|e| io("cannot create the run directory", e))?;
    let here: Vec<(String, String)> = std::env::vars().collect();
    let (mut command, git_entries) = enforced_command(Enforced {
        proxy,
        bwrap,
        ctx,
        agent_id,
        agent_type: AGENT_TYPE,
        token,
        writable: vec![ctx.repo_root.clone()],
        visible: Vec::new(),
        run_dir: run_dir.path().to_path_buf(),
        env: sandbox::passed_env(&here, &args.env),
        forwards: Vec::new(),
        protected: Vec::new(),
        cwd: None,
        command: args.command.clone(),
    })?;
    let status = command.status().await.map_err(|e| io("cannot start bubblewrap", e))?;
    warn_of_new_repositories(&ctx.repo_root, &git_entries);
    Ok(status)
}

/// Says which git repositories a sandboxed run created in the workspace: git run inside
/// one later would read its configuration (and could run what it names), and no mount
/// can stop a writable directory from getting a new `.git` (docs/network.md).
pub fn warn_of_new_repositories(workspace: &std::path::Path, before: &[std::path::PathBuf]) {
    for repo in git_guard::created_since(before, &git_guard::git_entries(workspace)) {
        eprintln!(
            "coord sandbox: warning: the command created {}: git run in that directory would read its \
             configuration and hooks; inspect it before you run git there, or remove it",
            repo.display()
        );
    }
}

/// A command tree to run in bubblewrap (docs/network.md): what is writable, the run's
/// directory (the proxy socket, HOME and TMPDIR of launched agents), the environment,
/// loopback ports relayed to Unix sockets the caller serves.
pub struct Enforced<'a> {
    pub proxy: Arc<Proxy>,
    pub bwrap: &'a std::path::Path,
    pub ctx: &'a Context,
    pub agent_id: &'a str,
    pub agent_type: &'a str,
    pub token: &'a str,
    /// Absolute paths inside the workspace (or the workspace itself).
    pub writable: Vec<std::path::PathBuf>,
    /// Read-only directories the command needs besides the workspace (a runtime's
    /// install directory: the sandbox replaces `/tmp`).
    pub visible: Vec<std::path::PathBuf>,
    pub run_dir: std::path::PathBuf,
    /// The command's environment (nothing else is passed); the proxy variables and
    /// coord's identity variables are added.
    pub env: Vec<(String, String)>,
    /// Loopback ports inside and the Unix sockets (served by the caller) they lead to.
    pub forwards: Vec<(u16, std::path::PathBuf)>,
    /// Read-only mount points (source, path): the run's generated files and sockets,
    /// the workspace's tool configuration (see `Plan::protected`).
    pub protected: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// Where the command starts (default: the working directory when it is inside the
    /// workspace, else the workspace).
    pub cwd: Option<std::path::PathBuf>,
    pub command: Vec<OsString>,
}

/// The bubblewrap command of `e`, its proxy listening on a socket in the run directory,
/// and the `.git` entries the workspace had before it runs (see
/// [`warn_of_new_repositories`]).
pub fn enforced_command(e: Enforced<'_>) -> CoordResult<(tokio::process::Command, Vec<std::path::PathBuf>)> {
    let socket = e.run_dir.join("proxy.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).map_err(|x| io("cannot start the proxy", x))?;
    tokio::spawn(e.proxy.serve_unix(listener));
    let empty = e.run_dir.join("empty");
    std::fs::write(&empty, b"").map_err(|x| io("cannot create the run directory", x))?;
    let exe = std::env::current_exe().map_err(|x| io("cannot find the coord binary", x))?;
    let workspace = e.ctx.repo_root.clone();
    let cwd = e.cwd.clone().unwrap_or_else(|| {
        std::env::current_dir()
            .ok()
            .filter(|d| d.starts_with(&workspace))
            .unwrap_or_else(|| workspace.clone())
    });
    let (mut hide_dirs, mut hide_files) = std::env::var_os("HOME")
        .map(|h| sandbox::credential_paths(std::path::Path::new(&h)))
        .unwrap_or_default();
    // The host's Unix sockets (session bus, docker, ssh agents, database sockets): a
    // read-only mount does not stop connect(), so they are not there at all.
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    for dir in [Some("/run".into()), Some("/var/run".into()), runtime]
        .into_iter()
        .flatten()
    {
        let dir: std::path::PathBuf = dir;
        if dir.is_dir() && !dir.is_symlink() && !workspace.starts_with(&dir) && !e.run_dir.starts_with(&dir) {
            hide_dirs.push(dir);
        }
    }
    if let Some(key) = open::audit_key_path(e.ctx).filter(|k| k.is_file()) {
        hide_files.push(key);
    }
    // coord's own state is not there at all (a sandboxed command can neither rewrite nor
    // read its policy, other agents' messages or the audit trail), nor the database file.
    hide_dirs.push(workspace.join(".coord"));
    // A linked worktree's state lives beside the main checkout, outside the workspace.
    hide_dirs.push(e.ctx.state_dir.clone());
    if let crate::context::DbTarget::Sqlite(db) = &e.ctx.db {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            hide_files.push(name.into());
        }
    }
    hide_dirs.retain(|p| p.is_dir());
    hide_dirs.sort();
    hide_dirs.dedup();
    // A file in a hidden directory is gone already (and a mount point there would show).
    hide_files.retain(|p| p.is_file() && !hide_dirs.iter().any(|d| p.starts_with(d)));
    // Read-only inside the workspace: every git directory and `.git` file, what git's
    // configuration points at, the workspace's directories on PATH (git_guard). What
    // cannot be protected (a setting naming a missing path) refuses the run.
    let path_dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let guard = git_guard::protect(&workspace, &path_dirs, home.as_deref()).map_err(unavailable)?;
    let mut read_only = guard.read_only;
    read_only.retain(|p| p.exists() && p.starts_with(&workspace) && p != &workspace);
    let mut env = e.env;
    env.extend(sandbox::proxy_env(&format!(
        "http://{}:{}@127.0.0.1:{RELAY_PORT}",
        e.agent_id, e.token
    )));
    env.push(("COORD_AGENT_ID".into(), e.agent_id.into()));
    env.push(("COORD_AGENT_TYPE".into(), e.agent_type.into()));
    env.push(("COORD_SANDBOX".into(), "1".into()));
    let mut inner: Vec<OsString> = vec![exe.into(), "sandbox".into(), "relay".into()];
    let mut sockets = Vec::new();
    for (port, sock) in std::iter::once((RELAY_PORT, socket.clone())).chain(e.forwards) {
        if sock != socket && sock.starts_with(&e.run_dir) {
            sockets.push(sock.clone());
        }
        inner.push("--forward".into());
        let mut f = OsString::from(format!("{port}="));
        f.push(sock);
        inner.push(f);
    }
    inner.push("--".into());
    inner.extend(e.command);
    // The sockets the relay reaches, pinned read-only: a command deleting one would cut
    // its own agent off from the coordinator (and its hooks from their checks).
    let mut protected = e.protected;
    protected.push((socket.clone(), socket.clone()));
    protected.extend(sockets.into_iter().map(|s| (s.clone(), s)));
    let mut visible = vec![workspace.clone()];
    // A linked worktree's git directory is inside the main checkout's: visible, read-only,
    // so that git works in it as in the main checkout (status, diff, log).
    if let Some(w) = e.ctx.worktree.as_ref().filter(|w| w.linked()) {
        visible.extend(Some(w.shared_root.join(".git")).filter(|g| g.is_dir()));
    }
    visible.extend(e.visible);
    let plan = Plan {
        visible,
        writable: e.writable,
        run_dir: e.run_dir.clone(),
        cwd,
        hide_dirs,
        hide_files,
        empty,
        read_only,
        protected,
        env,
        inner,
    };
    let args = sandbox::bwrap_args(&plan);
    // For whoever wonders what the sandbox was (no secrets: the environment is not in it).
    let _ = std::fs::write(
        e.run_dir.join("bwrap-args.txt"),
        args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join("\n"),
    );
    let mut command = tokio::process::Command::new(e.bwrap);
    // The environment is bubblewrap's own (passed on to the command), never its argv.
    command.args(args).env_clear().envs(plan.env);
    Ok((command, guard.git_entries))
}
