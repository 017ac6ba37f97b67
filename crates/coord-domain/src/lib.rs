//! Pure domain of the Agent Coordinator: the wire types every door speaks, the error
//! codes, and the rules (validation, lock and queue decisions) as pure functions.
//! Nothing in this crate performs I/O or reads a clock.

pub mod access;
pub mod agents;
pub mod approvals;
pub mod audit;
pub mod audit_chain;
pub mod error;
pub mod files;
pub mod github;
pub mod github_sync;
pub mod guardrail_rules;
pub mod guardrails;
pub mod handoffs;
pub mod identity;
pub mod keys;
pub mod labels;
pub mod locks;
pub mod memory;
pub mod messages;
pub mod network;
pub mod notifications;
pub mod path;
pub mod ports;
pub mod profiles;
pub mod queue;
pub mod secrets;
pub mod sessions;
pub mod stats;
pub mod status;
pub mod target;
pub mod time;
pub mod validate;
pub mod verification;
pub mod workflows;

/// The request of operations that take no arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Empty {}

pub use error::{CoordError, CoordResult, ErrorCode, ErrorKind};
pub use identity::{Caller, Identity};
pub use time::Timestamp;
