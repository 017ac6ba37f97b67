-- The migrations' own bookkeeping sits in the public schema too, and Supabase's REST API
-- exposes every table there: it gets row-level security like every other table, readable
-- and writable only by the coordinator (its owner) and service_role.
ALTER TABLE coord_schema_migrations ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON coord_schema_migrations FOR ALL TO service_role USING (true) WITH CHECK (true);
REVOKE ALL ON coord_schema_migrations FROM PUBLIC, anon, authenticated;
