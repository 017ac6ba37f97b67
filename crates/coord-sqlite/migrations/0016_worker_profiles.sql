-- The built-in profiles of agents coord launches (worker-read-only, worker-write,
-- worker-verification, worker-design; docs/agents.md) are inserted right after this
-- migration from coord_domain::profiles::builtin, when missing. No schema change.
SELECT 1;
