-- Network egress policies: a row replaces the built-in policy of its name or adds one
-- (coord_domain::network); the policy itself is JSON.
CREATE TABLE network_policies (
    name       TEXT PRIMARY KEY,
    policy     TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Every egress decision: check_network_access and the egress proxy (which asks it).
CREATE TABLE network_access_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp INTEGER NOT NULL,
    agent_id  TEXT NOT NULL,
    agent_type TEXT NOT NULL,
    host      TEXT NOT NULL,
    port      INTEGER NOT NULL,
    allowed   INTEGER NOT NULL,
    alert     INTEGER NOT NULL,
    policy    TEXT NOT NULL,
    reason    TEXT NOT NULL,
    rule      TEXT
);
CREATE INDEX network_access_log_agent ON network_access_log (agent_id, id);
CREATE TRIGGER network_access_log_no_update BEFORE UPDATE ON network_access_log
BEGIN
    SELECT RAISE(ABORT, 'network_access_log is append-only');
END;
CREATE TRIGGER network_access_log_no_delete BEFORE DELETE ON network_access_log
BEGIN
    SELECT RAISE(ABORT, 'network_access_log is append-only');
END;
