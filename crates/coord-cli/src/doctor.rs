//! `coord doctor`: an installation checked end to end, each finding with what to do —
//! the binary the configurations run, the store, Claude Code's and Codex's hooks and MCP
//! server, the runtimes' versions against the ones coord is tested with, the sandbox.
//! Read-only: it creates no store and changes no file.

use crate::context::{Context, DbTarget};
use crate::output::{self, Output};
use crate::setup;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The runtime versions the real-agent suites run (`.ci/package.json`).
const TESTED: &[(&str, &str)] = &[("claude", "2.1.332"), ("codex", "0.171.0")];
/// The events coord's hooks handle, per runtime's configuration.
const HOOK_EVENTS: &[&str] = &["SessionStart", "SessionEnd", "PreToolUse", "UserPromptSubmit"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// Works, with a caveat, or not set up (nothing is broken).
    Warn,
    /// Set up and broken: protection a user thinks they have is not there.
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub status: Status,
    pub detail: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DoctorResult {
    /// No check failed (warnings allowed).
    pub success: bool,
    pub checks: Vec<Check>,
}

fn check(check: &'static str, status: Status, detail: impl Into<String>, fix: Option<&str>) -> Check {
    Check {
        check,
        status,
        detail: detail.into(),
        fix: fix.map(String::from),
    }
}

pub async fn run(ctx: &Context, out: Output) -> u8 {
    let mut checks = vec![binary(), store(ctx).await];
    checks.extend(claude(ctx));
    checks.extend(codex(ctx));
    for (program, tested) in TESTED {
        checks.push(runtime(program, tested).await);
    }
    checks.push(sandbox().await);
    if let Some(s) = &ctx.session {
        checks.push(check(
            "agent session",
            Status::Ok,
            format!(
                "this runs inside a {} session: person decisions are refused here",
                s.runtime
            ),
            None,
        ));
    }
    let success = checks.iter().all(|c| c.status != Status::Fail);
    let code = out.result(Ok(DoctorResult { success, checks }), render);
    match (code, success) {
        (output::EXIT_OK, false) => output::EXIT_REFUSED,
        (code, _) => code,
    }
}

fn render(r: &DoctorResult) -> String {
    let mut t = output::table(&["CHECK", "STATUS", "DETAIL", "FIX"]);
    for c in &r.checks {
        let status = match c.status {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        t.add_row(vec![
            c.check.to_string(),
            status.into(),
            c.detail.clone(),
            c.fix.clone().unwrap_or_default(),
        ]);
    }
    t.to_string()
}

/// The `coord` the configurations run (`coord init` writes `coord` unless told otherwise).
fn binary() -> Check {
    match setup::command_warning("coord") {
        None => check("coord binary", Status::Ok, "`coord` on PATH is this coord", None),
        Some(w) => check(
            "coord binary",
            Status::Warn,
            w.trim_start_matches("warning: ").to_string(),
            Some("put this coord first on PATH, or `coord init claude|codex --command /abs/path/coord`"),
        ),
    }
}

/// The store, opened only when it exists (a doctor creates nothing).
async fn store(ctx: &Context) -> Check {
    if let DbTarget::Sqlite(path) = &ctx.db
        && !path.is_file()
    {
        return check(
            "store",
            Status::Warn,
            format!("no store at {} yet", path.display()),
            Some("`coord init` creates it (hooks and `coord mcp` also do on first use)"),
        );
    }
    match crate::open::coordinator(ctx).await {
        Ok(c) => {
            let schema = c.store().schema();
            check(
                "store",
                Status::Ok,
                format!(
                    "{} at {}, schema version {}",
                    c.store().backend(),
                    c.store().location(),
                    schema.version
                ),
                None,
            )
        }
        Err(e) => check(
            "store",
            Status::Fail,
            format!("{} [{}]", e.message, e.code),
            Some("check --db / COORD_DATABASE_URL, or that the database server runs"),
        ),
    }
}

/// What a runtime's hook configuration (`{"hooks": {EVENT: [{"hooks": [{command}]}]}}`)
/// holds of coord's: each event's command, if any.
fn hooks_of(settings: &Value) -> Vec<(&'static str, Option<String>)> {
    HOOK_EVENTS
        .iter()
        .map(|event| {
            let command = settings["hooks"][*event]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
                .filter_map(|h| h["command"].as_str())
                .find(|c| c.contains(&format!("hook {event}")))
                .map(String::from);
            (*event, command)
        })
        .collect()
}

/// Judges one runtime's hooks file: absent, partial, failing open (written by an earlier
/// coord), or complete.
fn judge_hooks(name: &'static str, path: &Path, rerun: &str) -> Check {
    let Some(text) = std::fs::read_to_string(path).ok() else {
        return check(
            name,
            Status::Warn,
            format!("no {}: coord's hooks are not installed", path.display()),
            Some(rerun),
        );
    };
    let Ok(settings) = serde_json::from_str::<Value>(&text) else {
        return check(
            name,
            Status::Fail,
            format!("{} is not JSON: the runtime ignores it", path.display()),
            Some("fix the file, then run the command again"),
        );
    };
    let hooks = hooks_of(&settings);
    let missing: Vec<&str> = hooks.iter().filter(|(_, c)| c.is_none()).map(|(e, _)| *e).collect();
    let pre = hooks
        .iter()
        .find(|(e, _)| *e == "PreToolUse")
        .and_then(|(_, c)| c.clone());
    match pre {
        None if missing.len() == HOOK_EVENTS.len() => check(
            name,
            Status::Warn,
            format!("{} holds none of coord's hooks", path.display()),
            Some(rerun),
        ),
        None => check(
            name,
            Status::Fail,
            format!(
                "{}: no PreToolUse hook: edits and commands are not checked",
                path.display()
            ),
            Some(rerun),
        ),
        Some(c) if !c.contains("exit 2") => check(
            name,
            Status::Fail,
            format!("{}: `{c}` fails open when coord cannot run", path.display()),
            Some(rerun),
        ),
        Some(_) if !missing.is_empty() => check(
            name,
            Status::Warn,
            format!("{}: no hook for {}", path.display(), missing.join(", ")),
            Some(rerun),
        ),
        Some(_) => check(
            name,
            Status::Ok,
            format!("{}: every hook, failing closed", path.display()),
            None,
        ),
    }
}

/// The coord plugin Codex has enabled (`[plugins."coord@<marketplace>"]`), and the hooks
/// file of its installed copy (`$CODEX_HOME/plugins/cache/<marketplace>/coord/<version>`).
fn codex_plugin(home: &Path, config: Option<&toml_edit::DocumentMut>) -> Option<(String, std::path::PathBuf)> {
    let (id, _) = config?
        .get("plugins")?
        .as_table_like()?
        .iter()
        .find(|(k, v)| k.starts_with("coord@") && v.get("enabled").and_then(|e| e.as_bool()) == Some(true))?;
    let market = id.strip_prefix("coord@")?;
    let versions = home.join("plugins").join("cache").join(market).join("coord");
    let newest = std::fs::read_dir(&versions).ok()?.flatten().map(|e| e.path()).max()?;
    Some((id.to_string(), newest.join("hooks").join("hooks.json")))
}

fn claude(ctx: &Context) -> Vec<Check> {
    if let Some((id, hooks)) = setup::claude_plugin(&ctx.repo_root) {
        let mut judged = judge_hooks("claude code hooks", &hooks, "`claude plugin update coord@coord`");
        judged.detail = format!("the {id} plugin: {}", judged.detail);
        return vec![
            judged,
            check(
                "claude code mcp",
                Status::Ok,
                format!("the {id} plugin serves coord"),
                None,
            ),
            claude_sandbox(ctx),
        ];
    }
    let mut checks = vec![judge_hooks(
        "claude code hooks",
        &ctx.repo_root.join(".claude/settings.json"),
        "`coord init claude`",
    )];
    let mcp = std::fs::read_to_string(ctx.repo_root.join(".mcp.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let approved = setup::claude_config_dir()
        .ok()
        .and_then(|d| std::fs::read_to_string(d.join("settings.json")).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|s| {
            s["enabledMcpjsonServers"]
                .as_array()
                .is_some_and(|l| l.iter().any(|v| v == "coord"))
        });
    checks.push(match (mcp.as_ref().map(|m| !m["mcpServers"]["coord"].is_null()), approved) {
        (Some(true), true) => check("claude code mcp", Status::Ok, ".mcp.json serves coord, approved in your settings", None),
        (Some(true), false) => check(
            "claude code mcp",
            Status::Warn,
            ".mcp.json serves coord, but your Claude Code settings do not approve it: some versions leave its tools out",
            Some("`coord init claude` (approves it in your user settings)"),
        ),
        _ => check(
            "claude code mcp",
            Status::Warn,
            "no coord server in .mcp.json",
            Some("`coord init claude`"),
        ),
    });
    checks.push(claude_sandbox(ctx));
    checks
}

/// Whether `program` is an executable file in a `PATH` directory.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// Whether Claude Code's sandbox keeps coord's store and settings from its Bash tool.
fn claude_sandbox(ctx: &Context) -> Check {
    let user = setup::claude_config_dir().ok().map(|d| d.join("settings.json"));
    let layers: Vec<Value> = user
        .into_iter()
        .chain(["settings.json", "settings.local.json"].map(|f| ctx.repo_root.join(".claude").join(f)))
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    let missing: Vec<&str> = ["bwrap", "socat"].into_iter().filter(|tool| !on_path(tool)).collect();
    let sqlite = match &ctx.db {
        DbTarget::Sqlite(p) => Some(p.as_path()),
        DbTarget::Postgres(_) => None,
    };
    let protected = crate::runtime_sandbox::claude_protected(&ctx.repo_root, &ctx.state_dir, sqlite);
    match crate::runtime_sandbox::claude_gap(&layers, &protected) {
        None if !missing.is_empty() => check(
            "claude code sandbox",
            Status::Warn,
            format!(
                "configured, but {} not on PATH: Claude Code refuses to run Bash (failIfUnavailable)",
                missing.join(" and ")
            ),
            Some("install bubblewrap and socat (apt-get install bubblewrap socat)"),
        ),
        None => check(
            "claude code sandbox",
            Status::Ok,
            "Bash runs sandboxed: coord's store, socket and settings out of its reach",
            None,
        ),
        Some(gap) => check(
            "claude code sandbox",
            Status::Warn,
            gap,
            Some("`coord init claude` (or accept it: docs/security.md)"),
        ),
    }
}

fn codex(ctx: &Context) -> Vec<Check> {
    let home = setup::codex_home();
    let project = ctx.repo_root.join(".codex/hooks.json");
    let hooks_file = if project.is_file() {
        project
    } else {
        home.join("hooks.json")
    };
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap_or_default();
    let doc = config.parse::<toml_edit::DocumentMut>().ok();
    let plugin = codex_plugin(&home, doc.as_ref());
    let mut checks = vec![match &plugin {
        Some((id, hooks)) => {
            let mut judged = judge_hooks("codex hooks", hooks, "`codex plugin add coord@coord`");
            judged.detail = format!("the {id} plugin: {}", judged.detail);
            judged
        }
        None => judge_hooks("codex hooks", &hooks_file, "`coord init codex --write`"),
    }];
    if let Some(c) = checks.first_mut().filter(|c| c.status == Status::Ok) {
        c.detail
            .push_str(" (Codex runs them once trusted in its /hooks screen: not checkable here)");
    }
    let served = doc
        .as_ref()
        .is_some_and(|d| d.get("mcp_servers").and_then(|s| s.get("coord")).is_some());
    checks.push(if let Some((id, _)) = &plugin {
        check("codex mcp", Status::Ok, format!("the {id} plugin serves coord"), None)
    } else if served {
        check(
            "codex mcp",
            Status::Ok,
            format!("{} serves coord", home.join("config.toml").display()),
            None,
        )
    } else {
        check(
            "codex mcp",
            Status::Warn,
            format!("no [mcp_servers.coord] in {}", home.join("config.toml").display()),
            Some("`coord init codex --write`"),
        )
    });
    let project = setup::read_codex_config(&ctx.repo_root.join(".codex").join("config.toml")).ok();
    let state = match (&doc, &project) {
        (Some(user), Some((_, project))) => Some(crate::runtime_sandbox::CodexLayers { user, project }.state()),
        _ => None,
    };
    let fix = state.as_ref().and_then(|s| s.fix());
    // Codex reads a project's .codex/config.toml only once the user trusted the project.
    let project_chooses = project
        .as_ref()
        .is_some_and(|(_, p)| p.get("default_permissions").is_some());
    let trusted = doc.as_ref().is_some_and(|d| {
        let root = ctx.repo_root.display().to_string();
        d.get("projects")
            .and_then(|p| p.get(&root))
            .and_then(|e| e.get("trust_level"))
            .and_then(|v| v.as_str())
            == Some("trusted")
    });
    checks.push(match state.as_ref().and_then(|s| s.gap()) {
        None if project_chooses && !trusted => check(
            "codex sandbox",
            Status::Warn,
            "this repository's .codex/config.toml keeps .coord read-only, but Codex loads it only once you trust \
             the project",
            Some("start `codex` here and trust the project when it asks"),
        ),
        None if state.is_some() => check(
            "codex sandbox",
            Status::Ok,
            "its commands and patches cannot write .coord",
            None,
        ),
        None => check(
            "codex sandbox",
            Status::Warn,
            format!(
                "{} or this repository's .codex/config.toml is not valid TOML",
                home.join("config.toml").display()
            ),
            None,
        ),
        Some(gap) => check("codex sandbox", Status::Warn, gap, fix),
    });
    checks
}

/// A runtime's version against the one the real-agent suites run.
async fn runtime(program: &str, tested: &str) -> Check {
    let name = match program {
        "claude" => "claude code version",
        _ => "codex version",
    };
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tokio::process::Command::new(program)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await;
    let text = match out {
        Ok(Ok(o)) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => return check(name, Status::Warn, format!("`{program}` is not on PATH here"), None),
    };
    let version = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or("unknown")
        .to_string();
    if version == tested {
        check(
            name,
            Status::Ok,
            format!("{version} (the version coord is tested with)"),
            None,
        )
    } else {
        check(
            name,
            Status::Warn,
            format!("{version}; coord is tested with {tested}"),
            Some("hooks and tools usually work across versions; report what does not"),
        )
    }
}

async fn sandbox() -> Check {
    match coord_runtime::launch::bwrap_ready().await {
        Ok(p) => check(
            "sandbox",
            Status::Ok,
            format!("bubblewrap at {} works", p.display()),
            None,
        ),
        Err(e) => check(
            "sandbox",
            Status::Warn,
            e.message,
            Some("needed by `coord sandbox run` and spawned agents (apt-get install bubblewrap)"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_are_judged_by_what_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let all = |pre: &str| {
            json!({"hooks": {
                "SessionStart": [{"hooks": [{"command": "coord hook SessionStart"}]}],
                "SessionEnd": [{"hooks": [{"command": "coord hook SessionEnd"}]}],
                "PreToolUse": [{"matcher": "*", "hooks": [{"command": pre}]}],
                "UserPromptSubmit": [{"hooks": [{"command": "coord hook UserPromptSubmit"}]}],
            }})
        };
        let cases = [
            (None, Status::Warn),
            (Some("{ nope".to_string()), Status::Fail),
            (Some(json!({"hooks": {}}).to_string()), Status::Warn),
            (Some(all("coord hook PreToolUse").to_string()), Status::Fail),
            (Some(all("coord hook PreToolUse || exit 2").to_string()), Status::Ok),
            (
                Some(
                    json!({"hooks": {"SessionStart": [{"hooks": [{"command": "coord hook SessionStart"}]}]}})
                        .to_string(),
                ),
                Status::Fail,
            ),
            (
                Some(
                    json!({"hooks": {"PreToolUse": [{"hooks": [{"command": "coord hook PreToolUse || exit 2"}]}]}})
                        .to_string(),
                ),
                Status::Warn,
            ),
        ];
        for (text, want) in cases {
            match &text {
                Some(t) => std::fs::write(&path, t).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            let got = judge_hooks("hooks", &path, "rerun");
            assert_eq!(got.status, want, "{text:?}: {got:?}");
            assert_eq!(got.fix.is_some(), want != Status::Ok, "{got:?}");
        }
    }
}
