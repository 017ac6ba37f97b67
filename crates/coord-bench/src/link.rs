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
    task: tokio::task::JoinHandle<()>,
}

impl Link {
    /// A relay to the server `db_url` names, adding `rtt` to every round trip.
    pub async fn start(db_url: &str, rtt: Duration) -> BenchResult<Link> {
        let (listener, upstream, url) = in_front_of(db_url, "--rtt").await?;
        let round_trips = Arc::new(AtomicU64::new(0));
        let counter = round_trips.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                tokio::spawn(carry(inbound, upstream, rtt / 2, counter.clone()));
            }
        });
        Ok(Link {
            url,
            rtt,
            round_trips,
            task,
        })
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

async fn carry(inbound: TcpStream, upstream: SocketAddr, one_way: Duration, round_trips: Arc<AtomicU64>) {
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
        move |_: usize| {
            if answered.swap(false, Ordering::AcqRel) {
                round_trips.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let down = move |_: usize| answered.store(true, Ordering::Release);
    tokio::join!(
        pump(client_read, server_write, one_way, up),
        pump(server_read, client_write, one_way, down)
    );
}

/// Copies one direction, each chunk written `delay` after it arrived (in order); `seen`
/// is told of each chunk as it arrives.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration, seen: impl Fn(usize)) {
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
                    seen(n);
                    if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::join!(reader, writer);
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
