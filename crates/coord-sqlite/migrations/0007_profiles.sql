-- Agent profiles (what an agent may do), their assignments to agent ids and agent types,
-- and the resource usage counted against profile limits per agent session. The built-in
-- profiles and type defaults are seeded by migrate.rs from coord-domain's one definition.
CREATE TABLE agent_profiles (
    name        TEXT PRIMARY KEY,
    agent_type  TEXT NOT NULL,
    trust_level INTEGER NOT NULL CHECK (trust_level BETWEEN 0 AND 4),
    definition  TEXT NOT NULL,
    builtin     INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE agent_profile_assignments (
    kind        TEXT NOT NULL CHECK (kind IN ('agent', 'agent_type')),
    value       TEXT NOT NULL,
    profile     TEXT NOT NULL REFERENCES agent_profiles (name),
    assigned_at INTEGER NOT NULL,
    assigned_by TEXT NOT NULL,
    PRIMARY KEY (kind, value)
) WITHOUT ROWID;

CREATE TABLE resource_usage (
    scope    TEXT NOT NULL,
    resource TEXT NOT NULL,
    item     TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (scope, resource, item)
) WITHOUT ROWID;
