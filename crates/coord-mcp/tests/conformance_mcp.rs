//! The whole service conformance suite through the MCP door: every case calls MCP tools
//! through rmcp's client, one connection per calling identity (MCP identity belongs to
//! the connection), each to its own `CoordMcp` server over an in-process pipe, with the
//! store (SQLite) behind them. Answers and refusals must survive the round trip.

#[path = "../../coord-sqlite/tests/support/fixture.rs"]
mod fixture;

use async_trait::async_trait;
use coord_conformance::{Backend, Door, Fixture};
use coord_domain::access::Principal;
use coord_domain::{Caller, CoordError, CoordResult};
use coord_mcp::{CoordMcp, IdentityConfig, McpOptions, SessionMode};
use coord_service::{Coordination, Coordinator, OpEntry};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Mutex;

struct McpBackend;

type Client = Arc<RunningService<RoleClient, ()>>;

/// `Coordination` over MCP tool calls.
struct McpDoor {
    coord: Arc<Coordinator>,
    clients: Mutex<HashMap<(String, String), Client>>,
}

impl McpDoor {
    async fn client(&self, who: &Caller) -> Client {
        let mut clients = self.clients.lock().await;
        let key = (who.agent_id.clone(), who.agent_type.clone());
        if let Some(c) = clients.get(&key) {
            return c.clone();
        }
        let (server_io, client_io) = tokio::io::duplex(256 * 1024);
        let mut options = McpOptions::stdio(IdentityConfig {
            agent_id: Some(who.agent_id.clone()),
            agent_type: Some(who.agent_type.clone()),
            host: "test".into(),
            instance: None,
        });
        // The cases count sessions and audit rows: the client manages its session.
        options.session_mode = SessionMode::Manual;
        let server = CoordMcp::new(self.coord.clone(), options);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = Arc::new(().serve(client_io).await.expect("client connects"));
        clients.insert(key, client.clone());
        client
    }
}

#[async_trait]
impl Coordination for McpDoor {
    async fn invoke(&self, op: &'static OpEntry, who: &Principal, request: CoordResult<Value>) -> CoordResult<Value> {
        let Value::Object(arguments) = request? else {
            panic!("MCP arguments are objects; the cases send none other through this door");
        };
        let client = self.client(&who.caller).await;
        let result = client
            .call_tool(CallToolRequestParams::new(op.name).with_arguments(arguments))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", op.name));
        let answer = result.structured_content.unwrap_or(Value::Null);
        // A refusal is `{success:false, error, message}`; a blocked lock or an empty queue
        // is `success:false` without `error`, an answer like any other.
        if answer.get("success") == Some(&Value::Bool(false)) && answer.get("error").is_some() {
            return Err(serde_json::from_value::<CoordError>(answer).expect("an error answer"));
        }
        Ok(answer)
    }
}

#[async_trait]
impl Backend for McpBackend {
    async fn fixture(&self) -> Fixture {
        fixture::sqlite_fixture()
    }

    async fn wrap(&self, coord: Coordinator) -> Arc<dyn Coordination> {
        Arc::new(McpDoor {
            coord: Arc::new(coord),
            clients: Mutex::new(HashMap::new()),
        })
    }

    fn door(&self) -> Door {
        Door::Mcp
    }
}

coord_conformance::conformance_suite!(McpBackend);
