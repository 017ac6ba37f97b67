//! Appending to the audit chain: the row linked and hashed in SQL, sent with the
//! operation's COMMIT (every write of the store ends here). Reading, verifying and
//! pruning the chain are `audit`'s.

use crate::Db;
use crate::durability::{self, Choice, Durability};
use crate::rows::NOW;
use crate::{R, Tx};
use coord_domain::Timestamp;
use coord_domain::audit::AuditRecord;
use coord_domain::audit_chain::{GENESIS, HashedContent};
use coord_domain::keys::KeyOrigin;
use tokio_postgres::types::{Json, ToSql};

/// Arbitrary but fixed: the advisory lock that orders audit writers (the chain's head).
pub(crate) const CHAIN_LOCK_KEY: i64 = 0x636f_6f72_6461_7564; // "coordaud"

/// Appends `rec` to the chain inside `tx` (READ COMMITTED), then commits `tx`, all sent
/// together. The advisory lock, held to commit, orders concurrent writers; the insert
/// reads the head in a statement that starts after the lock is held, so (READ COMMITTED)
/// it sees the previous writer's row.
///
/// The row is linked in SQL: the insert reads the head, takes the next position and
/// hashes the row there (`HashedContent`: this side sends the content, the statement adds
/// position, link and time), and the lock, the insert and the commit are sent together
/// (pipelined, all prepared): the server runs them in order, and a writer holding the
/// chain's lock never waits for this process to answer a head it read. That time orders
/// all writes (no two commits overlap), so it bounds the store's write throughput
/// (the history of docs/benchmarks.md).
///
/// Under [`Durability::FlushAfter`] the transaction commits
/// asynchronously and a flushed message commit follows in the same write, so the lock is
/// not held through the flush; this returns after that flush either way
/// (`crate::durability`).
///
/// The server runs them in order. A failed insert aborts the transaction, and the
/// COMMIT after it then rolls back (PostgreSQL answers an aborted transaction's COMMIT
/// with ROLLBACK, not an error): the insert's error is returned and nothing is written.
/// Either way the transaction has ended once the answers are in ([`Tx::ended`]). A
/// request cancelled after the first poll has sent the COMMIT (and the flush): the
/// server commits it though nobody is answered, and the `ROLLBACK` sent by `tx`'s drop
/// finds no transaction (a warning, nothing else); one cancelled before it rolls back.
///
/// Every parameter of the insert encodes without fail (text, JSON values, a bool, a
/// float, and a chrono time, whose whole range fits PostgreSQL's wire format), so the
/// insert always leaves with the COMMIT. Keep it so: a parameter that failed to encode
/// would stop the insert before it is sent while the COMMIT beside it still went,
/// committing the operation without its audit row. The same holds for the lock's
/// parameters (a key, and the facts' time, texts and digest): a lock statement not sent
/// would let the insert link to a head another writer is changing.
///
/// With `facts`, the lock's statement first checks that the caller's policy facts are
/// still those the operation was decided on (a premise of a predicted operation): when
/// they are not, it fails, so nothing commits.
pub async fn insert_and_commit(
    tx: Tx<'_>,
    now: Option<Timestamp>,
    rec: &AuditRecord,
    choice: &Choice,
    facts: Option<&FactsHold>,
) -> R<()> {
    let durability = choice.get(tx.connection()).await?;
    // Under FlushAfter the lock's statement also makes the commit asynchronous.
    let lock = tx
        .prepare_cached(match (durability, facts) {
            (Durability::UnderLock, None) => "SELECT pg_advisory_xact_lock($1)",
            (Durability::FlushAfter, None) => durability::ASYNC_COMMIT_AND_LOCK,
            (Durability::UnderLock, Some(_)) => &FACTS_HOLD_THEN_LOCK[0],
            (Durability::FlushAfter, Some(_)) => &FACTS_HOLD_THEN_LOCK[1],
        })
        .await?;
    let insert = insert_statement(&tx).await?;
    let commit = tx.prepare_cached("COMMIT").await?;
    let content = HashedContent::of_record(rec);
    let key: Vec<&(dyn ToSql + Sync)> = match facts {
        None => vec![&CHAIN_LOCK_KEY],
        Some(f) => vec![&f.now, &f.agent_id, &f.agent_type, &f.digest, &CHAIN_LOCK_KEY],
    };
    let origin = rec.origin.as_ref().map(Json);
    let row = row_params(&now, rec, &origin, &content);
    if durability == Durability::UnderLock {
        let (locked, inserted, committed) = tokio::join!(
            biased;
            tx.execute(&lock, &key),
            tx.execute(&insert, &row),
            tx.execute(&commit, &[])
        );
        tx.ended();
        locked?;
        inserted?;
        committed?;
        return Ok(());
    }
    let flush = tx.prepare_cached(durability::FLUSH).await?;
    // The flush is its own transaction (no transaction block is open after the COMMIT),
    // committed with the session's synchronous_commit; it runs even when the operation's
    // insert failed and rolled back, which costs one WAL record and nothing else.
    let (locked, inserted, committed, flushed) = tokio::join!(
        biased;
        tx.execute(&lock, &key),
        tx.execute(&insert, &row),
        tx.execute(&commit, &[]),
        tx.connection().execute(&flush, &[])
    );
    tx.ended();
    locked?;
    inserted?;
    committed?;
    if let Err(e) = flushed {
        // Committed, and not known to be durable: answered as a failure of the database
        // (its outcome unknown to the caller, as a COMMIT whose answer was lost). When the
        // flush itself is refused (its privilege revoked since the probe), every later
        // write commits under the lock; a lost connection changes nothing.
        if durability::refused(&e) {
            choice.fall_back();
        }
        return Err(e.into());
    }
    Ok(())
}

/// The caller's policy facts as a premise of a write ([`insert_and_commit`]): those of
/// `agent_id` (type `agent_type`) at `now` fingerprint to `digest`.
pub(crate) struct FactsHold {
    pub now: Option<Timestamp>,
    pub agent_id: String,
    pub agent_type: String,
    pub digest: String,
}

/// `profiles::facts_hold_then_lock` under `Durability::UnderLock` and `FlushAfter`.
static FACTS_HOLD_THEN_LOCK: std::sync::LazyLock<[String; 2]> = std::sync::LazyLock::new(|| {
    [
        crate::profiles::facts_hold_then_lock(""),
        crate::profiles::facts_hold_then_lock(durability::ASYNC_COMMIT),
    ]
});

async fn insert_statement<C: Db>(c: &C) -> R<tokio_postgres::Statement> {
    let insert = c
        .prepare_cached(&format!(
            "INSERT INTO audit_log (\"timestamp\", agent_id, agent_type, operation, parameters, result, success,
                 error_code, duration_ms, origin, chain_seq, prev_hash, row_hash)
             SELECT t.ts, $2, $3, $4, $5, $6, $7, $8, $9, $10, h.seq + 1, h.hash,
                    encode(sha256(convert_to(concat_ws(E'\\n', 'coord-audit-v1', h.seq + 1, '\"' || h.hash || '\"', $11::text,
                        (extract(epoch FROM t.ts) * 1000000)::bigint, $12::text), 'UTF8')), 'hex')
             FROM (SELECT {NOW} AS ts) t, (
                 SELECT coalesce(x.seq, 0) AS seq, coalesce(x.hash, '{GENESIS}') AS hash
                 FROM (SELECT 1) one LEFT JOIN (
                     SELECT seq, hash FROM (
                         (SELECT chain_seq AS seq, row_hash AS hash FROM audit_log
                          WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1)
                         UNION ALL
                         (SELECT through_seq, through_hash FROM audit_checkpoints
                          ORDER BY through_seq DESC LIMIT 1)) heads
                     ORDER BY seq DESC LIMIT 1) x ON true) h"
        ))
        .await?;
    Ok(insert)
}

type RowParams<'a> = [&'a (dyn ToSql + Sync); 12];

fn row_params<'a>(
    now: &'a Option<Timestamp>,
    rec: &'a AuditRecord,
    origin: &'a Option<Json<&'a KeyOrigin>>,
    content: &'a HashedContent,
) -> RowParams<'a> {
    [
        now,
        &rec.agent.agent_id,
        &rec.agent.agent_type,
        &rec.operation,
        &rec.parameters,
        &rec.result,
        &rec.success,
        &rec.error_code,
        &rec.duration_ms,
        origin,
        &content.before_time,
        &content.after_time,
    ]
}
