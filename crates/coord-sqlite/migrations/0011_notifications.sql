-- The security channel's outbox: a notification is written in the transaction of the
-- decision it reports and delivered to the webhook by a dispatcher, retried with backoff
-- until the webhook accepts it (see coord_domain::notifications).
CREATE TABLE notifications (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at      INTEGER NOT NULL,
    channel         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    agent_type      TEXT NOT NULL,
    summary         TEXT NOT NULL,
    details         TEXT NOT NULL,
    delivered_at    INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    next_attempt_at INTEGER NOT NULL
);
CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE delivered_at IS NULL;
