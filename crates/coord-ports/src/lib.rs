//! The port allocator. Unlike the original (per-process memory), leases live in a small
//! JSON state file guarded by an exclusive `flock`, so every `coord` process on the
//! machine — one per agent — sees the same leases and never hands out a port twice. It
//! needs no database.
//!
//! The rules (block arithmetic, refresh, exhaustion, expiry) are `coord_domain::ports`;
//! this crate only keeps the leases.

use coord_domain::ports::{self, PortConfig, PortLease};
use coord_domain::ports::{AllocatePortsResult, PortsStatusResult, ReleasePortsResult};
use coord_domain::{CoordError, CoordResult, Timestamp};
use rustix::fs::{FlockOperation, flock};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
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

    /// Runs `f` on the leases under the exclusive lock, then saves them atomically
    /// (temporary file + rename, so a crash never leaves half a file).
    fn with_leases<T>(&self, f: impl FnOnce(&mut Vec<PortLease>) -> T) -> CoordResult<T> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| unavailable(&self.path, "create its directory", e))?;
        }
        let lock_path = self.path.with_extension("lock");
        let lock: File = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| unavailable(&lock_path, "open", e))?;
        flock(&lock, FlockOperation::LockExclusive).map_err(|e| unavailable(&lock_path, "lock", e))?;
        let mut state = self.read();
        let out = f(&mut state.leases);
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_vec_pretty(&state).map_err(|e| unavailable(&self.path, "encode", e))?;
        File::create(&tmp)
            .and_then(|mut f| f.write_all(&text).and_then(|_| f.sync_all()))
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .map_err(|e| unavailable(&self.path, "write", e))?;
        // The lock is released when `lock` closes.
        Ok(out)
    }

    fn read(&self) -> State {
        let mut text = String::new();
        match File::open(&self.path).and_then(|mut f| f.read_to_string(&mut text)) {
            Ok(_) => serde_json::from_str(&text).unwrap_or_else(|e| {
                // Leases are short-lived and re-requested; a damaged file is started over.
                tracing::warn!(path = %self.path.display(), error = %e, "port state unreadable; starting empty");
                State::default()
            }),
            Err(_) => State::default(),
        }
    }

    pub fn allocate(&self, session_id: &str, now: Timestamp) -> CoordResult<AllocatePortsResult> {
        let session_id = ports::validate_session_id(session_id)?;
        let lease = self.with_leases(|leases| ports::allocate(leases, &self.config, &session_id, now))??;
        let allocation = ports::allocation_of(&self.config, &lease);
        Ok(AllocatePortsResult {
            success: true,
            env_snippet: ports::env_snippet(&allocation),
            allocation,
        })
    }

    pub fn release(&self, session_id: &str, now: Timestamp) -> CoordResult<ReleasePortsResult> {
        let session_id = ports::validate_session_id(session_id)?;
        let released = self.with_leases(|leases| ports::release(leases, &session_id, now))?;
        Ok(ReleasePortsResult {
            success: true,
            released,
        })
    }

    pub fn status(&self, now: Timestamp) -> CoordResult<PortsStatusResult> {
        let allocations = self.with_leases(|leases| ports::status(leases, &self.config, now))?;
        Ok(PortsStatusResult {
            success: true,
            allocations,
        })
    }
}
