//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the same Rust types the
//! handlers parse and answer (their JSON Schemas, via schemars). OpenAPI 3.1 uses JSON
//! Schema 2020-12, which is what schemars produces.

use crate::api::LockStatusResult;
use coord_domain::ErrorCode;
use coord_domain::audit::{AuditQueryRequest, AuditQueryResult};
use coord_domain::handoffs::{ReadHandoffRequest, ReadHandoffResult, WriteHandoffRequest, WriteHandoffResult};
use coord_domain::keys::{
    CreateApiKeyRequest, CreateApiKeyResult, ListApiKeysResult, RevokeApiKeyRequest, RevokeApiKeyResult,
};
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckLocksRequest, CheckLocksResult, ReleaseAllResult, ReleaseLockRequest,
    ReleaseLockResult,
};
use coord_domain::ports::{
    AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::queue::{
    CompleteWorkRequest, CompleteWorkResult, GetTaskResult, GetWorkRequest, GetWorkResult, ListTasksRequest,
    ListTasksResult, SubmitWorkRequest, SubmitWorkResult,
};
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, CleanupResult, DiscoverAgentsRequest, DiscoverAgentsResult, HeartbeatRequest,
    RegisterSessionRequest, SessionResult,
};
use coord_domain::status::StatusResult;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

#[derive(Clone, Copy, PartialEq)]
enum Auth {
    Public,
    Read,
    Key,
}

enum Input {
    None,
    Body(Value),
    Query(Value),
    Path(&'static str, &'static str),
}

struct Route {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    auth: Auth,
    input: Input,
    output: Value,
    /// Error statuses this route can answer besides the common ones.
    errors: &'static [u16],
}

struct Builder {
    generator: SchemaGenerator,
}

impl Builder {
    fn schema<T: JsonSchema>(&mut self) -> Value {
        self.generator.subschema_for::<T>().to_value()
    }

    /// The root schema of a query type, whose properties become query parameters.
    fn query<T: JsonSchema>(&mut self) -> Value {
        let root = self.generator.root_schema_for::<T>().to_value();
        json!({"properties": root.get("properties").cloned().unwrap_or(json!({})),
               "required": root.get("required").cloned().unwrap_or(json!([]))})
    }
}

fn error_schema() -> Value {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    json!({
        "type": "object",
        "description": "An error: a stable snake_case code, a message for people, and the offending field for input errors. Extra context keys may follow.",
        "required": ["success", "error", "message"],
        "properties": {
            "success": {"const": false},
            "error": {"type": "string", "enum": codes},
            "message": {"type": "string"},
            "field": {"type": "string"}
        },
        "additionalProperties": true
    })
}

fn routes(b: &mut Builder) -> Vec<Route> {
    use Auth::*;
    use Input::*;
    let none: &[u16] = &[];
    vec![
        Route {
            method: "get",
            path: "/health",
            summary: "Liveness and database reachability",
            auth: Public,
            input: None,
            output: json!({"type": "object", "required": ["status", "version"], "properties": {"status": {"type": "string"}, "version": {"type": "string"}}}),
            errors: &[503],
        },
        Route {
            method: "post",
            path: "/locks/acquire",
            summary: "Acquire or refresh a file lock",
            auth: Key,
            input: Body(b.schema::<AcquireLockRequest>()),
            output: b.schema::<AcquireLockResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/locks/release",
            summary: "Release a lock you hold",
            auth: Key,
            input: Body(b.schema::<ReleaseLockRequest>()),
            output: b.schema::<ReleaseLockResult>(),
            errors: &[409],
        },
        Route {
            method: "post",
            path: "/locks/release-mine",
            summary: "Release every lock you hold",
            auth: Key,
            input: None,
            output: b.schema::<ReleaseAllResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/locks/check",
            summary: "Live locks on the given paths (all when none given)",
            auth: Read,
            input: Body(b.schema::<CheckLocksRequest>()),
            output: b.schema::<CheckLocksResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/locks",
            summary: "Every live lock",
            auth: Read,
            input: None,
            output: b.schema::<CheckLocksResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/locks/status/{file_path}",
            summary: "Whether one file is locked, and by whom",
            auth: Read,
            input: Path("file_path", "Repo-relative path of the file (slashes allowed)."),
            output: b.schema::<LockStatusResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/work/submit",
            summary: "Add a task to the queue",
            auth: Key,
            input: Body(b.schema::<SubmitWorkRequest>()),
            output: b.schema::<SubmitWorkResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/work/claim",
            summary: "Claim the most urgent available task",
            auth: Key,
            input: Body(b.schema::<GetWorkRequest>()),
            output: b.schema::<GetWorkResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/work/complete",
            summary: "Complete (or fail) a task you claimed",
            auth: Key,
            input: Body(b.schema::<CompleteWorkRequest>()),
            output: b.schema::<CompleteWorkResult>(),
            errors: &[404, 409],
        },
        Route {
            method: "get",
            path: "/work/{task_id}",
            summary: "One task in full",
            auth: Key,
            input: Path("task_id", "The task's id (a UUID)."),
            output: b.schema::<GetTaskResult>(),
            errors: &[404],
        },
        Route {
            method: "get",
            path: "/work",
            summary: "List tasks, most urgent first",
            auth: Key,
            input: Query(b.query::<ListTasksRequest>()),
            output: b.schema::<ListTasksResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/sessions/register",
            summary: "Start a session (discoverable by others)",
            auth: Key,
            input: Body(b.schema::<RegisterSessionRequest>()),
            output: b.schema::<SessionResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/sessions/heartbeat",
            summary: "Keep your session and task claims alive",
            auth: Key,
            input: Body(b.schema::<HeartbeatRequest>()),
            output: b.schema::<SessionResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/sessions/idle",
            summary: "Mark your session idle",
            auth: Key,
            input: None,
            output: b.schema::<SessionResult>(),
            errors: &[404],
        },
        Route {
            method: "get",
            path: "/agents",
            summary: "Discover agents by capability and status",
            auth: Key,
            input: Query(b.query::<DiscoverAgentsRequest>()),
            output: b.schema::<DiscoverAgentsResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/agents/cleanup",
            summary: "Disconnect stale agents, free their locks and tasks",
            auth: Key,
            input: Body(b.schema::<CleanupDeadAgentsRequest>()),
            output: b.schema::<CleanupResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/handoffs",
            summary: "Write a handoff document",
            auth: Key,
            input: Body(b.schema::<WriteHandoffRequest>()),
            output: b.schema::<WriteHandoffResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/handoffs",
            summary: "Read recent handoff documents",
            auth: Key,
            input: Query(b.query::<ReadHandoffRequest>()),
            output: b.schema::<ReadHandoffResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/audit",
            summary: "Query the audit trail, newest first",
            auth: Key,
            input: Query(b.query::<AuditQueryRequest>()),
            output: b.schema::<AuditQueryResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/status",
            summary: "One-screen summary for the caller",
            auth: Key,
            input: None,
            output: b.schema::<StatusResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/keys",
            summary: "Create an API key bound to an identity (operator keys only); the secret is shown once",
            auth: Key,
            input: Body(b.schema::<CreateApiKeyRequest>()),
            output: b.schema::<CreateApiKeyResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/keys",
            summary: "List API keys, without secrets (operator keys only)",
            auth: Key,
            input: None,
            output: b.schema::<ListApiKeysResult>(),
            errors: none,
        },
        Route {
            method: "post",
            path: "/keys/revoke",
            summary: "Revoke an API key (operator keys only)",
            auth: Key,
            input: Body(b.schema::<RevokeApiKeyRequest>()),
            output: b.schema::<RevokeApiKeyResult>(),
            errors: &[404],
        },
        Route {
            method: "post",
            path: "/ports/allocate",
            summary: "Lease a block of four ports for a session",
            auth: Key,
            input: Body(b.schema::<AllocatePortsRequest>()),
            output: b.schema::<AllocatePortsResult>(),
            errors: &[409],
        },
        Route {
            method: "post",
            path: "/ports/release",
            summary: "Release a session's ports (idempotent)",
            auth: Key,
            input: Body(b.schema::<ReleasePortsRequest>()),
            output: b.schema::<ReleasePortsResult>(),
            errors: none,
        },
        Route {
            method: "get",
            path: "/ports/status",
            summary: "Live port leases",
            auth: Read,
            input: None,
            output: b.schema::<PortsStatusResult>(),
            errors: none,
        },
    ]
}

fn identity_headers() -> Vec<Value> {
    ["X-Agent-Id", "X-Agent-Type"]
        .iter()
        .map(|name| {
            json!({"name": name, "in": "header", "required": false,
                   "description": "Who the request acts as (ignored in favour of the key's binding; a different value with a bound key is 403).",
                   "schema": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[!-~]([ -~]*[!-~])?$"}})
        })
        .collect()
}

fn operation(r: &Route, error_ref: &Value) -> Value {
    let mut op = Map::new();
    op.insert("summary".into(), json!(r.summary));
    op.insert(
        "operationId".into(),
        json!(format!(
            "{}_{}",
            r.method,
            r.path.trim_matches('/').replace(['/', '{', '}', '-'], "_")
        )),
    );
    let mut params = Vec::new();
    if r.auth != Auth::Public {
        params.extend(identity_headers());
    }
    let mut statuses: Vec<u16> = vec![500];
    match &r.input {
        Input::None => {}
        Input::Body(schema) => {
            op.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": schema}}}),
            );
            statuses.extend([400, 413, 422]);
        }
        Input::Query(q) => {
            let required: Vec<&str> = q["required"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = q["properties"].as_object() {
                for (name, schema) in props {
                    let mut schema = schema.clone();
                    let description = schema.as_object_mut().and_then(|o| o.remove("description"));
                    let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": schema});
                    if let Some(d) = description {
                        p["description"] = d;
                    }
                    params.push(p);
                }
            }
            statuses.push(422);
        }
        Input::Path(name, description) => {
            let schema = if *name == "task_id" {
                json!({"type": "string", "format": "uuid"})
            } else {
                json!({"type": "string", "minLength": 1})
            };
            params.push(
                json!({"name": name, "in": "path", "required": true, "description": description, "schema": schema}),
            );
            statuses.push(422);
        }
    }
    if r.auth != Auth::Public {
        // 422 too: an identity named in headers can be invalid.
        statuses.extend([401, 403, 422, 503]);
    }
    statuses.extend(r.errors.iter().copied());
    statuses.sort_unstable();
    statuses.dedup();
    if !params.is_empty() {
        op.insert("parameters".into(), Value::Array(params));
    }
    let mut responses = Map::new();
    responses.insert("200".into(), json!({"description": "The operation's answer (read `success`).", "content": {"application/json": {"schema": r.output}}}));
    for s in statuses {
        responses.insert(
            s.to_string(),
            json!({"description": describe(s), "content": {"application/json": {"schema": error_ref}}}),
        );
    }
    op.insert("responses".into(), Value::Object(responses));
    op.insert(
        "security".into(),
        match r.auth {
            Auth::Public | Auth::Read => json!([{}, {"ApiKey": []}, {"Bearer": []}]),
            Auth::Key => json!([{"ApiKey": []}, {"Bearer": []}]),
        },
    );
    Value::Object(op)
}

fn describe(status: u16) -> &'static str {
    match status {
        400 => "The body is not valid JSON.",
        401 => "No API key, or an invalid, expired or revoked one.",
        403 => "The API key is bound to another identity.",
        404 => "Not found.",
        409 => "Refused by the current state (e.g. not the owner).",
        413 => "The body is too large.",
        422 => "Invalid input; `field` names it.",
        503 => "The database is unavailable.",
        _ => "Unexpected server error.",
    }
}

/// The whole document.
pub fn document() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "#/components/schemas/".into();
    let mut b = Builder {
        generator: settings.into_generator(),
    };
    let routes = routes(&mut b);
    let error_ref = json!({"$ref": "#/components/schemas/Error"});
    let mut paths = Map::new();
    for r in &routes {
        let entry = paths.entry(r.path.to_string()).or_insert_with(|| json!({}));
        entry[r.method] = operation(r, &error_ref);
    }
    let mut schemas = b.generator.take_definitions(true);
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Agent Coordinator",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Coordination for AI coding agents: file locks, a work queue, sessions, handoffs, port blocks and an audit trail. MCP over streamable HTTP is at /mcp."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "Bearer": {"type": "http", "scheme": "bearer"}
            }
        }
    })
}
