-- Managed API keys: only the SHA-256 of each secret is stored.
CREATE TABLE api_keys (
    key_id     text PRIMARY KEY,
    key_hash   text NOT NULL UNIQUE,
    agent_id   text NOT NULL,
    agent_type text NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    revoked_at timestamptz
);
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON api_keys FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON api_keys TO service_role;
REVOKE ALL ON api_keys FROM PUBLIC, anon, authenticated;
