//! An agent's own worktree (`isolation: worktree`, docs/worktrees.md "Isolation"): made
//! before it starts — a new branch `coord/<agent_id>` from the main checkout's HEAD, in
//! `.coord-worktrees/<agent_id>` of the main checkout, with its port block leased under
//! its agent id — and settled when it ends: what it changed is committed to its branch
//! (so nothing it did is lost), the worktree removed unless kept, the branch deleted only
//! when it holds nothing. Still one coordination space: the worktree's state is the main
//! checkout's, so its locks and tasks are everyone's.
//!
//! coord's own git commands here run with hooks off (`core.hooksPath=/dev/null`,
//! `--no-verify`): the worktree's files were written by the agent, and nothing it wrote
//! may run outside its sandbox.

use crate::context::Context;
use coord_domain::access::Principal;
use coord_domain::agents::isolation::{self, IsolatedWorktree, WORKTREES_DIR, WorktreeState};
use coord_domain::ports::{AllocatePortsRequest, ReleasePortsRequest};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::ports::{AllocatePorts, ReleasePorts};
use coord_service::{Coordination, call};
use std::path::{Path, PathBuf};
use std::process::Command;

fn failed(what: &str, detail: impl std::fmt::Display) -> CoordError {
    CoordError::new(ErrorCode::AgentStartFailed, format!("{what}: {detail}"))
}

/// `git ARGS` in `dir` with hooks off; its trimmed stdout, or an error naming what failed.
fn git(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> CoordResult<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| failed("cannot run git", e))?;
    if !out.status.success() {
        return Err(failed(
            &format!("git {}", args.join(" ")),
            String::from_utf8_lossy(&out.stderr).trim(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The main checkout of the repository `ctx` stands in.
fn main_checkout(ctx: &Context) -> PathBuf {
    ctx.worktree
        .as_ref()
        .map_or_else(|| ctx.repo_root.clone(), |w| w.shared_root.clone())
}

/// Keeps `.coord-worktrees/` out of the main checkout's `git status` through the
/// repository's own (uncommitted) exclude file.
fn exclude(main: &Path) -> CoordResult<()> {
    let common = git(main, &["rev-parse", "--path-format=absolute", "--git-common-dir"], &[])?;
    let file = Path::new(&common).join("info").join("exclude");
    let line = format!("/{WORKTREES_DIR}/");
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    if current.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed("cannot write info/exclude", e))?;
    }
    let sep = if current.is_empty() || current.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    std::fs::write(&file, format!("{current}{sep}{line}\n")).map_err(|e| failed("cannot write info/exclude", e))
}

/// Makes `agent_id`'s worktree: a new branch from the main checkout's HEAD.
pub fn create(ctx: &Context, agent_id: &str) -> CoordResult<IsolatedWorktree> {
    let main = main_checkout(ctx);
    let base = git(&main, &["rev-parse", "--verify", "HEAD^{commit}"], &[]).map_err(|_| {
        failed(
            "isolation worktree",
            "the repository has no commit yet: a worktree starts from one (commit first)",
        )
    })?;
    exclude(&main)?;
    let dir = main.join(WORKTREES_DIR).join(agent_id);
    let branch = isolation::branch_for(agent_id);
    let path = dir.to_string_lossy().into_owned();
    git(&main, &["worktree", "add", "--quiet", "-b", &branch, &path, &base], &[])?;
    Ok(IsolatedWorktree {
        path,
        branch,
        base,
        ports: None,
        state: WorktreeState::Live,
        commit: None,
        branch_kept: true,
    })
}

/// Settles a worktree whose run ended: its changes committed to its branch (as the
/// agent), the directory removed unless `keep`, the branch deleted when it holds nothing.
pub fn finish(ctx: &Context, wt: &IsolatedWorktree, agent_id: &str, keep: bool) -> CoordResult<IsolatedWorktree> {
    let dir = Path::new(&wt.path);
    let email = format!("{agent_id}@coord.invalid");
    let who = [
        ("GIT_AUTHOR_NAME", agent_id),
        ("GIT_AUTHOR_EMAIL", email.as_str()),
        ("GIT_COMMITTER_NAME", agent_id),
        ("GIT_COMMITTER_EMAIL", email.as_str()),
    ];
    git(dir, &["add", "--all"], &[])?;
    if !git(dir, &["status", "--porcelain"], &[])?.is_empty() {
        let message = format!("{agent_id}: its work, committed by coord when its run ended");
        git(
            dir,
            &["commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", &message],
            &who,
        )?;
    }
    let head = git(dir, &["rev-parse", "HEAD"], &[])?;
    let commit = (head != wt.base).then_some(head);
    let (state, branch_kept) = isolation::fate(keep, commit.is_some());
    let main = main_checkout(ctx);
    if state == WorktreeState::Removed {
        git(&main, &["worktree", "remove", "--force", &wt.path], &[])?;
    }
    if !branch_kept {
        git(&main, &["branch", "--quiet", "-D", &wt.branch], &[])?;
    }
    Ok(IsolatedWorktree {
        state,
        commit,
        branch_kept,
        ..wt.clone()
    })
}

/// Leases the worktree's port block (under the agent's id) and answers the variables
/// that tell the agent its ports (`NAME=VALUE`).
pub async fn lease_ports(
    coord: &dyn Coordination,
    me: &Principal,
    wt: &mut IsolatedWorktree,
    agent_id: &str,
) -> CoordResult<Vec<String>> {
    let req = AllocatePortsRequest {
        session_id: agent_id.into(),
    };
    let leased = call::<AllocatePorts, _>(coord, me, req).await?;
    wt.ports = Some(leased.allocation);
    Ok(leased
        .env_snippet
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .map(str::to_string)
        .collect())
}

/// Gives the agent's port block back.
pub async fn release_ports(coord: &dyn Coordination, me: &Principal, agent_id: &str) {
    let req = ReleasePortsRequest {
        session_id: agent_id.into(),
    };
    if let Err(e) = call::<ReleasePorts, _>(coord, me, req).await {
        eprintln!("coord agent: could not release {agent_id}'s ports: {e}");
    }
}

/// Before an isolated agent starts: its worktree made and its ports leased. Answers the
/// coordinator seen from the worktree, the worktree, and the port variables for the
/// agent. Nothing is left behind when it fails.
pub async fn enter(
    ctx: &Context,
    coord: &dyn Coordination,
    me: &Principal,
    agent_id: &str,
) -> CoordResult<(Context, IsolatedWorktree, Vec<String>)> {
    let mut wt = create(ctx, agent_id)?;
    match lease_ports(coord, me, &mut wt, agent_id).await {
        Ok(vars) => Ok((ctx.moved_to(Path::new(&wt.path)), wt, vars)),
        Err(e) => {
            let _ = finish(ctx, &wt, agent_id, false);
            Err(e)
        }
    }
}

/// After an isolated agent ended: its ports given back, its worktree settled. A failure
/// is reported and leaves the worktree where it is (its work stays there).
pub async fn leave(
    ctx: &Context,
    coord: &dyn Coordination,
    me: &Principal,
    wt: IsolatedWorktree,
    agent_id: &str,
    keep: bool,
) -> IsolatedWorktree {
    release_ports(coord, me, agent_id).await;
    match finish(ctx, &wt, agent_id, keep) {
        Ok(done) => {
            let work = match &done.commit {
                Some(c) => format!(
                    "its changes are commit {} on branch {}",
                    &c[..c.len().min(12)],
                    done.branch
                ),
                None => "it changed nothing".into(),
            };
            let place = match done.state {
                WorktreeState::Kept => format!("; its worktree stays at {}", done.path),
                _ => "; its worktree was removed".into(),
            };
            eprintln!("coord agent: {agent_id}: {work}{place}");
            done
        }
        Err(e) => {
            eprintln!(
                "coord agent: {agent_id}'s worktree {} stays as it is ({e}); remove it with git worktree remove",
                wt.path
            );
            wt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    fn repo() -> (tempfile::TempDir, Context) {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("repo");
        std::fs::create_dir_all(main.join("src")).unwrap();
        sh(&main, &["init", "-q"]);
        std::fs::write(main.join("src/a.rs"), "original\n").unwrap();
        sh(&main, &["add", "."]);
        sh(&main, &["commit", "-qm", "init"]);
        let global = crate::context::Settings::default();
        let ctx = Context::resolve_in(&global, main).unwrap();
        (tmp, ctx)
    }

    fn exists(ctx: &Context, what: &str) -> bool {
        git(&ctx.repo_root, &["rev-parse", "--verify", "--quiet", what], &[]).is_ok()
    }

    #[test]
    fn its_work_lands_on_its_branch_and_the_worktree_goes() {
        let (_tmp, ctx) = repo();
        let wt = create(&ctx, "writer-1").unwrap();
        assert_eq!(wt.branch, "coord/writer-1");
        assert!(Path::new(&wt.path).join("src/a.rs").is_file());
        // Out of the main checkout's status.
        assert_eq!(git(&ctx.repo_root, &["status", "--porcelain"], &[]).unwrap(), "");
        std::fs::write(Path::new(&wt.path).join("src/a.rs"), "changed\n").unwrap();
        std::fs::write(Path::new(&wt.path).join("new.txt"), "new\n").unwrap();
        let done = finish(&ctx, &wt, "writer-1", false).unwrap();
        assert_eq!(done.state, WorktreeState::Removed);
        assert!(!Path::new(&wt.path).exists());
        assert!(done.branch_kept && exists(&ctx, "coord/writer-1"));
        let commit = done.commit.unwrap();
        let shown = git(&ctx.repo_root, &["show", &format!("{commit}:src/a.rs")], &[]).unwrap();
        assert_eq!(shown, "changed");
        let author = git(&ctx.repo_root, &["log", "-1", "--format=%an", &commit], &[]).unwrap();
        assert_eq!(author, "writer-1");
        // The main checkout is untouched.
        assert_eq!(
            std::fs::read_to_string(ctx.repo_root.join("src/a.rs")).unwrap(),
            "original\n"
        );
    }

    #[test]
    fn an_agent_that_changed_nothing_leaves_nothing_behind() {
        let (_tmp, ctx) = repo();
        let wt = create(&ctx, "reader-1").unwrap();
        let done = finish(&ctx, &wt, "reader-1", false).unwrap();
        assert_eq!(
            (done.state, done.commit, done.branch_kept),
            (WorktreeState::Removed, None, false)
        );
        assert!(!exists(&ctx, "coord/reader-1"));
        assert!(!Path::new(&wt.path).exists());
    }

    #[test]
    fn a_kept_worktree_stays_with_its_branch() {
        let (_tmp, ctx) = repo();
        let wt = create(&ctx, "keeper-1").unwrap();
        let done = finish(&ctx, &wt, "keeper-1", true).unwrap();
        assert_eq!(done.state, WorktreeState::Kept);
        assert!(Path::new(&wt.path).is_dir() && exists(&ctx, "coord/keeper-1"));
    }

    #[test]
    fn the_agents_own_hooks_never_run_outside_its_sandbox() {
        let (_tmp, ctx) = repo();
        let wt = create(&ctx, "hooked-1").unwrap();
        // A hook the agent could plant if hooks were read from its worktree.
        let planted = ctx.repo_root.join(".git/hooks/pre-commit");
        let witness = ctx.repo_root.join("ran");
        std::fs::write(&planted, format!("#!/bin/sh\ntouch {}\n", witness.display())).unwrap();
        std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::write(Path::new(&wt.path).join("x.txt"), "x\n").unwrap();
        finish(&ctx, &wt, "hooked-1", false).unwrap();
        assert!(!witness.exists(), "a git hook ran");
    }

    #[test]
    fn a_repository_without_a_commit_is_refused_clearly() {
        let tmp = tempfile::tempdir().unwrap();
        sh(tmp.path(), &["init", "-q"]);
        let global = crate::context::Settings::default();
        let ctx = Context::resolve_in(&global, tmp.path().to_path_buf()).unwrap();
        let e = create(&ctx, "w-1").unwrap_err();
        assert!(e.message.contains("no commit yet"), "{e}");
    }
}
