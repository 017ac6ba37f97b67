//! Pure domain of the Agent Coordinator: the wire types every door speaks, the error
//! codes, and the rules (validation, lock and queue decisions) as pure functions.
//! Nothing in this crate performs I/O or reads a clock.

pub mod audit;
pub mod error;
pub mod handoffs;
pub mod identity;
pub mod keys;
pub mod locks;
pub mod path;
pub mod ports;
pub mod queue;
pub mod sessions;
pub mod status;
pub mod time;
pub mod validate;

pub use error::{CoordError, CoordResult, ErrorCode, ErrorKind};
pub use identity::{Caller, Identity};
pub use time::Timestamp;
