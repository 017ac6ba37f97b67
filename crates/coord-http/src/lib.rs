//! The HTTP door, `coord serve`: one router built by [`create_coordination_api`] from an
//! [`ApiConfig`] (the spec's `create_coordination_api()` / `ApiConfig`). Handlers call
//! the service and nothing else.
//!
//! Routes: the JSON API (see `openapi.rs` or `GET /openapi.json`), `GET /health`,
//! `GET /metrics` (Prometheus), the live dashboard (`/` and `/ui/…`, see `ui`), and `/mcp`, the MCP server over streamable HTTP, behind the same API keys.
//!
//! Where things are:
//!
//! - `api`: one route per HTTP binding of every registry operation (body, query or path
//!   read into JSON, identity claims taken out of the body, then `invoke`); the status
//!   derives from the error code's kind (`input` 422, `refused` 409, `not_found` 404,
//!   `forbidden` 403, `unavailable` 503), so the API cannot drift from the service.
//! - `auth`: authentication only — keys from headers, environment keys compared in
//!   constant time, managed keys through `Server::authenticate_key`, bound identities.
//!   Access is decided by the pipeline, as for every door.
//! - `openapi`: OpenAPI 3.1 from the registry and the request types' schemas.
//! - `webhook`: `POST /webhook/github`, the signature over the raw body checked first,
//!   then `receive_github_delivery` invoked as the operator principal `github-webhook`.
//! - `metrics`: `GET /metrics`, a `get_stats` call rendered with the process's counters
//!   (`coord_store_up 0` when the store does not answer).
//! - `ui`: the live dashboard (sign-in with an operator key or `coord ui`'s one-time
//!   link, the page, snapshots read through the operations, server-sent events from the
//!   pipeline's change feed, approve and deny behind CSRF and origin checks; the page's
//!   files are in `crates/coord-http/ui/`, compiled in).
//! - `limits`: what a client may cost before proving anything (connections in all and per
//!   address, head and body timeouts, a token bucket per address for requests without a
//!   key, a pause after wrong keys, `Host` and `Origin` against DNS rebinding); pure
//!   decisions, applied by `client_guard` and by `serve`'s own accept loop.
//! - `relay`: `GET /mcp/stdio` upgraded to a relayed `coord mcp` session, on the
//!   repository's coordinator only. `/mcp` is rmcp's streamable HTTP service behind the
//!   same key check.
//! - This file: `SameUserListener` and `serve_local`, the repository coordinator's Unix
//!   socket (each peer's user checked with `SO_PEERCRED`; requests without a key act as
//!   the local identity they name), `Activity` for its idle stop, graceful shutdown.

pub mod api;
pub mod auth;
pub mod config;
pub mod limits;
pub mod metrics;
pub mod openapi;
mod relay;
pub mod ui;
pub mod webhook;

pub use config::ApiConfig;

use api::App;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use coord_mcp::{CoordMcp, IdentityConfig, McpOptions};
use coord_service::{Coordination, Server};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// Authenticates `/mcp` requests like the JSON API, and hands the credential and the
/// resolved identity to the MCP server through the request's extensions; each tool call
/// is then authorized by the service like any other operation. An operator key whose
/// request names nobody hands over no identity: the MCP server then tells its clients
/// apart by their `initialize` info, instead of merging every client into one agent.
async fn mcp_auth(State(app): State<App>, mut req: Request, next: Next) -> Response {
    // The body is not `Sync`: only the headers may be held across the key lookup.
    let headers = req.headers().clone();
    let outcome = async {
        let authenticated = auth::authenticate(&app.auth, app.server.as_ref(), &headers).await?;
        if authenticated == auth::Authenticated::Anonymous {
            // An MCP session is an agent's connection (it registers a session and holds
            // server memory): it needs a key, even for the tools anonymous HTTP may call.
            return Err(coord_domain::CoordError::new(
                coord_domain::ErrorCode::Unauthorized,
                "/mcp needs an API key: send X-API-Key or Authorization: Bearer",
            ));
        }
        let claims = auth::Claims::of(&headers, None, None);
        let names_nobody = !claims.names_anyone();
        let who = if matches!(
            authenticated,
            auth::Authenticated::Operator | auth::Authenticated::Local
        ) && names_nobody
        {
            None
        } else {
            Some(auth::identity(&authenticated, claims)?)
        };
        Ok::<_, coord_domain::CoordError>((authenticated.credential_in(&headers), who, authenticated.origin()))
    }
    .await;
    match outcome {
        Ok((credential, who, origin)) => {
            // A DELETE of an MCP session is its client leaving: end its coordinator
            // session too (after the grace period), once rmcp has accepted the DELETE.
            let deleted = (req.method() == axum::http::Method::DELETE)
                .then(|| {
                    headers
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(String::from)
                })
                .flatten();
            req.extensions_mut().insert(credential);
            if let Some(origin) = origin {
                req.extensions_mut().insert(origin);
            }
            if let Some(who) = &who {
                req.extensions_mut().insert(who.clone());
            }
            let response = next.run(req).await;
            if let Some(id) = deleted
                && response.status().is_success()
            {
                app.mcp_sessions.closed(&id, who.as_ref());
            }
            response
        }
        Err(e) => api::error_response(&e),
    }
}

/// What every request over TCP passes first (docs/http.md, "Limits"): its `Host` and
/// `Origin` (DNS rebinding), then its client's allowance — a client that failed too many
/// keys waits out the minute before a key of its is even looked at, and requests without
/// a key are rate-limited per client (429, not audited: counted in `/metrics`). A 401
/// answered to a request with a key counts as a failure. The same-user Unix socket (no
/// client address) passes.
async fn client_guard(State(app): State<App>, req: Request, next: Next) -> Response {
    use axum::http::header;
    let Some(ip) = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
    else {
        return next.run(req).await;
    };
    let headers = req.headers();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let count = |reason| {
        if let Some(c) = app.server.local() {
            c.metrics().door_refused(reason);
        }
    };
    if !limits::host_and_origin_allowed(
        text(header::HOST.as_str()),
        text(header::ORIGIN.as_str()),
        text("sec-fetch-site"),
        &app.allowed_hosts,
        app.loopback,
    ) {
        count("host");
        return api::error_response(&coord_domain::CoordError::new(
            coord_domain::ErrorCode::Forbidden,
            "this server does not answer requests for that Host or from that Origin (DNS rebinding protection); \
             add the name to COORDINATION_MCP_ALLOWED_HOSTS if it is yours",
        ));
    }
    // A key, a webhook's signature or a dashboard session's cookie: a credential to
    // check (and to fail).
    let keyed = auth::presented_key(headers).is_some()
        || headers.contains_key("x-hub-signature-256")
        || ui::has_session_cookie(headers);
    let now = std::time::Instant::now();
    let throttled = |reason, why: &str, retry: &'static str| {
        count(reason);
        let mut r = api::error_response(&coord_domain::CoordError::new(
            coord_domain::ErrorCode::TooManyRequests,
            why.to_string(),
        ));
        r.headers_mut()
            .insert(header::RETRY_AFTER, axum::http::HeaderValue::from_static(retry));
        r
    };
    if keyed && app.limiter.paused(ip, now) {
        return throttled(
            "failed_keys",
            "too many requests with a wrong key from this address in the last minute; wait a minute",
            "60",
        );
    }
    if !keyed && !app.limiter.anonymous(ip, now) {
        return throttled(
            "anonymous_rate",
            "too many requests without an API key from this address; slow down, or send a key",
            "1",
        );
    }
    let response = next.run(req).await;
    if keyed && response.status() == axum::http::StatusCode::UNAUTHORIZED {
        app.limiter.failed(ip, now);
    }
    response
}

/// Builds the whole HTTP surface over a coordinator.
pub fn create_coordination_api(server: Arc<dyn Server>, config: &ApiConfig) -> Router {
    let coord: Arc<dyn Coordination> = server.clone();
    let app = App::new(server, config);
    let hosts = api::allowed_hosts(config);
    let mcp_coord = coord.clone();
    let sessions = app.mcp_sessions.clone();
    let mut options = McpOptions::http(IdentityConfig::per_client());
    options.release_after = config.release_after;
    let mcp = StreamableHttpService::new(
        move || Ok(CoordMcp::new(mcp_coord.clone(), options.clone()).with_http_sessions(sessions.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_max_request_body_bytes(config.max_body_bytes)
            .with_cancellation_token(config.shutdown.child_token()),
    );
    let document = Arc::new(openapi::document());
    // The relay of `coord mcp` processes, on the per-repository coordinator only.
    let relay = match config.local_peers {
        true => Router::new().route(
            coord_mcp::relay::PATH,
            get(move |req: Request| relay::upgrade(coord.clone(), req)),
        ),
        false => Router::new(),
    };
    let mcp_routes = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(app.clone(), mcp_auth));
    api::routes(Router::new())
        .merge(relay)
        .route("/health", get(api::health))
        .route("/metrics", get(metrics::metrics))
        .route("/webhook/github", axum::routing::post(webhook::github))
        .route("/", get(ui::page))
        .route("/ui/login", get(ui::login_link).post(ui::login))
        .route("/ui/logout", axum::routing::post(ui::logout))
        .route("/ui/snapshot", get(ui::snapshot))
        .route("/ui/events", get(ui::events))
        .route("/ui/approvals/decide", axum::routing::post(ui::decide))
        .route("/ui/sessions/end", axum::routing::post(ui::end_session))
        .route("/ui/locks/break", axum::routing::post(ui::break_lock))
        .route("/ui/tasks/cancel", axum::routing::post(ui::cancel_task))
        .route("/ui/tasks/requeue", axum::routing::post(ui::requeue_task))
        .route("/ui/app.js", get(ui::script))
        .route("/ui/style.css", get(ui::style))
        .route(
            "/openapi.json",
            get(move || async move { Json(document.as_ref().clone()) }),
        )
        .method_not_allowed_fallback(api::method_not_allowed)
        .fallback(api::not_found)
        // Bodies are bounded by the handlers themselves, so the limit error is JSON.
        .layer(DefaultBodyLimit::disable())
        .merge(mcp_routes)
        .layer(middleware::from_fn_with_state(app.clone(), client_guard))
        .with_state(app)
}

/// How long a shutdown waits for in-flight requests before giving up on them.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Serves until `shutdown` resolves; then cancels `config.shutdown` (ending MCP streams)
/// and lets in-flight requests finish, for at most [`DRAIN_LIMIT`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    config: &ApiConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limiter = config.limiter.clone();
    let header_timeout = limiter.limits.header_timeout;
    let connections = tokio_util::task::TaskTracker::new();
    let closing = config.shutdown.clone();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of descriptors, say: waited out rather than spun on.
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(permit) = limiter.connect(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: over the connection limits");
            continue;
        };
        let app = app.clone();
        let closing = closing.clone();
        connections.spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |req: axum::http::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                let mut app = app.clone();
                async move { tower_service::Service::call(&mut app, req).await }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                served = conn.as_mut() => if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "connection ended");
                },
                () = closing.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    // Ends the long-lived MCP streams, and asks every connection to finish.
    closing.cancel();
    connections.close();
    if tokio::time::timeout(DRAIN_LIMIT, connections.wait()).await.is_err() {
        tracing::warn!("shutdown: requests still running after {DRAIN_LIMIT:?}; stopping anyway");
    }
    Ok(())
}

/// `server` until it ends, or until [`DRAIN_LIMIT`] after `stopping` is cancelled:
/// requests still running then are given up on.
async fn drained(
    server: impl std::future::Future<Output = std::io::Result<()>>,
    stopping: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    tokio::select! {
        served = server => served,
        () = async {
            stopping.cancelled().await;
            tokio::time::sleep(DRAIN_LIMIT).await;
        } => {
            tracing::warn!("shutdown: requests still running after {DRAIN_LIMIT:?}; stopping anyway");
            Ok(())
        }
    }
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

/// Serves `app` on a Unix socket until the task is dropped (`coord agent run`: the
/// coordinator of one launched agent, relayed into its sandbox).
pub async fn serve_unix(listener: tokio::net::UnixListener, app: Router) -> std::io::Result<()> {
    axum::serve(listener, app.into_make_service()).await
}

/// A Unix-socket listener that admits only processes running as this process's user: the
/// kernel reports each connecting peer's credentials (`SO_PEERCRED`), and any other
/// user's connection is closed unanswered. What serves the per-repository coordinator
/// (`coord serve --socket`), whose requests then need no key ([`ApiConfig::local_peers`]).
pub struct SameUserListener {
    inner: tokio::net::UnixListener,
    uid: u32,
}

impl SameUserListener {
    pub fn new(inner: tokio::net::UnixListener) -> SameUserListener {
        SameUserListener {
            inner,
            uid: rustix::process::getuid().as_raw(),
        }
    }
}

impl axum::serve::Listener for SameUserListener {
    type Io = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((io, addr)) => match io.peer_cred() {
                    Ok(cred) if cred.uid() == self.uid => return (io, addr),
                    Ok(cred) => tracing::warn!(uid = cred.uid(), "refused a connection from another user"),
                    Err(e) => tracing::warn!(error = %e, "refused a connection whose peer is unknown"),
                },
                // As axum's own listeners: a connection that failed is skipped; anything
                // else (out of descriptors) is waited out rather than spun on.
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// When the last request arrived, for a server that stops when idle.
#[derive(Clone)]
pub struct Activity {
    started: std::time::Instant,
    last_ms: Arc<std::sync::atomic::AtomicU64>,
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            started: std::time::Instant::now(),
            last_ms: Arc::default(),
            in_flight: Arc::default(),
        }
    }
}

impl Activity {
    fn touch(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.last_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Time since the last request ended (or since the server started); zero while one
    /// runs (an operation that waits minutes is activity all along).
    pub fn idle(&self) -> std::time::Duration {
        if self.in_flight.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return std::time::Duration::ZERO;
        }
        let last = std::time::Duration::from_millis(self.last_ms.load(std::sync::atomic::Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last)
    }
}

/// Counts a request as running until dropped (also when its handler is cancelled).
struct Running(Activity);

impl Running {
    fn start(a: &Activity) -> Running {
        a.in_flight.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        a.touch();
        Running(a.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The per-repository coordinator: serves `app` (built with [`ApiConfig::local_peers`])
/// on `listener` until `shutdown` resolves, recording each request in `activity`.
pub async fn serve_local(
    listener: SameUserListener,
    app: Router,
    config: &ApiConfig,
    activity: Activity,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app.layer(middleware::from_fn(move |mut req: Request, next: Next| {
        let running = Running::start(&activity);
        // A relayed MCP session counts as activity for as long as it lasts.
        req.extensions_mut().insert(activity.clone());
        // The connection's socket is the relay's only: a request kept by another handler
        // (an MCP session's) must not keep a duplicate of it open.
        if req.uri().path() != coord_mcp::relay::PATH {
            req.extensions_mut()
                .remove::<axum::extract::ConnectInfo<relay::LocalPeer>>();
        }
        async move {
            let response = next.run(req).await;
            drop(running);
            response
        }
    }));
    let streams = config.shutdown.clone();
    let stopping = streams.clone();
    let server = axum::serve(listener, app.into_make_service_with_connect_info::<relay::LocalPeer>())
        .with_graceful_shutdown(async move {
            shutdown.await;
            streams.cancel();
        })
        .into_future();
    drained(server, stopping).await
}

/// Serves `app` on a loopback TCP listener until the task is dropped (`coord agent run`
/// with `COORD_SANDBOX_ENABLED=false`: the coordinator of one launched agent).
pub async fn serve_loopback(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    axum::serve(listener, app.into_make_service()).await
}
