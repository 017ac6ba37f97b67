//! `GET /mcp/stdio` on the per-repository coordinator's socket: a `coord mcp` process of
//! this user upgrades its connection and relays its agent's MCP session here (see
//! `coord_mcp::relay`). Only on a server built for local peers (`ApiConfig::local_peers`,
//! whose listener admits this user's processes only): it trusts the identity named in
//! the query, as the embedded coordinator trusts its process's.

use crate::{Activity, Running};
use axum::extract::{ConnectInfo, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use coord_domain::{CoordError, ErrorCode};
use coord_mcp::relay::{RELAY_VERSION, RelayRequest, UPGRADE, VERSION_HEADER};
use coord_service::Coordination;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// What a connection of the coordinator's socket carries into its requests: a duplicate
/// of its socket, for a relay that hands its agent's pipes over
/// ([`coord_mcp::handover`]); `None` if it could not be duplicated.
#[derive(Clone)]
pub struct LocalPeer(Option<Arc<OwnedFd>>);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, crate::SameUserListener>> for LocalPeer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, crate::SameUserListener>) -> Self {
        use std::os::fd::AsFd as _;
        LocalPeer(stream.io().as_fd().try_clone_to_owned().ok().map(Arc::new))
    }
}

/// A socket of our own on the connection `socket` duplicates, registered with the runtime.
fn own_socket(socket: &OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std_socket = std::os::unix::net::UnixStream::from(socket.try_clone()?);
    std_socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std_socket)
}

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
    let request = serde_urlencoded::from_str::<RelayRequest>(req.uri().query().unwrap_or(""))
        .map_err(|e| CoordError::new(ErrorCode::InvalidArgument, format!("the relay's query: {e}")));
    let (options, direct) = match request.and_then(|r| Ok((r.options()?, r.direct))) {
        Ok(o) => o,
        Err(e) => return crate::api::error_response(&e),
    };
    // A hand-over needs the connection's own socket (hyper's upgraded stream hides it).
    let socket = match (direct, req.extensions().get::<ConnectInfo<LocalPeer>>()) {
        (false, _) => None,
        (true, Some(ConnectInfo(LocalPeer(Some(fd))))) => Some(fd.clone()),
        (true, _) => {
            let e = CoordError::new(
                ErrorCode::InvalidArgument,
                "this server cannot take an agent's pipes (only the repository's coordinator socket can)",
            );
            return crate::api::error_response(&e);
        }
    };
    let running = req.extensions().get::<Activity>().map(Running::start);
    let upgraded = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let _running = running;
        let io = match upgraded.await {
            Ok(u) => hyper_util::rt::TokioIo::new(u),
            Err(e) => return tracing::warn!(error = %e, "a relay's upgrade failed"),
        };
        let served = match socket {
            Some(socket) => {
                // The socket outlives hyper's stream through our duplicate of it; the
                // stream is dropped first so that nothing else reads it.
                drop(io);
                match own_socket(&socket) {
                    Ok(control) => coord_mcp::handover::serve(coord, options, control).await,
                    Err(e) => Err(e),
                }
            }
            None => {
                let (reader, writer) = tokio::io::split(io);
                coord_mcp::serve_relayed(coord, options, reader, writer).await
            }
        };
        if let Err(e) = served {
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
