-- Agents coord spawned (spawn_agent; coord_domain::agents::spawn): one row each, its
-- record as JSON; status and parent as columns for the running count and listings.
CREATE TABLE spawned_agents (
    agent_id        text PRIMARY KEY,
    parent_agent_id text NOT NULL,
    status          text NOT NULL,
    task_id         text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    -- Deadline and grace: an active row past it no longer counts as running.
    expires_at      timestamptz NOT NULL,
    record          jsonb NOT NULL
);
CREATE INDEX spawned_agents_status ON spawned_agents (status);
CREATE INDEX spawned_agents_parent ON spawned_agents (parent_agent_id, created_at);
ALTER TABLE spawned_agents ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON spawned_agents FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON spawned_agents TO service_role;
REVOKE ALL ON spawned_agents FROM PUBLIC, anon, authenticated;
