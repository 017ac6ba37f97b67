//! The workspaces the file tools (`read_file`, `write_file`) may touch: directories of
//! the repository, each opened once when the coordinator starts (`coord-files` resolves
//! every path beneath their handles with kernel-enforced confinement).

use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_files::{FileError, Workspace};
use std::path::PathBuf;

/// A workspace root: a directory and where it is in the repository (`""` for the
/// repository itself, `docs` for its `docs/` directory). Paths in requests are
/// repository-relative, like lock paths, so a file has one name for its lock and its
/// reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceDir {
    pub dir: PathBuf,
    pub prefix: String,
}

/// The opened workspaces.
#[derive(Debug)]
pub(crate) struct Workspaces {
    list: Vec<(String, Workspace)>,
}

impl Workspaces {
    pub(crate) fn open(dirs: &[WorkspaceDir]) -> CoordResult<Workspaces> {
        if dirs.is_empty() {
            return Err(CoordError::new(
                ErrorCode::ConfinementUnavailable,
                "this coordinator has no workspace, so the file tools are off: start it inside a git repository, \
                 or name the directories agents may touch with --workspace DIR",
            ));
        }
        let list = dirs
            .iter()
            .map(|d| {
                let ws = Workspace::open(&d.dir).map_err(|e| {
                    CoordError::new(
                        ErrorCode::ConfinementUnavailable,
                        format!("workspace {} cannot be opened: {e}", d.dir.display()),
                    )
                })?;
                Ok((d.prefix.trim_matches('/').to_string(), ws))
            })
            .collect::<CoordResult<_>>()?;
        Ok(Workspaces { list })
    }

    /// The workspace holding the (gated) repository path `path` — the one with the
    /// longest prefix of whole components — and the path inside it.
    pub(crate) fn find<'a>(&self, path: &'a str) -> CoordResult<(&Workspace, &'a str)> {
        self.list
            .iter()
            .filter_map(|(prefix, ws)| {
                if prefix.is_empty() {
                    return Some((0, ws, path));
                }
                let rest = path.strip_prefix(prefix.as_str())?.strip_prefix('/')?;
                Some((prefix.len(), ws, rest))
            })
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, ws, rest)| (ws, rest))
            .ok_or_else(|| {
                let roots: Vec<&str> = self.list.iter().map(|(p, _)| p.as_str()).collect();
                CoordError::new(
                    ErrorCode::PathOutsideWorkspace,
                    format!(
                        "{} is outside the workspaces ({}); paths are relative to the repository root, e.g. {}/...",
                        shown(path),
                        roots.join(", "),
                        roots.first().copied().unwrap_or_default()
                    ),
                )
                .with_detail("path", path)
            })
    }
}

/// A path for a message: control characters escaped (a terminal shows the message).
pub(crate) fn shown(path: &str) -> String {
    path.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The refusal a file error is, naming the path (never the content).
pub(crate) fn file_error(e: FileError, path: &str) -> CoordError {
    let code = ErrorCode::parse(e.code()).unwrap_or(ErrorCode::Internal);
    let error = CoordError::new(code, format!("{}: {e}", shown(path))).with_detail("path", path);
    if code == ErrorCode::InvalidPath {
        error.with_field("path")
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_whole_component_prefix_wins() {
        let tmp = std::env::temp_dir();
        let dir = |prefix: &str| WorkspaceDir {
            dir: tmp.clone(),
            prefix: prefix.into(),
        };
        let ws = Workspaces::open(&[dir("docs"), dir("docs/api")]).unwrap();
        let rel = |p: &str| ws.find(p).map(|(_, r)| r.to_string()).map_err(|e| e.code.as_str());
        assert_eq!(rel("docs/a.md"), Ok("a.md".into()));
        assert_eq!(rel("docs/api/b.md"), Ok("b.md".into()));
        assert_eq!(rel("docs2/a.md"), Err("path_outside_workspace"));
        assert_eq!(shown("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\\n");
        assert_eq!(rel("docsa.md"), Err("path_outside_workspace"));
        assert_eq!(rel("src/a.rs"), Err("path_outside_workspace"));
        let all = Workspaces::open(&[dir("")]).unwrap();
        assert_eq!(all.find("src/a.rs").map(|(_, r)| r), Ok("src/a.rs"));
        assert_eq!(
            Workspaces::open(&[]).unwrap_err().code,
            ErrorCode::ConfinementUnavailable
        );
    }
}
