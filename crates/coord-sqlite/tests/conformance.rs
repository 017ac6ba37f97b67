//! The service conformance suite on the embedded SQLite store.

#[path = "support/fixture.rs"]
mod fixture;

use async_trait::async_trait;
use coord_conformance::{Backend, Fixture};

struct SqliteBackend;

#[async_trait]
impl Backend for SqliteBackend {
    async fn fixture(&self) -> Fixture {
        fixture::sqlite_fixture()
    }
}

coord_conformance::conformance_suite!(SqliteBackend);
