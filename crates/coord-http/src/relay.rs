//! `GET /mcp/stdio` on the per-repository coordinator's socket: a `coord mcp` process of
//! this user upgrades its connection and relays its agent's MCP session here (see
//! `coord_mcp::relay`). Only on a server built for local peers (`ApiConfig::local_peers`,
//! whose listener admits this user's processes only): it trusts the identity named in
//! the query, as the embedded coordinator trusts its process's.

use crate::{Activity, Running};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use coord_domain::{CoordError, ErrorCode};
use coord_mcp::relay::{RELAY_VERSION, RelayRequest, UPGRADE, VERSION_HEADER};
use coord_service::Coordination;
use std::sync::Arc;

/// Answers `101 Switching Protocols` and serves the MCP session on the upgraded
/// connection, counted as activity (the server does not stop when idle) while it lasts.
pub async fn upgrade(coord: Arc<dyn Coordination>, mut req: Request) -> Response {
    let asked = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case(UPGRADE));
    if !asked {
        let e = CoordError::new(
            ErrorCode::InvalidArgument,
            format!("this path is the relay of `coord mcp`: it takes `Upgrade: {UPGRADE}`"),
        );
        return crate::api::error_response(&e);
    }
    let options = serde_urlencoded::from_str::<RelayRequest>(req.uri().query().unwrap_or(""))
        .map_err(|e| CoordError::new(ErrorCode::InvalidArgument, format!("the relay's query: {e}")))
        .and_then(|r| r.options());
    let options = match options {
        Ok(o) => o,
        Err(e) => return crate::api::error_response(&e),
    };
    let running = req.extensions().get::<Activity>().map(Running::start);
    let upgraded = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let _running = running;
        let io = match upgraded.await {
            Ok(u) => hyper_util::rt::TokioIo::new(u),
            Err(e) => return tracing::warn!(error = %e, "a relay's upgrade failed"),
        };
        let (reader, writer) = tokio::io::split(io);
        if let Err(e) = coord_mcp::serve_relayed(coord, options, reader, writer).await {
            tracing::info!(error = %e, "a relayed MCP session ended");
        }
    });
    (
        StatusCode::SWITCHING_PROTOCOLS,
        [
            (header::CONNECTION, "upgrade".to_string()),
            (header::UPGRADE, UPGRADE.to_string()),
            (
                header::HeaderName::from_static(VERSION_HEADER),
                RELAY_VERSION.to_string(),
            ),
        ],
    )
        .into_response()
}
