//! Where a spawned agent works (docs/worktrees.md "Isolation"): in the coordinator's own
//! checkout, shared with the agents there (locks keep them apart), or in a git worktree
//! of its own on a new branch — still in the same coordination space, so its locks and
//! tasks stay visible to every other agent. What happens to that worktree when the run
//! ends is decided here ([`fate`]); creating and removing it is the supervisor's job.

use crate::ports::PortAllocation;
use serde::{Deserialize, Serialize};

/// The directory, in the repository's main checkout, that holds isolated agents'
/// worktrees (one per agent, named by its id; kept out of `git status` by the
/// repository's `info/exclude`). Not inside `.coord/`: that is hidden in the sandbox.
pub const WORKTREES_DIR: &str = ".coord-worktrees";

/// Where a spawned agent works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// The coordinator's checkout, with the other agents working there.
    #[default]
    Shared,
    /// A git worktree of its own, on a new branch `coord/<agent_id>`.
    Worktree,
}

impl Isolation {
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Shared => "shared",
            Isolation::Worktree => "worktree",
        }
    }

    pub fn parse(s: &str) -> Option<Isolation> {
        [Isolation::Shared, Isolation::Worktree]
            .into_iter()
            .find(|i| i.as_str() == s)
    }
}

/// What became of an isolated agent's worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeState {
    /// The agent works in it.
    Live,
    /// Its run ended: the worktree is gone; its changes, if any, are a commit on its branch.
    Removed,
    /// Its run ended and the worktree stays (`keep_worktree`), with its branch.
    Kept,
}

/// An isolated agent's worktree, as its record shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IsolatedWorktree {
    /// Its directory (under the main checkout's `.coord-worktrees/`).
    pub path: String,
    /// Its branch, created from the main checkout's HEAD.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Its port block from the port allocator, leased under its agent id while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<PortAllocation>,
    pub state: WorktreeState,
    /// The commit on its branch holding what it changed (made by coord when the run
    /// ended), when it changed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether its branch still exists (deleted when the agent changed nothing and the
    /// worktree was not kept).
    #[serde(default)]
    pub branch_kept: bool,
}

/// The branch an isolated agent works on.
pub fn branch_for(agent_id: &str) -> String {
    format!("coord/{agent_id}")
}

/// What to do with a worktree whose run ended: keep the directory only when asked; keep
/// the branch whenever it holds work (nothing an agent did is lost) or the worktree is
/// kept. Answers (state, keep the branch).
pub fn fate(keep_worktree: bool, has_commit: bool) -> (WorktreeState, bool) {
    match keep_worktree {
        true => (WorktreeState::Kept, true),
        false => (WorktreeState::Removed, has_commit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_an_agent_did_is_lost_when_its_worktree_goes() {
        let cases = [
            // keep, has a commit → state, branch kept
            (false, false, WorktreeState::Removed, false),
            (false, true, WorktreeState::Removed, true),
            (true, false, WorktreeState::Kept, true),
            (true, true, WorktreeState::Kept, true),
        ];
        for (keep, commit, state, branch) in cases {
            assert_eq!(fate(keep, commit), (state, branch), "keep={keep} commit={commit}");
        }
    }

    #[test]
    fn isolation_names_round_trip() {
        for i in [Isolation::Shared, Isolation::Worktree] {
            assert_eq!(Isolation::parse(i.as_str()), Some(i));
            assert_eq!(serde_json::to_value(i).unwrap(), i.as_str());
        }
        assert_eq!(Isolation::parse("container"), None);
        assert_eq!(branch_for("writer-1a2b"), "coord/writer-1a2b");
    }
}
