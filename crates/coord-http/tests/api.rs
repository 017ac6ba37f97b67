//! The HTTP API black-box, over real loopback HTTP: every endpoint, the auth matrix,
//! validation errors, outages, and the OpenAPI document against the routes.

use coord_domain::Caller;
use coord_domain::keys::CreateApiKeyRequest;
use coord_domain::ports::PortConfig;
use coord_http::{ApiConfig, create_coordination_api};
use coord_ports::PortAllocator;
use coord_service::CoordinationExt as _;
use coord_service::{CoordConfig, Coordinator, ManualClock};
use coord_sqlite::{SqliteOptions, SqliteStore};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

struct Server {
    url: String,
    http: reqwest::Client,
    coord: Coordinator,
    clock: Arc<ManualClock>,
    db: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

const OPERATOR: &str = "operator-key";
const BOUND: &str = "bound-key";

async fn server(tune: impl FnOnce(&mut ApiConfig)) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let store = SqliteStore::open_with(
        &db,
        SqliteOptions {
            busy_timeout: Duration::from_millis(200),
        },
    )
    .unwrap();
    let clock = Arc::new(ManualClock::starting_now());
    let ports = PortAllocator::new(
        dir.path().join("ports.json"),
        PortConfig {
            max_sessions: 2,
            ..PortConfig::default()
        },
    );
    let coord = Coordinator::new(Arc::new(store), clock.clone(), CoordConfig::default()).with_ports(ports);
    let mut config = ApiConfig {
        api_keys: vec![OPERATOR.into()],
        ..ApiConfig::default()
    };
    config
        .key_identities
        .insert(BOUND.into(), Caller::new("agent-1", "codex"));
    config.max_body_bytes = 64 * 1024;
    // These tests send many requests without a key from one address: the per-client
    // allowance is not what they test (tests/attacks.rs does).
    config.limiter = coord_http::limits::Limiter::new(coord_http::limits::Limits {
        anonymous_burst: 1e6,
        ..Default::default()
    });
    tune(&mut config);
    let app = create_coordination_api(Arc::new(coord.clone()), &config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = coord_http::serve(listener, app, &config, std::future::pending()).await;
    });
    Server {
        url,
        http: {
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::new()
        },
        coord,
        clock,
        db,
        _dir: dir,
    }
}

impl Server {
    async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self.http.request(method, format!("{}{path}", self.url));
        if let Some(k) = key {
            r = r.header("x-api-key", k);
        }
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        // The operator key acts as whoever the request names; unnamed, it is an agent
        // of an unknown type, which may only read (least privilege). These cases act as
        // a cloud worker unless they name a type.
        let names_a_type = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-agent-type"))
            || body.as_ref().is_some_and(|b| b.get("agent_type").is_some());
        if key == Some(OPERATOR) && !names_a_type {
            r = r.header("x-agent-type", "codex_cloud");
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status();
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = resp.text().await.unwrap();
        assert!(
            ctype.starts_with("application/json"),
            "{path}: not JSON ({ctype}): {text}"
        );
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}")),
        )
    }

    async fn post(&self, path: &str, key: Option<&str>, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, key, &[], Some(body)).await
    }

    async fn get(&self, path: &str, key: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::GET, path, key, &[], None).await
    }

    async fn raw(&self, method: Method, path: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.url))
            .header("x-api-key", OPERATOR)
            // A type with a profile that may write (an unknown one may only read).
            .header("x-agent-type", "codex_cloud")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_answers_its_wire_shape() {
    let s = server(|_| {}).await;
    let op = Some(OPERATOR);
    let as_alice = |body: Value| {
        let mut b = body;
        b["agent_id"] = json!("alice");
        b["agent_type"] = json!("codex_cloud");
        b
    };
    let (st, v) = s.get("/health", None).await;
    assert_eq!((st, v["status"].as_str()), (StatusCode::OK, Some("ok")));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));

    let (st, v) = s
        .post(
            "/locks/acquire",
            op,
            as_alice(json!({"file_path": "src/a.rs", "reason": "r"})),
        )
        .await;
    assert_eq!((st, v["action"].as_str()), (StatusCode::OK, Some("acquired")));
    let (st, v) = s
        .post(
            "/locks/acquire",
            op,
            json!({"file_path": "src/a.rs", "agent_id": "bob"}),
        )
        .await;
    assert_eq!(
        (st, v["action"].as_str(), v["locked_by"].as_str()),
        (StatusCode::OK, Some("blocked"), Some("alice"))
    );
    let (st, v) = s.get("/locks", None).await;
    assert_eq!(
        (st, v["locks"][0]["file_path"].as_str()),
        (StatusCode::OK, Some("src/a.rs"))
    );
    let (st, v) = s.get("/locks/status/src/a.rs", None).await;
    assert_eq!(
        (st, v["locked"].as_bool(), v["lock"]["locked_by"].as_str()),
        (StatusCode::OK, Some(true), Some("alice"))
    );
    let (_, v) = s.get("/locks/status/src/free.rs", None).await;
    assert_eq!((v["locked"].as_bool(), v["lock"].clone()), (Some(false), Value::Null));
    let (st, v) = s
        .post("/locks/check", None, json!({"file_paths": ["src/a.rs", "x"]}))
        .await;
    assert_eq!((st, v["locks"].as_array().unwrap().len()), (StatusCode::OK, 1));
    let (st, v) = s
        .post(
            "/locks/release",
            op,
            json!({"file_path": "src/a.rs", "agent_id": "bob"}),
        )
        .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::CONFLICT, Some("not_lock_owner"))
    );
    let (st, v) = s
        .post("/locks/release", op, as_alice(json!({"file_path": "src/a.rs"})))
        .await;
    assert_eq!(
        (st, v),
        (
            StatusCode::OK,
            json!({"success": true, "released": true, "file_path": "src/a.rs"})
        )
    );
    s.post("/locks/acquire", op, as_alice(json!({"file_path": "b.rs"})))
        .await;
    let (st, v) = s.post("/locks/release-mine", op, as_alice(json!({}))).await;
    assert_eq!((st, v["released"].clone()), (StatusCode::OK, json!(["b.rs"])));

    let (st, v) = s
        .post(
            "/work/submit",
            op,
            as_alice(json!({"task_type": "t", "task_description": "d", "priority": 2})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let task = v["task_id"].as_str().unwrap().to_string();
    let (_, v) = s.get("/work?status=pending&task_type=t&limit=5", Some(OPERATOR)).await;
    assert_eq!(v["tasks"][0]["task_id"], task.as_str());
    let (st, v) = s.get(&format!("/work/{task}"), Some(OPERATOR)).await;
    assert_eq!((st, v["task"]["priority"].as_i64()), (StatusCode::OK, Some(2)));
    let (st, v) = s.post("/work/claim", op, as_alice(json!({"task_types": ["t"]}))).await;
    assert_eq!((st, v["task_id"].as_str()), (StatusCode::OK, Some(task.as_str())));
    let (st, v) = s.post("/work/claim", op, as_alice(json!({}))).await;
    assert_eq!(
        (st, v),
        (
            StatusCode::OK,
            json!({"success": false, "reason": "no_tasks_available"})
        )
    );
    let (st, v) = s
        .post(
            "/work/complete",
            op,
            json!({"task_id": task, "success": true, "agent_id": "bob"}),
        )
        .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::CONFLICT, Some("not_task_owner"))
    );
    let (st, v) = s
        .post(
            "/work/complete",
            op,
            as_alice(json!({"task_id": task, "success": true})),
        )
        .await;
    assert_eq!((st, v["status"].as_str()), (StatusCode::OK, Some("completed")));
    let (st, v) = s
        .get("/work/00000000-0000-4000-8000-000000000000", Some(OPERATOR))
        .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("task_not_found"))
    );

    let (st, v) = s
        .post(
            "/sessions/register",
            op,
            as_alice(json!({"capabilities": ["review"], "current_task": "x"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let session = v["session_id"].clone();
    let (_, v) = s.post("/sessions/heartbeat", op, as_alice(json!({}))).await;
    assert_eq!(v["session_id"], session);
    let (st, v) = s.get("/agents?capability=review&status=active", op).await;
    assert_eq!(
        (st, v["agents"][0]["agent_id"].as_str()),
        (StatusCode::OK, Some("alice"))
    );
    let (st, v) = s.post("/sessions/idle", op, as_alice(json!({}))).await;
    assert_eq!((st, v["session_id"].clone()), (StatusCode::OK, session));
    let (st, v) = s
        .post("/agents/cleanup", op, json!({"stale_threshold_minutes": 15}))
        .await;
    assert_eq!((st, v["agents_cleaned"].as_i64()), (StatusCode::OK, Some(0)));

    let (st, v) = s
        .post(
            "/handoffs",
            op,
            as_alice(json!({"summary": "over to you", "next_steps": ["a"]})),
        )
        .await;
    assert_eq!((st, v["success"].as_bool()), (StatusCode::OK, Some(true)));
    let (st, v) = s.get("/handoffs?agent_name=alice&limit=1", op).await;
    assert_eq!(
        (st, v["handoffs"][0]["summary"].as_str()),
        (StatusCode::OK, Some("over to you"))
    );
    let (st, v) = s.get("/audit?agent_id=alice&operation=write_handoff", op).await;
    assert_eq!((st, v["entries"].as_array().unwrap().len()), (StatusCode::OK, 1));
    let (st, v) = s
        .call(Method::GET, "/status", op, &[("x-agent-id", "alice")], None)
        .await;
    assert_eq!(
        (st, v["identity"]["agent_id"].as_str()),
        (StatusCode::OK, Some("alice"))
    );

    let (st, v) = s.post("/ports/allocate", op, json!({"session_id": "worktree-1"})).await;
    assert_eq!(
        (st, v["allocation"]["db_port"].as_u64()),
        (StatusCode::OK, Some(10_000))
    );
    assert!(v["env_snippet"].as_str().unwrap().contains("export API_PORT=10003"));
    let (st, v) = s.get("/ports/status", None).await;
    assert_eq!(
        (st, v["allocations"][0]["session_id"].as_str()),
        (StatusCode::OK, Some("worktree-1"))
    );
    assert_eq!(v["allocations"][0]["remaining_minutes"], 120);
    s.post("/ports/allocate", op, json!({"session_id": "worktree-2"})).await;
    let (st, v) = s.post("/ports/allocate", op, json!({"session_id": "worktree-3"})).await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::CONFLICT, Some("no_ports_available"))
    );
    let (st, v) = s.post("/ports/release", op, json!({"session_id": "worktree-1"})).await;
    assert_eq!((st, v), (StatusCode::OK, json!({"success": true, "released": true})));
    let (st, v) = s.post("/ports/release", op, json!({"session_id": "worktree-1"})).await;
    assert_eq!(
        (st, v["success"].as_bool()),
        (StatusCode::OK, Some(true)),
        "release is idempotent"
    );

    let (st, v) = s
        .post(
            "/keys",
            op,
            json!({"bound_agent_id": "cloud-9", "bound_agent_type": "codex_cloud", "expires_in_minutes": 60}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (key_id, secret) = (
        v["key_id"].as_str().unwrap().to_string(),
        v["api_key"].as_str().unwrap().to_string(),
    );
    let (st, v) = s.get("/keys", op).await;
    assert_eq!(
        (st, v["keys"][0]["key_id"].as_str()),
        (StatusCode::OK, Some(key_id.as_str()))
    );
    assert!(!v.to_string().contains(&secret), "listing never shows secrets");
    let (st, _) = s.post("/keys/revoke", op, json!({"key_id": key_id})).await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_matrix() {
    let s = server(|_| {}).await;
    let managed = s
        .coord
        .create_api_key(
            &Caller::new("admin", "cli"),
            CreateApiKeyRequest {
                bound_agent_id: "cloud-2".into(),
                bound_agent_type: "codex_cloud".into(),
                expires_in_minutes: Some(60),
                task_id: Some("task-7".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let revoked = s
        .coord
        .create_api_key(
            &Caller::new("admin", "cli"),
            CreateApiKeyRequest {
                bound_agent_id: "gone".into(),
                bound_agent_type: "x".into(),
                expires_in_minutes: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    s.coord
        .revoke_api_key(
            &Caller::new("admin", "cli"),
            coord_domain::keys::RevokeApiKeyRequest {
                key_id: revoked.key_id.clone(),
            },
        )
        .await
        .unwrap();
    let acquire = |path: &str| json!({"file_path": path});

    // No key, wrong key.
    let (st, v) = s.post("/locks/acquire", None, acquire("a")).await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
    let (st, _) = s.post("/locks/acquire", Some("wrong"), acquire("a")).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (st, _) = s.post("/ports/allocate", None, json!({"session_id": "x"})).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // The key is checked before the body is read: no key is 401 whatever the body.
    for body in [&b"{nope"[..], &br#"{"session_id": ""}"#[..]] {
        let resp = s
            .http
            .post(format!("{}/ports/allocate", s.url))
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    // Read-only status endpoints answer without a key; tasks (with their payloads) do not.
    for path in ["/locks", "/locks/status/a", "/ports/status", "/health", "/openapi.json"] {
        let resp = s.http.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
    }
    for path in ["/work", "/work/00000000-0000-0000-0000-000000000000"] {
        let (st, _) = s.get(path, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}");
    }
    // Without a key, a request acts as `anonymous` whatever it names: nobody writes audit
    // rows in another agent's name.
    let (st, _) = s
        .call(
            Method::POST,
            "/locks/check",
            None,
            &[("x-agent-id", "victim"), ("x-agent-default-id", "victim")],
            Some(json!({"agent_id": "victim"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let audit = s
        .coord
        .query_audit(
            &Caller::new("admin", "cli"),
            coord_domain::audit::AuditQueryRequest {
                operation: Some("check_locks".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(audit.entries[0].agent_id, "anonymous", "{:?}", audit.entries[0]);
    // Bound environment key: matching or unnamed identity works; another is 403.
    let (st, v) = s.post("/locks/acquire", Some(BOUND), acquire("b1")).await;
    assert_eq!((st, v["success"].as_bool()), (StatusCode::OK, Some(true)));
    let (_, v) = s.get("/locks/status/b1", None).await;
    assert_eq!(v["lock"]["locked_by"], "agent-1");
    let (st, _) = s
        .post(
            "/locks/acquire",
            Some(BOUND),
            json!({"file_path": "b2", "agent_id": "agent-1", "agent_type": "codex"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, v) = s
        .post(
            "/locks/acquire",
            Some(BOUND),
            json!({"file_path": "b3", "agent_id": "agent-2"}),
        )
        .await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")));
    let (st, _) = s
        .post(
            "/locks/acquire",
            Some(BOUND),
            json!({"file_path": "b3", "agent_type": "claude_code"}),
        )
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, _) = s
        .call(
            Method::POST,
            "/locks/acquire",
            Some(BOUND),
            &[("x-agent-id", "agent-2")],
            Some(acquire("b3")),
        )
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "headers count as a claim too");
    let (st, _) = s
        .call(
            Method::POST,
            "/locks/acquire",
            Some(BOUND),
            &[("x-agent-id", "agent-2")],
            Some(json!({"file_path": "b3", "agent_id": "agent-1"})),
        )
        .await;
    assert_eq!(
        st,
        StatusCode::FORBIDDEN,
        "every explicit claim must match, body and headers"
    );
    let (st, _) = s
        .call(
            Method::POST,
            "/locks/acquire",
            Some(BOUND),
            &[("x-agent-default-id", "someone")],
            Some(acquire("b4")),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "defaults never clash with a binding");
    // Bearer works like X-API-Key.
    let resp = s
        .http
        .post(format!("{}/locks/acquire", s.url))
        .bearer_auth(BOUND)
        .json(&acquire("b5"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // Managed keys: live, expired, revoked.
    let (st, _) = s.post("/locks/acquire", Some(&managed.api_key), acquire("m1")).await;
    assert_eq!(st, StatusCode::OK);
    let (_, v) = s.get("/locks/status/m1", None).await;
    assert_eq!(v["lock"]["locked_by"], "cloud-2");
    // Its audit row names the key and the task it was issued for.
    let (_, v) = s
        .get("/audit?agent_id=cloud-2&operation=acquire_lock", Some(OPERATOR))
        .await;
    assert_eq!(
        v["entries"][0]["origin"],
        json!({"key_id": managed.key_id, "task_id": "task-7"}),
        "{v}"
    );
    let (st, _) = s
        .post(
            "/locks/acquire",
            Some(&managed.api_key),
            json!({"file_path": "m2", "agent_id": "x"}),
        )
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, v) = s.post("/locks/acquire", Some(&revoked.api_key), acquire("r1")).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(v["message"].as_str().unwrap().contains("was revoked at"), "{v}");
    s.clock.advance_minutes(61);
    let (st, v) = s.post("/locks/acquire", Some(&managed.api_key), acquire("m3")).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(v["message"].as_str().unwrap().contains("expired at"), "{v}");
    let (st, v) = s
        .post("/locks/acquire", Some("coord_never_issued"), acquire("m4"))
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(
        v["message"].as_str().unwrap().contains("not one this server issued"),
        "{v}"
    );
    // Key management is for operator keys only.
    let (st, _) = s.get("/keys", Some(BOUND)).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, _) = s.get("/keys", None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // MCP over HTTP sits behind the same keys.
    let resp = s
        .http
        .post(format!("{}/mcp", s.url))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_can_require_keys_too() {
    let s = server(|c| c.require_auth_for_reads = true).await;
    for path in ["/locks", "/locks/status/a", "/ports/status"] {
        let (st, _) = s.get(path, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}");
        let (st, _) = s.get(path, Some(OPERATOR)).await;
        assert_eq!(st, StatusCode::OK, "{path}");
    }
    let (st, _) = s.get("/health", None).await;
    assert_eq!(st, StatusCode::OK, "health stays public");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_4xx_naming_the_field() {
    let s = server(|_| {}).await;
    let (st, v) = s.raw(Method::POST, "/locks/acquire", b"{nope".to_vec()).await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_json"))
    );
    let (st, v) = s.raw(Method::POST, "/locks/acquire", b"[1,2]".to_vec()).await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let cases: &[(&str, Value, &str, &str)] = &[
        ("/locks/acquire", json!({}), "file_path", "invalid_argument"),
        (
            "/locks/acquire",
            json!({"file_path": 7}),
            "file_path",
            "invalid_argument",
        ),
        (
            "/locks/acquire",
            json!({"file_path": "a", "ttl_minutes": 0}),
            "ttl_minutes",
            "ttl_out_of_range",
        ),
        (
            "/locks/acquire",
            json!({"file_path": "../x"}),
            "file_path",
            "invalid_path",
        ),
        (
            "/locks/acquire",
            json!({"file_path": "a", "agent_id": ""}),
            "agent_id",
            "invalid_identity",
        ),
        (
            "/work/submit",
            json!({"task_type": "t"}),
            "task_description",
            "invalid_argument",
        ),
        (
            "/work/submit",
            json!({"task_type": "t", "task_description": "d", "priority": 11}),
            "priority",
            "priority_out_of_range",
        ),
        (
            "/work/submit",
            json!({"task_type": "t", "task_description": "d", "depends_on": ["nope"]}),
            "depends_on",
            "invalid_task_id",
        ),
        ("/work/complete", json!({"task_id": "x"}), "success", "invalid_argument"),
        ("/handoffs", json!({"summary": ""}), "summary", "invalid_argument"),
        ("/ports/allocate", json!({}), "session_id", "invalid_argument"),
        (
            "/ports/allocate",
            json!({"session_id": ""}),
            "session_id",
            "invalid_argument",
        ),
        (
            "/agents/cleanup",
            json!({"stale_threshold_minutes": -1}),
            "stale_threshold_minutes",
            "invalid_argument",
        ),
    ];
    for (path, body, field, code) in cases {
        let (st, v) = s.post(path, Some(OPERATOR), body.clone()).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{path} {body}: {v}");
        assert_eq!(
            (v["error"].as_str(), v["field"].as_str()),
            (Some(*code), Some(*field)),
            "{path} {body}"
        );
        assert_eq!(v["success"], false);
    }
    for (path, field) in [
        ("/work?limit=lots", "limit"),
        ("/work?status=lost", "status"),
        ("/audit?since=yesterday", "since"),
    ] {
        let (st, v) = s.get(path, Some(OPERATOR)).await;
        assert_eq!(
            (st, v["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{path}"
        );
    }
    let (st, v) = s.get("/work/not-a-uuid", Some(OPERATOR)).await;
    assert_eq!(
        (st, v["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("task_id"))
    );
    let (st, v) = s.raw(Method::POST, "/work/submit", vec![b' '; 70 * 1024]).await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large"))
    );
    // With the identity only in the body (as documented), an unreadable body is still
    // reported as such, not as the default identity's lack of trust.
    for (body, want) in [
        (b"{nope".to_vec(), (StatusCode::BAD_REQUEST, "invalid_json")),
        (
            vec![b' '; 70 * 1024],
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
        ),
    ] {
        let resp = s
            .http
            .post(format!("{}/files/write", s.url))
            .header("x-api-key", OPERATOR)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let st = resp.status();
        let v: Value = resp.json().await.unwrap();
        assert_eq!((st, v["error"].as_str().unwrap()), want, "{v}");
    }
    // A path parameter that is not UTF-8 once decoded: still a JSON error naming it.
    for (path, field) in [("/locks/status/%FF%FE", "file_path"), ("/work/%FF", "task_id")] {
        let (st, v) = s.get(path, Some(OPERATOR)).await;
        assert!(st.is_client_error(), "{path}: {st}");
        assert_eq!(v["field"].as_str(), Some(field), "{path}: {v}");
    }
    let (st, v) = s.get("/nowhere", None).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let (st, _) = s.call(Method::DELETE, "/locks", Some(OPERATOR), &[], None).await;
    assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED);
    let (st, v) = s
        .post("/locks/acquire", Some(OPERATOR), json!({"file_path": "a\u{0}b"}))
        .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_path"))
    );
    let text = v.to_string();
    assert!(
        !text.contains("SELECT") && !text.contains("sqlite"),
        "no internals in errors: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_is_503_for_writes_while_health_still_reads() {
    let s = server(|_| {}).await;
    let blocker = rusqlite::Connection::open(&s.db).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (st, v) = s
        .post("/locks/acquire", Some(OPERATOR), json!({"file_path": "a"}))
        .await;
    assert_eq!(
        (st, v["error"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("database_unavailable"))
    );
    let (st, v) = s.get("/health", None).await;
    assert_eq!(st, StatusCode::OK, "WAL readers are not blocked by a writer: {v}");
    blocker.execute_batch("ROLLBACK").unwrap();
    let (st, _) = s
        .post("/locks/acquire", Some(OPERATOR), json!({"file_path": "a"}))
        .await;
    assert_eq!(st, StatusCode::OK, "it recovers by itself");
}

#[path = "../../coord-postgres/tests/pg_support/mod.rs"]
mod pg_support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_a_postgres_outage_honestly() {
    if !pg_support::available().await {
        return;
    }
    let db = pg_support::TestDatabase::from_template().await;
    let store = coord_postgres::PgStore::connect(
        &db.url,
        coord_postgres::PgOptions {
            pool_size: 2,
            timeout: Duration::from_secs(2),
        },
    )
    .await
    .unwrap();
    let coord = Coordinator::new(
        Arc::new(store),
        Arc::new(coord_service::DatabaseClock),
        CoordConfig::default(),
    );
    let config = ApiConfig {
        api_keys: vec![OPERATOR.into()],
        ..ApiConfig::default()
    };
    let app = create_coordination_api(Arc::new(coord), &config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let health = || async {
        let r = reqwest::get(format!("{url}/health")).await.unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = || async {
        let r = reqwest::Client::new()
            .get(format!("{url}/metrics"))
            .header("authorization", format!("Bearer {OPERATOR}"))
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    };
    assert_eq!(health().await.0, StatusCode::OK);
    let (st, text) = metrics().await;
    assert_eq!(st, StatusCode::OK);
    assert!(text.contains("\ncoord_store_up 1\n"), "{text}");
    db.refuse_connections().await;
    // The scrape still answers this process's counters, and says the store is down.
    let (st, text) = metrics().await;
    assert_eq!(st, StatusCode::OK);
    assert!(text.contains("\ncoord_store_up 0\n"), "{text}");
    assert!(!text.contains("coord_locks_held"), "{text}");
    assert!(
        text.contains("coord_operations_total{operation=\"get_stats\",outcome=\"database_unavailable\"} 1"),
        "{text}"
    );
    // A key that is not an operator's cannot be checked without the database: nothing.
    let r = reqwest::Client::new()
        .get(format!("{url}/metrics"))
        .header("authorization", "Bearer coord_made_up")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!r.text().await.unwrap().contains("coord_operations_total"));
    let (st, v) = health().await;
    assert_eq!(
        (st, v["status"].as_str(), v["error"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("unavailable"),
            Some("database_unavailable")
        )
    );
    assert_eq!(
        v["message"], "the coordinator's database is unavailable",
        "the driver's reason is for the log, not for anyone who asks"
    );
    db.allow_connections().await;
    assert_eq!(health().await.0, StatusCode::OK, "recovers without a restart");
}

/// The value of the sample `series` (name and labels as written) in a metrics text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_prometheus_text_for_administrators() {
    let s = server(|_| {}).await;
    let (st, v) = s
        .post("/locks/acquire", Some(OPERATOR), json!({"file_path": "src/a.rs"}))
        .await;
    assert_eq!((st, v["success"].as_bool()), (StatusCode::OK, Some(true)), "{v}");
    let (st, _) = s
        .post("/locks/release", Some(OPERATOR), json!({"file_path": "src/none.rs"}))
        .await;
    assert!(st.is_client_error());
    let (st, v) = s
        .post(
            "/work/submit",
            Some(OPERATOR),
            json!({"task_type": "t", "task_description": "d"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let scrape = |key: Option<&'static str>| {
        let mut r = s.http.get(format!("{}/metrics", s.url));
        if let Some(k) = key {
            r = r.header("authorization", format!("Bearer {k}"));
        }
        async move {
            let resp = r.send().await.unwrap();
            let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
            (resp.status(), ctype, resp.text().await.unwrap())
        }
    };
    // Nobody anonymous, and only administrators (the bound key is a trust-2 agent's).
    let (st, ctype, body) = scrape(None).await;
    assert_eq!(
        (st, ctype.as_str()),
        (StatusCode::UNAUTHORIZED, "application/json"),
        "{body}"
    );
    let (st, _, body) = scrape(Some(BOUND)).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("insufficient_trust_level"), "{body}");
    let (st, ctype, text) = scrape(Some(OPERATOR)).await;
    assert_eq!(st, StatusCode::OK, "{text}");
    assert_eq!(ctype, coord_service::metrics::CONTENT_TYPE);
    assert!(text.ends_with("# EOF\n"), "{text}");
    let want = [
        ("coord_operations_total{operation=\"acquire_lock\",outcome=\"ok\"}", 1.0),
        (
            "coord_operations_total{operation=\"release_lock\",outcome=\"lock_not_held\"}",
            1.0,
        ),
        (
            "coord_operation_duration_seconds_count{operation=\"acquire_lock\"}",
            1.0,
        ),
        ("coord_store_up", 1.0),
        ("coord_locks_held", 1.0),
        ("coord_tasks{state=\"ready\"}", 1.0),
        ("coord_tasks{state=\"claimed\"}", 0.0),
        ("coord_approvals_pending", 0.0),
        ("coord_task_claim_to_complete_seconds_count", 0.0),
        ("coord_task_claim_to_complete_seconds_bucket{le=\"+Inf\"}", 0.0),
        ("coord_memory_feedback_votes{useful=\"true\"}", 0.0),
    ];
    for (series, value) in want {
        assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
    }
    for family in [
        "# TYPE coord_operations counter",
        "# TYPE coord_operation_duration_seconds histogram",
        "# TYPE coord_agents gauge",
        "# TYPE coord_task_claim_to_complete_seconds histogram",
        "# TYPE coord_guardrail_blocks counter",
    ] {
        assert!(text.contains(family), "{family} in\n{text}");
    }
    // Each scrape is a get_stats call, audited under the key's caller.
    let (st, _, text) = scrape(Some(OPERATOR)).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        sample(&text, "coord_operations_total{operation=\"get_stats\",outcome=\"ok\"}"),
        Some(2.0),
        "both scrapes: each counts its own get_stats before rendering"
    );
    let (_, audit) = s.get("/audit?operation=get_stats", Some(OPERATOR)).await;
    let rows = audit["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "two refusals and two scrapes: {audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_is_for_operators_and_refuses_forged_changes() {
    let s = server(|_| {}).await;
    // A fresh connection per request: the oversized body below makes the server close its
    // connection, and a pooled client could send the next request down that closing
    // connection and see it cut (IncompleteMessage) — a race in the client, not a refusal.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let page = http.get(format!("{}/", s.url)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(page.text().await.unwrap().contains("name=\"key\""), "the sign-in form");
    let login = |key: &'static str| {
        http.post(format!("{}/ui/login", s.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("key={key}&name=night-shift"))
            .send()
    };
    // An agent's key (bound, trust 2) and a wrong key open nothing.
    for key in [BOUND, "wrong"] {
        let r = login(key).await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{key}");
        assert!(r.headers().get("set-cookie").is_none());
    }
    let r = login(OPERATOR).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    let cookie = cookie.split(';').next().unwrap().to_string();
    assert!(!cookie.contains(OPERATOR), "the browser never holds the key");
    let page = http
        .get(format!("{}/", s.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split("name=\"csrf\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    assert_eq!(csrf.len(), 64);
    assert!(page.contains("night-shift"));

    // The snapshot and the feed need the session.
    for path in ["/ui/snapshot", "/ui/events"] {
        let r = http.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let snap: Value = http
        .get(format!("{}/ui/snapshot", s.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(snap["stats"]["success"], true, "{snap}");
    assert!(snap["approvals"]["items"].as_array().unwrap().is_empty());

    // A pending approval, then decisions with and without the CSRF token.
    let (st, refused) = s
        .call(
            Method::POST,
            "/guardrails/check",
            Some(OPERATOR),
            &[("x-agent-id", "pusher"), ("x-agent-type", "claude_code")],
            Some(json!({"command": "git push --force origin main"})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{refused}");
    let id = refused["approval_id"].as_str().unwrap().to_string();
    let decide = |csrf: Option<&str>, origin: Option<&str>, body: String| {
        let mut r = http
            .post(format!("{}/ui/approvals/decide", s.url))
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .body(body);
        if let Some(c) = csrf {
            r = r.header("x-csrf-token", c.to_string());
        }
        if let Some(o) = origin {
            r = r.header("origin", o.to_string());
        }
        r.send()
    };
    let body = json!({"approval_id": id, "decision": "approve"}).to_string();
    let cases: [(Option<&str>, Option<&str>); 3] = [
        (None, None),
        (Some("0".repeat(64).leak()), None),
        (Some(csrf.as_str()), Some("http://evil.example")),
    ];
    for (token, origin) in cases {
        let r = decide(token, origin, body.clone()).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{token:?} {origin:?}");
    }
    // The browser's own word on where a request comes from wins over Origin and Host.
    let r = http
        .post(format!("{}/ui/approvals/decide", s.url))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .header("sec-fetch-site", "cross-site")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Bodies are bounded: refused with 413 before they are read. The server then closes
    // the connection with the client's bytes unread, and TCP may reset it before the
    // answer reaches the client: a cut connection is the same refusal.
    match decide(Some(&csrf), None, "x".repeat(64 * 1024)).await {
        Ok(r) => assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE),
        Err(e) => assert!(e.is_request(), "refused, not failed otherwise: {e}"),
    }
    let r = decide(Some(&csrf), None, "{nope".into()).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = decide(
        Some(&csrf),
        None,
        json!({"approval_id": "apr_nope", "decision": "approve"}).to_string(),
    )
    .await
    .unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    let origin = s.url.clone();
    let r = decide(Some(&csrf), Some(&origin), body.clone()).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    // The decision is audited under the operator's name.
    let (_, audit) = s.get("/audit?operation=decide_approval", Some(OPERATOR)).await;
    let rows = audit["entries"].as_array().unwrap();
    let ok: Vec<&Value> = rows.iter().filter(|r| r["success"] == true).collect();
    assert_eq!(ok.len(), 1, "{audit}");
    assert_eq!(
        (ok[0]["agent_id"].as_str(), ok[0]["agent_type"].as_str()),
        (Some("night-shift"), Some("dashboard"))
    );

    // Signing out ends the session.
    let r = http
        .post(format!("{}/ui/logout", s.url))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = http
        .get(format!("{}/ui/snapshot", s.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_sign_in_pauses_after_many_failures() {
    let s = server(|_| {}).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = |key: &str| {
        http.post(format!("{}/ui/login", s.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-forwarded-proto", "https")
            .body(format!("key={key}"))
            .send()
    };
    let r = login(OPERATOR).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(
        r.headers()["set-cookie"].to_str().unwrap().ends_with("; Secure"),
        "over HTTPS"
    );
    for _ in 0..coord_http::limits::Limits::default().failed_keys_per_minute {
        assert_eq!(login("guess").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    }
    let r = login(OPERATOR).await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "even the right key, for a minute"
    );
    assert_eq!(r.headers()["retry-after"], "60");
    let r = http
        .post(format!("{}/ui/login", s.url))
        .body("x".repeat(64 * 1024))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_matches_the_routes() {
    let s = server(|_| {}).await;
    let (st, doc) = s.get("/openapi.json", None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "AcquireLockRequest",
        "AcquireLockResult",
        "Error",
        "TaskInfo",
        "PortAllocation",
    ] {
        assert!(schemas.contains_key(name), "component {name}");
    }
    let paths = doc["paths"].as_object().unwrap();
    // Documented exactly what the registry binds (plus /health and /metrics), in both
    // directions.
    let mut documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(p, item)| item.as_object().unwrap().keys().map(move |m| (m.clone(), p.clone())))
        .collect();
    let mut bound: Vec<(String, String)> = coord_service::ops()
        .iter()
        .flat_map(|op| op.http.iter())
        .map(|h| (h.method.as_str().to_string(), h.path.replace("{*", "{")))
        .chain(["/health", "/metrics"].map(|p| ("get".to_string(), p.to_string())))
        .collect();
    documented.sort();
    bound.sort();
    assert_eq!(documented, bound);
    for (path, item) in paths {
        if path == "/metrics" {
            // Not JSON: metrics_are_prometheus_text_for_administrators covers it.
            assert!(item["get"]["responses"]["200"]["content"]["application/openmetrics-text"].is_object());
            continue;
        }
        for (method, op) in item.as_object().unwrap() {
            let concrete = path
                .replace("{file_path}", "a.rs")
                .replace("{task_id}", "00000000-0000-4000-8000-000000000000");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let body = (method == Method::POST).then(|| json!({}));
            let (st, answer) = s.call(method.clone(), &concrete, Some(OPERATOR), &[], body).await;
            assert!(
                !answer["message"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("no such endpoint"),
                "{method} {path} is documented but not routed"
            );
            assert_ne!(st, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            let documented: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            assert!(
                documented.iter().any(|c| c.as_str() == st.as_str()),
                "{method} {path} answered {st}, documented {documented:?}"
            );
            let schema = &op["responses"]["200"]["content"]["application/json"]["schema"];
            assert!(schema.is_object(), "{method} {path} documents its 200 body");
        }
    }
}

/// One MCP client over streamable HTTP, speaking JSON-RPC by hand.
/// `POST /webhook/github`: the signature is checked over the raw body first (GitHub's
/// published test vector included), then the delivery is recorded once and acted on.
#[tokio::test]
async fn github_deliveries_are_signed_recorded_once_and_acted_on() {
    const SECRET: &str = "It's a Secret to Everybody";
    let s = server(|c| c.github_webhook_secrets = vec![b"old secret".to_vec(), SECRET.as_bytes().to_vec()]).await;
    let post = |id: &str, event: &str, body: Vec<u8>, sig: Option<String>| {
        let mut r = s
            .http
            .post(format!("{}/webhook/github", s.url))
            .header("x-github-delivery", id)
            .header("x-github-event", event)
            .header("content-type", "application/json")
            .body(body);
        if let Some(sig) = sig {
            r = r.header("x-hub-signature-256", sig);
        }
        r.send()
    };
    let sign = |b: &[u8]| Some(coord_github::webhook::signature(SECRET.as_bytes(), b));
    // GitHub's test vector: the signature checks out, the body is not a delivery.
    let vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17".to_string();
    let r = post("v", "ping", b"Hello, World!".to_vec(), Some(vector))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_json");
    let ping = serde_json::to_vec(&json!({"zen": "Speak like a human.", "hook_id": 7})).unwrap();
    // No signature, a wrong one, one over other bytes: 401, nothing recorded.
    for sig in [
        None,
        Some("sha256=nothex".to_string()),
        Some(coord_github::webhook::signature(b"guess", &ping)),
        sign(b"{}"),
    ] {
        let r = post("p1", "ping", ping.clone(), sig.clone()).await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{sig:?}");
        assert_eq!(r.json::<Value>().await.unwrap()["error"], "unauthorized");
    }
    let r = post("p1", "ping", ping.clone(), sign(&ping)).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["status"].as_str(), v["duplicate"].as_bool()),
        (Some("ignored"), Some(false)),
        "{v}"
    );
    // A push to an agent's branch: a changeset; the same delivery again: a duplicate.
    let push = serde_json::to_vec(&json!({
        "ref": "refs/heads/agent/claude-1/42", "after": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "commits": [{"id": "9fceb02", "added": ["src/a.rs"], "removed": [], "modified": []}],
        "pusher": {"name": "octocat"}
    }))
    .unwrap();
    let v: Value = post("d1", "push", push.clone(), sign(&push))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["status"], "processed", "{v}");
    let id = v["changeset_id"].as_str().unwrap().to_string();
    let again: Value = post("d1", "push", push.clone(), sign(&push))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (again["duplicate"].as_bool(), again["changeset_id"].as_str()),
        (Some(true), Some(id.as_str()))
    );
    let cs: Value = s
        .http
        .get(format!("{}/verification/changesets/{id}", s.url))
        .header("x-api-key", OPERATOR)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cs["changeset"]["agent_id"], "github:octocat", "{cs}");
    // Under the previous secret too (rotation); a bad delivery id is the request's error.
    let old = Some(coord_github::webhook::signature(b"old secret", &ping));
    let r = post("p2", "ping", ping.clone(), old).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = post("", "ping", ping.clone(), sign(&ping)).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The delivery is audited under the webhook's identity.
    let rows: Value = s
        .http
        .get(format!("{}/audit?operation=receive_github_delivery", s.url))
        .header("x-api-key", OPERATOR)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entries = rows["entries"].as_array().unwrap();
    assert!(
        !entries.is_empty() && entries.iter().all(|e| e["agent_id"] == "github-webhook"),
        "{rows}"
    );

    // No secret configured: every delivery is refused.
    let closed = server(|_| {}).await;
    let r = closed
        .http
        .post(format!("{}/webhook/github", closed.url))
        .header("x-github-delivery", "p1")
        .header("x-github-event", "ping")
        .header(
            "x-hub-signature-256",
            coord_github::webhook::signature(SECRET.as_bytes(), &ping),
        )
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}

struct McpHttp<'a> {
    s: &'a Server,
    key: &'static str,
    session: Option<String>,
}

impl McpHttp<'_> {
    async fn rpc(&mut self, id: Option<u64>, method: &str, params: Value) -> Option<Value> {
        let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            body["id"] = json!(id);
        }
        let mut r = self
            .s
            .http
            .post(format!("{}/mcp", self.s.url))
            .header("x-api-key", self.key)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(sid) = &self.session {
            r = r.header("mcp-session-id", sid);
        }
        let resp = r.send().await.unwrap();
        assert!(resp.status().is_success(), "{method}: {}", resp.status());
        if let Some(sid) = resp.headers().get("mcp-session-id") {
            self.session = Some(sid.to_str().unwrap().to_string());
        }
        let text = resp.text().await.unwrap();
        let id = id?;
        // The answer is JSON or an SSE stream whose `data:` lines carry JSON-RPC messages.
        let messages: Vec<Value> = if text.trim_start().starts_with('{') {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        };
        messages.into_iter().find(|m| m["id"] == json!(id))
    }

    async fn connect<'s>(s: &'s Server, key: &'static str, client: &str) -> McpHttp<'s> {
        let mut c = McpHttp { s, key, session: None };
        let init = c
            .rpc(
                Some(1),
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": client, "version": "1"}}),
            )
            .await
            .expect("initialize answered");
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        c.rpc(None, "notifications/initialized", json!({})).await;
        c
    }

    async fn tool(&mut self, name: &str, args: Value) -> Value {
        let v = self
            .rpc(Some(2), "tools/call", json!({"name": name, "arguments": args}))
            .await
            .expect("tool answered");
        v["result"]["structuredContent"].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_clients_sharing_an_operator_key_stay_distinct_agents() {
    let s = server(|_| {}).await;
    let mut alpha = McpHttp::connect(&s, OPERATOR, "claude-code-alpha").await;
    let mut beta = McpHttp::connect(&s, OPERATOR, "claude-code-beta").await;
    let a = alpha.tool("acquire_lock", json!({"file_path": "shared.rs"})).await;
    assert_eq!(a["success"], true, "{a}");
    let b = beta.tool("acquire_lock", json!({"file_path": "shared.rs"})).await;
    assert_eq!(b["action"], "blocked", "another client is another agent: {b}");
    let holder = b["locked_by"].as_str().unwrap();
    assert!(holder.starts_with("claude-code-alpha"), "{holder}");
    let r = beta.tool("release_lock", json!({"file_path": "shared.rs"})).await;
    assert_eq!(r["error"], "not_lock_owner", "{r}");
    // A bound key is its identity over MCP too.
    let mut bound = McpHttp::connect(&s, BOUND, "whatever").await;
    let v = bound.tool("acquire_lock", json!({"file_path": "bound.rs"})).await;
    assert_eq!(v["success"], true, "{v}");
    let (_, v) = s.get("/locks/status/bound.rs", None).await;
    assert_eq!(v["lock"]["locked_by"], "agent-1");
}
