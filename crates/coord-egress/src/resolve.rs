//! Name resolution for the proxy: the system resolver, with names pinned to addresses
//! first (`--resolve name=address`, like curl's: split-horizon set-ups and tests, which
//! map names to loopback addresses and never reach a real DNS server).

use async_trait::async_trait;
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;

#[async_trait]
pub trait Resolve: Send + Sync {
    /// The addresses of `host`, a normalised name (no trailing dot), resolved as fully
    /// qualified.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

#[derive(Debug, Clone, Default)]
pub struct Resolver {
    pinned: HashMap<String, Vec<IpAddr>>,
}

impl Resolver {
    /// Reads `name=address[,address…]` pins (`name=`: the name resolves to nothing); the
    /// message says what is wrong.
    pub fn with_pins(pins: &[String]) -> Result<Resolver, String> {
        let mut pinned: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for pin in pins {
            let (name, addrs) = pin
                .split_once('=')
                .ok_or_else(|| format!("{pin:?}: write name=address"))?;
            let target = coord_domain::network::parse_target(&format!("{}:1", name.trim()))
                .map_err(|e| format!("{pin:?}: {}", e.message))?;
            let coord_domain::network::Host::Name(name) = target.host else {
                return Err(format!("{pin:?}: pin a name, not an address"));
            };
            pinned.entry(name.clone()).or_default();
            for a in addrs.split(',').filter(|a| !a.trim().is_empty()) {
                let ip = a
                    .trim()
                    .parse::<IpAddr>()
                    .map_err(|_| format!("{pin:?}: {a:?} is not an IP address"))?;
                pinned.entry(name.clone()).or_default().push(ip);
            }
        }
        Ok(Resolver { pinned })
    }
}

#[async_trait]
impl Resolve for Resolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        if let Some(ips) = self.pinned.get(host) {
            return Ok(ips.clone());
        }
        // As a fully qualified name: no search domains (`db` must not become `db.corp.example`).
        let fqdn = format!("{host}.");
        let mut out: Vec<IpAddr> = tokio::net::lookup_host((fqdn.as_str(), port))
            .await?
            .map(|a| a.ip())
            .collect();
        out.dedup();
        Ok(out)
    }
}
