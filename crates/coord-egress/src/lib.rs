//! Egress enforcement. An agent's network policy (`check_network_access`) is only
//! advisory while the agent can open sockets of its own; here it is enforced:
//!
//! - [`proxy`]: an HTTP/1.1 CONNECT and absolute-form forward proxy (no TLS
//!   interception) that authenticates each agent by its own credential, asks
//!   `check_network_access` as that agent (so every attempt is decided by the one pure
//!   function and logged), resolves an allowed name itself, keeps only the addresses the
//!   policy admits and dials one of those — never resolving twice (no DNS rebinding).
//! - [`sandbox`]: `coord sandbox run` — bubblewrap with the network namespace unshared,
//!   so the only way out is the proxy's Unix socket, relayed inside by [`relay`]; the
//!   workspace writable, the rest read-only, credential files hidden; [`git_guard`]:
//!   what git reads as configuration or runs, read-only inside.

pub mod credentials;
pub mod git_guard;
pub mod proxy;
pub mod relay;
pub mod resolve;
pub mod sandbox;

pub use credentials::{Credentials, ManagedKeys, RunTokens};
pub use proxy::Proxy;
pub use resolve::{Resolve, Resolver};
