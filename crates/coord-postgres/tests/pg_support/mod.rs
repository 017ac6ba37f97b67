//! Test databases on a real PostgreSQL server.
#![allow(dead_code)]

use coord_postgres::{PgOptions, PgStore};
use std::io::Write;
use tokio::sync::OnceCell;
use tokio_postgres::NoTls;

pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

pub fn admin_url() -> String {
    std::env::var("COORD_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_string())
}

/// Under CI (or when asked) a missing server is a failure, never a skip.
pub fn required() -> bool {
    ["CI", "COORD_REQUIRE_POSTGRES"].iter().any(|k| {
        std::env::var(k)
            .map(|v| !v.is_empty() && v != "0" && v != "false")
            .unwrap_or(false)
    })
}

/// `url` with its database name replaced.
pub fn url_for(url: &str, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let query = tail.find('?').map(|i| &tail[i..]).unwrap_or("");
    format!("{scheme}://{authority}/{db}{query}")
}

pub async fn try_connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

pub async fn connect(url: &str) -> tokio_postgres::Client {
    try_connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

static AVAILABLE: OnceCell<bool> = OnceCell::const_new();

/// Whether the server answers; says loudly when it does not and the tests skip.
pub async fn available() -> bool {
    *AVAILABLE
        .get_or_init(|| async {
            match try_connect(&admin_url()).await {
                Ok(_) => true,
                Err(e) if required() => {
                    panic!(
                        "PostgreSQL is required here (CI) but unreachable at {}: {e}",
                        admin_url()
                    )
                }
                Err(e) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "\n*** SKIPPING PostgreSQL tests: no server at {} ({e}).\n*** Start one or set \
                         COORD_TEST_DATABASE_URL; CI never skips these.\n",
                        admin_url()
                    );
                    false
                }
            }
        })
        .await
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Drops databases left behind by test processes that no longer run.
async fn drop_stale(admin: &tokio_postgres::Client) {
    let rows = admin
        .query("SELECT datname FROM pg_database WHERE datname LIKE 'coord\\_t%'", &[])
        .await
        .unwrap_or_default();
    for row in rows {
        let name: String = row.get(0);
        let pid = name.split('_').nth(2).and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = admin
                .execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"), &[])
                .await;
        }
    }
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// A database migrated once per test binary, copied for every test.
async fn template() -> &'static str {
    TEMPLATE
        .get_or_init(|| async {
            let admin = connect(&admin_url()).await;
            drop_stale(&admin).await;
            let name = unique("coord_tmpl");
            admin
                .execute(&format!("CREATE DATABASE \"{name}\""), &[])
                .await
                .expect("create template");
            let store = PgStore::connect(
                &url_for(&admin_url(), &name),
                PgOptions {
                    pool_size: 1,
                    ..Default::default()
                },
            )
            .await
            .expect("migrate the template");
            drop(store);
            name
        })
        .await
}

pub struct TestDatabase {
    pub name: String,
    pub url: String,
}

impl TestDatabase {
    pub async fn empty() -> TestDatabase {
        TestDatabase::create(None).await
    }

    pub async fn from_template() -> TestDatabase {
        let tmpl = template().await;
        TestDatabase::create(Some(tmpl)).await
    }

    async fn create(template: Option<&str>) -> TestDatabase {
        let admin = connect(&admin_url()).await;
        let name = unique("coord_test");
        let sql = match template {
            Some(t) => format!("CREATE DATABASE \"{name}\" TEMPLATE \"{t}\""),
            None => format!("CREATE DATABASE \"{name}\""),
        };
        admin.execute(&sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        TestDatabase {
            url: url_for(&admin_url(), &name),
            name,
        }
    }

    /// Cuts every session of this database and refuses new ones: an outage.
    pub async fn refuse_connections(&self) {
        let admin = connect(&admin_url()).await;
        admin
            .batch_execute(&format!(
                "ALTER DATABASE \"{0}\" ALLOW_CONNECTIONS false;
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{0}';",
                self.name
            ))
            .await
            .expect("cut the database off");
    }

    pub async fn allow_connections(&self) {
        let admin = connect(&admin_url()).await;
        admin
            .batch_execute(&format!("ALTER DATABASE \"{}\" ALLOW_CONNECTIONS true", self.name))
            .await
            .expect("reconnect the database");
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs inside the test's runtime, so the cleanup gets its own thread.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(admin) = try_connect(&admin_url()).await {
                    let _ = admin
                        .execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"), &[])
                        .await;
                }
            });
        })
        .join();
    }
}
