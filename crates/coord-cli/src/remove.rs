//! `coord init claude|codex|git-hook --remove`: take out what `coord init` added, and
//! nothing else. Each file is read, coord's part removed, and the file written back — or
//! deleted when nothing of anyone else's is left in it. coord's own store (`.coord/`:
//! the locks, the queue, the audit trail) is data, not configuration: it stays.
//!
//! coord's parts are recognised by their shape, not by the `--command` they were written
//! with: a hook `<…/coord> hook <Event>` (with `|| exit 2` on the check before a tool
//! call), the MCP server named `coord`, the marked section of `CLAUDE.md`/`AGENTS.md`,
//! the sandbox entries naming coord's paths, the git hooks carrying coord's marker.

use crate::config_file::{Change, git_path, parse_json_object, pretty, read_optional};
use crate::setup::{GIT_HOOK_MARKER, read_codex_config};
use coord_domain::CoordResult;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Whether `command` is the hook coord installs for `event`, whatever coord executable
/// it runs.
pub fn is_coord_hook(command: &str, event: &str) -> bool {
    let command = command.strip_suffix(" || exit 2").unwrap_or(command);
    command.split_once(" hook ").is_some_and(|(exe, ev)| {
        ev == event && !exe.is_empty() && !exe.contains(char::is_whitespace) && exe.rsplit('/').next() == Some("coord")
    })
}

/// `settings["hooks"]` without coord's hooks: groups left empty by it, events left empty
/// and an empty `hooks` go too. The user's hooks (even in a group with coord's) stay.
fn without_hooks(settings: &mut Map<String, Value>) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return;
    };
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else { continue };
        let had = groups.len();
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let had = list.len();
            list.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| is_coord_hook(c, event))
            });
            !(list.is_empty() && had > 0)
        });
        if groups.is_empty() && had > 0 {
            emptied.push(event.clone());
        }
    }
    for event in emptied {
        hooks.remove(&event);
    }
    if hooks.is_empty() {
        settings.remove("hooks");
    }
}

/// A JSON settings file with `edit` applied: `None` when the file does not exist.
fn json_removal(path: PathBuf, edit: impl FnOnce(&mut Map<String, Value>)) -> CoordResult<Option<Change>> {
    let Some(before) = read_optional(&path)? else {
        return Ok(None);
    };
    let mut map = parse_json_object(&path, Some(&before))?;
    let original = map.clone();
    edit(&mut map);
    Ok(Some(match (map == original, map.is_empty()) {
        // Untouched: the user's formatting is kept.
        (true, _) => Change::removal(path, Some(before.clone()), Some(before)),
        (false, true) => Change::removal(path, Some(before), None),
        (false, false) => Change::removal(path, Some(before), Some(pretty(map))),
    }))
}

/// Removes `key` from the object at `map[parent]`, and `parent` when that leaves it empty.
fn remove_in(map: &mut Map<String, Value>, parent: &str, key: &str) {
    if let Some(inner) = map.get_mut(parent).and_then(Value::as_object_mut) {
        inner.remove(key);
        if inner.is_empty() {
            map.remove(parent);
        }
    }
}

/// What `coord init claude` turned on in Claude Code's sandbox, with these values: when
/// the sandbox holds nothing else once coord's paths are out, it goes.
const CLAUDE_SANDBOX_KEYS: [(&str, bool); 4] = [
    ("enabled", true),
    ("allowUnsandboxedCommands", false),
    ("failIfUnavailable", true),
    ("autoAllowBashIfSandboxed", true),
];

/// Claude Code's sandbox settings without coord's protected paths; the sandbox itself
/// when only coord's settings are left in it (`Some(warning)` when it stays on because
/// the user's own settings are in it too).
fn without_claude_sandbox(settings: &mut Map<String, Value>, protected: &[PathBuf]) -> Option<String> {
    let sandbox = settings.get_mut("sandbox")?.as_object_mut()?;
    let ours: Vec<Value> = protected
        .iter()
        .map(|p| Value::String(format!("/{}", p.display())))
        .collect();
    // Without coord's paths in it, the sandbox is the user's own (Claude Code's `/sandbox`
    // writes `enabled` and `autoAllowBashIfSandboxed` too): left as it is.
    let had_ours = sandbox
        .get("filesystem")
        .and_then(|f| f.get("denyWrite"))
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| ours.contains(v)));
    if !had_ours {
        return None;
    }
    if let Some(fs) = sandbox.get_mut("filesystem").and_then(Value::as_object_mut) {
        if let Some(deny) = fs.get_mut("denyWrite").and_then(Value::as_array_mut) {
            deny.retain(|v| !ours.contains(v));
            if deny.is_empty() {
                fs.remove("denyWrite");
            }
        }
        if fs.is_empty() {
            sandbox.remove("filesystem");
        }
    }
    let only_ours = sandbox.iter().all(|(k, v)| {
        CLAUDE_SANDBOX_KEYS
            .iter()
            .any(|(key, val)| k == key && v.as_bool() == Some(*val))
    });
    if only_ours {
        settings.remove("sandbox");
        None
    } else {
        Some("Claude Code's sandbox stays on in .claude/settings.local.json: it holds settings of yours too".into())
    }
}

/// The lines `coord init claude` added to git's `info/exclude`, taken out.
fn exclude_removal(repo_root: &Path) -> CoordResult<Option<Change>> {
    let Ok(path) = git_path(repo_root, "info/exclude") else {
        return Ok(None);
    };
    let Some(before) = read_optional(&path)? else {
        return Ok(None);
    };
    let ours =
        "# this checkout's Claude Code settings (coord init claude: absolute paths)\n.claude/settings.local.json\n";
    let after = before.replacen(ours, "", 1);
    Ok(Some(Change::removal(path, Some(before), Some(after))))
}

/// What `coord init claude` wrote: the MCP server (`.mcp.json`), the hooks
/// (`.claude/settings.json`), the sandbox (`.claude/settings.local.json`, git's
/// exclude), the section of `CLAUDE.md`, and — with `user_settings` (Claude Code's
/// settings directory) — the user's approval of the server. Returns the changes and what
/// was left in place on purpose.
pub fn claude(
    repo_root: &Path,
    protected: &[PathBuf],
    user_settings: Option<&Path>,
) -> CoordResult<(Vec<Change>, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut changes: Vec<Option<Change>> = vec![
        json_removal(repo_root.join(".mcp.json"), |m| remove_in(m, "mcpServers", "coord"))?,
        json_removal(repo_root.join(".claude").join("settings.json"), without_hooks)?,
        json_removal(repo_root.join(".claude").join("settings.local.json"), |m| {
            warnings.extend(without_claude_sandbox(m, protected));
        })?,
        exclude_removal(repo_root)?,
        crate::instructions::removal(repo_root, "CLAUDE.md")?,
    ];
    if let Some(dir) = user_settings {
        changes.push(json_removal(dir.join("settings.json"), |m| {
            if let Some(list) = m.get_mut("enabledMcpjsonServers").and_then(Value::as_array_mut) {
                list.retain(|v| v.as_str() != Some("coord"));
                if list.is_empty() {
                    m.remove("enabledMcpjsonServers");
                }
            }
        })?);
    }
    Ok((changes.into_iter().flatten().collect(), warnings))
}

/// The tables at `path` (dotted keys) in `doc`, removed, and their parents left empty by it.
fn remove_toml(doc: &mut toml_edit::DocumentMut, path: &[&str]) {
    fn go(table: &mut dyn toml_edit::TableLike, path: &[&str]) -> bool {
        match path {
            [] => false,
            [last] => table.remove(last).is_some(),
            [first, rest @ ..] => {
                let Some(inner) = table.get_mut(first).and_then(toml_edit::Item::as_table_like_mut) else {
                    return false;
                };
                let removed = go(inner, rest);
                if removed && inner.is_empty() {
                    table.remove(first);
                }
                removed
            }
        }
    }
    go(doc.as_table_mut(), path);
}

/// coord's rule (`.coord = "read"`) out of every permission profile's workspace roots,
/// and coord's own profile (`default_permissions = "coord"`) out altogether.
fn without_codex_profile(doc: &mut toml_edit::DocumentMut) {
    use crate::runtime_sandbox::CODEX_PROFILE;
    if doc.get("default_permissions").and_then(|v| v.as_str()) == Some(CODEX_PROFILE) {
        doc.remove("default_permissions");
    }
    remove_toml(doc, &["permissions", CODEX_PROFILE]);
    let names: Vec<String> = doc
        .get("permissions")
        .and_then(toml_edit::Item::as_table_like)
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    for name in names {
        let rule = &["permissions", name.as_str(), "filesystem", ":workspace_roots", ".coord"];
        let ours = doc
            .get("permissions")
            .and_then(|p| p.get(&name))
            .and_then(|p| p.get("filesystem"))
            .and_then(|f| f.get(":workspace_roots"))
            .and_then(|r| r.get(".coord"))
            .and_then(|v| v.as_str())
            == Some("read");
        if ours {
            remove_toml(doc, rule);
        }
    }
}

/// A Codex `config.toml` with `edit` applied: `None` when it does not exist.
fn toml_removal(path: PathBuf, edit: impl FnOnce(&mut toml_edit::DocumentMut)) -> CoordResult<Option<Change>> {
    let (Some(before), mut doc) = read_codex_config(&path)? else {
        return Ok(None);
    };
    edit(&mut doc);
    let after = doc.to_string();
    let after = match (after == before, after.trim().is_empty()) {
        (true, _) => Some(before.clone()),
        (false, true) => None,
        (false, false) => Some(after),
    };
    Ok(Some(Change::removal(path, Some(before), after)))
}

/// What `coord init codex --write` wrote: the MCP server and hooks in `$CODEX_HOME`, the
/// hooks of the repository's `.codex` (`--project`), the permission profile, the section
/// of `AGENTS.md`.
pub fn codex(codex_home: &Path, repo_root: &Path) -> CoordResult<Vec<Change>> {
    let changes = [
        toml_removal(codex_home.join("config.toml"), |doc| {
            remove_toml(doc, &["mcp_servers", "coord"]);
            without_codex_profile(doc);
        })?,
        toml_removal(repo_root.join(".codex").join("config.toml"), without_codex_profile)?,
        json_removal(codex_home.join("hooks.json"), without_hooks)?,
        json_removal(repo_root.join(".codex").join("hooks.json"), without_hooks)?,
        crate::instructions::removal(repo_root, "AGENTS.md")?,
    ];
    Ok(changes.into_iter().flatten().collect())
}

/// The git hooks `coord init git-hook` installed (they carry its marker); a hook of
/// anyone else's is left alone.
pub fn git_hooks(repo_root: &Path) -> CoordResult<Vec<Change>> {
    let dir = git_path(repo_root, "hooks")?;
    let mut changes = Vec::new();
    for name in ["pre-commit", "pre-push"] {
        let path = dir.join(name);
        if let Some(before) = read_optional(&path)?
            && before.contains(GIT_HOOK_MARKER)
        {
            changes.push(Change::removal(path, Some(before), None));
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::apply;
    use serde_json::json;

    #[test]
    fn coord_hooks_are_known_by_their_shape() {
        let cases = [
            ("coord hook PreToolUse || exit 2", "PreToolUse", true),
            ("coord hook PreToolUse", "PreToolUse", true),
            ("/opt/bin/coord hook SessionStart", "SessionStart", true),
            ("coord hook SessionStart", "SessionEnd", false),
            ("mycoord hook PreToolUse", "PreToolUse", false),
            ("coord-dev hook PreToolUse", "PreToolUse", false),
            ("echo coord hook PreToolUse", "PreToolUse", false),
            ("coord hook PreToolUse && rm -rf x", "PreToolUse", false),
            (" hook PreToolUse", "PreToolUse", false),
            ("lint", "PreToolUse", false),
        ];
        for (command, event, want) in cases {
            assert_eq!(is_coord_hook(command, event), want, "{command:?} for {event}");
        }
    }

    #[test]
    fn only_coords_hooks_go() {
        let mut settings = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]},
                    {"matcher": "Write", "hooks": [
                        {"type": "command", "command": "/usr/bin/coord hook PreToolUse || exit 2"},
                        {"type": "command", "command": "fmt"}]}
                ],
                "SessionStart": [{"hooks": [{"type": "command", "command": "coord hook SessionStart"}]}],
                "Stop": []
            }
        });
        without_hooks(settings.as_object_mut().unwrap());
        assert_eq!(
            settings,
            json!({
                "permissions": {"allow": ["Bash(ls)"]},
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]},
                        {"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}
                    ],
                    "Stop": []
                }
            })
        );
    }

    /// `coord init claude` then `--remove` leaves the repository as it was: files coord
    /// created are gone, files it merged into hold the user's part, byte for byte where
    /// coord's part was all that changed.
    #[test]
    fn init_claude_then_remove_leaves_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let user = root.join("user");
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        let settings = "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls)\"\n    ]\n  }\n}\n";
        std::fs::write(root.join(".claude/settings.json"), settings).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "# Project\n\nBuild with make.\n").unwrap();
        let protected = crate::runtime_sandbox::claude_protected(root, &root.join(".coord"), None);
        let mut init = crate::setup::claude(root, "coord", None).unwrap();
        init.extend(crate::runtime_sandbox::claude(root, &protected).unwrap());
        init.push(crate::setup::claude_user_approval(&user).unwrap());
        init.push(crate::instructions::change(root, "CLAUDE.md").unwrap());
        apply(init, false, None).unwrap();
        assert!(root.join(".mcp.json").exists() && root.join(".claude/settings.local.json").exists());

        let (changes, warnings) = claude(root, &protected, Some(&user)).unwrap();
        let shown = apply(changes.clone(), true, None).unwrap();
        assert!(shown.files.iter().all(|f| f.action.starts_with("would_")), "{shown:?}");
        assert!(root.join(".mcp.json").exists(), "a dry run removes nothing");
        let done = apply(changes, false, None).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!root.join(".mcp.json").exists(), "{done:?}");
        assert!(!root.join(".claude/settings.local.json").exists());
        assert!(!user.join("settings.json").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
            settings
        );
        assert_eq!(
            std::fs::read_to_string(root.join("CLAUDE.md")).unwrap(),
            "# Project\n\nBuild with make.\n"
        );
        let again = apply(claude(root, &protected, Some(&user)).unwrap().0, false, None).unwrap();
        assert!(again.files.iter().all(|f| f.action == "unchanged"), "{again:?}");
    }

    #[test]
    fn a_sandbox_with_the_users_settings_stays_on() {
        let protected = [PathBuf::from("/r/.coord")];
        let mut s = json!({"sandbox": {"enabled": true, "allowUnsandboxedCommands": false, "failIfUnavailable": true,
            "filesystem": {"denyWrite": ["//r/.coord", "//secrets"]}}});
        let warning = without_claude_sandbox(s.as_object_mut().unwrap(), &protected);
        assert!(warning.is_some());
        assert_eq!(s["sandbox"]["filesystem"]["denyWrite"], json!(["//secrets"]));
        let mut s = json!({"sandbox": {"enabled": true, "allowUnsandboxedCommands": false, "failIfUnavailable": true,
            "autoAllowBashIfSandboxed": true, "filesystem": {"denyWrite": ["//r/.coord"]}}, "model": "x"});
        assert_eq!(without_claude_sandbox(s.as_object_mut().unwrap(), &protected), None);
        assert_eq!(s, json!({"model": "x"}));
        // The user's own sandbox (what Claude Code's /sandbox writes): not coord's to take.
        let mine = json!({"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true}});
        let mut s = mine.clone();
        assert_eq!(without_claude_sandbox(s.as_object_mut().unwrap(), &protected), None);
        assert_eq!(s, mine);
    }

    #[test]
    fn codex_removal_keeps_the_users_settings() {
        let mut user: toml_edit::DocumentMut = "model = \"o3\"\n\n[mcp_servers.coord]\ncommand = \"coord\"\nargs = [\"mcp\"]\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[permissions.mine.filesystem.\":workspace_roots\"]\n\".coord\" = \"read\"\nsrc = \"write\"\n"
            .parse()
            .unwrap();
        remove_toml(&mut user, &["mcp_servers", "coord"]);
        without_codex_profile(&mut user);
        assert_eq!(
            user.to_string(),
            "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[permissions.mine.filesystem.\":workspace_roots\"]\nsrc = \"write\"\n"
        );
        let mut project: toml_edit::DocumentMut =
            "default_permissions = \"coord\"\n\n[permissions.coord]\nextends = \":workspace\"\n\n[permissions.coord.filesystem.\":workspace_roots\"]\n\".coord\" = \"read\"\n"
                .parse()
                .unwrap();
        without_codex_profile(&mut project);
        assert_eq!(project.to_string().trim(), "");
    }
}
