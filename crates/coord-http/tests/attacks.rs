//! The security review's attacks on the HTTP door (issue 57), each reproduced over real
//! loopback TCP against `coord serve`'s own accept loop, and each now failing: eviction
//! by a bound key (finding 2), unauthenticated clients spending memory, disk and
//! connections (7), sign-in and key guessing (8), DNS rebinding (11).

use coord_domain::Caller;
use coord_http::limits::{Limiter, Limits};
use coord_http::{ApiConfig, create_coordination_api};
use coord_service::CoordinationExt as _;
use coord_service::{CoordConfig, Coordinator, ManualClock};
use coord_sqlite::SqliteStore;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

const OPERATOR: &str = "operator-key";
const MALLORY: &str = "mallory-key";
const ALICE: &str = "alice-key";
const STRANDS: &str = "strands-key";
const SECRET: &str = "webhook-secret";

struct Server {
    addr: SocketAddr,
    coord: Coordinator,
    _dir: tempfile::TempDir,
}

async fn server(limits: Limits) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let ports = coord_ports::PortAllocator::new(
        dir.path().join("ports.json"),
        coord_domain::ports::PortConfig {
            max_per_agent: 2,
            ..Default::default()
        },
    );
    let coord = Coordinator::new(
        Arc::new(store),
        Arc::new(ManualClock::starting_now()),
        CoordConfig::default(),
    )
    .with_ports(ports);
    let mut config = ApiConfig {
        api_keys: vec![OPERATOR.into()],
        github_webhook_secrets: vec![SECRET.as_bytes().to_vec()],
        ..ApiConfig::default()
    };
    config
        .key_identities
        .insert(MALLORY.into(), Caller::new("mallory", "codex_cloud"));
    config
        .key_identities
        .insert(ALICE.into(), Caller::new("alice", "codex_cloud"));
    config
        .key_identities
        .insert(STRANDS.into(), Caller::new("orchestrator", "strands_agent"));
    config.limiter = Limiter::new(limits);
    let app = create_coordination_api(Arc::new(coord.clone()), &config);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = coord_http::serve(listener, app, &config, std::future::pending()).await;
    });
    Server { addr, coord, _dir: dir }
}

fn client(from: &str) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn audit_rows(&self, operation: &str) -> usize {
        let rows = self
            .coord
            .query_audit(
                &Caller::new("auditor", "cli"),
                coord_domain::audit::AuditQueryRequest {
                    operation: Some(operation.into()),
                    limit: Some(1000),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        rows.entries.len()
    }

    async fn metric(&self, series: &str) -> f64 {
        let text = client("127.0.0.1")
            .get(self.url("/metrics"))
            .header("x-api-key", OPERATOR)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }
}

/// A raw connection that sends `head` (and maybe part of a body) and reads what comes
/// back, for at most `wait`: what a slow or stalling client meets.
fn raw(addr: SocketAddr, head: &str, wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() > 12 {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return format!("TIMED OUT after {wait:?}: {}", String::from_utf8_lossy(&got));
            }
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Finding 2 over HTTP: mallory's bound key sees no other agent's session id and cannot
/// disconnect alice's live session, nor call sessions stale after a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_key_cannot_evict_a_live_agent() {
    let s = server(Limits::default()).await;
    let alice = Caller::new("alice", "codex_cloud");
    let session = s
        .coord
        .register_session(&alice, Default::default())
        .await
        .unwrap()
        .session_id;
    s.coord
        .acquire_lock(
            &alice,
            coord_domain::locks::AcquireLockRequest {
                file_path: "src/a.rs".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let http = client("127.0.0.1");
    let agents: Value = http
        .get(s.url("/agents"))
        .header("x-api-key", MALLORY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!agents.to_string().contains(&session), "{agents}");
    for body in [json!({"sessions": [session]}), json!({"stale_threshold_minutes": 1})] {
        let r = http
            .post(s.url("/agents/cleanup"))
            .header("x-api-key", MALLORY)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{body}");
    }
    let locks = s.coord.check_locks(&alice, Default::default()).await.unwrap().locks;
    assert_eq!(locks.len(), 1, "alice keeps her lock");
}

/// Finding 7: a request without a key for an operation that needs one is refused before
/// its body is read (the 4 MiB never arrive, the answer does), and leaves no audit row;
/// a webhook delivery without a signature header likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_decided_before_a_body_is_read() {
    let s = server(Limits::default()).await;
    let wait = Duration::from_secs(10);
    let head = |path: &str, extra: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\
             Content-Length: 4194304\r\n\r\n{{\"task_type\":"
        )
    };
    let answer = raw(s.addr, &head("/work/submit", ""), wait);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let answer = raw(s.addr, &head("/webhook/github", "X-GitHub-Event: push\r\n"), wait);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // With a signature header the body is read (to check the signature), within its limit.
    let signed = "X-GitHub-Event: push\r\nX-Hub-Signature-256: sha256=".to_string() + &"0".repeat(64) + "\r\n";
    let answer = raw(
        s.addr,
        &(head("/webhook/github", &signed) + "1}"),
        Duration::from_secs(1),
    );
    assert!(answer.starts_with("TIMED OUT"), "waits for the signed body: {answer}");
    assert_eq!(s.audit_rows("submit_work").await, 0, "refused unread, not audited");
    assert!(s.metric("coord_http_refused_total{reason=\"no_key\"}").await >= 1.0);
}

/// Finding 7: a client that stalls its request head or body is cut off; one address
/// cannot hold more than its share of connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_requests_and_connection_floods_are_cut_off() {
    let s = server(Limits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        max_connections_per_client: 3,
        ..Limits::default()
    })
    .await;
    let wait = Duration::from_secs(20);
    // A head that never ends: the connection is closed (no answer, or 408).
    let answer = raw(s.addr, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", wait);
    assert!(!answer.starts_with("TIMED OUT"), "{answer}");
    assert!(!answer.contains("200 OK"), "{answer}");
    // A body that never ends, with a key: 408.
    let answer = raw(
        s.addr,
        &format!(
            "POST /locks/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {MALLORY}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"file_path\":"
        ),
        wait,
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Three connections held open from one address: a fourth is closed at once.
    let held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(s.addr).unwrap()).collect();
    let answer = raw(s.addr, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", wait);
    assert_eq!(answer, "", "closed without an answer");
    drop(held);
    // The server frees a place once it has read the closed connection's end: a moment.
    let http = client("127.0.0.1");
    let mut freed = None;
    for _ in 0..200 {
        if let Ok(r) = http.get(s.url("/health")).send().await {
            freed = Some(r.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(freed, Some(StatusCode::OK), "a closed connection frees its place");
}

/// Finding 7: requests without a key are rate-limited per client address (429, not
/// audited), so anonymous reads cannot grow the audit trail at will; another address is
/// not held up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_requests_are_rate_limited_per_client() {
    let s = server(Limits {
        anonymous_per_second: 0.001,
        anonymous_burst: 5.0,
        ..Limits::default()
    })
    .await;
    let http = client("127.0.0.1");
    let mut statuses = Vec::new();
    for _ in 0..40 {
        statuses.push(http.get(s.url("/locks/status/src/a.rs")).send().await.unwrap().status());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count(),
        35
    );
    assert!(s.audit_rows("check_locks").await <= 5);
    let other = client("127.0.0.2").get(s.url("/locks")).send().await.unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // A key is not rate-limited this way.
    let keyed = http
        .get(s.url("/locks"))
        .header("x-api-key", MALLORY)
        .send()
        .await
        .unwrap();
    assert_eq!(keyed.status(), StatusCode::OK);
}

/// Finding 8: wrong keys pause the address that sent them (the API and the dashboard's
/// sign-in alike), not the real operator elsewhere; a cross-site sign-in is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_guessing_pauses_only_the_guesser() {
    let s = server(Limits {
        failed_keys_per_minute: 5,
        ..Limits::default()
    })
    .await;
    let guesser = client("127.0.0.3");
    for i in 0..5 {
        let r = guesser
            .get(s.url("/locks"))
            .header("x-api-key", format!("guess-{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    for path in ["/locks", "/audit"] {
        let r = guesser
            .get(s.url(path))
            .header("x-api-key", OPERATOR)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "even the right key, from there"
        );
    }
    let login = |http: &reqwest::Client, extra: Option<(&'static str, &'static str)>| {
        let mut r = http
            .post(s.url("/ui/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("key={OPERATOR}"));
        if let Some((k, v)) = extra {
            r = r.header(k, v);
        }
        r.send()
    };
    assert_eq!(
        login(&guesser, None).await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    let operator = client("127.0.0.1");
    assert_eq!(login(&operator, None).await.unwrap().status(), StatusCode::SEE_OTHER);
    let r = login(&operator, Some(("sec-fetch-site", "cross-site"))).await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "a sign-in posted by another site's page"
    );
}

/// Finding 11: bound to loopback, a request for a foreign `Host` (a page rebound to
/// 127.0.0.1) or from a foreign `Origin` is refused on every route, `/mcp` included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebound_pages_get_nothing() {
    let s = server(Limits::default()).await;
    let at = |host: &str, origin: Option<&str>, path: &str| {
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {OPERATOR}\r\n");
        if let Some(o) = origin {
            head.push_str(&format!("Origin: {o}\r\n"));
        }
        head.push_str("Connection: close\r\n\r\n");
        raw(s.addr, &head, Duration::from_secs(10))
    };
    let port = s.addr.port();
    for (host, origin, path) in [
        ("evil.example".to_string(), None, "/locks"),
        (format!("evil.example:{port}"), None, "/health"),
        (format!("127.0.0.1:{port}"), Some("http://evil.example"), "/locks"),
        (format!("localhost:{port}"), Some("http://evil.example"), "/mcp"),
        (format!("127.0.0.1:{port}"), Some("null"), "/"),
    ] {
        let answer = at(&host, origin, path);
        assert!(answer.starts_with("HTTP/1.1 403"), "{host} {origin:?} {path}: {answer}");
    }
    for (host, origin) in [
        (format!("127.0.0.1:{port}"), None),
        (format!("localhost:{port}"), Some(format!("http://localhost:{port}"))),
    ] {
        let answer = at(&host, origin.as_deref(), "/locks");
        assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
    }
}

async fn post(http: &reqwest::Client, s: &Server, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    let r = http
        .post(s.url(path))
        .header("x-api-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// Finding 9: any bound key could release another session's port block, and take every
/// block; none of it was audited. A block belongs to who allocated it, one agent holds
/// at most `PORT_ALLOC_MAX_PER_AGENT` (2 here), and every allocation and release is in
/// the audit trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_blocks_belong_to_their_agent_bounded_and_audited() {
    let s = server(Limits::default()).await;
    let http = client("127.0.0.1");
    let (st, _) = post(&http, &s, "/ports/allocate", ALICE, json!({"session_id": "alice-wt"})).await;
    assert_eq!(st, StatusCode::OK);
    for path in ["/ports/release", "/ports/allocate"] {
        let (st, v) = post(&http, &s, path, MALLORY, json!({"session_id": "alice-wt"})).await;
        assert_eq!(
            (st, v["error"].as_str()),
            (StatusCode::FORBIDDEN, Some("forbidden")),
            "{path}: {v}"
        );
    }
    for i in 0..2 {
        let (st, _) = post(
            &http,
            &s,
            "/ports/allocate",
            MALLORY,
            json!({"session_id": format!("m-{i}")}),
        )
        .await;
        assert_eq!(st, StatusCode::OK);
    }
    let (st, v) = post(&http, &s, "/ports/allocate", MALLORY, json!({"session_id": "m-2"})).await;
    assert_eq!(v["error"], "resource_limit_exceeded", "{st} {v}");
    let (st, _) = post(&http, &s, "/ports/release", ALICE, json!({"session_id": "alice-wt"})).await;
    assert_eq!(st, StatusCode::OK, "its owner may");
    assert_eq!(s.audit_rows("allocate_ports").await, 5);
    assert_eq!(s.audit_rows("release_ports").await, 2);
}

/// Finding 12: a key bound to an agent of type `strands_agent` got the built-in trust-4
/// profile and could change guardrail patterns and prune the audit trail. By its type
/// alone a key reaches no administration; it still orchestrates (its profile's own
/// permissions), and an operator's assignment to its agent id gives it more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_gets_no_administration_from_its_type_alone() {
    let s = server(Limits::default()).await;
    let http = client("127.0.0.1");
    for (path, body) in [
        ("/guardrails/set", json!({"name": "git-force-push", "enabled": false})),
        ("/audit/prune", json!({"dry_run": true})),
        (
            "/approvals/decide",
            json!({"approval_id": "apr_0123456789abcdef", "decision": "approve"}),
        ),
    ] {
        let (st, v) = post(&http, &s, path, STRANDS, body).await;
        assert_eq!(v["error"], "insufficient_trust_level", "{path}: {st} {v}");
    }
    // Assigned explicitly by an operator, the same key administers.
    coord_service::call::<coord_service::ops::profiles::AssignProfile, _>(
        &s.coord,
        &coord_domain::access::Principal::local(Caller::new("admin", "cli")),
        coord_domain::profiles::AssignProfileRequest {
            profile: "strands-orchestrator".into(),
            target_agent_id: Some("orchestrator".into()),
            target_agent_type: None,
        },
    )
    .await
    .unwrap();
    let (_, v) = post(&http, &s, "/audit/prune", STRANDS, json!({"dry_run": true})).await;
    // Past the profile: this server has no audit key to sign a checkpoint with.
    assert_eq!(v["error"], "audit_key_missing", "{v}");
}
