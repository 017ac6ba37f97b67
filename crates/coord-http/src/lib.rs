//! The HTTP door, `coord serve`: one router built by [`create_coordination_api`] from an
//! [`ApiConfig`]. It calls the service and nothing else.
//!
//! Routes: `GET /health`; `/mcp`, the MCP server over streamable HTTP.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use coord_mcp::{CoordMcp, IdentityConfig, McpOptions};
use coord_service::Coordination;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// Server configuration (the spec's `ApiConfig`).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub host: String,
    pub port: u16,
    /// `Host` header values `/mcp` accepts (DNS-rebinding protection); loopback names
    /// by default, extended with the bind host.
    pub mcp_allowed_hosts: Vec<String>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            host: "127.0.0.1".into(),
            port: 8081,
            mcp_allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        }
    }
}

#[derive(Clone)]
struct AppState {
    coord: Arc<dyn Coordination>,
}

async fn health(State(state): State<AppState>) -> Response {
    // A status read proves the store answers; its result is not exposed.
    let probe = coord_domain::Caller::new("health-check", "http");
    match state.coord.check_locks(&probe, Default::default()).await {
        Ok(_) => Json(serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "unavailable", "version": env!("CARGO_PKG_VERSION"), "error": e.code})),
        )
            .into_response(),
    }
}

/// Builds the whole HTTP surface over a coordinator.
pub fn create_coordination_api(coord: Arc<dyn Coordination>, config: &ApiConfig) -> Router {
    let mcp_coord = coord.clone();
    let mut hosts = config.mcp_allowed_hosts.clone();
    if !hosts.contains(&config.host) {
        hosts.push(config.host.clone());
    }
    let mcp = StreamableHttpService::new(
        move || {
            Ok(CoordMcp::new(
                mcp_coord.clone(),
                McpOptions::http(IdentityConfig::per_client()),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_allowed_hosts(hosts),
    );
    Router::new()
        .route("/health", get(health))
        .nest_service("/mcp", mcp)
        .with_state(AppState { coord })
}

/// Serves until `shutdown` resolves; in-flight requests finish first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
