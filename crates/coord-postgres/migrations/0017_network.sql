-- Network egress policies: a row replaces the built-in policy of its name or adds one
-- (coord_domain::network).
CREATE TABLE network_policies (
    name       text PRIMARY KEY,
    policy     jsonb NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL
);
ALTER TABLE network_policies ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON network_policies FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON network_policies TO service_role;
REVOKE ALL ON network_policies FROM PUBLIC, anon, authenticated;

-- Every egress decision: check_network_access and the egress proxy (which asks it).
-- Append-only like the audit trail.
CREATE TABLE network_access_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "timestamp" timestamptz NOT NULL,
    agent_id    text NOT NULL,
    agent_type  text NOT NULL,
    host        text NOT NULL,
    port        integer NOT NULL,
    allowed     boolean NOT NULL,
    alert       boolean NOT NULL,
    policy      text NOT NULL,
    reason      text NOT NULL,
    rule        text
);
CREATE INDEX network_access_log_agent ON network_access_log (agent_id, id);
CREATE TRIGGER network_access_log_no_update_delete BEFORE UPDATE OR DELETE ON network_access_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER network_access_log_no_truncate BEFORE TRUNCATE ON network_access_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
ALTER TABLE network_access_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_read_append ON network_access_log FOR SELECT TO service_role USING (true);
CREATE POLICY service_role_append ON network_access_log FOR INSERT TO service_role WITH CHECK (true);
GRANT SELECT, INSERT ON network_access_log TO service_role;
REVOKE ALL ON network_access_log FROM PUBLIC, anon, authenticated;
