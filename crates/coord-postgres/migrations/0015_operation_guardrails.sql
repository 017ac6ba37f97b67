-- The editable part of the guardrails' pattern registry: a row adds a pattern, replaces
-- the built-in one of the same name, or (pattern NULL, enabled false) switches one off
-- (see coord_domain::guardrail_rules and coord_guardrails::patterns).
CREATE TABLE operation_guardrails (
    name       text PRIMARY KEY,
    pattern    jsonb,
    enabled    boolean NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL
);
ALTER TABLE operation_guardrails ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON operation_guardrails FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON operation_guardrails TO service_role;
REVOKE ALL ON operation_guardrails FROM PUBLIC, anon, authenticated;
