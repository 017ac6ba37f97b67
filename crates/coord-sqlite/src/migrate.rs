//! Versioned schema migrations, tracked in `PRAGMA user_version`.

use crate::{Fail, R};
use coord_domain::CoordError;
use rusqlite::{Connection, TransactionBehavior};

const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/0001_init.sql")),
    (2, include_str!("../migrations/0002_api_keys.sql")),
    (3, include_str!("../migrations/0003_typed_claims.sql")),
    (4, include_str!("../migrations/0004_messages.sql")),
    (5, include_str!("../migrations/0005_lock_scopes.sql")),
    (6, include_str!("../migrations/0006_teams.sql")),
    (7, include_str!("../migrations/0007_profiles.sql")),
    (8, include_str!("../migrations/0008_approvals_and_key_origins.sql")),
    (9, include_str!("../migrations/0009_audit_chain.sql")),
    (10, include_str!("../migrations/0010_guardrail_violations.sql")),
    (11, include_str!("../migrations/0011_notifications.sql")),
    (12, include_str!("../migrations/0012_audit_checkpoint_index.sql")),
    (13, include_str!("../migrations/0013_operation_guardrails.sql")),
    (14, include_str!("../migrations/0014_memory.sql")),
    (15, include_str!("../migrations/0015_network.sql")),
    (16, include_str!("../migrations/0016_worker_profiles.sql")),
    (17, include_str!("../migrations/0017_spawned_agents.sql")),
    (18, include_str!("../migrations/0018_workflows.sql")),
    (19, include_str!("../migrations/0019_verification.sql")),
    (20, include_str!("../migrations/0020_github_sync.sql")),
];

/// The migration that created the profile tables: the built-in profiles are seeded
/// right after it, from `coord_domain::profiles::builtin`.
const PROFILES: i64 = 7;

/// Migrations after which built-in profiles added since are seeded (those missing only:
/// a profile an administrator changed stays as it is).
const NEW_BUILTIN_PROFILES: &[i64] = &[16];

pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Applies missing migrations and returns their versions. Safe when several processes
/// start at once: the version is re-read under the write lock, so exactly one migrates.
pub fn apply(conn: &mut Connection) -> R<Vec<i64>> {
    let newer = |v: i64| {
        Fail::Coord(CoordError::unavailable(format!(
            "the database schema (version {v}) is newer than this coord understands ({SCHEMA_VERSION}); upgrade coord"
        )))
    };
    let seen = version(conn)?;
    if seen == SCHEMA_VERSION {
        return Ok(Vec::new());
    }
    if seen > SCHEMA_VERSION {
        return Err(newer(seen));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current = version(&tx)?;
    if current > SCHEMA_VERSION {
        return Err(newer(current));
    }
    let mut applied = Vec::new();
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.execute_batch(sql)?;
        if *v == PROFILES {
            crate::profiles::seed_builtin(&tx)?;
        }
        if NEW_BUILTIN_PROFILES.contains(v) {
            crate::profiles::seed_missing_builtin(&tx)?;
        }
        tracing::info!(version = v, "applied sqlite migration");
        applied.push(*v);
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(applied)
}
