-- The audit trail is hash-chained: every row written from now on has a position in the
-- chain (chain_seq, 1, 2, ...), the hash of the row before it and its own hash over its
-- canonical content and that link (coord_domain::audit_chain). Writers take an advisory
-- lock before reading the chain's head, so concurrent transactions keep it linear. Rows
-- written before this migration have no position; `coord audit verify` reports them.
ALTER TABLE audit_log ADD COLUMN chain_seq bigint;
ALTER TABLE audit_log ADD COLUMN prev_hash text;
ALTER TABLE audit_log ADD COLUMN row_hash text;
CREATE UNIQUE INDEX audit_log_chain_seq ON audit_log (chain_seq);

-- What a prune removed: the chain up to through_seq, whose last hash is through_hash,
-- signed (HMAC-SHA-256 under the audit key, kept outside the database) so that the
-- remaining chain still verifies and a forged checkpoint does not.
CREATE TABLE audit_checkpoints (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at   timestamptz NOT NULL,
    through_seq  bigint NOT NULL,
    through_hash text NOT NULL,
    cutoff       timestamptz NOT NULL,
    pruned_rows  bigint NOT NULL,
    key_id       text NOT NULL,
    signature    text NOT NULL
);
CREATE TRIGGER audit_checkpoints_no_update_delete BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
ALTER TABLE audit_checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_read_append ON audit_checkpoints FOR SELECT TO service_role USING (true);
CREATE POLICY service_role_append ON audit_checkpoints FOR INSERT TO service_role WITH CHECK (true);
GRANT SELECT, INSERT ON audit_checkpoints TO service_role;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_checkpoints FROM PUBLIC, anon, authenticated, service_role;

-- A row may be deleted only once a checkpoint covers it (a prune writes the checkpoint
-- first, in the same transaction); updates and TRUNCATE stay refused.
CREATE FUNCTION audit_log_prune_only() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (
        SELECT 1 FROM audit_checkpoints c
        WHERE (OLD.chain_seq IS NOT NULL AND OLD.chain_seq <= c.through_seq)
           OR (OLD.chain_seq IS NULL AND OLD."timestamp" < c.cutoff)
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only (% rejected): only rows covered by a checkpoint may be pruned', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
DROP TRIGGER audit_log_no_update_delete ON audit_log;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_prune_only();
