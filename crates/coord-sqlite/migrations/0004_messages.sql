-- Messages between agents: one row per message, one per recipient (its own read and
-- acknowledged marks). Times are INTEGER microseconds since the Unix epoch (UTC).
CREATE TABLE messages (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id  TEXT NOT NULL UNIQUE,
    thread_id   TEXT NOT NULL,
    sender_id   TEXT NOT NULL,
    sender_type TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    importance  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE TABLE message_recipients (
    message_id   TEXT NOT NULL REFERENCES messages (message_id),
    recipient_id TEXT NOT NULL,
    read_at      INTEGER,
    acked_at     INTEGER,
    PRIMARY KEY (recipient_id, message_id)
) WITHOUT ROWID;
