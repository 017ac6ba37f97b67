-- The independent limit for `coord bench locks` on PostgreSQL, for pgbench: the leanest
-- acquire+release pair we know that gives coord's guarantees.
-- - Durable before it answers: one transaction per operation, committed asynchronously so
--   that the chain's lock is not held through the WAL flush, then a transaction that writes
--   WAL of its own (pg_logical_emit_message) committed with the server's synchronous_commit:
--   its flush covers the operation's, and the client waits for it (coord's
--   `Durability::FlushAfter`, crates/coord-postgres/src/durability.rs).
-- - Each operation sent as one pipeline (one round trip), as coord sends its lock, audit
--   row and commit together.
-- - An atomic acquire respecting a live holder (an upsert that updates only an expired
--   row or the caller's own) and live pattern locks.
-- - Fencing tokens in acquisition order: drawn from a sequence while the transaction
--   holds the audit chain's lock, which orders every write (as coord's chain lock does).
-- - One audit row per operation, parameters and result as JSON, hash-chained (SHA-256 of
--   the previous hash and the row), indexed by time, agent and operation.
-- By hand: psql -f locks_postgres_schema.sql DB, then
--   pgbench -n -c 8 -j 2 -T 10 -M prepared -f locks_postgres.sql -D paths=1000 DB
\set p random(0, :paths - 1)
\startpipeline
BEGIN;
SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(1);
WITH acq AS (
    INSERT INTO locks AS l (path, agent, expires_at, token)
    SELECT 'src/bench/file-' || :p || '.rs', 'pgbench-' || :client_id, now() + interval '2 hours',
           nextval('fencing_token')
    WHERE NOT EXISTS (SELECT 1 FROM pattern_locks x WHERE x.expires_at > now()
                      AND x.agent <> 'pgbench-' || :client_id
                      AND 'src/bench/file-' || :p || '.rs' LIKE x.pattern)
    ON CONFLICT (path) DO UPDATE SET agent = EXCLUDED.agent, expires_at = EXCLUDED.expires_at,
        token = EXCLUDED.token
    WHERE l.expires_at <= now() OR l.agent = EXCLUDED.agent
    RETURNING token),
head AS (SELECT seq, row_hash FROM audit ORDER BY seq DESC LIMIT 1),
row AS (SELECT head.seq + 1 AS seq, head.row_hash AS prev, now() AS ts, 'pgbench-' || :client_id AS agent,
               jsonb_build_object('file_path', 'src/bench/file-' || :p || '.rs') AS parameters,
               jsonb_build_object('success', acq.token IS NOT NULL, 'fencing_token', acq.token,
                                  'file_path', 'src/bench/file-' || :p || '.rs') AS result,
               acq.token IS NOT NULL AS success
        FROM head LEFT JOIN acq ON true)
INSERT INTO audit (seq, ts, agent, operation, parameters, result, success, prev_hash, row_hash)
SELECT seq, ts, agent, 'acquire_lock', parameters, result, success, prev,
       encode(sha256(convert_to(concat_ws(E'\n', prev, seq, ts, agent, 'acquire_lock', parameters, result, success), 'UTF8')), 'hex')
FROM row;
COMMIT;
SELECT pg_logical_emit_message(true, 'coord', ''::text);
\endpipeline
\startpipeline
BEGIN;
SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(1);
WITH rel AS (
    DELETE FROM locks WHERE path = 'src/bench/file-' || :p || '.rs' AND agent = 'pgbench-' || :client_id
        AND expires_at > now()
    RETURNING token),
head AS (SELECT seq, row_hash FROM audit ORDER BY seq DESC LIMIT 1),
row AS (SELECT head.seq + 1 AS seq, head.row_hash AS prev, now() AS ts, 'pgbench-' || :client_id AS agent,
               jsonb_build_object('file_path', 'src/bench/file-' || :p || '.rs') AS parameters,
               jsonb_build_object('success', (SELECT count(*) FROM rel) > 0) AS result,
               (SELECT count(*) FROM rel) > 0 AS success
        FROM head)
INSERT INTO audit (seq, ts, agent, operation, parameters, result, success, prev_hash, row_hash)
SELECT seq, ts, agent, 'release_lock', parameters, result, success, prev,
       encode(sha256(convert_to(concat_ws(E'\n', prev, seq, ts, agent, 'release_lock', parameters, result, success), 'UTF8')), 'hex')
FROM row;
COMMIT;
SELECT pg_logical_emit_message(true, 'coord', ''::text);
\endpipeline
