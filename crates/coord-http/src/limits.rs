//! What an HTTP client may cost the server before it has proven anything (docs/http.md,
//! "Limits"): connections at once (in all and per client address), time to send its
//! request head and body, requests without a key per second, and failed keys or
//! sign-ins per minute. The decisions are pure functions over an explicit clock reading
//! (table-tested); [`Limiter`] holds their state per client address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The limits of one server (`COORD_HTTP_*` variables, see [`Limits::from_vars`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Connections open at once, in all.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_client: usize,
    /// Time to send a request's head (line and headers), from the connection or the
    /// previous response.
    pub header_timeout: Duration,
    /// Time to send a request's body.
    pub body_timeout: Duration,
    /// Requests without a key a client address may make per second, on average...
    pub anonymous_per_second: f64,
    /// ...and in a burst.
    pub anonymous_burst: f64,
    /// Failed keys or sign-ins from one client address within a minute before its
    /// requests with a key are paused for the rest of that minute.
    pub failed_keys_per_minute: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_connections_per_client: 64,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            anonymous_per_second: 10.0,
            anonymous_burst: 50.0,
            failed_keys_per_minute: 20,
        }
    }
}

impl Limits {
    /// `COORD_HTTP_MAX_CONNECTIONS`, `COORD_HTTP_MAX_CONNECTIONS_PER_CLIENT`,
    /// `COORD_HTTP_HEADER_TIMEOUT_SECONDS`, `COORD_HTTP_BODY_TIMEOUT_SECONDS`,
    /// `COORD_HTTP_ANONYMOUS_PER_SECOND`, `COORD_HTTP_ANONYMOUS_BURST`,
    /// `COORD_HTTP_FAILED_KEYS_PER_MINUTE`: each a positive number; invalid ones are
    /// named.
    pub fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Limits, (String, String)> {
        let mut l = Limits::default();
        let num = |name: &str| -> Result<Option<f64>, (String, String)> {
            match var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => match v.parse::<f64>() {
                    Ok(n) if n > 0.0 && n.is_finite() && n <= 1e9 => Ok(Some(n)),
                    _ => Err((name.to_string(), format!("{v:?} is not a positive number"))),
                },
            }
        };
        if let Some(n) = num("COORD_HTTP_MAX_CONNECTIONS")? {
            l.max_connections = n as usize;
        }
        if let Some(n) = num("COORD_HTTP_MAX_CONNECTIONS_PER_CLIENT")? {
            l.max_connections_per_client = n as usize;
        }
        if let Some(n) = num("COORD_HTTP_HEADER_TIMEOUT_SECONDS")? {
            l.header_timeout = Duration::from_secs_f64(n);
        }
        if let Some(n) = num("COORD_HTTP_BODY_TIMEOUT_SECONDS")? {
            l.body_timeout = Duration::from_secs_f64(n);
        }
        if let Some(n) = num("COORD_HTTP_ANONYMOUS_PER_SECOND")? {
            l.anonymous_per_second = n;
        }
        if let Some(n) = num("COORD_HTTP_ANONYMOUS_BURST")? {
            l.anonymous_burst = n;
        }
        if let Some(n) = num("COORD_HTTP_FAILED_KEYS_PER_MINUTE")? {
            l.failed_keys_per_minute = n as usize;
        }
        Ok(l)
    }
}

/// A token bucket: `tokens` left at `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub tokens: f64,
    pub at: Instant,
}

/// Takes one token from `bucket` (full when new) at `now`, refilled at `rate` per second
/// up to `burst`. Answers the bucket after, and whether the request may pass.
pub fn take(bucket: Option<Bucket>, now: Instant, rate: f64, burst: f64) -> (Bucket, bool) {
    let b = bucket.unwrap_or(Bucket { tokens: burst, at: now });
    let refilled = (b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate).min(burst);
    if refilled >= 1.0 {
        (
            Bucket {
                tokens: refilled - 1.0,
                at: now,
            },
            true,
        )
    } else {
        (
            Bucket {
                tokens: refilled,
                at: now,
            },
            false,
        )
    }
}

/// The failures of the last minute, as of `now`.
pub fn recent(failures: &[Instant], now: Instant) -> usize {
    failures
        .iter()
        .filter(|t| now.saturating_duration_since(**t) < Duration::from_secs(60))
        .count()
}

#[derive(Default)]
struct Client {
    connections: usize,
    anonymous: Option<Bucket>,
    failures: Vec<Instant>,
}

/// The limits' state, per client address (addresses with nothing open and nothing
/// recent are forgotten).
#[derive(Clone)]
pub struct Limiter {
    pub limits: Limits,
    clients: Arc<Mutex<(usize, HashMap<IpAddr, Client>)>>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A connection counted against the limits until dropped.
pub struct Permit {
    limiter: Limiter,
    ip: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut g = self.limiter.clients.lock().unwrap_or_else(PoisonError::into_inner);
        g.0 = g.0.saturating_sub(1);
        if let Some(c) = g.1.get_mut(&self.ip) {
            c.connections = c.connections.saturating_sub(1);
        }
    }
}

impl Limiter {
    pub fn new(limits: Limits) -> Limiter {
        Limiter {
            limits,
            clients: Arc::default(),
        }
    }

    /// A new connection from `ip`, or `None` when it is over a connection limit.
    pub fn connect(&self, ip: IpAddr) -> Option<Permit> {
        let mut g = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let (total, clients) = &mut *g;
        if *total >= self.limits.max_connections {
            return None;
        }
        let c = clients.entry(ip).or_default();
        if c.connections >= self.limits.max_connections_per_client {
            return None;
        }
        c.connections += 1;
        *total += 1;
        Some(Permit {
            limiter: self.clone(),
            ip,
        })
    }

    /// Whether a request without a key from `ip` may pass now.
    pub fn anonymous(&self, ip: IpAddr, now: Instant) -> bool {
        let mut g = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let c = g.1.entry(ip).or_default();
        let (bucket, pass) = take(
            c.anonymous,
            now,
            self.limits.anonymous_per_second,
            self.limits.anonymous_burst,
        );
        c.anonymous = Some(bucket);
        pass
    }

    /// Whether `ip` has failed too many keys or sign-ins in the last minute.
    pub fn paused(&self, ip: IpAddr, now: Instant) -> bool {
        let g = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        g.1.get(&ip)
            .is_some_and(|c| recent(&c.failures, now) >= self.limits.failed_keys_per_minute)
    }

    /// A failed key or sign-in from `ip`.
    pub fn failed(&self, ip: IpAddr, now: Instant) {
        let mut g = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let clients = &mut g.1;
        let c = clients.entry(ip).or_default();
        c.failures
            .retain(|t| now.saturating_duration_since(*t) < Duration::from_secs(60));
        c.failures.push(now);
        // Forget clients with nothing open and nothing recent (bounded memory).
        if clients.len() > 10_000 {
            clients.retain(|_, c| c.connections > 0 || recent(&c.failures, now) > 0);
        }
    }
}

/// The host part of a `Host` header value or of an origin (`scheme://host[:port]`),
/// lower-cased, brackets of an IPv6 address kept off.
pub fn host_of(value: &str) -> String {
    let rest = value.split_once("://").map_or(value, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        // A bare IPv6 address (more than one colon) has no port.
        None if authority.matches(':').count() > 1 => authority,
        None => authority.rsplit_once(':').map_or(authority, |(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                authority
            }
        }),
    };
    host.to_ascii_lowercase()
}

/// Whether a request may be served (DNS rebinding): on a loopback listener its `Host`
/// must name one of `allowed` (loopback names and the configured hosts); wherever it
/// listens, an `Origin` it carries must name one of them or the `Host` itself (a page of
/// another site cannot drive this server through its visitor's browser). A browser sends
/// `Origin: null` for a form posted by a page whose referrer policy is `no-referrer`
/// (the dashboard's): that passes only with the browser's own `Sec-Fetch-Site:
/// same-origin`, which no page can set.
pub fn host_and_origin_allowed(
    host: Option<&str>,
    origin: Option<&str>,
    fetch_site: Option<&str>,
    allowed: &[String],
    loopback: bool,
) -> bool {
    let known = |h: &str| allowed.iter().any(|a| host_of(a) == h);
    let host = host.map(host_of);
    if loopback && !host.as_deref().is_some_and(known) {
        return false;
    }
    match origin {
        None => true,
        // Sandboxed pages and file: URLs send "null": not this server's page.
        Some(o) if o.trim() == "null" => fetch_site == Some("same-origin"),
        Some(o) => {
            let o = host_of(o);
            !o.is_empty() && (known(&o) || host.as_deref() == Some(o.as_str()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_refill_at_their_rate_up_to_the_burst() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let (b, pass) = take(None, t0, 1.0, 2.0);
        assert!(pass && b.tokens == 1.0);
        let (b, pass) = take(Some(b), t0, 1.0, 2.0);
        assert!(pass && b.tokens == 0.0);
        let (b, pass) = take(Some(b), t0, 1.0, 2.0);
        assert!(!pass, "the burst is spent");
        let (b, pass) = take(Some(b), t0 + s(1), 1.0, 2.0);
        assert!(pass && b.tokens == 0.0, "one second refills one");
        let (b, _) = take(Some(b), t0 + s(100), 1.0, 2.0);
        assert_eq!(b.tokens, 1.0, "never more than the burst");
    }

    #[test]
    fn connections_are_capped_in_all_and_per_client() {
        let l = Limiter::new(Limits {
            max_connections: 3,
            max_connections_per_client: 2,
            ..Limits::default()
        });
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let p1 = l.connect(a).unwrap();
        let _p2 = l.connect(a).unwrap();
        assert!(l.connect(a).is_none(), "per client");
        let _p3 = l.connect(b).unwrap();
        assert!(l.connect(b).is_none(), "in all");
        drop(p1);
        assert!(l.connect(a).is_some(), "a closed connection frees its place");
    }

    #[test]
    fn failures_pause_one_client_for_a_minute() {
        let l = Limiter::new(Limits {
            failed_keys_per_minute: 3,
            ..Limits::default()
        });
        let t0 = Instant::now();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "::1".parse().unwrap());
        for i in 0..3 {
            assert!(!l.paused(a, t0));
            l.failed(a, t0 + Duration::from_secs(i));
        }
        assert!(l.paused(a, t0 + Duration::from_secs(3)));
        assert!(!l.paused(b, t0), "another client is not paused");
        assert!(!l.paused(a, t0 + Duration::from_secs(61)), "a minute later");
    }

    #[test]
    fn hosts_and_origins() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let cases = [
            (Some("127.0.0.1:8081"), None, None, true, true),
            (Some("localhost"), Some("http://localhost:8081"), None, true, true),
            (Some("[::1]:8081"), Some("http://[::1]:8081"), None, true, true),
            (Some("evil.example:8081"), None, None, true, false),
            (Some("127.0.0.1:8081"), Some("http://evil.example"), None, true, false),
            (Some("127.0.0.1:8081"), Some("null"), None, true, false),
            (Some("127.0.0.1:8081"), Some("null"), Some("cross-site"), true, false),
            // The dashboard's own form (referrer policy no-referrer): the browser's word.
            (Some("127.0.0.1:8081"), Some("null"), Some("same-origin"), true, true),
            (None, None, None, true, false),
            // Not on loopback: any Host (a proxy's name), but a foreign Origin is refused.
            (Some("coord.example.com"), None, None, false, true),
            (
                Some("coord.example.com"),
                Some("https://coord.example.com"),
                None,
                false,
                true,
            ),
            (
                Some("coord.example.com"),
                Some("https://evil.example"),
                None,
                false,
                false,
            ),
        ];
        for (host, origin, site, loopback, want) in cases {
            assert_eq!(
                host_and_origin_allowed(host, origin, site, &allowed, loopback),
                want,
                "{host:?} {origin:?} {site:?} {loopback}"
            );
        }
        assert_eq!(host_of("HTTP://Evil.Example:80/x"), "evil.example");
        assert_eq!(host_of("::1"), "::1");
        assert_eq!(host_of("[::1]:80"), "::1");
    }
}
