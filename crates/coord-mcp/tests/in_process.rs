//! The MCP server driven in-process over a duplex pipe by rmcp's own client.

use coord_mcp::{CoordMcp, IdentityConfig, McpOptions};
use coord_service::CoordinationExt as _;
use coord_service::{CoordConfig, Coordinator, DatabaseClock};
use coord_sqlite::SqliteStore;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ReadResourceRequestParams,
    ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;

#[derive(Clone)]
struct Client(&'static str);

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new(self.0, "1.0"))
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    coord: Arc<Coordinator>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let coord = Coordinator::new(Arc::new(store), Arc::new(DatabaseClock), CoordConfig::default());
    Setup {
        _dir: dir,
        coord: Arc::new(coord),
    }
}

/// One client connection to its own server instance over a duplex pipe.
async fn connect(
    coord: &Arc<Coordinator>,
    client_name: &'static str,
    identity: IdentityConfig,
) -> (RunningService<RoleClient, Client>, tokio::task::JoinHandle<()>) {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    // Holdings stay after a disconnect here (the grace-period release is tested with the
    // real `coord mcp` process, in coord-cli's mcp_stdio tests).
    let options = McpOptions {
        release_after: None,
        ..McpOptions::stdio(identity)
    };
    let server = CoordMcp::new(coord.clone(), options);
    let handle = tokio::spawn(async move {
        let running = server.clone().serve(server_io).await.expect("server starts");
        let _ = running.waiting().await;
        server.close(std::future::pending()).await;
    });
    let client = Client(client_name).serve(client_io).await.expect("client connects");
    (client, handle)
}

fn identity(id: &str) -> IdentityConfig {
    IdentityConfig {
        agent_id: Some(id.into()),
        agent_type: Some("claude_code".into()),
        host: "box".into(),
        instance: None,
    }
}

async fn call(client: &RunningService<RoleClient, Client>, tool: &'static str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().expect("structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_have_the_spec_names_and_schemas_from_the_rust_types() {
    let s = setup();
    let (client, _h) = connect(&s.coord, "test-client", identity("a")).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for required in [
        "acquire_lock",
        "release_lock",
        "check_locks",
        "get_work",
        "complete_work",
        "submit_work",
        "get_task",
        "write_handoff",
        "read_handoff",
        "discover_agents",
        "register_session",
        "heartbeat",
        "list_toolsets",
        "enable_toolset",
    ] {
        assert!(names.contains(&required), "missing tool {required}: {names:?}");
    }
    let acquire = tools.iter().find(|t| t.name == "acquire_lock").unwrap();
    assert!(acquire.description.as_deref().unwrap().contains("blocked"));
    let schema = serde_json::to_value(&acquire.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["file_path"]));
    let props = &schema["properties"];
    assert!(
        props["ttl_minutes"]["description"].as_str().unwrap().contains("480"),
        "{schema}"
    );
    assert!(props["reason"].is_object());
    let submit = tools.iter().find(|t| t.name == "submit_work").unwrap();
    let schema = serde_json::to_value(&submit.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["task_type", "task_description"]));
    for t in &tools {
        assert!(
            t.description.as_deref().is_some_and(|d| d.len() > 40),
            "{} needs a usable description",
            t.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_coordinate_through_mcp() {
    let s = setup();
    let (a, _ha) = connect(&s.coord, "agent-a-client", identity("agent-a")).await;
    let (b, _hb) = connect(&s.coord, "agent-b-client", identity("agent-b")).await;

    let got = call(
        &a,
        "acquire_lock",
        json!({"file_path": "src/lib.rs", "reason": "refactor"}),
    )
    .await;
    assert_eq!(got.is_error, Some(false));
    let v = structured(&got);
    assert_eq!(
        (v["success"].as_bool(), v["action"].as_str()),
        (Some(true), Some("acquired"))
    );
    let text = got.content[0].as_text().unwrap().text.clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        v,
        "text content mirrors the structured result"
    );

    let blocked = call(&b, "acquire_lock", json!({"file_path": "./src//lib.rs"})).await;
    assert_eq!(
        blocked.is_error,
        Some(false),
        "a refusal is a normal result, not an error"
    );
    let v = structured(&blocked);
    assert_eq!(
        (v["success"].as_bool(), v["action"].as_str(), v["locked_by"].as_str()),
        (Some(false), Some("blocked"), Some("agent-a"))
    );

    let not_owner = structured(&call(&b, "release_lock", json!({"file_path": "src/lib.rs"})).await);
    assert_eq!(not_owner["error"], "not_lock_owner");
    assert!(
        structured(&call(&a, "release_lock", json!({"file_path": "src/lib.rs"})).await)["released"]
            .as_bool()
            .unwrap()
    );
    assert_eq!(
        structured(&call(&b, "acquire_lock", json!({"file_path": "src/lib.rs"})).await)["action"],
        "acquired"
    );

    let first = structured(
        &call(
            &a,
            "submit_work",
            json!({"task_type": "build", "task_description": "build it"}),
        )
        .await,
    );
    let first_id = first["task_id"].as_str().unwrap().to_string();
    let second = structured(
        &call(
            &a,
            "submit_work",
            json!({"task_type": "test", "task_description": "test it", "depends_on": [first_id], "priority": 1}),
        )
        .await,
    );
    let claimed = structured(&call(&b, "get_work", json!({})).await);
    assert_eq!(
        claimed["task_id"], first["task_id"],
        "the dependent waits despite its priority"
    );
    let none = structured(&call(&a, "get_work", json!({})).await);
    assert_eq!(none, json!({"success": false, "reason": "no_tasks_available"}));
    let done = structured(
        &call(
            &b,
            "complete_work",
            json!({"task_id": claimed["task_id"], "success": true}),
        )
        .await,
    );
    assert_eq!(done["status"], "completed");
    assert_eq!(
        structured(&call(&a, "get_work", json!({})).await)["task_id"],
        second["task_id"]
    );
    let shown = structured(&call(&a, "get_task", json!({"task_id": second["task_id"]})).await);
    assert_eq!(shown["task"]["claimed_by"], "agent-a");

    assert!(
        structured(
            &call(
                &a,
                "write_handoff",
                json!({"summary": "done for today", "next_steps": ["ship"]})
            )
            .await
        )["success"]
            .as_bool()
            .unwrap()
    );
    let handoffs = structured(&call(&b, "read_handoff", json!({"agent_name": "agent-a"})).await);
    assert_eq!(handoffs["handoffs"][0]["summary"], "done for today");
    let agents = structured(&call(&b, "discover_agents", json!({"status": "active"})).await);
    let ids: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["agent_id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"agent-a") && ids.contains(&"agent-b"),
        "both connections registered on first use: {ids:?}"
    );
    assert!(
        structured(&call(&a, "heartbeat", json!({})).await)["success"]
            .as_bool()
            .unwrap()
    );
    assert_eq!(
        structured(&call(&a, "cleanup_dead_agents", json!({})).await)["agents_cleaned"],
        0
    );
    assert_eq!(
        structured(&call(&a, "check_locks", json!({})).await)["locks"][0]["locked_by"],
        "agent-b"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_arguments_name_the_field_and_unknown_tools_are_errors() {
    let s = setup();
    let (client, _h) = connect(&s.coord, "c", identity("a")).await;
    let missing = call(&client, "acquire_lock", json!({"path": "x"})).await;
    assert_eq!(missing.is_error, Some(true));
    let text = missing.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("file_path"), "{text}");
    let wrong_type = call(
        &client,
        "acquire_lock",
        json!({"file_path": "x", "ttl_minutes": "soon"}),
    )
    .await;
    assert_eq!(wrong_type.is_error, Some(true));
    let invalid = structured(&call(&client, "acquire_lock", json!({"file_path": "x", "ttl_minutes": 9999})).await);
    assert_eq!(
        (invalid["error"].as_str(), invalid["field"].as_str()),
        (Some("ttl_out_of_range"), Some("ttl_minutes"))
    );
    let unknown = client.call_tool(CallToolRequestParams::new("drop_database")).await;
    assert!(unknown.is_err(), "unknown tools are refused: {unknown:?}");
    // The connection is still good afterwards.
    assert!(structured(&call(&client, "check_locks", json!({})).await)["locks"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_json() {
    let s = setup();
    let (client, _h) = connect(&s.coord, "c", identity("a")).await;
    call(&client, "acquire_lock", json!({"file_path": "a.rs"})).await;
    call(
        &client,
        "submit_work",
        json!({"task_type": "t", "task_description": "pending one"}),
    )
    .await;
    call(&client, "write_handoff", json!({"summary": "handed off"})).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["locks://current", "work://pending", "handoffs://recent"]);
    let read = |uri: &'static str| {
        let client = &client;
        async move {
            let r = client.read_resource(ReadResourceRequestParams::new(uri)).await.unwrap();
            match &r.contents[0] {
                ResourceContents::TextResourceContents { text, mime_type, .. } => {
                    assert_eq!(mime_type.as_deref(), Some("application/json"));
                    serde_json::from_str::<Value>(text).unwrap()
                }
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(read("locks://current").await["locks"][0]["file_path"], "a.rs");
    assert_eq!(
        read("work://pending").await["tasks"][0]["task_description"],
        "pending one"
    );
    assert_eq!(read("handoffs://recent").await["handoffs"][0]["summary"], "handed off");
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new("secrets://all"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_defaults_to_the_client_name_and_disconnect_leaves_the_session_idle() {
    let s = setup();
    let (client, handle) = connect(
        &s.coord,
        "claude-code",
        IdentityConfig {
            host: "box".into(),
            ..Default::default()
        },
    )
    .await;
    let got = structured(&call(&client, "acquire_lock", json!({"file_path": "kept.rs"})).await);
    assert_eq!(got["success"], true);
    client.cancel().await.unwrap();
    handle.await.unwrap();
    let observer = coord_domain::Caller::new("observer", "test");
    let agents = s.coord.discover_agents(&observer, Default::default()).await.unwrap();
    let me = agents
        .agents
        .iter()
        .find(|a| a.agent_id == "claude-code@box")
        .expect("registered on first use");
    assert_eq!(me.agent_type, "claude_code");
    assert_eq!(me.status, coord_domain::sessions::AgentStatus::Idle);
    let locks = s.coord.check_locks(&observer, Default::default()).await.unwrap();
    assert_eq!(
        locks.locks[0].locked_by, "claude-code@box",
        "locks stay after disconnect"
    );
}
