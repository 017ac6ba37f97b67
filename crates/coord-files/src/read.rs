//! Confined reads.

use crate::{FileError, Workspace, gate, regular_single};
use rustix::fs::OFlags;
use std::io::Read;

/// A file's content, read whole (within the limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub content: Vec<u8>,
}

impl Workspace {
    /// Reads the regular file `rel` (workspace-relative) if it is at most `max` bytes.
    ///
    /// One open, with the strict resolution rules and `O_NOFOLLOW | O_NONBLOCK |
    /// O_NOCTTY` (a FIFO does not block, a terminal does not become the controlling
    /// one), then `fstat` on the descriptor: anything but a regular file with one link
    /// within the limit is refused before a byte is read. Then at most `max + 1` bytes
    /// are read, so a file growing past the limit meanwhile is refused too. (A special
    /// file is thus opened, never read, before it is refused: device nodes need
    /// `CAP_MKNOD` to exist in a workspace and mount points are not crossed. Opening
    /// `O_PATH` first and then again for reading would avoid even that, at about 50%
    /// more time per small read.)
    pub fn read(&self, rel: &str, max: u64) -> Result<FileRead, FileError> {
        let rel = gate(rel)?;
        let fd = self.open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        )?;
        let st = rustix::fs::fstat(&fd).map_err(FileError::of_errno)?;
        regular_single(&st)?;
        let size = st.st_size.max(0) as u64;
        if size > max {
            return Err(FileError::TooLarge { size, limit: max });
        }
        let mut content = Vec::with_capacity(size as usize);
        std::fs::File::from(fd)
            .take(max + 1)
            .read_to_end(&mut content)
            .map_err(|e| FileError::ReadFailed(e.kind().to_string()))?;
        if content.len() as u64 > max {
            return Err(FileError::TooLarge {
                size: content.len() as u64,
                limit: max,
            });
        }
        Ok(FileRead { content })
    }
}
