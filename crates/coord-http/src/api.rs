//! The JSON endpoints, generated from the operation registry: every HTTP binding of
//! every operation is one route whose handler authenticates the key, reads the request
//! from the body, the query string or the path, resolves the caller, and hands both to
//! [`Coordination::invoke`]. The answer bodies are the service's wire shapes.
//!
//! Status codes: 200 for every answer of the service (including refusals it answers as
//! results, such as a blocked lock — read `success`); errors by kind: 400 malformed JSON,
//! 401 missing/invalid key, 403 key bound to another identity, 404 not found, 409
//! refused, 413 body too large, 422 invalid input, 503 storage unavailable, 500 bug.

use crate::auth::{self, Auth};
use crate::config::ApiConfig;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use coord_domain::access::Principal;
use coord_domain::error::ErrorKind;
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::{Http, Input, Method, OpEntry, Server, ops};
use serde_json::{Map, Value};
use std::sync::Arc;

#[derive(Clone)]
pub struct App {
    pub server: Arc<dyn Server>,
    pub auth: Arc<Auth>,
    pub max_body_bytes: usize,
    /// The MCP sessions `/mcp` serves, so a client's DELETE ends its agent's session.
    pub mcp_sessions: coord_mcp::HttpSessions,
    /// The dashboard's signed-in browsers.
    pub ui: Arc<crate::ui::sessions::Sessions>,
    /// Cancelled when the server shuts down (ends the dashboards' live feeds).
    pub shutdown: tokio_util::sync::CancellationToken,
    /// `GITHUB_WEBHOOK_SECRET` (and the previous one while rotating): none refuses every
    /// delivery to `/webhook/github`.
    pub github_secrets: Arc<Vec<Vec<u8>>>,
    /// Per-client limits: connections, requests without a key, failed keys.
    pub limiter: crate::limits::Limiter,
    /// Where the server listens: loopback names only are accepted in `Host` there.
    pub allowed_hosts: Arc<Vec<String>>,
    pub loopback: bool,
}

impl App {
    pub fn new(server: Arc<dyn Server>, config: &ApiConfig) -> App {
        App {
            server,
            auth: Arc::new(Auth::new(config)),
            max_body_bytes: config.max_body_bytes,
            mcp_sessions: coord_mcp::HttpSessions::default(),
            ui: config.ui.clone(),
            shutdown: config.shutdown.clone(),
            github_secrets: Arc::new(config.github_webhook_secrets.clone()),
            limiter: config.limiter.clone(),
            allowed_hosts: Arc::new(allowed_hosts(config)),
            loopback: is_loopback(&config.host),
        }
    }
}

/// The host names requests may carry in `Host` (on a loopback listener) and `Origin`:
/// loopback names, the bind host, `COORDINATION_MCP_ALLOWED_HOSTS`.
pub fn allowed_hosts(config: &ApiConfig) -> Vec<String> {
    let mut hosts = config.mcp_allowed_hosts.clone();
    if !hosts.contains(&config.host) {
        hosts.push(config.host.clone());
    }
    hosts
}

/// Whether `host` (a bind address) is loopback: `127.0.0.0/8`, `::1`, `localhost`.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub fn status_of(e: &CoordError) -> StatusCode {
    match e.code {
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::InvalidJson => StatusCode::BAD_REQUEST,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorCode::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
        code => match code.kind() {
            ErrorKind::Input => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorKind::Refused => StatusCode::CONFLICT,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Forbidden => StatusCode::FORBIDDEN,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        },
    }
}

pub fn error_response(e: &CoordError) -> Response {
    let mut r = (status_of(e), Json(e.to_value())).into_response();
    if e.code == ErrorCode::Unauthorized {
        r.headers_mut()
            .insert("www-authenticate", axum::http::HeaderValue::from_static("Bearer"));
    }
    r
}

fn respond(outcome: CoordResult<Value>) -> Response {
    match outcome {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_response(&e),
    }
}

/// A request body, at most `limit` bytes, arriving within the server's body timeout.
pub(crate) async fn read_body(app: &App, body: Body, limit: usize) -> CoordResult<axum::body::Bytes> {
    let timeout = app.limiter.limits.body_timeout;
    let read = tokio::time::timeout(timeout, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| {
            CoordError::new(
                ErrorCode::RequestTimeout,
                format!("the request body did not arrive within {} seconds", timeout.as_secs()),
            )
        })?;
    read.map_err(|e| {
        if e.into_inner().is::<http_body_util::LengthLimitError>() {
            CoordError::new(
                ErrorCode::PayloadTooLarge,
                format!("the request body is larger than {limit} bytes"),
            )
            .with_detail("limit", limit)
        } else {
            // The client went away or sent a broken body (bad chunking): its mistake.
            CoordError::new(ErrorCode::InvalidJson, "the request body could not be read")
        }
    })
}

fn take_text(map: &mut Map<String, Value>, key: &str) -> CoordResult<Option<String>> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(CoordError::field(
            ErrorCode::InvalidArgument,
            key,
            format!("{key} must be a string"),
        )),
    }
}

/// A body as JSON, with the identity claims (`agent_id`, `agent_type`) taken out of an
/// object. An empty body is `{}`; whether the rest fits the operation is the pipeline's
/// to judge (so every refusal is audited the same way on every door).
fn parse_body(bytes: &[u8]) -> CoordResult<(Value, Option<String>, Option<String>)> {
    let mut value: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        serde_json::from_slice(bytes).map_err(|e| {
            CoordError::new(
                ErrorCode::InvalidJson,
                format!("the request body is not valid JSON: {e}"),
            )
        })?
    };
    let (mut agent_id, mut agent_type) = (None, None);
    if let Value::Object(map) = &mut value {
        agent_id = take_text(map, "agent_id")?;
        agent_type = take_text(map, "agent_type")?;
    }
    Ok((value, agent_id, agent_type))
}

/// `request` with the query's parameters added as text (what is already there wins).
fn with_query(mut request: Value, query: Option<&str>) -> Value {
    if let (Value::Object(map), Some(q)) = (&mut request, query) {
        for (k, v) in form_urlencoded::parse(q.as_bytes()) {
            map.entry(k.into_owned()).or_insert(Value::String(v.into_owned()));
        }
    }
    request
}

/// A path parameter, or a JSON error naming it (axum's own rejection is plain text).
fn path_param(param: Result<Path<String>, PathRejection>, name: &str) -> CoordResult<Value> {
    let value = param
        .map(|Path(v)| v)
        .map_err(|e| CoordError::field(ErrorCode::InvalidArgument, name, format!("{name}: {}", e.body_text())))?;
    let mut m = Map::new();
    m.insert(name.to_string(), Value::String(value));
    Ok(Value::Object(m))
}

/// What one HTTP request of a binding carries.
struct Received {
    /// The operation's request, or why it could not be read (audited by the pipeline).
    request: CoordResult<Value>,
    body_id: Option<String>,
    body_type: Option<String>,
}

/// Reads the request of `binding`. A body that cannot be read (too large, broken, not
/// JSON) becomes the request's error, which the pipeline audits like any other refusal;
/// the caller's identity then comes from the headers alone.
async fn receive(
    app: &App,
    op: &OpEntry,
    binding: &Http,
    query: Option<String>,
    path: Result<Path<String>, PathRejection>,
    body: Body,
) -> Received {
    let mut body_value = Ok(Value::Object(Map::new()));
    let (mut body_id, mut body_type) = (None, None);
    if binding.method == Method::Post {
        // Identity claims travel in POST bodies, even of operations that take no input.
        body_value = match read_body(app, body, app.max_body_bytes)
            .await
            .and_then(|b| parse_body(&b))
        {
            Ok((value, id, ty)) => {
                (body_id, body_type) = (id, ty);
                Ok(value)
            }
            Err(e) => Err(e),
        };
    }
    let request = match binding.input {
        Input::Body => body_value,
        Input::Query => body_value.and((op.query_to_json)(query.as_deref().unwrap_or(""))),
        // Anything else in the query joins the request, so that a field the operation does
        // not know is refused by name rather than ignored.
        Input::Path(name) => body_value
            .and(path_param(path, name))
            .map(|v| with_query(v, query.as_deref())),
        Input::None => Ok(with_query(Value::Object(Map::new()), query.as_deref())),
    };
    Received {
        request,
        body_id,
        body_type,
    }
}

/// The handler of one binding of one operation.
async fn handle(
    app: App,
    op: &'static OpEntry,
    binding: Http,
    headers: HeaderMap,
    query: Option<String>,
    path: Result<Path<String>, PathRejection>,
    body: Body,
) -> Response {
    let outcome = async {
        let authenticated = auth::authenticate(&app.auth, app.server.as_ref(), &headers).await?;
        // Credentials are decided before a body is read: a request without a key for an
        // operation that needs one is refused unread (counted, not audited per request).
        if authenticated == auth::Authenticated::Anonymous
            && coord_domain::access::authorize(coord_domain::access::Credential::Anonymous, op.access).is_err()
        {
            if let Some(c) = app.server.local() {
                c.metrics().door_refused("no_key");
            }
            return Err(CoordError::new(
                ErrorCode::Unauthorized,
                format!("{} needs an API key: send X-API-Key or Authorization: Bearer", op.name),
            ));
        }
        let received = receive(&app, op, &binding, query, path, body).await;
        let claims = auth::Claims::of(&headers, received.body_id, received.body_type);
        let who = Principal::new(
            auth::identity(&authenticated, claims)?,
            authenticated.credential_in(&headers),
        )
        .with_origin(authenticated.origin());
        app.server.invoke(op, &who, received.request).await
    }
    .await;
    respond(outcome)
}

/// Every HTTP binding of every operation, as routes.
pub fn routes(mut router: axum::Router<App>) -> axum::Router<App> {
    for op in ops() {
        for binding in op.http {
            let binding = *binding;
            let filter = match binding.method {
                Method::Get => MethodFilter::GET,
                Method::Post => MethodFilter::POST,
            };
            let handler =
                move |State(app): State<App>,
                      headers: HeaderMap,
                      RawQuery(query): RawQuery,
                      path: Result<Path<String>, PathRejection>,
                      body: Body| { handle(app, op, binding, headers, query, path, body) };
            router = router.route(binding.path, on(filter, handler));
        }
    }
    router
}

pub async fn health(State(app): State<App>) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    match app.server.health().await {
        Ok(()) => Json(serde_json::json!({"status": "ok", "version": version})).into_response(),
        Err(e) => {
            // Anyone may ask: the driver's reason (user names, database names) stays in the log.
            tracing::warn!(code = %e.code.as_str(), reason = %e.message, "health check failed");
            let message = match e.kind() {
                ErrorKind::Unavailable => "the coordinator's database is unavailable",
                _ => "the coordinator is not healthy",
            };
            (
                status_of(&e),
                Json(serde_json::json!({"status": "unavailable", "version": version, "error": e.code, "message": message})),
            )
                .into_response()
        }
    }
}

pub async fn not_found() -> Response {
    error_response(&CoordError::new(
        ErrorCode::NotFound,
        "no such endpoint; see GET /openapi.json",
    ))
}

pub async fn method_not_allowed() -> Response {
    let e = CoordError::new(
        ErrorCode::NotFound,
        "this endpoint does not accept that method; see GET /openapi.json",
    );
    (StatusCode::METHOD_NOT_ALLOWED, Json(e.to_value())).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_give_up_their_identity_claims() {
        let (v, id, ty) = parse_body(br#"{"file_path": "a", "agent_id": "x"}"#).unwrap();
        assert_eq!(
            (v, id.as_deref(), ty),
            (serde_json::json!({"file_path": "a"}), Some("x"), None)
        );
        let e = parse_body(b"{nope").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidJson);
        let e = parse_body(br#"{"file_path": "a", "agent_id": 7}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("agent_id"));
        let (v, _, _) = parse_body(b"  ").unwrap();
        assert_eq!(v, serde_json::json!({}));
        // Not an object: the pipeline refuses it (and audits the refusal).
        let (v, id, _) = parse_body(b"[1]").unwrap();
        assert_eq!((v, id), (serde_json::json!([1]), None));
    }

    #[test]
    fn status_codes_by_error() {
        let cases = [
            (ErrorCode::Unauthorized, 401),
            (ErrorCode::Forbidden, 403),
            (ErrorCode::InvalidJson, 400),
            (ErrorCode::PayloadTooLarge, 413),
            (ErrorCode::TtlOutOfRange, 422),
            (ErrorCode::NotLockOwner, 409),
            (ErrorCode::FileLocked, 409),
            (ErrorCode::TaskNotFound, 404),
            (ErrorCode::UnknownOperation, 404),
            (ErrorCode::DatabaseUnavailable, 503),
            (ErrorCode::Internal, 500),
        ];
        for (code, want) in cases {
            assert_eq!(status_of(&CoordError::new(code, "x")).as_u16(), want, "{code}");
        }
    }
}
