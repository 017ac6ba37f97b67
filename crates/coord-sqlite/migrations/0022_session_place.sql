-- Where a session's agent works: the worktree's root and its branch (every worktree of a
-- repository shares one store, so agents in two worktrees see each other's sessions).
ALTER TABLE agent_sessions ADD COLUMN worktree TEXT;
ALTER TABLE agent_sessions ADD COLUMN branch TEXT;
