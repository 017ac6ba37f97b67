//! Versioned schema migrations, tracked in `PRAGMA user_version`.

use crate::{Fail, R};
use coord_domain::CoordError;
use rusqlite::{Connection, TransactionBehavior};

/// `(version, name, sql)`: the files of `migrations/`, in order (the build script lists them).
const MIGRATIONS: &[(i64, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// The migration that created the profile tables: the built-in profiles are seeded
/// right after it, from `coord_domain::profiles::builtin`.
const PROFILES: i64 = 7;

/// Migrations after which built-in profiles added since are seeded (those missing only:
/// a profile an administrator changed stays as it is).
const NEW_BUILTIN_PROFILES: &[i64] = &[16];

/// Migrations after which these agent types get their built-in default profile, unless
/// the database already assigns them one (types that gained a default later).
const NEW_TYPE_DEFAULTS: &[(i64, &str)] = &[(23, "dashboard")];

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
    for (v, _, sql) in MIGRATIONS.iter().filter(|(v, _, _)| *v > current) {
        tx.execute_batch(sql)?;
        if *v == PROFILES {
            crate::profiles::seed_builtin(&tx)?;
        }
        if NEW_BUILTIN_PROFILES.contains(v) {
            crate::profiles::seed_missing_builtin(&tx)?;
        }
        for (_, agent_type) in NEW_TYPE_DEFAULTS.iter().filter(|(at, _)| at == v) {
            crate::profiles::seed_type_default(&tx, agent_type)?;
        }
        tracing::info!(version = v, "applied sqlite migration");
        applied.push(*v);
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coord_domain::Caller;
    use coord_store::bench::raw_audit_record;
    use rusqlite::OptionalExtension;

    /// A database as version 20 left it (audit ids by AUTOINCREMENT, indexes on the chain
    /// position and on lock expiry).
    fn at_version_20() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        for (_, _, sql) in MIGRATIONS.iter().filter(|(v, _, _)| *v <= 20) {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 20).unwrap();
        c
    }

    /// An audit row as version 20 wrote it (the id from AUTOINCREMENT).
    fn old_audit_row(c: &Connection) -> i64 {
        c.execute_batch(
            "INSERT INTO audit_log (timestamp, agent_id, agent_type, operation, parameters, result, success,
                 duration_ms, chain_seq, prev_hash, row_hash)
             SELECT 1, 'agent-a', 'test', 'acquire_lock', '{}', '{}', 1, 0,
                    coalesce(max(chain_seq), 0) + 1, 'prev', 'hash' FROM audit_log",
        )
        .unwrap();
        c.last_insert_rowid()
    }

    fn audit_row(c: &Connection) -> i64 {
        let who = Caller::new("agent-a", "test").validate().unwrap();
        crate::audit::insert(c, 1, &raw_audit_record(&who, "acquire_lock", serde_json::json!({}))).unwrap();
        c.last_insert_rowid()
    }

    fn objects(c: &Connection, kind: &str) -> Vec<String> {
        c.prepare(
            "SELECT name FROM sqlite_schema WHERE type = ?1 AND tbl_name IN ('audit_log', 'file_locks', 'audit_checkpoints')
             AND sql IS NOT NULL ORDER BY name",
        )
        .unwrap()
        .query_map([kind], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    /// A type that gained a built-in default later (the dashboard's) gets it on upgrade,
    /// unless the database already assigns that type a profile.
    #[test]
    fn types_that_gained_a_default_get_it_on_upgrade() {
        let assigned = |c: &Connection| -> Option<String> {
            c.query_row(
                "SELECT profile FROM agent_profile_assignments WHERE kind = 'agent_type' AND value = 'dashboard'",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
        };
        for kept in [None, Some("least-privilege")] {
            let mut c = at_version_20();
            crate::profiles::seed_builtin(&c).unwrap();
            c.execute("DELETE FROM agent_profile_assignments WHERE value = 'dashboard'", [])
                .unwrap();
            if let Some(p) = kept {
                c.execute(
                    "INSERT INTO agent_profile_assignments VALUES ('agent_type', 'dashboard', ?1, 0, 'admin')",
                    [p],
                )
                .unwrap();
            }
            apply(&mut c).unwrap();
            assert_eq!(assigned(&c).as_deref(), Some(kept.unwrap_or("local-operator")));
        }
    }

    /// Migration 0021 rebuilds `audit_log` without AUTOINCREMENT: the rows, their ids
    /// and the chain stay; the indexes it keeps and the append-only triggers are back;
    /// the next row follows the newest.
    #[test]
    fn the_audit_table_keeps_its_rows_ids_and_guards() {
        let mut c = at_version_20();
        c.execute_batch(
            "INSERT INTO audit_log (timestamp, agent_id, agent_type, operation, parameters, result, success, duration_ms)
             VALUES (1, 'legacy', 'test', 'heartbeat', '{}', '{}', 1, 0);",
        )
        .unwrap();
        let ids: Vec<i64> = (0..3).map(|_| old_audit_row(&c)).collect();
        assert_eq!(ids, [2, 3, 4]);
        let (indexes, triggers) = (objects(&c, "index"), objects(&c, "trigger"));
        // 21 and every later migration (only 21 touches the audit table).
        assert_eq!(apply(&mut c).unwrap().first(), Some(&21));

        let rows: Vec<(i64, Option<i64>)> = c
            .prepare("SELECT id, chain_seq FROM audit_log ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows, [(1, None), (2, Some(1)), (3, Some(2)), (4, Some(3))]);
        assert_eq!(audit_row(&c), 5, "the next id follows the newest");
        let gone = ["audit_log_chain_seq", "file_locks_expires_at"];
        let kept: Vec<String> = indexes
            .iter()
            .filter(|i| !gone.contains(&i.as_str()))
            .cloned()
            .collect();
        assert_eq!(indexes.len(), kept.len() + 2);
        assert_eq!(objects(&c, "index"), kept);
        assert_eq!(objects(&c, "trigger"), triggers, "the append-only triggers are back");
        assert!(
            c.execute("UPDATE audit_log SET agent_id = 'x' WHERE id = 2", [])
                .is_err()
        );
        assert!(c.execute("DELETE FROM audit_log WHERE id = 2", []).is_err());
        let autoincrement: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_sequence WHERE name = 'audit_log'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(autoincrement, 0, "no sequence row written any more");
    }

    /// A database whose prune removed every row before the migration: the old table's
    /// sequence is gone with it, so its checkpoint keeps the next id, and no id is given
    /// twice.
    #[test]
    fn ids_are_not_reused_after_a_prune_emptied_the_log() {
        let mut c = at_version_20();
        for _ in 0..4 {
            old_audit_row(&c);
        }
        c.execute_batch(
            "INSERT INTO audit_checkpoints (created_at, through_seq, through_hash, cutoff, pruned_rows, key_id, signature)
             SELECT 2, chain_seq, row_hash, 2, 4, 'k', 's' FROM audit_log WHERE chain_seq = 4;
             DELETE FROM audit_log;",
        )
        .unwrap();
        apply(&mut c).unwrap();
        let next: i64 = c
            .query_row("SELECT next_id FROM audit_checkpoints", [], |r| r.get(0))
            .unwrap();
        assert_eq!(next, 5);
        assert_eq!(audit_row(&c), 5, "not 1: ids 1 to 4 were given before");
        let seq: i64 = c
            .query_row("SELECT chain_seq FROM audit_log WHERE id = 5", [], |r| r.get(0))
            .unwrap();
        assert_eq!(seq, 5, "the chain continues from the checkpoint");
    }
}
