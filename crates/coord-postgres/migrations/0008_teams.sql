-- The team an agent registered in (register_session {team}); messages to `team:<name>`
-- reach its live members.
ALTER TABLE agent_sessions ADD COLUMN team TEXT;
CREATE INDEX agent_sessions_team ON agent_sessions (team) WHERE team IS NOT NULL;
