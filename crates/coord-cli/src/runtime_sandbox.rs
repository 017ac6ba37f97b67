//! What `coord init claude|codex` writes into the runtimes' own sandboxes, so that an
//! agent's shell cannot write coord's store, reach its socket or rewrite the settings
//! that install coord's hooks (docs/security.md, "Coordinated state the runtime's sandbox
//! can protect").
//!
//! - **Claude Code**: its sandbox (bubblewrap on Linux) wraps the Bash tool. coord turns
//!   it on in `.claude/settings.local.json` (the checkout's own settings: the paths are
//!   absolute, so they are not for the repository), denies writes to the coordination
//!   space and to the files that configure coord, and refuses the agent's request to run
//!   a command outside the sandbox (`allowUnsandboxedCommands: false`). The sandbox also
//!   refuses Unix sockets, so the coordinator's socket is out of reach.
//! - **Codex**: a permission profile (`default_permissions`, Codex 0.138+) that extends
//!   `:workspace` with `.coord` read-only in every workspace root. Codex ignores profiles
//!   while `sandbox_mode` is set anywhere: then coord says so instead of writing.
//!
//! The runtime's sandbox binds an agent that works around the hooks; it is not the
//! kernel boundary `coord agent run` gives (the same user's other processes are not in
//! it), and the user can turn it off: `--no-runtime-sandbox`, or Codex's `--sandbox` /
//! `--dangerously-bypass-approvals-and-sandbox`.

use crate::setup::Change;
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Codex's permission profile coord writes, when the user has none of their own.
pub const CODEX_PROFILE: &str = "coord";
/// The directory Codex's profile makes read-only in every workspace root.
const CODEX_STORE_DIR: &str = ".coord";

/// The paths Claude Code's sandbox must not let the Bash tool write: the coordination
/// space (store, socket, logs), a store kept elsewhere, and the files that configure coord.
pub fn claude_protected(repo_root: &Path, state_dir: &Path, sqlite: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = vec![
        state_dir.to_path_buf(),
        repo_root.join(".mcp.json"),
        repo_root.join(".claude").join("settings.json"),
        repo_root.join(".claude").join("settings.local.json"),
    ];
    if let Some(db) = sqlite.filter(|db| !db.starts_with(state_dir)) {
        paths.push(db.to_path_buf());
    }
    paths
}

/// Claude Code's spelling of an absolute path in sandbox settings (`//` + the path): a
/// relative or single-slash path means something else there.
fn claude_path(p: &Path) -> String {
    format!("/{}", p.display())
}

/// `settings` (Claude Code settings, as an object) with the sandbox on for Bash and
/// `protected` not writable from it. What the user set is kept, except what would let a
/// command out: `enabled` and `allowUnsandboxedCommands`.
pub fn claude_settings(settings: &mut Map<String, Value>, protected: &[PathBuf]) -> Result<(), String> {
    let sandbox = settings
        .entry("sandbox")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"sandbox\" is not an object")?;
    sandbox.insert("enabled".into(), Value::Bool(true));
    // Without it the agent may ask to run a command outside the sandbox
    // (`dangerouslyDisableSandbox`), which a pre-approved Bash lets through.
    sandbox.insert("allowUnsandboxedCommands".into(), Value::Bool(false));
    // Sandboxed commands run without asking, as before the sandbox: coord's hook still
    // judges each one first.
    sandbox.entry("autoAllowBashIfSandboxed").or_insert(Value::Bool(true));
    let filesystem = sandbox
        .entry("filesystem")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"sandbox.filesystem\" is not an object")?;
    let deny = filesystem
        .entry("denyWrite")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("\"sandbox.filesystem.denyWrite\" is not a list")?;
    for p in protected {
        let spelled = Value::String(claude_path(p));
        if !deny.contains(&spelled) {
            deny.push(spelled);
        }
    }
    Ok(())
}

/// Whether Claude Code settings (the merged project and local ones) keep `protected` out
/// of the Bash tool's reach: `None` when they do, else what is missing.
pub fn claude_gap(layers: &[Value], protected: &[PathBuf]) -> Option<String> {
    // A later layer (local over project) wins for each key.
    let pick = |f: &dyn Fn(&Value) -> Option<bool>| layers.iter().rev().find_map(f);
    if pick(&|s| s["sandbox"]["enabled"].as_bool()) != Some(true) {
        return Some("Claude Code's sandbox is off: an agent's Bash commands can write coord's store".into());
    }
    if pick(&|s| s["sandbox"]["allowUnsandboxedCommands"].as_bool()) != Some(false) {
        return Some("Claude Code lets an agent ask to run a command outside its sandbox".into());
    }
    let denied: Vec<&str> = layers
        .iter()
        .filter_map(|s| s["sandbox"]["filesystem"]["denyWrite"].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let open: Vec<String> = protected
        .iter()
        .filter(|p| !denied.contains(&claude_path(p).as_str()))
        .map(|p| p.display().to_string())
        .collect();
    (!open.is_empty()).then(|| format!("Claude Code's sandbox lets Bash write {}", open.join(", ")))
}

/// The Claude Code side of `coord init claude`: the sandbox in
/// `.claude/settings.local.json`, and that file kept out of git (its paths are this
/// checkout's) through the repository's `info/exclude`.
pub fn claude(repo_root: &Path, protected: &[PathBuf]) -> CoordResult<Vec<Change>> {
    let path = repo_root.join(".claude").join("settings.local.json");
    let before = crate::setup::read_optional(&path)?;
    let mut settings = crate::setup::parse_json_object(&path, before.as_deref())?;
    claude_settings(&mut settings, protected)
        .map_err(|e| CoordError::new(ErrorCode::InvalidJson, format!("{}: {e}", path.display())))?;
    let mut changes = vec![Change {
        path,
        before,
        after: crate::setup::pretty(settings),
        executable: false,
    }];
    changes.extend(exclude_local_settings(repo_root)?);
    Ok(changes)
}

/// `.claude/settings.local.json` added to git's `info/exclude` unless git ignores it already.
fn exclude_local_settings(repo_root: &Path) -> CoordResult<Option<Change>> {
    let ignored = std::process::Command::new("git")
        .args(["check-ignore", "-q", ".claude/settings.local.json"])
        .current_dir(repo_root)
        .status();
    match ignored {
        Ok(s) if s.success() => return Ok(None),
        Ok(s) if s.code() == Some(1) => {}
        // Not a repository (or no git): nothing to keep it out of.
        _ => return Ok(None),
    }
    let Ok(path) = crate::setup::git_path(repo_root, "info/exclude") else {
        return Ok(None);
    };
    let before = crate::setup::read_optional(&path)?;
    let mut after = before.clone().unwrap_or_default();
    if !after.is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    after.push_str("# this checkout's Claude Code settings (coord init claude: absolute paths)\n");
    after.push_str(".claude/settings.local.json\n");
    Ok(Some(Change {
        path,
        before,
        after,
        executable: false,
    }))
}

/// Where a Codex configuration leaves coord's store, as far as its sandbox goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodexSandbox {
    /// Its permission profile (this name) keeps `.coord` read-only.
    Protected(String),
    /// `:read-only`: commands write nothing.
    ReadOnly,
    /// No profile chosen, or `:workspace`: the workspace (and its `.coord`) is writable.
    Workspace,
    /// A profile of the user's that does not mention `.coord`.
    Unprotected(String),
    /// `sandbox_mode` is set: Codex uses it and ignores permission profiles.
    LegacyMode(String),
    /// `:danger-full-access`: no sandbox.
    FullAccess,
    /// A profile name Codex has no definition for (Codex refuses to start).
    Undefined(String),
}

impl CodexSandbox {
    /// What it means for coord, when it is not protected.
    pub fn gap(&self) -> Option<String> {
        match self {
            CodexSandbox::Protected(_) | CodexSandbox::ReadOnly => None,
            CodexSandbox::Workspace => Some("Codex's sandbox lets its shell write .coord (no coord profile)".into()),
            CodexSandbox::Unprotected(p) => Some(format!("Codex's profile `{p}` lets its shell write .coord")),
            CodexSandbox::LegacyMode(m) => Some(format!(
                "sandbox_mode = \"{m}\" is set: Codex ignores permission profiles, so its shell can write \
                 coord's store; remove sandbox_mode to let coord's profile apply"
            )),
            CodexSandbox::FullAccess => Some(
                "default_permissions = \":danger-full-access\": Codex runs commands without a sandbox and they \
                 can write coord's store"
                    .into(),
            ),
            CodexSandbox::Undefined(p) => Some(format!(
                "default_permissions names `{p}`, which is not defined: Codex will not start"
            )),
        }
    }

    /// What to do about it, when something can be done.
    pub fn fix(&self) -> Option<&'static str> {
        match self {
            CodexSandbox::Protected(_) | CodexSandbox::ReadOnly => None,
            CodexSandbox::Workspace | CodexSandbox::Unprotected(_) => Some("`coord init codex --write`"),
            CodexSandbox::LegacyMode(_) => {
                Some("remove sandbox_mode from config.toml, then `coord init codex --write`")
            }
            CodexSandbox::FullAccess | CodexSandbox::Undefined(_) => {
                Some("choose another default_permissions, then `coord init codex --write`")
            }
        }
    }
}

fn profile_protects(doc: &toml_edit::DocumentMut, name: &str) -> bool {
    doc.get("permissions")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("filesystem"))
        .and_then(|f| f.get(":workspace_roots"))
        .and_then(|r| r.get(CODEX_STORE_DIR))
        .and_then(|v| v.as_str())
        .is_some_and(|v| v == "read" || v == "none")
}

/// How a Codex `config.toml` treats coord's store.
pub fn codex_state(doc: &toml_edit::DocumentMut) -> CodexSandbox {
    if let Some(mode) = doc.get("sandbox_mode").and_then(|v| v.as_str()) {
        return CodexSandbox::LegacyMode(mode.to_string());
    }
    match doc.get("default_permissions").and_then(|v| v.as_str()) {
        None | Some(":workspace") => CodexSandbox::Workspace,
        Some(":read-only") => CodexSandbox::ReadOnly,
        Some(":danger-full-access") => CodexSandbox::FullAccess,
        Some(name) if profile_protects(doc, name) => CodexSandbox::Protected(name.to_string()),
        Some(name) if doc.get("permissions").and_then(|p| p.get(name)).is_some() => {
            CodexSandbox::Unprotected(name.to_string())
        }
        Some(name) => CodexSandbox::Undefined(name.to_string()),
    }
}

fn implicit_table<'a>(parent: &'a mut toml_edit::Table, key: &str) -> Option<&'a mut toml_edit::Table> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    item.as_table_mut()
}

/// `.coord` read-only in profile `name`'s workspace roots.
fn protect_profile(doc: &mut toml_edit::DocumentMut, name: &str, extends: Option<&str>) -> Result<(), String> {
    let not_table = |what: &str| format!("{what} is not a table");
    let permissions = implicit_table(doc.as_table_mut(), "permissions").ok_or_else(|| not_table("permissions"))?;
    let profile = implicit_table(permissions, name).ok_or_else(|| not_table(&format!("permissions.{name}")))?;
    profile.set_implicit(false);
    if let Some(parent) = extends {
        profile.entry("extends").or_insert(toml_edit::value(parent));
    }
    let filesystem =
        implicit_table(profile, "filesystem").ok_or_else(|| not_table(&format!("permissions.{name}.filesystem")))?;
    let roots = implicit_table(filesystem, ":workspace_roots")
        .ok_or_else(|| not_table(&format!("permissions.{name}.filesystem.\":workspace_roots\"")))?;
    roots.set_implicit(false);
    roots.insert(CODEX_STORE_DIR, toml_edit::value("read"));
    Ok(())
}

/// The Codex side of `coord init codex`: `doc` changed so that Codex's sandbox keeps
/// `.coord` read-only, or a warning saying why it cannot (nothing changed then).
pub fn codex(doc: &mut toml_edit::DocumentMut) -> CoordResult<Option<String>> {
    let invalid = |e: String| CoordError::new(ErrorCode::InvalidArgument, format!("config.toml: {e}"));
    match codex_state(doc) {
        CodexSandbox::Workspace => {
            protect_profile(doc, CODEX_PROFILE, Some(":workspace")).map_err(invalid)?;
            doc.insert("default_permissions", toml_edit::value(CODEX_PROFILE));
            Ok(None)
        }
        CodexSandbox::Unprotected(name) => {
            protect_profile(doc, &name, None).map_err(invalid)?;
            Ok(None)
        }
        CodexSandbox::Protected(_) | CodexSandbox::ReadOnly => Ok(None),
        other => Ok(other.gap()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codex_after(config: &str) -> (String, Option<String>, CodexSandbox) {
        let mut doc: toml_edit::DocumentMut = config.parse().unwrap();
        let warning = codex(&mut doc).unwrap();
        let text = doc.to_string();
        let state = codex_state(&text.parse().unwrap());
        (text, warning, state)
    }

    #[test]
    fn codex_configurations_and_what_coord_does_with_them() {
        let protected = CodexSandbox::Protected(CODEX_PROFILE.into());
        // (config.toml, warned, state afterwards)
        let cases: &[(&str, bool, CodexSandbox)] = &[
            ("", false, protected.clone()),
            ("model = \"o4\"\n", false, protected.clone()),
            ("default_permissions = \":workspace\"\n", false, protected.clone()),
            ("default_permissions = \":read-only\"\n", false, CodexSandbox::ReadOnly),
            (
                "default_permissions = \"dev\"\n[permissions.dev]\nextends = \":workspace\"\n",
                false,
                CodexSandbox::Protected("dev".into()),
            ),
            (
                "sandbox_mode = \"workspace-write\"\n",
                true,
                CodexSandbox::LegacyMode("workspace-write".into()),
            ),
            (
                "default_permissions = \":danger-full-access\"\n",
                true,
                CodexSandbox::FullAccess,
            ),
            (
                "default_permissions = \"nope\"\n",
                true,
                CodexSandbox::Undefined("nope".into()),
            ),
        ];
        for (config, warned, state) in cases {
            let (text, warning, after) = codex_after(config);
            assert_eq!(warning.is_some(), *warned, "{config:?}: {warning:?}");
            assert_eq!(&after, state, "{config:?} became:\n{text}");
            // Running it again changes nothing.
            let (again, _, _) = codex_after(&text);
            assert_eq!(again, text, "{config:?}");
        }
    }

    #[test]
    fn codex_profile_is_written_as_codex_reads_it() {
        let (text, _, _) = codex_after("model = \"o4\"  # mine\n\n[mcp_servers.other]\ncommand = \"x\"\n");
        assert!(text.contains("model = \"o4\"  # mine"), "{text}");
        assert!(text.contains("default_permissions = \"coord\""), "{text}");
        assert!(text.contains("[permissions.coord]\nextends = \":workspace\""), "{text}");
        assert!(
            text.contains("[permissions.coord.filesystem.\":workspace_roots\"]\n\".coord\" = \"read\""),
            "{text}"
        );
    }

    #[test]
    fn claude_settings_keep_the_users_and_close_the_way_out() {
        let protected = [PathBuf::from("/r/.coord"), PathBuf::from("/r/.mcp.json")];
        let mut s = serde_json::from_value::<Map<String, Value>>(json!({
            "sandbox": {"allowUnsandboxedCommands": true, "autoAllowBashIfSandboxed": false,
                        "filesystem": {"denyWrite": ["//home/me/secrets"]}},
            "model": "x"
        }))
        .unwrap();
        claude_settings(&mut s, &protected).unwrap();
        let v = Value::Object(s.clone());
        assert_eq!(v["sandbox"]["enabled"], true);
        assert_eq!(v["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(v["sandbox"]["autoAllowBashIfSandboxed"], false, "the user's choice");
        assert_eq!(
            v["sandbox"]["filesystem"]["denyWrite"],
            json!(["//home/me/secrets", "//r/.coord", "//r/.mcp.json"])
        );
        assert_eq!(v["model"], "x");
        claude_settings(&mut s, &protected).unwrap();
        assert_eq!(Value::Object(s.clone()), v, "idempotent");
        assert_eq!(claude_gap(std::slice::from_ref(&v), &protected), None);
        let mut opened = v.clone();
        opened["sandbox"]["filesystem"]["denyWrite"] = json!(["//r/.coord"]);
        assert!(claude_gap(&[opened], &protected).unwrap().contains("/r/.mcp.json"));
        let off = json!({"sandbox": {"enabled": false}});
        assert!(
            claude_gap(&[v.clone(), off], &protected).unwrap().contains("off"),
            "local wins"
        );
        let mut bad = serde_json::from_value::<Map<String, Value>>(json!({"sandbox": []})).unwrap();
        assert!(claude_settings(&mut bad, &protected).is_err());
    }

    #[test]
    fn a_store_outside_the_coordination_space_is_protected_too() {
        let root = Path::new("/r");
        let state = Path::new("/r/.coord");
        assert_eq!(
            claude_protected(root, state, Some(Path::new("/r/.coord/coord.db"))).len(),
            4
        );
        let elsewhere = claude_protected(root, state, Some(Path::new("/data/coord.db")));
        assert!(elsewhere.contains(&PathBuf::from("/data/coord.db")));
    }
}
