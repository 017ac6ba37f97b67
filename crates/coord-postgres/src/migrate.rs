//! Versioned migrations, applied at start under an advisory lock so that processes
//! starting together migrate exactly once.

use crate::{Fail, pg_error};
use coord_domain::{CoordError, CoordResult};
use deadpool_postgres::Object;

/// `(version, name, sql)`: the files of `migrations/`, in order (the build script lists them).
pub const MIGRATIONS: &[(i32, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// The migration that created the profile tables: the built-in profiles are seeded
/// right after it, from `coord_domain::profiles::builtin`.
const PROFILES: i32 = 9;

/// Migrations after which built-in profiles added since are seeded (those missing only:
/// a profile an administrator changed stays as it is).
const NEW_BUILTIN_PROFILES: &[i32] = &[18];

/// Migrations after which these agent types get their built-in default profile, unless
/// the database already assigns them one (types that gained a default later).
const NEW_TYPE_DEFAULTS: &[(i32, &str)] = &[(26, "dashboard")];

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
        for (_, agent_type) in NEW_TYPE_DEFAULTS.iter().filter(|(at, _)| at == version) {
            crate::profiles::seed_type_default(&tx, agent_type).await?;
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
