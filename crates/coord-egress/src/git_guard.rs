//! What a sandboxed command must not be able to change because git, run later on the
//! host, reads it as configuration or runs it as code. A git directory is nothing but
//! such things (`config`, `config.worktree`, `commondir`, `info/`, `hooks/`,
//! `objects/info/alternates`, `worktrees/*/`, `modules/*/`), so every git directory and
//! every `.git` file in the workspace stays read-only as a whole; so do the files git's
//! configuration points into the workspace (an included file, a hooks directory, an
//! fsmonitor or a filter program) and the workspace's directories on the host's `PATH`.
//! A configuration that names a path inside the workspace that does not exist yet cannot
//! be protected (bubblewrap can only mount over what exists): the run is refused, saying
//! which setting to fix.
//!
//! The rules over git's configuration are pure functions ([`config_entries`],
//! [`runs_or_reads`], [`named_paths`]), table-tested; [`protect`] does the reading.

use std::path::{Component, Path, PathBuf};

/// How many directory entries the search for nested `.git` entries reads at most, and
/// how deep it goes: a bound on the start-up cost in a huge tree (what lies beyond it is
/// named by the check after the run, [`created_since`]).
pub const WALK_ENTRIES: usize = 200_000;
pub const WALK_DEPTH: usize = 12;

/// Directories the search does not enter: they hold no repositories of the project's own
/// (dependencies and build output), and they are the bulk of a tree.
const NOT_SEARCHED: &[&str] = &["node_modules", "target", ".venv", "venv", "__pycache__", ".coord"];

/// What must stay read-only inside the sandbox, or why it cannot start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitGuard {
    /// Existing paths inside the workspace, to bind read-only (sorted, no duplicates,
    /// none inside another).
    pub read_only: Vec<PathBuf>,
    /// Every `.git` entry found below the workspace (compared after the run).
    pub git_entries: Vec<PathBuf>,
}

/// One entry of `git config --list --show-origin --null`: the file it came from (`None`
/// for the command line or a blob), its key (lower-cased section and name, as git prints
/// it) and its value (`None` for a key without `=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub origin: Option<PathBuf>,
    pub key: String,
    pub value: Option<String>,
}

/// Reads `git config --list --show-origin --null` output: `file:<path>` NUL `key` LF
/// `value` NUL, repeated (a key without a value has no LF).
pub fn config_entries(raw: &[u8]) -> Vec<ConfigEntry> {
    let text = String::from_utf8_lossy(raw);
    let mut fields = text.split('\0');
    let mut out = Vec::new();
    while let (Some(origin), Some(entry)) = (fields.next(), fields.next()) {
        let origin = origin.strip_prefix("file:").map(PathBuf::from);
        let (key, value) = match entry.split_once('\n') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (entry, None),
        };
        if key.is_empty() {
            continue;
        }
        out.push(ConfigEntry {
            origin,
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    out
}

/// Whether git runs the value of `key` as a program or reads it as a path of
/// configuration or code: hooks, fsmonitor, editors and pagers, ssh and askpass
/// programs, included files, diff/merge/filter drivers, credential helpers, signing
/// programs, tools' commands, shell aliases.
pub fn runs_or_reads(key: &str) -> bool {
    const NAMES: &[&str] = &[
        "hookspath",
        "fsmonitor",
        "editor",
        "pager",
        "sshcommand",
        "askpass",
        "gitproxy",
        "attributesfile",
        "path",
        "external",
        "textconv",
        "command",
        "clean",
        "smudge",
        "process",
        "driver",
        "helper",
        "program",
        "cmd",
        "difffilter",
        "packobjectshook",
    ];
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or("");
    let name = key.rsplit('.').next().unwrap_or("");
    matches!(section, "alias" | "pager" | "include" | "includeif") || NAMES.contains(&name)
}

/// The paths a value of such a key may name: its words (quotes taken off, an alias's
/// leading `!` too) that look like paths — they contain a `/` or start with `.` or `~`.
pub fn named_paths(value: &str) -> Vec<String> {
    value
        .split_whitespace()
        .map(|w| w.trim_start_matches('!').trim_matches(['"', '\'']))
        .filter(|w| !w.is_empty() && (w.contains('/') || w.starts_with('.') || w.starts_with('~')))
        .map(String::from)
        .collect()
}

/// `path` with `.` and `..` taken out lexically (no file system: the path may not exist).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where a word of a value of `key` points: an included file relative to the file the
/// setting is in (`origin`), anything else relative to the working tree (`workspace`:
/// hooks and programs run there); `~/` under `home`. Lexical: the path may not exist.
pub fn resolve(key: &str, word: &str, workspace: &Path, origin: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = word.strip_prefix("~/") {
        return home.map(|h| lexical(&h.join(rest)));
    }
    let include = matches!(key.split('.').next(), Some("include" | "includeif"));
    let base = match origin.and_then(Path::parent) {
        Some(dir) if include => dir,
        _ => workspace,
    };
    Some(lexical(&base.join(word)))
}

/// Keeps the shortest paths: one inside another read-only path is covered by it.
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !out.iter().any(|o| p.starts_with(o)) {
            out.push(p);
        }
    }
    out
}

/// The `.git` entries (directories or files) below `root`, `root/.git` included; the
/// search skips dependency and build directories and is bounded by [`WALK_ENTRIES`] and
/// [`WALK_DEPTH`].
pub fn git_entries(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > WALK_ENTRIES {
                return found;
            }
            let name = e.file_name();
            let Ok(kind) = e.file_type() else { continue };
            if name == ".git" {
                found.push(e.path());
            } else if kind.is_dir() && depth < WALK_DEPTH && !NOT_SEARCHED.iter().any(|n| name == *n) {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// `.git` entries in `after` that were not in `before`: repositories a run created,
/// whose configuration git would read when run inside them.
pub fn created_since(before: &[PathBuf], after: &[PathBuf]) -> Vec<PathBuf> {
    after.iter().filter(|p| !before.contains(p)).cloned().collect()
}

/// The git configuration in effect for the repository at `workspace` and for each git
/// directory in it (submodules' under `.git/modules`), as git itself reads it (includes
/// followed), or nothing when git is not installed (then nothing on this host runs it).
fn read_configs(workspace: &Path, git_dirs: &[PathBuf]) -> Vec<ConfigEntry> {
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(workspace)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| config_entries(&o.stdout))
            .unwrap_or_default()
    };
    let list = ["config", "--list", "--show-origin", "--includes", "--null"].map(std::ffi::OsStr::new);
    let mut out = run(&list);
    for dir in git_dirs {
        let config = dir.join("config");
        if config.is_file() {
            let mut args: Vec<&std::ffi::OsStr> = list.to_vec();
            args.extend([std::ffi::OsStr::new("--file"), config.as_os_str()]);
            out.extend(run(&args));
        }
    }
    out
}

/// The git directories under `dir` (a `.git` directory and its submodules' ones).
fn git_dirs(entries: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut stack: Vec<PathBuf> = entries.iter().filter(|p| p.is_dir()).cloned().collect();
    while let Some(dir) = stack.pop() {
        if let Ok(modules) = std::fs::read_dir(dir.join("modules")) {
            stack.extend(modules.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
        dirs.push(dir);
    }
    dirs
}

/// What stays read-only for a sandboxed command in `workspace` (see the module's
/// documentation), or why the sandbox cannot protect it. `path_dirs` are the host's
/// `PATH` entries, `home` the home directory (for `~/` in settings).
pub fn protect(workspace: &Path, path_dirs: &[PathBuf], home: Option<&Path>) -> Result<GitGuard, String> {
    let entries = git_entries(workspace);
    let mut read_only: Vec<PathBuf> = entries.clone();
    for entry in read_configs(workspace, &git_dirs(&entries)) {
        let origin = entry.origin.as_deref().map(|o| lexical(&workspace.join(o)));
        if let Some(o) = &origin
            && o.starts_with(workspace)
        {
            read_only.push(o.clone());
        }
        let Some(value) = entry.value.as_deref().filter(|_| runs_or_reads(&entry.key)) else {
            continue;
        };
        for word in named_paths(value) {
            let Some(p) = resolve(&entry.key, &word, workspace, origin.as_deref(), home) else {
                continue;
            };
            if !p.starts_with(workspace) || p == workspace {
                continue;
            }
            if p.exists() {
                read_only.push(p);
                continue;
            }
            return Err(format!(
                "git's setting {} names {}, inside the workspace, which does not exist: a sandboxed command \
                 could create it and git would then read or run it on this host. Create it, or change the \
                 setting{}",
                entry.key,
                p.display(),
                origin
                    .as_ref()
                    .map(|o| format!(" (in {})", o.display()))
                    .unwrap_or_default()
            ));
        }
    }
    read_only.extend(
        path_dirs
            .iter()
            .map(|d| lexical(d))
            .filter(|d| d.starts_with(workspace) && d != workspace && d.exists()),
    );
    Ok(GitGuard {
        read_only: outermost(read_only),
        git_entries: entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_listing_is_read_entry_by_entry() {
        let raw = b"file:.git/config\0core.fsmonitor\n.tools/mon.sh\0file:/home/u/.gitconfig\0user.name\nU N\0\
                    command line:\0core.bare\0";
        let got = config_entries(raw);
        assert_eq!(
            got,
            [
                ConfigEntry {
                    origin: Some(".git/config".into()),
                    key: "core.fsmonitor".into(),
                    value: Some(".tools/mon.sh".into())
                },
                ConfigEntry {
                    origin: Some("/home/u/.gitconfig".into()),
                    key: "user.name".into(),
                    value: Some("U N".into())
                },
                ConfigEntry {
                    origin: None,
                    key: "core.bare".into(),
                    value: None
                },
            ]
        );
        assert!(config_entries(b"").is_empty());
    }

    #[test]
    fn settings_that_run_or_read() {
        let cases = [
            ("core.hookspath", true),
            ("core.fsmonitor", true),
            ("core.editor", true),
            ("core.sshcommand", true),
            ("include.path", true),
            ("includeif.gitdir:~/w/.path", true),
            ("diff.lfs.textconv", true),
            ("filter.lfs.process", true),
            ("merge.ours.driver", true),
            ("credential.helper", true),
            ("credential.https://x.helper", true),
            ("gpg.ssh.program", true),
            ("alias.sync", true),
            ("pager.log", true),
            ("user.name", false),
            ("remote.origin.url", false),
            ("branch.main.merge", false),
            ("core.bare", false),
        ];
        for (key, want) in cases {
            assert_eq!(runs_or_reads(key), want, "{key}");
        }
    }

    #[test]
    fn path_like_words_of_a_value() {
        let cases: [(&str, &[&str]); 6] = [
            (".tools/mon.sh", &[".tools/mon.sh"]),
            ("!sh ./scripts/x.sh --fast", &["./scripts/x.sh"]),
            ("\"/opt/bin/helper\" get", &["/opt/bin/helper"]),
            ("cache --timeout=3600", &[]),
            ("vim", &[]),
            ("~/bin/mon", &["~/bin/mon"]),
        ];
        for (value, want) in cases {
            assert_eq!(named_paths(value), want, "{value}");
        }
    }

    #[test]
    fn words_resolve_against_the_tree_or_the_including_file() {
        let w = Path::new("/w");
        let cfg = Some(Path::new("/w/.git/config"));
        let cases: [(&str, &str, Option<&str>); 6] = [
            ("core.fsmonitor", "./a/../b", Some("/w/b")),
            ("core.hookspath", ".husky", Some("/w/.husky")),
            ("include.path", "../inc.cfg", Some("/w/inc.cfg")),
            ("includeif.onbranch:main.path", "inc.cfg", Some("/w/.git/inc.cfg")),
            ("diff.x.textconv", "/etc/x", Some("/etc/x")),
            ("core.editor", "~/x", None),
        ];
        for (key, word, want) in cases {
            assert_eq!(
                resolve(key, word, w, cfg, None),
                want.map(PathBuf::from),
                "{key} {word}"
            );
        }
        assert_eq!(
            resolve("core.editor", "~/x", w, cfg, Some(Path::new("/h"))),
            Some("/h/x".into())
        );
        assert_eq!(lexical(Path::new("/w/../../etc")), PathBuf::from("/etc"));
    }

    #[test]
    fn inner_paths_are_covered_by_outer_ones() {
        let got = outermost(vec![
            "/w/.git/hooks".into(),
            "/w/.git".into(),
            "/w/b".into(),
            "/w/.git".into(),
        ]);
        assert_eq!(got, [PathBuf::from("/w/.git"), PathBuf::from("/w/b")]);
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_repository_and_what_its_configuration_points_at() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        git(w, &["init", "-q", "."]);
        for d in ["tools", "vendor/lib", "node_modules/x", "bin"] {
            std::fs::create_dir_all(w.join(d)).unwrap();
        }
        std::fs::write(w.join("tools/mon.sh"), "").unwrap();
        std::fs::write(w.join("shared.gitconfig"), "[diff \"x\"]\n\ttextconv = tools/conv\n").unwrap();
        std::fs::write(w.join("tools/conv"), "").unwrap();
        std::fs::create_dir_all(w.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(w.join("node_modules/x/.git")).unwrap();
        git(w, &["config", "core.fsmonitor", "tools/mon.sh"]);
        git(w, &["config", "include.path", "../shared.gitconfig"]);
        let guard = protect(w, &[w.join("bin"), "/usr/bin".into()], None).unwrap();
        let rel: Vec<_> = guard
            .read_only
            .iter()
            .map(|p| p.strip_prefix(w).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            rel,
            [
                ".git",
                "bin",
                "shared.gitconfig",
                "tools/conv",
                "tools/mon.sh",
                "vendor/lib/.git"
            ]
        );
        // A setting naming a missing path inside the workspace cannot be protected.
        git(w, &["config", "core.hooksPath", ".husky"]);
        let e = protect(w, &[], None).unwrap_err();
        assert!(e.contains("core.hookspath") && e.contains(".husky"), "{e}");
        std::fs::create_dir(w.join(".husky")).unwrap();
        assert!(protect(w, &[], None).unwrap().read_only.contains(&w.join(".husky")));
        assert_eq!(
            created_since(&guard.git_entries, &git_entries(w)),
            Vec::<PathBuf>::new()
        );
        std::fs::create_dir_all(w.join("src/.git")).unwrap();
        assert_eq!(created_since(&guard.git_entries, &git_entries(w)), [w.join("src/.git")]);
    }
}
