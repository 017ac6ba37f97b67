//! The access matrix, generated from the registry and proven on both network doors:
//! for every operation and every credential (no key, a key bound to an identity, an
//! operator key), the JSON API and MCP over streamable HTTP refuse exactly what
//! `coord_domain::access::authorize` refuses — and every refusal is audited.

use coord_domain::Caller;
use coord_domain::access::{Credential, authorize};
use coord_domain::audit::AuditQueryRequest;
use coord_http::{ApiConfig, create_coordination_api};
use coord_service::{CoordConfig, CoordinationExt as _, Coordinator, Input, ManualClock, Method, OpEntry, ops};
use coord_sqlite::SqliteStore;
use reqwest::StatusCode;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

const OPERATOR: &str = "operator-key";
const BOUND: &str = "bound-key";

struct Server {
    url: String,
    coord: Coordinator,
    _dir: tempfile::TempDir,
}

async fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let clock = Arc::new(ManualClock::starting_now());
    let coord = Coordinator::new(Arc::new(store), clock, CoordConfig::default());
    let mut config = ApiConfig {
        api_keys: vec![OPERATOR.into()],
        ..ApiConfig::default()
    };
    config
        .key_identities
        .insert(BOUND.into(), Caller::new("bound-agent", "codex"));
    let app = create_coordination_api(Arc::new(coord.clone()), &config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server { url, coord, _dir: dir }
}

fn key_of(c: Credential) -> Option<&'static str> {
    match c {
        Credential::Anonymous => None,
        Credential::Bound => Some(BOUND),
        Credential::Operator => Some(OPERATOR),
        Credential::Local | Credential::Session => unreachable!("not a network credential"),
    }
}

/// Whether an error answer is a refusal for access (not for anything else).
fn refused_for_access(error: &Value) -> bool {
    matches!(error["error"].as_str(), Some("unauthorized" | "forbidden"))
}

/// Calls `op`'s first HTTP route with its example request; answers whether the call
/// was refused for access.
async fn over_http(http: &reqwest::Client, base: &str, op: &OpEntry, credential: Credential) -> bool {
    let binding = op.http[0];
    let example: Value = serde_json::from_str(op.example).unwrap();
    let mut request = match binding.method {
        Method::Post => http.post(format!("{base}{}", binding.path)).json(&example),
        Method::Get => {
            let path = match binding.input {
                Input::Path(name) => binding
                    .path
                    .replace(&format!("{{*{name}}}"), example[name].as_str().unwrap())
                    .replace(&format!("{{{name}}}"), example[name].as_str().unwrap()),
                _ => binding.path.to_string(),
            };
            let mut url = reqwest::Url::parse(&format!("{base}{path}")).unwrap();
            if binding.input == Input::Query {
                let pairs: Vec<(String, String)> = example
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter_map(|(k, v)| match v {
                        Value::String(s) => Some((k.clone(), s.clone())),
                        Value::Number(_) | Value::Bool(_) => Some((k.clone(), v.to_string())),
                        _ => None,
                    })
                    .collect();
                url.query_pairs_mut().extend_pairs(pairs);
            }
            http.get(url)
        }
    };
    if let Some(key) = key_of(credential) {
        request = request.header("x-api-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let refused = refused_for_access(&body);
    if refused {
        let want = if credential == Credential::Anonymous {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::FORBIDDEN
        };
        assert_eq!(status, want, "{} over HTTP: {body}", op.name);
    }
    refused
}

async fn mcp_client(base: &str, key: &str, agent_id: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut headers = HashMap::new();
    headers.insert("x-api-key".parse().unwrap(), key.parse().unwrap());
    headers.insert("x-agent-id".parse().unwrap(), agent_id.parse().unwrap());
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp")).custom_headers(headers);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn over_mcp(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>, op: &OpEntry) -> bool {
    let example: Map<String, Value> = serde_json::from_str(op.example).unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new(op.name).with_arguments(example))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", op.name));
    let answer = result.structured_content.clone().unwrap_or(Value::Null);
    refused_for_access(&answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_authorized_alike_on_http_and_mcp() {
    // reqwest is built without a default TLS provider (see Cargo.toml).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let s = server().await;
    let http = reqwest::Client::new();
    let bound_mcp = mcp_client(&s.url, BOUND, "bound-agent").await;
    let operator_mcp = mcp_client(&s.url, OPERATOR, "operator-agent").await;
    let names =
        |list: Vec<rmcp::model::Tool>| -> Vec<String> { list.into_iter().map(|t| t.name.to_string()).collect() };
    // An operator key lists every tool; a bound key what it may call, of its toolsets.
    let tools = names(operator_mcp.list_all_tools().await.unwrap());
    let bound_tools = names(bound_mcp.list_all_tools().await.unwrap());
    let mut refusals_expected = 0;
    for op in ops() {
        assert_eq!(tools.contains(&op.name.to_string()), op.is_mcp_tool(), "{}", op.name);
        if bound_tools.contains(&op.name.to_string()) {
            assert!(
                authorize(Credential::Bound, op.access).is_ok(),
                "{} listed to a bound key",
                op.name
            );
        }
        for credential in [Credential::Anonymous, Credential::Bound, Credential::Operator] {
            let want = authorize(credential, op.access).is_err();
            refusals_expected += usize::from(want);
            if !op.http.is_empty() {
                assert_eq!(
                    over_http(&http, &s.url, op, credential).await,
                    want,
                    "{} over HTTP as {credential:?}",
                    op.name
                );
            }
            let mcp = match credential {
                Credential::Anonymous => continue, // no MCP session without a key (below)
                Credential::Bound => &bound_mcp,
                _ => &operator_mcp,
            };
            if op.is_mcp_tool() {
                assert_eq!(over_mcp(mcp, op).await, want, "{} over MCP as {credential:?}", op.name);
            }
        }
    }
    assert!(refusals_expected > 0);
    // Every access refusal on HTTP is in the audit trail, as refused.
    let refused = s
        .coord
        .query_audit(
            &Caller::new("auditor", "cli"),
            AuditQueryRequest {
                success: Some(false),
                limit: Some(1000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let access_refusals = refused
        .entries
        .iter()
        .filter(|e| matches!(e.error_code.as_deref(), Some("unauthorized" | "forbidden")))
        .count();
    // Bound over HTTP and MCP (operators are never refused). A request without a key is
    // refused before its body is read and counted, not audited: an anonymous client must
    // not grow the audit trail at will.
    let refused_as = |c: Credential, op: &OpEntry| usize::from(authorize(c, op.access).is_err());
    let expected: usize = ops()
        .iter()
        .filter(|op| op.audit == coord_service::Audit::Always)
        .map(|op| {
            let http = if op.http.is_empty() {
                0
            } else {
                refused_as(Credential::Bound, op)
            };
            let mcp = if op.is_mcp_tool() {
                refused_as(Credential::Bound, op)
            } else {
                0
            };
            http + mcp
        })
        .sum();
    assert_eq!(access_refusals, expected, "{refused:?}");
    assert!(
        refused.entries.iter().all(
            |e| e.agent_id != "anonymous" || !matches!(e.error_code.as_deref(), Some("unauthorized" | "forbidden"))
        ),
        "no audit row per anonymous refusal"
    );
    let anonymous: usize = ops()
        .iter()
        .filter(|op| !op.http.is_empty())
        .map(|op| refused_as(Credential::Anonymous, op))
        .sum();
    let metrics = s.coord.metrics().render(None);
    assert!(
        metrics.contains(&format!("coord_http_refused_total{{reason=\"no_key\"}} {anonymous}")),
        "counted instead: {anonymous}\n{metrics}"
    );
    // No key, no MCP session.
    let no_key = reqwest::Client::new()
        .post(format!("{}/mcp", s.url))
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(no_key.status(), StatusCode::UNAUTHORIZED);
    bound_mcp.cancel().await.unwrap();
    operator_mcp.cancel().await.unwrap();
}
