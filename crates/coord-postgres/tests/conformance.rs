//! The service conformance suite on PostgreSQL: every case gets its own database,
//! copied from a template migrated once per test binary, and dropped afterwards.
//!
//! Server: `COORD_TEST_DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/postgres).
//! Without a reachable server the cases are skipped with a message on stderr — except
//! under CI (`CI` or `COORD_REQUIRE_POSTGRES` set), where they fail.

mod pg_support;

use async_trait::async_trait;
use coord_conformance::{Backend, Fixture, RawSql};
use coord_postgres::{PgOptions, PgStore};
use pg_support::TestDatabase;
use std::sync::Arc;
use std::time::Duration;

struct PgBackend;

struct RawPg {
    db: TestDatabase,
}

#[async_trait]
impl Backend for PgBackend {
    async fn available(&self) -> bool {
        pg_support::available().await
    }

    async fn fixture(&self) -> Fixture {
        let db = TestDatabase::from_template().await;
        let options = PgOptions {
            pool_size: 8,
            timeout: Duration::from_secs(3),
        };
        let store = PgStore::connect(&db.url, options)
            .await
            .expect("connect to the test database");
        Fixture {
            store: Arc::new(store),
            raw: Box::new(RawPg { db }),
        }
    }
}

#[async_trait]
impl RawSql for RawPg {
    async fn execute(&self, sql: &str) -> Result<u64, String> {
        let client = pg_support::connect(&self.db.url).await;
        client.execute(sql, &[]).await.map_err(|e| {
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_else(|| e.to_string())
        })
    }

    async fn break_store(&self) {
        self.db.refuse_connections().await;
    }

    async fn heal_store(&self) {
        self.db.allow_connections().await;
    }
}

coord_conformance::conformance_suite!(PgBackend);
