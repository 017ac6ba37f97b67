//! The lexical gate: what a path must look like before the kernel is asked to resolve
//! it. It refuses rather than repairs — nothing is normalised, decoded or expanded, so
//! the name the audit row records is the name that was opened.

use crate::FileError;

/// Longest path accepted, in bytes (Linux's `PATH_MAX` less the terminating NUL).
pub const MAX_PATH_BYTES: usize = 4095;
/// Longest path component accepted, in bytes (`NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// `path` if it is a workspace-relative file path: not empty, no NUL, not absolute, no
/// trailing `/`, no empty, `.` or `..` component, no control character or backslash,
/// components and the whole within `NAME_MAX` / `PATH_MAX`. `~`, `$` and `%` are
/// ordinary characters.
pub fn gate(path: &str) -> Result<&str, FileError> {
    let outside = |why: &str| FileError::OutsideWorkspace(why.to_string());
    let invalid = |why: &str| FileError::InvalidPath(why.to_string());
    if path.is_empty() {
        return Err(invalid("the path is empty"));
    }
    if path.contains('\0') {
        return Err(invalid("the path contains a NUL character"));
    }
    if path.chars().any(char::is_control) {
        return Err(invalid("the path contains a control character"));
    }
    if path.contains('\\') {
        // Lock paths read a backslash as a separator: a name with one could not be
        // locked under its own name.
        return Err(invalid("backslashes are refused; separate directories with '/'"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid(&format!("the path is longer than {MAX_PATH_BYTES} bytes")));
    }
    if path.starts_with('/') {
        return Err(outside(
            "absolute paths are refused: give the path relative to the workspace root",
        ));
    }
    if path.ends_with('/') {
        return Err(invalid("a trailing '/' names a directory, not a file"));
    }
    for component in path.split('/') {
        match component {
            "" => return Err(invalid("the path has an empty component ('//')")),
            "." => return Err(invalid("the path has a '.' component")),
            ".." => return Err(outside("'..' components are refused")),
            c if c.len() > MAX_NAME_BYTES => {
                return Err(invalid(&format!("a component is longer than {MAX_NAME_BYTES} bytes")));
            }
            _ => {}
        }
    }
    Ok(path)
}

/// The parent directory and the leaf name of a gated path (`None`: the workspace root).
pub fn split(path: &str) -> (Option<&str>, &str) {
    match path.rsplit_once('/') {
        Some((parent, leaf)) => (Some(parent), leaf),
        None => (None, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_by_cases() {
        let long_name = "a".repeat(256);
        let ok_name = "a".repeat(255);
        let long_path = format!("{}/x", "d/".repeat(2100));
        // (input, Ok, or the error code)
        let cases: Vec<(&str, Result<(), &str>)> = vec![
            ("ok.txt", Ok(())),
            ("sub/inner.txt", Ok(())),
            ("café.txt", Ok(())),
            ("..%2foutside%2fsecret.txt", Ok(())),
            ("..\\outside\\secret.txt", Err("invalid_path")),
            ("a\nb", Err("invalid_path")),
            ("~/secret.txt", Ok(())),
            ("$HOME/x", Ok(())),
            ("․․/outside/secret.txt", Ok(())),
            ("...", Ok(())),
            (".hidden", Ok(())),
            ("a..b", Ok(())),
            (&ok_name, Ok(())),
            ("", Err("invalid_path")),
            (".", Err("invalid_path")),
            ("./ok.txt", Err("invalid_path")),
            ("sub/./ok.txt", Err("invalid_path")),
            ("sub//ok.txt", Err("invalid_path")),
            ("ok.txt/", Err("invalid_path")),
            ("newdir/", Err("invalid_path")),
            ("ok.txt\0../../etc/passwd", Err("invalid_path")),
            (&long_name, Err("invalid_path")),
            (&long_path, Err("invalid_path")),
            ("..", Err("path_outside_workspace")),
            ("../outside/secret.txt", Err("path_outside_workspace")),
            ("sub/../ok.txt", Err("path_outside_workspace")),
            ("sub/..", Err("path_outside_workspace")),
            ("/etc/passwd", Err("path_outside_workspace")),
            ("/proc/self/root/etc/passwd", Err("path_outside_workspace")),
            ("//ws-evil/secret.txt", Err("path_outside_workspace")),
        ];
        for (input, want) in cases {
            let got = gate(input).map(|_| ()).map_err(|e| e.code());
            assert_eq!(got, want, "{input:?}");
        }
    }

    #[test]
    fn split_parent_and_leaf() {
        assert_eq!(split("a.txt"), (None, "a.txt"));
        assert_eq!(split("a/b/c.txt"), (Some("a/b"), "c.txt"));
    }
}
