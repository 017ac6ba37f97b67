-- Core schema: locks, queue, sessions, handoffs, audit.

CREATE SEQUENCE fencing_token_seq AS bigint;

CREATE TABLE file_locks (
    file_path     text PRIMARY KEY,
    agent_id      text NOT NULL,
    agent_type    text NOT NULL,
    session_id    uuid,
    reason        text,
    locked_at     timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    fencing_token bigint NOT NULL
);
CREATE INDEX file_locks_expires_at ON file_locks (expires_at);
CREATE INDEX file_locks_agent_id ON file_locks (agent_id);

CREATE TABLE work_queue (
    task_id          uuid PRIMARY KEY,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    task_type        text NOT NULL,
    task_description text NOT NULL,
    input_data       jsonb,
    priority         integer NOT NULL CHECK (priority BETWEEN 1 AND 10),
    status           text NOT NULL CHECK (status IN ('pending','claimed','completed','failed','cancelled')),
    pending_deps     integer NOT NULL DEFAULT 0,
    created_by       text NOT NULL,
    created_by_type  text NOT NULL,
    created_at       timestamptz NOT NULL,
    claimed_by       text,
    claimed_by_type  text,
    claimed_at       timestamptz,
    claimed_until    timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    completed_at     timestamptz,
    result           jsonb,
    error_message    text,
    failure_reason   text
);
-- The claim path: most urgent, then oldest, among claimable tasks only.
CREATE INDEX work_queue_claimable ON work_queue (priority, created_at, seq)
    WHERE status = 'pending' AND pending_deps = 0;
CREATE INDEX work_queue_lease ON work_queue (claimed_until) WHERE status = 'claimed';
CREATE INDEX work_queue_claimed_by ON work_queue (claimed_by) WHERE status = 'claimed';
CREATE INDEX work_queue_status_type ON work_queue (status, task_type);

CREATE TABLE task_dependencies (
    task_id    uuid NOT NULL REFERENCES work_queue (task_id) ON DELETE CASCADE,
    depends_on uuid NOT NULL REFERENCES work_queue (task_id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, depends_on)
);
CREATE INDEX task_dependencies_reverse ON task_dependencies (depends_on, task_id);

CREATE TABLE agent_sessions (
    agent_id       text PRIMARY KEY,
    session_id     uuid NOT NULL UNIQUE,
    agent_type     text NOT NULL,
    capabilities   text[] NOT NULL DEFAULT '{}',
    status         text NOT NULL CHECK (status IN ('active','idle','disconnected')),
    current_task   text,
    started_at     timestamptz NOT NULL,
    ended_at       timestamptz,
    last_heartbeat timestamptz NOT NULL
);
CREATE INDEX agent_sessions_capabilities ON agent_sessions USING gin (capabilities);

CREATE TABLE handoff_documents (
    id             uuid PRIMARY KEY,
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    agent_name     text NOT NULL,
    agent_type     text NOT NULL,
    session_id     uuid,
    summary        text NOT NULL,
    completed_work text[] NOT NULL DEFAULT '{}',
    in_progress    text[] NOT NULL DEFAULT '{}',
    decisions      text[] NOT NULL DEFAULT '{}',
    next_steps     text[] NOT NULL DEFAULT '{}',
    relevant_files text[] NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL
);
CREATE INDEX handoff_documents_agent ON handoff_documents (agent_name, created_at);
CREATE INDEX handoff_documents_created ON handoff_documents (created_at);

CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "timestamp" timestamptz NOT NULL,
    agent_id    text NOT NULL,
    agent_type  text NOT NULL,
    operation   text NOT NULL,
    parameters  jsonb NOT NULL,
    result      jsonb NOT NULL,
    success     boolean NOT NULL,
    error_code  text,
    duration_ms double precision NOT NULL
);
CREATE INDEX audit_log_timestamp ON audit_log ("timestamp");
CREATE INDEX audit_log_agent ON audit_log (agent_id, id);
CREATE INDEX audit_log_operation ON audit_log (operation, id);

-- The audit trail is append-only: rejected by trigger for everyone, the owner included.
CREATE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only (% rejected)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Row Level Security. The coordinator connects as the tables' owner (or service_role)
-- and is not restricted; anon/authenticated (PostgREST, Supabase clients) may read only
-- what the unauthenticated HTTP status endpoints show: locks and the queue.
ALTER TABLE file_locks ENABLE ROW LEVEL SECURITY;
ALTER TABLE work_queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE task_dependencies ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE handoff_documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;

CREATE POLICY service_role_all ON file_locks FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON work_queue FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON task_dependencies FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON agent_sessions FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON handoff_documents FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_read_append ON audit_log FOR SELECT TO service_role USING (true);
CREATE POLICY service_role_append ON audit_log FOR INSERT TO service_role WITH CHECK (true);

CREATE POLICY public_read ON file_locks FOR SELECT TO anon, authenticated USING (true);
CREATE POLICY public_read ON work_queue FOR SELECT TO anon, authenticated USING (true);
CREATE POLICY public_read ON task_dependencies FOR SELECT TO anon, authenticated USING (true);

GRANT SELECT ON file_locks, work_queue, task_dependencies TO anon, authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON file_locks, work_queue, task_dependencies, agent_sessions,
    handoff_documents TO service_role;
GRANT SELECT, INSERT ON audit_log TO service_role;
GRANT USAGE ON SEQUENCE fencing_token_seq TO service_role;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC, anon, authenticated, service_role;

-- Realtime: Supabase clients can subscribe to lock and queue changes.
DO $$
BEGIN
    IF NOT (SELECT puballtables FROM pg_publication WHERE pubname = 'supabase_realtime') THEN
        ALTER PUBLICATION supabase_realtime ADD TABLE file_locks, work_queue;
    END IF;
END
$$;
