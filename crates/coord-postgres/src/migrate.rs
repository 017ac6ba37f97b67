//! Versioned migrations, applied at start under an advisory lock so that processes
//! starting together migrate exactly once.

use crate::{Fail, pg_error};
use coord_domain::{CoordError, CoordResult};
use deadpool_postgres::Object;

pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (0, "bootstrap", include_str!("../migrations/0000_bootstrap.sql")),
    (1, "core", include_str!("../migrations/0001_core.sql")),
    (2, "api_keys", include_str!("../migrations/0002_api_keys.sql")),
    (
        3,
        "queue_reads_need_a_login",
        include_str!("../migrations/0003_queue_reads_need_a_login.sql"),
    ),
    // Written with the typed-claims index of SQLite's migration 3 but never listed
    // here, so no PostgreSQL database had the index: listed now.
    (4, "typed_claims", include_str!("../migrations/0004_typed_claims.sql")),
    (5, "messages", include_str!("../migrations/0005_messages.sql")),
    (
        6,
        "bookkeeping_rls",
        include_str!("../migrations/0006_bookkeeping_rls.sql"),
    ),
    (7, "lock_scopes", include_str!("../migrations/0007_lock_scopes.sql")),
    (8, "teams", include_str!("../migrations/0008_teams.sql")),
    (9, "profiles", include_str!("../migrations/0009_profiles.sql")),
    (
        10,
        "approvals_and_key_origins",
        include_str!("../migrations/0010_approvals_and_key_origins.sql"),
    ),
    (11, "audit_chain", include_str!("../migrations/0011_audit_chain.sql")),
    (
        12,
        "guardrail_violations",
        include_str!("../migrations/0012_guardrail_violations.sql"),
    ),
    (
        13,
        "notifications",
        include_str!("../migrations/0013_notifications.sql"),
    ),
    (
        14,
        "audit_checkpoint_index",
        include_str!("../migrations/0014_audit_checkpoint_index.sql"),
    ),
    (
        15,
        "operation_guardrails",
        include_str!("../migrations/0015_operation_guardrails.sql"),
    ),
    (16, "memory", include_str!("../migrations/0016_memory.sql")),
    (17, "network", include_str!("../migrations/0017_network.sql")),
    (
        18,
        "worker_profiles",
        include_str!("../migrations/0018_worker_profiles.sql"),
    ),
    (
        19,
        "spawned_agents",
        include_str!("../migrations/0019_spawned_agents.sql"),
    ),
    (20, "workflows", include_str!("../migrations/0020_workflows.sql")),
    (
        21,
        "memory_recall",
        include_str!("../migrations/0021_memory_recall.sql"),
    ),
    (
        22,
        "memory_tags_index",
        include_str!("../migrations/0022_memory_tags_index.sql"),
    ),
    (23, "verification", include_str!("../migrations/0023_verification.sql")),
    (24, "github_sync", include_str!("../migrations/0024_github_sync.sql")),
    (
        25,
        "session_place",
        include_str!("../migrations/0025_session_place.sql"),
    ),
];

/// The migration that created the profile tables: the built-in profiles are seeded
/// right after it, from `coord_domain::profiles::builtin`.
const PROFILES: i32 = 9;

/// Migrations after which built-in profiles added since are seeded (those missing only:
/// a profile an administrator changed stays as it is).
const NEW_BUILTIN_PROFILES: &[i32] = &[18];

/// Arbitrary but fixed: the advisory lock key of `coord` migrations.
const MIGRATION_LOCK_KEY: i64 = 0x636f_6f72_645f_6d67;

/// Applies missing migrations; returns the versions it applied (empty when up to date).
pub async fn migrate(client: &mut Object) -> CoordResult<Vec<i32>> {
    let explain = |e: Fail| -> CoordError {
        match e {
            Fail::Coord(e) => e,
            Fail::Db(e) => {
                let base = pg_error(&e);
                CoordError::unavailable(format!(
                    "cannot apply the coordinator's migrations: {} (the database user needs CREATE on the database, \
                     and CREATEROLE unless the roles anon, authenticated and service_role already exist)",
                    e.as_db_error().map(|d| d.message().to_string()).unwrap_or(base.message)
                ))
            }
        }
    };
    apply(client).await.map_err(explain)
}

async fn apply(client: &mut Object) -> Result<Vec<i32>, Fail> {
    let tx = crate::Tx::new(client);
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS coord_schema_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM coord_schema_migrations", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some(newest) = applied.iter().max() {
        let known = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
        if *newest > known {
            return Err(Fail::Coord(CoordError::unavailable(format!(
                "the database schema (version {newest}) is newer than this coord understands ({known}); upgrade coord"
            ))));
        }
    }
    let mut done = Vec::new();
    for (version, name, sql) in MIGRATIONS.iter().filter(|(v, _, _)| !applied.contains(v)) {
        tx.batch_execute(sql).await?;
        if *version == PROFILES {
            crate::profiles::seed_builtin(&tx).await?;
        }
        if NEW_BUILTIN_PROFILES.contains(version) {
            crate::profiles::seed_missing_builtin(&tx).await?;
        }
        tx.execute(
            "INSERT INTO coord_schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await?;
        tracing::info!(version, name, "applied postgres migration");
        done.push(*version);
    }
    tx.commit().await?;
    Ok(done)
}
