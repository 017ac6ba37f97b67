-- The dashboard's agent type (a person signed in with an operator key) defaults to the
-- local-operator profile, as `cli` does: seeded after this migration from
-- `coord_domain::profiles::builtin` (`migrate::NEW_TYPE_DEFAULTS`), unless the database
-- already assigns that type a profile. No schema change.
SELECT 1;
