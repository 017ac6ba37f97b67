-- A prune an hour for years is many checkpoints: every audit insert reads the latest
-- (the chain's head after a prune), and the delete trigger compares with the newest.
CREATE INDEX audit_checkpoints_through ON audit_checkpoints (through_seq);
CREATE INDEX audit_checkpoints_cutoff ON audit_checkpoints (cutoff);
DROP TRIGGER audit_log_no_delete;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN NOT (
    (OLD.chain_seq IS NOT NULL AND OLD.chain_seq <= coalesce((SELECT max(through_seq) FROM audit_checkpoints), 0))
    OR (OLD.chain_seq IS NULL AND OLD.timestamp < coalesce((SELECT max(cutoff) FROM audit_checkpoints), 0))
)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: only rows covered by a checkpoint may be pruned');
END;
