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
//! - **Codex**: a permission profile (`default_permissions`, Codex 0.138+) in the
//!   project's `.codex/config.toml` that extends `:workspace` with `.coord` read-only
//!   (a profile of the user's gets the rule instead). Codex ignores profiles while
//!   `sandbox_mode` is set: then coord says so instead of writing.
//!
//! The runtime's sandbox binds an agent that works around the hooks; it is not the
//! kernel boundary `coord agent run` gives (the same user's other processes are not in
//! it), and the user can turn it off: `--no-runtime-sandbox`, or Codex's `--sandbox` /
//! `--dangerously-bypass-approvals-and-sandbox`.

use crate::config_file::Change;
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
    // Directories rather than files where they can be: a file's parent could be renamed
    // away and replaced; a denied directory is a mount point, which cannot.
    let mut paths = vec![
        state_dir.to_path_buf(),
        repo_root.join(".mcp.json"),
        repo_root.join(".claude"),
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
    // Without bubblewrap or socat, Claude Code would otherwise run Bash unsandboxed,
    // saying so only in passing.
    sandbox.insert("failIfUnavailable".into(), Value::Bool(true));
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

/// Whether Claude Code settings (the user's, the project's and the local ones, in that
/// order) keep `protected` out of the Bash tool's reach: `None` when they do, else what
/// is missing.
pub fn claude_gap(layers: &[Value], protected: &[PathBuf]) -> Option<String> {
    // A later layer (local over project over user) wins for each key; lists add up.
    let pick = |f: &dyn Fn(&Value) -> Option<bool>| layers.iter().rev().find_map(f);
    let listed = |f: &dyn Fn(&Value) -> Option<&Vec<Value>>| -> Vec<String> {
        layers
            .iter()
            .filter_map(f)
            .flatten()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    };
    if pick(&|s| s["sandbox"]["enabled"].as_bool()) != Some(true) {
        return Some("Claude Code's sandbox is off: an agent's Bash commands can write coord's store".into());
    }
    if pick(&|s| s["sandbox"]["allowUnsandboxedCommands"].as_bool()) != Some(false) {
        return Some("Claude Code lets an agent ask to run a command outside its sandbox".into());
    }
    if pick(&|s| s["sandbox"]["failIfUnavailable"].as_bool()) != Some(true) {
        return Some(
            "Claude Code runs Bash unsandboxed when bubblewrap or socat is missing (failIfUnavailable)".into(),
        );
    }
    let excluded = listed(&|s| s["sandbox"]["excludedCommands"].as_array());
    if !excluded.is_empty() {
        return Some(format!(
            "Claude Code runs {} outside its sandbox (excludedCommands): through them Bash can write coord's store",
            excluded.join(", ")
        ));
    }
    let sockets = listed(&|s| s["sandbox"]["network"]["allowUnixSockets"].as_array());
    if pick(&|s| s["sandbox"]["network"]["allowAllUnixSockets"].as_bool()) == Some(true) || !sockets.is_empty() {
        return Some("Claude Code's sandbox lets Bash open Unix sockets: coord's coordinator is reachable".into());
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
    let before = crate::config_file::read_optional(&path)?;
    let mut settings = crate::config_file::parse_json_object(&path, before.as_deref())?;
    claude_settings(&mut settings, protected)
        .map_err(|e| CoordError::new(ErrorCode::InvalidJson, format!("{}: {e}", path.display())))?;
    let mut changes = vec![Change {
        path,
        before,
        after: crate::config_file::pretty(settings),
        executable: false,
        delete: false,
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
    let Ok(path) = crate::config_file::git_path(repo_root, "info/exclude") else {
        return Ok(None);
    };
    let before = crate::config_file::read_optional(&path)?;
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
        delete: false,
    }))
}

/// Where Codex's configuration leaves coord's store, as far as its sandbox goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodexSandbox {
    /// Its permission profile (this name) keeps `.coord` read-only.
    Protected(String),
    /// `:read-only`: commands write nothing.
    ReadOnly,
    /// No profile chosen (Codex decides by the project's trust: a trusted one's commands
    /// may write the workspace, `.coord` included), or `:workspace`.
    Workspace,
    /// A profile of the user's that does not keep `.coord` from being written.
    Unprotected(String),
    /// `sandbox_mode` is set (at the top of a layer, or in the selected `[profiles.X]`):
    /// Codex uses it and ignores permission profiles.
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
                Some("remove sandbox_mode from Codex's configuration, then `coord init codex --write`")
            }
            CodexSandbox::FullAccess | CodexSandbox::Undefined(_) => {
                Some("choose another default_permissions, then `coord init codex --write`")
            }
        }
    }
}

/// Codex's configuration layers that decide its sandbox here: the user's
/// (`$CODEX_HOME/config.toml`) and the project's (`.codex/config.toml`, which Codex
/// loads in a project the user trusts and which wins where both say something).
pub struct CodexLayers<'a> {
    pub user: &'a toml_edit::DocumentMut,
    pub project: &'a toml_edit::DocumentMut,
}

/// A key's value as a string, in either a table or an inline table.
fn str_at<'a>(item: Option<&'a toml_edit::Item>, key: &str) -> Option<&'a str> {
    item?.as_table_like()?.get(key)?.as_str()
}

/// How `.coord` is treated by a profile's filesystem rules: kept (`read`, `none`,
/// `deny`), open (`write`), or not mentioned.
fn store_rule(profile: &toml_edit::Item) -> Option<&str> {
    let filesystem = profile.as_table_like()?.get("filesystem")?;
    let roots = filesystem.as_table_like()?.get(":workspace_roots")?;
    roots.as_table_like()?.get(CODEX_STORE_DIR)?.as_str()
}

fn kept(rule: Option<&str>) -> bool {
    matches!(rule, Some("read" | "none" | "deny"))
}

impl CodexLayers<'_> {
    fn layers(&self) -> [&toml_edit::DocumentMut; 2] {
        [self.project, self.user]
    }

    /// The definition of profile `name`, the project's first.
    fn profile(&self, name: &str) -> Option<(&toml_edit::Item, bool)> {
        self.layers().into_iter().enumerate().find_map(|(i, doc)| {
            let table = doc.get("permissions")?.as_table_like()?;
            table.get(name).map(|p| (p, i == 0))
        })
    }

    fn legacy_mode(&self) -> Option<String> {
        let selected = str_at(Some(self.user.as_item()), "profile");
        self.layers().into_iter().find_map(|doc| {
            let top = doc.get("sandbox_mode").and_then(|v| v.as_str());
            let in_profile = selected.and_then(|p| {
                let profiles = doc.get("profiles")?.as_table_like()?;
                str_at(profiles.get(p), "sandbox_mode")
            });
            top.or(in_profile).map(str::to_string)
        })
    }

    /// How these layers treat coord's store.
    pub fn state(&self) -> CodexSandbox {
        if let Some(mode) = self.legacy_mode() {
            return CodexSandbox::LegacyMode(mode);
        }
        let chosen = self
            .layers()
            .into_iter()
            .find_map(|doc| doc.get("default_permissions").and_then(|v| v.as_str()));
        match chosen {
            None | Some(":workspace") => CodexSandbox::Workspace,
            Some(":read-only") => CodexSandbox::ReadOnly,
            Some(":danger-full-access") => CodexSandbox::FullAccess,
            Some(name) => match self.profile(name) {
                Some((p, _)) if kept(store_rule(p)) => CodexSandbox::Protected(name.to_string()),
                Some(_) => CodexSandbox::Unprotected(name.to_string()),
                None => CodexSandbox::Undefined(name.to_string()),
            },
        }
    }
}

/// The table at `key` in `parent`, made if missing; an inline table (`x = { … }`, as
/// Codex's own documentation writes profiles) is turned into a table first, keeping its
/// entries.
fn table_at<'a>(parent: &'a mut toml_edit::Table, key: &str) -> Option<&'a mut toml_edit::Table> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    if let Some(inline) = item.as_inline_table() {
        *item = toml_edit::Item::Table(inline.clone().into_table());
    }
    item.as_table_mut()
}

/// `.coord` read-only in profile `name`'s workspace roots, in `doc`; a stricter rule of
/// the user's (`none`, `deny`) is left as it is.
fn protect_profile(doc: &mut toml_edit::DocumentMut, name: &str, extends: Option<&str>) -> Result<(), String> {
    let not_table = |what: &str| format!("{what} is not a table");
    let permissions = table_at(doc.as_table_mut(), "permissions").ok_or_else(|| not_table("permissions"))?;
    let profile = table_at(permissions, name).ok_or_else(|| not_table(&format!("permissions.{name}")))?;
    profile.set_implicit(false);
    if let Some(parent) = extends {
        profile.entry("extends").or_insert(toml_edit::value(parent));
    }
    let filesystem =
        table_at(profile, "filesystem").ok_or_else(|| not_table(&format!("permissions.{name}.filesystem")))?;
    let roots = table_at(filesystem, ":workspace_roots")
        .ok_or_else(|| not_table(&format!("permissions.{name}.filesystem.\":workspace_roots\"")))?;
    roots.set_implicit(false);
    if !kept(roots.get(CODEX_STORE_DIR).and_then(|v| v.as_str())) {
        roots.insert(CODEX_STORE_DIR, toml_edit::value("read"));
    }
    Ok(())
}

/// The Codex side of `coord init codex --write`: the layers changed so that Codex's
/// sandbox keeps `.coord` read-only in this repository, or a warning saying why it cannot
/// (nothing changed then). Without a profile, coord's goes in the **project's** layer:
/// scoped to this repository, and loaded only once the user trusts it — never widening
/// what Codex may do elsewhere.
pub fn codex(user: &mut toml_edit::DocumentMut, project: &mut toml_edit::DocumentMut) -> CoordResult<Option<String>> {
    let invalid = |e: String| CoordError::new(ErrorCode::InvalidArgument, format!("Codex config.toml: {e}"));
    let state = CodexLayers {
        user: &*user,
        project: &*project,
    }
    .state();
    match state {
        CodexSandbox::Workspace => {
            protect_profile(project, CODEX_PROFILE, Some(":workspace")).map_err(invalid)?;
            project.insert("default_permissions", toml_edit::value(CODEX_PROFILE));
            Ok(None)
        }
        CodexSandbox::Unprotected(name) => {
            let in_project = CodexLayers {
                user: &*user,
                project: &*project,
            }
            .profile(&name)
            .is_some_and(|(_, p)| p);
            let doc = if in_project { project } else { user };
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

    /// (user config, project config) after `coord init codex`, its warning, the state.
    fn codex_after(user: &str, project: &str) -> (String, String, Option<String>, CodexSandbox) {
        let mut u: toml_edit::DocumentMut = user.parse().unwrap();
        let mut p: toml_edit::DocumentMut = project.parse().unwrap();
        let warning = codex(&mut u, &mut p).unwrap();
        let (user, project) = (u.to_string(), p.to_string());
        let (u, p) = (user.parse().unwrap(), project.parse().unwrap());
        let state = CodexLayers { user: &u, project: &p }.state();
        (user, project, warning, state)
    }

    #[test]
    fn codex_configurations_and_what_coord_does_with_them() {
        let protected = CodexSandbox::Protected(CODEX_PROFILE.into());
        let dev = CodexSandbox::Protected("dev".into());
        // (user config.toml, project .codex/config.toml, warned, state afterwards)
        let cases: &[(&str, &str, bool, CodexSandbox)] = &[
            ("", "", false, protected.clone()),
            ("model = \"o4\"\n", "", false, protected.clone()),
            ("default_permissions = \":workspace\"\n", "", false, protected.clone()),
            (
                "default_permissions = \":read-only\"\n",
                "",
                false,
                CodexSandbox::ReadOnly,
            ),
            (
                "default_permissions = \"dev\"\n[permissions.dev]\nextends = \":workspace\"\n",
                "",
                false,
                dev.clone(),
            ),
            // Codex's documentation writes the roots as an inline table.
            (
                "default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\":workspace_roots\" = { \".\" = \"write\" }\n",
                "",
                false,
                dev.clone(),
            ),
            (
                "",
                "default_permissions = \"dev\"\n[permissions.dev]\nextends = \":workspace\"\n",
                false,
                dev.clone(),
            ),
            (
                "sandbox_mode = \"workspace-write\"\n",
                "",
                true,
                CodexSandbox::LegacyMode("workspace-write".into()),
            ),
            (
                "",
                "sandbox_mode = \"read-only\"\n",
                true,
                CodexSandbox::LegacyMode("read-only".into()),
            ),
            (
                "profile = \"fast\"\n[profiles.fast]\nsandbox_mode = \"danger-full-access\"\n",
                "",
                true,
                CodexSandbox::LegacyMode("danger-full-access".into()),
            ),
            (
                "default_permissions = \":danger-full-access\"\n",
                "",
                true,
                CodexSandbox::FullAccess,
            ),
            (
                "default_permissions = \"nope\"\n",
                "",
                true,
                CodexSandbox::Undefined("nope".into()),
            ),
        ];
        for (user, project, warned, state) in cases {
            let (u, p, warning, after) = codex_after(user, project);
            assert_eq!(warning.is_some(), *warned, "{user:?} / {project:?}: {warning:?}");
            assert_eq!(&after, state, "{user:?} / {project:?} became:\n{u}\n---\n{p}");
            // Running it again changes nothing.
            let (again_u, again_p, _, _) = codex_after(&u, &p);
            assert_eq!((again_u, again_p), (u, p), "{user:?} / {project:?}");
        }
    }

    #[test]
    fn codex_profile_goes_to_the_project_as_codex_reads_it() {
        let user = "model = \"o4\"  # mine\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let (u, p, _, _) = codex_after(user, "");
        assert_eq!(
            u, user,
            "the user's configuration is left alone: nothing widens elsewhere"
        );
        assert!(p.contains("default_permissions = \"coord\""), "{p}");
        assert!(p.contains("[permissions.coord]\nextends = \":workspace\""), "{p}");
        assert!(
            p.contains("[permissions.coord.filesystem.\":workspace_roots\"]\n\".coord\" = \"read\""),
            "{p}"
        );
        // A stricter rule of the user's stays.
        let strict =
            "default_permissions = \"dev\"\n[permissions.dev.filesystem.\":workspace_roots\"]\n\".coord\" = \"deny\"\n";
        let (u, _, _, state) = codex_after(strict, "");
        assert_eq!(u, strict);
        assert_eq!(state, CodexSandbox::Protected("dev".into()));
        // A profile of the user's that opens .coord is closed where it is defined.
        let open = "default_permissions = \"dev\"\n[permissions.dev.filesystem.\":workspace_roots\"]\n\".coord\" = \"write\"\n";
        let (u, p, _, _) = codex_after(open, "");
        assert!(u.contains("\".coord\" = \"read\""), "{u}");
        assert_eq!(p, "");
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
        let user = json!({"sandbox": {"excludedCommands": ["docker"]}});
        assert!(
            claude_gap(&[user, v.clone()], &protected).unwrap().contains("docker"),
            "lists add up"
        );
        let sockets = json!({"sandbox": {"network": {"allowAllUnixSockets": true}}});
        assert!(
            claude_gap(&[v.clone(), sockets], &protected)
                .unwrap()
                .contains("Unix sockets")
        );
        assert_eq!(v["sandbox"]["failIfUnavailable"], true);
        let mut bad = serde_json::from_value::<Map<String, Value>>(json!({"sandbox": []})).unwrap();
        assert!(claude_settings(&mut bad, &protected).is_err());
    }

    #[test]
    fn a_store_outside_the_coordination_space_is_protected_too() {
        let root = Path::new("/r");
        let state = Path::new("/r/.coord");
        assert_eq!(
            claude_protected(root, state, Some(Path::new("/r/.coord/coord.db"))).len(),
            3
        );
        let elsewhere = claude_protected(root, state, Some(Path::new("/data/coord.db")));
        assert!(elsewhere.contains(&PathBuf::from("/data/coord.db")));
    }
}
