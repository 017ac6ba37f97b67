-- Fewer pages written per operation (docs/benchmarks.md, "Issue 19: fewer pages per
-- write"). Every b-tree a write touches is one more page in the WAL at commit, and the
-- WAL's writes were most of a lock operation's time.
--
-- 1. `audit_log` without AUTOINCREMENT: AUTOINCREMENT keeps the highest id ever given in
--    `sqlite_sequence`, one more page per audit row. Ids must still never be reused,
--    even when a prune removes every row: a checkpoint records the next id as of its
--    prune (`next_id`), and an insert takes the larger of that and the newest row's id
--    plus one (audit.rs). The table is copied as it is: ids, chain and order unchanged.
CREATE TABLE audit_log_next (
    id          INTEGER PRIMARY KEY,
    timestamp   INTEGER NOT NULL,
    agent_id    TEXT NOT NULL,
    agent_type  TEXT NOT NULL,
    operation   TEXT NOT NULL,
    parameters  TEXT NOT NULL,
    result      TEXT NOT NULL,
    success     INTEGER NOT NULL,
    error_code  TEXT,
    duration_ms REAL NOT NULL,
    origin      TEXT,
    chain_seq   INTEGER,
    prev_hash   TEXT,
    row_hash    TEXT
);
INSERT INTO audit_log_next (id, timestamp, agent_id, agent_type, operation, parameters, result, success,
                            error_code, duration_ms, origin, chain_seq, prev_hash, row_hash)
SELECT id, timestamp, agent_id, agent_type, operation, parameters, result, success,
       error_code, duration_ms, origin, chain_seq, prev_hash, row_hash
FROM audit_log ORDER BY id;

ALTER TABLE audit_checkpoints ADD COLUMN next_id INTEGER;
-- Checkpoints written before this migration learn the next id from sqlite_sequence (the
-- highest id AUTOINCREMENT ever gave), which goes with the old table.
DROP TRIGGER audit_checkpoints_no_update;
UPDATE audit_checkpoints
SET next_id = (SELECT seq + 1 FROM sqlite_sequence WHERE name = 'audit_log');
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoints is append-only');
END;

-- Dropping a table fires no delete trigger; its indexes and triggers go with it and are
-- made again below, as migrations 0001, 0009 and 0012 left them.
DROP TABLE audit_log;
ALTER TABLE audit_log_next RENAME TO audit_log;
CREATE INDEX audit_log_timestamp ON audit_log (timestamp);
CREATE INDEX audit_log_agent ON audit_log (agent_id, id);
CREATE INDEX audit_log_operation ON audit_log (operation, id);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN NOT (
    (OLD.chain_seq IS NOT NULL AND OLD.chain_seq <= coalesce((SELECT max(through_seq) FROM audit_checkpoints), 0))
    OR (OLD.chain_seq IS NULL AND OLD.timestamp < coalesce((SELECT max(cutoff) FROM audit_checkpoints), 0))
)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: only rows covered by a checkpoint may be pruned');
END;

-- 2. No index on the chain position: rows are chained in id order (one writer at a time,
--    the head read inside the writing transaction), so the head is the newest chained
--    row by id, a prune's prefix is an id range, and `coord audit verify` orders the
--    positions in a temporary table of its own (audit.rs). Every audit row wrote this
--    index's page. (PostgreSQL's store keeps its own schema and index.)
--
-- 3. No index on a lock's expiry: its readers (the periodic sweep, listing live locks,
--    the status count) scan the lock table, which holds live locks and those not yet
--    swept, while every acquire and release wrote the index's page.
DROP INDEX file_locks_expires_at;
