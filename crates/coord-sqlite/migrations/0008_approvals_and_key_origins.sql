-- The approval queue: refused requests a person may approve, and the one-time grants
-- approvals become. Rows are written by the operation wrappers (a refusal enqueues, a
-- granted request spends) and by decide_approval; expiry is computed on read.
CREATE TABLE approval_queue (
    approval_id  TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    agent_type   TEXT NOT NULL,
    operation    TEXT NOT NULL,
    params_hash  TEXT NOT NULL,
    parameters   TEXT NOT NULL,
    error        TEXT NOT NULL,
    reason       TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used', 'expired')),
    requested_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_by   TEXT,
    decided_at   INTEGER,
    note         TEXT,
    used_at      INTEGER
) WITHOUT ROWID;
CREATE INDEX approval_queue_request ON approval_queue (agent_id, operation, params_hash, status);
CREATE INDEX approval_queue_requested ON approval_queue (requested_at);

-- Keys issued to a cloud session or task say so, and every audit row a managed key
-- causes records the key and that session or task.
ALTER TABLE api_keys ADD COLUMN session_id TEXT;
ALTER TABLE api_keys ADD COLUMN task_id TEXT;
ALTER TABLE audit_log ADD COLUMN origin TEXT;
