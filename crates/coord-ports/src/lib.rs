//! The port allocator. Leases live in a small JSON state file guarded by an exclusive
//! `flock` and replaced atomically (temporary file, rename, directory sync), so every
//! `coord` process on the machine — one per agent — sees the same leases and never hands
//! out a port twice. It needs no database.
//!
//! The rules (block arithmetic, refresh, exhaustion, expiry) are `coord_domain::ports`;
//! this crate only keeps the leases. Through the service each allocation and release is
//! audited after the change (the state file is not a store); `coord port` on the machine
//! itself uses the file alone.

use coord_domain::ports::{self, Claimant, PortConfig, PortLease};
use coord_domain::ports::{AllocatePortsResult, PortsStatusResult, ReleasePortsResult};
use coord_domain::{CoordError, CoordResult, Timestamp};
use rustix::fs::{FlockOperation, flock};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct PortAllocator {
    path: PathBuf,
    config: PortConfig,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct State {
    leases: Vec<PortLease>,
}

fn unavailable(path: &Path, what: &str, e: impl std::fmt::Display) -> CoordError {
    CoordError::unavailable(format!("port allocator state {}: cannot {what}: {e}", path.display()))
}

impl PortAllocator {
    pub fn new(path: PathBuf, config: PortConfig) -> Self {
        PortAllocator { path, config }
    }

    /// `COORD_PORTS_STATE`, else `$XDG_STATE_HOME/coord/ports.json`, else
    /// `~/.local/state/coord/ports.json`: one file per machine user, shared by every
    /// process, because ports are a machine-wide resource.
    pub fn default_path() -> PathBuf {
        if let Some(p) = std::env::var_os("COORD_PORTS_STATE").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let state = std::env::var_os("XDG_STATE_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(std::env::temp_dir)
                    .join(".local/state")
            });
        state.join("coord").join("ports.json")
    }

    /// The allocator configured from `PORT_ALLOC_*` at the default path.
    pub fn from_env() -> CoordResult<Self> {
        let config = ports::port_config_from(|k| std::env::var(k).ok())?;
        Ok(PortAllocator::new(PortAllocator::default_path(), config))
    }

    pub fn config(&self) -> &PortConfig {
        &self.config
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<state file>.<suffix>`: appended, never substituted, so no configured state path
    /// can make the lock or temporary file the state file itself.
    fn beside(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".");
        name.push(suffix);
        PathBuf::from(name)
    }

    /// Takes the lock file's `flock` (exclusive for changes, shared for reading); it is
    /// released when the returned file closes.
    fn lock(&self, operation: FlockOperation) -> CoordResult<File> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| unavailable(&self.path, "create its directory", e))?;
        }
        let lock_path = self.beside("lock");
        let lock: File = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| unavailable(&lock_path, "open", e))?;
        flock(&lock, operation).map_err(|e| unavailable(&lock_path, "lock", e))?;
        Ok(lock)
    }

    /// Runs `f` on the leases under the exclusive lock, then saves them atomically
    /// (temporary file + rename + directory sync, so a crash never leaves half a file).
    fn with_leases<T>(&self, f: impl FnOnce(&mut Vec<PortLease>) -> T) -> CoordResult<T> {
        let _lock = self.lock(FlockOperation::LockExclusive)?;
        let mut state = self.read()?;
        let out = f(&mut state.leases);
        let tmp = self.beside("tmp");
        let text = serde_json::to_vec_pretty(&state).map_err(|e| unavailable(&self.path, "encode", e))?;
        File::create(&tmp)
            .and_then(|mut f| f.write_all(&text).and_then(|_| f.sync_all()))
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .and_then(|_| match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                Some(dir) => File::open(dir).and_then(|d| d.sync_all()),
                None => Ok(()),
            })
            .map_err(|e| unavailable(&self.path, "write", e))?;
        Ok(out)
    }

    /// The stored leases. A missing file is no leases; a damaged one is an error, not a
    /// fresh start: forgetting live leases would hand their ports out twice.
    fn read(&self) -> CoordResult<State> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => return Err(unavailable(&self.path, "read", e)),
        };
        serde_json::from_str(&text).map_err(|e| {
            CoordError::unavailable(format!(
                "port allocator state {} is damaged ({e}); move it away to start with no leases",
                self.path.display()
            ))
        })
    }

    pub fn allocate(&self, session_id: &str, who: &Claimant, now: Timestamp) -> CoordResult<AllocatePortsResult> {
        let session_id = ports::validate_session_id(session_id)?;
        let lease = self.with_leases(|leases| ports::allocate(leases, &self.config, &session_id, who, now))??;
        let allocation = ports::allocation_of(&lease);
        Ok(AllocatePortsResult {
            success: true,
            env_snippet: ports::env_snippet(&allocation),
            allocation,
        })
    }

    pub fn release(&self, session_id: &str, who: &Claimant, now: Timestamp) -> CoordResult<ReleasePortsResult> {
        let session_id = ports::validate_session_id(session_id)?;
        let released = self.with_leases(|leases| ports::release(leases, &session_id, who, now))??;
        Ok(ReleasePortsResult {
            success: true,
            released,
        })
    }

    pub fn status(&self, now: Timestamp) -> CoordResult<PortsStatusResult> {
        // A read: status is public over HTTP and must not rewrite the file on every call.
        let _lock = self.lock(FlockOperation::LockShared)?;
        let allocations = ports::status(&self.read()?.leases, now);
        Ok(PortsStatusResult {
            success: true,
            allocations,
        })
    }
}
