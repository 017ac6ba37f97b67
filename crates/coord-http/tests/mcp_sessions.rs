//! An MCP session over streamable HTTP is an agent's connection: its first call starts a
//! coordinator session, and the client's DELETE (it is leaving) releases its locks and
//! requeues its claimed tasks after the grace period, as EOF does for stdio.

use coord_domain::Caller;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::locks::CheckLocksRequest;
use coord_domain::queue::{GetTaskRequest, SubmitWorkRequest, TaskStatus};
use coord_http::{ApiConfig, create_coordination_api};
use coord_service::{CoordConfig, CoordinationExt as _, Coordinator, DatabaseClock};
use coord_sqlite::SqliteStore;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const OPERATOR: &str = "operator-key";

async fn server(release_after: Option<Duration>) -> (String, Coordinator, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let coord = Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default());
    let config = ApiConfig {
        api_keys: vec![OPERATOR.into()],
        release_after,
        ..ApiConfig::default()
    };
    let app = create_coordination_api(Arc::new(coord.clone()), &config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, coord, dir)
}

async fn client(base: &str, agent_id: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = HashMap::new();
    headers.insert("x-agent-id".parse().unwrap(), agent_id.parse().unwrap());
    // A type with a default profile that may lock and claim (an unknown one reads only).
    headers.insert("x-agent-type".parse().unwrap(), "claude_code".parse().unwrap());
    // Bearer rather than X-API-Key: rmcp's client sends its auth header on the DELETE.
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .auth_header(OPERATOR)
        .custom_headers(headers);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn call(c: &rmcp::service::RunningService<rmcp::RoleClient, ()>, tool: &str, args: Value) -> Value {
    let args: Map<String, Value> = serde_json::from_value(args).unwrap();
    let r = c
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap();
    r.structured_content.unwrap_or(Value::Null)
}

/// Polls `done` for up to 20 s: the release runs in the background after the DELETE.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if done().await {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 20 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_mcp_session_releases_the_agents_holdings() {
    let (url, coord, _dir) = server(Some(Duration::ZERO)).await;
    let boss = Caller::new("boss", "cli");
    let task = coord
        .submit_work(
            &boss,
            SubmitWorkRequest {
                task_type: "t".into(),
                task_description: "do it".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .task_id;

    let leaver = client(&url, "leaver").await;
    let stayer = client(&url, "stayer").await;
    assert_eq!(
        call(&leaver, "acquire_lock", json!({"file_path": "src/a.rs"})).await["success"],
        true
    );
    assert_eq!(call(&leaver, "get_work", json!({})).await["task_id"], task.as_str());
    assert_eq!(
        call(&stayer, "acquire_lock", json!({"file_path": "src/b.rs"})).await["success"],
        true
    );

    leaver.cancel().await.unwrap();
    let observer = Caller::new("observer", "cli");
    let took = eventually("the release", async || {
        let locks = coord
            .check_locks(&observer, CheckLocksRequest::default())
            .await
            .unwrap()
            .locks;
        locks.iter().all(|l| l.locked_by != "leaver")
    })
    .await;
    eprintln!("released {took:?} after the DELETE answered");
    let t = coord
        .get_task(&observer, GetTaskRequest { task_id: task.clone() })
        .await
        .unwrap();
    assert_eq!(
        t.task.status,
        TaskStatus::Pending,
        "the claimed task is back in the queue"
    );
    assert_eq!(t.task.attempts, 1, "the attempt is counted");
    // The other MCP session keeps its lock and its agent.
    let locks = coord
        .check_locks(&observer, CheckLocksRequest::default())
        .await
        .unwrap()
        .locks;
    assert_eq!(locks.len(), 1);
    assert_eq!(locks[0].locked_by, "stayer");
    // The release is on the record, as the leaver's own end_session.
    let audit = coord
        .query_audit(
            &observer,
            AuditQueryRequest {
                agent_id: Some("leaver".into()),
                operation: Some("end_session".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        audit
            .entries
            .iter()
            .any(|e| e.result["released"] == json!(["src/a.rs"])),
        "{:?}",
        audit.entries
    );
    stayer.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_grace_period_off_a_deleted_session_keeps_its_locks() {
    let (url, coord, _dir) = server(None).await;
    let keeper = client(&url, "keeper").await;
    assert_eq!(
        call(&keeper, "acquire_lock", json!({"file_path": "src/a.rs"})).await["success"],
        true
    );
    keeper.cancel().await.unwrap();
    let observer = Caller::new("observer", "cli");
    // The session goes idle at once (its end_session with release_locks false is audited).
    eventually("the session going idle", async || {
        let audit = coord
            .query_audit(
                &observer,
                AuditQueryRequest {
                    agent_id: Some("keeper".into()),
                    operation: Some("end_session".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        !audit.entries.is_empty()
    })
    .await;
    let locks = coord
        .check_locks(&observer, CheckLocksRequest::default())
        .await
        .unwrap()
        .locks;
    assert_eq!(locks.len(), 1, "kept until its TTL");
}
