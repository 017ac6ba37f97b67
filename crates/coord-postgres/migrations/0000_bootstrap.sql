-- Supabase compatibility bootstrap. On Supabase all of this exists already and every
-- statement is a no-op; on a plain PostgreSQL it creates what Supabase would have.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['anon', 'authenticated', 'service_role'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN NOINHERIT', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                -- Another database of this cluster created it at the same moment.
                NULL;
            END;
        END IF;
    END LOOP;
END
$$;

DO $$
BEGIN
    -- service_role bypasses RLS on Supabase; mirror that where we may. Roles are shared
    -- by every database of the cluster, so another database's bootstrap may be altering
    -- the same row right now ("tuple concurrently updated", XX000): it sets the same value.
    IF NOT (SELECT rolbypassrls FROM pg_roles WHERE rolname = 'service_role') THEN
        ALTER ROLE service_role BYPASSRLS;
    END IF;
EXCEPTION WHEN insufficient_privilege OR internal_error THEN
    NULL;
END
$$;

CREATE SCHEMA IF NOT EXISTS auth;

CREATE OR REPLACE FUNCTION auth.role() RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(
        nullif(current_setting('request.jwt.claim.role', true), ''),
        (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
    )::text
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'supabase_realtime') THEN
        CREATE PUBLICATION supabase_realtime;
    END IF;
END
$$;
