-- Every guardrail block (and every destructive operation let through by an approval or
-- as an elevated operation), with the agent, what was matched and its context. The
-- count of an agent's blocks is its violation counter (discover_agents,
-- explain_profile). Append-only like the audit trail.
CREATE TABLE guardrail_violations (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp       INTEGER NOT NULL,
    agent_id        TEXT NOT NULL,
    agent_type      TEXT NOT NULL,
    source          TEXT NOT NULL,
    operation       TEXT NOT NULL,
    category        TEXT NOT NULL,
    pattern_matched TEXT NOT NULL,
    context         TEXT NOT NULL,
    blocked         INTEGER NOT NULL,
    elevated        INTEGER NOT NULL,
    approval_id     TEXT
);
CREATE INDEX guardrail_violations_agent ON guardrail_violations (agent_id, blocked);
CREATE INDEX guardrail_violations_timestamp ON guardrail_violations (timestamp);
CREATE TRIGGER guardrail_violations_no_update BEFORE UPDATE ON guardrail_violations
BEGIN
    SELECT RAISE(ABORT, 'guardrail_violations is append-only');
END;
CREATE TRIGGER guardrail_violations_no_delete BEFORE DELETE ON guardrail_violations
BEGIN
    SELECT RAISE(ABORT, 'guardrail_violations is append-only');
END;
