//! The whole service conformance suite through the HTTP door: every case talks to a real
//! `coord serve` router on loopback through `RemoteClient`, with the store (SQLite)
//! behind it. Answers and errors must survive the round trip unchanged.

#[path = "../../coord-sqlite/tests/support/fixture.rs"]
mod fixture;

use async_trait::async_trait;
use coord_conformance::{Backend, Fixture};
use coord_http::{ApiConfig, create_coordination_api};
use coord_remote::RemoteClient;
use coord_service::{Coordination, Coordinator};
use std::sync::Arc;

struct RemoteBackend;

const KEY: &str = "conformance-key";

#[async_trait]
impl Backend for RemoteBackend {
    async fn fixture(&self) -> Fixture {
        fixture::sqlite_fixture()
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

    fn door(&self) -> coord_conformance::Door {
        coord_conformance::Door::Http
    }
}

coord_conformance::conformance_suite!(RemoteBackend);
