//! `coord agent list|show|flags|run|supervise|spawn|…` (docs/agents.md): the registry
//! shown, launch plans printed, and launches rendered; launching and supervising are
//! `coord_runtime::launch`, spawning commands `crate::spawned`.

use crate::args::{AgentCommand, AgentFlagsArgs, AgentRunArgs};
use crate::context::Context;
use crate::output::{self, Output};
use coord_agents::LaunchInputs;
use coord_agents::registry::{self};
use coord_domain::CoordResult;
use coord_domain::agents::{self, AgentDefinition, Runtime};
use coord_egress::sandbox::API_PORT;
use coord_runtime::launch::{
    self as rt, DEFINITIONS, LaunchOptions, LaunchRequest, Outcome, coord_env, definitions, find, provider_keys,
};
use serde_json::json;

pub async fn run(cmd: AgentCommand, ctx: &Context, out: Output) -> u8 {
    let r = match cmd {
        AgentCommand::List => return list(ctx, out),
        AgentCommand::Show { agent } => return show_agent(ctx, &agent, out),
        // Sessions need the coordinator: lib::run sends them to commands::run.
        AgentCommand::Session(_) => Err(coord_domain::CoordError::internal()),
        AgentCommand::Flags(args) => flags(&args, ctx, out),
        AgentCommand::Run(args) => rt::launch(request(*args), ctx, None).await.map(|o| render(&o, out)),
        // (Not `agent_id`: clap would take it for the global --agent-id, the caller.)
        AgentCommand::Supervise { spawned } => rt::supervise_spawned(&spawned, ctx).await.map(|o| render(&o, out)),
        AgentCommand::Spawn(args) => crate::spawned::spawn(*args, ctx, out).await,
        AgentCommand::Spawned { active, limit } => crate::spawned::list(active, limit, ctx, out).await,
        AgentCommand::Status { spawned } => crate::spawned::status(&spawned, ctx, out).await,
        AgentCommand::Output { spawned, wait } => crate::spawned::output(&spawned, wait, ctx, out).await,
        AgentCommand::Stop { spawned, reason } => crate::spawned::stop(&spawned, reason, ctx, out).await,
    };
    match r {
        Ok(code) => code,
        Err(e) => out.error(&e),
    }
}

fn request(args: AgentRunArgs) -> LaunchRequest {
    let l = args.launch;
    LaunchRequest {
        agent: args.agent,
        task: args.task,
        options: LaunchOptions {
            runtime: l.runtime,
            program: l.program,
            model_url: l.model_url,
            timeout: l.timeout,
            env: l.env,
            files: l.files,
            resolve: l.resolve,
            isolation: l.isolation.isolation,
            keep_worktree: l.isolation.keep_worktree,
            validation: l.validation.validation(),
        },
    }
}

/// A launch's end: `--json` its outcome; otherwise what stopped it, what its runtime
/// refused, and its final answer. Refused unless it succeeded.
fn render(outcome: &Outcome, out: Output) -> u8 {
    if out.json {
        println!("{}", serde_json::to_value(outcome).unwrap_or_default());
    } else {
        if outcome.timed_out {
            eprintln!(
                "coord agent: {} ran past its {} deadline and was stopped",
                outcome.agent_id,
                humantime::format_duration(outcome.deadline)
            );
        }
        for denial in &outcome.permission_denials {
            eprintln!("coord agent: refused by {}: {}", outcome.runtime, denial);
        }
        match &outcome.result {
            Some(r) => println!("{r}"),
            None => eprintln!("coord agent: no final answer (output in {})", outcome.run_dir),
        }
    }
    if outcome.success {
        output::EXIT_OK
    } else {
        output::EXIT_REFUSED
    }
}

/// `coord agent list`: the registry, invalid entries with their errors.
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

/// `coord agent show ID`.
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
    println!("  max turns:   {}", d.max_turns.unwrap_or(agents::DEFAULT_MAX_TURNS));
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
    let runtime = rt::runtime(args.runtime.as_deref(), &d)?;
    let coord_env = coord_env("$AGENT_ID", API_PORT);
    let workspace = ctx.repo_root.to_string_lossy();
    let plan = coord_agents::plan(
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
