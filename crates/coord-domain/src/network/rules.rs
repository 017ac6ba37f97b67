//! Egress rules and the one decision over them (pure, table-tested in `tests.rs`).
//!
//! An entry is `host`, `*.host` (subdomains only, never the apex: list the apex too for
//! both), an IP address or network (`127.0.0.2`, `10.0.0.0/8`, `[::1]`), or
//! `@category`; any of them but a category may end in `:port` or `:*`. Without a port an
//! allow entry means the web ports, 80 and 443, and a deny entry every port. There is no
//! bare `*`: a policy that allows everything says so with `default: allow`.

use super::target::{Host, Target, parse_target};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What an entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    Exact(String),
    /// `*.x`: names strictly below `x`.
    Subdomains(String),
    /// An address or a network; also what lets a resolved address in a reserved range
    /// through.
    Net(IpNet),
    /// `@name`: the category's entries (expanded by [`super::Rules::new`]).
    Category(String),
}

/// Which ports an entry covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// 80 and 443.
    Web,
    Any,
    One(u16),
}

impl Ports {
    /// As a deny entry reads it: no port written means every port.
    fn denying(self) -> Ports {
        match self {
            Ports::Web => Ports::Any,
            p => p,
        }
    }

    fn covers(self, port: u16) -> bool {
        match self {
            Ports::Web => port == 80 || port == 443,
            Ports::Any => true,
            Ports::One(p) => p == port,
        }
    }
}

/// One parsed entry, with the text it was written as (what decisions name as the rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pattern: Pattern,
    pub ports: Ports,
    pub text: String,
}

impl Entry {
    /// Reads an entry; the message says what is wrong with it.
    pub fn parse(raw: &str) -> Result<Entry, String> {
        let text = raw.trim();
        if text.is_empty() {
            return Err("an entry is empty".into());
        }
        if let Some(name) = text.strip_prefix('@') {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                return Err(format!(
                    "{text:?}: a category is @ and its name (lowercase letters and _)"
                ));
            }
            return Ok(Entry {
                pattern: Pattern::Category(name.into()),
                ports: Ports::Web,
                text: text.into(),
            });
        }
        let not_a_url = || format!("{text:?}: an entry is a host, *.host, an address or a network, not a URL or path");
        if text.contains("://") {
            return Err(not_a_url());
        }
        let (host, ports) = split_port(text)?;
        if host.contains('/') && net(host).is_none() {
            return Err(not_a_url());
        }
        let pattern = if host == "*" || host == "**" {
            return Err(format!(
                "{text:?}: a bare * would allow every host; use default: allow for a policy that allows everything"
            ));
        } else if let Some(net) = net(host) {
            Pattern::Net(net)
        } else if let Some(below) = host.strip_prefix("*.") {
            if below.contains('*') {
                return Err(format!(
                    "{text:?}: * may only stand for the labels in front (*.example.com)"
                ));
            }
            match normal_name(below)? {
                n if !n.contains('.') => {
                    return Err(format!("{text:?}: *.{n} would cover a whole top-level domain"));
                }
                n => Pattern::Subdomains(n),
            }
        } else if host.contains('*') {
            return Err(format!(
                "{text:?}: * may only stand for the labels in front (*.example.com)"
            ));
        } else {
            match parse_target(&format!("{host}:1"))
                .map_err(|e| format!("{text:?}: {}", e.message))?
                .host
            {
                Host::Name(n) => Pattern::Exact(n),
                Host::Ip(ip) => Pattern::Net(IpNet::from(ip)),
            }
        };
        Ok(Entry {
            pattern,
            ports,
            text: text.into(),
        })
    }

    /// Whether this allow entry covers the target (a category covers nothing by itself).
    pub fn matches(&self, target: &Target) -> bool {
        self.matches_on(self.ports, target)
    }

    /// Whether this deny entry covers the target (without a port: on every port).
    pub fn denies(&self, target: &Target) -> bool {
        self.matches_on(self.ports.denying(), target)
    }

    fn matches_on(&self, ports: Ports, target: &Target) -> bool {
        ports.covers(target.port)
            && match (&self.pattern, &target.host) {
                (Pattern::Exact(n), Host::Name(h)) => n == h,
                (Pattern::Subdomains(n), Host::Name(h)) => {
                    h.len() > n.len() + 1 && h.ends_with(n.as_str()) && h.as_bytes()[h.len() - n.len() - 1] == b'.'
                }
                (Pattern::Net(net), Host::Ip(ip)) => in_net(net, *ip),
                _ => false,
            }
    }

    /// Whether this entry names a network that covers `ip` on `port` (a deny entry
    /// without a port: on every port).
    fn covers_address(&self, ip: IpAddr, port: u16, deny: bool) -> bool {
        let ports = if deny { self.ports.denying() } else { self.ports };
        matches!(&self.pattern, Pattern::Net(net) if in_net(net, ip)) && ports.covers(port)
    }
}

/// Whether `ip` is in `net`, an IPv6 form embedding an IPv4 address (NAT64, 6to4,
/// compatible) counted as that address too: `[64:ff9b::5db8:d822]` is `93.184.216.34`.
fn in_net(net: &IpNet, ip: IpAddr) -> bool {
    net.contains(&ip) || embedded_v4(ip).is_some_and(|v4| net.contains(&IpAddr::V4(v4)))
}

/// The IPv4 address an IPv6 address stands for: IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::/96`, local-use `64:ff9b:1::/48`) and 6to4 (`2002::/16`). (IPv4-mapped
/// addresses are read as IPv4 before any rule sees them.)
fn embedded_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    if s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback() {
        return Some(v4(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..3] == [0x64, 0xff9b, 1] {
        return Some(v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(v4(s[1], s[2]));
    }
    None
}

/// `host[:port]`, `[v6][:port]` or an IPv6 address/network without brackets.
fn split_port(text: &str) -> Result<(&str, Ports), String> {
    if net(text).is_some() {
        return Ok((text, Ports::Web));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(|| format!("{text:?}: [ without ]"))?;
        match after {
            "" => return Ok((inside, Ports::Web)),
            _ => (
                inside,
                after
                    .strip_prefix(':')
                    .ok_or_else(|| format!("{text:?}: ] must be followed by :port"))?,
            ),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, p),
            Some(_) => return Err(format!("{text:?}: write an IPv6 address with a port as [address]:port")),
            None => return Ok((text, Ports::Web)),
        }
    };
    let ports = match port {
        "*" => Ports::Any,
        p => match p.parse::<u16>() {
            Ok(n) if n > 0 => Ports::One(n),
            _ => return Err(format!("{text:?}: the port must be 1-65535 or *")),
        },
    };
    Ok((host, ports))
}

/// An address or network, IPv4-mapped forms read as IPv4.
fn net(text: &str) -> Option<IpNet> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(IpNet::from(canonical(ip)));
    }
    text.parse::<IpNet>().ok().map(|n| n.trunc())
}

fn normal_name(name: &str) -> Result<String, String> {
    match parse_target(&format!("{name}:1"))
        .map_err(|e| format!("{name:?}: {}", e.message))?
        .host
    {
        Host::Name(n) => Ok(n),
        Host::Ip(_) => Err(format!("{name:?}: *. goes in front of a name, not an address")),
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Addresses no request may reach unless a policy lists them: unspecified, loopback,
/// private (RFC 1918, IPv6 ULA and site-local), shared (CGNAT), link-local (cloud
/// metadata services live there), multicast, reserved and benchmarking ranges, IPv6
/// documentation, Teredo and SIIT. An IPv6 address that embeds an IPv4 one (mapped,
/// compatible, NAT64, 6to4) is judged by that address.
pub fn is_reserved(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => reserved_v4(v4),
        ip @ IpAddr::V6(v6) => match embedded_v4(ip) {
            Some(v4) => reserved_v4(v4),
            None => reserved_v6(v6),
        },
    }
}

fn reserved_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 224
}

fn reserved_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    ip.is_unspecified()
        || ip.is_loopback()
        // SIIT (::ffff:0:a.b.c.d), discard-only (100::/64)
        || s[..5] == [0, 0, 0, 0, 0xffff]
        || s[..4] == [0x100, 0, 0, 0]
        // Teredo, benchmarking, documentation
        || s[..2] == [0x2001, 0]
        || s[..3] == [0x2001, 2, 0]
        || s[..2] == [0x2001, 0xdb8]
        // ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] & 0xff00) == 0xff00
}

/// The address half of a policy: what a resolved address must pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressRules {
    /// Allow entries naming networks: a reserved address passes only through one.
    pub allow: Vec<Entry>,
    /// Deny entries naming networks: no address in them passes.
    pub deny: Vec<Entry>,
}

impl AddressRules {
    /// The network entries among `allow` and `deny`.
    pub fn of(allow: &[Entry], deny: &[Entry]) -> AddressRules {
        let nets = |v: &[Entry]| {
            v.iter()
                .filter(|e| matches!(e.pattern, Pattern::Net(_)))
                .cloned()
                .collect()
        };
        AddressRules {
            allow: nets(allow),
            deny: nets(deny),
        }
    }

    /// Whether a connection to `ip:port` may be made: not in a denied network, and
    /// either not reserved or in an allowed network.
    pub fn admits(&self, ip: IpAddr, port: u16) -> bool {
        let ip = canonical(ip);
        !self.deny.iter().any(|e| e.covers_address(ip, port, true))
            && (!is_reserved(ip) || self.allow.iter().any(|e| e.covers_address(ip, port, false)))
    }
}

/// What the policy does with a host no entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefaultAction {
    Allow,
    Deny,
}

/// Why a request was allowed or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// An allow entry names it.
    Allowlisted,
    /// No entry names it and the policy allows by default.
    DefaultAllow,
    /// A deny entry names it (deny wins over allow).
    Denylisted,
    /// No allow entry names it and the policy denies by default.
    NotAllowlisted,
    /// An IP address in a reserved range (loopback, private, link-local, ...) that no
    /// allow entry names as an address.
    ReservedAddress,
    /// The name is allowed, but none of the addresses it resolved to may be reached.
    NoAllowedAddress,
    /// The name is allowed, but it did not resolve to any address.
    NotResolved,
    /// The caller's profile names a policy that does not exist: nothing is allowed.
    UnknownPolicy,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Allowlisted => "allowlisted",
            Reason::DefaultAllow => "default_allow",
            Reason::Denylisted => "denylisted",
            Reason::NotAllowlisted => "not_allowlisted",
            Reason::ReservedAddress => "reserved_address",
            Reason::NoAllowedAddress => "no_allowed_address",
            Reason::NotResolved => "not_resolved",
            Reason::UnknownPolicy => "unknown_policy",
        }
    }

    pub fn allowed(self) -> bool {
        matches!(self, Reason::Allowlisted | Reason::DefaultAllow)
    }
}

/// A decision: the reason says whether it allows; `rule` is the entry that decided;
/// `addresses` the resolved addresses that may be dialled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub reason: Reason,
    pub rule: Option<String>,
    pub addresses: Vec<IpAddr>,
}

impl Decision {
    pub fn allowed(&self) -> bool {
        self.reason.allowed()
    }
}

/// The decision over a target. In order: a deny entry refuses; then an allow entry, or
/// the policy's default; an IP literal in a reserved range needs an allow entry that
/// names it as an address (a name entry never does, nor does `default: allow`); of
/// `resolved` — the addresses a name resolved to, when known (`None`: not resolved yet)
/// — only those the address rules admit may be dialled, and none left (or none at all)
/// refuses.
pub fn decide(
    default: DefaultAction,
    allow: &[Entry],
    deny: &[Entry],
    target: &Target,
    resolved: Option<&[IpAddr]>,
) -> Decision {
    let refuse = |reason, rule: Option<&Entry>| Decision {
        reason,
        rule: rule.map(|e| e.text.clone()),
        addresses: Vec::new(),
    };
    if let Some(e) = deny.iter().find(|e| e.denies(target)) {
        return refuse(Reason::Denylisted, Some(e));
    }
    let by = allow.iter().find(|e| e.matches(target));
    let reason = match (by, default) {
        (Some(_), _) => Reason::Allowlisted,
        (None, DefaultAction::Allow) => Reason::DefaultAllow,
        (None, DefaultAction::Deny) => return refuse(Reason::NotAllowlisted, None),
    };
    let addresses = AddressRules::of(allow, deny);
    if let Host::Ip(ip) = target.host
        && !addresses.admits(ip, target.port)
    {
        return refuse(Reason::ReservedAddress, by);
    }
    let admitted: Vec<IpAddr> = resolved
        .unwrap_or_default()
        .iter()
        .copied()
        .filter(|ip| addresses.admits(*ip, target.port))
        .collect();
    match resolved {
        Some([]) => return refuse(Reason::NotResolved, by),
        Some(_) if admitted.is_empty() => return refuse(Reason::NoAllowedAddress, by),
        _ => {}
    }
    Decision {
        reason,
        rule: by.map(|e| e.text.clone()),
        addresses: admitted,
    }
}
