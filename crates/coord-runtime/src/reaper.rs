//! Sessions whose serving process is gone.
//!
//! A `coord mcp` that exits, or whose agent closes the pipe, ends its own session. One
//! that is killed outright (SIGKILL: some agent runtimes stop their MCP servers that way)
//! runs no code at all, so it leaves a record instead: every `coord mcp` writes
//! `.coord/processes/<pid>.json` (its pid, the kernel's start time of that pid, the
//! agent and the session) when its session starts, and removes it when it ends cleanly.
//! Every running `coord mcp` of the checkout looks at the records every few seconds; a
//! recorded process that no longer exists — that pid is gone, or is now another process
//! (its start time in `/proc` differs) — for longer than the grace period has its session
//! ended through `cleanup_dead_agents {sessions}`: locks released, claimed tasks requeued
//! with the attempt counted, audited. A session the agent has replaced by reconnecting is
//! left alone. `coord agent cleanup` does the same at once. Linux only (`/proc`); where
//! it is missing, nothing is reaped and heartbeat staleness still applies.

use coord_domain::sessions::{CleanupDeadAgentsRequest, CleanupResult};
use coord_domain::{Caller, CoordResult};
use coord_service::{Coordination, CoordinationExt as _};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a running `coord mcp` looks for dead processes.
pub const EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: u32,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat`, field 22):
    /// a pid reused by another process does not pass for the recorded one.
    pub started: u64,
    pub agent_id: String,
    pub agent_type: String,
    pub session_id: String,
    /// The grace period the recorded process asked for (a relay's agent's), which a
    /// reaper honours instead of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
    /// Which database the session lives in (a digest: no credentials in the file), so
    /// that a reaper of another database in the same checkout leaves the record alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
}

/// How much longer than a relay's grace period a reaper waits before ending its session:
/// the coordinator serving the relay ends it itself when it is alive; a reaper is for the
/// relays of one that died.
pub const RELAY_MARGIN: Duration = Duration::from_secs(5);

/// The start time of process `pid`, or None when there is no such process (or no /proc).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count fields
    // after its closing parenthesis (state is field 3, start time field 22).
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn alive(r: &ProcessRecord) -> bool {
    start_time(r.pid) == Some(r.started)
}

/// The records of one checkout's `coord mcp` processes.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
    database: Option<String>,
}

impl Registry {
    /// The registry of the checkout whose `.coord` directory is `coord_dir`.
    pub fn new(coord_dir: &Path) -> Registry {
        Registry {
            dir: coord_dir.join("processes"),
            database: None,
        }
    }

    /// The registry of `ctx`'s checkout, for its database.
    pub fn of(ctx: &crate::context::Context) -> Registry {
        use sha2::Digest as _;
        let db = match &ctx.db {
            crate::context::DbTarget::Sqlite(p) => p.display().to_string(),
            crate::context::DbTarget::Postgres(url) => url.clone(),
        };
        let digest = sha2::Sha256::digest(db.as_bytes());
        Registry {
            database: Some(digest[..8].iter().map(|b| format!("{b:02x}")).collect()),
            ..Registry::new(&ctx.state_dir)
        }
    }

    fn path(&self, pid: u32) -> PathBuf {
        self.dir.join(format!("{pid}.json"))
    }

    /// Records this process as serving `session_id` of `who` (replacing its earlier
    /// record). Written to a temporary file and renamed, so readers never see half a record.
    pub fn record_self(&self, who: &Caller, session_id: &str) -> std::io::Result<()> {
        self.record_self_with(who, session_id, None)
    }

    /// [`Registry::record_self`] with the grace period this process's agent asked for.
    pub fn record_self_with(&self, who: &Caller, session_id: &str, grace: Option<Duration>) -> std::io::Result<()> {
        let pid = std::process::id();
        let Some(started) = start_time(pid) else {
            return Ok(()); // no /proc: nothing could check the record anyway
        };
        let record = ProcessRecord {
            pid,
            started,
            agent_id: who.agent_id.clone(),
            agent_type: who.agent_type.clone(),
            session_id: session_id.to_string(),
            grace_ms: grace.map(|g| g.as_millis() as u64),
            database: self.database.clone(),
        };
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(".{pid}.json.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(&record).unwrap_or_default())?;
        std::fs::rename(&tmp, self.path(pid))
    }

    /// Removes this process's record (its session ended cleanly).
    pub fn forget_self(&self) {
        let _ = std::fs::remove_file(self.path(std::process::id()));
    }

    fn records(&self) -> Vec<ProcessRecord> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|bytes| serde_json::from_slice::<ProcessRecord>(&bytes).ok())
            .filter(|r| match (&r.database, &self.database) {
                (Some(theirs), Some(mine)) => theirs == mine,
                _ => true,
            })
            .collect()
    }
}

/// Ends the sessions of dead recorded processes once they have been dead for `grace`.
pub struct Reaper {
    registry: Registry,
    /// For records that name no grace period of their own; `None` (off): those are kept.
    grace: Option<Duration>,
    dead_since: HashMap<u32, Instant>,
}

impl Reaper {
    pub fn new(registry: Registry, grace: Option<Duration>) -> Reaper {
        Reaper {
            registry,
            grace,
            dead_since: HashMap::new(),
        }
    }

    /// The records whose process has been gone for at least the grace period, as seen
    /// by this reaper's passes.
    fn due(&mut self, now: Instant) -> Vec<ProcessRecord> {
        let records = self.registry.records();
        let dead: Vec<ProcessRecord> = records.into_iter().filter(|r| !alive(r)).collect();
        self.dead_since.retain(|pid, _| dead.iter().any(|r| r.pid == *pid));
        let fallback = self.grace;
        dead.into_iter()
            .filter(|r| {
                let grace = match r.grace_ms {
                    Some(ms) => Duration::from_millis(ms) + RELAY_MARGIN,
                    None => match fallback {
                        Some(g) => g,
                        None => return false,
                    },
                };
                now.duration_since(*self.dead_since.entry(r.pid).or_insert(now)) >= grace
            })
            .collect()
    }

    /// One pass: ends the due sessions as `me`, and forgets their records. None when
    /// nothing was due.
    pub async fn pass(&mut self, coord: &dyn Coordination, me: &Caller) -> CoordResult<Option<CleanupResult>> {
        let due = self.due(Instant::now());
        if due.is_empty() {
            return Ok(None);
        }
        let req = CleanupDeadAgentsRequest {
            sessions: Some(due.iter().map(|r| r.session_id.clone()).collect()),
            ..Default::default()
        };
        let result = coord.cleanup_dead_agents(me, req).await?;
        for r in &due {
            let _ = std::fs::remove_file(self.registry.path(r.pid));
            self.dead_since.remove(&r.pid);
            tracing::info!(pid = r.pid, agent = %r.agent_id, session = %r.session_id, "ended the session of a killed coord mcp");
        }
        Ok(Some(result))
    }

    /// The session ids of dead recorded processes, whatever the grace period, and
    /// forgets their records (for `coord agent cleanup`, which a person runs on purpose).
    pub fn take_dead_now(registry: &Registry) -> Vec<String> {
        let dead: Vec<ProcessRecord> = registry.records().into_iter().filter(|r| !alive(r)).collect();
        for r in &dead {
            let _ = std::fs::remove_file(registry.path(r.pid));
        }
        dead.into_iter().map(|r| r.session_id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_record_with_another_start_time_is_not() {
        let pid = std::process::id();
        let started = start_time(pid).expect("/proc on Linux");
        let mut r = ProcessRecord {
            pid,
            started,
            agent_id: "a".into(),
            agent_type: "t".into(),
            session_id: "s".into(),
            grace_ms: None,
            database: None,
        };
        assert!(alive(&r));
        r.started += 1;
        assert!(!alive(&r), "a reused pid is not the recorded process");
        r.pid = u32::MAX;
        assert!(!alive(&r));
    }

    #[test]
    fn records_are_due_after_the_grace_period_only() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new(dir.path());
        registry.record_self(&Caller::new("me", "t"), "s-me").unwrap();
        let dead = ProcessRecord {
            pid: u32::MAX - 1,
            started: 1,
            agent_id: "gone".into(),
            agent_type: "t".into(),
            session_id: "s-gone".into(),
            grace_ms: None,
            database: None,
        };
        std::fs::write(registry.path(dead.pid), serde_json::to_vec(&dead).unwrap()).unwrap();
        std::fs::write(registry.dir.join("junk.json"), "{not json").unwrap();
        let mut reaper = Reaper::new(registry.clone(), Some(Duration::from_secs(20)));
        let t0 = Instant::now();
        assert!(
            reaper.due(t0).is_empty(),
            "first seen dead now: the grace period starts"
        );
        assert!(reaper.due(t0 + Duration::from_secs(19)).is_empty());
        assert_eq!(reaper.due(t0 + Duration::from_secs(20)), [dead]);
        assert_eq!(Reaper::take_dead_now(&registry), ["s-gone"]);
        assert!(
            Reaper::take_dead_now(&registry).is_empty(),
            "taken records are forgotten"
        );
        registry.forget_self();
        assert!(registry.records().is_empty());
    }
}
