//! Confined file access for coord's `read_file` and `write_file` (Linux ≥ 5.6).
//!
//! Never "check the path string, then open by path" (the MCP filesystem server's
//! CVE-2025-53109/53110 and their successors): every path passes a lexical [`gate`],
//! then is resolved by the kernel relative to a directory handle of the workspace root,
//! opened once when the [`Workspace`] is, with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`: an escape, a symlink
//! anywhere in the path or a mount crossing is refused by the kernel, not clamped or
//! followed. What was opened is then checked through its descriptor (`fstat`: a regular
//! file with one link, within the size limit). Writes are atomic: a temporary file
//! created exclusively in the resolved parent directory, written, `fsync`ed and renamed
//! over the name ([`PreparedWrite`]), so a reader sees the old or the new content and a
//! failed write leaves the old content and no temporary file.
//!
//! Where `openat2` is missing (`ENOSYS`, or `EPERM` from a seccomp filter) every access
//! fails closed with [`FileError::Unconfinable`]; there is no fallback to plain `open`.
//!
//! Modules: `gate`, the lexical gate (no NUL, no absolute path, no trailing `/`, no `.`
//! or `..`, no over-long name; nothing decoded or normalised); `read` (one open with
//! `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`, then `fstat` before a byte is read; read to the
//! limit plus one); `write` (`PreparedWrite`: an `O_EXCL | O_NOFOLLOW` temporary file in
//! the resolved parent, written and synced, permission bits kept without set-ID bits;
//! `commit` checks the parent's identity beneath the root, exchanges the name with the
//! temporary file — `RENAME_EXCHANGE`, so a failed check puts the old content back — or
//! creates it with `RENAME_NOREPLACE`, and syncs the directory). `FileError` carries
//! stable codes. The attack suite is `tests/attacks.rs`: escapes, every symlink kind,
//! special files, hard links, swaps between prepare and commit, flipping races, torn
//! reads, a read-only bind mount and a mount crossing.

mod gate;
mod read;
mod write;

pub use gate::{MAX_NAME_BYTES, MAX_PATH_BYTES, gate, split};
pub use read::FileRead;
pub use write::{PreparedWrite, TEMP_PREFIX, Written};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The default size limit of a read or a write: 1 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;

/// Resolution rules of every open: stay beneath the root, follow no symlink (magic
/// links included) and cross no mount point.
const STRICT: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_XDEV);

/// Why an access was refused. Messages never hold file contents; [`FileError::code`] is
/// the stable snake_case code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    InvalidPath(String),
    #[error("the path leads outside the workspace: {0}")]
    OutsideWorkspace(String),
    #[error("the path goes through a symbolic link, which file tools never follow")]
    Symlink,
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("the file has {0} hard links; file tools refuse a file that is also reachable from elsewhere")]
    HardLinked(u64),
    #[error("the file is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    #[error("no such file or directory")]
    NotFound,
    #[error("its directory does not exist (write_file creates no directories)")]
    NoDirectory,
    #[error("the file is read-only (no write permission for its owner): coord does not replace read-only files")]
    ReadOnly,
    #[error("the file already exists (create_only)")]
    Exists,
    #[error("permission denied by the file system")]
    PermissionDenied,
    #[error("the file or its directory changed while it was being opened; try again")]
    Changed,
    #[error("the write failed ({0}); the previous content is unchanged")]
    WriteFailed(String),
    #[error("the read failed ({0})")]
    ReadFailed(String),
    #[error("the kernel cannot confine file access here (openat2 unavailable: {0}); file tools are disabled")]
    Unconfinable(String),
}

impl FileError {
    pub fn code(&self) -> &'static str {
        match self {
            FileError::InvalidPath(_) => "invalid_path",
            FileError::OutsideWorkspace(_) => "path_outside_workspace",
            FileError::Symlink => "symlink_denied",
            FileError::NotRegular(_) => "not_a_regular_file",
            FileError::HardLinked(_) => "hardlink_denied",
            FileError::TooLarge { .. } => "file_too_large",
            FileError::NotFound | FileError::NoDirectory => "not_found",
            FileError::ReadOnly => "permission_denied",
            FileError::Exists => "file_exists",
            FileError::PermissionDenied => "permission_denied",
            FileError::Changed => "file_changed",
            FileError::WriteFailed(_) => "write_failed",
            FileError::ReadFailed(_) => "read_failed",
            FileError::Unconfinable(_) => "confinement_unavailable",
        }
    }

    /// The refusal an errno of path resolution or opening means.
    fn of_errno(e: Errno) -> FileError {
        match e {
            Errno::XDEV => FileError::OutsideWorkspace("the path crosses a mount point or leaves the root".into()),
            Errno::LOOP => FileError::Symlink,
            Errno::NOENT | Errno::NOTDIR => FileError::NotFound,
            Errno::ACCESS | Errno::PERM => FileError::PermissionDenied,
            Errno::NAMETOOLONG => FileError::InvalidPath("the path or a component is too long".into()),
            Errno::ISDIR => FileError::NotRegular("a directory"),
            Errno::NXIO => FileError::NotRegular("a socket or device"),
            Errno::EXIST => FileError::Exists,
            Errno::AGAIN => FileError::Changed,
            Errno::NOSYS => FileError::Unconfinable("ENOSYS".into()),
            Errno::NOSPC | Errno::DQUOT => FileError::WriteFailed("no space left on the device".into()),
            Errno::ROFS => FileError::WriteFailed("read-only file system".into()),
            other => FileError::WriteFailed(format!("errno {}", other.raw_os_error())),
        }
    }
}

/// A workspace root, held open: every path is resolved beneath this handle, so moving
/// or renaming the directory later changes nothing.
#[derive(Debug)]
pub struct Workspace {
    root: OwnedFd,
    dir: PathBuf,
}

impl Workspace {
    /// Opens `dir` (the operator's choice: symlinks in it are followed once, here) and
    /// checks that the kernel confines resolution beneath it.
    pub fn open(dir: &Path) -> Result<Workspace, FileError> {
        let root = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(
            |e| match e {
                Errno::NOTDIR => FileError::InvalidPath(format!("{} is not a directory", dir.display())),
                other => FileError::of_errno(other),
            },
        )?;
        let ws = Workspace {
            root,
            dir: dir.to_path_buf(),
        };
        // Probe: resolving "." with the strict rules must work, or nothing will.
        match rustix::fs::openat2(&ws.root, ".", OFlags::PATH | OFlags::CLOEXEC, Mode::empty(), STRICT) {
            Ok(_) => Ok(ws),
            Err(e @ (Errno::NOSYS | Errno::PERM | Errno::INVAL)) => Err(FileError::Unconfinable(format!("{e}"))),
            Err(e) => Err(FileError::of_errno(e)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `openat2` beneath the root with the strict rules; a rename race reported by the
    /// kernel (`EAGAIN`) is retried a few times.
    fn open_beneath(&self, rel: &str, flags: OFlags) -> Result<OwnedFd, FileError> {
        let mut attempts = 0;
        loop {
            match rustix::fs::openat2(&self.root, rel, flags | OFlags::CLOEXEC, Mode::empty(), STRICT) {
                Ok(fd) => return Ok(fd),
                Err(Errno::AGAIN) if attempts < 3 => attempts += 1,
                Err(e @ Errno::NOSYS) => return Err(FileError::Unconfinable(format!("{e}"))),
                Err(e) => return Err(FileError::of_errno(e)),
            }
        }
    }

    /// The directory a path's leaf lives in (the root itself for a top-level name).
    fn parent_dir(&self, parent: Option<&str>) -> Result<OwnedFd, FileError> {
        let fd = self.open_beneath(parent.unwrap_or("."), OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(fd)
    }
}

/// Identity of an inode.
fn identity(st: &Stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

/// What `st` is, refused unless a regular file with a single link.
fn regular_single(st: &Stat) -> Result<(), FileError> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => return Err(FileError::Symlink),
        FileType::Directory => return Err(FileError::NotRegular("a directory")),
        FileType::Fifo => return Err(FileError::NotRegular("a FIFO")),
        FileType::Socket => return Err(FileError::NotRegular("a socket")),
        FileType::CharacterDevice | FileType::BlockDevice => return Err(FileError::NotRegular("a device")),
        FileType::Unknown => return Err(FileError::NotRegular("an unknown kind of file")),
    }
    if st.st_nlink > 1 {
        // nlink_t is 64 bits here and 32 bits on other architectures.
        #[allow(clippy::unnecessary_cast)]
        return Err(FileError::HardLinked(st.st_nlink as u64));
    }
    Ok(())
}
