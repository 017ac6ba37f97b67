-- pgbench equivalent of `coord bench queue --raw` on PostgreSQL: claim the most urgent
-- task (FOR UPDATE SKIP LOCKED) and complete it, with an audit row per operation — the
-- statements coord-postgres runs. Prefill tasks first, e.g.
--   psql postgres://…/bench -c "INSERT INTO work_queue (task_id, task_type, task_description, priority,
--     status, pending_deps, created_by, created_by_type, created_at, max_attempts)
--     SELECT gen_random_uuid(), 'bench', 'task ' || i, 5, 'pending', 0, 'bench', 'bench', now(), 3
--     FROM generate_series(1, 200000) i"
--   pgbench -n -c 8 -j 2 -T 10 -M prepared -f docs/pgbench/queue.sql postgres://…/bench
BEGIN;
SELECT task_id, attempts, max_attempts FROM work_queue
WHERE status = 'claimed' AND claimed_until <= statement_timestamp()
ORDER BY claimed_until LIMIT 32 FOR UPDATE SKIP LOCKED;
UPDATE work_queue SET status = 'claimed', claimed_by = 'pgbench-' || :client_id, claimed_by_type = 'bench',
       claimed_at = statement_timestamp(), claimed_until = statement_timestamp() + make_interval(mins => 60),
       attempts = attempts + 1
WHERE task_id = (SELECT task_id FROM work_queue WHERE status = 'pending' AND pending_deps = 0
                 ORDER BY priority, created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING task_id \gset
INSERT INTO audit_log ("timestamp", agent_id, agent_type, operation, parameters, result, success, error_code, duration_ms)
VALUES (statement_timestamp(), 'pgbench-' || :client_id, 'bench', 'get_work', '{}', '{"success": true}', true, NULL, 0);
COMMIT;
BEGIN;
SELECT status, claimed_by FROM work_queue WHERE task_id = :task_id::uuid FOR UPDATE;
UPDATE work_queue SET status = 'completed', completed_at = statement_timestamp(), result = NULL, error_message = NULL
WHERE task_id = :task_id::uuid;
UPDATE work_queue SET pending_deps = pending_deps - 1
WHERE status = 'pending' AND task_id IN (SELECT task_id FROM task_dependencies WHERE depends_on = :task_id::uuid);
INSERT INTO audit_log ("timestamp", agent_id, agent_type, operation, parameters, result, success, error_code, duration_ms)
VALUES (statement_timestamp(), 'pgbench-' || :client_id, 'bench', 'complete_work', '{}', '{"success": true}', true, NULL, 0);
COMMIT;
