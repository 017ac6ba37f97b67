//! WAL checkpoints off the writing thread. SQLite's automatic checkpoint runs in the
//! thread that committed, after its commit: every thousand WAL frames one write pays for
//! copying them into the database file and two `fsync`s — a fifth of the store's own
//! time at one client, a twentieth of the writer thread's at eight, while the other core
//! waits (the history of docs/benchmarks.md). Here the store's writing connection
//! asks a thread of its own to checkpoint at the same point, so the write goes on while
//! the checkpoint runs on another core. The WAL is synced as often as before (each
//! checkpoint begins with an `fsync` of it) — just after the commit that asked, on the
//! other thread, rather than inside it; with `synchronous = NORMAL` no commit waited for
//! that sync anyway.
//!
//! A background checkpoint cannot always finish — the writer keeps appending to the WAL
//! meanwhile, and SQLite only starts the WAL over once everything in it was copied — so
//! past [`HERE`] frames the writing thread checkpoints itself, as SQLite would have:
//! under sustained load the WAL stays bounded. Just before that point ([`DUE`]) the
//! store's writes go to its writer thread (`writer.rs`), so that checkpoint does not run
//! on a runtime worker (a write larger than the margin still could).

use rusqlite::Connection;
use rusqlite::hooks::Wal;
use std::ffi::c_int;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

/// WAL frames after which a checkpoint is asked for: SQLite's own default.
const BACKGROUND: c_int = 1000;
/// WAL frames after which the writing thread checkpoints itself.
const HERE: c_int = 4 * BACKGROUND;
/// WAL frames from which writes leave the callers' threads for the writer thread: the
/// next commit may cross [`HERE`] (a lock operation commits about ten frames).
const DUE: c_int = HERE - 64;

#[derive(Debug, PartialEq)]
enum After {
    Nothing,
    Background,
    Here,
}

/// What to do after a commit left `frames` frames in the WAL, when the last background
/// checkpoint was asked for at `asked_at` frames: one per [`BACKGROUND`] new frames (a
/// checkpoint racing the writer rarely copies everything, so the count does not drop
/// after it, and asking at every commit would checkpoint without pause).
fn after_commit(frames: c_int, asked_at: &mut c_int) -> After {
    if frames < *asked_at {
        // The WAL started over.
        *asked_at = 0;
    }
    if frames >= HERE {
        After::Here
    } else if frames >= *asked_at + BACKGROUND {
        *asked_at = frames;
        After::Background
    } else {
        After::Nothing
    }
}

enum Ask {
    Checkpoint,
    Stop,
}

/// The checkpointing thread; dropping it stops the thread and closes its connection.
pub struct Checkpointer {
    ask: SyncSender<Ask>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Fails only when the thread has already ended.
        let _ = self.ask.send(Ask::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Checkpointer {
    /// Replaces `conn`'s automatic checkpoints by a checkpointing thread with a
    /// connection of its own to `path`, opened on first use. `due` tells, after each
    /// commit, whether the next ones may checkpoint on the committing thread.
    pub fn start(conn: &mut Connection, path: &Path, due: Arc<AtomicBool>) -> std::io::Result<Checkpointer> {
        let (ask, asked) = std::sync::mpsc::sync_channel(1);
        let path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("coord-sqlite-checkpoint".into())
            .spawn(move || run(&path, &asked))?;
        let hook_ask = ask.clone();
        let mut asked_at = 0;
        // `frames`: the WAL's frames after this connection's commit, every process's
        // since the WAL last started over. The hook must answer Ok whatever happens: an
        // error would fail a COMMIT whose data is already in the WAL.
        conn.wal_hook(Some(move |wal: &mut Wal, frames: c_int| {
            due.store(frames >= DUE, Ordering::Release);
            match after_commit(frames, &mut asked_at) {
                After::Nothing => {}
                // Full: a checkpoint is asked for already. Disconnected: the thread could
                // not open its connection; the writer checkpoints past `HERE`.
                After::Background => match hook_ask.try_send(Ask::Checkpoint) {
                    Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
                },
                After::Here => {
                    if let Err(e) = wal.checkpoint() {
                        // The background checkpoint holds the checkpoint lock (busy): the
                        // next commit tries again.
                        tracing::debug!(error = %e, "sqlite checkpoint on the writing thread did not run");
                    }
                }
            }
            Ok(())
        }))
        .map_err(std::io::Error::other)?;
        Ok(Checkpointer {
            ask,
            thread: Some(thread),
        })
    }
}

fn run(path: &Path, asked: &Receiver<Ask>) {
    let mut conn: Option<Connection> = None;
    while let Ok(Ask::Checkpoint) = asked.recv() {
        let c = match &conn {
            Some(c) => c,
            None => match crate::open_existing(path) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::warn!(error = %e, "sqlite checkpoint thread cannot open the database; checkpoints stay with the writer");
                    return;
                }
            },
        };
        // PASSIVE, as SQLite's automatic checkpoint: copies what no reader still needs,
        // waits for no one.
        if let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::debug!(error = %e, "sqlite background checkpoint did not run");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Successive commits' frame counts in one WAL's life, and what each leads to.
    #[test]
    fn when_to_checkpoint() {
        let mut asked_at = 0;
        for (frames, after) in [
            (10, After::Nothing),
            (999, After::Nothing),
            (1000, After::Background),
            (1010, After::Nothing),
            (1999, After::Nothing),
            (2005, After::Background),
            (2999, After::Nothing),
            (3005, After::Background),
            (3999, After::Nothing),
            (4000, After::Here),
            (4010, After::Here),
            // Started over after the checkpoint here.
            (12, After::Nothing),
            (1003, After::Background),
            (1_000_000, After::Here),
        ] {
            assert_eq!(after_commit(frames, &mut asked_at), after, "{frames} frames");
        }
    }
}
