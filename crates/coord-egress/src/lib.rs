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
//!
//! Also: [`credentials`] (`Proxy-Authorization: Basic` → a `Principal`: `RunTokens` per
//! sandbox run, `ManagedKeys` for `coord proxy` and `coord serve`); `resolve` (the
//! system resolver with `--resolve` pins). The proxy bounds head size and time; when
//! none of a name's addresses is admitted it asks again with them, so that the refusal
//! is logged. [`sandbox`]'s `Plan` → bubblewrap argv is a pure function: no
//! capabilities, a new session, a cleared environment with an allowlist, credential
//! stores hidden, the proxy variables, and `command_filter`, the command's seccomp
//! program (`socket()` for IPv4, IPv6 and `NETLINK_ROUTE` only, no io_uring).
//! [`git_guard`] makes read-only what git reads as configuration or runs (every git
//! directory and `.git` file in the workspace, the files git's configuration points at,
//! the workspace's `PATH` directories) and names the `.git` entries a run created. This
//! crate decides nothing itself: every connection is decided by `check_network_access`
//! through the service, never by reading a store. Tests: `tests/proxy.rs` over real
//! loopback servers.

pub mod credentials;
pub mod git_guard;
pub mod proxy;
pub mod relay;
pub mod resolve;
pub mod sandbox;

pub use credentials::{Credentials, ManagedKeys, RunTokens};
pub use proxy::Proxy;
pub use resolve::{Resolve, Resolver};
