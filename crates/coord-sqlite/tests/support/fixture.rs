//! The conformance fixture on SQLite: a store on a fresh file, and raw access to that
//! file for the cases that reach under the service. Shared with the suite's HTTP
//! instantiation in coord-remote (included there by path).

use async_trait::async_trait;
use coord_conformance::{Fixture, RawSql};
use coord_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct RawSqlite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    /// A connection holding the write lock while the store is "broken".
    blocker: Mutex<Option<Connection>>,
}

pub fn sqlite_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("coord.db");
    // A short busy timeout so the outage case answers quickly.
    let store = SqliteStore::open_with(
        &path,
        SqliteOptions {
            busy_timeout: Duration::from_millis(200),
        },
    )
    .expect("open store");
    Fixture {
        store: Arc::new(store),
        raw: Box::new(RawSqlite {
            _dir: dir,
            path,
            blocker: Mutex::new(None),
        }),
    }
}

#[async_trait]
impl RawSql for RawSqlite {
    async fn execute(&self, sql: &str) -> Result<u64, String> {
        let c = Connection::open(&self.path).map_err(|e| e.to_string())?;
        c.execute(sql, []).map(|n| n as u64).map_err(|e| e.to_string())
    }

    async fn break_store(&self) {
        let c = Connection::open(&self.path).expect("open");
        c.execute_batch("BEGIN EXCLUSIVE").expect("take the write lock");
        *self.blocker.lock().unwrap() = Some(c);
    }

    async fn heal_store(&self) {
        if let Some(c) = self.blocker.lock().unwrap().take() {
            c.execute_batch("ROLLBACK").expect("release the write lock");
        }
    }
}
