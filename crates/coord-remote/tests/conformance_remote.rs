//! The whole service conformance suite through the HTTP door: every case talks to a real
//! `coord serve` router on loopback through `RemoteClient`, with the store (SQLite)
//! behind it. Answers and errors must survive the round trip unchanged.

use async_trait::async_trait;
use coord_conformance::{Backend, Fixture, RawSql};
use coord_http::{ApiConfig, create_coordination_api};
use coord_remote::RemoteClient;
use coord_service::{Coordination, Coordinator};
use coord_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct RemoteBackend;

struct RawSqlite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    blocker: Mutex<Option<Connection>>,
}

const KEY: &str = "conformance-key";

#[async_trait]
impl Backend for RemoteBackend {
    async fn fixture(&self) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("coord.db");
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

    async fn wrap(&self, coord: Coordinator) -> Arc<dyn Coordination> {
        let config = ApiConfig {
            api_keys: vec![KEY.into()],
            ..ApiConfig::default()
        };
        let app = create_coordination_api(Arc::new(coord), &config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Arc::new(RemoteClient::new(&format!("http://{addr}"), Some(KEY.into())).expect("client"))
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

coord_conformance::conformance_suite!(RemoteBackend);
