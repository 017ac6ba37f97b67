-- The security channel's outbox: a notification is written in the transaction of the
-- decision it reports and delivered to the webhook by a dispatcher, retried with backoff
-- until the webhook accepts it (see coord_domain::notifications).
CREATE TABLE notifications (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at      timestamptz NOT NULL,
    channel         text NOT NULL,
    kind            text NOT NULL,
    agent_id        text NOT NULL,
    agent_type      text NOT NULL,
    summary         text NOT NULL,
    details         jsonb NOT NULL,
    delivered_at    timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL
);
CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE delivered_at IS NULL;
ALTER TABLE notifications ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON notifications FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON notifications TO service_role;
REVOKE ALL ON notifications FROM PUBLIC, anon, authenticated;
