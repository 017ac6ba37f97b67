-- Agents coord spawned (spawn_agent; coord_domain::agents::spawn): one row each, its
-- record as JSON; status and parent as columns for the running count and listings.
CREATE TABLE spawned_agents (
    agent_id        TEXT PRIMARY KEY,
    parent_agent_id TEXT NOT NULL,
    status          TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    -- Deadline and grace: an active row past it no longer counts as running.
    expires_at      INTEGER NOT NULL,
    record          TEXT NOT NULL
);
CREATE INDEX spawned_agents_status ON spawned_agents (status);
CREATE INDEX spawned_agents_parent ON spawned_agents (parent_agent_id, created_at);
