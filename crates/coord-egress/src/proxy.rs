//! The egress proxy. For each request: authenticate the agent (407 otherwise), ask
//! `check_network_access` as that agent (403 `domain_blocked` when refused — the
//! decision and its log row are the operation's), resolve an allowed name, keep the
//! addresses the policy admits (none: asked again with them, so the refusal is logged
//! as `no_allowed_address`), dial a kept address. CONNECT becomes a byte tunnel;
//! absolute-form `http://` requests are forwarded with the proxy headers removed.

use crate::credentials::{Credentials, basic};
use crate::resolve::Resolve;
use bytes::Bytes;
use coord_domain::access::Principal;
use coord_domain::network::{CheckNetworkAccessRequest, Host, Target, parse_target};
use coord_domain::{CoordError, ErrorCode, ErrorKind};
use coord_service::ops::network::CheckNetworkAccess;
use coord_service::{Coordination, call};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener};

type Body = BoxBody<Bytes, hyper::Error>;

/// The largest request head read (a header flood is cut off there).
const MAX_HEAD: usize = 64 * 1024;
/// Client connections served at once (each may hold a tunnel).
pub const MAX_CONNECTIONS: usize = 1024;

/// A TCP or Unix listener: what the accept loop needs of either.
trait Listener: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn next(&self) -> impl std::future::Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;
    async fn next(&self) -> std::io::Result<TcpStream> {
        self.accept().await.map(|(s, _)| s)
    }
}

impl Listener for UnixListener {
    type Io = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<tokio::net::UnixStream> {
        self.accept().await.map(|(s, _)| s)
    }
}

async fn backoff(e: std::io::Error) {
    tracing::warn!(error = %e, "proxy: accept failed; retrying");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

pub struct Proxy {
    coord: Arc<dyn Coordination>,
    credentials: Arc<dyn Credentials>,
    resolver: Arc<dyn Resolve>,
    /// How long dialling one address may take.
    pub connect_timeout: Duration,
    /// How long a client may take to send a request head (slowloris).
    pub header_timeout: Duration,
    connections: Arc<tokio::sync::Semaphore>,
}

fn reply(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).map_err(|e| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn refusal(e: &CoordError) -> Response<Body> {
    let status = match (e.code, e.kind()) {
        (ErrorCode::DomainBlocked, _) => StatusCode::FORBIDDEN,
        (_, ErrorKind::Input) => StatusCode::BAD_REQUEST,
        (_, ErrorKind::Unavailable | ErrorKind::Internal) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::FORBIDDEN,
    };
    reply(status, serde_json::to_value(e).unwrap_or_default())
}

fn failure(status: StatusCode, code: &str, message: String) -> Response<Body> {
    reply(status, json!({"success": false, "error": code, "message": message}))
}

impl Proxy {
    pub fn new(coord: Arc<dyn Coordination>, credentials: Arc<dyn Credentials>, resolver: Arc<dyn Resolve>) -> Proxy {
        Proxy {
            coord,
            credentials,
            resolver,
            connect_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
            connections: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        }
    }

    /// Serves TCP clients (forever: a failed accept, such as running out of file
    /// descriptors, is logged and retried shortly).
    pub async fn serve_tcp(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        self.serve(listener).await
    }

    /// Serves clients of a Unix socket (the sandbox's relay), like [`Proxy::serve_tcp`].
    pub async fn serve_unix(self: Arc<Self>, listener: UnixListener) -> std::io::Result<()> {
        self.serve(listener).await
    }

    async fn serve<L: Listener>(self: Arc<Self>, listener: L) -> std::io::Result<()> {
        loop {
            let slot = self.slot().await;
            match listener.next().await {
                Ok(stream) => tokio::spawn(self.clone().connection(stream, slot)),
                Err(e) => {
                    backoff(e).await;
                    continue;
                }
            };
        }
    }

    /// One of `MAX_CONNECTIONS`: a client beyond them waits to be accepted.
    async fn slot(&self) -> tokio::sync::OwnedSemaphorePermit {
        loop {
            if let Ok(p) = self.connections.clone().acquire_owned().await {
                return p;
            }
        }
    }

    async fn connection<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
        self: Arc<Self>,
        io: I,
        _slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        let me = self.clone();
        let service = service_fn(move |req| {
            let me = me.clone();
            async move { Ok::<_, Infallible>(me.handle(req).await) }
        });
        let served = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .max_buf_size(MAX_HEAD)
            .serve_connection(TokioIo::new(io), service)
            .with_upgrades()
            .await;
        if let Err(e) = served {
            tracing::debug!(error = %e, "proxy: a client connection ended with an error");
        }
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let presented = req
            .headers()
            .get(header::PROXY_AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(basic);
        let who = match presented {
            Some((user, password)) => self.credentials.principal(&user, &password).await,
            None => None,
        };
        let Some(who) = who else {
            tracing::warn!(target = %req.uri(), "proxy: a request without a valid agent credential");
            let mut r = failure(
                StatusCode::PROXY_AUTHENTICATION_REQUIRED,
                "unauthorized",
                "the proxy needs Proxy-Authorization: Basic <agent id>:<the agent's secret>".into(),
            );
            r.headers_mut().insert(
                header::PROXY_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"coord\""),
            );
            return r;
        };
        if req.method() == Method::CONNECT {
            self.tunnel(&who, req).await
        } else {
            self.forward(&who, req).await
        }
    }

    /// The addresses `target` may be dialled at for `who`, or the answer refusing it.
    /// A name is checked first (`resolve_next`: a refused name is never resolved, and the
    /// refusal is logged), then resolved here, then decided again with its addresses —
    /// the decision that is logged and that names the addresses that may be dialled.
    async fn admit(&self, who: &Principal, target: &Target) -> Result<Vec<SocketAddr>, Response<Body>> {
        let ask = |addresses: Option<Vec<String>>| {
            let resolve_next = addresses.is_none();
            call::<CheckNetworkAccess, _>(
                &*self.coord,
                who,
                CheckNetworkAccessRequest {
                    target: target.to_string(),
                    addresses,
                    resolve_next,
                },
            )
        };
        let resolved = match &target.host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => {
                ask(None).await.map_err(|e| refusal(&e))?;
                match self.resolver.resolve(name, target.port).await {
                    Ok(ips) => ips,
                    Err(e) => {
                        tracing::debug!(%name, error = %e, "proxy: resolution failed");
                        Vec::new()
                    }
                }
            }
        };
        let decided = ask(Some(resolved.iter().map(ToString::to_string).collect()))
            .await
            .map_err(|e| refusal(&e))?;
        Ok(decided
            .addresses
            .iter()
            .filter_map(|a| a.parse().ok())
            .map(|ip| SocketAddr::new(ip, target.port))
            .collect())
    }

    /// Dials the first address that answers (only the checked addresses, never a name).
    async fn dial(&self, addresses: &[SocketAddr]) -> Result<TcpStream, Response<Body>> {
        let mut last = String::from("no address to dial");
        for a in addresses {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(a)).await {
                Ok(Ok(s)) => return Ok(s),
                Ok(Err(e)) => last = format!("{a}: {e}"),
                Err(_) => last = format!("{a}: no answer within {:?}", self.connect_timeout),
            }
        }
        Err(failure(StatusCode::BAD_GATEWAY, "connect_failed", last))
    }

    async fn tunnel(&self, who: &Principal, req: Request<Incoming>) -> Response<Body> {
        let target = match req.uri().authority() {
            Some(a) if a.as_str().contains('@') => {
                return failure(
                    StatusCode::BAD_REQUEST,
                    "invalid_argument",
                    "no user@ in a CONNECT target".into(),
                );
            }
            Some(a) if a.port().is_some() => parse_target(a.as_str()),
            _ => {
                return failure(
                    StatusCode::BAD_REQUEST,
                    "invalid_argument",
                    "CONNECT needs host:port".into(),
                );
            }
        };
        let target = match target {
            Ok(t) => t,
            Err(e) => return refusal(&e),
        };
        let authority = target.to_string();
        let addresses = match self.admit(who, &target).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut upstream = match self.dial(&addresses).await {
            Ok(s) => s,
            Err(r) => return r,
        };
        let agent = who.caller.agent_id.clone();
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(upgraded) => {
                    let mut client = TokioIo::new(upgraded);
                    match tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
                        Ok((up, down)) => tracing::debug!(%agent, %authority, up, down, "proxy: tunnel closed"),
                        Err(e) => tracing::debug!(%agent, %authority, error = %e, "proxy: tunnel broke"),
                    }
                }
                Err(e) => tracing::debug!(error = %e, "proxy: CONNECT was not upgraded"),
            }
        });
        Response::new(Full::new(Bytes::new()).map_err(|e| match e {}).boxed())
    }

    async fn forward(&self, who: &Principal, mut req: Request<Incoming>) -> Response<Body> {
        let uri = req.uri().clone();
        let (Some("http"), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return failure(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "send http://host/path in absolute form, or CONNECT host:port for anything else".into(),
            );
        };
        if authority.as_str().contains('@') {
            return failure(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "no user@ in a proxied URL".into(),
            );
        }
        let authority = authority.to_string();
        // The Host header must name what the request line names (no fronting).
        if let Some(host) = req.headers().get(header::HOST)
            && !host.to_str().is_ok_and(|h| h.eq_ignore_ascii_case(&authority))
        {
            return failure(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                format!("the Host header does not match {authority}"),
            );
        }
        let target = match parse_target(&format!("http://{authority}")) {
            Ok(t) => t,
            Err(e) => return refusal(&e),
        };
        let addresses = match self.admit(who, &target).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let upstream = match self.dial(&addresses).await {
            Ok(s) => s,
            Err(r) => return r,
        };
        let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => return failure(StatusCode::BAD_GATEWAY, "connect_failed", e.to_string()),
        };
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "proxy: an upstream connection ended with an error");
            }
        });
        for h in [
            header::PROXY_AUTHORIZATION,
            header::CONNECTION,
            header::TE,
            header::TRAILER,
            header::UPGRADE,
        ] {
            req.headers_mut().remove(h);
        }
        req.headers_mut().remove("proxy-connection");
        req.headers_mut().remove("keep-alive");
        if let Ok(host) = HeaderValue::from_str(&authority) {
            req.headers_mut().insert(header::HOST, host);
        }
        let origin_form = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        *req.uri_mut() = match origin_form.parse() {
            Ok(u) => u,
            Err(_) => return failure(StatusCode::BAD_REQUEST, "invalid_argument", "unreadable path".into()),
        };
        match sender.send_request(req).await {
            Ok(resp) => resp.map(|b| b.boxed()),
            Err(e) => failure(StatusCode::BAD_GATEWAY, "upstream_failed", e.to_string()),
        }
    }
}
