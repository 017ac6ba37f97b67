-- Tasks carry their payloads (input_data, result), so reading the queue needs a key on the
-- HTTP API; the database follows suit: `anon` keeps reading locks only, `authenticated`
-- (a logged-in Supabase user, the database's counterpart of a key holder) reads the queue.
DROP POLICY IF EXISTS public_read ON work_queue;
DROP POLICY IF EXISTS public_read ON task_dependencies;
CREATE POLICY authenticated_read ON work_queue FOR SELECT TO authenticated USING (true);
CREATE POLICY authenticated_read ON task_dependencies FOR SELECT TO authenticated USING (true);
REVOKE SELECT ON work_queue, task_dependencies FROM anon;
