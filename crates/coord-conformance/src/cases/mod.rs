//! The cases, grouped by requirement. Each takes the backend and builds its own harness.

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod audit_chain;
pub mod files;
pub mod github;
pub mod guardrails;
pub mod handoffs;
pub mod ids;
pub mod keys;
pub mod locks;
pub mod memory;
pub mod messages;
pub mod model;
pub mod network;
pub mod overrides;
pub mod patterns;
pub mod profiles;
pub mod queue;
pub mod registry;
pub mod sessions;
pub mod spawn;
pub mod stats;
pub mod verification;
pub mod workflows;
