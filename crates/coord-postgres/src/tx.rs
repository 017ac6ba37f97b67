//! One operation's transaction ([`Tx`]): its `BEGIN` travels with its first statement.
//!
//! `tokio-postgres` begins a transaction with a round trip of its own, and an operation
//! of the service is only three or four round trips in all (the history of docs/benchmarks.md). Here the `BEGIN` is
//! queued when the first statement is sent, in the same write: the server runs them in
//! order, so that statement and every later one run inside the transaction, and the
//! operation waits for one answer, not two.
//!
//! The rest keeps `tokio-postgres`'s own transaction's contract: [`Tx::commit`] commits,
//! and a transaction dropped unfinished — a refusal, an error, a cancelled request — is
//! rolled back by a `ROLLBACK` sent from `drop` and not awaited, which the connection runs
//! before anything its next user sends.
//!
//! Statements sent together (`tokio::join!(biased; …)`) leave in the order they are first
//! polled only when they are prepared (`&Statement`): a statement given as text is parsed
//! first, a round trip during which the statements after it go out ahead of it.
//! A `Tx` is used by one task at a time (its statements borrow it).
//!
//! [`Tx::send`] sends a write whose answer the operation does not need (its result is
//! decided already) without waiting for it: the write travels with the statements after
//! it — the audit row and the `COMMIT` — instead of costing a round trip of its own. A
//! failed write aborts the transaction, so the statements after it fail and nothing
//! commits.

use async_trait::async_trait;
use deadpool_postgres::{ClientWrapper, Object};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row, Statement, ToStatement};

use crate::{Fail, R};
use coord_domain::CoordError;
use coord_domain::error::ErrorCode;

/// READ COMMITTED whatever the server's, database's or role's
/// `default_transaction_isolation` says: `chain::insert_and_commit` reads the chain's head by a
/// statement that starts after the chain lock is held, and only READ COMMITTED's
/// per-statement snapshots make that read see the previous writer's row (under REPEATABLE
/// READ the snapshot is the transaction's first statement's, taken before the lock: the
/// chain would fork).
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// A READ COMMITTED transaction on a pooled connection, begun by its first statement.
pub(crate) struct Tx<'t> {
    client: &'t ClientWrapper,
    /// The `BEGIN` has not been sent yet (no statement has run).
    unbegun: AtomicBool,
    /// A statement failed: the server has aborted the transaction, and it cannot commit.
    failed: AtomicBool,
    /// Committed, or ended by a statement sent with the commit: nothing to roll back.
    done: bool,
    /// [`Tx::send`] sent a statement: the commit must check the transaction still stands.
    sent: AtomicBool,
    /// The caller's policy facts to read with the `BEGIN` ([`Tx::checking`]).
    check: Option<Check>,
    /// Their row, once answered.
    checked: std::sync::Mutex<Option<Result<Row, Error>>>,
}

/// The statement reading an operation's caller's policy facts, and its parameters.
pub(crate) struct Check {
    pub statement: Statement,
    pub now: Option<coord_domain::Timestamp>,
    pub agent_id: String,
    pub agent_type: String,
}

impl<'t> Tx<'t> {
    /// A transaction on `client`; nothing is sent until its first statement.
    pub(crate) fn new(client: &'t Object) -> Tx<'t> {
        Tx {
            client,
            unbegun: AtomicBool::new(true),
            failed: AtomicBool::new(false),
            done: false,
            sent: AtomicBool::new(false),
            check: None,
            checked: std::sync::Mutex::new(None),
        }
    }

    /// A transaction whose `BEGIN` carries `check` too, in the same write: the caller's
    /// policy facts are read in the operation's first round trip ([`Tx::checked`]).
    pub(crate) fn checking(client: &'t Object, check: Check) -> Tx<'t> {
        let mut tx = Tx::new(client);
        tx.check = Some(check);
        tx
    }

    /// The row the check read: with the first statement, or read now (one round trip)
    /// when none was sent — or only `send`s, which do not wait.
    pub(crate) async fn checked(&self) -> Result<Option<Row>, Error> {
        let answered = self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match (answered, &self.check) {
            (Some(row), _) => row.map(Some),
            (None, Some(c)) => {
                let params: [&(dyn ToSql + Sync); 3] = [&c.now, &c.agent_id, &c.agent_type];
                self.query_one(&c.statement, &params).await.map(Some)
            }
            (None, None) => Ok(None),
        }
    }

    /// Sends `statement` now (after the `BEGIN`, if none was sent) without waiting for
    /// its answer (see the module comment): the request is queued on the connection by
    /// the first poll of its future, with its parameters encoded, and the future
    /// dropped, as the rollback in `drop` is sent. Its answer is never read: when it
    /// fails, the transaction is aborted, and the statements after it fail — the audit
    /// row's, or the check [`Tx::commit`] sends — so nothing commits.
    pub(crate) fn send(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<(), Error> {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        if self.unbegun.swap(false, Ordering::AcqRel) {
            let mut begin = std::pin::pin!(self.client.batch_execute(BEGIN));
            if let Poll::Ready(Err(e)) = begin.as_mut().poll(&mut cx) {
                self.failed.store(true, Ordering::Release);
                return Err(e);
            }
        }
        self.sent.store(true, Ordering::Release);
        let mut sent = std::pin::pin!(self.client.execute(statement, params));
        if let Poll::Ready(Err(e)) = sent.as_mut().poll(&mut cx) {
            self.failed.store(true, Ordering::Release);
            return Err(e);
        }
        Ok(())
    }

    /// Runs `statement` inside the transaction: the first one is sent right after the
    /// `BEGIN`, in the same write, and its answer waited for with the `BEGIN`'s.
    async fn inside<T>(&self, statement: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let out = if self.unbegun.swap(false, Ordering::AcqRel) {
            // `biased`: the BEGIN is polled, so queued, first; the check after it.
            match &self.check {
                None => {
                    let (begun, out) = tokio::join!(biased; self.client.batch_execute(BEGIN), statement);
                    begun.and(out)
                }
                Some(c) => {
                    let params: [&(dyn ToSql + Sync); 3] = [&c.now, &c.agent_id, &c.agent_type];
                    let (begun, checked, out) = tokio::join!(
                        biased;
                        self.client.batch_execute(BEGIN),
                        self.client.query_one(&c.statement, &params),
                        statement
                    );
                    *self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(checked);
                    begun.and(out)
                }
            }
        } else {
            statement.await
        };
        if out.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        out
    }

    /// The connection, for what is sent after the transaction's end in the same write
    /// (`chain::insert_and_commit`'s flush).
    pub(crate) fn connection(&self) -> &'t ClientWrapper {
        self.client
    }

    /// Prepares (or takes from the connection's cache) a statement; preparing needs no
    /// transaction, so it does not begin one.
    pub(crate) async fn prepare_cached(&self, query: &str) -> Result<Statement, Error> {
        self.client.prepare_cached(query).await
    }

    pub(crate) async fn execute<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.inside(self.client.execute(statement, params)).await
    }

    pub(crate) async fn query<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.inside(self.client.query(statement, params)).await
    }

    pub(crate) async fn query_one<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.inside(self.client.query_one(statement, params)).await
    }

    pub(crate) async fn query_opt<T>(&self, statement: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error>
    where
        T: ?Sized + ToStatement,
    {
        self.inside(self.client.query_opt(statement, params)).await
    }

    pub(crate) async fn batch_execute(&self, query: &str) -> Result<(), Error> {
        self.inside(self.client.batch_execute(query)).await
    }

    /// Commits what the transaction did (nothing is sent if it ran no statement). After a
    /// failed statement it rolls back and answers an error: PostgreSQL would answer that
    /// COMMIT with a ROLLBACK, not an error, and the caller would take it for a commit.
    pub(crate) async fn commit(mut self) -> R<()> {
        // Marked in the poll that sends the end (as tokio-postgres does): a commit dropped
        // before it was polled drops `self` unmarked, which rolls back.
        self.done = true;
        if *self.unbegun.get_mut() {
            return Ok(());
        }
        if *self.failed.get_mut() {
            self.client.batch_execute("ROLLBACK").await?;
            tracing::error!("a transaction was committed after one of its statements failed; rolled back");
            return Err(Fail::Coord(CoordError::new(
                ErrorCode::Internal,
                "a statement of the transaction failed: it was rolled back, not committed",
            )));
        }
        if *self.sent.get_mut() {
            // PostgreSQL answers the COMMIT of a transaction a statement failed in with a
            // ROLLBACK, not an error; a statement sent just before it fails instead.
            let (stands, committed) = tokio::join!(
                biased;
                self.client.batch_execute("SELECT 1"),
                self.client.batch_execute("COMMIT")
            );
            stands?;
            committed?;
            return Ok(());
        }
        self.client.batch_execute("COMMIT").await?;
        Ok(())
    }

    /// Marks the transaction ended by a `COMMIT` its caller sent with its last statements
    /// (`chain::insert_and_commit`), once their answers are in: a commit that failed has
    /// rolled back in the server, so `drop` must not send another end.
    pub(crate) fn ended(mut self) {
        self.done = true;
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.done || *self.unbegun.get_mut() {
            return;
        }
        // Sent, not awaited (as tokio-postgres's own transactions do): the request is
        // queued on the connection by the first poll, and its answer is discarded.
        let mut rollback = std::pin::pin!(self.client.batch_execute("ROLLBACK"));
        if let Poll::Ready(Err(e)) = rollback.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            tracing::debug!(error = %e, "could not send the rollback of an unfinished transaction");
        }
    }
}

/// What store functions that run both inside an operation's transaction and on a bare
/// connection (reads) need of either.
#[async_trait]
pub(crate) trait Db: Sync {
    async fn prepare_cached(&self, query: &str) -> Result<Statement, Error>;
    async fn execute<T: ?Sized + ToStatement + Sync>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>;
    async fn query<T: ?Sized + ToStatement + Sync>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>;
    async fn query_one<T: ?Sized + ToStatement + Sync>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>;
    async fn query_opt<T>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error>
    where
        T: ?Sized + ToStatement + Sync;
}

/// `$via` is the path to the inherent methods of the implementing type.
macro_rules! db_by {
    ($ty:ty, $prepare:path, $via:path) => {
        #[async_trait]
        impl Db for $ty {
            async fn prepare_cached(&self, query: &str) -> Result<Statement, Error> {
                $prepare(self, query).await
            }
            async fn execute<T>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>
            where
                T: ?Sized + ToStatement + Sync,
            {
                <$via>::execute(self, s, p).await
            }
            async fn query<T>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>
            where
                T: ?Sized + ToStatement + Sync,
            {
                <$via>::query(self, s, p).await
            }
            async fn query_one<T>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>
            where
                T: ?Sized + ToStatement + Sync,
            {
                <$via>::query_one(self, s, p).await
            }
            async fn query_opt<T>(&self, s: &T, p: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error>
            where
                T: ?Sized + ToStatement + Sync,
            {
                <$via>::query_opt(self, s, p).await
            }
        }
    };
}

db_by!(Tx<'_>, Tx::prepare_cached, Tx);
db_by!(Object, ClientWrapper::prepare_cached, tokio_postgres::Client);

#[cfg(test)]
pub(crate) mod tests {
    //! On a real server (`COORD_TEST_DATABASE_URL`, else the local one), each test on a
    //! connection of its own and temporary tables only: nothing outlives the session.
    use super::Tx;
    use crate::{PgOptions, PgStore};
    use deadpool_postgres::Object;
    use std::time::Duration;

    pub(crate) async fn connection() -> Option<(PgStore, Object)> {
        let url = std::env::var("COORD_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
        let store = PgStore::connect_lazy(&url, &PgOptions::default()).expect("a valid URL");
        let required = ["CI", "COORD_REQUIRE_POSTGRES"]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false"));
        match store.client().await {
            Ok(c) => Some((store, c)),
            Err(e) if required => panic!("PostgreSQL is required here (CI) but unreachable: {e}"),
            Err(e) => {
                eprintln!("SKIPPED: no PostgreSQL ({e})");
                None
            }
        }
    }

    async fn xid(c: &Object) -> String {
        c.query_one("SELECT txid_current()::text", &[]).await.unwrap().get(0)
    }

    async fn count(c: &Object) -> i64 {
        c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0)
    }

    #[tokio::test]
    async fn every_statement_from_the_first_runs_in_one_read_committed_transaction() {
        let Some((_store, c)) = connection().await else { return };
        // What a database or role may set; the chain needs READ COMMITTED whatever it says.
        c.batch_execute("SET default_transaction_isolation = 'repeatable read'")
            .await
            .unwrap();
        let tx = Tx::new(&c);
        let first = tx
            .query_one(
                "SELECT txid_current()::text, current_setting('transaction_isolation')",
                &[],
            )
            .await
            .unwrap();
        let (isolation, first): (String, String) = (first.get(1), first.get(0));
        assert_eq!(isolation, "read committed");
        // Sent together, as the store's operations send theirs.
        let (a, b) = tokio::join!(
            biased;
            tx.query_one("SELECT txid_current()::text", &[]),
            tx.query_one("SELECT txid_current()::text", &[])
        );
        assert_eq!(
            [a.unwrap().get::<_, String>(0), b.unwrap().get(0)],
            [first.clone(), first]
        );
        tx.commit().await.unwrap();
        assert_ne!(
            xid(&c).await,
            xid(&c).await,
            "after the commit, each statement is its own"
        );
    }

    #[tokio::test]
    async fn pipelined_first_statements_begin_once_and_commit_together() {
        let Some((_store, c)) = connection().await else { return };
        c.batch_execute("CREATE TEMP TABLE t (x int)").await.unwrap();
        let tx = Tx::new(&c);
        let (a, b) = tokio::join!(
            biased;
            tx.execute("INSERT INTO t VALUES (1)", &[]),
            tx.execute("INSERT INTO t VALUES (2)", &[])
        );
        a.unwrap();
        b.unwrap();
        drop(tx);
        assert_eq!(count(&c).await, 0, "both inserts were inside the transaction dropped");
        let tx = Tx::new(&c);
        tx.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(count(&c).await, 1);
    }

    #[tokio::test]
    async fn an_unfinished_transaction_rolls_back_and_leaves_the_connection_usable() {
        let Some((_store, c)) = connection().await else { return };
        c.batch_execute("CREATE TEMP TABLE t (x int)").await.unwrap();
        // Dropped after a statement (a refusal).
        let tx = Tx::new(&c);
        tx.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        drop(tx);
        assert_eq!(count(&c).await, 0);
        assert_ne!(xid(&c).await, xid(&c).await, "no transaction is left open");
        // Dropped after its first statement failed (an aborted transaction).
        let tx = Tx::new(&c);
        assert!(tx.execute("INSERT INTO no_such_table VALUES (1)", &[]).await.is_err());
        drop(tx);
        assert_eq!(count(&c).await, 0, "the connection is not left aborted");
        // Cancelled while a statement runs (a client that went away): the statement's
        // answer is discarded and the rollback runs after it.
        let tx = Tx::new(&c);
        tx.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        // Prepared first, so that what is cancelled is the running statement.
        let sleep = tx.prepare_cached("SELECT pg_sleep(0.3)").await.unwrap();
        let slow = tokio::time::timeout(Duration::from_millis(10), tx.execute(&sleep, &[])).await;
        drop(slow);
        drop(tx);
        assert_eq!(count(&c).await, 0);
        assert_ne!(xid(&c).await, xid(&c).await);
    }

    #[tokio::test]
    async fn a_commit_after_a_failed_statement_is_an_error_and_writes_nothing() {
        let Some((_store, c)) = connection().await else { return };
        c.batch_execute("CREATE TEMP TABLE t (x int)").await.unwrap();
        let tx = Tx::new(&c);
        tx.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        assert!(tx.execute("INSERT INTO t VALUES ('not a number')", &[]).await.is_err());
        assert!(tx.commit().await.is_err(), "not a commit");
        assert_eq!(count(&c).await, 0);
        assert_ne!(xid(&c).await, xid(&c).await, "no transaction is left open");
    }

    #[tokio::test]
    async fn a_transaction_that_ran_nothing_sends_nothing() {
        let Some((_store, c)) = connection().await else { return };
        c.batch_execute("CREATE TEMP TABLE t (x int)").await.unwrap();
        Tx::new(&c).commit().await.unwrap();
        drop(Tx::new(&c));
        // Neither left a transaction open: this insert commits on its own.
        c.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        c.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(count(&c).await, 1);
    }
}
