//! The `coord` command line: a door. It parses arguments into requests, calls the
//! [`Coordination`] interface, and prints results; it holds no coordination rules.

mod anchor;
// The runtime's modules, under the names the commands use.
pub use coord_runtime::{agent_session, context, local_server, open, reaper, worktree};
mod agent;
mod approvals;
pub mod args;
mod audit;
mod bench;
mod call_flags;
mod cloud;
pub mod commands;
mod config;
mod config_file;
mod doctor;
mod files;
mod grammar;
mod guard;
pub mod hooks;
mod instructions;
mod memory;
mod network;
pub mod notify;
mod ops;
mod orchestrate;
pub mod output;
mod profiles;
mod remove;
mod runtime_sandbox;
mod sandbox;
pub mod setup;
mod spawned;
mod stats;
mod telemetry;
mod values;
mod verify;

use args::{Cli, Command};
use context::Context;
use coord_service::CoordinationExt as _;
use output::Output;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, Serialize)]
struct InitResult {
    success: bool,
    backend: &'static str,
    database: String,
    schema_version: i64,
    applied_migrations: Vec<i64>,
}

pub fn main() -> ExitCode {
    // SAFETY: first thing in the process: no other thread exists yet.
    if let Err(e) = unsafe { config::apply() } {
        let json = std::env::args_os()
            .skip(1)
            .take_while(|a| a != "--")
            .any(|a| a == "--json");
        return ExitCode::from(Output { json }.error(&e));
    }
    let cli = Cli::from_command_line();
    // A command that prints and ends (`coord agent flags X | head -1`) ends quietly when
    // its reader goes away, as other tools do, instead of panicking in println!. Not the
    // servers and supervisors: they write to sockets, where EPIPE is an error to handle;
    // nor what may launch an agent (`spawn_agent` from the shell): a pre-flight validator
    // that does not read the plan it is given must not kill the launch.
    let serves = matches!(
        cli.command,
        Command::Serve(_)
            | Command::Ui(_)
            | Command::Mcp
            | Command::Proxy(_)
            | Command::Sandbox(_)
            | Command::Agent(
                args::AgentCommand::Run(_) | args::AgentCommand::Spawn(_) | args::AgentCommand::Supervise { .. }
            )
            | Command::Run(_)
            | Command::Swarm(_)
            | Command::Team(_)
            | Command::Workflow(_)
            | Command::Call(_)
            | Command::Hook { .. }
    );
    if !serves {
        // SAFETY: called first thing on the main thread, before any other thread exists;
        // it only restores the default disposition of one signal.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // After the signal's disposition: the exporter, when on, has a thread of its own.
    let otel = init_logging();
    // Servers get worker threads; one-shot commands need none.
    let mut builder = match cli.command {
        Command::Serve(_)
        | Command::Ui(_)
        | Command::Mcp
        | Command::Proxy(_)
        | Command::Sandbox(_)
        | Command::Agent(_)
        | Command::Run(_)
        | Command::Swarm(_)
        | Command::Team(_)
        | Command::Workflow(_) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(output::EXIT_UNAVAILABLE);
        }
    };
    let code = runtime.block_on(run(cli));
    if let Some(provider) = otel {
        telemetry::shutdown(provider);
    }
    ExitCode::from(code)
}

/// Logs go to stderr (stdout carries results); `COORD_LOG` sets the filter: a level or
/// `target=level` directives (`warn`, `coord_postgres=debug,info`). They are off by
/// default: every failure a user can act on is already in the answer, and the log carries
/// database messages meant for whoever debugs (`COORD_LOG=error`).
///
/// `Targets`, not `EnvFilter`: the latter's span-field filters pull in regex-automata's
/// full-DFA builder, which every other regex of the process then used too — every glob
/// of the guardrails' registry built a dense DFA in every new process (every hook of an
/// agent's Bash call paid ~10 ms for it; docs/benchmarks.md).
/// Logs on stderr as `COORD_LOG` says, and OpenTelemetry spans when its endpoint is set
/// (the provider returned is shut down at the end, exporting what is queued).
fn init_logging() -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let targets = match std::env::var("COORD_LOG") {
        Ok(text) => log_filter(&text).unwrap_or_else(|e| {
            eprintln!("coord: COORD_LOG={text:?}: {e} (e.g. `warn` or `coord_postgres=debug,warn`); logs are off");
            Targets::new()
        }),
        // No directive enables nothing.
        Err(_) => Targets::new(),
    };
    let provider = telemetry::provider();
    // Each layer its own filter: the spans exported do not depend on what is logged.
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_target(false)
                .with_filter(targets),
        )
        .with(provider.as_ref().map(telemetry::layer))
        .try_init();
    provider
}

/// `COORD_LOG` read strictly: comma-separated directives, each a level (`warn`) or
/// `target=level`; blanks around them and empty ones (`COORD_LOG=`, a trailing comma) are
/// ignored. `Targets`' own parser reads an empty directive as `error` (logs would come on
/// for `COORD_LOG=`) and a misspelt level as a target name (`wanr`: silently nothing).
fn log_filter(text: &str) -> Result<tracing_subscriber::filter::Targets, String> {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let level = |word: &str| {
        word.parse::<LevelFilter>()
            .map_err(|_| format!("`{word}` is not a level (off, error, warn, info, debug, trace)"))
    };
    let mut targets = Targets::new();
    for directive in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        targets = match directive.split_once('=') {
            Some((target, lvl)) if !target.trim().is_empty() && !lvl.trim().is_empty() => {
                targets.with_target(target.trim(), level(lvl.trim())?)
            }
            Some(_) => return Err(format!("`{directive}` is not target=level")),
            None => targets.with_default(level(directive)?),
        };
    }
    Ok(targets)
}

pub async fn run(cli: Cli) -> u8 {
    let out = Output { json: cli.global.json };
    if let Command::Hook(hook) = &cli.command {
        return hooks::run(&hook.event, &hook.git_args, &cli.global).await;
    }
    // From the grammar alone: no repository, store or identity needed.
    match &cli.command {
        Command::Completions { shell } => return grammar::completions(*shell),
        Command::Man => return grammar::man_page(),
        Command::Config(args::ConfigCommand::Show { all }) => return config_show(&cli.global, *all, out),
        _ => {}
    }
    let ctx = match Context::resolve(&cli.global.settings()) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    // What signs audit checkpoints creates the key first (see open::audit_key).
    if matches!(
        &cli.command,
        Command::Serve(_)
            | Command::Ui(_)
            | Command::Init { target: None }
            | Command::Audit(args::AuditCommandArgs {
                command: Some(args::AuditCommand::Prune { .. }),
                ..
            })
    ) && ctx.remote.is_none()
    {
        open::ensure_audit_key(&ctx);
    }
    match &cli.command {
        Command::Init { target: Some(target) } => return init_runtime(target, &ctx, out),
        Command::Mcp => return run_mcp(&ctx, &cli.global.settings()).await,
        Command::Bench(args) => return bench::run(args, &ctx, cli.global.json).await,
        Command::Serve(args) => return run_serve(&ctx, args).await,
        Command::Ui(args) => {
            let serve = args::ServeArgs {
                host: "127.0.0.1".into(),
                port: args.port,
                proxy_port: None,
                socket: None,
                idle_exit: 0,
            };
            return run_serve_with(&ctx, &serve, Some(args)).await;
        }
        Command::Init { target: None } | Command::Migrate => return init_store(&ctx, out).await,
        Command::Keys(cmd) => return commands::keys(cmd, &ctx, &cli.global, out).await,
        Command::Cloud(cmd) => return cloud::run(cmd, &ctx, &cli.global, out).await,
        Command::Ops => return ops::list(out),
        // An operation's help needs no coordinator (nothing opened, nothing created).
        Command::Call(args) if ops::help_asked(args) => return ops::help(args),
        Command::Doctor => return doctor::run(&ctx, out).await,
        Command::Proxy(args) => return sandbox::proxy(args, &ctx, out).await,
        _ => {}
    }
    if let Command::Sandbox(cmd) = cli.command {
        return sandbox::run(cmd, &ctx, out).await;
    }
    match cli.command {
        Command::Agent(cmd) if !matches!(cmd, args::AgentCommand::Session(_)) => {
            return agent::run(cmd, &ctx, out).await;
        }
        Command::Run(args) => {
            let args = args::AgentRunArgs {
                agent: args.agent,
                task: args.task,
                launch: args.launch,
            };
            return agent::run(args::AgentCommand::Run(Box::new(args)), &ctx, out).await;
        }
        Command::Workflow(cmd) => return orchestrate::workflow(cmd, &ctx, out).await,
        Command::Swarm(cmd) => return orchestrate::swarm(cmd, &ctx, out).await,
        Command::Team(cmd) => return orchestrate::team(cmd, &ctx, out).await,
        _ => {}
    }
    if let Command::Ports(cmd) = cli.command {
        let ports = match open::ports(&ctx) {
            Ok(p) => p,
            Err(e) => return out.error(&e),
        };
        return commands::ports(cmd, ports.as_ref(), &ctx, out).await;
    }
    let coord = match open::coordination(&ctx, 2).await {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    match cli.command {
        Command::Status => out.result(coord.status(&ctx.caller).await, |s| {
            format!("{}{}", commands::render_status(s), commands::render_here(&ctx))
        }),
        Command::Stats => out.result(
            coord_service::call::<coord_service::ops::audit::GetStats, _>(
                coord.as_ref(),
                &coord_domain::access::Principal::local(ctx.caller.clone()),
                coord_domain::Empty {},
            )
            .await,
            stats::render,
        ),
        Command::Call(args) => ops::call(&args, coord.as_ref(), &ctx).await,
        other => commands::run(other, coord.as_ref(), &ctx, out).await,
    }
}

async fn init_store(ctx: &Context, out: Output) -> u8 {
    if let Err(e) = open::local_only(ctx, "`coord init` / `coord migrate`") {
        return out.error(&e);
    }
    let coord = match open::creating_coordinator(ctx).await {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let schema = coord.store().schema();
    out.result(
        Ok(InitResult {
            success: true,
            backend: coord.store().backend(),
            database: coord.store().location(),
            schema_version: schema.version,
            applied_migrations: schema.applied_now,
        }),
        |r| {
            let applied = match r.applied_migrations.as_slice() {
                [] => "schema already current".to_string(),
                v => format!("applied migrations {v:?}"),
            };
            let joined = joined_note(ctx).map(|j| format!("\n{j}")).unwrap_or_default();
            format!(
                "coordinator database ready ({}) at {} — schema version {}, {applied}{joined}",
                r.backend, r.database, r.schema_version
            )
        },
    )
}

/// Said by every `coord init` in a linked worktree: it shares the main checkout's space.
fn joined_note(ctx: &Context) -> Option<String> {
    match &ctx.worktree {
        Some(w) if w.linked() && ctx.db_is_default => Some(format!(
            "this worktree ({}) joined the coordination space of {}: its agents see the other worktrees' \
             locks, tasks and messages (docs/worktrees.md)",
            w.root.display(),
            w.shared_root.display()
        )),
        _ => None,
    }
}

fn init_runtime(target: &args::InitTarget, ctx: &Context, out: Output) -> u8 {
    use args::InitTarget;
    let result = init_setup(target, ctx);
    let removing = matches!(
        target,
        InitTarget::Claude { remove: true, .. }
            | InitTarget::Codex { remove: true, .. }
            | InitTarget::GitHook { remove: true, .. }
    );
    if let (
        Ok(r),
        InitTarget::Claude {
            dry_run: false,
            no_runtime_sandbox: false,
            remove: false,
            ..
        },
    ) = (&result, target)
        && r.success
    {
        // Created now, so that the sandbox finds a directory to protect rather than
        // a path it would stand a placeholder in.
        if let Err(e) = std::fs::create_dir_all(&ctx.state_dir) {
            eprintln!("coord init: cannot create {}: {e}", ctx.state_dir.display());
        }
    }
    if let Ok(r) = &result {
        for w in &r.warnings {
            eprintln!("coord init: warning: {w}");
        }
    }
    // Said on stderr, also under --json: what is written is written all the same.
    let (InitTarget::Claude { command, .. } | InitTarget::Codex { command, .. } | InitTarget::GitHook { command, .. }) =
        target;
    if let Some(w) = setup::command_warning(command).filter(|_| !removing) {
        eprintln!("coord init: {w}");
    }
    out.result(result, |r| init_text(target, ctx, r, removing))
}

/// What `coord init TARGET` writes (or, with `--remove`, takes out), applied or shown.
fn init_setup(target: &args::InitTarget, ctx: &Context) -> coord_domain::CoordResult<setup::SetupResult> {
    use args::InitTarget;
    match target {
        InitTarget::Claude {
            remove: true,
            dry_run,
            no_user_settings,
            ..
        } => remove_claude(ctx, !*no_user_settings).and_then(|(c, warnings)| {
            let mut r = setup::apply(c, *dry_run, None)?;
            r.warnings.extend(warnings);
            Ok(r)
        }),
        InitTarget::Codex {
            remove: true, dry_run, ..
        } => remove::codex(&setup::codex_home(), &ctx.repo_root).and_then(|c| setup::apply(c, *dry_run, None)),
        InitTarget::GitHook {
            remove: true, dry_run, ..
        } => remove::git_hooks(&ctx.repo_root).and_then(|c| setup::apply(c, *dry_run, None)),
        InitTarget::Claude {
            dry_run,
            command,
            no_user_settings,
            toolsets,
            no_runtime_sandbox,
            no_instructions,
            ..
        } => init_claude(
            ctx,
            command,
            toolsets.as_deref(),
            !*no_user_settings,
            !*no_runtime_sandbox,
        )
        .and_then(|(mut c, note)| {
            if !*no_instructions {
                c.push(instructions::change(&ctx.repo_root, "CLAUDE.md")?);
            }
            let mut r = setup::apply(c, *dry_run, None)?;
            r.notes.extend(note);
            Ok(r)
        }),
        InitTarget::Codex {
            write,
            dry_run,
            command,
            toolsets,
            project,
            no_runtime_sandbox,
            no_instructions,
            ..
        } if *write || *dry_run => init_codex(ctx, command, toolsets.as_deref(), *project, !*no_runtime_sandbox)
            .and_then(|(mut changes, warning)| {
                if !*no_instructions {
                    changes.push(instructions::change(&ctx.repo_root, "AGENTS.md")?);
                }
                let mut r = setup::apply(changes, *dry_run, None)?;
                r.warnings.extend(warning);
                Ok(r)
            }),
        InitTarget::Codex { command, toolsets, .. } => Ok(setup::SetupResult {
            success: true,
            files: Vec::new(),
            snippet: Some(setup::codex_snippet(command, toolsets.as_deref())),
            warnings: Vec::new(),
            notes: Vec::new(),
        }),
        InitTarget::GitHook { dry_run, command, .. } => {
            setup::git_hooks(&ctx.repo_root, command).and_then(|c| setup::apply(c, *dry_run, None))
        }
    }
}

/// What `coord init` says it did, for a person.
fn init_text(target: &args::InitTarget, ctx: &Context, r: &setup::SetupResult, removing: bool) -> String {
    use args::InitTarget;
    let mut text = String::new();
    if let Some(snippet) = &r.snippet {
        text.push_str(&format!(
            "# Add to {} (or run `coord init codex --write`, which also installs coord's hooks):\n{snippet}",
            setup::codex_home().join("config.toml").display()
        ));
    }
    if matches!(target, InitTarget::Codex { write: true, .. }) {
        text.push_str(
            "Codex runs hooks only once you trust them: start `codex` in this repository, open /hooks and \
             trust coord's (again after any change to them). Until then its shell commands and patches pass \
             unchecked (docs/mcp.md, \"Codex\").\n",
        );
    }
    for f in &r.files {
        let outside = !std::path::Path::new(&f.path).starts_with(&ctx.repo_root);
        let note = if outside {
            " (outside the repository: your user settings)"
        } else {
            ""
        };
        text.push_str(&format!("{}: {}{note}\n", f.action.replace('_', " "), f.path));
        if let Some(diff) = &f.diff {
            text.push_str(diff);
        }
    }
    for n in &r.notes {
        text.push_str(&format!("{n}\n"));
    }
    if let Some(j) = joined_note(ctx) {
        text.push_str(&format!("{j}\n"));
    }
    if removing && r.files.is_empty() {
        text.push_str("nothing of coord's found: nothing to remove\n");
    } else if removing {
        text.push_str(&removed_note(target, ctx));
    } else if r.warnings.is_empty() {
        text.push_str(&runtime_sandbox_note(target, ctx));
    }
    text
}

/// The global options written on the command line, with their values as a person reads them.
fn flag_values(global: &args::GlobalArgs) -> Vec<(String, String)> {
    let list = |v: &[String], sep: &str| v.join(sep);
    global
        .written_flags
        .iter()
        .filter_map(|id| {
            let value = match id.as_str() {
                "db" => global.db.clone(),
                "remote" => global.remote.clone(),
                "file_size_limit" => global.file_size_limit.map(|v| v.to_string()),
                "working_memory_budget" => global.working_memory_budget.map(|v| v.to_string()),
                "recall_half_life_days" => global.recall_half_life_days.map(|v| v.to_string()),
                "coordination_domains" => Some(list(&global.coordination_domains, ",")),
                "model_endpoints" => Some(list(&global.model_endpoints, ",")),
                "workspaces" => Some(
                    global
                        .workspaces
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(":"),
                ),
                _ => None,
            }?;
            Some((id.clone(), value))
        })
        .collect()
}

/// `coord config show`: each setting in effect, where it came from, and the files read.
fn config_show(global: &args::GlobalArgs, all: bool, out: Output) -> u8 {
    #[derive(Serialize)]
    struct ConfigShown {
        success: bool,
        files: Vec<config::FileState>,
        settings: Vec<config::Shown>,
    }
    let Some(applied) = config::applied() else {
        return out.error(&coord_domain::CoordError::new(
            coord_domain::ErrorCode::Internal,
            "the configuration files were not read",
        ));
    };
    let shown = ConfigShown {
        success: true,
        files: applied.files.clone(),
        settings: config::show(applied, &flag_values(global), all),
    };
    out.result(Ok(shown), |r| {
        let mut text =
            String::from("Precedence: a flag, then the environment, then the repository's file, then yours.\n");
        for f in &r.files {
            let state = if f.exists { "read" } else { "absent" };
            let whose = match f.origin {
                config::Origin::Repository => "repository",
                config::Origin::User => "user",
            };
            text.push_str(&format!("{whose} file: {} ({state})\n", f.path));
        }
        let rows: Vec<Vec<String>> = r
            .settings
            .iter()
            .map(|s| {
                let from = match &s.file {
                    Some(f) => format!("file {f}"),
                    None => s.source.to_string(),
                };
                vec![
                    s.key.to_string(),
                    s.value.clone().unwrap_or_default(),
                    from,
                    s.env.to_string(),
                ]
            })
            .collect();
        if rows.is_empty() {
            text.push_str("No setting is set: coord's defaults apply (`--all` lists every setting).\n");
        } else {
            let mut t = output::table(&["KEY", "VALUE", "FROM", "ENVIRONMENT"]);
            for row in rows {
                t.add_row(row);
            }
            text.push_str(&format!("{t}\n"));
        }
        text
    })
}

/// Said when Claude Code has the coord plugin enabled: `coord init claude` writes the rest.
fn plugin_note(id: &str) -> String {
    format!(
        "the {id} plugin is enabled: it brings coord's MCP server and hooks, so they are not written into this \
         repository as well (each would run twice); the sandbox and CLAUDE.md are"
    )
}

/// Said after `--remove`: what stays, and the plugin's own way out.
fn removed_note(target: &args::InitTarget, ctx: &Context) -> String {
    let mut text = match target {
        args::InitTarget::GitHook { .. } => String::new(),
        _ => format!(
            "coord's store stays ({}: the locks, the queue, the audit trail); delete it yourself once no agent \
             needs it.\n",
            ctx.state_dir.display()
        ),
    };
    match target {
        args::InitTarget::Claude { .. } => {
            text.push_str("Installed as a plugin too? `claude plugin uninstall coord@coord`.\n")
        }
        args::InitTarget::Codex { .. } => {
            text.push_str("Installed as a plugin too? `codex plugin remove coord@coord`.\n")
        }
        args::InitTarget::GitHook { .. } => {}
    }
    text
}

/// What `coord init claude` added, to take out: the paths its sandbox settings name are
/// worked out as `coord init claude` worked them out.
fn remove_claude(ctx: &Context, user_settings: bool) -> coord_domain::CoordResult<(Vec<setup::Change>, Vec<String>)> {
    let sqlite = match &ctx.db {
        context::DbTarget::Sqlite(p) => Some(p.as_path()),
        context::DbTarget::Postgres(_) => None,
    };
    let protected = runtime_sandbox::claude_protected(&ctx.repo_root, &ctx.state_dir, sqlite);
    let config_dir = match user_settings {
        true => Some(setup::claude_config_dir()?),
        false => None,
    };
    remove::claude(&ctx.repo_root, &protected, config_dir.as_deref())
}

/// Codex's side of `coord init codex --write`: the MCP server in the user's config, the
/// hooks (user-level, or this repository's with `project`), the permission profile; and
/// what could not be done.
fn init_codex(
    ctx: &Context,
    command: &str,
    toolsets: Option<&str>,
    project: bool,
    sandbox: bool,
) -> coord_domain::CoordResult<(Vec<setup::Change>, Option<String>)> {
    let hooks_dir = match project {
        true => ctx.repo_root.join(".codex"),
        false => setup::codex_home(),
    };
    let sandbox_in = sandbox.then_some(ctx.repo_root.as_path());
    let (mut changes, warning) = setup::codex(&setup::codex_home(), command, toolsets, sandbox_in)?;
    changes.push(setup::codex_hooks(&hooks_dir, command)?);
    Ok((changes, warning))
}

/// Claude Code's side of `coord init claude`: the MCP server and hooks, the user's
/// approval of the server, the runtime's sandbox.
fn init_claude(
    ctx: &Context,
    command: &str,
    toolsets: Option<&str>,
    user_settings: bool,
    sandbox: bool,
) -> coord_domain::CoordResult<(Vec<setup::Change>, Option<String>)> {
    // The plugin brings the server and the hooks: written here too, each would run twice.
    let plugin = setup::claude_plugin(&ctx.repo_root);
    let mut changes = match &plugin {
        Some(_) => Vec::new(),
        None => setup::claude(&ctx.repo_root, command, toolsets)?,
    };
    if sandbox {
        let sqlite = match &ctx.db {
            context::DbTarget::Sqlite(p) => Some(p.as_path()),
            context::DbTarget::Postgres(_) => None,
        };
        let protected = runtime_sandbox::claude_protected(&ctx.repo_root, &ctx.state_dir, sqlite);
        changes.extend(runtime_sandbox::claude(&ctx.repo_root, &protected)?);
    }
    if user_settings && plugin.is_none() {
        changes.push(setup::claude_user_approval(&setup::claude_config_dir()?)?);
    }
    Ok((changes, plugin.map(|(id, _)| plugin_note(&id))))
}

/// What the runtime's sandbox now keeps from an agent's shell, or what is left open
/// without it (docs/security.md).
fn runtime_sandbox_note(target: &args::InitTarget, ctx: &Context) -> String {
    use args::InitTarget;
    let off = "An agent's shell can then write coord's store and settings directly: the hooks stop a mistaken \
               agent, not one working around them. Run agents you do not trust in `coord agent run` or \
               `coord sandbox run` (docs/security.md).\n";
    match target {
        InitTarget::Claude {
            no_runtime_sandbox: false,
            ..
        } => format!(
            "Claude Code's sandbox is on for its Bash tool: commands cannot write {} or coord's settings, nor \
             reach coord's socket; their network access is Claude Code's to approve. `--no-runtime-sandbox` \
             leaves it off.\n",
            ctx.state_dir.display()
        ),
        InitTarget::Claude { .. } => format!("Claude Code's sandbox left as it was (--no-runtime-sandbox). {off}"),
        InitTarget::Codex {
            no_runtime_sandbox: false,
            write: true,
            ..
        } => "Codex's sandbox keeps .coord read-only for its commands and patches in this repository \
             (permission profile `coord` in .codex/config.toml, which Codex loads once you trust the project; \
             or your own profile, given the rule); `--sandbox`/`--dangerously-bypass-approvals-and-sandbox` on \
             Codex's command line turn that off.\n"
            .into(),
        InitTarget::Codex {
            no_runtime_sandbox: true,
            write: true,
            ..
        } => {
            format!("Codex's sandbox left as it was (--no-runtime-sandbox). {off}")
        }
        _ => String::new(),
    }
}

/// The identity an MCP server over stdio speaks for: the configured one; else, inside
/// Claude Code, the session's (the same its hooks derive); else the client's name, this
/// host and the agent runtime that started this server (its process id), so two Codex
/// sessions on one host are two agents.
fn mcp_identity(global: &context::Settings, ctx: &Context) -> coord_mcp::IdentityConfig {
    let in_claude = std::env::var_os("CLAUDECODE").is_some_and(|v| !v.is_empty());
    let (claude_id, claude_type) = context::default_identity(true);
    // Codex names no session to its MCP server: the Codex process it runs under does, as
    // for its hooks.
    let codex_id = ctx.session.as_ref().and_then(|s| s.agent_id(&context::hostname()));
    coord_mcp::IdentityConfig {
        agent_id: global
            .agent_id
            .clone()
            .or(codex_id)
            .or_else(|| in_claude.then_some(claude_id)),
        // Codex's session, named by its process: its type too (a plugin's server is not
        // given COORD_AGENT_TYPE as `coord init codex` gives it).
        agent_type: context::explicit_agent_type(global)
            .or_else(|| in_claude.then_some(claude_type))
            .or_else(|| ctx.session.as_ref().and_then(|s| s.agent_type()).map(String::from)),
        host: context::hostname(),
        instance: Some(format!("p{}", std::os::unix::process::parent_id())),
    }
}

/// The coordinator's reaper of killed relays (coord_runtime::reaper): a relay SIGKILLed while its
/// coordinator also died leaves only its record; the successor ends that session once
/// the relay's grace period has passed since it saw it dead.
fn spawn_relay_reaper(ctx: &Context, coord: &coord_service::Coordinator) -> tokio::task::JoinHandle<()> {
    // Records of relays carry their own grace period (and wait reaper::RELAY_MARGIN more,
    // so that the coordinator serving them ends them first); others take this one's.
    let mut reaper = reaper::Reaper::new(reaper::Registry::of(ctx), release_grace().ok().flatten());
    let (coord, me) = (coord.clone(), ctx.caller.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(reaper::EVERY);
        loop {
            tick.tick().await;
            if let Err(e) = reaper.pass(&coord, &me).await {
                tracing::warn!(error = %e, "could not end a killed relay's session");
            }
        }
    })
}

/// Who a relay's process record names (for people reading it: the coordinator knows
/// the session's agent).
fn relay_caller(identity: &coord_mcp::IdentityConfig) -> coord_domain::Caller {
    coord_domain::Caller::new(
        identity.agent_id.clone().unwrap_or_else(|| "relayed-agent".into()),
        identity.agent_type.clone().unwrap_or_else(|| "unknown".into()),
    )
}

/// `COORD_RELEASE_GRACE_SECONDS`: how long a closed `coord mcp` connection's locks and
/// claims wait for its agent to reconnect (default 20 s; `off` keeps them until their TTL
/// or lease).
fn release_grace() -> coord_domain::CoordResult<Option<std::time::Duration>> {
    coord_mcp::parse_release_grace(std::env::var("COORD_RELEASE_GRACE_SECONDS").ok().as_deref())
}

/// PostgreSQL connections of a `coord serve` (why: where it is used).
const SERVE_PG_POOL: usize = 8;

/// How often long-lived processes purge expired rows.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// How often `coord serve` prunes audit rows past the retention.
const AUDIT_PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// How often `coord serve` sends GitHub the outbox's comments and statuses.
const GITHUB_SEND_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

async fn run_mcp(ctx: &Context, global: &context::Settings) -> u8 {
    let fail = |e: coord_domain::CoordError| {
        eprintln!("coord mcp: {} [{}]", e.message, e.code);
        output::exit_code(&e)
    };
    // Locally this process also purges expired rows; remotely the server does.
    // An MCP client's identity is derived from what it reports unless configured, so a
    // bound API key, not the derived name, decides who it is remotely.
    let mut ctx = ctx.clone();
    if let Some(r) = ctx.remote.as_mut() {
        if global.agent_id.is_none() {
            r.default_id = coord_remote::Unconfigured::Anything;
        }
        if global.agent_type.is_none() {
            r.default_type = coord_remote::Unconfigured::Anything;
        }
    }
    let ctx = &ctx;
    let grace = match release_grace() {
        Ok(grace) => grace,
        Err(e) => return fail(e),
    };
    let team = std::env::var("COORD_TEAM").ok().filter(|t| !t.trim().is_empty());
    // The toolsets the agent's tool list shows (`core` unless COORD_TOOLSETS says).
    let toolsets = std::env::var("COORD_TOOLSETS").ok().filter(|t| !t.trim().is_empty());
    let selection = match toolsets.as_deref().map(coord_mcp::toolsets::parse).transpose() {
        Ok(s) => s,
        Err(why) => {
            return fail(coord_domain::CoordError::field(
                coord_domain::ErrorCode::InvalidArgument,
                "COORD_TOOLSETS",
                format!("COORD_TOOLSETS: {why}"),
            ));
        }
    };
    let identity = mcp_identity(global, ctx);
    // Locally, the agent's session is served by the repository's coordinator and this
    // process relays its lines (see coord_mcp::relay); when that is not possible, this
    // process serves MCP itself.
    if ctx.remote.is_none()
        && let Some(code) = relay_to_coordinator(ctx, &identity, grace, team.clone(), toolsets).await
    {
        return code;
    }
    let (coord, sweeper): (std::sync::Arc<dyn coord_service::Coordination>, _) = match &ctx.remote {
        Some(_) => match open::coordination(ctx, 4).await {
            Ok(c) => (c, None),
            Err(e) => return fail(e),
        },
        // The repository's coordinator process (started on demand), else the database
        // opened here.
        None => match local_server::connect(ctx, true).await {
            Some(c) => (c, None),
            None => match open::coordinator_with(ctx, 4).await {
                Ok(c) => {
                    let sweeper = c.spawn_sweeper(SWEEP_EVERY);
                    (std::sync::Arc::new(c), Some(sweeper))
                }
                Err(e) => return fail(e),
            },
        },
    };
    let mut options = coord_mcp::McpOptions::stdio(identity);
    options.release_after = grace;
    options.team = team;
    options.stdio_credential = ctx.credential();
    (options.worktree, options.branch) = ctx.place();
    options.toolsets = selection;
    let registry = reaper::Registry::of(ctx);
    let reaping = reap_siblings(&coord, &registry, &mut options);
    let served = coord_mcp::serve_stdio(coord, options).await;
    reaping.abort();
    registry.forget_self();
    if let Some(s) = sweeper {
        s.abort();
    }
    match served {
        Ok(()) => output::EXIT_OK,
        Err(e) => {
            eprintln!("coord mcp: {e}");
            output::EXIT_UNAVAILABLE
        }
    }
}

/// Locally, the agent's session is served by the repository's coordinator and this
/// process relays its lines (see coord_mcp::relay): the relay's exit code, or `None`
/// when that is not possible and this process serves MCP itself.
async fn relay_to_coordinator(
    ctx: &Context,
    identity: &coord_mcp::IdentityConfig,
    grace: Option<std::time::Duration>,
    team: Option<String>,
    toolsets: Option<String>,
) -> Option<u8> {
    let raw_grace = std::env::var("COORD_RELEASE_GRACE_SECONDS")
        .ok()
        .map(|g| g.trim().to_string());
    let mut request = coord_mcp::relay::RelayRequest::new(identity, raw_grace, team);
    request.agent_session = ctx.session.as_ref().map(|s| s.runtime.to_string());
    (request.worktree, request.branch) = ctx.place();
    request.toolsets = toolsets;
    // COORD_MCP_DIRECT=on: the coordinator reads the agent's pipes itself (no replay).
    let pipes = coord_mcp::handover::wanted()
        .then(|| {
            coord_mcp::handover::agent_stdio()
                .inspect_err(|e| tracing::warn!(error = %e, "COORD_MCP_DIRECT: relaying instead"))
                .ok()
        })
        .flatten();
    request.direct = pipes.is_some();
    if let Some((link, reconnect)) = local_server::relay(ctx, request).await {
        // Recorded like a `coord mcp` serving its own session (coord_runtime::reaper): killed,
        // and its coordinator dead before the grace period ended, its session is
        // still ended by a successor's reaper. With the grace period off there is
        // nothing to end.
        let registry = reaper::Registry::of(ctx);
        let record = grace.map(|grace| {
            let (registry, who) = (registry.clone(), relay_caller(identity));
            Box::new(move |session: &str| {
                if let Err(e) = registry.record_self_with(&who, session, Some(grace)) {
                    tracing::warn!(error = %e, "could not record this relay's session");
                }
            }) as coord_mcp::relay::SessionHook
        });
        let code = run_relay(link, reconnect, pipes, record).await;
        // Kept when the session may not have ended (its coordinator died under a
        // hand-over, say): a sibling's reaper then ends it.
        if code == output::EXIT_OK {
            registry.forget_self();
        }
        return Some(code);
    }
    None
}

/// Records this process's session so that, if this process is killed, a sibling can
/// end it; and ends the sessions of killed siblings (see coord_runtime::reaper), every
/// `reaper::EVERY`, once this process knows who it serves.
fn reap_siblings(
    coord: &std::sync::Arc<dyn coord_service::Coordination>,
    registry: &reaper::Registry,
    options: &mut coord_mcp::McpOptions,
) -> tokio::task::JoinHandle<()> {
    // Record this process's session so that, if this process is killed, a sibling can
    // end it; and end the sessions of killed siblings (see coord_runtime::reaper).
    let me: std::sync::Arc<std::sync::Mutex<Option<coord_domain::Caller>>> = Default::default();
    let (record, seen) = (registry.clone(), me.clone());
    options.on_session = Some(coord_mcp::SessionHook(std::sync::Arc::new(
        move |caller, session_id| {
            if let Err(e) = record.record_self(caller, session_id) {
                tracing::warn!(error = %e, "could not record this process's session");
            }
            *seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(caller.clone());
        },
    )));
    {
        let (coord, me) = (coord.clone(), me.clone());
        let mut reaper = reaper::Reaper::new(registry.clone(), options.release_after);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(reaper::EVERY);
            loop {
                tick.tick().await;
                let who = me.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                if let Some(who) = who
                    && let Err(e) = reaper.pass(coord.as_ref(), &who).await
                {
                    tracing::warn!(error = %e, "could not end a killed process's session");
                }
            }
        })
    }
}

/// How `coord mcp` passes its agent's session to the coordinator.
enum Passing {
    /// Copies the lines (and replays them to a successor).
    Relay(coord_mcp::relay::Relay),
    /// Handed the pipes over (`COORD_MCP_DIRECT=on`).
    Handover(coord_mcp::handover::Handover),
}

impl Passing {
    fn wait(&self) -> std::io::Result<()> {
        match self {
            Passing::Relay(r) => r.wait(),
            Passing::Handover(h) => h.wait(),
        }
    }

    fn terminate(&self) {
        match self {
            Passing::Relay(r) => r.terminate(),
            Passing::Handover(h) => h.terminate(),
        }
    }
}

/// `coord mcp` as a relay (or, with `pipes`, having handed them over): waits until the
/// coordinator closes the session (the agent's input ended and its grace period passed)
/// or the agent is gone; told to stop, tells the coordinator (which releases the
/// holdings at once) and waits for it, at most 30 s.
async fn run_relay(
    link: coord_mcp::relay::Link,
    reconnect: coord_mcp::relay::Reconnect,
    pipes: Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
    on_session: Option<coord_mcp::relay::SessionHook>,
) -> u8 {
    let started = match pipes {
        Some(pipes) => coord_mcp::handover::Handover::start(link, pipes, on_session).map(Passing::Handover),
        None => coord_mcp::relay::Relay::start_with(link, reconnect, on_session).map(Passing::Relay),
    };
    let relay = match started {
        Ok(r) => std::sync::Arc::new(r),
        Err(e) => {
            eprintln!("coord mcp: cannot start the relay: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    // A plain thread, not the runtime's blocking pool: the runtime must not wait for it
    // when this process stops.
    let (done, finished) = tokio::sync::oneshot::channel();
    let waiter = relay.clone();
    std::thread::spawn(move || {
        let _ = done.send(waiter.wait());
    });
    tokio::pin!(finished);
    let outcome = tokio::select! {
        outcome = &mut finished => outcome,
        () = coord_mcp::termination() => {
            // Off the runtime: the relay's writer may be busy (a reconnect under way).
            let leaving = relay.clone();
            std::thread::spawn(move || leaving.terminate());
            tokio::time::timeout(std::time::Duration::from_secs(30), &mut finished)
                .await
                .unwrap_or(Ok(Ok(())))
        }
    };
    match outcome {
        Ok(Ok(())) | Err(_) => output::EXIT_OK,
        Ok(Err(e)) => {
            eprintln!("coord mcp: {e}");
            output::EXIT_UNAVAILABLE
        }
    }
}

async fn run_serve(ctx: &Context, args: &args::ServeArgs) -> u8 {
    run_serve_with(ctx, args, None).await
}

/// `coord serve`'s API configuration (environment, then flags) and the file tools'
/// workspaces. A workspace named for a server that does not work stops it here
/// (elsewhere a bad one only turns the file tools off, so hooks and agents keep working).
fn serve_config(
    ctx: &Context,
    args: &args::ServeArgs,
) -> coord_domain::CoordResult<(coord_http::ApiConfig, Vec<coord_service::WorkspaceDir>)> {
    let mut config = coord_http::ApiConfig::from_env()?;
    config.host = args.host.clone();
    config.port = args.port;
    let workspaces = ctx.workspace_dirs()?;
    // Room for a write_file of the largest file the tools take, base64-encoded.
    let file_limit = ctx
        .file_size_limit
        .unwrap_or(coord_service::CoordConfig::default().file_size_limit);
    let needed = usize::try_from(file_limit.saturating_mul(2))
        .unwrap_or(usize::MAX)
        .saturating_add(64 * 1024);
    config.max_body_bytes = config.max_body_bytes.max(needed);
    Ok((config, workspaces))
}

type Task = tokio::task::JoinHandle<()>;

/// What `coord serve` sends out in the background, when configured: security
/// notifications to a webhook, comments and commit statuses to GitHub.
fn senders(coord: &coord_service::Coordinator) -> coord_domain::CoordResult<(Option<Task>, Option<Task>)> {
    let dispatcher = match notify::webhook_from_env()? {
        Some(hook) => {
            println!("coord serve: security notifications go to {}", hook.target());
            Some(notify::spawn(coord.clone(), hook))
        }
        None => None,
    };
    let github = match coord_remote::github::GithubApi::from_env()? {
        Some(api) => {
            println!("coord serve: comments and commit statuses go to GitHub (COORD_GITHUB_TOKEN)");
            Some(coord_remote::github::spawn(coord.clone(), api, GITHUB_SEND_EVERY))
        }
        None => None,
    };
    Ok((dispatcher, github))
}

/// `coord ui`: a one-time sign-in link to the dashboard, printed and (best effort)
/// opened in a browser.
fn announce_dashboard(ctx: &Context, addr: &str, config: &coord_http::ApiConfig, ui: &args::UiArgs) {
    let who = coord_domain::Caller::new(ctx.caller.agent_id.clone(), coord_http::ui::AGENT_TYPE);
    let link = format!("http://{addr}{}", coord_http::ui::sign_in_link(config, who));
    println!(
        "coord ui: the dashboard, signed in as {} (a one-time link, valid 10 minutes):",
        ctx.caller.agent_id
    );
    println!("  {link}");
    if !ui.no_open {
        // Best effort: without a desktop the printed link is the way in.
        let _ = std::process::Command::new("xdg-open")
            .arg(&link)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// `coord serve`, or with `ui`, `coord ui`: the same server on loopback, announcing a
/// one-time dashboard link for whoever is at the terminal.
async fn run_serve_with(ctx: &Context, args: &args::ServeArgs, ui: Option<&args::UiArgs>) -> u8 {
    let name = if ui.is_some() { "coord ui" } else { "coord serve" };
    if let Err(e) = open::local_only(ctx, &format!("`{name}`")) {
        eprintln!("{name}: {}", e.message);
        return output::exit_code(&e);
    }
    let (config, workspaces) = match serve_config(ctx, args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coord serve: {} [{}]", e.message, e.code);
            return output::exit_code(&e);
        }
    };
    // Eight, not more: every write takes the audit chain's lock in turn, and more
    // connections than that only lengthen its queue inside PostgreSQL. Measured on two
    // cores (docs/benchmarks.md, "the pool of `coord serve`"): 16 HTTP clients ran as
    // fast with 8 as with 16 connections, and 1,000 agents on two nodes had a p99 of
    // 18-34 ms with 8 against 96-106 ms with 16. `COORD_PG_POOL_SIZE` overrides.
    let coord = match open::coordinator_with(ctx, SERVE_PG_POOL).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coord serve: {} [{}]", e.message, e.code);
            return output::exit_code(&e);
        }
    };
    if let Some(socket) = &args.socket {
        return serve_socket(ctx, coord, config, socket, args.idle_exit).await;
    }
    let listener = match tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("coord serve: cannot listen on {}:{}: {e}", args.host, args.port);
            return output::EXIT_USAGE;
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let sweeper = coord.spawn_sweeper(SWEEP_EVERY);
    let pruner = coord.spawn_audit_pruner(AUDIT_PRUNE_EVERY);
    let (dispatcher, github) = match senders(&coord) {
        Ok(tasks) => tasks,
        Err(e) => {
            eprintln!("coord serve: {} [{}]", e.message, e.code);
            return output::exit_code(&e);
        }
    };
    let database = coord.store().location();
    let coord = std::sync::Arc::new(coord);
    let proxy = match args.proxy_port {
        Some(port) => match sandbox::serve_proxy(coord.clone(), &args.host, port).await {
            Ok(task) => Some(task),
            Err(code) => return code,
        },
        None => None,
    };
    let app = coord_http::create_coordination_api(coord, &config);
    // One line (clients read the address from the first): where the file tools reach.
    let files = match workspaces
        .iter()
        .map(|w| w.dir.display().to_string())
        .collect::<Vec<_>>()
    {
        dirs if dirs.is_empty() => "off: no git repository here, see --workspace".to_string(),
        dirs => dirs.join(", "),
    };
    println!("coord serve: listening on http://{addr} (database: {database}; file tools: {files})");
    if let Some(ui) = ui {
        announce_dashboard(ctx, &addr, &config, ui);
    }
    if let Some((_, proxy)) = &proxy {
        println!("coord serve: egress proxy on {proxy} (HTTPS_PROXY=http://<agent id>:<managed key>@{proxy})");
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let served = coord_http::serve(listener, app, &config, coord_http::shutdown_signal()).await;
    sweeper.abort();
    pruner.abort();
    for task in [dispatcher, github].into_iter().flatten() {
        task.abort();
    }
    if let Some((p, _)) = proxy {
        p.abort();
    }
    match served {
        Ok(()) => output::EXIT_OK,
        Err(e) => {
            eprintln!("coord serve: {e}");
            output::EXIT_UNAVAILABLE
        }
    }
}

/// The file a socket path names, to tell this server's socket from a successor's.
fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `coord serve --socket`: the per-repository coordinator (see coord_runtime::local_server).
async fn serve_socket(
    ctx: &Context,
    coord: coord_service::Coordinator,
    mut config: coord_http::ApiConfig,
    socket: &std::path::Path,
    idle_exit: u64,
) -> u8 {
    use std::os::unix::fs::PermissionsExt as _;
    if ctx.remote.is_some() {
        eprintln!("coord serve: --socket serves a database, not a remote coordinator");
        return output::EXIT_USAGE;
    }
    config.local_peers = true;
    let listener = match tokio::net::UnixListener::bind(socket) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("coord serve: cannot listen on {}: {e}", socket.display());
            return output::EXIT_USAGE;
        }
    };
    // Owner only; the listener also checks every peer's user (the kernel's answer).
    if let Err(e) = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)) {
        eprintln!("coord serve: cannot restrict {}: {e}", socket.display());
        let _ = std::fs::remove_file(socket);
        return output::EXIT_UNAVAILABLE;
    }
    let mine = file_identity(socket);
    let database_file = match &ctx.db {
        context::DbTarget::Sqlite(p) => Some(p.clone()),
        context::DbTarget::Postgres(_) => None,
    };
    let database_identity = database_file.as_deref().and_then(file_identity);
    let sweeper = coord.spawn_sweeper(SWEEP_EVERY);
    let pruner = coord.spawn_audit_pruner(AUDIT_PRUNE_EVERY);
    let reaping = spawn_relay_reaper(ctx, &coord);
    let database = coord.store().location();
    let app = coord_http::create_coordination_api(std::sync::Arc::new(coord), &config);
    let activity = coord_http::Activity::default();
    let idle = (idle_exit > 0).then(|| std::time::Duration::from_secs(idle_exit));
    println!(
        "coord serve: listening on unix:{} (database: {database}; {})",
        socket.display(),
        match idle {
            Some(d) => format!("stops after {}s without requests", d.as_secs()),
            None => "runs until stopped".into(),
        }
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let watched = activity.clone();
    let socket_path = socket.to_path_buf();
    let watch = async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        let why = loop {
            tick.tick().await;
            if idle.is_some_and(|d| watched.idle() >= d) {
                break "idle";
            }
            // Removed, or replaced by another file (a restore): this server's open
            // database is no longer the one at that path.
            if database_file
                .as_ref()
                .is_some_and(|p| file_identity(p) != database_identity)
            {
                break "its database was removed";
            }
            if file_identity(&socket_path) != mine {
                break "its socket was removed or replaced";
            }
        };
        tracing::info!("coord serve --socket: stopping ({why})");
    };
    let socket_path = socket.to_path_buf();
    let shutdown = async move {
        tokio::select! {
            () = coord_http::shutdown_signal() => {}
            () = watch => {}
        }
        // Removed before the listener closes, never after: a successor may bind the name
        // while this server drains. New callers find no socket (and start a successor)
        // from here on; connections already queued are still accepted and answered.
        if file_identity(&socket_path) == mine {
            let _ = std::fs::remove_file(&socket_path);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let listener = coord_http::SameUserListener::new(listener);
    let served = coord_http::serve_local(listener, app, &config, activity, shutdown).await;
    sweeper.abort();
    pruner.abort();
    reaping.abort();
    match served {
        Ok(()) => output::EXIT_OK,
        Err(e) => {
            eprintln!("coord serve: {e}");
            output::EXIT_UNAVAILABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    #[test]
    fn coord_log_is_read_strictly() {
        let on = |text: &str, target: &str, level: Level| super::log_filter(text).unwrap().would_enable(target, &level);
        for (text, target, level, want) in [
            ("", "coord_postgres", Level::ERROR, false),
            ("  ", "coord_postgres", Level::ERROR, false),
            (",", "coord_postgres", Level::ERROR, false),
            ("off", "coord_postgres", Level::ERROR, false),
            ("warn", "coord_postgres", Level::WARN, true),
            ("warn", "coord_postgres", Level::INFO, false),
            ("WARN", "coord_service", Level::WARN, true),
            ("coord_postgres=debug,", "coord_postgres", Level::DEBUG, true),
            ("coord_postgres=debug,", "coord_service", Level::ERROR, false),
            ("warn, coord_postgres=debug", "coord_postgres", Level::DEBUG, true),
            ("warn, coord_postgres=debug", "coord_service", Level::WARN, true),
            ("coord::audit=info", "coord::audit", Level::INFO, true),
            ("coord::audit=info", "coord_service", Level::ERROR, false),
        ] {
            assert_eq!(on(text, target, level), want, "{text:?} {target} {level}");
        }
        for bad in ["wanr", "coord_postgres=", "=debug", "coord_postgres=loud", "a=b=c"] {
            assert!(super::log_filter(bad).is_err(), "{bad:?}");
        }
    }
}
