//! The agent's process: the coordinator served to it, its launch files written, the
//! sandbox around it, its deadline and stop requests watched, and what it leaves cleaned up.

use super::outcome::{Outcome, final_result};
use super::programs::{coord_env, install_dir, io, provider_keys};
use super::{AGENT_TYPE, LaunchOptions};
use crate::context::Context;
use crate::sandbox::{Enforced, advisory_proxy, enforced_command};
use coord_agents::{LaunchInputs, LaunchPlan};
use coord_domain::access::Principal;
use coord_domain::agents::{self, AgentDefinition, Runtime};
use coord_domain::network::{Enforcement, SandboxRunRequest};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_egress::sandbox::{self, API_PORT, MODEL_PORT};
use coord_egress::{Proxy, Resolver, RunTokens};
use coord_service::call;
use coord_service::ops::network as net_ops;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What tools outside the sandbox read or run later from a workspace (name, directory?):
/// read-only for a launched agent that may write the workspace.
const TOOL_CONFIG: &[(&str, bool)] = &[
    (".claude", true),
    (".mcp.json", false),
    (".codex", true),
    (".vscode", true),
    (".idea", true),
    (".envrc", false),
    (".gitmodules", false),
    (".husky", true),
    // The agent registry's list: a writer must not change what others spawn later.
    ("agents.json", false),
];

pub(super) struct Supervised<'a> {
    pub ctx: &'a Context,
    pub task: &'a str,
    pub options: &'a LaunchOptions,
    pub d: &'a AgentDefinition,
    pub runtime: Runtime,
    pub program: &'a Path,
    /// None: `COORD_SANDBOX_ENABLED=false`.
    pub bwrap: Option<&'a Path>,
    pub coordinator: Arc<coord_service::Coordinator>,
    pub resolver: Resolver,
    pub agent: Caller,
    pub key: &'a str,
    pub run_dir: &'a Path,
    pub relayed: Option<(String, u16)>,
    pub model_url: Option<&'a str>,
    pub deadline: std::time::Duration,
    /// A spawned agent's supervisor also stops when `stop_agent` asks (read from the
    /// record: the request may have reached another machine's coordinator).
    pub spawned: bool,
}

/// The locks other agents hold as an agent without hooks (Aider) starts: it cannot be
/// asked before each edit, so what they hold is read-only in its sandbox and named in its
/// message (docs/agents.md, "Aider"). Other runtimes' hooks ask before every edit.
async fn held_by_others(s: &Supervised<'_>) -> CoordResult<Vec<coord_domain::locks::LockInfo>> {
    if s.runtime != Runtime::Aider {
        return Ok(Vec::new());
    }
    use coord_service::CoordinationExt as _;
    let live = s
        .coordinator
        .check_locks(&s.agent, coord_domain::locks::CheckLocksRequest::default())
        .await?;
    Ok(live
        .locks
        .into_iter()
        .filter(|l| l.locked_by != s.agent.agent_id)
        .collect())
}

pub(super) async fn supervise(s: Supervised<'_>) -> CoordResult<Outcome> {
    let agent_id = s.agent.agent_id.clone();
    for dir in ["home", "tmp"] {
        std::fs::create_dir_all(s.run_dir.join(dir)).map_err(|e| io("cannot create the run directory", e))?;
    }
    let (api_task, api_port, mut forwards) = serve_api(&s).await?;
    let held = held_by_others(&s).await?;
    let plan = write_plan(&s, api_port, &held)?;
    let model_task = relay_model(&s, &mut forwards)?;
    let env = agent_env(&s, &plan);
    record_run(&s, &plan).await?;
    let writable = writable(&s, &plan)?;
    let (protected, placeholders) = protected(&s, &plan, &held)?;
    let (mut command, git_entries) = command(&s, &plan, env, writable, protected, forwards).await?;
    let mut child = command.spawn().map_err(|e| io("cannot start the agent", e))?;
    let (status, stopped) = wait(&s, &mut child).await?;
    let timed_out = stopped == Some("deadline");
    if let Some(why @ ("interrupted" | "terminated")) = stopped {
        eprintln!("coord agent: {agent_id} stopped: coord agent run was {why}");
    }
    api_task.abort();
    if let Some(t) = model_task {
        t.abort();
    }
    clean_up(&s, placeholders, git_entries.as_deref());
    let exit_code = sandbox::exit_code(status);
    let (result, permission_denials, result_is_error) = final_result(&plan, s.run_dir);
    Ok(Outcome {
        success: exit_code == 0 && stopped.is_none() && result.is_some() && !result_is_error,
        stopped: stopped.map(String::from),
        result_is_error,
        agent_id,
        agent: s.d.name.clone(),
        runtime: s.runtime.name(),
        profile: s.d.profile.to_string(),
        exit_code,
        timed_out,
        result,
        permission_denials,
        run_dir: s.run_dir.display().to_string(),
        worktree: None,
        deadline: s.deadline,
    })
}

/// The coordinator, for the agent's MCP server and hooks (the agent authenticates with
/// its key): in the sandbox, on a socket the relay exposes inside at
/// 127.0.0.1:API_PORT; without it, on a loopback port. Also the sockets to forward.
async fn serve_api(s: &Supervised<'_>) -> CoordResult<(JoinHandle<std::io::Result<()>>, u16, Vec<(u16, PathBuf)>)> {
    // Every request needs the agent's key, reads included.
    let config = coord_http::ApiConfig {
        require_auth_for_reads: true,
        ..coord_http::ApiConfig::default()
    };
    let app = coord_http::create_coordination_api(s.coordinator.clone(), &config);
    let mut forwards = Vec::new();
    let (api_task, api_port) = if s.bwrap.is_some() {
        let api_socket = s.run_dir.join("api.sock");
        let _ = std::fs::remove_file(&api_socket);
        let api = tokio::net::UnixListener::bind(&api_socket).map_err(|e| io("cannot serve the coordinator", e))?;
        forwards.push((API_PORT, api_socket));
        (tokio::spawn(coord_http::serve_unix(api, app)), API_PORT)
    } else {
        let api = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| io("cannot serve the coordinator", e))?;
        let port = api
            .local_addr()
            .map_err(|e| io("cannot serve the coordinator", e))?
            .port();
        (tokio::spawn(coord_http::serve_loopback(api, app)), port)
    };
    Ok((api_task, api_port, forwards))
}

/// The runtime's launch plan (the domain's), its files written; an Aider message names
/// what others hold.
fn write_plan(s: &Supervised<'_>, api_port: u16, held: &[coord_domain::locks::LockInfo]) -> CoordResult<LaunchPlan> {
    let run = s.run_dir.to_string_lossy().into_owned();
    let workspace = s.ctx.repo_root.to_string_lossy().into_owned();
    let exe = std::env::current_exe().map_err(|e| io("cannot find the coord binary", e))?;
    let exe = exe.to_string_lossy().into_owned();
    let program = s.program.to_string_lossy().into_owned();
    let coord_env = coord_env(&s.agent.agent_id, api_port);
    let mut plan = coord_agents::plan(
        s.runtime,
        &LaunchInputs {
            definition: s.d,
            task: s.task,
            workspace: &workspace,
            run_dir: &run,
            coord_exe: &exe,
            program: &program,
            coord_env: &coord_env,
            model_base_url: s.model_url,
            files: &s.options.files,
        },
    );
    if let Some(note) = coord_agents::launch::held_note(held)
        && let Some(message) = plan.files.iter_mut().find(|f| f.path.ends_with("aider-message.txt"))
    {
        message.contents.push('\n');
        message.contents.push_str(&note);
    }
    for f in &plan.files {
        let path = Path::new(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("cannot write the launch files", e))?;
        }
        std::fs::write(path, &f.contents).map_err(|e| io("cannot write the launch files", e))?;
    }
    Ok(plan)
}

/// A model endpoint on this machine's loopback, relayed to a socket forwarded inside.
fn relay_model(
    s: &Supervised<'_>,
    forwards: &mut Vec<(u16, PathBuf)>,
) -> CoordResult<Option<JoinHandle<std::io::Result<()>>>> {
    let Some((host, port)) = &s.relayed else {
        return Ok(None);
    };
    let socket = s.run_dir.join("model.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).map_err(|e| io("cannot relay the model endpoint", e))?;
    forwards.push((MODEL_PORT, socket));
    Ok(Some(tokio::spawn(forward_to_tcp(listener, format!("{host}:{port}")))))
}

/// The agent's environment: what was passed (and the runtime's own provider key only),
/// the plan's, and its key.
fn agent_env(s: &Supervised<'_>, plan: &LaunchPlan) -> Vec<(String, String)> {
    let here: Vec<(String, String)> = std::env::vars().collect();
    let mut passed: Vec<String> = s.options.env.clone();
    passed.extend(provider_keys(s.runtime).iter().map(|k| k.to_string()));
    let mut env = sandbox::passed_env(&here, &passed);
    if s.bwrap.is_none() {
        env.push(("COORD_AGENT_ID".into(), s.agent.agent_id.clone()));
        env.push(("COORD_AGENT_TYPE".into(), AGENT_TYPE.into()));
    }
    env.extend(plan.env.iter().cloned());
    env.push(("COORDINATION_API_KEY".into(), s.key.into()));
    env
}

/// The run in the audit trail (with how it is enforced), and said on stderr.
async fn record_run(s: &Supervised<'_>, plan: &LaunchPlan) -> CoordResult<()> {
    let me = Principal::local(s.agent.clone());
    let request = SandboxRunRequest {
        // A system prompt can be long: the record keeps its start and its length.
        command: plan
            .argv
            .iter()
            .map(|a| match a.char_indices().nth(2000) {
                Some((cut, _)) => format!("{}…({} characters)", &a[..cut], a.chars().count()),
                None => a.clone(),
            })
            .collect(),
        enforcement: if s.bwrap.is_some() {
            Enforcement::Namespace
        } else {
            Enforcement::Advisory
        },
        workspace: s.ctx.repo_root.to_string_lossy().into_owned(),
    };
    let recorded = call::<net_ops::RecordSandboxRun, _>(&*s.coordinator, &me, request).await?;
    eprintln!(
        "coord agent: {} ({}, profile {} → coord profile {}, network policy {}, writable: {:?}) runs {} for at most {}; output in {}",
        s.agent.agent_id,
        s.d.name,
        s.d.profile,
        s.d.profile.coord_profile(),
        recorded.policy,
        plan.writable,
        s.runtime.name(),
        humantime::format_duration(s.deadline),
        s.run_dir.display()
    );
    Ok(())
}

/// What the agent may write: nothing, the workspace, or its real `docs/`.
fn writable(s: &Supervised<'_>, plan: &LaunchPlan) -> CoordResult<Vec<PathBuf>> {
    Ok(match plan.writable {
        agents::Writable::Nothing => Vec::new(),
        agents::Writable::Workspace => vec![s.ctx.repo_root.clone()],
        agents::Writable::Docs => {
            // A real directory of the workspace: a symlink would make its target writable.
            let docs = s.ctx.repo_root.join("docs");
            if std::fs::symlink_metadata(&docs).is_err() {
                std::fs::create_dir(&docs).map_err(|e| io("cannot create docs/", e))?;
            }
            let real = std::fs::symlink_metadata(&docs).is_ok_and(|m| m.is_dir())
                && std::fs::canonicalize(&docs).is_ok_and(|c| c.parent() == Some(s.ctx.repo_root.as_path()));
            if !real {
                return Err(CoordError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "{} is not a directory of the workspace (a symlink?): a design agent writes only a real docs/",
                        docs.display()
                    ),
                ));
            }
            vec![docs]
        }
    })
}

/// Read-only inside: the generated files, and in a writable workspace what tools
/// outside the sandbox read or run later (an existing one pinned, a missing one held
/// by an empty placeholder, removed after the run). Also the placeholders made.
#[allow(clippy::type_complexity)]
fn protected(
    s: &Supervised<'_>,
    plan: &LaunchPlan,
    held: &[coord_domain::locks::LockInfo],
) -> CoordResult<(Vec<(PathBuf, PathBuf)>, Vec<PathBuf>)> {
    let mut protected: Vec<(PathBuf, PathBuf)> = plan
        .files
        .iter()
        .map(|f| (PathBuf::from(&f.path), PathBuf::from(&f.path)))
        .collect();
    if plan.writable != agents::Writable::Nothing {
        for held in coord_agents::launch::held_paths(held) {
            let path = s.ctx.repo_root.join(held);
            if std::fs::symlink_metadata(&path).is_ok() {
                protected.push((path.clone(), path));
            }
        }
    }
    let mut placeholders = Vec::new();
    if plan.writable == agents::Writable::Workspace {
        let empty_file = s.run_dir.join("placeholder");
        let empty_dir = s.run_dir.join("placeholder.d");
        std::fs::write(&empty_file, b"").map_err(|e| io("cannot create the run directory", e))?;
        std::fs::create_dir_all(&empty_dir).map_err(|e| io("cannot create the run directory", e))?;
        for (name, dir) in TOOL_CONFIG {
            let path = s.ctx.repo_root.join(name);
            if std::fs::symlink_metadata(&path).is_ok() {
                protected.push((path.clone(), path));
            } else {
                protected.push((if *dir { empty_dir.clone() } else { empty_file.clone() }, path.clone()));
                placeholders.push(path);
            }
        }
    }
    Ok((protected, placeholders))
}

/// The agent's command: inside the sandbox (with the git entries seen before it ran), or
/// with the proxy variables only (advisory) when the sandbox is off.
async fn command(
    s: &Supervised<'_>,
    plan: &LaunchPlan,
    mut env: Vec<(String, String)>,
    writable: Vec<PathBuf>,
    protected: Vec<(PathBuf, PathBuf)>,
    forwards: Vec<(u16, PathBuf)>,
) -> CoordResult<(tokio::process::Command, Option<Vec<PathBuf>>)> {
    let tokens = Arc::new(RunTokens::default());
    let token = tokens.issue(s.agent.clone());
    let coord: Arc<dyn coord_service::Coordination> = s.coordinator.clone();
    let proxy = Arc::new(Proxy::new(coord, tokens, Arc::new(s.resolver.clone())));
    let stdout =
        std::fs::File::create(s.run_dir.join("output.jsonl")).map_err(|e| io("cannot create the output file", e))?;
    let stderr =
        std::fs::File::create(s.run_dir.join("stderr.log")).map_err(|e| io("cannot create the output file", e))?;
    let mut git_entries = None;
    let mut command = match s.bwrap {
        Some(bwrap) => {
            let (command, entries) = enforced_command(Enforced {
                proxy,
                bwrap,
                ctx: s.ctx,
                agent_id: &s.agent.agent_id,
                agent_type: AGENT_TYPE,
                token: &token,
                writable,
                visible: vec![install_dir(s.program)],
                run_dir: s.run_dir.to_path_buf(),
                env,
                forwards,
                protected,
                cwd: Some(s.ctx.repo_root.clone()),
                command: plan.argv.iter().map(Into::into).collect(),
            })?;
            git_entries = Some(entries);
            command
        }
        None => {
            env.extend(advisory_proxy(proxy, &s.agent.agent_id, &token).await?);
            let mut c = tokio::process::Command::new(&plan.argv[0]);
            c.args(&plan.argv[1..])
                .env_clear()
                .envs(env)
                .current_dir(&s.ctx.repo_root);
            c
        }
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    Ok((command, git_entries))
}

/// Until the agent ends, or is stopped by its deadline, by this process being interrupted
/// or terminated (the agent must not outlive its supervisor: cleanup has to run), or by
/// `stop_agent`. Its whole process group goes at the end.
async fn wait(
    s: &Supervised<'_>,
    child: &mut tokio::process::Child,
) -> CoordResult<(std::process::ExitStatus, Option<&'static str>)> {
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let group = pgid.and_then(rustix::process::Pid::from_raw);
    let signal_group = |sig| {
        if let Some(g) = group {
            let _ = rustix::process::kill_process_group(g, sig);
        }
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| io("cannot watch for SIGTERM", e))?;
    let stop_asked = async {
        if !s.spawned {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if let Ok(Some((a, _))) = s.coordinator.store().spawned_agent(&s.agent.agent_id).await
                && (a.stop_requested || !a.status.is_active())
            {
                return;
            }
        }
    };
    let stop = tokio::select! {
        status = child.wait() => Ok(status.map_err(|e| io("waiting for the agent", e))?),
        () = tokio::time::sleep(s.deadline) => Err("deadline"),
        _ = tokio::signal::ctrl_c() => Err("interrupted"),
        _ = terminate.recv() => Err(if s.spawned { "stopped" } else { "terminated" }),
        () = stop_asked => Err("stopped"),
    };
    let (status, stopped) = match stop {
        Ok(status) => (status, None),
        Err(why) => {
            // The whole process group: TERM, a grace period, then KILL.
            signal_group(rustix::process::Signal::TERM);
            let status = match tokio::time::timeout(std::time::Duration::from_secs(10), child.wait()).await {
                Ok(s) => s,
                Err(_) => {
                    signal_group(rustix::process::Signal::KILL);
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            (status.map_err(|e| io("waiting for the agent", e))?, Some(why))
        }
    };
    // What it left running in the background goes too.
    signal_group(rustix::process::Signal::KILL);
    Ok((status, stopped))
}

/// The dead sockets, the placeholders' empty mount points left on the host, and a word
/// about git repositories the agent created.
fn clean_up(s: &Supervised<'_>, placeholders: Vec<PathBuf>, git_entries: Option<&[PathBuf]>) {
    for sock in ["api.sock", "proxy.sock", "model.sock"] {
        let _ = std::fs::remove_file(s.run_dir.join(sock));
    }
    for p in placeholders {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir(&p);
        } else if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(&p);
        }
    }
    if let Some(before) = git_entries {
        crate::sandbox::warn_of_new_repositories(&s.ctx.repo_root, before);
    }
}

/// Carries each connection of `listener` to `addr` (the model endpoint on loopback).
async fn forward_to_tcp(listener: tokio::net::UnixListener, addr: String) -> std::io::Result<()> {
    loop {
        let (mut unix, _) = listener.accept().await?;
        let addr = addr.clone();
        tokio::spawn(async move {
            if let Ok(mut tcp) = tokio::net::TcpStream::connect(&addr).await {
                let _ = tokio::io::copy_bidirectional(&mut unix, &mut tcp).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::launch::programs::install_dir;

    #[test]
    fn a_runtime_is_installed_in_its_package_or_its_virtual_environment() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let npm = root.join("ci/node_modules/.bin/claude");
        let venv = root.join("venv-aider/bin/aider");
        let plain = root.join("tools/bin/aider");
        for p in [&npm, &venv, &plain] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        std::fs::write(root.join("venv-aider/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(install_dir(&npm), root.join("ci/node_modules"));
        assert_eq!(install_dir(&venv), root.join("venv-aider"), "the modules beside bin/");
        assert_eq!(install_dir(&plain), root.join("tools/bin"), "not a virtual environment");
    }
}
