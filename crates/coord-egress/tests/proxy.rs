//! The egress proxy over real loopback sockets, in front of a real coordinator on a
//! SQLite file: upstream servers on 127.0.0.2 and 127.0.0.3 stand in for allowed and
//! refused hosts, names are pinned to them (no DNS is asked), and every decision is
//! read back from the network access log.

use base64::Engine as _;
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_domain::network::{DefaultAction, NetworkAccessLogRequest, SetNetworkPolicyRequest};
use coord_domain::profiles::{ApplyProfilesRequest, AssignProfileRequest, Profile};
use coord_egress::{Proxy, Resolver, RunTokens};
use coord_service::ops::{network as net_ops, profiles as profile_ops};
use coord_service::{CoordConfig, Coordinator, DatabaseClock, call};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// An HTTP server answering every request with where it runs and the head it got.
async fn http_server(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!("served by {}\n{}", addr.ip(), String::from_utf8_lossy(&head));
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

/// A TCP echo server (what a CONNECT tunnel carries is opaque to the proxy).
async fn echo_server(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

struct Setup {
    coord: Arc<Coordinator>,
    proxy: SocketAddr,
    a: String,
    b: String,
    _dir: tempfile::TempDir,
}

fn root() -> Principal {
    Principal::local(Caller::new("root", "cli"))
}

async fn give_policy(coord: &Coordinator, agent: &str, policy: &str) {
    let profile: Profile = serde_json::from_value(serde_json::json!({
        "name": format!("p-{agent}"), "agent_type": "sandbox", "trust_level": 2,
        "network_policy": policy, "allowed_operations": ["read"]
    }))
    .unwrap();
    call::<profile_ops::ApplyProfiles, _>(
        coord,
        &root(),
        ApplyProfilesRequest {
            profiles: vec![profile],
        },
    )
    .await
    .unwrap();
    let assign = AssignProfileRequest {
        profile: format!("p-{agent}"),
        target_agent_id: Some(agent.into()),
        target_agent_type: None,
    };
    call::<profile_ops::AssignProfile, _>(coord, &root(), assign)
        .await
        .unwrap();
}

async fn setup(pins: &[&str]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = coord_sqlite::SqliteStore::open(&dir.path().join("coord.db")).unwrap();
    let coord = Arc::new(Coordinator::new(
        Arc::new(store),
        Arc::new(DatabaseClock),
        CoordConfig::default(),
    ));
    let policy = SetNetworkPolicyRequest {
        name: "proxy-test".into(),
        description: String::new(),
        default: DefaultAction::Deny,
        allow: [
            "allowed.test:*",
            "rebind.test:*",
            "mixed.test:*",
            "web.test",
            "nowhere.test",
            "127.0.0.2:*",
        ]
        .map(String::from)
        .to_vec(),
        deny: vec![],
        trust_defaults: false,
    };
    call::<net_ops::SetNetworkPolicy, _>(&*coord, &root(), policy)
        .await
        .unwrap();
    give_policy(&coord, "agent-a", "proxy-test").await;
    give_policy(&coord, "agent-b", "deny_all").await;
    let tokens = Arc::new(RunTokens::default());
    let a = tokens.issue(Caller::new("agent-a", "sandbox"));
    let b = tokens.issue(Caller::new("agent-b", "sandbox"));
    let pins: Vec<String> = pins.iter().map(|s| s.to_string()).collect();
    let mut proxy = Proxy::new(coord.clone(), tokens, Arc::new(Resolver::with_pins(&pins).unwrap()));
    proxy.header_timeout = Duration::from_millis(300);
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(Arc::new(proxy).serve_tcp(l));
    Setup {
        coord,
        proxy: addr,
        a,
        b,
        _dir: dir,
    }
}

fn auth(user: &str, token: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
    format!("Proxy-Authorization: Basic {b64}\r\n")
}

/// Sends `raw` to the proxy and reads the whole answer (the servers close).
async fn exchange(proxy: SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(raw.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    // Bounded so a hang fails the test rather than the run; no timing is asserted.
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the proxy answers")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

async fn get(proxy: SocketAddr, url: &str, host: &str, auth: &str) -> String {
    exchange(
        proxy,
        &format!("GET {url} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"),
    )
    .await
}

/// `get` of `http://{host}:{port}{path}` with the matching Host header.
async fn fetch(proxy: SocketAddr, host: &str, port: u16, path: &str, auth: &str) -> String {
    get(
        proxy,
        &format!("http://{host}:{port}{path}"),
        &format!("{host}:{port}"),
        auth,
    )
    .await
}

fn status(answer: &str) -> &str {
    answer.split(' ').nth(1).unwrap_or("")
}

#[tokio::test]
async fn the_proxy_enforces_each_agents_policy_and_logs_every_attempt() {
    let web = http_server("127.0.0.2").await;
    let other = http_server("127.0.0.3").await;
    let echo = echo_server("127.0.0.2").await;
    let s = setup(&[
        "allowed.test=127.0.0.2",
        "denied.test=127.0.0.2",
        "rebind.test=127.0.0.3",
        "mixed.test=127.0.0.3,127.0.0.2",
        "web.test=127.0.0.2",
        "nowhere.test=",
    ])
    .await;
    let a = auth("agent-a", &s.a);
    let port = web.port();

    // No credential, or another agent's: 407, nothing decided.
    let r = fetch(s.proxy, "allowed.test", port, "/", "").await;
    assert_eq!(status(&r), "407", "{r}");
    assert!(r.to_lowercase().contains("proxy-authenticate: basic"), "{r}");
    let stolen = auth("agent-a", &s.b);
    let r = fetch(s.proxy, "allowed.test", port, "/", &stolen).await;
    assert_eq!(status(&r), "407", "B's token under A's name: {r}");

    // Allowed: forwarded in origin form, without the proxy's headers.
    let r = fetch(s.proxy, "allowed.test", port, "/p?q=1", &a).await;
    assert_eq!(status(&r), "200", "{r}");
    assert!(r.contains("served by 127.0.0.2\nGET /p?q=1 HTTP/1.1"), "{r}");
    assert!(!r.to_lowercase().contains("proxy-authorization"), "{r}");

    // Refused by name (never resolved), by address, or for a reserved literal.
    let r = fetch(s.proxy, "denied.test", port, "/", &a).await;
    assert_eq!(status(&r), "403", "{r}");
    assert!(
        r.contains("\"error\":\"domain_blocked\"") && r.contains("\"domain\":\"denied.test\""),
        "{r}"
    );
    let o = other.port();
    let r = fetch(s.proxy, "rebind.test", o, "/", &a).await;
    assert_eq!(
        status(&r),
        "403",
        "an allowed name resolving to a reserved address: {r}"
    );
    assert!(r.contains("no_allowed_address"), "{r}");
    let r = fetch(s.proxy, "mixed.test", port, "/", &a).await;
    assert_eq!(status(&r), "200", "{r}");
    assert!(
        r.contains("served by 127.0.0.2"),
        "only the admitted address is dialled: {r}"
    );
    let r = fetch(s.proxy, "127.0.0.2", port, "/", &a).await;
    assert_eq!(status(&r), "200", "a listed address: {r}");
    let r = fetch(s.proxy, "2130706433", port, "/", &a).await;
    assert_eq!(status(&r), "403", "127.0.0.1 spelled as a number: {r}");
    assert!(r.contains("\"domain\":\"127.0.0.1\""), "{r}");

    // The Host header must name the request line's host.
    let r = get(s.proxy, &format!("http://allowed.test:{port}/"), "evil.test", &a).await;
    assert_eq!(status(&r), "400", "{r}");

    // CONNECT: a tunnel to an allowed host; a port the entry does not cover is refused.
    let mut t = TcpStream::connect(s.proxy).await.unwrap();
    let e = echo.port();
    t.write_all(format!("CONNECT allowed.test:{e} HTTP/1.1\r\nHost: allowed.test:{e}\r\n{a}\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = vec![0u8; 1024];
    let n = t.read(&mut head).await.unwrap();
    assert!(
        String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    t.write_all(b"ping through the tunnel").await.unwrap();
    let mut back = vec![0u8; 23];
    t.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping through the tunnel");
    drop(t);
    let r = exchange(
        s.proxy,
        &format!("CONNECT web.test:22 HTTP/1.1\r\nHost: web.test:22\r\n{a}\r\n"),
    )
    .await;
    assert_eq!(status(&r), "403", "{r}");
    let b = auth("agent-b", &s.b);
    let r = exchange(s.proxy, &format!("CONNECT allowed.test:{e} HTTP/1.1\r\n{b}\r\n")).await;
    assert_eq!(status(&r), "403", "agent B's own policy: {r}");

    // A client that never finishes its head is cut off; so is a header flood.
    let r = exchange(s.proxy, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n").await;
    assert!(!r.contains("200 OK"), "{r}");
    let flood = format!(
        "GET http://allowed.test:{port}/ HTTP/1.1\r\n{}{a}\r\n",
        "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(4000)
    );
    let r = exchange(s.proxy, &flood).await;
    assert!(r.is_empty() || status(&r) == "431" || status(&r) == "400", "{r}");

    // A name that does not resolve is refused, and logged as such.
    let r = get(s.proxy, "http://nowhere.test/", "nowhere.test", &a).await;
    assert_eq!(status(&r), "403", "{r}");
    // A proxied URL with user@ is refused before anything is decided.
    let r = get(
        s.proxy,
        &format!("http://x@allowed.test:{port}/"),
        &format!("allowed.test:{port}"),
        &a,
    )
    .await;
    assert_eq!(status(&r), "400", "{r}");

    // Every decision is in the log once, as the agent's, refusals alerting.
    let log = call::<net_ops::NetworkAccessLog, _>(
        &*s.coord,
        &root(),
        NetworkAccessLogRequest {
            limit: Some(1000),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let rows: Vec<(String, String, u16, bool, String)> = log
        .entries
        .iter()
        .rev()
        .map(|e| {
            let a = &e.access;
            (a.agent_id.clone(), a.host.clone(), a.port, a.allowed, a.reason.clone())
        })
        .collect();
    let row = |agent: &str, host: &str, port: u16, allowed: bool, reason: &str| {
        (agent.to_string(), host.to_string(), port, allowed, reason.to_string())
    };
    assert_eq!(
        rows,
        [
            row("agent-a", "allowed.test", port, true, "allowlisted"),
            row("agent-a", "denied.test", port, false, "not_allowlisted"),
            row("agent-a", "rebind.test", o, false, "no_allowed_address"),
            row("agent-a", "mixed.test", port, true, "allowlisted"),
            row("agent-a", "127.0.0.2", port, true, "allowlisted"),
            row("agent-a", "127.0.0.1", port, false, "not_allowlisted"),
            row("agent-a", "allowed.test", e, true, "allowlisted"),
            row("agent-a", "web.test", 22, false, "not_allowlisted"),
            row("agent-b", "allowed.test", e, false, "not_allowlisted"),
            row("agent-a", "nowhere.test", 80, false, "not_resolved"),
        ]
    );
    assert!(log.entries.iter().all(|e| e.access.alert != e.access.allowed));
}
