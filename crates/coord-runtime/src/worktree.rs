//! Where a checkout stands among its repository's worktrees. Every worktree of one
//! repository shares one coordination space: coord's state (`.coord/`, the SQLite store,
//! the audit key, the registry of `coord mcp` processes) lives beside the repository's
//! *common* git directory — in the main checkout — whichever worktree coord starts in,
//! so two agents in two worktrees see each other's locks, tasks and messages. Lock paths
//! are repository-relative, so a path names the same file in every worktree.
//!
//! Read from the files git keeps (no `git` process: a hook pays for every millisecond):
//! a linked worktree's `.git` file names its git directory (`gitdir: …`), whose
//! `commondir` names the shared one; `HEAD` names the branch.

use std::path::{Path, PathBuf};

/// A checkout: its root, the checkout whose `.coord/` it shares, and its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's own root (where its `.git` is).
    pub root: PathBuf,
    /// The root of the checkout holding the shared state (the main checkout; the root
    /// itself for a main checkout, a submodule or anything git does not link).
    pub shared_root: PathBuf,
    /// The branch checked out (`None`: a detached HEAD, or unknown).
    pub branch: Option<String>,
}

impl Worktree {
    /// Whether this is a linked worktree sharing another checkout's state.
    pub fn linked(&self) -> bool {
        self.root != self.shared_root
    }
}

/// The path a `.git` file names (`gitdir: PATH`), relative to the directory holding it.
pub fn gitdir_of(text: &str, holder: &Path) -> Option<PathBuf> {
    let path = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!path.is_empty()).then(|| holder.join(path))
}

/// The branch a `HEAD` file names (`ref: refs/heads/NAME`); `None` when detached.
pub fn branch_of(head: &str) -> Option<String> {
    head.trim()
        .strip_prefix("ref:")
        .map(str::trim)
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .filter(|b| !b.is_empty())
        .map(String::from)
}

/// The checkout whose state a git directory `gitdir` shares: the parent of its common
/// directory (`commondir`, relative to `gitdir`) when that is a `.git` directory; none for
/// a git directory without one (a submodule's: its own repository), or a bare repository.
pub fn shared_root_of(gitdir: &Path) -> Option<PathBuf> {
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    let common = gitdir.join(common.trim());
    let common = common.canonicalize().unwrap_or(common);
    (common.file_name()? == ".git").then(|| common.parent().map(Path::to_path_buf))?
}

/// What `root` (a directory holding `.git`) is among its repository's worktrees.
pub fn locate(root: &Path) -> Worktree {
    let dot_git = root.join(".git");
    let gitdir = if dot_git.is_dir() {
        Some(dot_git)
    } else {
        std::fs::read_to_string(&dot_git).ok().and_then(|t| gitdir_of(&t, root))
    };
    let shared_root = gitdir
        .as_deref()
        .and_then(shared_root_of)
        .unwrap_or_else(|| root.to_path_buf());
    let branch = gitdir
        .as_deref()
        .and_then(|g| std::fs::read_to_string(g.join("HEAD")).ok())
        .as_deref()
        .and_then(branch_of);
    Worktree {
        root: root.to_path_buf(),
        shared_root,
        branch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_gits_files_say() {
        assert_eq!(
            gitdir_of("gitdir: /r/.git/worktrees/wt2\n", Path::new("/w")),
            Some(PathBuf::from("/r/.git/worktrees/wt2"))
        );
        assert_eq!(
            gitdir_of("gitdir: ../.git/modules/sub\n", Path::new("/r/sub")),
            Some(PathBuf::from("/r/sub/../.git/modules/sub"))
        );
        assert_eq!(gitdir_of("nonsense", Path::new("/w")), None);
        assert_eq!(gitdir_of("gitdir:  \n", Path::new("/w")), None);
        assert_eq!(branch_of("ref: refs/heads/feature/x\n"), Some("feature/x".into()));
        assert_eq!(branch_of("3f9a0c1e\n"), None);
        assert_eq!(branch_of("ref: refs/remotes/origin/main"), None);
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn linked_worktrees_share_the_main_checkouts_state() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let base = tempfile::tempdir().unwrap();
        let main = base.path().join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        git(&main, &["commit", "-q", "--allow-empty", "-m", "init"]);
        let wt = base.path().join("wt2");
        git(&main, &["worktree", "add", "-q", "-b", "feature", wt.to_str().unwrap()]);
        let main = main.canonicalize().unwrap();
        let here = locate(&main);
        assert_eq!(
            (here.shared_root.clone(), here.branch.as_deref()),
            (main.clone(), Some("main"))
        );
        assert!(!here.linked());
        let there = locate(&wt);
        assert_eq!(there.shared_root, main);
        assert_eq!(there.branch.as_deref(), Some("feature"));
        assert!(there.linked());
        // A directory git knows nothing of is its own.
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(locate(plain.path()).shared_root, plain.path());
    }
}
