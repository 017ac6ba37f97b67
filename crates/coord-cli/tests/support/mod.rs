//! Helpers shared by the `coord` binary's test files (each test file is its own crate, so
//! each uses only some of these).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_coord");

/// Whether this run is CI, where no suite may skip.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false")
}

/// A test tool from `.ci/venv` (or the path in `override_var`) that passes `probe`, or
/// `None` after saying loudly that the tests needing it skip. Under CI a missing tool
/// fails the test instead.
pub fn venv_tool(override_var: &str, venv_path: &str, probe: &[&str], what: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os(override_var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.ci/venv")
            .join(venv_path)
    });
    let works = Command::new(&candidate)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(candidate);
    }
    assert!(
        !under_ci(),
        "{what} is required under CI but {} does not work",
        candidate.display()
    );
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPING the {what} tests: {} does not work. Run .ci/run once, or set {override_var}.\n",
        candidate.display()
    );
    None
}

/// The address `coord serve --port 0` prints on its first line of stdout (the command
/// must have been spawned with stdout piped).
pub fn served_address(server: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .expect("read the server's first line");
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string()
}

/// Runs `git args` in `dir` as a fixed author; panics when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = git_command(dir, args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// `git args` in `dir` as a fixed author, not yet run.
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut git = Command::new("git");
    git.args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    git
}
