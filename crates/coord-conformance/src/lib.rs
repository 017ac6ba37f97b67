//! The conformance suite of the service, generic over the store.
//!
//! A store crate instantiates it once in a test file:
//!
//! ```ignore
//! coord_conformance::conformance_suite!(MyBackend::new());
//! ```
//!
//! which expands to one `#[tokio::test]` per case. Every case builds a fresh, empty
//! store through the [`Backend`], a [`Coordinator`] over it with a [`ManualClock`], and
//! exercises the service only through the [`Coordination`] interface the doors use.
//!
//! It is instantiated four times: on SQLite (`coord-sqlite/tests/conformance.rs`), on
//! PostgreSQL (`coord-postgres/tests/conformance.rs`, each test on its own database copied
//! from a template migrated once per binary), through the JSON API and `RemoteClient`
//! (`coord-remote/tests/conformance_remote.rs`) and through MCP tools
//! (`coord-mcp/tests/conformance_mcp.rs`); a [`Backend`] names its [`Door`], since what a
//! client can send differs per door. The suite knows no store: raw access to the database
//! (for tampering with the audit trail, or breaking the store) comes from the backend as
//! [`RawSql`].
//!
//! The cases, in `cases/`, are grouped by requirement. `registry` iterates the registry
//! (one audit row per call for every audited operation; unknown request fields refused by
//! name on every door); `profiles`, `approvals`, `keys`, `network`, `memory`, … cover
//! their capability, including races (concurrent calls for the last unit of a limit, for
//! one approval, for one chain position); `model` holds the proptest state machines, random
//! operation sequences checked against a small model of the rules.
//!
//! This crate, and proptest under it, is only ever a dev-dependency: the product binary
//! holds no test code.

pub mod cases;
mod harness;

pub use harness::{AGENT_TYPE, Backend, Door, Fixture, Harness, RawSql, agent, operator};

// `conformance_suite!($backend)`: every case of `cases/` as a test function, listed by
// the build script (a case is a `pub async fn NAME(b: &dyn Backend)` there).
include!(concat!(env!("OUT_DIR"), "/suite.rs"));

#[doc(hidden)]
#[macro_export]
macro_rules! __async_cases {
    ($backend:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let backend = $backend;
                if !$crate::Backend::available(&backend).await {
                    return;
                }
                $crate::cases::$module::$case(&backend).await;
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sync_cases {
    ($backend:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let backend = $backend;
                let available = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on($crate::Backend::available(&backend));
                if !available {
                    return;
                }
                $crate::cases::$module::$case(&backend);
            }
        )*
    };
}
