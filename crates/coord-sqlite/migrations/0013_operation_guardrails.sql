-- The editable part of the guardrails' pattern registry: a row adds a pattern, replaces
-- the built-in one of the same name, or (pattern NULL, enabled 0) switches one off
-- (see coord_domain::guardrail_rules and coord_guardrails::patterns).
CREATE TABLE operation_guardrails (
    name       TEXT PRIMARY KEY,
    pattern    TEXT,
    enabled    INTEGER NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
