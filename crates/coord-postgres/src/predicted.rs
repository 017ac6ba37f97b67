//! Operations answered in one round trip when their outcome can be predicted.
//!
//! An ordinary operation ([`PgStore::op`]) pays a round trip for its reads and one for
//! its audit row and commit: the domain decides between the two, on what was read. Some
//! operations' usual outcome follows from facts known before reading anything: a release
//! of a lock the caller holds, an edit check near which nobody else holds a lock, a
//! heartbeat of the caller's known session, a guardrail check that passes without a
//! record of its own (on the registry's rows last read), a successful completion of a
//! task the caller claimed (no workflow node, no skill), each on the caller's policy
//! facts of its last call. For those, the domain decides on the *premises* first, and
//! the whole transaction leaves in one write: `BEGIN`, one statement per premise that
//! fails unless it holds in the rows as stored (`coord_expect`, migration 0027; a premise
//! that writes, a release's `DELETE`, checks what it wrote), the operation's other
//! writes, the audit chain's lock — whose statement checks the caller's facts first, so
//! that premise costs no statement of its own — the audit row and the `COMMIT`. The
//! facts are thus checked after the operation's writes, in the same transaction: no
//! predicted write may change what they cover (a session's id, start or type, a
//! profile), or its prediction would miss every time.
//!
//! When a premise does not hold, the server aborts the transaction at that statement:
//! nothing after it takes effect and the `COMMIT` rolls back. The operation then runs the
//! ordinary way and is decided on what it reads, so the prediction's only cost is the
//! round trip it lost; no decision is ever committed on a premise that was false. The
//! decision itself stays with the domain: SQL only confirms that the facts the decision
//! was made on are the stored ones.

use crate::chain::FactsHold;
use crate::guardrail_rules::RULES_HOLD_SQL;
use crate::{Fail, OpFn, PgStore, Tx, pg_error, rolled_back};
use coord_domain::CoordResult;
use coord_store::OpCtx;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use tokio_postgres::types::ToSql;

/// A parameter of a sent statement.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// A statement of a predicted operation: a premise (`SELECT coord_expect(…)`) or a write
/// whose answer the operation does not need, sent in order.
pub(crate) struct Sent {
    pub sql: &'static str,
    pub params: Vec<Param>,
}

impl Sent {
    pub(crate) fn new(sql: &'static str, params: Vec<Param>) -> Sent {
        Sent { sql, params }
    }
}

/// `coord_expect`'s error (migration 0027).
const PREMISE_FAILED: &str = "CD001";

/// Whether `e` says that nothing committed and the operation may run again: a premise
/// that did not hold (its own error, when its answer came back before the statement was
/// even left behind — a busy machine — or the error of a statement after it), or what
/// rolls any operation back ([`rolled_back`]).
fn missed(e: &tokio_postgres::Error) -> bool {
    rolled_back(e) || e.code().is_some_and(|c| c.code() == PREMISE_FAILED)
}

/// The premises of what the pipeline and the operation decided on before the call
/// (`OpCtx::policy`): the caller's last facts (checked by the audit chain's lock
/// statement, `chain::insert_and_commit`) and a statement checking the guardrail rows
/// last read; `None` when one cannot be confirmed in SQL (no fingerprint).
fn checks(ctx: &OpCtx) -> Option<(Option<FactsHold>, Vec<Sent>)> {
    let Some(p) = &ctx.policy else {
        return Some((None, Vec::new()));
    };
    let facts = FactsHold {
        now: ctx.now,
        agent_id: p.agent_id.clone(),
        agent_type: p.agent_type.clone(),
        digest: p.facts.digest.clone()?,
    };
    let rules = p
        .rules
        .iter()
        .map(|r| Sent::new(RULES_HOLD_SQL.as_str(), vec![Box::new(r.clone())]));
    Some((Some(facts), rules.collect()))
}

/// Calls for which an agent's operation is not predicted after a prediction of it missed:
/// a premise that stays false for a while (another agent's glob lock among an edit check's
/// candidates, a workflow's node completed) costs its wasted round trip on one call in
/// eight, not on every call; a prediction that hits again is tried on every call.
const SKIP_AFTER_MISS: u8 = 7;

/// Agents tracked at most; past it the memory starts again (a miss is only a cost).
const MAX_TRACKED: usize = 10_000;

/// Which agents' operations missed lately ([`SKIP_AFTER_MISS`]).
#[derive(Debug, Default)]
pub(crate) struct Misses(Mutex<HashMap<(&'static str, String), u8>>);

impl Misses {
    /// Whether to predict `operation` for `agent` now.
    fn try_now(&self, operation: &'static str, agent: &str) -> bool {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match m.get_mut(&(operation, agent.to_string())) {
            Some(skip) if *skip > 0 => {
                *skip -= 1;
                false
            }
            _ => true,
        }
    }

    fn record(&self, operation: &'static str, agent: &str, hit: bool) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (operation, agent.to_string());
        if hit {
            m.remove(&key);
            return;
        }
        tracing::debug!(operation, agent, "a prediction missed: run the ordinary way");
        if m.len() >= MAX_TRACKED {
            m.clear();
        }
        m.insert(key, SKIP_AFTER_MISS);
    }
}

impl PgStore {
    /// Runs the operation `f` — `predicted`, its outcome decided on the premises in
    /// `sent`, committed in one round trip when they hold, and otherwise `f` run the
    /// ordinary way ([`PgStore::op`]).
    pub(crate) async fn op_predicted<A: Sync, T: Serialize + Send>(
        &self,
        ctx: OpCtx,
        predicted: T,
        sent: Vec<Sent>,
        args: A,
        f: OpFn<A, T>,
    ) -> CoordResult<T> {
        let (operation, agent) = (ctx.operation, ctx.who.agent_id.clone());
        if self.misses.try_now(operation, &agent) {
            let hit = self.commit_predicted(&ctx, &predicted, sent).await?;
            self.misses.record(operation, &agent, hit);
            if hit {
                return Ok(predicted);
            }
        }
        self.op(ctx, args, f).await
    }

    /// Sends `sent`, the caller's facts' premise (when the pipeline decided on its last
    /// call's facts), the audit row of `predicted` and the commit, in one write: whether
    /// it committed. Not tried when the outcome would count against the caller's limits
    /// (reading the usage needs a round trip first).
    async fn commit_predicted<T: Serialize>(&self, ctx: &OpCtx, predicted: &T, sent: Vec<Sent>) -> CoordResult<bool> {
        if coord_store::counts_as_use(&ctx.charges, predicted) {
            return Ok(false);
        }
        let Some((facts, checks)) = checks(ctx) else {
            return Ok(false);
        };
        let client = self.client().await?;
        let tx = Tx::new(&client);
        let outcome: Result<(), Fail> = async {
            // Prepared first (cached on the connection: no round trip after its first
            // use), so that the statements leave together.
            let mut statements = Vec::new();
            for s in checks.iter().chain(&sent) {
                statements.push((tx.prepare_cached(s.sql).await?, s));
            }
            for (statement, s) in &statements {
                let params: Vec<&(dyn ToSql + Sync)> = s.params.iter().map(|p| p.as_ref() as _).collect();
                tx.send(statement, &params)?;
            }
            let audit = ctx.audit(Ok(predicted));
            crate::chain::insert_and_commit(tx, ctx.now, &audit, &self.durability, facts.as_ref()).await
        }
        .await;
        match outcome {
            Ok(()) => Ok(true),
            Err(Fail::Db(e)) if missed(&e) => Ok(false),
            Err(Fail::Db(e)) => Err(pg_error(&e)),
            Err(Fail::Coord(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Misses, SKIP_AFTER_MISS};

    #[test]
    fn after_a_miss_one_call_in_eight_is_predicted_until_one_hits() {
        let m = Misses::default();
        assert!(m.try_now("release_lock", "a"), "predicted until a miss");
        m.record("release_lock", "a", false);
        for _ in 0..SKIP_AFTER_MISS {
            assert!(!m.try_now("release_lock", "a"));
            assert!(m.try_now("release_lock", "b"), "another agent's calls are not affected");
            assert!(m.try_now("check_edit", "a"), "nor the agent's other operations");
        }
        assert!(m.try_now("release_lock", "a"), "then tried again");
        m.record("release_lock", "a", true);
        assert!(m.try_now("release_lock", "a"));
        assert!(m.try_now("release_lock", "a"), "a hit forgets the miss");
    }
}
