//! `coord init claude|codex|git-hook`: wire coord into an agent runtime's configuration.
//! Existing files are merged, never clobbered; running a setup twice changes nothing;
//! `--dry-run` shows the diff instead of writing.

pub use crate::config_file::{Change, FileOutcome, SetupResult, apply};
use crate::config_file::{git_path, parse_json_object, pretty, read_optional};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Marks the git hook as ours, so a second install updates it and a foreign hook is
/// left alone.
pub const GIT_HOOK_MARKER: &str = "# installed by `coord init git-hook`";

/// The Claude Code tools coord's PreToolUse hook sees: file edits (locks, credential
/// files) and shell commands (destructive-operation guardrails).
pub use coord_agents::launch::PRE_TOOL_USE_MATCHER;

fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str, path: &Path) -> CoordResult<&'a mut Map<String, Value>> {
    let slot = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    slot.as_object_mut().ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidJson,
            format!("{}: \"{key}\" is not an object", path.display()),
        )
    })
}

/// `.mcp.json` with the coord server, and `.claude/settings.json` with the hooks.
pub fn claude(repo_root: &Path, command: &str, toolsets: Option<&str>) -> CoordResult<Vec<Change>> {
    let mcp_path = repo_root.join(".mcp.json");
    let before = read_optional(&mcp_path)?;
    let mut mcp = parse_json_object(&mcp_path, before.as_deref())?;
    let mut server = json!({"type": "stdio", "command": command, "args": ["mcp"]});
    if let Some(t) = toolsets {
        server["env"] = json!({"COORD_TOOLSETS": t});
    }
    object_at(&mut mcp, "mcpServers", &mcp_path)?.insert("coord".into(), server);
    let mcp_change = Change {
        path: mcp_path,
        before,
        after: pretty(mcp),
        executable: false,
        delete: false,
    };

    let settings_path = repo_root.join(".claude").join("settings.json");
    let before = read_optional(&settings_path)?;
    let wanted = [
        ("SessionStart", None),
        ("SessionEnd", None),
        // File edits (locks, credential files) and shell commands (guardrails).
        ("PreToolUse", Some(PRE_TOOL_USE_MATCHER)),
        ("UserPromptSubmit", None),
    ];
    let settings_change = merge_hooks(&settings_path, before, &wanted, command)?;
    Ok(vec![mcp_change, settings_change])
}

/// `path` (a JSON object with `hooks`, as Claude Code's settings and Codex's `hooks.json`
/// have it) with a `command hook EVENT` hook for each of `wanted` (an optional matcher
/// each), merged with what is there: nobody else's hooks change, ours are not doubled,
/// and an older, narrower matcher of ours is widened.
fn merge_hooks(
    path: &Path,
    before: Option<String>,
    wanted: &[(&str, Option<&str>)],
    command: &str,
) -> CoordResult<Change> {
    let mut settings = parse_json_object(path, before.as_deref())?;
    let hooks = object_at(&mut settings, "hooks", path)?;
    for (event, matcher) in wanted {
        let hook_command = hook_command(command, event);
        // What earlier versions wrote: replaced, not doubled.
        let legacy = format!("{command} hook {event}");
        let groups = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let groups = groups.as_array_mut().ok_or_else(|| {
            CoordError::new(
                ErrorCode::InvalidJson,
                format!("{}: hooks.{event} is not a list", path.display()),
            )
        })?;
        let is_ours = |h: &Value| {
            h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c == hook_command || c == legacy)
        };
        let ours = |g: &Value| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(is_ours))
        };
        if let Some(i) = groups.iter().position(ours) {
            if let Some(hs) = groups[i].get_mut("hooks").and_then(Value::as_array_mut) {
                for h in hs.iter_mut().filter(|h| is_ours(h)) {
                    h["command"] = Value::String(hook_command.clone());
                }
            }
            if let Some(m) = matcher
                && groups[i].get("matcher").and_then(Value::as_str) != Some(*m)
                && let Some(g) = groups[i].as_object_mut()
            {
                g.insert("matcher".into(), Value::String((*m).into()));
            }
        } else {
            let mut group = Map::new();
            if let Some(m) = matcher {
                group.insert("matcher".into(), Value::String((*m).into()));
            }
            group.insert("hooks".into(), json!([{"type": "command", "command": hook_command}]));
            groups.push(Value::Object(group));
        }
    }
    Ok(Change {
        path: path.to_path_buf(),
        before,
        after: pretty(settings),
        executable: false,
        delete: false,
    })
}

/// The command a runtime runs for `event`. The check before a tool call fails closed:
/// when `command` cannot be run (not on PATH, moved, deleted) the shell's failure becomes
/// exit 2, which Claude Code and Codex take as a refusal, with the shell's message —
/// instead of a non-blocking error that lets every edit and command through. (`coord
/// hook` itself answers 0 with its decision on stdout, so only a failure to run it turns
/// into the refusal.)
pub fn hook_command(command: &str, event: &str) -> String {
    match event {
        "PreToolUse" => format!("{command} hook {event} || exit 2"),
        _ => format!("{command} hook {event}"),
    }
}

/// A warning when the `command` a runtime's configuration will run is not this coord:
/// not found on PATH, or another binary there. Nothing when it is a path to this one.
pub fn command_warning(command: &str) -> Option<String> {
    let me = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
    let found = if command.contains('/') {
        Some(PathBuf::from(command)).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(command))
                .find(|p| p.is_file())
        })
    };
    match found.and_then(|p| p.canonicalize().ok()) {
        None => Some(format!(
            "warning: `{command}` is not on PATH here: the hooks will refuse every tool call and the MCP server \
             will not start until it is (or run `coord init … --command {}`)",
            me.as_deref()
                .map_or("/path/to/coord".into(), |p| p.display().to_string())
        )),
        Some(p) if me.as_ref().is_some_and(|m| m != &p) => Some(format!(
            "warning: `{command}` runs {} here, not this coord ({}): the configuration will run that one",
            p.display(),
            me.as_deref().map(|m| m.display().to_string()).unwrap_or_default()
        )),
        Some(_) => None,
    }
}

/// Codex's `hooks.json` in `dir` (`$CODEX_HOME` for the user, `<repo>/.codex` for a
/// project Codex trusts) with coord's hooks: the session's start and end, every tool call
/// (shell commands through the guardrails, shell writes and `apply_patch` against the
/// locks), each prompt (urgent messages). Codex runs hooks only once the user trusted
/// them (its `/hooks` screen).
pub fn codex_hooks(dir: &Path, command: &str) -> CoordResult<Change> {
    let path = dir.join("hooks.json");
    let before = read_optional(&path)?;
    let wanted = [
        ("SessionStart", None),
        ("SessionEnd", None),
        ("PreToolUse", None),
        ("UserPromptSubmit", None),
    ];
    merge_hooks(&path, before, &wanted, command)
}

/// Where Claude Code keeps the user's settings: `$CLAUDE_CONFIG_DIR`, else `~/.claude`
/// (an absolute directory, or an error saying how to choose one).
pub fn claude_config_dir() -> CoordResult<PathBuf> {
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".claude"))
        });
    dir.filter(|d| d.is_absolute()).ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            "cannot find your Claude Code settings: set HOME or CLAUDE_CONFIG_DIR, or pass --no-user-settings",
        )
    })
}

/// The coord plugin Claude Code has enabled here (`coord@<marketplace>` in
/// `enabledPlugins`; this checkout's local settings over the project's over the user's, as
/// Claude Code reads them, so a project that turns the plugin off is seen as off), and
/// the hooks file of its installed copy.
pub fn claude_plugin(repo_root: &Path) -> Option<(String, PathBuf)> {
    let dir = claude_config_dir().ok()?;
    let read = |p: PathBuf| -> Option<Value> { serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok() };
    let layers = [
        repo_root.join(".claude").join("settings.local.json"),
        repo_root.join(".claude").join("settings.json"),
        dir.join("settings.json"),
    ];
    let (id, on) = layers.into_iter().filter_map(read).find_map(|settings| {
        settings["enabledPlugins"]
            .as_object()?
            .iter()
            .find(|(k, _)| k.starts_with("coord@"))
            .map(|(k, v)| (k.clone(), v.as_bool() == Some(true)))
    })?;
    if !on {
        return None;
    }
    let installed = read(dir.join("plugins").join("installed_plugins.json"))?;
    let root = installed["plugins"][&id][0]["installPath"].as_str()?;
    Some((id, Path::new(root).join("hooks").join("hooks.json")))
}

/// The user's Claude Code settings with the project's `coord` server approved
/// (`enabledMcpjsonServers`), merged with what is there. A project's own settings
/// cannot approve its servers, and without the approval some Claude Code versions
/// silently leave coord's tools out.
pub fn claude_user_approval(config_dir: &Path) -> CoordResult<Change> {
    let path = config_dir.join("settings.json");
    let before = read_optional(&path)?;
    let mut settings = parse_json_object(&path, before.as_deref())?;
    let enabled = settings
        .entry("enabledMcpjsonServers".to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    let list = enabled.as_array_mut().ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidJson,
            format!("{}: enabledMcpjsonServers is not a list", path.display()),
        )
    })?;
    if !list.iter().any(|v| v.as_str() == Some("coord")) {
        list.push(Value::String("coord".into()));
    }
    Ok(Change {
        path,
        before,
        after: pretty(settings),
        executable: false,
        delete: false,
    })
}

/// The Codex CLI `config.toml` entry for the coord MCP server.
pub fn codex_snippet(command: &str, toolsets: Option<&str>) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    insert_codex_entry(&mut doc, command, toolsets);
    doc.to_string()
}

fn insert_codex_entry(doc: &mut toml_edit::DocumentMut, command: &str, toolsets: Option<&str>) {
    use toml_edit::{Array, InlineTable, Item, Table, value};
    if !doc.contains_key("mcp_servers") {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(t));
    }
    let servers = doc["mcp_servers"].as_table_mut();
    let Some(servers) = servers else { return };
    let mut entry = Table::new();
    entry.insert("command", value(command));
    let mut args = Array::new();
    args.push("mcp");
    entry.insert("args", value(args));
    let mut env = InlineTable::new();
    env.insert("COORD_AGENT_TYPE", "codex".into());
    if let Some(t) = toolsets {
        env.insert("COORD_TOOLSETS", t.into());
    }
    entry.insert("env", value(env));
    // `codex exec` with approval_policy "never" refuses unapproved MCP calls; coord's
    // tools change only coordination state, so they are approved up front.
    entry.insert("default_tools_approval_mode", value("approve"));
    servers.insert("coord", Item::Table(entry));
}

pub fn codex_home() -> PathBuf {
    std::env::var_os("CODEX_HOME").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(".codex")
    })
}

/// A Codex `config.toml` and what it held (empty when missing), parsed.
pub fn read_codex_config(path: &Path) -> CoordResult<(Option<String>, toml_edit::DocumentMut)> {
    let before = read_optional(path)?;
    let doc = before.as_deref().unwrap_or("").parse().map_err(|e| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            format!("{} is not valid TOML ({e}); fix it by hand first", path.display()),
        )
    })?;
    Ok((before, doc))
}

/// `$CODEX_HOME/config.toml` with the coord MCP server and, with `sandbox_in` (the
/// repository), Codex's sandbox keeping `.coord` read-only there
/// ([`crate::runtime_sandbox::codex`]: usually the repository's `.codex/config.toml`);
/// the warning says why it could not.
pub fn codex(
    home: &Path,
    command: &str,
    toolsets: Option<&str>,
    sandbox_in: Option<&Path>,
) -> CoordResult<(Vec<Change>, Option<String>)> {
    let path = home.join("config.toml");
    let (before, mut doc) = read_codex_config(&path)?;
    if doc.get("mcp_servers").is_some_and(|i| !i.is_table()) {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!("{}: mcp_servers is not a table", path.display()),
        ));
    }
    insert_codex_entry(&mut doc, command, toolsets);
    let mut project = None;
    let mut warning = None;
    if let Some(repo) = sandbox_in {
        let project_path = repo.join(".codex").join("config.toml");
        let (project_before, mut project_doc) = read_codex_config(&project_path)?;
        warning = crate::runtime_sandbox::codex(&mut doc, &mut project_doc)?;
        let after = project_doc.to_string();
        if project_before.is_some() || !after.is_empty() {
            project = Some(Change {
                path: project_path,
                before: project_before,
                after,
                executable: false,
                delete: false,
            });
        }
    }
    let user = Change {
        path,
        before,
        after: doc.to_string(),
        executable: false,
        delete: false,
    };
    Ok((std::iter::once(user).chain(project).collect(), warning))
}

/// The git hook scripts, in the hooks directory git uses for `repo_root`: `pre-commit`
/// (files other agents locked, credential files) and `pre-push` (force pushes and
/// deletions of protected branches).
pub fn git_hooks(repo_root: &Path, command: &str) -> CoordResult<Vec<Change>> {
    let dir = git_hooks_dir(repo_root)?;
    [
        (
            "pre-commit",
            "git-pre-commit",
            "Refuses commits touching files other agents have locked, or credential files; bypass with `git commit --no-verify`.",
        ),
        (
            "pre-push",
            "git-pre-push",
            "Refuses force pushes and deletions of protected branches (main, master, release/*), release tags and pushes to remotes that deploy (heroku, dokku); bypass with `git push --no-verify`.",
        ),
    ]
    .into_iter()
    .map(|(name, event, what)| {
        let path = dir.join(name);
        let before = read_optional(&path)?;
        if let Some(existing) = &before
            && !existing.contains(GIT_HOOK_MARKER)
        {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{} exists and was not installed by coord; add `{command} hook {event} \"$@\" || exit 1` to it yourself",
                    path.display()
                ),
            ));
        }
        Ok(Change {
            path,
            before,
            // The refs come on stdin; pre-push's arguments are the remote's name and URL.
            after: format!("#!/bin/sh\n{GIT_HOOK_MARKER}\n# {what}\nexec {command} hook {event} \"$@\"\n"),
            executable: true,
            delete: false,
        })
    })
    .collect()
}

fn git_hooks_dir(repo_root: &Path) -> CoordResult<PathBuf> {
    git_path(repo_root, "hooks")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_setup_merges_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"other": {"command": "x"}}, "keep": 1}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}"#,
        )
        .unwrap();
        let first = apply(claude(dir.path(), "coord", None).unwrap(), false, None).unwrap();
        assert!(first.files.iter().all(|f| f.action == "updated"), "{first:?}");
        let mcp: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap()).unwrap();
        assert_eq!(mcp["mcpServers"]["other"]["command"], "x", "other servers are kept");
        assert_eq!(mcp["keep"], 1);
        assert_eq!(mcp["mcpServers"]["coord"]["args"], json!(["mcp"]));
        let settings: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(".claude/settings.json")).unwrap()).unwrap();
        assert_eq!(settings["permissions"]["allow"], json!(["Bash(ls)"]));
        assert_eq!(settings["hooks"]["Stop"][0]["hooks"][0]["command"], "mine");
        assert_eq!(settings["hooks"]["PreToolUse"][0]["matcher"], PRE_TOOL_USE_MATCHER);
        assert_eq!(
            settings["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "coord hook SessionStart"
        );
        let second = apply(claude(dir.path(), "coord", None).unwrap(), false, None).unwrap();
        assert!(second.files.iter().all(|f| f.action == "unchanged"), "{second:?}");
    }

    /// The Claude Code plugin (`plugins/coord`, offered by the repository's marketplace)
    /// bundles exactly what `coord init claude` writes: the same MCP server, the same hooks.
    #[test]
    fn the_claude_plugin_bundles_what_init_claude_writes() {
        let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/coord");
        let read = |p: &str| -> Value {
            let text = std::fs::read_to_string(plugin.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p}: {e}"))
        };
        let dir = tempfile::tempdir().unwrap();
        let changes = claude(dir.path(), "coord", None).unwrap();
        let written = |name: &str| -> Value {
            let c = changes.iter().find(|c| c.path.ends_with(name)).unwrap();
            serde_json::from_str(&c.after).unwrap()
        };
        assert_eq!(
            read(".mcp.json"),
            written(".mcp.json"),
            "plugins/coord/.mcp.json differs from what `coord init claude` writes"
        );
        assert_eq!(
            read("hooks/hooks.json")["hooks"],
            written("settings.json")["hooks"],
            "plugins/coord/hooks/hooks.json differs from the hooks `coord init claude` writes"
        );
        let manifest = read(".claude-plugin/plugin.json");
        assert_eq!(manifest["name"], "coord");
        assert_eq!(
            manifest["version"],
            env!("CARGO_PKG_VERSION"),
            "the plugin's version is coord's"
        );
        let market = read("../../.claude-plugin/marketplace.json");
        assert_eq!(market["plugins"][0]["name"], "coord");
        assert_eq!(market["plugins"][0]["source"], "./plugins/coord");
    }

    /// A configuration written by an earlier coord (`coord hook PreToolUse`, which failed
    /// open) is upgraded in place, never doubled.
    #[test]
    fn an_earlier_pre_tool_use_hook_is_upgraded_not_doubled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".codex")).unwrap();
        let path = dir.path().join(".codex/hooks.json");
        std::fs::write(
            &path,
            r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"coord hook PreToolUse"}]}]}}"#,
        )
        .unwrap();
        apply(
            vec![codex_hooks(&dir.path().join(".codex"), "coord").unwrap()],
            false,
            None,
        )
        .unwrap();
        let hooks: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            hooks["hooks"]["PreToolUse"],
            json!([{"hooks": [{"type": "command", "command": "coord hook PreToolUse || exit 2"}]}])
        );
    }

    #[test]
    fn dry_runs_show_a_diff_and_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = apply(claude(dir.path(), "/opt/coord", None).unwrap(), true, None).unwrap();
        assert_eq!(r.files[0].action, "would_create");
        assert!(r.files[0].diff.as_deref().unwrap().contains("+    \"coord\": {"));
        assert!(!dir.path().join(".mcp.json").exists());
    }

    #[test]
    fn broken_json_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), "{ nope").unwrap();
        let e = claude(dir.path(), "coord", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidJson);
        assert_eq!(std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap(), "{ nope");
    }

    #[test]
    fn codex_config_keeps_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "model = \"o4\"  # mine\n\n[mcp_servers.other]\ncommand = \"x\"\n",
        )
        .unwrap();
        apply(codex(dir.path(), "coord", None, None).unwrap().0, false, None).unwrap();
        let text = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
        assert!(text.contains("model = \"o4\"  # mine"), "{text}");
        assert!(text.contains("[mcp_servers.other]"));
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["coord"]["command"].as_str(), Some("coord"));
        assert_eq!(
            doc["mcp_servers"]["coord"]["default_tools_approval_mode"].as_str(),
            Some("approve")
        );
        let again = apply(codex(dir.path(), "coord", None, None).unwrap().0, false, None).unwrap();
        assert_eq!(again.files[0].action, "unchanged");
        assert!(codex_snippet("coord", None).contains("[mcp_servers.coord]"));
    }
}
