//! Pure domain of the Agent Coordinator: the wire types every door speaks, the error
//! codes, and the rules (validation, lock and queue decisions) as pure functions.
//! Nothing in this crate performs I/O or reads a clock; it depends on no other coord
//! crate. Every wire type derives its JSON Schema (schemars), with its real bounds:
//! every door serves it (MCP tool schemas, OpenAPI). Rules are table-tested beside their modules (`tests.rs`, `*_tests.rs`).
//!
//! - Wire types of every operation (requests, results, `{success:false,error}`) and
//!   `ErrorCode` (`error`): stable snake_case codes and their kinds (`input`, `refused`,
//!   `not_found`, `forbidden`, `unavailable`, `internal`), from which every door derives
//!   its status.
//! - `access`: `Access`, `Effect`, `Credential`, `Principal` and `authorize`, the one
//!   access decision for every door.
//! - Locks and the queue: `path` (normalisation), `target` (files, `dir/`, globs; their
//!   scope and the conservative overlap rule, property-tested against globset),
//!   `validate` (TTL, priority and text bounds), `locks` (`overlapping`,
//!   `decide_acquire`, `decide_release`, `decide_edit`), `queue`, `sessions`
//!   (`validate_end`, `complete_final_handoff`).
//! - `profiles` (`Permission`, `Need`, `Profile`, limits, `decide`, `resolve`,
//!   `check_execution_time`; the built-ins in `profiles_builtin.json`, among them
//!   `least-privilege`, what an agent with no profile gets) and `approvals` (statuses and
//!   expiry, `decide` — nobody decides their own request —, `params_hash` over canonical
//!   JSON, which refusals are `approvable`).
//! - `audit` (records, summaries, query filters), `audit_chain` (SHA-256 over canonical
//!   content, numbers and key order normalised so text JSON and `jsonb` read back what
//!   was hashed; `ChainVerifier`; HMAC-signed prune checkpoints), `secrets` (credentials
//!   masked for display), `keys`, `stats` (the fleet's figures and the claim-to-complete
//!   bounds), `ports` (port blocks).
//! - `files`: the file tools' rules (line windows, encodings, the reserved `.git/` and
//!   `.coord/`, `decide_write` over the fencing token and the live locks).
//! - `memory`: validation and the one-hour merge of repeated memories, query terms for
//!   the full-text engines (never their query syntax), the ranking
//!   `relevance = C·D·I·U`, retention, skills (Wilson lower bound), working memory's
//!   deterministic compaction.
//! - `agents`: the worker profiles, agent definitions (YAML front matter, every problem
//!   with its field), each runtime's launch plan, the pre-flight verdict, spawned agents
//!   (admission, a child's privileges against its parent's, deadlines, delegation),
//!   isolation in a worktree (`fate`: nothing an agent did is lost), the registry of
//!   `.claude/agents/*.md` and `agents.json`, team files.
//! - `workflows`: definitions checked and ordered topologically, CEL edge conditions
//!   (depth- and size-bounded, variables `result` and `task`, compiled at definition), and
//!   `advance`, the one pure step from stored task outcomes.
//! - `network`: targets normalised by the WHATWG URL parser, reserved address ranges,
//!   `AddressRules` and `decide`, the one egress decision; built-in policies in
//!   `builtin.json`.
//! - `verification`: policies, changesets, `route` (every enabled policy covering a file;
//!   trust 3 or more skips tiers 0 and 1), `overall`, reports and commit states.

pub mod access;
pub mod agents;
pub mod approvals;
pub mod audit;
pub mod audit_chain;
pub mod error;
pub mod files;
pub mod guardrail_rules;
pub mod guardrails;
pub mod handoffs;
pub mod identity;
pub mod ids;
pub mod keys;
pub mod locks;
pub mod memory;
pub mod messages;
pub mod network;
pub mod notifications;
pub mod overrides;
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

pub use error::{CoordError, CoordResult, ErrorCode, ErrorKind};
pub use identity::{Caller, Identity};
pub use time::Timestamp;
