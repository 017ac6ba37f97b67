//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the operation registry —
//! every HTTP binding of every operation, with the JSON Schemas of the same Rust types
//! the service parses and answers (via schemars). OpenAPI 3.1 uses JSON Schema 2020-12,
//! which is what schemars produces.

use coord_domain::ErrorCode;
use coord_domain::access::Access;
use coord_service::{Http, Input, Method, OpEntry, ops};
use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

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

/// The path as OpenAPI writes it (`{*rest}` is axum's catch-all syntax).
fn openapi_path(path: &str) -> String {
    path.replace("{*", "{")
}

/// The properties and required names of a request type, for parameters.
fn parameters_of(op: &OpEntry, g: &mut SchemaGenerator) -> (Map<String, Value>, Vec<String>) {
    let root = (op.request_root)(g).to_value();
    let props = root
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = root
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    (props, required)
}

fn parameter(name: &str, location: &str, required: bool, schema: &Value) -> Value {
    let mut schema = schema.clone();
    let description = schema.as_object_mut().and_then(|o| o.remove("description"));
    let mut p = json!({"name": name, "in": location, "required": required, "schema": schema});
    if let Some(d) = description {
        p["description"] = d;
    }
    p
}

fn operation(op: &OpEntry, binding: &Http, g: &mut SchemaGenerator, error_ref: &Value) -> Value {
    let mut doc = Map::new();
    doc.insert("summary".into(), json!(binding.summary.unwrap_or(op.summary)));
    doc.insert(
        "description".into(),
        json!(format!("Operation `{}`. {}", op.name, op.description)),
    );
    doc.insert(
        "operationId".into(),
        json!(format!(
            "{}_{}",
            binding.method.as_str(),
            openapi_path(binding.path)
                .trim_matches('/')
                .replace(['/', '{', '}', '-'], "_")
        )),
    );
    let mut params = identity_headers();
    // 422 too: an identity named in headers can be invalid; 400 and 413: POST bodies
    // carry identity claims, so every POST reads its body.
    let mut statuses: Vec<u16> = vec![401, 403, 422, 500, 503];
    if binding.method == Method::Post {
        statuses.extend([400, 413]);
    }
    match binding.input {
        Input::None => {}
        Input::Body => {
            // A body is optional when none of its fields is (an empty body reads as {}).
            let required = !parameters_of(op, g).1.is_empty();
            doc.insert(
                "requestBody".into(),
                json!({"required": required, "content": {"application/json": {"schema": (op.request_schema)(g).to_value()}}}),
            );
        }
        Input::Query => {
            let (props, required) = parameters_of(op, g);
            for (name, schema) in &props {
                params.push(parameter(name, "query", required.contains(name), schema));
            }
        }
        Input::Path(name) => {
            let (props, _) = parameters_of(op, g);
            let schema = props.get(name).cloned().unwrap_or(json!({"type": "string"}));
            params.push(parameter(name, "path", true, &schema));
        }
    }
    statuses.extend(binding.errors.iter().copied());
    statuses.sort_unstable();
    statuses.dedup();
    doc.insert("parameters".into(), Value::Array(params));
    let mut responses = Map::new();
    responses.insert("200".into(), json!({"description": "The operation's answer (read `success`).", "content": {"application/json": {"schema": (op.response_schema)(g).to_value()}}}));
    for s in statuses {
        responses.insert(
            s.to_string(),
            json!({"description": describe(s), "content": {"application/json": {"schema": error_ref}}}),
        );
    }
    doc.insert("responses".into(), Value::Object(responses));
    doc.insert(
        "security".into(),
        match op.access {
            Access::Read => json!([{}, {"ApiKey": []}, {"Bearer": []}]),
            Access::Agent | Access::Operator => json!([{"ApiKey": []}, {"Bearer": []}]),
        },
    );
    Value::Object(doc)
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

fn health() -> Value {
    json!({
        "summary": "Liveness and database reachability",
        "operationId": "get_health",
        "responses": {
            "200": {"description": "Healthy.", "content": {"application/json": {"schema": {"type": "object", "required": ["status", "version"], "properties": {"status": {"type": "string"}, "version": {"type": "string"}}}}}},
            "503": {"description": describe(503), "content": {"application/json": {"schema": {"type": "object"}}}}
        },
        "security": [{}]
    })
}

fn metrics() -> Value {
    json!({
        "summary": "Prometheus metrics (OpenMetrics text): this server's operation counters and the fleet's figures of get_stats",
        "operationId": "get_metrics",
        "responses": {
            "200": {"description": "The metrics, in the OpenMetrics text format.", "content": {"application/openmetrics-text": {"schema": {"type": "string"}}}},
            "401": {"description": describe(401), "content": {"application/json": {"schema": {"type": "object"}}}},
            "403": {"description": describe(403), "content": {"application/json": {"schema": {"type": "object"}}}}
        }
    })
}

/// The whole document.
pub fn document() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "#/components/schemas/".into();
    let mut g = settings.into_generator();
    let error_ref = json!({"$ref": "#/components/schemas/Error"});
    let mut paths = Map::new();
    paths.insert("/health".into(), json!({"get": health()}));
    paths.insert("/metrics".into(), json!({"get": metrics()}));
    for op in ops() {
        for binding in op.http {
            let entry = paths.entry(openapi_path(binding.path)).or_insert_with(|| json!({}));
            entry[binding.method.as_str()] = operation(op, binding, &mut g, &error_ref);
        }
    }
    let mut schemas = g.take_definitions(true);
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Agent Coordinator",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Coordination for AI coding agents: file locks, a work queue, sessions, handoffs, port blocks and an audit trail. Every operation here is also an MCP tool (at /mcp) and `coord call <operation>`. MCP over streamable HTTP is at /mcp."
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
