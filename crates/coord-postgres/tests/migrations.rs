//! Migrations and the Supabase-compatible schema, on a real server.

mod pg_support;

use coord_domain::Identity;
use coord_domain::audit::AuditRecord;
use coord_postgres::{MIGRATIONS, PgOptions, PgStore};
use coord_store::{AuditStore as _, Maintenance};
use pg_support::TestDatabase;
use std::sync::Arc;

async fn skip() -> bool {
    !pg_support::available().await
}

#[tokio::test]
async fn migrations_apply_to_an_empty_database_once() {
    if skip().await {
        return;
    }
    let db = TestDatabase::empty().await;
    let first = PgStore::connect(&db.url, PgOptions::default()).await.unwrap();
    let all: Vec<i64> = MIGRATIONS.iter().map(|m| m.0 as i64).collect();
    assert_eq!(first.schema().applied_now, all);
    let second = PgStore::connect(&db.url, PgOptions::default()).await.unwrap();
    assert!(second.schema().applied_now.is_empty(), "a second start is a no-op");
    let c = pg_support::connect(&db.url).await;
    let rows = c
        .query("SELECT version FROM coord_schema_migrations ORDER BY version", &[])
        .await
        .unwrap();
    let recorded: Vec<i64> = rows.iter().map(|r| r.get::<_, i32>(0) as i64).collect();
    assert_eq!(recorded, all);
}

/// A type that gained a built-in default later (the dashboard's) gets it when the
/// database is upgraded past that migration, unless the type is assigned a profile.
#[tokio::test]
async fn types_that_gained_a_default_get_it_on_upgrade() {
    if skip().await {
        return;
    }
    let db = TestDatabase::empty().await;
    PgStore::connect(&db.url, PgOptions::default()).await.unwrap();
    let c = pg_support::connect(&db.url).await;
    let assigned = || async {
        c.query_opt(
            "SELECT profile FROM agent_profile_assignments WHERE kind = 'agent_type' AND value = 'dashboard'",
            &[],
        )
        .await
        .unwrap()
        .map(|r| r.get::<_, String>(0))
    };
    let version = MIGRATIONS.iter().find(|m| m.1 == "dashboard_profile").unwrap().0;
    for kept in [None, Some("least-privilege")] {
        // The database as the version before left it.
        c.execute("DELETE FROM agent_profile_assignments WHERE value = 'dashboard'", &[])
            .await
            .unwrap();
        if let Some(p) = kept {
            c.execute(
                "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
                 VALUES ('agent_type', 'dashboard', $1, now(), 'admin')",
                &[&p],
            )
            .await
            .unwrap();
        }
        c.execute("DELETE FROM coord_schema_migrations WHERE version >= $1", &[&version])
            .await
            .unwrap();
        let upgraded = PgStore::connect(&db.url, PgOptions::default()).await.unwrap();
        assert_eq!(upgraded.schema().applied_now.first(), Some(&(version as i64)));
        assert_eq!(assigned().await.as_deref(), Some(kept.unwrap_or("local-operator")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starts_migrate_exactly_once() {
    if skip().await {
        return;
    }
    let db = TestDatabase::empty().await;
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let url = db.url.clone();
            tokio::spawn(async move {
                PgStore::connect(
                    &url,
                    PgOptions {
                        pool_size: 1,
                        ..Default::default()
                    },
                )
                .await
            })
        })
        .collect();
    let mut applied = 0;
    for s in starts {
        let store = s.await.unwrap().expect("every concurrent start succeeds");
        applied += store.schema().applied_now.len();
    }
    assert_eq!(
        applied,
        MIGRATIONS.len(),
        "each migration applied by exactly one starter"
    );
}

#[tokio::test]
async fn supabase_bootstrap_roles_schema_and_publication() {
    if skip().await {
        return;
    }
    let db = TestDatabase::from_template().await;
    let c = pg_support::connect(&db.url).await;
    for role in ["anon", "authenticated", "service_role"] {
        let row = c
            .query_one("SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", &[&role])
            .await
            .unwrap();
        assert!(!row.get::<_, bool>(0), "{role} is NOLOGIN");
    }
    let role: Option<String> = c.query_one("SELECT auth.role()", &[]).await.unwrap().get(0);
    assert_eq!(role, None, "auth.role() exists and is null outside PostgREST");
    let tx_role: Option<String> = c
        .query_one(
            "SELECT set_config('request.jwt.claim.role', 'anon', false), auth.role()",
            &[],
        )
        .await
        .unwrap()
        .get(1);
    assert_eq!(tx_role.as_deref(), Some("anon"));
    let published: Vec<String> = c
        .query(
            "SELECT tablename::text FROM pg_publication_tables WHERE pubname = 'supabase_realtime' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(published, ["file_locks", "work_queue"]);
    let without_rls: Vec<String> = c
        .query(
            "SELECT relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relkind = 'r' AND NOT c.relrowsecurity",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(without_rls.is_empty(), "tables without RLS: {without_rls:?}");
}

#[tokio::test]
async fn row_level_security_and_grants_limit_the_application_roles() {
    if skip().await {
        return;
    }
    let db = TestDatabase::from_template().await;
    let c = pg_support::connect(&db.url).await;
    c.batch_execute(
        "INSERT INTO file_locks VALUES ('a.rs', 'agent', 'cli', NULL, NULL, now(), now() + interval '1 hour', 1);
         INSERT INTO audit_log (\"timestamp\", agent_id, agent_type, operation, parameters, result, success, duration_ms)
             VALUES (now(), 'agent', 'cli', 'acquire_lock', '{}', '{}', true, 1);",
    )
    .await
    .unwrap();
    let as_role = |role: &'static str, sql: &'static str| {
        let c = &c;
        async move {
            c.batch_execute("BEGIN").await.unwrap();
            c.batch_execute(&format!("SET LOCAL ROLE {role}")).await.unwrap();
            let r = c.query(sql, &[]).await;
            c.batch_execute("ROLLBACK").await.unwrap();
            r.map(|rows| rows.len())
                .map_err(|e| e.as_db_error().map(|d| d.code().code().to_string()).unwrap_or_default())
        }
    };
    assert_eq!(
        as_role("anon", "SELECT * FROM file_locks").await,
        Ok(1),
        "anon reads locks"
    );
    assert_eq!(as_role("authenticated", "SELECT * FROM work_queue").await, Ok(0));
    assert_eq!(
        as_role("anon", "SELECT * FROM work_queue").await,
        Err("42501".into()),
        "tasks carry payloads: anon reads locks only"
    );
    assert_eq!(
        as_role("anon", "SELECT * FROM audit_log").await,
        Err("42501".into()),
        "anon cannot read the audit log"
    );
    assert_eq!(
        as_role("anon", "SELECT * FROM agent_sessions").await,
        Err("42501".into())
    );
    assert_eq!(
        as_role("anon", "DELETE FROM file_locks RETURNING 1").await,
        Err("42501".into())
    );
    assert_eq!(as_role("service_role", "SELECT * FROM audit_log").await, Ok(1));
    assert_eq!(
        as_role(
            "service_role",
            "INSERT INTO file_locks VALUES ('b.rs', 'x', 'cli', NULL, NULL, now(), now(), 2) RETURNING 1"
        )
        .await,
        Ok(1),
        "service_role does everything on coordination tables"
    );
    for sql in [
        "UPDATE audit_log SET operation = 'x' RETURNING 1",
        "DELETE FROM audit_log RETURNING 1",
    ] {
        assert_eq!(
            as_role("service_role", sql).await,
            Err("42501".into()),
            "{sql} as service_role"
        );
    }
    // Even the owner (superuser here) is stopped by the triggers.
    for sql in [
        "UPDATE audit_log SET operation = 'x'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ] {
        let e = c.batch_execute(sql).await.unwrap_err();
        assert!(e.as_db_error().unwrap().message().contains("append-only"), "{sql}: {e}");
    }
}

#[tokio::test]
async fn recall_gin_indexes_take_each_write_directly() {
    if skip().await {
        return;
    }
    // A pending list (GIN's fast update) is scanned in full by every search: recall's
    // latency would follow autovacuum's timing (migrations 0021 and 0022).
    let db = TestDatabase::from_template().await;
    let c = pg_support::connect(&db.url).await;
    let rows = c
        .query(
            "SELECT c.relname::text, COALESCE(c.reloptions, '{}')
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
             WHERE i.indrelid = 'memories'::regclass AND a.amname = 'gin' ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(String, Vec<String>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let off = || vec!["fastupdate=off".to_string()];
    assert_eq!(
        got,
        vec![("memories_tags".into(), off()), ("memories_text".into(), off())]
    );
}

/// The chain reads its head by a statement that starts after its lock is held, which only
/// READ COMMITTED's per-statement snapshots make current: a database (or role, or server)
/// whose default isolation is REPEATABLE READ must not fork the chain — concurrent writers
/// each get the next position, linked to the previous row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_chain_holds_when_the_database_defaults_to_repeatable_read() {
    if skip().await {
        return;
    }
    let db = TestDatabase::from_template().await;
    let name = db
        .url
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let c = pg_support::connect(&db.url).await;
    c.batch_execute(&format!(
        "ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'repeatable read'"
    ))
    .await
    .unwrap();
    let store = PgStore::connect(
        &db.url,
        PgOptions {
            pool_size: 8,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // New sessions, as the store's pool opens, take the database's default.
    let fresh = pg_support::connect(&db.url).await;
    let level: String = fresh.query_one("SHOW transaction_isolation", &[]).await.unwrap().get(0);
    assert_eq!(level, "repeatable read");
    let store = Arc::new(store);
    let (writers, each) = (8, 25);
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..each {
                    let record = AuditRecord {
                        agent: Identity {
                            agent_id: format!("writer-{w}"),
                            agent_type: "test".into(),
                        },
                        operation: "acquire_lock",
                        parameters: serde_json::json!({"file_path": format!("src/{i}.rs")}),
                        result: serde_json::json!({"success": true}),
                        success: true,
                        error_code: None,
                        duration_ms: 0.0,
                        origin: None,
                    };
                    store.append_audit(None, record).await.expect("every append succeeds");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let row = c
        .query_one(
            "SELECT count(*) FILTER (WHERE agent_id LIKE 'writer-%'), count(*), count(DISTINCT chain_seq),
                    max(chain_seq) - min(chain_seq) + 1,
                    (SELECT count(*) FROM audit_log a JOIN audit_log b ON b.chain_seq = a.chain_seq - 1
                     WHERE a.prev_hash IS DISTINCT FROM b.row_hash)
             FROM audit_log",
            &[],
        )
        .await
        .unwrap();
    let (written, rows, positions, span, broken): (i64, i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    assert_eq!(written, (writers * each) as i64);
    assert_eq!((positions, span), (rows, rows), "one position per row, none skipped");
    assert_eq!(broken, 0, "every row links to the row before it");
}
