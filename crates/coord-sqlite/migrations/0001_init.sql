-- Core schema. Times are INTEGER microseconds since the Unix epoch (UTC).

CREATE TABLE file_locks (
    file_path     TEXT PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    agent_type    TEXT NOT NULL,
    session_id    TEXT,
    reason        TEXT,
    locked_at     INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    fencing_token INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX file_locks_expires_at ON file_locks (expires_at);
CREATE INDEX file_locks_agent_id ON file_locks (agent_id);

-- Monotonic counters that must survive row deletion (fencing tokens).
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('fencing_token', 0);

CREATE TABLE work_queue (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id          TEXT NOT NULL UNIQUE,
    task_type        TEXT NOT NULL,
    task_description TEXT NOT NULL,
    input_data       TEXT,
    priority         INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 10),
    status           TEXT NOT NULL CHECK (status IN ('pending','claimed','completed','failed','cancelled')),
    pending_deps     INTEGER NOT NULL DEFAULT 0,
    created_by       TEXT NOT NULL,
    created_by_type  TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    claimed_by       TEXT,
    claimed_by_type  TEXT,
    claimed_at       INTEGER,
    claimed_until    INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    completed_at     INTEGER,
    result           TEXT,
    error_message    TEXT,
    failure_reason   TEXT
);
-- The claim path: most urgent, then oldest, among claimable tasks only.
CREATE INDEX work_queue_claimable ON work_queue (priority, created_at, seq)
    WHERE status = 'pending' AND pending_deps = 0;
CREATE INDEX work_queue_lease ON work_queue (claimed_until) WHERE status = 'claimed';
CREATE INDEX work_queue_claimed_by ON work_queue (claimed_by) WHERE status = 'claimed';
CREATE INDEX work_queue_status_type ON work_queue (status, task_type);

CREATE TABLE task_dependencies (
    task_id    TEXT NOT NULL,
    depends_on TEXT NOT NULL,
    PRIMARY KEY (task_id, depends_on)
) WITHOUT ROWID;
CREATE INDEX task_dependencies_reverse ON task_dependencies (depends_on, task_id);

CREATE TABLE agent_sessions (
    agent_id       TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL UNIQUE,
    agent_type     TEXT NOT NULL,
    capabilities   TEXT NOT NULL DEFAULT '[]',
    status         TEXT NOT NULL CHECK (status IN ('active','idle','disconnected')),
    current_task   TEXT,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    last_heartbeat INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE handoff_documents (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL UNIQUE,
    agent_name     TEXT NOT NULL,
    agent_type     TEXT NOT NULL,
    session_id     TEXT,
    summary        TEXT NOT NULL,
    completed_work TEXT NOT NULL DEFAULT '[]',
    in_progress    TEXT NOT NULL DEFAULT '[]',
    decisions      TEXT NOT NULL DEFAULT '[]',
    next_steps     TEXT NOT NULL DEFAULT '[]',
    relevant_files TEXT NOT NULL DEFAULT '[]',
    created_at     INTEGER NOT NULL
);
CREATE INDEX handoff_documents_agent ON handoff_documents (agent_name, created_at);
CREATE INDEX handoff_documents_created ON handoff_documents (created_at);

CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp   INTEGER NOT NULL,
    agent_id    TEXT NOT NULL,
    agent_type  TEXT NOT NULL,
    operation   TEXT NOT NULL,
    parameters  TEXT NOT NULL,
    result      TEXT NOT NULL,
    success     INTEGER NOT NULL,
    error_code  TEXT,
    duration_ms REAL NOT NULL
);
CREATE INDEX audit_log_timestamp ON audit_log (timestamp);
CREATE INDEX audit_log_agent ON audit_log (agent_id, id);
CREATE INDEX audit_log_operation ON audit_log (operation, id);

-- The audit trail is append-only.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
