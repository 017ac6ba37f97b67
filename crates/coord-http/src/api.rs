//! The JSON endpoints. Each handler parses its input, resolves the caller, calls the
//! service, and renders the outcome; the answer bodies are the service's wire shapes.
//!
//! Status codes: 200 for every answer of the service (including refusals it answers as
//! results, such as a blocked lock — read `success`); errors by kind: 400 malformed JSON,
//! 401 missing/invalid key, 403 key bound to another identity, 404 not found, 409
//! refused, 413 body too large, 422 invalid input, 503 storage unavailable, 500 bug.

use crate::auth::{self, Access, Auth};
use crate::config::ApiConfig;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::error::ErrorKind;
use coord_domain::handoffs::{ReadHandoffRequest, WriteHandoffRequest};
use coord_domain::keys::{CreateApiKeyRequest, RevokeApiKeyRequest};
use coord_domain::locks::{AcquireLockRequest, CheckLocksRequest, LockInfo, ReleaseLockRequest};
use coord_domain::ports::{AllocatePortsRequest, ReleasePortsRequest};
use coord_domain::queue::{CompleteWorkRequest, GetTaskRequest, GetWorkRequest, ListTasksRequest, SubmitWorkRequest};
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, DiscoverAgentsRequest, HeartbeatRequest, RegisterSessionRequest,
};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::Coordination;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

#[derive(Clone)]
pub struct App {
    pub coord: Arc<dyn Coordination>,
    pub auth: Arc<Auth>,
    pub max_body_bytes: usize,
}

impl App {
    pub fn new(coord: Arc<dyn Coordination>, config: &ApiConfig) -> App {
        App {
            coord,
            auth: Arc::new(Auth::new(config)),
            max_body_bytes: config.max_body_bytes,
        }
    }
}

pub fn status_of(e: &CoordError) -> StatusCode {
    match e.code {
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::InvalidJson => StatusCode::BAD_REQUEST,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
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

fn respond<T: Serialize>(outcome: CoordResult<T>) -> Response {
    match outcome {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_response(&e),
    }
}

async fn read_body(body: Body, limit: usize) -> CoordResult<axum::body::Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
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

/// A path parameter, or a JSON error naming it (axum's own rejection is plain text).
fn path_param(param: Result<Path<String>, PathRejection>, name: &str) -> CoordResult<String> {
    param
        .map(|Path(v)| v)
        .map_err(|e| CoordError::field(ErrorCode::InvalidArgument, name, format!("{name}: {}", e.body_text())))
}

/// serde's error for a field, named by its path; `missing field` errors name the field too.
fn field_error(path: String, inner: String) -> CoordError {
    let field = if path == "." {
        inner.split('`').nth(1).map(String::from).unwrap_or_default()
    } else {
        path
    };
    let message = if field.is_empty() {
        inner
    } else {
        format!("{field}: {inner}")
    };
    let e = CoordError::new(ErrorCode::InvalidArgument, message);
    if field.is_empty() { e } else { e.with_field(&field) }
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

/// A JSON object body as `T`, with the identity fields (`agent_id`, `agent_type`) taken
/// out first.
fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> CoordResult<(T, Option<String>, Option<String>)> {
    let value: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        serde_json::from_slice(bytes).map_err(|e| {
            CoordError::new(
                ErrorCode::InvalidJson,
                format!("the request body is not valid JSON: {e}"),
            )
        })?
    };
    let Value::Object(mut map) = value else {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "the request body must be a JSON object",
        ));
    };
    let agent_id = take_text(&mut map, "agent_id")?;
    let agent_type = take_text(&mut map, "agent_type")?;
    let req = serde_path_to_error::deserialize(Value::Object(map))
        .map_err(|e| field_error(e.path().to_string(), e.inner().to_string()))?;
    Ok((req, agent_id, agent_type))
}

fn parse_query<T: DeserializeOwned>(raw: Option<&str>) -> CoordResult<T> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.unwrap_or("").as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| field_error(e.path().to_string(), e.inner().to_string()))
}

type Outcome<T> = Pin<Box<dyn Future<Output = CoordResult<T>> + Send>>;
type Op<Req, Res> = fn(Arc<dyn Coordination>, Caller, Req) -> Outcome<Res>;

/// A JSON-body endpoint.
async fn with_body<Req: DeserializeOwned, Res: Serialize>(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    access: Access,
    op: Op<Req, Res>,
) -> Response {
    let outcome = async {
        let credential = auth::authenticate(&app.auth, app.coord.as_ref(), headers, access).await?;
        let bytes = read_body(body, app.max_body_bytes).await?;
        let (req, body_id, body_type) = parse_body::<Req>(&bytes)?;
        let who = auth::identity(&credential, auth::Claims::of(headers, body_id, body_type))?;
        op(app.coord.clone(), who, req).await
    }
    .await;
    respond(outcome)
}

/// A query-string endpoint.
async fn with_query<Req: DeserializeOwned, Res: Serialize>(
    app: &App,
    headers: &HeaderMap,
    query: Option<String>,
    access: Access,
    op: Op<Req, Res>,
) -> Response {
    let outcome = async {
        let who = auth::resolve(&app.auth, app.coord.as_ref(), headers, access).await?;
        let req = parse_query::<Req>(query.as_deref())?;
        op(app.coord.clone(), who, req).await
    }
    .await;
    respond(outcome)
}

/// Query parameters of endpoints that take none.
#[derive(Debug, Default, Deserialize)]
pub struct NoQuery {}

macro_rules! body_endpoint {
    ($name:ident, $access:expr, $req:ty, |$c:ident, $who:ident, $r:ident| $call:expr) => {
        pub async fn $name(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
            with_body(&app, &headers, body, $access, |$c, $who, $r: $req| {
                Box::pin(async move { $call.await })
            })
            .await
        }
    };
}

macro_rules! query_endpoint {
    ($name:ident, $access:expr, $req:ty, |$c:ident, $who:ident, $r:ident| $call:expr) => {
        pub async fn $name(State(app): State<App>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
            with_query(&app, &headers, query, $access, |$c, $who, $r: $req| {
                Box::pin(async move { $call.await })
            })
            .await
        }
    };
}

body_endpoint!(acquire_lock, Access::Write, AcquireLockRequest, |c, who, r| c
    .acquire_lock(&who, r));
body_endpoint!(release_lock, Access::Write, ReleaseLockRequest, |c, who, r| c
    .release_lock(&who, r));
body_endpoint!(release_my_locks, Access::Write, NoQuery, |c, who, _r| c
    .release_my_locks(&who));
body_endpoint!(check_locks, Access::Read, CheckLocksRequest, |c, who, r| c
    .check_locks(&who, r));
query_endpoint!(list_locks, Access::Read, NoQuery, |c, who, _r| c
    .check_locks(&who, CheckLocksRequest::default()));

body_endpoint!(submit_work, Access::Write, SubmitWorkRequest, |c, who, r| c
    .submit_work(&who, r));
body_endpoint!(claim_work, Access::Write, GetWorkRequest, |c, who, r| c
    .get_work(&who, r));
body_endpoint!(complete_work, Access::Write, CompleteWorkRequest, |c, who, r| c
    .complete_work(&who, r));
query_endpoint!(list_work, Access::Write, ListTasksRequest, |c, who, r| c
    .list_tasks(&who, r));

body_endpoint!(register_session, Access::Write, RegisterSessionRequest, |c, who, r| c
    .register_session(&who, r));
body_endpoint!(heartbeat, Access::Write, HeartbeatRequest, |c, who, r| c
    .heartbeat(&who, r));
body_endpoint!(mark_idle, Access::Write, NoQuery, |c, who, _r| c.mark_idle(&who));
query_endpoint!(discover_agents, Access::Write, DiscoverAgentsRequest, |c, who, r| c
    .discover_agents(&who, r));
body_endpoint!(
    cleanup_dead_agents,
    Access::Write,
    CleanupDeadAgentsRequest,
    |c, who, r| c.cleanup_dead_agents(&who, r)
);

body_endpoint!(write_handoff, Access::Write, WriteHandoffRequest, |c, who, r| c
    .write_handoff(&who, r));
query_endpoint!(read_handoff, Access::Write, ReadHandoffRequest, |c, who, r| c
    .read_handoff(&who, r));
query_endpoint!(query_audit, Access::Write, AuditQueryRequest, |c, who, r| c
    .query_audit(&who, r));
query_endpoint!(status, Access::Write, NoQuery, |c, who, _r| c.status(&who));

body_endpoint!(create_api_key, Access::Operator, CreateApiKeyRequest, |c, who, r| c
    .create_api_key(&who, r));
query_endpoint!(list_api_keys, Access::Operator, NoQuery, |c, who, _r| c
    .list_api_keys(&who));
body_endpoint!(revoke_api_key, Access::Operator, RevokeApiKeyRequest, |c, who, r| c
    .revoke_api_key(&who, r));

body_endpoint!(allocate_ports, Access::Write, AllocatePortsRequest, |c, who, r| c
    .allocate_ports(&who, r));
body_endpoint!(release_ports, Access::Write, ReleasePortsRequest, |c, who, r| c
    .release_ports(&who, r));
query_endpoint!(ports_status, Access::Read, NoQuery, |c, who, _r| c.ports_status(&who));

pub async fn get_task(
    State(app): State<App>,
    headers: HeaderMap,
    task_id: Result<Path<String>, PathRejection>,
) -> Response {
    let outcome = async {
        // Tasks carry their payloads (input_data, result): a key is needed to read them.
        let who = auth::resolve(&app.auth, app.coord.as_ref(), &headers, Access::Write).await?;
        let task_id = path_param(task_id, "task_id")?;
        app.coord.get_task(&who, GetTaskRequest { task_id }).await
    }
    .await;
    respond(outcome)
}

/// `GET /locks/status/{path}`: whether one file is locked, and by whom.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
pub struct LockStatusResult {
    pub success: bool,
    pub file_path: String,
    pub locked: bool,
    pub lock: Option<LockInfo>,
}

impl schemars::JsonSchema for LockStatusResult {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LockStatusResult".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let lock = g.subschema_for::<Option<LockInfo>>();
        schemars::json_schema!({
            "type": "object",
            "required": ["success", "file_path", "locked", "lock"],
            "properties": {
                "success": {"type": "boolean"},
                "file_path": {"type": "string"},
                "locked": {"type": "boolean"},
                "lock": lock,
            }
        })
    }
}

pub async fn lock_status(
    State(app): State<App>,
    headers: HeaderMap,
    file_path: Result<Path<String>, PathRejection>,
) -> Response {
    let outcome = async {
        let who = auth::resolve(&app.auth, app.coord.as_ref(), &headers, Access::Read).await?;
        let file_path = path_param(file_path, "file_path")?;
        let req = CheckLocksRequest {
            file_paths: Some(vec![file_path.clone()]),
        };
        let lock = app.coord.check_locks(&who, req).await?.locks.into_iter().next();
        Ok(LockStatusResult {
            success: true,
            file_path: lock.as_ref().map(|l| l.file_path.clone()).unwrap_or(file_path),
            locked: lock.is_some(),
            lock,
        })
    }
    .await;
    respond(outcome)
}

pub async fn health(State(app): State<App>) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    match app.coord.health().await {
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
    fn body_errors_name_the_field() {
        let e = parse_body::<AcquireLockRequest>(br#"{"ttl_minutes": 5}"#).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some("file_path"))
        );
        let e = parse_body::<AcquireLockRequest>(br#"{"file_path": "a", "ttl_minutes": "soon"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("ttl_minutes"));
        let e = parse_body::<AcquireLockRequest>(b"{nope").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidJson);
        let e = parse_body::<AcquireLockRequest>(b"[1]").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = parse_body::<AcquireLockRequest>(br#"{"file_path": "a", "agent_id": 7}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("agent_id"));
        let (r, id, ty) = parse_body::<AcquireLockRequest>(br#"{"file_path": "a", "agent_id": "x"}"#).unwrap();
        assert_eq!((r.file_path.as_str(), id.as_deref(), ty), ("a", Some("x"), None));
        let (_, _, _) = parse_body::<HeartbeatRequest>(b"").unwrap();
    }

    #[test]
    fn query_errors_name_the_field() {
        let q: ListTasksRequest = parse_query(Some("status=pending&limit=5")).unwrap();
        assert_eq!(q.limit, Some(5));
        let e = parse_query::<ListTasksRequest>(Some("limit=lots")).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
        let e = parse_query::<ListTasksRequest>(Some("status=lost")).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("status"));
        let a: AuditQueryRequest = parse_query(Some("since=2026-11-21T10:00:00Z&success=false")).unwrap();
        assert_eq!(a.success, Some(false));
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
            (ErrorCode::TaskNotFound, 404),
            (ErrorCode::DatabaseUnavailable, 503),
            (ErrorCode::Internal, 500),
        ];
        for (code, want) in cases {
            assert_eq!(status_of(&CoordError::new(code, "x")).as_u16(), want, "{code}");
        }
    }
}
