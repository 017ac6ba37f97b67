-- Every guardrail block (and every destructive operation let through by an approval or
-- as an elevated operation), with the agent, what was matched and its context. The
-- count of an agent's blocks is its violation counter (discover_agents,
-- explain_profile). Append-only like the audit trail.
CREATE TABLE guardrail_violations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "timestamp"     timestamptz NOT NULL,
    agent_id        text NOT NULL,
    agent_type      text NOT NULL,
    source          text NOT NULL,
    operation       text NOT NULL,
    category        text NOT NULL,
    pattern_matched text NOT NULL,
    context         jsonb NOT NULL,
    blocked         boolean NOT NULL,
    elevated        boolean NOT NULL,
    approval_id     text
);
CREATE INDEX guardrail_violations_agent ON guardrail_violations (agent_id, blocked);
CREATE INDEX guardrail_violations_timestamp ON guardrail_violations ("timestamp");
CREATE TRIGGER guardrail_violations_no_update_delete BEFORE UPDATE OR DELETE ON guardrail_violations
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER guardrail_violations_no_truncate BEFORE TRUNCATE ON guardrail_violations
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
ALTER TABLE guardrail_violations ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_read_append ON guardrail_violations FOR SELECT TO service_role USING (true);
CREATE POLICY service_role_append ON guardrail_violations FOR INSERT TO service_role WITH CHECK (true);
GRANT SELECT, INSERT ON guardrail_violations TO service_role;
REVOKE ALL ON guardrail_violations FROM PUBLIC, anon, authenticated;
