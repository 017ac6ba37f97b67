//! The single-writer path with group commit: a write that finds no other write of this
//! process under way and the writer thread asleep (no write within its poll) runs on its
//! caller's thread; writes that arrive in a stream go to one writer thread per store, which commits whatever queued up meanwhile as one
//! `BEGIN IMMEDIATE` transaction. Writes that may take long (large deletes), and a write
//! whose commit may checkpoint the WAL (`checkpoint.rs`), always go to the writer thread:
//! a runtime worker never stalls the connections it serves for them. Each write keeps its
//! own savepoint, so a write that fails is rolled back alone and the others commit;
//! callers are answered only after the commit, so an acknowledged write is as durable as
//! before.
//!
//! Why (measured with `coord bench`, see docs/benchmarks.md): SQLite allows one writer at
//! a time anyway, so concurrent callers used to queue on a mutex and commit one by one.
//! Committing a batch writes each touched page (the audit log's last page, its indexes)
//! once per batch instead of once per operation. A lone write gains nothing from the
//! thread and pays two thread wake-ups (the hand-off and the answer), about as much as
//! the write itself at one client; running it where it was asked for costs none. It runs
//! on the caller's thread as it is (no `block_in_place`: handing the runtime's other
//! tasks to a new thread each time lost under HTTP load), for the 0.1 ms a write takes.

use crate::{Fail, R};
use coord_domain::CoordError;
use rusqlite::{Connection, Savepoint};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Writes committed together at most.
const MAX_BATCH: usize = 64;

/// How long the writer polls for the next write before it sleeps: under load a caller's
/// next write typically follows within a few hundred microseconds, and waking a sleeping
/// thread costs about as much again on this machine kind (a futex wake-up was 19% of a
/// one-client lock pair's CPU with 50 µs). The poll yields the core, so it takes nothing
/// from a runnable caller.
const SPIN: Duration = Duration::from_micros(400);

/// Called with the commit's outcome.
type Finish = Box<dyn FnOnce(Result<(), &CoordError>) + Send>;
/// Runs inside the batch's transaction (or learns why there is none).
type Job = Box<dyn FnOnce(Result<&mut Connection, &CoordError>) -> Finish + Send>;

struct Queued {
    job: Job,
    /// No other write was under way when it was asked for: it came to the writer thread
    /// only because it could not run on its caller's (a long write, a checkpoint due,
    /// another process's lock). Handled alone, the thread sleeps right after it rather
    /// than polling: a client's next write would come within the poll and find the
    /// thread awake, and so would every one after it.
    alone: bool,
}

pub struct Writer {
    jobs: Option<Sender<Queued>>,
    thread: Option<std::thread::JoinHandle<()>>,
    conn: Arc<Mutex<Connection>>,
    busy_timeout: Duration,
    /// Writes asked for and not yet answered, on either path. Only a hint of whether
    /// another write is under way (who runs where); the connection's mutex and SQLite's
    /// write lock are what keep writes apart.
    pending: AtomicUsize,
    /// The writer thread sleeps for want of work.
    idle: Arc<AtomicBool>,
    /// The next commits may checkpoint the WAL (set by the connection's WAL hook).
    checkpoint_due: Arc<AtomicBool>,
}

/// Where a write may run.
#[derive(Clone, Copy, PartialEq)]
pub enum Place {
    /// On its caller's thread when alone, else in the writer thread's next batch.
    Anywhere,
    /// Always on the writer thread: a write that may take long.
    WriterThread,
}

impl Drop for Writer {
    /// Stops the thread and waits for it: the connection then closes before the process
    /// can exit (closing checkpoints the WAL into the database file).
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Counts a write as pending for as long as it lives (also when its caller gives up
/// waiting: the count is a hint, and a write dropped unanswered is rare).
struct Pending<'a>(&'a AtomicUsize);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Writer {
    /// Starts the writer thread; it ends when the `Writer` is dropped. `busy_timeout`
    /// bounds the wait for another process's write lock.
    pub fn start(
        conn: Arc<Mutex<Connection>>,
        busy_timeout: Duration,
        checkpoint_due: Arc<AtomicBool>,
    ) -> std::io::Result<Writer> {
        Self::start_polling(conn, busy_timeout, checkpoint_due, SPIN)
    }

    /// [`Writer::start`] with the writer thread polling `poll` for the next write.
    fn start_polling(
        conn: Arc<Mutex<Connection>>,
        busy_timeout: Duration,
        checkpoint_due: Arc<AtomicBool>,
        poll: Duration,
    ) -> std::io::Result<Writer> {
        let (jobs, queue) = std::sync::mpsc::channel();
        let thread_conn = conn.clone();
        // The thread waits for its first write without polling.
        let idle = Arc::new(AtomicBool::new(true));
        let thread_idle = idle.clone();
        let thread = std::thread::Builder::new()
            .name("coord-sqlite-writer".into())
            .spawn(move || run(thread_conn, queue, busy_timeout, &thread_idle, poll))?;
        Ok(Writer {
            jobs: Some(jobs),
            thread: Some(thread),
            conn,
            busy_timeout,
            pending: AtomicUsize::new(0),
            idle,
            checkpoint_due,
        })
    }

    /// Runs `f` atomically, alone or in the next batch: its changes commit, or are rolled
    /// back alone when it fails.
    pub async fn write<T, F>(&self, place: Place, f: F) -> Result<T, CoordError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Savepoint) -> R<T> + Send + 'static,
    {
        // Here: no other write under way, and none recently (the writer thread polls for
        // a while after each batch: writes are coming in a stream, which batches better).
        // `pending` orders nothing: a caller that gave up waiting no longer counts, and
        // its write may commit after the next one; writes of one caller that waits for
        // each answer commit in order.
        let alone = self.pending.fetch_add(1, Ordering::AcqRel) == 0;
        let here = alone
            && place == Place::Anywhere
            && self.idle.load(Ordering::Acquire)
            && !self.checkpoint_due.load(Ordering::Acquire);
        let _pending = Pending(&self.pending);
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    let _ = answer.send(Err(e.clone()));
                    return Box::new(|_| {});
                }
            };
            let outcome: R<T> = (|| {
                let mut sp = conn.savepoint()?;
                let value = f(&mut sp)?;
                sp.commit()?;
                Ok(value)
            })();
            Box::new(move |committed| {
                let reply = match committed {
                    Ok(()) => outcome.map_err(CoordError::from),
                    Err(e) => Err(e.clone()),
                };
                let _ = answer.send(reply);
            })
        });
        let queued = if here { self.run_here(job) } else { Some(job) };
        if let Some(job) = queued {
            let sent = self.jobs.as_ref().map(|jobs| jobs.send(Queued { job, alone }));
            sent.and_then(Result::ok).ok_or_else(|| {
                tracing::error!("sqlite writer thread is gone");
                CoordError::internal()
            })?;
        }
        answered.await.map_err(|_| {
            tracing::error!("sqlite write was dropped without an answer (a panic while writing?)");
            CoordError::internal()
        })?
    }

    /// Runs `job` on this thread as a batch of one, or gives it back for the writer
    /// thread: when the connection is in use (a read, a batch just starting), or another
    /// process holds the write lock (the thread waits for it, not the caller's runtime).
    fn run_here(&self, job: Job) -> Option<Job> {
        let c = match self.conn.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Some(job),
        };
        match try_begin(&c, self.busy_timeout) {
            Ok(true) => {
                commit(c, vec![job]);
                None
            }
            // Busy, or an error the thread's own attempt will meet and report.
            Ok(false) | Err(_) => Some(job),
        }
    }
}

fn next_job(queue: &Receiver<Queued>, idle: &AtomicBool, poll: Duration) -> Option<Queued> {
    let until = Instant::now() + poll;
    loop {
        match queue.try_recv() {
            Ok(job) => return Some(job),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if Instant::now() < until => std::thread::yield_now(),
            Err(TryRecvError::Empty) => {
                idle.store(true, Ordering::Release);
                let job = queue.recv().ok();
                idle.store(false, Ordering::Release);
                return job;
            }
        }
    }
}

/// One attempt at `BEGIN IMMEDIATE` without waiting: `false` when another process holds
/// the write lock.
fn try_begin(c: &Connection, busy_timeout: Duration) -> rusqlite::Result<bool> {
    if !c.is_autocommit() {
        // Left open by an earlier failure: it would fail every BEGIN and keep the write
        // lock from every other process.
        tracing::error!("sqlite writer found a transaction left open; rolling it back");
        c.execute_batch("ROLLBACK")?;
    }
    c.busy_timeout(Duration::ZERO)?;
    let attempt = c.execute_batch("BEGIN IMMEDIATE");
    // Other users of the connection (reads, migrations) keep the ordinary handler.
    let restored = c.busy_timeout(busy_timeout);
    match attempt {
        Ok(()) => restored.map(|_| true),
        Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::DatabaseBusy => Ok(false),
        Err(e) => Err(e),
    }
}

/// The connection inside a fresh `BEGIN IMMEDIATE`, waiting for another process's write
/// lock in short steps. SQLite's own busy handler sleeps 1, 2, 5, 10… ms between attempts,
/// while a `coord` write holds the lock for about 0.1 ms: with several `coord mcp`
/// processes on one file, most of every collision was spent asleep (p99 38 ms with 8
/// processes). The connection's mutex is released while sleeping, so plain reads on it
/// (key lookups, health) never wait behind another process's write.
fn begin(conn: &Mutex<Connection>, busy_timeout: Duration) -> rusqlite::Result<MutexGuard<'_, Connection>> {
    let deadline = Instant::now() + busy_timeout;
    let mut pause = Duration::from_micros(50);
    loop {
        let c = conn.lock().unwrap_or_else(PoisonError::into_inner);
        if try_begin(&c, busy_timeout)? {
            return Ok(c);
        }
        if Instant::now() >= deadline {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                None,
            ));
        }
        drop(c);
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}

fn run(
    conn: Arc<Mutex<Connection>>,
    queue: Receiver<Queued>,
    busy_timeout: Duration,
    idle: &AtomicBool,
    spin: Duration,
) {
    let mut poll = Duration::ZERO;
    while let Some(first) = next_job(&queue, idle, poll) {
        let alone = first.alone;
        let mut batch = vec![first.job];
        batch.extend(queue.try_iter().take(MAX_BATCH - 1).map(|q| q.job));
        poll = if alone && batch.len() == 1 {
            Duration::ZERO
        } else {
            spin
        };
        // IMMEDIATE: take the write lock up front, so no other process's write can slip
        // between a job's reads and its writes.
        match begin(&conn, busy_timeout) {
            Ok(c) => commit(c, batch),
            Err(e) => {
                let e = CoordError::from(Fail::Db(e));
                for job in batch {
                    let _no_commit_follows = job(Err(&e));
                }
            }
        }
    }
}

/// Runs `batch` in the transaction `c` has begun, commits it, releases the connection,
/// then answers every job.
fn commit(mut c: MutexGuard<'_, Connection>, batch: Vec<Job>) {
    let mut finishes = Vec::with_capacity(batch.len());
    let mut lost: Option<CoordError> = None;
    for job in batch {
        if let Some(e) = &lost {
            // Outside a transaction a job's savepoint would commit on its own: the rest
            // of the batch is refused instead.
            let _no_commit_follows = job(Err(e));
            continue;
        }
        // A panicking job loses its answer (its caller sees an internal error); its
        // savepoint was rolled back while unwinding, and the batch goes on.
        if let Ok(finish) = std::panic::catch_unwind(AssertUnwindSafe(|| job(Ok(&mut c)))) {
            finishes.push(finish);
        }
        if c.is_autocommit() {
            // Some errors (disk full, I/O) roll the whole transaction back, taking every
            // earlier job of the batch with it.
            tracing::warn!("sqlite rolled back a write batch");
            lost = Some(CoordError::unavailable(
                "the database rolled the transaction back (disk full or I/O error?); retry",
            ));
        }
    }
    let committed = match lost {
        Some(e) => Err(e),
        None => c.execute_batch("COMMIT").map_err(|e| {
            if !c.is_autocommit()
                && let Err(rollback) = c.execute_batch("ROLLBACK")
            {
                tracing::error!(error = %rollback, "sqlite writer could not roll back a failed commit");
            }
            CoordError::from(Fail::Db(e))
        }),
    };
    drop(c);
    for finish in finishes {
        finish(committed.as_ref().map(|_| ()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coord_domain::ErrorCode;

    fn writer() -> (tempfile::TempDir, Arc<Mutex<Connection>>, Arc<Writer>) {
        writer_waiting(Duration::from_millis(50), SPIN)
    }

    fn writer_waiting(
        busy_timeout: Duration,
        poll: Duration,
    ) -> (tempfile::TempDir, Arc<Mutex<Connection>>, Arc<Writer>) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY)").unwrap();
        let conn = Arc::new(Mutex::new(conn));
        let w = Writer::start_polling(conn.clone(), busy_timeout, Arc::default(), poll).unwrap();
        (dir, conn, Arc::new(w))
    }

    /// Many concurrent writes, some refused and some failing in the database: each one
    /// that fails leaves nothing behind, every other one commits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failed_writes_in_a_batch_roll_back_alone() {
        let (_dir, conn, w) = writer();
        let tasks: Vec<_> = (0..200i64)
            .map(|k| {
                let w = w.clone();
                tokio::spawn(async move {
                    w.write(Place::Anywhere, move |c| {
                        c.execute("INSERT INTO t (k) VALUES (?1)", [k])?;
                        match k % 10 {
                            // A refusal decided after writing: its insert must vanish.
                            3 => Err(Fail::Coord(CoordError::new(ErrorCode::NotLockOwner, "no"))),
                            // A database error after writing (duplicate key).
                            7 => {
                                c.execute("INSERT INTO t (k) VALUES (?1)", [k])?;
                                Ok(())
                            }
                            _ => Ok(()),
                        }
                    })
                    .await
                })
            })
            .collect();
        let mut ok = 0;
        for (k, t) in tasks.into_iter().enumerate() {
            let r = t.await.unwrap();
            match k % 10 {
                3 => assert_eq!(r.unwrap_err().code, ErrorCode::NotLockOwner),
                7 => assert!(r.is_err()),
                _ => {
                    r.unwrap();
                    ok += 1;
                }
            }
        }
        let c = conn.lock().unwrap();
        let stored: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        let bad: i64 = c
            .query_row("SELECT count(*) FROM t WHERE k % 10 IN (3, 7)", [], |r| r.get(0))
            .unwrap();
        assert_eq!((stored, bad), (ok, 0));
    }

    /// Where a write runs: a lone write on its caller's thread; one that finds another
    /// process holding the write lock on the writer thread, which waits for the lock
    /// (the caller's runtime never sleeps on it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lone_write_runs_here_and_a_blocked_one_on_the_writer_thread() {
        // A poll far longer than the test: a write that reaches the writer thread while it
        // polls is one that came too soon to run here.
        let (dir, conn, w) = writer_waiting(Duration::from_secs(30), Duration::from_secs(30));
        let thread_name = || std::thread::current().name().unwrap_or_default().to_string();
        let here = w.write(Place::Anywhere, move |_| Ok(thread_name())).await.unwrap();
        assert_ne!(here, "coord-sqlite-writer");

        let other = Connection::open(dir.path().join("w.db")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut blocked = std::pin::pin!(w.write(Place::Anywhere, move |c| {
            c.execute("INSERT INTO t (k) VALUES (1)", [])?;
            Ok(thread_name())
        }));
        // The first poll tries to write here, finds the lock taken and queues the write.
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(blocked.as_mut().poll(cx))).await;
        assert!(first.is_pending());
        other.execute_batch("COMMIT").unwrap();
        assert_eq!(blocked.await.unwrap(), "coord-sqlite-writer");
        let stored: i64 = conn
            .lock()
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 1);

        // A write that may take long never runs here, alone or not.
        let long = w.write(Place::WriterThread, move |_| Ok(thread_name())).await.unwrap();
        assert_eq!(long, "coord-sqlite-writer");
        // And a lone client's writes do not stay on the writer thread after it: the thread
        // sleeps right after a write that came alone instead of polling (for 30 s here),
        // and a lone write then runs here again. Its answer is sent before it goes to
        // sleep, so on a busy machine the next write can find it awake, every time: wait
        // for the sleep (the bound only ends a failing run).
        let asleep = {
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while !w.idle.load(Ordering::Acquire) && std::time::Instant::now() < until {
                tokio::task::yield_now().await;
            }
            w.idle.load(Ordering::Acquire)
        };
        assert!(asleep, "the writer thread polls after a lone write");
        let lone = w.write(Place::Anywhere, move |_| Ok(thread_name())).await.unwrap();
        assert_ne!(
            lone, "coord-sqlite-writer",
            "one client's writes stayed on the writer thread"
        );
    }

    /// When the write lock cannot be had, every write of the batch is told so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_busy_database_fails_the_batch_without_partial_writes() {
        let (dir, conn, w) = writer();
        let other = Connection::open(dir.path().join("w.db")).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let e = w
            .write(Place::Anywhere, |c| Ok(c.execute("INSERT INTO t (k) VALUES (1)", [])?))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
        other.execute_batch("ROLLBACK").unwrap();
        w.write(Place::Anywhere, |c| Ok(c.execute("INSERT INTO t (k) VALUES (2)", [])?))
            .await
            .unwrap();
        let n: i64 = conn
            .lock()
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    /// An error that rolls the whole transaction back (disk full, I/O; simulated by a
    /// write that rolls it back itself): every answer must match what is stored — no
    /// write reported failed is kept, none reported done is lost — and the writer
    /// recovers for the next batch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transaction_lost_mid_batch_fails_the_rest_and_keeps_answers_true() {
        let (_dir, conn, w) = writer();
        let tasks: Vec<_> = (0..60i64)
            .map(|k| {
                let w = w.clone();
                tokio::spawn(async move {
                    w.write(Place::Anywhere, move |c| {
                        c.execute("INSERT INTO t (k) VALUES (?1)", [k])?;
                        if k % 20 == 5 {
                            c.execute_batch("ROLLBACK")?;
                        }
                        Ok(())
                    })
                    .await
                })
            })
            .collect();
        let mut answered_ok = Vec::new();
        for (k, t) in tasks.into_iter().enumerate() {
            if t.await.unwrap().is_ok() {
                answered_ok.push(k as i64);
            }
        }
        let stored: Vec<i64> = {
            let c = conn.lock().unwrap();
            let mut stmt = c.prepare("SELECT k FROM t ORDER BY k").unwrap();
            stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(stored, answered_ok, "what callers were told is what is stored");
        assert!(!answered_ok.contains(&5));
        w.write(Place::Anywhere, |c| {
            Ok(c.execute("INSERT INTO t (k) VALUES (1000)", [])?)
        })
        .await
        .expect("the writer recovers");
    }
}
