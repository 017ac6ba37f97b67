//! Confined, atomic writes: prepare (a temporary file beside the target, written and
//! synced), then commit (renamed over the name). The two steps are apart so that a
//! caller can commit inside a decision that must hold at the moment of the rename —
//! coord renames while the transaction that checked the writer's lock and fencing
//! token is open.

use crate::{FileError, Workspace, gate, identity, regular_single, split};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::io::Write;
use std::os::fd::OwnedFd;

/// A write ready to be committed: its content is in a temporary file of the target's
/// directory. Dropping it uncommitted removes the temporary file.
#[derive(Debug)]
pub struct PreparedWrite {
    root: OwnedFd,
    dir: OwnedFd,
    dir_id: (u64, u64),
    parent: Option<String>,
    leaf: String,
    temp: String,
    bytes: u64,
    create_only: bool,
    pending: bool,
}

/// A committed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub bytes: u64,
    /// Whether the name existed (its content was replaced) or was created.
    pub replaced: bool,
    /// Whether the directory was synced after the rename (the write is in place either
    /// way; without the sync a crash could lose it).
    pub synced: bool,
    /// The temporary name the content was written under before the rename.
    pub temp: String,
}

/// Prefix of the temporary files (hidden, and recognisable if a crash leaves one).
pub const TEMP_PREFIX: &str = ".coord-write-";

impl Workspace {
    /// Prepares writing `content` to `rel`: the parent directory must exist (it is not
    /// created) and be reached without symlinks; an existing `rel` must be a regular
    /// file with one link (its permissions are kept); `create_only` refuses an existing
    /// one. At most `max` bytes.
    pub fn prepare_write(
        &self,
        rel: &str,
        content: &[u8],
        max: u64,
        create_only: bool,
    ) -> Result<PreparedWrite, FileError> {
        let rel = gate(rel)?;
        if content.len() as u64 > max {
            return Err(FileError::TooLarge {
                size: content.len() as u64,
                limit: max,
            });
        }
        let (parent, leaf) = split(rel);
        let dir = self.parent_dir(parent).map_err(|e| match e {
            FileError::NotFound => FileError::NoDirectory,
            other => other,
        })?;
        let dir_id = identity(&rustix::fs::fstat(&dir).map_err(FileError::of_errno)?);
        let existing_mode = match rustix::fs::statat(&dir, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) if create_only => return Err(FileError::Exists),
            Ok(st) => {
                regular_single(&st)?;
                if st.st_mode & 0o200 == 0 {
                    return Err(FileError::ReadOnly);
                }
                // Permission bits only: set-user-ID, set-group-ID and sticky bits are not
                // carried over to content someone else chose.
                Some(Mode::from_raw_mode(st.st_mode & 0o777))
            }
            Err(Errno::NOENT) => None,
            Err(e) => return Err(FileError::of_errno(e)),
        };
        let root = self
            .root
            .try_clone()
            .map_err(|e| FileError::WriteFailed(e.kind().to_string()))?;
        let (fd, temp) = create_temp(&dir)?;
        let prepared = PreparedWrite {
            root,
            dir,
            dir_id,
            parent: parent.map(String::from),
            leaf: leaf.to_string(),
            temp,
            bytes: content.len() as u64,
            create_only,
            pending: true,
        };
        // From here on, dropping `prepared` removes the temporary file.
        if let Some(mode) = existing_mode {
            rustix::fs::fchmod(&fd, mode).map_err(FileError::of_errno)?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(content).and_then(|()| file.sync_all()).map_err(|e| {
            match e.raw_os_error().map(Errno::from_raw_os_error) {
                Some(errno) => FileError::of_errno(errno),
                None => FileError::WriteFailed(e.kind().to_string()),
            }
        })?;
        Ok(prepared)
    }
}

/// A new temporary file in `dir`, created exclusively without following a link (a name
/// raced in as a symlink makes `O_EXCL` fail: another name is tried).
fn create_temp(dir: &OwnedFd) -> Result<(OwnedFd, String), FileError> {
    let mut attempts = 0;
    loop {
        let name = format!("{TEMP_PREFIX}{}.tmp", uuid::Uuid::new_v4().simple());
        match create_exclusive(dir, &name) {
            Ok(fd) => return Ok((fd, name)),
            Err(Errno::EXIST) if attempts < 3 => attempts += 1,
            Err(e) => return Err(FileError::of_errno(e)),
        }
    }
}

/// `name` in `dir`, created: never an existing file, never through a link.
fn create_exclusive(dir: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )
}

impl PreparedWrite {
    /// The temporary file's name (in the target's directory).
    pub fn temp_name(&self) -> &str {
        &self.temp
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the parent directory is still the one the path names beneath the root.
    fn parent_in_place(&self) -> bool {
        rustix::fs::openat2(
            &self.root,
            self.parent.as_deref().unwrap_or("."),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            crate::STRICT,
        )
        .and_then(|fd| rustix::fs::fstat(&fd))
        .is_ok_and(|st| identity(&st) == self.dir_id)
    }

    /// What is at the name now: `None` when nothing; a directory is refused.
    fn leaf_now(&self) -> Result<Option<()>, FileError> {
        match rustix::fs::statat(&self.dir, self.leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                Err(FileError::NotRegular("a directory"))
            }
            Ok(_) => Ok(Some(())),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(FileError::of_errno(e)),
        }
    }

    /// Puts the content in place. The parent directory is checked to be the one beneath
    /// the workspace root first; an existing name is then *exchanged* with the temporary
    /// file (`RENAME_EXCHANGE`: a link raced in at the name is moved aside, never written
    /// through, and the old content stays at the temporary name), a missing one is
    /// created without replacing anything (`RENAME_NOREPLACE`; always so for
    /// `create_only`). Then the parent is checked again: if it was moved out or swapped
    /// meanwhile, the exchange is undone (or the new file removed) and the write is
    /// refused with nothing lost. Finally the old content is removed and the directory
    /// synced (`Written::synced` says whether that sync worked).
    pub fn commit(mut self) -> Result<Written, FileError> {
        if !self.parent_in_place() {
            return Err(FileError::Changed);
        }
        let mut replaced = None;
        for _ in 0..3 {
            let exchange = !self.create_only && self.leaf_now()?.is_some();
            let flags = if exchange {
                RenameFlags::EXCHANGE
            } else {
                RenameFlags::NOREPLACE
            };
            match rustix::fs::renameat_with(&self.dir, self.temp.as_str(), &self.dir, self.leaf.as_str(), flags) {
                Ok(()) => {
                    replaced = Some(exchange);
                    break;
                }
                // The name vanished, or appeared, since it was looked at: look again.
                Err(Errno::NOENT) if exchange => {}
                Err(Errno::EXIST) if !exchange && !self.create_only => {}
                Err(e) => return Err(FileError::of_errno(e)),
            }
        }
        let Some(replaced) = replaced else {
            return Err(FileError::Changed);
        };
        let swap_back = |w: &PreparedWrite| {
            rustix::fs::renameat_with(&w.dir, w.temp.as_str(), &w.dir, w.leaf.as_str(), RenameFlags::EXCHANGE)
        };
        if replaced {
            // A directory swapped in at the last moment was exchanged out: put it back.
            let aside = rustix::fs::statat(&self.dir, self.temp.as_str(), AtFlags::SYMLINK_NOFOLLOW);
            if aside.is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory) {
                let _ = swap_back(&self);
                return Err(FileError::NotRegular("a directory"));
            }
        } else {
            // The temporary name is gone: nothing for `drop` to remove.
            self.pending = false;
        }
        if !self.parent_in_place() {
            if replaced {
                // The old content back at the name; the new one, at the temporary name,
                // is removed by `drop`.
                let _ = swap_back(&self);
            } else {
                let _ = rustix::fs::unlinkat(&self.dir, self.leaf.as_str(), AtFlags::empty());
            }
            return Err(FileError::Changed);
        }
        if replaced {
            // The old content (or whatever was at the name), now at the temporary name.
            let _ = rustix::fs::unlinkat(&self.dir, self.temp.as_str(), AtFlags::empty());
            self.pending = false;
        }
        let synced = rustix::fs::fsync(&self.dir).is_ok();
        Ok(Written {
            bytes: self.bytes,
            replaced,
            temp: std::mem::take(&mut self.temp),
            synced,
        })
    }
}

impl Drop for PreparedWrite {
    fn drop(&mut self) {
        if self.pending {
            let _ = rustix::fs::unlinkat(&self.dir, self.temp.as_str(), AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_planted_as_a_symlink_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        let dir = tmp.path().join("ws");
        std::fs::create_dir(&dir).unwrap();
        for target in [&outside, &tmp.path().join("missing.txt")] {
            let name = format!("{TEMP_PREFIX}planted.tmp");
            let _ = std::fs::remove_file(dir.join(&name));
            std::os::unix::fs::symlink(target, dir.join(&name)).unwrap();
            let fd = rustix::fs::open(&dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
            assert_eq!(create_exclusive(&fd, &name).unwrap_err(), Errno::EXIST);
        }
        assert!(!outside.exists() && !tmp.path().join("missing.txt").exists());
    }
}
