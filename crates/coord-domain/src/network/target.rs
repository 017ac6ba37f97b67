//! What an egress request is for: a URL or `host[:port]`, normalised before any rule
//! sees it — lowercase, no trailing dot, IDNA to punycode, every IPv4 spelling
//! (`2130706433`, `0177.0.0.1`) and IPv4-mapped IPv6 read as the address it is — by the
//! WHATWG URL parser, never by string tricks of our own.

use crate::{CoordError, CoordResult, ErrorCode};
use std::fmt;
use std::net::IpAddr;

/// The longest target accepted, in bytes.
pub const MAX_TARGET: usize = 2048;

/// A host as rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A DNS name: lowercase ASCII (punycode), labels of `[a-z0-9_-]`, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// A normalised egress target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub port: u16,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

fn bad(message: impl Into<String>) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, "target", message)
}

/// Reads `raw`: a URL (`http`, `https`, `ws`, `wss`; the port defaults to the
/// scheme's) or `host[:port]` (port 443 when absent), as a CONNECT request names it.
/// What does not read as one host is refused, never guessed at: a bare `host` form
/// with a path, query or userinfo (`allowed.com@evil.com`) is an error. In a URL the
/// userinfo is not the host: `http://allowed.com@evil.com/` is a request to evil.com.
pub fn parse_target(raw: &str) -> CoordResult<Target> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(bad("target is empty: give a URL or host[:port]"));
    }
    if raw.len() > MAX_TARGET {
        return Err(bad(format!("target is longer than {MAX_TARGET} bytes")));
    }
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("target contains whitespace or control characters"));
    }
    let url = if raw.contains("://") {
        let url = url::Url::parse(raw).map_err(|e| bad(format!("target is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https" | "ws" | "wss") {
            return Err(bad(format!(
                "scheme {} is not checked: give an http(s) or ws(s) URL, or host[:port]",
                url.scheme()
            )));
        }
        url
    } else {
        if let Some(c) = raw.chars().find(|c| matches!(c, '/' | '@' | '?' | '#' | '\\')) {
            return Err(bad(format!(
                "{raw:?} is not host[:port] (it contains {c:?}); give a URL or just host[:port]"
            )));
        }
        url::Url::parse(&format!("https://{raw}")).map_err(|e| bad(format!("{raw:?} is not host[:port]: {e}")))?
    };
    let port = url.port_or_known_default().ok_or_else(|| bad("target has no port"))?;
    if port == 0 {
        return Err(bad("port 0 is not a destination"));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => name(d)?,
        Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Host::Ip(match ip.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(ip),
        }),
        None => return Err(bad("target has no host")),
    };
    Ok(Target { host, port })
}

/// A DNS name as the URL parser left it (lowercased, IDNA applied), checked: one
/// trailing dot dropped, 1–63 character labels of `[a-z0-9_-]` not starting or ending
/// with `-`, at most 253 in all.
fn name(d: &str) -> CoordResult<Host> {
    let d = d.strip_suffix('.').unwrap_or(d);
    if d.is_empty() || d.len() > 253 {
        return Err(bad("host name is empty or longer than 253 characters"));
    }
    for label in d.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(bad(format!("host name {d:?} has an empty or over-long label")));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(bad(format!("host name {d:?} has a character a DNS name cannot have")));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(bad(format!("host name {d:?} has a label starting or ending with '-'")));
        }
    }
    Ok(Host::Name(d.to_string()))
}
