//! What this process's standard descriptors are, and reopening them when they are
//! anonymous pipes. A reopened pipe is an open file description of our own: a mode set on
//! it (non-blocking, for the runtime) never leaks to the processes that share the
//! inherited one (a wrapper script, a parent writing to the same stdout).

use std::io;
use std::os::fd::BorrowedFd;

/// What a descriptor served on is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pipe,
    Socket,
}

/// Whether `fd` is a pipe (or FIFO) or a socket; `None` for anything else (a terminal, a
/// file) or when it cannot be asked.
pub(crate) fn kind(fd: BorrowedFd<'_>) -> Option<Kind> {
    use std::os::unix::fs::FileTypeExt as _;
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let t = file.metadata().ok()?.file_type();
    if t.is_fifo() {
        Some(Kind::Pipe)
    } else if t.is_socket() {
        Some(Kind::Socket)
    } else {
        None
    }
}

/// Standard descriptor `n` (0 or 1) reopened through `/proc/self/fd`, for reading or for
/// writing, in non-blocking mode, when it is a pipe or a FIFO (what a runtime's spawn
/// gives); `None` for anything else. Opened non-blocking, a named FIFO whose writer is
/// gone does not hold the open up (it reads as ended); one whose reader is gone is an
/// error (`ENXIO`), and the caller keeps the inherited descriptor.
pub(crate) fn reopen_pipe(n: i32, write: bool) -> io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let path = format!("/proc/self/fd/{n}");
    if !std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_fifo()) {
        return Ok(None);
    }
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&path)
        .map(Some)
}
