//! Lock paths. Two agents must agree that `./src//main.rs`, `src/main.rs` and
//! `/repo/src/main.rs` are one file, so every path is reduced to one canonical,
//! repo-relative form before it reaches a store. The reduction is lexical (no file
//! system access): the file may not exist yet, and the coordinator may run on another
//! host than the agent.

use crate::error::{CoordError, CoordResult, ErrorCode};

pub const MAX_PATH_LEN: usize = 4096;

/// Canonical repo-relative form of `input`.
///
/// `repo_root` is the absolute root of the repository as seen by the caller; absolute
/// inputs inside it are made relative, absolute inputs outside it are refused. Without a
/// root, absolute inputs are refused. `..` may move within the repository but never above
/// its root.
pub fn normalize_path(input: &str, repo_root: Option<&str>) -> CoordResult<String> {
    let bad = |why: &str| {
        CoordError::field(
            ErrorCode::InvalidPath,
            "file_path",
            format!("invalid path {:?}: {why}", truncate(input, 200)),
        )
    };
    if input.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    if input.len() > MAX_PATH_LEN {
        return Err(bad(&format!("it is longer than {MAX_PATH_LEN} bytes")));
    }
    if input.chars().any(|c| c.is_control()) {
        return Err(bad("it contains control characters"));
    }
    let unified = input.replace('\\', "/");
    let relative: String = if is_absolute(&unified) {
        let Some(root) = repo_root else {
            return Err(bad(
                "absolute paths need a known repository root; give a repo-relative path",
            ));
        };
        let root_unified = root.replace('\\', "/");
        let root =
            lexical_components(&root_unified).ok_or_else(|| bad("the repository root is not a clean absolute path"))?;
        let full = lexical_components(&unified).ok_or_else(|| bad("it climbs above the file system root"))?;
        if full.len() <= root.len() || full[..root.len()] != root[..] {
            return Err(bad("it is outside the repository"));
        }
        full[root.len()..].join("/")
    } else {
        unified
    };
    let parts = lexical_components(&relative).ok_or_else(|| bad("it escapes the repository with '..'"))?;
    if parts.is_empty() {
        return Err(bad("it names the repository root, not a file"));
    }
    Ok(parts.join("/"))
}

/// `input` (absolute, inside `repo_root`) made repo-relative, keeping a trailing `/` —
/// it makes the path a directory lock. What the remote client and the CLI send.
pub fn relative_keeping_dir(input: &str, repo_root: &str) -> CoordResult<String> {
    let dir = if input.ends_with(['/', '\\']) { "/" } else { "" };
    Ok(format!("{}{dir}", normalize_path(input, Some(repo_root))?))
}

fn is_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with('/') || (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/')
}

/// Splits on `/`, drops empty and `.` parts, resolves `..`; `None` when `..` climbs
/// above the start. A Windows drive prefix (`C:`) is kept as an ordinary first part.
fn lexical_components(p: &str) -> Option<Vec<&str>> {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            other => out.push(other),
        }
    }
    Some(out)
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normalisation_table() {
        let root = Some("/work/repo");
        let cases: &[(&str, Option<&str>, Option<&str>)] = &[
            ("src/main.rs", None, Some("src/main.rs")),
            ("./src//main.rs", None, Some("src/main.rs")),
            ("src/./lib/../main.rs", None, Some("src/main.rs")),
            ("src\\win\\file.rs", None, Some("src/win/file.rs")),
            ("src/main.rs/", None, Some("src/main.rs")),
            ("/work/repo/src/main.rs", root, Some("src/main.rs")),
            ("/work/repo/../repo/a.rs", root, Some("a.rs")),
            ("/work/repo2/a.rs", root, None),
            ("/etc/passwd", root, None),
            ("/etc/passwd", None, None),
            ("/work/repo", root, None),
            ("../outside.rs", None, None),
            ("src/../../outside.rs", None, None),
            ("a/b/../../..", None, None),
            (".", None, None),
            ("", None, None),
            ("   ", None, None),
            ("bad\0name", None, None),
            ("C:/Users/x.rs", None, None),
            ("C:\\repo\\a.rs", Some("C:/repo"), Some("a.rs")),
            ("ünïcode/файл.rs", None, Some("ünïcode/файл.rs")),
            ("name with spaces.txt", None, Some("name with spaces.txt")),
        ];
        for (input, root, want) in cases {
            let got = normalize_path(input, *root);
            match (got, want) {
                (Ok(p), Some(w)) => assert_eq!(p, *w, "input {input:?}"),
                (Err(e), None) => {
                    assert_eq!(e.code, ErrorCode::InvalidPath, "input {input:?}");
                    assert_eq!(e.field.as_deref(), Some("file_path"));
                }
                (got, want) => panic!("input {input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn overlong_paths_are_refused() {
        let long = "a/".repeat(MAX_PATH_LEN);
        assert!(normalize_path(&long, None).is_err());
    }

    proptest! {
        #[test]
        fn normalisation_is_idempotent_and_never_escapes(s in "[a-z./\\\\]{0,40}") {
            if let Ok(p) = normalize_path(&s, None) {
                prop_assert_eq!(normalize_path(&p, None).unwrap(), p.clone());
                prop_assert!(!p.starts_with('/'));
                prop_assert!(p.split('/').all(|c| !c.is_empty() && c != "." && c != ".."));
            }
        }
    }
}
