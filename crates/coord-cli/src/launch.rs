//! `coord agent list|show|flags|run` (docs/agents.md): agent definitions from
//! `.claude/agents/*.md`, their launch plans (`coord_domain::agents`, pure) and the
//! launch itself — its own identity, key and profile, inside the sandbox, supervised.

use crate::args::ValidationArgs;
use crate::args::{AgentCommand, AgentFlagsArgs, AgentRunArgs, LaunchArgs};
use crate::context::Context;
use crate::isolate;
use crate::open;
use crate::output::{self, Output};
use crate::sandbox::{Enforced, advisory_proxy, enforced_command, unavailable};
use coord_domain::access::Principal;
use coord_domain::agents::isolation::Isolation;
use coord_domain::agents::preflight::{self, LaunchPlanSummary, PreflightRequest, Validator, Verdict};
use coord_domain::agents::registry::{self, Entry, NotFound};
use coord_domain::agents::spawn::{self, SpawnStatus, SpawnUpdate, SpawnedAgent};
use coord_domain::agents::{self, AgentDefinition, FieldError, LaunchInputs, LaunchPlan, Runtime};
use coord_domain::keys::{CreateApiKeyRequest, RevokeApiKeyRequest};
use coord_domain::network::{Enforcement, SandboxRunRequest};
use coord_domain::profiles::{AssignProfileRequest, UnassignProfileRequest};
use coord_domain::queue::CompleteWorkRequest;
use coord_domain::sessions::EndSessionRequest;
use coord_domain::{Caller, CoordError, CoordResult, Empty, ErrorCode};
use coord_egress::sandbox::{self, API_PORT, MODEL_PORT};
use coord_egress::{Proxy, Resolver, RunTokens};
use coord_service::call;
use coord_service::ops::{
    agents as agent_ops, keys as key_ops, network as net_ops, profiles as profile_ops, queue as queue_ops,
    sessions as session_ops,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The agent type of launched agents (no type default: each launch's identity gets its
/// profile assigned).
pub const AGENT_TYPE: &str = spawn::AGENT_TYPE;

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

/// Where definitions live, relative to the repository.
pub const DEFINITIONS: &str = ".claude/agents";

pub async fn run(cmd: AgentCommand, ctx: &Context, out: Output) -> u8 {
    let r = match cmd {
        AgentCommand::List => return list(ctx, out),
        AgentCommand::Show { agent } => return show_agent(ctx, &agent, out),
        AgentCommand::Flags(args) => flags(&args, ctx, out),
        AgentCommand::Run(args) => launch(*args, ctx, out, None).await,
        // (Not `agent_id`: clap would take it for the global --agent-id, the caller.)
        AgentCommand::Supervise { spawned } => supervise_spawned(&spawned, ctx, out).await,
        AgentCommand::Spawn(args) => crate::spawner::spawn(*args, ctx, out).await,
        AgentCommand::Spawned { active, limit } => crate::spawner::list(active, limit, ctx, out).await,
        AgentCommand::Status { spawned } => crate::spawner::status(&spawned, ctx, out).await,
        AgentCommand::Output { spawned, wait } => crate::spawner::output(&spawned, wait, ctx, out).await,
        AgentCommand::Stop { spawned, reason } => crate::spawner::stop(&spawned, reason, ctx, out).await,
    };
    match r {
        Ok(code) => code,
        Err(e) => out.error(&e),
    }
}

/// The registry: every `.md` file of `.claude/agents` (by file name) and the entries of
/// `agents.json`, each checked, then checked against each other.
pub(crate) fn definitions(ctx: &Context) -> Vec<Entry> {
    let dir = ctx.repo_root.join(DEFINITIONS);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let too_big = |limit: usize| Err(vec![FieldError::new("file", format!("larger than {limit} bytes"))]);
    let unreadable = |e: std::io::Error| Err(vec![FieldError::new("file", format!("unreadable: {e}"))]);
    let mut entries: Vec<Entry> = files
        .into_iter()
        .map(|p| {
            let parsed = match std::fs::metadata(&p) {
                Ok(m) if m.len() > agents::definition::MAX_DEFINITION_BYTES as u64 => {
                    too_big(agents::definition::MAX_DEFINITION_BYTES)
                }
                _ => std::fs::read_to_string(&p).map_or_else(unreadable, |text| agents::parse_definition(&text)),
            };
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let claimed = parsed.as_ref().ok().map(|d| d.name.clone()).or(stem);
            Entry::new(relative(ctx, &p), None, claimed, parsed)
        })
        .collect();
    let json = ctx.repo_root.join(registry::AGENTS_JSON);
    match std::fs::metadata(&json) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Ok(m) if m.len() > registry::MAX_AGENTS_JSON_BYTES as u64 => entries.push(Entry::new(
            registry::AGENTS_JSON,
            None,
            None,
            too_big(registry::MAX_AGENTS_JSON_BYTES),
        )),
        _ => match std::fs::read_to_string(&json) {
            Ok(text) => entries.extend(registry::parse_agents_json(registry::AGENTS_JSON, &text)),
            Err(e) => entries.push(Entry::new(registry::AGENTS_JSON, None, None, unreadable(e))),
        },
    }
    registry::assemble(entries)
}

fn relative(ctx: &Context, p: &Path) -> String {
    p.strip_prefix(&ctx.repo_root).unwrap_or(p).display().to_string()
}

/// The valid definition `name` of the registry.
pub(crate) fn find(ctx: &Context, name: &str) -> CoordResult<(String, AgentDefinition)> {
    let all = definitions(ctx);
    match registry::find(&all, name) {
        Ok(d) => {
            let place = all
                .iter()
                .find(|e| e.definition() == Some(d))
                .map(Entry::place)
                .unwrap_or_default();
            Ok((place, d.clone()))
        }
        Err(NotFound::Invalid { place, errors }) => {
            let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("{place} is not a valid agent definition: {}", list.join("; ")),
            )
            .with_detail("errors", json!(errors))
            .with_detail("file", place))
        }
        Err(NotFound::Missing { known }) => Err(CoordError::new(
            ErrorCode::NotFound,
            format!(
                "no agent {name:?} in the registry ({DEFINITIONS}/*.md, {}): {}",
                registry::AGENTS_JSON,
                if known.is_empty() {
                    "there are none: see docs/agents.md".to_string()
                } else {
                    format!("there are: {}", known.join(", "))
                }
            ),
        )
        .with_detail("known", json!(known))),
    }
}

/// `coord agents list` / `coord agent list`: the registry, invalid entries with their errors.
pub(crate) fn list(ctx: &Context, out: Output) -> u8 {
    let all = definitions(ctx);
    let bad = all.iter().any(|e| e.definition().is_none());
    if out.json {
        let rows: Vec<serde_json::Value> = all
            .iter()
            .map(|e| {
                let mut row = json!({"file": e.file, "valid": e.definition().is_some()});
                if let Some(at) = &e.at {
                    row["at"] = json!(at);
                }
                match e.definition() {
                    Some(d) => row["definition"] = json!(d),
                    None => row["errors"] = json!(e.errors()),
                }
                row
            })
            .collect();
        println!("{}", json!({"success": !bad, "agents": rows}));
    } else if all.is_empty() {
        println!(
            "no agent definitions in {DEFINITIONS}/ or {} (see docs/agents.md)",
            registry::AGENTS_JSON
        );
    } else {
        let mut t = output::table(&[
            "ID",
            "PROFILE",
            "RUNTIME",
            "TOOLS",
            "DELEGATES TO",
            "WHERE",
            "DESCRIPTION",
        ]);
        for e in &all {
            match e.definition() {
                Some(d) => t.add_row(vec![
                    d.name.clone(),
                    d.profile.to_string(),
                    d.runtime.unwrap_or(Runtime::Claude).name().to_string(),
                    d.tools.join(","),
                    d.delegates_to.join(","),
                    e.place(),
                    output::ellipsis(&d.description, 50),
                ]),
                None => t.add_row(vec![
                    "(invalid)".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    e.place(),
                    output::ellipsis(
                        &e.errors()
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; "),
                        100,
                    ),
                ]),
            };
        }
        println!("{t}");
    }
    if bad { output::EXIT_USAGE } else { output::EXIT_OK }
}

/// `coord agents show ID` / `coord agent show ID`.
pub(crate) fn show_agent(ctx: &Context, name: &str, out: Output) -> u8 {
    match find(ctx, name) {
        Ok((place, d)) => show(&place, &d, out),
        Err(e) => out.error(&e),
    }
}

fn show(place: &str, d: &AgentDefinition, out: Output) -> u8 {
    if out.json {
        println!("{}", json!({"success": true, "file": place, "definition": d}));
        return output::EXIT_OK;
    }
    match &d.display_name {
        Some(n) => println!("{} — {n} ({place})", d.name),
        None => println!("{} ({place})", d.name),
    }
    println!("  description: {}", d.description);
    println!(
        "  profile:     {} (from {}; coord profile {})",
        d.profile,
        d.profile_from,
        d.profile.coord_profile()
    );
    println!("  tools:       {}", d.tools.join(", "));
    println!("  writable:    {:?}", d.profile.writable());
    println!("  runtime:     {}", d.runtime.map_or("claude (default)", Runtime::name));
    if let Some(m) = &d.model {
        println!("  model:       {m}");
    }
    println!(
        "  max turns:   {}",
        d.max_turns.unwrap_or(agents::launch::DEFAULT_MAX_TURNS)
    );
    if let Some(p) = &d.parent {
        println!("  parent:      {p} (may delegate to it)");
    }
    if !d.children.is_empty() {
        println!("  children:    {} (it may delegate to them)", d.children.join(", "));
    }
    println!(
        "  delegates:   {}",
        if d.delegates_to.is_empty() {
            "to nobody (when spawned; its children excepted)".to_string()
        } else {
            d.delegates_to.join(", ")
        }
    );
    println!("  prompt:      {}", output::ellipsis(&d.prompt, 200));
    output::EXIT_OK
}

/// The provider credentials a runtime gets from the launcher's environment (a login kept
/// in the launcher's home is not visible in the sandbox).
pub(crate) fn provider_keys(runtime: Runtime) -> &'static [&'static str] {
    match runtime {
        Runtime::Claude => &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
        Runtime::Codex | Runtime::Aider => &["OPENAI_API_KEY"],
    }
}

/// The runtime asked for, else the definition's, else Claude Code.
fn runtime(asked: Option<&str>, d: &AgentDefinition) -> CoordResult<Runtime> {
    let Some(name) = asked else {
        return Ok(d.runtime.unwrap_or(Runtime::Claude));
    };
    Runtime::parse(name).ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            format!("--runtime {name:?}: use claude, codex or aider"),
        )
        .with_field("runtime")
    })
}

/// A shell-quoted argv, for people to read and paste.
fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn flags(args: &AgentFlagsArgs, ctx: &Context, out: Output) -> CoordResult<u8> {
    let (_, d) = find(ctx, &args.agent)?;
    let runtime = runtime(args.runtime.as_deref(), &d)?;
    let coord_env = coord_env("$AGENT_ID", API_PORT);
    let workspace = ctx.repo_root.to_string_lossy();
    let plan = agents::plan(
        runtime,
        &LaunchInputs {
            definition: &d,
            task: &args.task,
            workspace: &workspace,
            run_dir: "$RUN",
            coord_exe: "coord",
            program: runtime.name(),
            coord_env: &coord_env,
            model_base_url: None,
            files: &[],
        },
    );
    if out.json {
        println!("{}", json!({"success": true, "agent": d.name, "plan": plan}));
        return Ok(output::EXIT_OK);
    }
    println!(
        "# {} on {}: profile {} (from {}), coord profile {}, writable: {:?}",
        d.name,
        runtime.name(),
        d.profile,
        d.profile_from,
        d.profile.coord_profile(),
        plan.writable
    );
    println!(
        "# run by `coord agent run {} ...` inside the sandbox; $RUN = .coord/runs/$AGENT_ID",
        d.name
    );
    println!("# environment (besides PATH, LANG, ... and the proxy variables):");
    for (k, v) in &plan.env {
        println!("{k}={}", shell_line(std::slice::from_ref(v)));
    }
    println!("COORDINATION_API_KEY=<a key bound to $AGENT_ID, revoked when the run ends>");
    for k in provider_keys(runtime) {
        println!("{k}=<yours, passed through when set; a login kept in your home is not visible>");
    }
    println!("\n{}", shell_line(&plan.argv));
    for f in &plan.files {
        println!("\n# {}\n{}", f.path, f.contents.trim_end());
    }
    for n in &plan.notes {
        println!("\n# note: {n}");
    }
    Ok(output::EXIT_OK)
}

/// What coord's MCP server and hooks need inside the sandbox (the key is passed in the
/// environment only, never written to a file another run could read).
fn coord_env(agent_id: &str, api_port: u16) -> Vec<(String, String)> {
    vec![
        ("COORDINATION_API_URL".into(), format!("http://127.0.0.1:{api_port}")),
        ("COORD_AGENT_ID".into(), agent_id.into()),
        ("COORD_AGENT_TYPE".into(), AGENT_TYPE.into()),
    ]
}

fn io(what: &str, e: std::io::Error) -> CoordError {
    CoordError::new(ErrorCode::SandboxUnavailable, format!("{what}: {e}"))
}

/// Spec 003's toggle: `COORD_SANDBOX_ENABLED=false` launches outside the sandbox.
/// Unset or true: sandboxed; anything unreadable is refused, not guessed.
pub(crate) fn sandbox_enabled() -> CoordResult<bool> {
    match std::env::var("COORD_SANDBOX_ENABLED") {
        Err(_) => Ok(true),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("COORD_SANDBOX_ENABLED={v:?}: use true or false"),
            )),
        },
    }
}

/// `url`'s host and port when it is plain HTTP on this machine's loopback.
fn loopback_http(url: &str) -> Option<(String, u16, String)> {
    let u = url::Url::parse(url).ok()?;
    if u.scheme() != "http" {
        return None;
    }
    let host = u.host_str()?.trim_matches(['[', ']']).to_string();
    let ip: std::net::IpAddr = if host.eq_ignore_ascii_case("localhost") {
        std::net::Ipv4Addr::LOCALHOST.into()
    } else {
        host.parse().ok()?
    };
    ip.is_loopback()
        .then(|| (ip.to_string(), u.port().unwrap_or(80), u.path().to_string()))
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A launch's outcome, as printed and as `--json`.
#[derive(serde::Serialize)]
struct Outcome {
    success: bool,
    /// Why it was stopped before it ended: deadline, interrupted, terminated, stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<String>,
    /// Its runtime said the final answer is an error.
    #[serde(skip)]
    result_is_error: bool,
    agent_id: String,
    agent: String,
    runtime: &'static str,
    profile: String,
    exit_code: i32,
    timed_out: bool,
    result: Option<String>,
    permission_denials: Vec<serde_json::Value>,
    run_dir: String,
    /// Its worktree (--isolation worktree), and what became of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<coord_domain::agents::isolation::IsolatedWorktree>,
}

/// The final `result` line of Claude Code's stream-json output, or Codex's last message.
/// How much of the end of a run's output is read for its final answer.
const FINAL_OUTPUT_BYTES: usize = 1 << 20;

/// Also whether the runtime marked it an error.
fn final_result(plan: &LaunchPlan, run_dir: &Path) -> (Option<String>, Vec<serde_json::Value>, bool) {
    match plan.runtime {
        Runtime::Claude => {
            // The end is enough (the result line is last); read safely: the agent can write
            // its run directory.
            let text = crate::spawner::read_tail(&run_dir.join("output.jsonl"), FINAL_OUTPUT_BYTES).unwrap_or_default();
            text.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| v["type"] == "result")
                .map(|v| {
                    (
                        v["result"].as_str().map(String::from),
                        v["permission_denials"].as_array().cloned().unwrap_or_default(),
                        v["is_error"].as_bool().unwrap_or(false),
                    )
                })
                .unwrap_or_default()
        }
        Runtime::Codex => (
            crate::spawner::read_tail(&run_dir.join("last-message.txt"), FINAL_OUTPUT_BYTES),
            Vec::new(),
            false,
        ),
        // Aider has no structured output: what it printed (its answer, the edits it
        // applied, or why it could not) is the result.
        Runtime::Aider => (
            crate::spawner::read_tail(&run_dir.join("output.jsonl"), FINAL_OUTPUT_BYTES)
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            Vec::new(),
            false,
        ),
    }
}

/// The runtime's program (`given`, else on the PATH): an executable file of a version
/// coord's plans were verified on.
pub(crate) async fn program_of(runtime: Runtime, given: Option<PathBuf>) -> CoordResult<PathBuf> {
    let program = match given {
        Some(p) => p,
        None => find_program(runtime.name()).ok_or_else(|| {
            CoordError::new(
                ErrorCode::InvalidArgument,
                format!("{} is not on the PATH: install it, or give --program", runtime.name()),
            )
            .with_field("program")
        })?,
    };
    let program = std::fs::canonicalize(&program).unwrap_or(program);
    let executable = std::fs::metadata(&program)
        .is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0);
    if !executable {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!("--program {}: not an executable file", program.display()),
        )
        .with_field("program"));
    }
    check_version(runtime, &program).await?;
    Ok(program)
}

/// bubblewrap, installed and able to make namespaces here.
pub(crate) async fn bwrap_ready() -> CoordResult<PathBuf> {
    let bwrap = sandbox::find_bwrap().ok_or_else(|| {
        unavailable(
            "bubblewrap (bwrap) is not installed: coord launches agents only inside the sandbox \
             (apt-get install bubblewrap)"
                .into(),
        )
    })?;
    if let Some(why) = sandbox::unavailable(&bwrap).await {
        return Err(unavailable(why));
    }
    Ok(bwrap)
}

/// The runtime's own provider key, when the environment has one.
pub(crate) fn has_provider_key(runtime: Runtime) -> bool {
    provider_keys(runtime)
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
}

/// Refuses a runtime older than the one its plans were verified on (or one whose version
/// cannot be read): an older Claude Code silently ignores confinement settings.
async fn check_version(runtime: Runtime, program: &Path) -> CoordResult<()> {
    if runtime.min_version().is_none() {
        return Ok(());
    }
    let run = tokio::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(std::time::Duration::from_secs(30), run).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(Err(e)) => return Err(io(&format!("cannot run {} --version", program.display()), e)),
        Err(_) => String::new(),
    };
    runtime
        .check_version(&out)
        .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, m).with_field("program"))
}

/// `coord agent supervise ID`: started by `spawn_agent` (see `crate::spawner`), runs the
/// registered agent as `coord agent run` would, from its record.
async fn supervise_spawned(agent_id: &str, ctx: &Context, out: Output) -> CoordResult<u8> {
    // From the first moment: `stop_agent`'s SIGTERM must never kill the supervisor before
    // it has cleaned up (a stop that comes this early is also seen in the record).
    let _held = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| io("cannot watch for SIGTERM", e))?;
    open::local_only(ctx, "`coord agent supervise` (it runs an agent spawn_agent registered)")?;
    let coordinator = open::coordinator_with(ctx, 2).await?;
    let (record, _) = coordinator
        .store()
        .spawned_agent(agent_id)
        .await?
        .ok_or_else(|| spawn::not_spawned(agent_id))?;
    let args = AgentRunArgs {
        agent: record.definition.name.clone(),
        task: record.task.clone(),
        launch: LaunchArgs {
            runtime: Some(record.runtime.name().into()),
            program: None,
            model_url: None,
            timeout: None,
            env: Vec::new(),
            files: Vec::new(),
            resolve: Vec::new(),
            isolation: crate::args::IsolationArgs {
                isolation: Some(record.isolation),
                keep_worktree: record.keep_worktree,
            },
            validation: ValidationArgs::already_judged(),
        },
    };
    let task = record.task_id.clone();
    let outcome = launch(args, ctx, out, Some(record)).await;
    if let Err(e) = &outcome {
        // It may have failed before it started: its task goes back to the queue and the
        // record says why (a record already ended stays as it ended).
        let me = Principal::local(Caller::new(agent_id, AGENT_TYPE));
        let end = EndSessionRequest {
            release_locks: Some(true),
            handoff: None,
            requeue_tasks: Some(true),
            if_session: None,
        };
        if let Err(e) = call::<session_ops::EndSessionOp, _>(&coordinator, &me, end).await {
            eprintln!("coord agent: could not requeue task {task}: {e}");
        }
        // Stopped before it started: that is how it ended, with the stop's reason.
        let stopped = matches!(coordinator.store().spawned_agent(agent_id).await, Ok(Some((a, _))) if a.stop_requested);
        let ended = SpawnUpdate::Ended {
            status: if stopped {
                SpawnStatus::Stopped
            } else {
                SpawnStatus::Failed
            },
            exit_code: None,
            result: None,
            error: Some(e.message.clone()),
            permission_denials: Vec::new(),
            worktree: None,
        };
        let _ = coordinator.record_agent_run(agent_id, ended).await;
    }
    outcome
}

/// The plan a validator judges.
#[allow(clippy::too_many_arguments)]
pub(crate) fn summary(
    d: &AgentDefinition,
    runtime: Runtime,
    task: &str,
    network_policy: String,
    model_url: Option<String>,
    sandboxed: bool,
    env: &[String],
    resolve: &[String],
) -> LaunchPlanSummary {
    LaunchPlanSummary {
        agent: d.name.clone(),
        profile: d.profile.to_string(),
        runtime: runtime.name().into(),
        task: task.to_string(),
        tools: d.tools.clone(),
        writable: format!("{:?}", d.profile.writable()).to_lowercase(),
        network_policy,
        bash_commands: d.profile.bash_prefixes().iter().map(|p| p.to_string()).collect(),
        system_prompt: d.prompt.clone(),
        model: d.model.clone(),
        model_endpoint: model_url,
        sandboxed,
        tools_enforced: d.tools_enforced_by(runtime),
        passed_env: env
            .iter()
            .map(|e| e.split_once('=').map_or(e.as_str(), |(k, _)| k).to_string())
            .chain(provider_keys(runtime).iter().map(|k| k.to_string()))
            .collect(),
        resolve: resolve
            .iter()
            .map(|r| r.split_once('=').map_or(r.as_str(), |(k, _)| k).to_string())
            .collect(),
    }
}

/// `coord agent run`, or with `spawned` the supervisor of an agent `spawn_agent`
/// registered (`coord agent supervise`): then the definition, task, identity, profile
/// and deadline are the record's, pre-flight validation already happened, and the end
/// of the run is reported to the record and settles its task.
async fn launch(mut args: AgentRunArgs, ctx: &Context, out: Output, spawned: Option<SpawnedAgent>) -> CoordResult<u8> {
    open::local_only(
        ctx,
        "`coord agent run` (it serves the coordinator to the agent it launches)",
    )?;
    let d = match &spawned {
        Some(record) => record.definition.clone(),
        None => find(ctx, &args.agent)?.1,
    };
    let runtime = runtime(args.launch.runtime.as_deref(), &d)?;
    if args.task.trim().is_empty() {
        return Err(CoordError::new(ErrorCode::InvalidArgument, "the task is empty").with_field("task"));
    }
    if !ctx.in_git_repo {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{} is not a git repository: run coord agent run inside one",
                ctx.repo_root.display()
            ),
        ));
    }
    // Everything the user can get wrong is checked before anything is looked up,
    // started or registered, so that the first error is the one to fix.
    let sandboxed = sandbox_enabled()?;
    if !sandboxed && runtime == Runtime::Aider {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "COORD_SANDBOX_ENABLED=false: Aider has no permission system of its own; it runs only inside the sandbox",
        ));
    }
    for e in &args.launch.env {
        if !sandbox::valid_env_name(e.split_once('=').map_or(e.as_str(), |(k, _)| k)) {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("--env {e:?}: give NAME or NAME=VALUE, NAME of letters, digits and _"),
            )
            .with_field("env"));
        }
    }
    if args
        .launch
        .timeout
        .is_some_and(|t| t < std::time::Duration::from_secs(1))
    {
        return Err(CoordError::new(ErrorCode::InvalidArgument, "--timeout: give at least 1s").with_field("timeout"));
    }
    let v = &args.launch.validation;
    if !v.no_validation && v.validator_command.is_none() && v.validator_url.is_none() {
        return Err(no_validator());
    }
    let program = program_of(runtime, args.launch.program.clone()).await?;
    if !d.tools_enforced_by(runtime) {
        eprintln!(
            "coord agent: note: {} has no per-tool list; {}'s `tools:` are not enforced by it (the sandbox decides what it can write and reach)",
            runtime.name(),
            d.name
        );
    }
    let bwrap = if sandboxed {
        Some(bwrap_ready().await?)
    } else {
        eprintln!(
            "coord agent: WARNING: COORD_SANDBOX_ENABLED=false: the agent runs OUTSIDE the sandbox: only {}'s own \
             permission checks and coord's hooks hold it; nothing stops its commands writing outside the \
             workspace or reaching any host. Recorded in the audit trail as advisory enforcement.",
            runtime.name()
        );
        None
    };
    let resolver = Resolver::with_pins(&args.launch.resolve)
        .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, format!("--resolve {m}")).with_field("resolve"))?;
    // The model endpoint: relayed when it is plain HTTP on loopback (no proxy can reach
    // this machine's loopback for the agent), otherwise reached through the proxy, its
    // host then one of the `model_providers` category.
    let key_var = match runtime {
        Runtime::Claude => "ANTHROPIC_BASE_URL",
        Runtime::Codex | Runtime::Aider => "OPENAI_BASE_URL",
    };
    let model_url = args
        .launch
        .model_url
        .clone()
        .or_else(|| std::env::var(key_var).ok().filter(|u| !u.trim().is_empty()));
    let mut ctx = ctx.clone();
    // Unsandboxed, the agent shares this machine's loopback: nothing to relay.
    let relayed = model_url.as_deref().and_then(loopback_http).filter(|_| bwrap.is_some());
    if let (Some(url), None) = (&model_url, &relayed) {
        let target = coord_domain::network::parse_target(url).map_err(|m| {
            CoordError::new(ErrorCode::InvalidArgument, format!("--model-url {url:?}: {m}")).with_field("model_url")
        })?;
        ctx.model_endpoints.push(target.to_string());
    }
    let inner_model_url = match (&relayed, &model_url) {
        (Some((_, _, path)), _) => Some(format!("http://127.0.0.1:{MODEL_PORT}{path}")),
        (None, url) => url.clone(),
    };

    let coordinator = Arc::new(open::coordinator_with(&ctx, 8).await?);
    let coord: Arc<dyn coord_service::Coordination> = coordinator.clone();
    let operator = Principal::local(ctx.caller.clone());
    let agent_id = match &spawned {
        Some(record) => record.agent_id.clone(),
        None => spawn::agent_id_for(&d.name),
    };
    let agent = Caller::new(agent_id.clone(), AGENT_TYPE);
    let me = Principal::local(agent.clone());
    // The files the task is about: not while another agent holds one (Aider, which has
    // no hooks, could not be stopped once it runs).
    if !args.launch.files.is_empty() {
        use coord_service::CoordinationExt as _;
        let paths = args.launch.files.clone();
        coord
            .check_edit(&ctx.caller, coord_domain::locks::CheckEditRequest { paths })
            .await?;
    }

    // The profile's deadline, unless --timeout says otherwise.
    let profiles = call::<profile_ops::ListProfiles, _>(&*coord, &operator, Empty {}).await?;
    let coord_profile = d.profile.coord_profile();
    let limit = profiles
        .profiles
        .iter()
        .find(|p| p.name == coord_profile)
        .ok_or_else(|| {
            CoordError::new(
                ErrorCode::NotFound,
                format!("the built-in profile {coord_profile} is missing: run coord migrate"),
            )
        })?
        .resource_limits
        .max_execution_time
        .max();
    let deadline = match &spawned {
        Some(record) => std::time::Duration::from_secs(u64::try_from(record.deadline_minutes).unwrap_or(1) * 60),
        None => args
            .launch
            .timeout
            .or(limit)
            .unwrap_or(std::time::Duration::from_secs(30 * 60)),
    };

    // Pre-flight validation, before anything is registered for the agent.
    let policy = profiles
        .profiles
        .iter()
        .find(|p| p.name == coord_profile)
        .and_then(|p| p.network_policy.clone())
        .unwrap_or_else(|| coord_domain::network::DENY_ALL.to_string());
    if spawned.is_none() {
        let summary = summary(
            &d,
            runtime,
            &args.task,
            policy,
            model_url.clone(),
            bwrap.is_some(),
            &args.launch.env,
            &args.launch.resolve,
        );
        let (validator, verdict, failure) = judge(&args.launch.validation, &summary).await?;
        call::<agent_ops::RecordPreflight, _>(
            &*coord,
            &operator,
            PreflightRequest {
                target_agent_id: agent_id.clone(),
                plan: summary,
                validator,
                verdict,
                failure,
            },
        )
        .await?;
        call::<profile_ops::AssignProfile, _>(
            &*coord,
            &operator,
            AssignProfileRequest {
                profile: coord_profile.into(),
                target_agent_id: Some(agent_id.clone()),
                target_agent_type: None,
            },
        )
        .await?;
    }
    let key = call::<key_ops::CreateApiKey, _>(
        &*coord,
        &operator,
        CreateApiKeyRequest {
            bound_agent_id: agent_id.clone(),
            bound_agent_type: AGENT_TYPE.into(),
            expires_in_minutes: Some(
                i64::try_from(deadline.as_secs() / 60 + 5)
                    .unwrap_or(i64::MAX)
                    .min(527_040),
            ),
            session_id: None,
            task_id: None,
        },
    )
    .await?;

    let run_dir = ctx.state_dir.join("runs").join(&agent_id);
    let keep_worktree = args.launch.isolation.keep_worktree;
    let revoke = |key_id: String| {
        let (coord, operator) = (coord.clone(), operator.clone());
        async move {
            let _ = call::<key_ops::RevokeApiKey, _>(&*coord, &operator, RevokeApiKeyRequest { key_id }).await;
        }
    };
    // An isolated agent works in a worktree of its own: from here on `ctx` is seen from it.
    let (ctx, worktree) = match args.launch.isolation.isolation.unwrap_or_default() {
        Isolation::Shared => (ctx, None),
        Isolation::Worktree => match isolate::enter(&ctx, &*coord, &operator, &agent_id).await {
            Ok((moved, wt, ports)) => {
                args.launch.env.extend(ports);
                (moved, Some(wt))
            }
            Err(e) => {
                revoke(key.key_id.clone()).await;
                return Err(e);
            }
        },
    };
    if spawned.is_some() {
        let started = SpawnUpdate::Started {
            host: crate::context::hostname(),
            pid: std::process::id(),
            run_dir: run_dir.display().to_string(),
            key_id: key.key_id.clone(),
            worktree: worktree.clone(),
        };
        if let Err(e) = coordinator.record_agent_run(&agent_id, started).await {
            // Stopped (or reclaimed) before it started: nothing runs.
            revoke(key.key_id.clone()).await;
            if let Some(wt) = worktree {
                isolate::leave(&ctx, &*coord, &operator, wt, &agent_id, keep_worktree).await;
            }
            return Err(e);
        }
    }
    let outcome = supervise(Supervised {
        ctx: &ctx,
        args: &args,
        d: &d,
        runtime,
        program: &program,
        bwrap: bwrap.as_deref(),
        coordinator: coordinator.clone(),
        resolver,
        agent: agent.clone(),
        key: &key.api_key,
        run_dir: &run_dir,
        relayed: relayed.as_ref().map(|(h, p, _)| (h.clone(), *p)),
        model_url: inner_model_url.as_deref(),
        deadline,
        spawned: spawned.is_some(),
    })
    .await;
    // A spawned agent's final answer settles its task (as the agent, which claimed it);
    // without one the task goes back to the queue with the session below.
    if let (Some(record), Ok(o)) = (&spawned, &outcome)
        && let Some(result) = &o.result
        && o.stopped.is_none()
    {
        let done = CompleteWorkRequest {
            task_id: record.task_id.clone(),
            success: o.exit_code == 0 && !o.result_is_error,
            result: Some(json!({"result": result})),
            error_message: (o.exit_code != 0 || o.result_is_error).then(|| format!("the agent's run failed: {result}")),
            changes: None,
            skill: None,
        };
        if let Err(e) = call::<queue_ops::CompleteWork, _>(&*coord, &me, done).await {
            eprintln!("coord agent: could not settle task {}: {e}", record.task_id);
        }
    }

    // Whatever happened: the key is revoked, the session ended (its locks released, its
    // claimed tasks back in the queue), the assignment removed.
    let _ = call::<key_ops::RevokeApiKey, _>(&*coord, &operator, RevokeApiKeyRequest { key_id: key.key_id }).await;
    let _ = call::<session_ops::EndSessionOp, _>(
        &*coord,
        &me,
        EndSessionRequest {
            release_locks: Some(true),
            handoff: None,
            requeue_tasks: Some(true),
            if_session: None,
        },
    )
    .await;
    let _ = call::<profile_ops::UnassignProfile, _>(
        &*coord,
        &operator,
        UnassignProfileRequest {
            target_agent_id: Some(agent_id.clone()),
            target_agent_type: None,
        },
    )
    .await;
    let worktree = match worktree {
        Some(wt) => Some(isolate::leave(&ctx, &*coord, &operator, wt, &agent_id, keep_worktree).await),
        None => None,
    };
    let mut outcome = outcome;
    if let Ok(o) = &mut outcome {
        o.worktree = worktree.clone();
    }
    if spawned.is_some() {
        let ended = match &outcome {
            Ok(o) => SpawnUpdate::Ended {
                status: match (o.stopped.as_deref(), o.success) {
                    (Some("deadline"), _) => SpawnStatus::TimedOut,
                    (Some(_), _) => SpawnStatus::Stopped,
                    (None, true) => SpawnStatus::Completed,
                    (None, false) => SpawnStatus::Failed,
                },
                exit_code: Some(o.exit_code),
                result: o.result.clone(),
                error: match (&o.stopped, o.success) {
                    (Some(why), _) => Some(format!("stopped: {why}")),
                    (None, false) if o.result.is_none() => Some(format!(
                        "{} exited with {} and no final answer (output in {})",
                        o.runtime, o.exit_code, o.run_dir
                    )),
                    _ => None,
                },
                permission_denials: o.permission_denials.clone(),
                worktree: worktree.clone(),
            },
            Err(e) => SpawnUpdate::Ended {
                status: SpawnStatus::Failed,
                exit_code: None,
                result: None,
                error: Some(e.message.clone()),
                permission_denials: Vec::new(),
                worktree: worktree.clone(),
            },
        };
        if let Err(e) = coordinator.record_agent_run(&agent_id, ended).await {
            eprintln!("coord agent: could not record the end of {agent_id}'s run: {e}");
        }
    }
    let outcome = outcome?;
    if out.json {
        println!("{}", serde_json::to_value(&outcome).unwrap_or_default());
    } else {
        if outcome.timed_out {
            eprintln!(
                "coord agent: {} ran past its {} deadline and was stopped",
                outcome.agent_id,
                humantime::format_duration(deadline)
            );
        }
        for denial in &outcome.permission_denials {
            eprintln!("coord agent: refused by {}: {}", runtime.name(), denial);
        }
        match &outcome.result {
            Some(r) => println!("{r}"),
            None => eprintln!("coord agent: no final answer (output in {})", outcome.run_dir),
        }
    }
    Ok(if outcome.success {
        output::EXIT_OK
    } else {
        output::EXIT_REFUSED
    })
}

struct Supervised<'a> {
    ctx: &'a Context,
    args: &'a AgentRunArgs,
    d: &'a AgentDefinition,
    runtime: Runtime,
    program: &'a Path,
    /// None: `COORD_SANDBOX_ENABLED=false`.
    bwrap: Option<&'a Path>,
    coordinator: Arc<coord_service::Coordinator>,
    resolver: Resolver,
    agent: Caller,
    key: &'a str,
    run_dir: &'a Path,
    relayed: Option<(String, u16)>,
    model_url: Option<&'a str>,
    deadline: std::time::Duration,
    /// A spawned agent's supervisor also stops when `stop_agent` asks (read from the
    /// record: the request may have reached another machine's coordinator).
    spawned: bool,
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

async fn supervise(s: Supervised<'_>) -> CoordResult<Outcome> {
    let agent_id = s.agent.agent_id.clone();
    for dir in ["home", "tmp"] {
        std::fs::create_dir_all(s.run_dir.join(dir)).map_err(|e| io("cannot create the run directory", e))?;
    }
    let run = s.run_dir.to_string_lossy().into_owned();
    let workspace = s.ctx.repo_root.to_string_lossy().into_owned();
    let exe = std::env::current_exe().map_err(|e| io("cannot find the coord binary", e))?;
    let exe = exe.to_string_lossy().into_owned();
    let program = s.program.to_string_lossy().into_owned();
    // The coordinator, for the agent's MCP server and hooks (the agent authenticates with
    // its key): in the sandbox, on a socket the relay exposes inside at
    // 127.0.0.1:API_PORT; without it, on a loopback port.
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
    let coord_env = coord_env(&agent_id, api_port);
    let mut plan = agents::plan(
        s.runtime,
        &LaunchInputs {
            definition: s.d,
            task: &s.args.task,
            workspace: &workspace,
            run_dir: &run,
            coord_exe: &exe,
            program: &program,
            coord_env: &coord_env,
            model_base_url: s.model_url,
            files: &s.args.launch.files,
        },
    );
    let held = held_by_others(&s).await?;
    if let Some(note) = coord_domain::agents::launch::held_note(&held)
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

    let mut model_task = None;
    if let Some((host, port)) = &s.relayed {
        let socket = s.run_dir.join("model.sock");
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket).map_err(|e| io("cannot relay the model endpoint", e))?;
        model_task = Some(tokio::spawn(forward_to_tcp(listener, format!("{host}:{port}"))));
        forwards.push((MODEL_PORT, socket));
    }

    let here: Vec<(String, String)> = std::env::vars().collect();
    let mut passed: Vec<String> = s.args.launch.env.clone();
    // The runtime's own provider key only.
    passed.extend(provider_keys(s.runtime).iter().map(|k| k.to_string()));
    let mut env = sandbox::passed_env(&here, &passed);
    if s.bwrap.is_none() {
        env.push(("COORD_AGENT_ID".into(), agent_id.clone()));
        env.push(("COORD_AGENT_TYPE".into(), AGENT_TYPE.into()));
    }
    env.extend(plan.env.iter().cloned());
    env.push(("COORDINATION_API_KEY".into(), s.key.into()));

    let me = Principal::local(s.agent.clone());
    let coord: Arc<dyn coord_service::Coordination> = s.coordinator.clone();
    let recorded = call::<net_ops::RecordSandboxRun, _>(
        &*coord,
        &me,
        SandboxRunRequest {
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
            workspace: workspace.clone(),
        },
    )
    .await?;
    eprintln!(
        "coord agent: {agent_id} ({}, profile {} → coord profile {}, network policy {}, writable: {:?}) runs {} for at most {}; output in {}",
        s.d.name,
        s.d.profile,
        s.d.profile.coord_profile(),
        recorded.policy,
        plan.writable,
        s.runtime.name(),
        humantime::format_duration(s.deadline),
        s.run_dir.display()
    );

    let writable = match plan.writable {
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
    };
    // Read-only inside: the generated files, and in a writable workspace what tools
    // outside the sandbox read or run later (an existing one pinned, a missing one held
    // by an empty placeholder, removed after the run).
    let mut protected: Vec<(PathBuf, PathBuf)> = plan
        .files
        .iter()
        .map(|f| (PathBuf::from(&f.path), PathBuf::from(&f.path)))
        .collect();
    if plan.writable != agents::Writable::Nothing {
        for held in coord_domain::agents::launch::held_paths(&held) {
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
    let tokens = Arc::new(RunTokens::default());
    let token = tokens.issue(s.agent.clone());
    let proxy = Arc::new(Proxy::new(coord.clone(), tokens, Arc::new(s.resolver)));
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
                agent_id: &agent_id,
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
            // COORD_SANDBOX_ENABLED=false: the proxy variables only (advisory).
            env.extend(advisory_proxy(proxy, &agent_id, &token).await?);
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
    let mut child = command.spawn().map_err(|e| io("cannot start the agent", e))?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let group = pgid.and_then(rustix::process::Pid::from_raw);
    let signal_group = |sig| {
        if let Some(g) = group {
            let _ = rustix::process::kill_process_group(g, sig);
        }
    };
    // Stopped by its deadline, or by this process being interrupted or terminated (the
    // agent must not outlive its supervisor: cleanup below has to run).
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| io("cannot watch for SIGTERM", e))?;
    let stop_asked = async {
        if !s.spawned {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if let Ok(Some((a, _))) = s.coordinator.store().spawned_agent(&agent_id).await
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
    let timed_out = stopped == Some("deadline");
    if let Some(why @ ("interrupted" | "terminated")) = stopped {
        eprintln!("coord agent: {agent_id} stopped: coord agent run was {why}");
    }
    api_task.abort();
    if let Some(t) = model_task {
        t.abort();
    }
    // The sockets are dead now.
    for sock in ["api.sock", "proxy.sock", "model.sock"] {
        let _ = std::fs::remove_file(s.run_dir.join(sock));
    }
    // The placeholders' mount points stay behind on the host, empty: remove them.
    for p in placeholders {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir(&p);
        } else if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(&p);
        }
    }
    if let Some(before) = &git_entries {
        crate::sandbox::warn_of_new_repositories(&s.ctx.repo_root, before);
    }
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
    })
}

/// The directory a runtime is installed in: its nearest `node_modules` ancestor (an npm
/// package finds its platform binary beside it), else the Python virtual environment its
/// script belongs to (Aider: its modules are in the environment's `lib/`, beside `bin/`),
/// else its own directory.
fn install_dir(program: &Path) -> PathBuf {
    let venv = || {
        let bin = program.parent()?;
        let root = bin.parent()?;
        (bin.file_name()? == "bin" && root.join("pyvenv.cfg").is_file()).then_some(root)
    };
    program
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .or_else(venv)
        .or_else(|| program.parent())
        .unwrap_or(program)
        .to_path_buf()
}

/// Asks the configured validator about `plan`: which validator, its verdict, or why its
/// answer was not one (a denial). Unconfigured validation is refused: switching it off
/// must be said (`--no-validation`).
pub(crate) async fn judge(
    v: &ValidationArgs,
    plan: &LaunchPlanSummary,
) -> CoordResult<(Validator, Option<Verdict>, Option<String>)> {
    let plan_json = serde_json::to_string(plan).unwrap_or_default();
    let answer = if v.no_validation {
        eprintln!(
            "coord agent: WARNING: pre-flight validation is OFF for this launch (--no-validation / COORD_NO_VALIDATION=1); this is recorded in the audit trail"
        );
        return Ok((Validator::Disabled, None, None));
    } else if let Some(cmd) = &v.validator_command {
        (
            Validator::Command,
            run_validator_command(cmd, &plan_json, v.validator_timeout).await,
        )
    } else if let Some(url) = &v.validator_url {
        let key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.is_empty());
        let client = coord_remote::MessagesClient::new(url, key, v.validator_timeout)?;
        let body = json!({
            "model": v.validator_model,
            "max_tokens": 512,
            "system": preflight::MODEL_INSTRUCTIONS,
            "messages": [{"role": "user", "content": plan_json}],
        });
        let text = client.create(&body).await.and_then(|r| preflight::messages_text(&r));
        (Validator::Model, text)
    } else {
        return Err(no_validator());
    };
    Ok(match answer {
        (kind, Ok(text)) => match preflight::parse_verdict(&text) {
            Ok(verdict) => (kind, Some(verdict), None),
            Err(why) => (kind, None, Some(why)),
        },
        (kind, Err(why)) => (kind, None, Some(why)),
    })
}

fn no_validator() -> CoordError {
    CoordError::new(
        ErrorCode::InvalidArgument,
        "pre-flight validation is not configured: give --validator-command or --validator-url \
         (COORD_VALIDATOR_COMMAND / COORD_VALIDATOR_URL), or --no-validation (COORD_NO_VALIDATION=1) to launch without it (audited)",
    )
    .with_field("validator")
}

/// Runs the validator command with the plan on stdin; its whole stdout, or why there is none.
async fn run_validator_command(cmd: &str, plan: &str, timeout: std::time::Duration) -> Result<String, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut child = tokio::process::Command::new("/bin/sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("the validator command cannot start: {e}"))?;
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take().ok_or("the validator command has no stdout")?;
    let plan = plan.to_string();
    let talk = async move {
        if let Some(mut i) = stdin.take() {
            // A validator that does not read its input is its business.
            let _ = i.write_all(plan.as_bytes()).await;
        }
        let mut out = Vec::new();
        (&mut stdout)
            .take(preflight::MAX_VERDICT_BYTES as u64 + 1)
            .read_to_end(&mut out)
            .await
            .map_err(|e| format!("cannot read the validator's answer: {e}"))?;
        let status = child
            .wait()
            .await
            .map_err(|e| format!("the validator command failed: {e}"))?;
        Ok::<_, String>((status, out))
    };
    match tokio::time::timeout(timeout, talk).await {
        Err(_) => Err(format!(
            "the validator command did not answer within {}",
            humantime::format_duration(timeout)
        )),
        Ok(Err(why)) => Err(why),
        Ok(Ok((status, _))) if !status.success() => Err(format!("the validator command failed ({status})")),
        Ok(Ok((_, out))) => String::from_utf8(out).map_err(|_| "the validator's answer is not UTF-8".to_string()),
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
    use super::install_dir;

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
