-- The independent limit for `coord bench locks` on PostgreSQL: the schema of the leanest
-- lock pair we know with coord's guarantees (see locks_postgres.sql).
CREATE TABLE locks (
    path text PRIMARY KEY, agent text NOT NULL, expires_at timestamptz NOT NULL, token bigint NOT NULL
);
CREATE TABLE pattern_locks (pattern text PRIMARY KEY, agent text NOT NULL, expires_at timestamptz NOT NULL);
CREATE SEQUENCE fencing_token;
CREATE TABLE audit (
    seq bigint PRIMARY KEY, ts timestamptz NOT NULL, agent text NOT NULL, operation text NOT NULL,
    parameters jsonb NOT NULL, result jsonb NOT NULL, success boolean NOT NULL,
    prev_hash text NOT NULL, row_hash text NOT NULL
);
CREATE INDEX audit_ts ON audit (ts);
CREATE INDEX audit_agent ON audit (agent, seq);
CREATE INDEX audit_operation ON audit (operation, seq);
INSERT INTO audit VALUES (0, now(), '', 'genesis', '{}', '{}', true, '', repeat('0', 64));
