//! The files `coord init` writes: read (absent is fine), merged as JSON objects, and
//! applied — or, in a dry run, shown as a diff — with what happened to each.

use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One file a setup wants to write (or, for `--remove`, to delete).
#[derive(Debug, Clone)]
pub struct Change {
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: String,
    pub executable: bool,
    /// Nothing is left in the file once coord's part is out: delete it (`after` is empty).
    pub delete: bool,
}

#[derive(Debug, Serialize)]
pub struct FileOutcome {
    pub path: String,
    /// `created`, `updated`, `removed` or `unchanged` (`would_create`, `would_update`,
    /// `would_remove` in a dry run).
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SetupResult {
    pub success: bool,
    pub files: Vec<FileOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// What the setup could not do, and why (also said on stderr).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What it chose not to write, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Change {
    /// A file coord writes whole or merges into.
    pub fn write(path: PathBuf, before: Option<String>, after: String) -> Change {
        Change {
            path,
            before,
            after,
            executable: false,
            delete: false,
        }
    }

    /// `before` with coord's part taken out: `after`, or the file deleted when nothing
    /// else was in it.
    pub fn removal(path: PathBuf, before: Option<String>, after: Option<String>) -> Change {
        Change {
            path,
            before,
            delete: after.is_none(),
            after: after.unwrap_or_default(),
            executable: false,
        }
    }

    fn changed(&self) -> bool {
        match self.delete {
            true => self.before.is_some(),
            false => self.before.as_deref() != Some(self.after.as_str()),
        }
    }

    pub fn diff(&self) -> String {
        let old = self.before.as_deref().unwrap_or("");
        let name = self.path.display().to_string();
        similar::TextDiff::from_lines(old, &self.after)
            .unified_diff()
            .header(
                if self.before.is_some() { &name } else { "/dev/null" },
                if self.delete { "/dev/null" } else { &name },
            )
            .to_string()
    }
}

fn io_error(path: &Path, e: std::io::Error) -> CoordError {
    CoordError::new(
        ErrorCode::InvalidArgument,
        format!("cannot use {}: {e}", path.display()),
    )
}

pub fn read_optional(path: &Path) -> CoordResult<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Applies (or, in a dry run, describes) the changes.
pub fn apply(changes: Vec<Change>, dry_run: bool, snippet: Option<String>) -> CoordResult<SetupResult> {
    let mut files = Vec::new();
    for c in changes {
        let action = match (c.before.is_some(), c.changed(), dry_run) {
            (_, false, _) => "unchanged",
            (_, true, true) if c.delete => "would_remove",
            (_, true, false) if c.delete => "removed",
            (false, true, true) => "would_create",
            (true, true, true) => "would_update",
            (false, true, false) => "created",
            (true, true, false) => "updated",
        };
        if c.changed() && !dry_run && c.delete {
            std::fs::remove_file(&c.path).map_err(|e| io_error(&c.path, e))?;
            // The directories coord creates for the runtimes' settings go too when they
            // are left empty (remove_dir refuses a directory that is not).
            if let Some(dir) = c
                .path
                .parent()
                .filter(|d| d.ends_with(".codex") || d.ends_with(".claude"))
            {
                let _ = std::fs::remove_dir(dir);
            }
        } else if c.changed() && !dry_run {
            if let Some(dir) = c.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
            }
            std::fs::write(&c.path, &c.after).map_err(|e| io_error(&c.path, e))?;
            if c.executable {
                make_executable(&c.path)?;
            }
        }
        files.push(FileOutcome {
            path: c.path.display().to_string(),
            action: action.into(),
            diff: (dry_run && c.changed()).then(|| c.diff()),
        });
    }
    Ok(SetupResult {
        success: true,
        files,
        snippet,
        warnings: Vec::new(),
        notes: Vec::new(),
    })
}

#[cfg(unix)]
fn make_executable(path: &Path) -> CoordResult<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|e| io_error(path, e))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> CoordResult<()> {
    Ok(())
}

pub fn parse_json_object(path: &Path, text: Option<&str>) -> CoordResult<Map<String, Value>> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Map::new()),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(CoordError::new(
                ErrorCode::InvalidJson,
                format!("{} is not a JSON object; fix it by hand first", path.display()),
            )),
            Err(e) => Err(CoordError::new(
                ErrorCode::InvalidJson,
                format!("{} is not valid JSON ({e}); fix it by hand first", path.display()),
            )),
        },
    }
}

pub fn pretty(map: Map<String, Value>) -> String {
    let mut s = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    s.push('\n');
    s
}

/// Where git keeps `what` (`hooks`, `info/exclude`) for the checkout at `repo_root`.
pub fn git_path(repo_root: &Path, what: &str) -> CoordResult<PathBuf> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--git-path", what])
        .current_dir(repo_root)
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            Ok(if p.is_absolute() { p } else { repo_root.join(p) })
        }
        _ if repo_root.join(".git").is_dir() => Ok(repo_root.join(".git").join(what)),
        _ => Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!("{} is not a git repository", repo_root.display()),
        )),
    }
}
