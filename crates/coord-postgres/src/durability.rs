//! How a write is made durable without holding the audit chain's lock through its flush.
//!
//! Every write appends to the hash-chained audit trail under one advisory lock, held to
//! commit (`chain::insert_and_commit`). A synchronous commit waits for its WAL flush — and
//! for synchronous standbys — before it releases that lock, so writers' flushes happen one
//! at a time: with ~1 ms per flush the whole store orders about 1,000 writes a second
//! (the history of docs/benchmarks.md).
//!
//! [`Durability::FlushAfter`] commits the operation asynchronously (`synchronous_commit`
//! off for that transaction alone), so the lock goes as soon as the commit record is in
//! the WAL, and then, before the caller is answered, commits one more transaction that
//! writes WAL of its own (`pg_logical_emit_message(true, …)`) with the session's
//! `synchronous_commit`. That commit's record is later in the WAL than the operation's,
//! so its flush (and its standbys' confirmation, under `remote_write`/`on`/`remote_apply`)
//! covers the operation's; concurrent writers' flushes group. The caller is answered
//! only after it, so what an agent is told it did is exactly as durable as before.
//!
//! The second transaction must write WAL: PostgreSQL commits a transaction that wrote
//! none (`SELECT txid_current()`) asynchronously whatever `synchronous_commit` says.
//! `crates/coord-postgres/tests/durability.rs` checks on a private server with a
//! synchronous standby that never comes that the answer waits for it.
//!
//! What changes for others: a write is visible to other sessions from its asynchronous
//! commit, up to one flush (about a millisecond) before it is durable, where a
//! synchronous commit stays invisible until its flush and its standbys' answer. A crash
//! or failover in that moment loses it, with every later write (the WAL is one sequence:
//! a write that depended on it is later, and is lost too); what may be lost is what a
//! read reported meanwhile (a lock listed, a task's status), never a write its writer was
//! told succeeded. An operator who wants reads never to run ahead of durability revokes
//! `EXECUTE` on `pg_logical_emit_message` from coord's role: writes then commit
//! synchronously under the lock (README, "Running on PostgreSQL"). Each write also takes a second
//! transaction id, and logical-decoding consumers that ask for messages see one `coord`
//! message per write.
//!
//! [`Durability::UnderLock`] is the plain synchronous commit: when the role may not run
//! `pg_logical_emit_message` (PUBLIC may by default; a hardened server may revoke it), or
//! when the session commits asynchronously anyway (`synchronous_commit=off`).

use crate::R;
use deadpool_postgres::ClientWrapper;
use std::sync::atomic::{AtomicU8, Ordering};

/// How an operation's transaction is committed (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// A synchronous commit while the chain's lock is held.
    UnderLock,
    /// An asynchronous commit, then a flushed message commit before the answer.
    FlushAfter,
}

/// Under [`Durability::FlushAfter`], what comes before the audit row: the transaction's
/// commit made asynchronous and the chain's lock (`$1`) taken, in one statement (one
/// statement less for the server to run on every write).
pub(crate) const ASYNC_COMMIT_AND_LOCK: &str =
    "SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock($1)";
/// The asynchronous commit of [`ASYNC_COMMIT_AND_LOCK`], for a statement of its own making.
pub(crate) const ASYNC_COMMIT: &str = "set_config('synchronous_commit', 'off', true), ";
/// Sent after the operation's `COMMIT`, outside its transaction (module docs).
pub(crate) const FLUSH: &str = "SELECT pg_catalog.pg_logical_emit_message(true, 'coord', ''::text)";

/// Whether the role may flush by a message, and the session's `synchronous_commit`.
const PROBE: &str = "SELECT coalesce((SELECT bool_or(has_function_privilege(p.oid, 'EXECUTE'))
         FROM pg_catalog.pg_proc p
         WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::regnamespace
           AND p.proargtypes[2] = 'text'::regtype), false),
     current_setting('synchronous_commit')";

/// The rule: flush after the lock only when it is allowed and the session's commits are
/// synchronous at all (`off` means the operator chose asynchronous commits: nothing to
/// wait for, and no message to write).
pub(crate) fn choose(may_emit: bool, synchronous_commit: &str) -> Durability {
    if may_emit && !synchronous_commit.eq_ignore_ascii_case("off") {
        Durability::FlushAfter
    } else {
        Durability::UnderLock
    }
}

const UNKNOWN: u8 = 0;
const UNDER_LOCK: u8 = 1;
const FLUSH_AFTER: u8 = 2;

/// The store's choice, probed on first use (all its connections share one URL, so one
/// role, database and session settings) and kept.
#[derive(Debug, Default)]
pub(crate) struct Choice(AtomicU8);

impl Choice {
    pub(crate) async fn get(&self, client: &ClientWrapper) -> R<Durability> {
        match self.0.load(Ordering::Acquire) {
            UNDER_LOCK => return Ok(Durability::UnderLock),
            FLUSH_AFTER => return Ok(Durability::FlushAfter),
            _ => {}
        }
        let row = client.query_one(PROBE, &[]).await?;
        let chosen = choose(row.try_get(0)?, row.try_get::<_, &str>(1)?);
        tracing::debug!(?chosen, "PostgreSQL commit durability");
        let code = match chosen {
            Durability::UnderLock => UNDER_LOCK,
            Durability::FlushAfter => FLUSH_AFTER,
        };
        // A concurrent first use may have chosen too: the same answer, or a fallback.
        let _ = self
            .0
            .compare_exchange(UNKNOWN, code, Ordering::AcqRel, Ordering::Acquire);
        Ok(chosen)
    }

    /// The flush by message was refused ([`refused`]): every later write commits under
    /// the lock.
    pub(crate) fn fall_back(&self) {
        if self.0.swap(UNDER_LOCK, Ordering::AcqRel) != UNDER_LOCK {
            tracing::warn!("flushing by pg_logical_emit_message failed; committing synchronously under the chain lock");
        }
    }
}

/// The flush was refused for want of the function or of the right to run it (revoked
/// since the probe): falling back is the answer. Anything else (a lost connection, a
/// restart) is not a reason to stop flushing after the lock.
pub(crate) fn refused(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    matches!(e.code(), Some(c) if c == &SqlState::INSUFFICIENT_PRIVILEGE || c == &SqlState::UNDEFINED_FUNCTION)
}

#[cfg(test)]
mod tests {
    use super::{Durability, choose};

    #[test]
    fn flush_after_the_lock_only_when_allowed_and_synchronous() {
        for (may_emit, setting, want) in [
            (true, "on", Durability::FlushAfter),
            (true, "remote_apply", Durability::FlushAfter),
            (true, "remote_write", Durability::FlushAfter),
            (true, "local", Durability::FlushAfter),
            (true, "off", Durability::UnderLock),
            (true, "OFF", Durability::UnderLock),
            (false, "on", Durability::UnderLock),
            (false, "off", Durability::UnderLock),
        ] {
            assert_eq!(choose(may_emit, setting), want, "{may_emit} {setting}");
        }
    }
}
