//! GitHub, as an integration of coord (docs/github.md). Pure: the HTTP door receives
//! deliveries (`coord-http`), the stores keep links and the outbox, `coord-remote` sends
//! the API requests; this crate says what they mean.
//!
//! - [`webhook`]: a delivery's signature (`X-Hub-Signature-256`, checked in constant
//!   time), the parts of its payload coord reads, and what a push means for verification
//!   (`plan_push`: the changed files, the branch and its agent).
//! - [`labels`]: `locked:<path>` labels, hashed past GitHub's 50 characters, and their
//!   resolution against the paths an issue lists.
//! - [`sync`]: GitHub state as coordination — an issue's labels become locks and an
//!   assigned task, an agent branch's files become locks — reconciled against what coord
//!   last applied (`wanted`, `reconcile`), and the outbox's requests and backoff.
//!
//! Depends on `coord-domain` only.

pub mod labels;
pub mod sync;
pub mod webhook;
