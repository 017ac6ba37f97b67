-- pgbench equivalent of `coord bench locks --raw` on PostgreSQL: one acquire+release
-- pair with an audit row per operation, the statements coord-postgres runs.
-- Run against a database migrated by coord (e.g. `coord --db postgres://…/bench migrate`):
--   pgbench -n -c 8 -j 2 -T 10 -M prepared -f docs/pgbench/locks.sql postgres://…/bench
\set p random(1, 1000)
BEGIN;
WITH serial AS (SELECT pg_advisory_xact_lock(hashtextextended('src/bench/file-' || :p || '.rs', 0)))
INSERT INTO file_locks AS l (file_path, agent_id, agent_type, session_id, reason, locked_at, expires_at, fencing_token)
SELECT 'src/bench/file-' || :p || '.rs', 'pgbench-' || :client_id, 'bench',
       (SELECT session_id FROM agent_sessions WHERE agent_id = 'pgbench-' || :client_id), NULL,
       statement_timestamp(), statement_timestamp() + make_interval(mins => 120), nextval('fencing_token_seq')
FROM serial
ON CONFLICT (file_path) DO UPDATE SET
    agent_id = EXCLUDED.agent_id, agent_type = EXCLUDED.agent_type, session_id = EXCLUDED.session_id,
    reason = EXCLUDED.reason, locked_at = EXCLUDED.locked_at, expires_at = EXCLUDED.expires_at,
    fencing_token = EXCLUDED.fencing_token
WHERE l.expires_at <= statement_timestamp() OR l.agent_id = EXCLUDED.agent_id
RETURNING fencing_token;
INSERT INTO audit_log ("timestamp", agent_id, agent_type, operation, parameters, result, success, error_code, duration_ms)
VALUES (statement_timestamp(), 'pgbench-' || :client_id, 'bench', 'acquire_lock', '{}', '{"success": true}', true, NULL, 0);
COMMIT;
BEGIN;
DELETE FROM file_locks
WHERE file_path = 'src/bench/file-' || :p || '.rs' AND agent_id = 'pgbench-' || :client_id
  AND expires_at > statement_timestamp()
RETURNING file_path;
INSERT INTO audit_log ("timestamp", agent_id, agent_type, operation, parameters, result, success, error_code, duration_ms)
VALUES (statement_timestamp(), 'pgbench-' || :client_id, 'bench', 'release_lock', '{}', '{"success": true}', true, NULL, 0);
COMMIT;
