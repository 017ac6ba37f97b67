//! `coord bench proxy`: what the egress proxy adds. Per request, on fresh loopback
//! connections, interleaved in the same run: a direct HTTP request to a local server (the
//! independent baseline), the same request forwarded by the proxy (absolute form), and
//! the same request through a CONNECT tunnel, both naming the host as clients do; then
//! bytes per second through a tunnel beside a direct connection. Every proxied request
//! is two `check_network_access` calls (the name, then its addresses) — audit rows and
//! an access-log row committed to a scratch SQLite database — which is most of what the
//! proxy adds.

use crate::guardrails::{Latency, latency};
use crate::target::{BenchDb, Scratch};
use base64::Engine as _;
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_domain::network::{DefaultAction, SetNetworkPolicyRequest};
use coord_domain::profiles::{ApplyProfilesRequest, AssignProfileRequest, Profile};
use coord_egress::{Proxy, Resolver, RunTokens};
use coord_service::call;
use coord_service::ops::{network as net_ops, profiles as profile_ops};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// Bytes the bulk server sends per connection.
pub const BULK_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Serialize)]
pub struct ProxyReport {
    pub workload: &'static str,
    pub rounds: usize,
    pub direct: Latency,
    pub forward: Latency,
    pub tunnel: Latency,
    /// p50 of the proxied request minus p50 of the direct one, in microseconds.
    pub forward_added_p50_us: f64,
    pub tunnel_added_p50_us: f64,
    pub direct_mib_per_s: f64,
    pub tunnel_mib_per_s: f64,
}

type BenchResult<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A server answering each request with a two-byte body and closing; or, for
/// `bulk`, sending BULK_BYTES right away.
async fn server(bulk: bool) -> BenchResult<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
    let addr = l.local_addr().map_err(err)?;
    tokio::spawn(async move {
        let chunk = vec![b'x'; 1024 * 1024];
        while let Ok((mut s, _)) = l.accept().await {
            let chunk = chunk.clone();
            tokio::spawn(async move {
                if bulk {
                    for _ in 0..BULK_BYTES / chunk.len() {
                        if s.write_all(&chunk).await.is_err() {
                            return;
                        }
                    }
                    return;
                }
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    .await;
            });
        }
    });
    Ok(addr)
}

async fn read_head(s: &mut TcpStream) -> BenchResult<()> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).await.map_err(err)? == 0 {
            return Err("the proxy closed the connection".into());
        }
        head.push(b[0]);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        return Err(format!("the proxy refused: {}", String::from_utf8_lossy(&head)));
    }
    Ok(())
}

async fn request(mut s: TcpStream, line: &str, auth: &str) -> BenchResult<usize> {
    s.write_all(format!("{line}{auth}Connection: close\r\n\r\n").as_bytes())
        .await
        .map_err(err)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.map_err(err)?;
    if !out.starts_with(b"HTTP/1.1 200") || !out.ends_with(b"ok") {
        return Err(format!("unexpected answer: {}", String::from_utf8_lossy(&out)));
    }
    Ok(out.len())
}

async fn tunnel(proxy: SocketAddr, to: &str, auth: &str) -> BenchResult<TcpStream> {
    let mut s = TcpStream::connect(proxy).await.map_err(err)?;
    s.write_all(format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n{auth}\r\n").as_bytes())
        .await
        .map_err(err)?;
    read_head(&mut s).await?;
    Ok(s)
}

async fn drain(mut s: TcpStream) -> BenchResult<usize> {
    let mut buf = vec![0u8; 1024 * 1024];
    let mut total = 0;
    loop {
        match s.read(&mut buf).await.map_err(err)? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// Runs the workload: `rounds` requests of each kind, 4 bulk transfers of each kind.
pub async fn run(rounds: usize, dir: &Path) -> BenchResult<ProxyReport> {
    let rounds = rounds.max(10);
    let scratch = Scratch::create(&BenchDb::Sqlite { dir: dir.to_path_buf() }, "proxy", 1)
        .await
        .map_err(err)?;
    let coord = Arc::new(scratch.coordinator());
    let root = Principal::local(Caller::new("bench-root", "cli"));
    let policy = SetNetworkPolicyRequest {
        name: "bench".into(),
        description: "loopback only".into(),
        default: DefaultAction::Deny,
        allow: vec!["bench.test:*".into(), "127.0.0.1:*".into()],
        deny: vec![],
        trust_defaults: false,
    };
    call::<net_ops::SetNetworkPolicy, _>(&*coord, &root, policy)
        .await
        .map_err(err)?;
    let profile: Profile = serde_json::from_value(serde_json::json!({
        "name": "bench-egress", "agent_type": "sandbox", "trust_level": 2,
        "network_policy": "bench", "allowed_operations": ["read"]
    }))
    .map_err(err)?;
    call::<profile_ops::ApplyProfiles, _>(
        &*coord,
        &root,
        ApplyProfilesRequest {
            profiles: vec![profile],
        },
    )
    .await
    .map_err(err)?;
    let assign = AssignProfileRequest {
        profile: "bench-egress".into(),
        target_agent_id: Some("bench-agent".into()),
        target_agent_type: None,
    };
    call::<profile_ops::AssignProfile, _>(&*coord, &root, assign)
        .await
        .map_err(err)?;
    let tokens = Arc::new(RunTokens::default());
    let token = tokens.issue(Caller::new("bench-agent", "sandbox"));
    let auth = format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64::engine::general_purpose::STANDARD.encode(format!("bench-agent:{token}"))
    );
    let proxy_listener = TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
    let proxy = proxy_listener.local_addr().map_err(err)?;
    // Requests name a host, as clients do: the proxy checks the name, resolves it (pinned
    // to loopback: no DNS server is asked) and decides again with its address.
    let resolver = Resolver::with_pins(&["bench.test=127.0.0.1".to_string()])?;
    let task = tokio::spawn(Arc::new(Proxy::new(coord, tokens, Arc::new(resolver))).serve_tcp(proxy_listener));
    let outcome = measure(rounds, proxy, &auth).await;
    task.abort();
    let _ = task.await;
    scratch.dispose().await;
    outcome
}

async fn measure(rounds: usize, proxy: SocketAddr, auth: &str) -> BenchResult<ProxyReport> {
    let web = server(false).await?;
    let bulk = server(true).await?;
    let (mut direct, mut forward, mut tunneled) = (Vec::new(), Vec::new(), Vec::new());
    let get = format!("GET / HTTP/1.1\r\nHost: {web}\r\n");
    let named = format!("bench.test:{}", web.port());
    let absolute = format!("GET http://{named}/ HTTP/1.1\r\nHost: {named}\r\n");
    for i in 0..rounds {
        // The order rotates so no kind always runs first.
        for k in 0..3 {
            let t = Instant::now();
            match (i + k) % 3 {
                0 => {
                    request(TcpStream::connect(web).await.map_err(err)?, &get, "").await?;
                    direct.push(ns(t));
                }
                1 => {
                    request(TcpStream::connect(proxy).await.map_err(err)?, &absolute, auth).await?;
                    forward.push(ns(t));
                }
                _ => {
                    request(tunnel(proxy, &named, auth).await?, &get, "").await?;
                    tunneled.push(ns(t));
                }
            }
        }
    }
    let (mut direct_s, mut tunnel_s) = (0.0, 0.0);
    for _ in 0..4 {
        let t = Instant::now();
        let n = drain(TcpStream::connect(bulk).await.map_err(err)?).await?;
        direct_s += t.elapsed().as_secs_f64();
        if n != BULK_BYTES {
            return Err(format!("direct transfer got {n} bytes"));
        }
        let t = Instant::now();
        let n = drain(tunnel(proxy, &format!("bench.test:{}", bulk.port()), auth).await?).await?;
        tunnel_s += t.elapsed().as_secs_f64();
        if n != BULK_BYTES {
            return Err(format!("tunnelled transfer got {n} bytes"));
        }
    }
    let mib = 4.0 * BULK_BYTES as f64 / (1024.0 * 1024.0);
    let (direct, forward, tunnel) = (latency(direct), latency(forward), latency(tunneled));
    let added = |l: &Latency| (l.p50_ns as f64 - direct.p50_ns as f64) / 1e3;
    Ok(ProxyReport {
        workload: "proxy",
        rounds,
        forward_added_p50_us: added(&forward),
        tunnel_added_p50_us: added(&tunnel),
        direct,
        forward,
        tunnel,
        direct_mib_per_s: mib / direct_s,
        tunnel_mib_per_s: mib / tunnel_s,
    })
}
