-- The approval queue: refused requests a person may approve, and the one-time grants
-- approvals become. Rows are written by the operation wrappers (a refusal enqueues, a
-- granted request spends) and by decide_approval; expiry is computed on read. Only the
-- coordinator (service_role) reads or writes it: a decision is an audited operation.
CREATE TABLE approval_queue (
    approval_id  text PRIMARY KEY,
    agent_id     text NOT NULL,
    agent_type   text NOT NULL,
    operation    text NOT NULL,
    params_hash  text NOT NULL,
    parameters   jsonb NOT NULL,
    error        text NOT NULL,
    reason       text NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used', 'expired')),
    requested_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    decided_by   text,
    decided_at   timestamptz,
    note         text,
    used_at      timestamptz
);
CREATE INDEX approval_queue_request ON approval_queue (agent_id, operation, params_hash, status);
CREATE INDEX approval_queue_requested ON approval_queue (requested_at);
ALTER TABLE approval_queue ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON approval_queue FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON approval_queue TO service_role;
REVOKE ALL ON approval_queue FROM PUBLIC, anon, authenticated;

-- Keys issued to a cloud session or task say so, and every audit row a managed key
-- causes records the key and that session or task.
ALTER TABLE api_keys ADD COLUMN session_id text, ADD COLUMN task_id text;
ALTER TABLE audit_log ADD COLUMN origin jsonb;
