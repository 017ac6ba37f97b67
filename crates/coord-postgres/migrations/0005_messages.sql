-- Messages between agents: one row per message, one per recipient (its own read and
-- acknowledged marks). Only the coordinator (service_role) reads or writes them: they
-- are private to their sender and recipients, so anon and authenticated see nothing.
CREATE TABLE messages (
    seq         bigserial PRIMARY KEY,
    message_id  uuid NOT NULL UNIQUE,
    thread_id   uuid NOT NULL,
    sender_id   text NOT NULL,
    sender_type text NOT NULL,
    subject     text NOT NULL,
    body        text NOT NULL,
    importance  text NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE TABLE message_recipients (
    message_id   uuid NOT NULL REFERENCES messages (message_id),
    recipient_id text NOT NULL,
    read_at      timestamptz,
    acked_at     timestamptz,
    PRIMARY KEY (recipient_id, message_id)
);
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_recipients ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON messages FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON message_recipients FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON messages, message_recipients TO service_role;
GRANT USAGE ON SEQUENCE messages_seq_seq TO service_role;
REVOKE ALL ON messages, message_recipients FROM PUBLIC, anon, authenticated;
