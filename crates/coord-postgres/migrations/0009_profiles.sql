-- Agent profiles (what an agent may do), their assignments to agent ids and agent types,
-- and the resource usage counted against profile limits per agent session. The built-in
-- profiles and type defaults are seeded by migrate.rs from coord-domain's one definition.
-- Only the coordinator (service_role) reads or writes them: a profile change is an
-- audited operation, never a direct write through Supabase's REST API.
CREATE TABLE agent_profiles (
    name        text PRIMARY KEY,
    agent_type  text NOT NULL,
    trust_level smallint NOT NULL CHECK (trust_level BETWEEN 0 AND 4),
    definition  jsonb NOT NULL,
    builtin     boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL,
    updated_by  text NOT NULL
);
CREATE TABLE agent_profile_assignments (
    kind        text NOT NULL CHECK (kind IN ('agent', 'agent_type')),
    value       text NOT NULL,
    profile     text NOT NULL REFERENCES agent_profiles (name),
    assigned_at timestamptz NOT NULL,
    assigned_by text NOT NULL,
    PRIMARY KEY (kind, value)
);
CREATE TABLE resource_usage (
    scope    text NOT NULL,
    resource text NOT NULL,
    item     text NOT NULL,
    at       timestamptz NOT NULL,
    PRIMARY KEY (scope, resource, item)
);
ALTER TABLE agent_profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_profile_assignments ENABLE ROW LEVEL SECURITY;
ALTER TABLE resource_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON agent_profiles FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON agent_profile_assignments FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON resource_usage FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON agent_profiles, agent_profile_assignments, resource_usage TO service_role;
REVOKE ALL ON agent_profiles, agent_profile_assignments, resource_usage FROM PUBLIC, anon, authenticated;
