//! A network link to the database, on loopback: a TCP relay that delays each direction by
//! half a round-trip time and counts round trips (`coord bench … --rtt MS`, and the
//! round-trip budget test).
//!
//! A round trip is counted each time a client connection sends after the server has
//! spoken to it (and at its first send): statements sent together (pipelined) are one,
//! statements that wait for each other's answers are one each. Counted where the bytes
//! arrive at the relay, so TCP's segmenting does not change the count. A message the
//! client sends without waiting for the answer to the one before it (a `ROLLBACK` sent
//! from `drop`) is not a wait, and is counted only when the server answered in between.
//!
//! It also counts the statements the server is asked to run ([`Statements`]): each
//! `Execute` of the extended protocol and each simple `Query` message — the server's
//! work per operation follows them (docs/benchmarks.md, "What a lock pair costs").

use crate::{BenchError, BenchResult};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The relay: listening on loopback, forwarding to the database.
pub struct Link {
    /// The database URL through the relay.
    pub url: String,
    pub rtt: Duration,
    round_trips: Arc<AtomicU64>,
    statements: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Link {
    /// A relay to the server `db_url` names, adding `rtt` to every round trip.
    pub async fn start(db_url: &str, rtt: Duration) -> BenchResult<Link> {
        let (listener, upstream, url) = in_front_of(db_url, "--rtt").await?;
        let (round_trips, statements) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let counters = (round_trips.clone(), statements.clone());
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let (round_trips, statements) = (counters.0.clone(), counters.1.clone());
                tokio::spawn(carry(inbound, upstream, rtt / 2, round_trips, statements));
            }
        });
        Ok(Link {
            url,
            rtt,
            round_trips,
            statements,
            task,
        })
    }

    /// Statements the server was asked to run through the link so far ([`Statements`]).
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Round trips made through the link so far, over all its connections.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// A counter that reads [`Link::round_trips`], for the workloads' clients.
    pub fn counter(&self) -> RoundTrips {
        RoundTrips(Some(self.round_trips.clone()))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The round trips of a run's link, or none (no `--rtt`).
#[derive(Debug, Clone, Default)]
pub struct RoundTrips(Option<Arc<AtomicU64>>);

impl RoundTrips {
    /// So far, when the run counts them.
    pub fn now(&self) -> Option<u64> {
        self.0.as_ref().map(|c| c.load(Ordering::Relaxed))
    }
}

async fn carry(
    inbound: TcpStream,
    upstream: SocketAddr,
    one_way: Duration,
    round_trips: Arc<AtomicU64>,
    statements: Arc<AtomicU64>,
) {
    let Ok(outbound) = TcpStream::connect(upstream).await else {
        return;
    };
    // Small request and answer packets: without it, delayed ACKs cost ~40 ms a round trip.
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (client_read, client_write) = inbound.into_split();
    let (server_read, server_write) = outbound.into_split();
    // The server has answered since the client last sent (true at first: the first send
    // is a round trip too).
    let answered = Arc::new(AtomicBool::new(true));
    let up = {
        let answered = answered.clone();
        let frames = std::sync::Mutex::new(Statements::default());
        move |bytes: &[u8]| {
            if answered.swap(false, Ordering::AcqRel) {
                round_trips.fetch_add(1, Ordering::Relaxed);
            }
            let mut frames = frames.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            statements.fetch_add(frames.read(bytes), Ordering::Relaxed);
        }
    };
    let down = move |_: &[u8]| answered.store(true, Ordering::Release);
    tokio::join!(
        pump(client_read, server_write, one_way, up),
        pump(server_read, client_write, one_way, down)
    );
}

/// Copies one direction, each chunk written `delay` after it arrived (in order); `seen`
/// is told of each chunk as it arrives.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration, seen: impl Fn(&[u8])) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            // The runtime's timer wakes on whole milliseconds, late by up to one (two per
            // round trip, 20% of a 10 ms link); a thread's sleep is late by tens of
            // microseconds.
            let now = Instant::now();
            if due > now {
                let wait = due - now;
                if tokio::task::spawn_blocking(move || std::thread::sleep(wait))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen(&buf[..n]);
                    if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::join!(reader, writer);
}

/// Counts the statements in what a client sends, across chunks: the messages of the
/// PostgreSQL protocol (a type byte, then a length that counts itself), after the
/// untyped ones that open a connection (a length, then a code: SSL or GSS requests, and
/// the startup message of protocol 3.x, after which every message is typed). Counted on
/// plain connections only: the stores connect without TLS here, and a TLS stream would
/// not be read.
#[derive(Debug, Default)]
struct Statements {
    started: bool,
    /// The bytes of the message being read, up to its length's end.
    head: Vec<u8>,
    /// Bytes of the current message still to skip past its head.
    rest: usize,
}

/// The startup message's code (protocol 3.0).
const STARTUP: u32 = 196_608;

impl Statements {
    /// Reads `bytes`, answering how many `Execute` and `Query` messages began in them.
    fn read(&mut self, mut bytes: &[u8]) -> u64 {
        let mut found = 0;
        while !bytes.is_empty() {
            if self.rest > 0 {
                let skip = self.rest.min(bytes.len());
                (self.rest, bytes) = (self.rest - skip, &bytes[skip..]);
                continue;
            }
            // Untyped: length (4) and code (4); typed: type (1) and length (4).
            let head = if self.started { 5 } else { 8 };
            let take = (head - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.head.len() < head {
                break;
            }
            let word = |at: usize| {
                u32::from_be_bytes([self.head[at], self.head[at + 1], self.head[at + 2], self.head[at + 3]])
            };
            let (length, counted) = if self.started {
                (word(1) as usize, 4)
            } else {
                self.started = word(4) >> 16 == STARTUP >> 16;
                (word(0) as usize, 8)
            };
            if head == 5 && matches!(self.head[0], b'E' | b'Q') {
                found += 1;
            }
            self.rest = length.saturating_sub(counted);
            self.head.clear();
        }
        found
    }
}

/// A listener on loopback in front of the server `db_url` names: the listener, the
/// server's address, and the URL through the listener. `who` names the caller in errors.
pub(crate) async fn in_front_of(db_url: &str, who: &str) -> BenchResult<(TcpListener, SocketAddr, String)> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::Setup(format!("{who}: cannot listen in front of the database: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| BenchError::Setup(format!("{who}: {e}")))?;
    let (upstream, url) = rewrite_address(db_url, &local.to_string())
        .ok_or_else(|| BenchError::Setup(format!("{who} needs a PostgreSQL reached over TCP (host and port)")))?;
    let upstream: SocketAddr = tokio::net::lookup_host(&upstream)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| BenchError::Setup(format!("{who}: cannot resolve {upstream}")))?;
    Ok((listener, upstream, url))
}

/// The host and port of a `postgres://` URL, and the URL with another address in their
/// place: `None` when the URL names no TCP address (a Unix socket, no host).
pub(crate) fn rewrite_address(url: &str, to: &str) -> Option<(String, String)> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    // Parameters that name the server again would take the connections around the relay.
    let query = rest.split_once('?').map_or("", |(_, q)| q);
    if query
        .split('&')
        .any(|kv| kv.starts_with("host=") || kv.starts_with("hostaddr=") || kv.starts_with("port="))
    {
        return None;
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    let host_port = &authority[host_start..];
    if host_port.is_empty() || host_port.contains(',') || host_port.starts_with('%') {
        return None;
    }
    let address = if host_port.starts_with('[') {
        match host_port.rfind("]:") {
            Some(_) => host_port.to_string(),
            None => format!("{host_port}:5432"),
        }
    } else if host_port.contains(':') {
        host_port.to_string()
    } else {
        format!("{host_port}:5432")
    };
    let start = scheme_end + host_start;
    let rewritten = format!("{}{to}{}", &url[..start], &url[scheme_end + authority_end..]);
    Some((address, rewritten))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed message: its type, and a body of `body` bytes.
    fn message(kind: u8, body: usize) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body + 4) as u32).to_be_bytes());
        m.extend(std::iter::repeat_n(b'x', body));
        m
    }

    #[test]
    fn statements_are_counted_in_any_chunking() {
        let mut stream = 8u32.to_be_bytes().to_vec();
        stream.extend_from_slice(&80_877_103u32.to_be_bytes()); // an SSL request
        stream.extend_from_slice(&12u32.to_be_bytes());
        stream.extend_from_slice(&STARTUP.to_be_bytes());
        stream.extend_from_slice(b"user"); // the startup message's parameters
        for (kind, body) in [
            (b'Q', 6),
            (b'P', 30),
            (b'B', 12),
            (b'E', 9),
            (b'S', 0),
            (b'B', 3),
            (b'E', 9),
            (b'S', 0),
        ] {
            stream.extend(message(kind, body));
        }
        stream.extend(message(b'X', 0));
        for size in [1, 2, 3, 5, 7, 64, stream.len()] {
            let mut counted = Statements::default();
            let found: u64 = stream.chunks(size).map(|c| counted.read(c)).sum();
            assert_eq!(found, 3, "in chunks of {size}");
        }
    }

    #[test]
    fn database_urls_are_sent_through_the_relay() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5432/db",
                Some(("127.0.0.1:5432", "postgres://postgres@127.0.0.1:9/db")),
            ),
            (
                "postgresql://u:p@db.example:6000/x?sslmode=disable",
                Some(("db.example:6000", "postgresql://u:p@127.0.0.1:9/x?sslmode=disable")),
            ),
            (
                "postgres://localhost/db",
                Some(("localhost:5432", "postgres://127.0.0.1:9/db")),
            ),
            (
                "postgres://u@[::1]:5433/db",
                Some(("[::1]:5433", "postgres://u@127.0.0.1:9/db")),
            ),
            ("postgres:///db?host=/run/postgresql", None),
            ("postgres://u@h1:1,h2:2/db", None),
            ("postgres://u@127.0.0.1:5432/db?host=/run/postgresql", None),
            ("postgres://u@127.0.0.1/db?sslmode=disable&port=6000", None),
            ("not a url", None),
        ];
        for (url, want) in cases {
            let got = rewrite_address(url, "127.0.0.1:9");
            let got = got.as_ref().map(|(a, u)| (a.as_str(), u.as_str()));
            assert_eq!(got, want, "{url}");
        }
    }
}
