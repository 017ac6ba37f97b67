//! The operation definitions, one module per capability. Each `impl Operation` is the
//! whole service-side cost of an operation; its store methods sit beside their SQL.

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod files;
pub mod guardrails;
pub mod handoffs;
pub mod keys;
pub mod locks;
pub mod memory;
pub mod messages;
pub mod network;
pub mod notifications;
pub mod ports;
pub mod profiles;
pub mod queue;
pub mod sessions;
pub mod spawn;
pub mod workflows;
