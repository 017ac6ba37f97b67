-- A prune an hour for years is many checkpoints: every audit insert reads the latest
-- (the chain's head after a prune), and the delete trigger compares with the newest.
CREATE INDEX audit_checkpoints_through ON audit_checkpoints (through_seq);
CREATE INDEX audit_checkpoints_cutoff ON audit_checkpoints (cutoff);
CREATE OR REPLACE FUNCTION audit_log_prune_only() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (
        (OLD.chain_seq IS NOT NULL AND OLD.chain_seq <= (SELECT max(through_seq) FROM audit_checkpoints))
        OR (OLD.chain_seq IS NULL AND OLD."timestamp" < (SELECT max(cutoff) FROM audit_checkpoints))
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only (% rejected): only rows covered by a checkpoint may be pruned', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- A coordinator connecting as service_role prunes too; the trigger decides which rows.
GRANT DELETE ON audit_log TO service_role;
CREATE POLICY service_role_prune ON audit_log FOR DELETE TO service_role USING (true);
