-- The audit trail is hash-chained: every row written from now on has a position in the
-- chain (chain_seq, 1, 2, ...), the hash of the row before it and its own hash over its
-- canonical content and that link (coord_domain::audit_chain). Rows written before this
-- migration have no position and are reported by `coord audit verify` as unchained.
ALTER TABLE audit_log ADD COLUMN chain_seq INTEGER;
ALTER TABLE audit_log ADD COLUMN prev_hash TEXT;
ALTER TABLE audit_log ADD COLUMN row_hash TEXT;
CREATE UNIQUE INDEX audit_log_chain_seq ON audit_log (chain_seq);

-- What a prune removed: the chain up to through_seq, whose last hash is through_hash,
-- signed (HMAC-SHA-256 under the audit key, kept outside the database) so that the
-- remaining chain still verifies and a forged checkpoint does not.
CREATE TABLE audit_checkpoints (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at   INTEGER NOT NULL,
    through_seq  INTEGER NOT NULL,
    through_hash TEXT NOT NULL,
    cutoff       INTEGER NOT NULL,
    pruned_rows  INTEGER NOT NULL,
    key_id       TEXT NOT NULL,
    signature    TEXT NOT NULL
);
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoints is append-only');
END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'audit_checkpoints is append-only');
END;

-- A row may be deleted only once a checkpoint covers it (a prune writes the checkpoint
-- first, in the same transaction).
DROP TRIGGER audit_log_no_delete;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN NOT EXISTS (
    SELECT 1 FROM audit_checkpoints c
    WHERE (OLD.chain_seq IS NOT NULL AND OLD.chain_seq <= c.through_seq)
       OR (OLD.chain_seq IS NULL AND OLD.timestamp < c.cutoff)
)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: only rows covered by a checkpoint may be pruned');
END;
