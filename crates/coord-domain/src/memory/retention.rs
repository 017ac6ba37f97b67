//! Retention: which memories go when nobody has met them for a long time. Episodic
//! memories not seen since the cutoff go — unless their votes say they helped more often
//! than not (a lesson that keeps proving useful outlives its retention). Skills stay:
//! their counts of successes and failures are their value, and there is one per skill.

use crate::error::ErrorCode;
use crate::memory::MemoryType;
use crate::time::Timestamp;
use crate::{CoordResult, validate};
use serde::{Deserialize, Serialize};

/// Memories not seen for a year go by default (`COORD_MEMORY_RETENTION_DAYS`).
pub const DEFAULT_RETENTION_DAYS: i64 = 365;
pub const MAX_RETENTION_DAYS: i64 = 36_500;
/// Memories one prune removes at most: short transactions; `more` says to call again.
pub const PRUNE_BATCH: i64 = 1000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneMemoriesRequest {
    /// Episodic memories last seen more than this many days ago go (default: the
    /// server's retention, 365 days).
    #[serde(default)]
    #[schemars(range(min = 1, max = 36500))]
    pub older_than_days: Option<i64>,
    /// Only count what would go.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// A validated prune (the store reads its clock for the cutoff).
#[derive(Debug, Clone, PartialEq)]
pub struct PruneMemories {
    pub older_than_days: i64,
    pub dry_run: bool,
    pub batch: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PruneMemoriesResult {
    pub success: bool,
    /// Memories last seen before this went.
    pub cutoff: Timestamp,
    /// How many went (with `dry_run`: how many would).
    pub pruned: i64,
    /// Memories past the cutoff kept because their votes say they helped.
    pub kept_useful: i64,
    /// More remain past the cutoff than one prune removes: call again.
    pub more: bool,
    pub dry_run: bool,
}

pub fn validate_prune(req: PruneMemoriesRequest, default_days: i64) -> CoordResult<PruneMemories> {
    Ok(PruneMemories {
        older_than_days: validate::int_in_range(
            "older_than_days",
            req.older_than_days,
            default_days,
            1,
            MAX_RETENTION_DAYS,
            ErrorCode::InvalidArgument,
        )?,
        dry_run: req.dry_run.unwrap_or(false),
        batch: PRUNE_BATCH,
    })
}

/// The cutoff `days` before `now` in microseconds (days are at most
/// [`MAX_RETENTION_DAYS`]: no overflow).
pub fn cutoff_micros(now: i64, days: i64) -> i64 {
    now.saturating_sub(days.saturating_mul(86_400_000_000))
}

/// Whether a memory goes at `cutoff` (the stores' SQL says the same: a conformance case
/// holds them to it).
pub fn expired(kind: MemoryType, last_seen_at: Timestamp, cutoff: Timestamp, useful: i64, not_useful: i64) -> bool {
    kind == MemoryType::Episodic && last_seen_at < cutoff && useful <= not_useful
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn what_goes() {
        let cutoff = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let old = cutoff - Duration::days(1);
        let cases = [
            (MemoryType::Episodic, old, 0, 0, true),
            (MemoryType::Episodic, old, 1, 2, true),
            (MemoryType::Episodic, old, 2, 2, true),
            (MemoryType::Episodic, old, 3, 2, false),
            (MemoryType::Episodic, cutoff, 0, 0, false),
            (MemoryType::Episodic, cutoff + Duration::days(1), 0, 5, false),
            (MemoryType::Procedural, old, 0, 9, false),
        ];
        for (kind, seen, useful, not_useful, want) in cases {
            assert_eq!(
                expired(kind, seen, cutoff, useful, not_useful),
                want,
                "{kind:?} {seen} {useful}/{not_useful}"
            );
        }
    }

    #[test]
    fn validation() {
        let p = validate_prune(PruneMemoriesRequest::default(), DEFAULT_RETENTION_DAYS).unwrap();
        assert_eq!((p.older_than_days, p.dry_run, p.batch), (365, false, PRUNE_BATCH));
        let p = validate_prune(
            PruneMemoriesRequest {
                older_than_days: Some(30),
                dry_run: Some(true),
            },
            DEFAULT_RETENTION_DAYS,
        )
        .unwrap();
        assert_eq!((p.older_than_days, p.dry_run), (30, true));
        for days in [0, -1, MAX_RETENTION_DAYS + 1] {
            let e = validate_prune(
                PruneMemoriesRequest {
                    older_than_days: Some(days),
                    dry_run: None,
                },
                DEFAULT_RETENTION_DAYS,
            )
            .unwrap_err();
            assert_eq!(e.field.as_deref(), Some("older_than_days"), "{days}");
        }
    }

    #[test]
    fn cutoffs() {
        let now = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
        let us = crate::time::to_micros(now);
        assert_eq!(
            crate::time::from_micros(cutoff_micros(us, 30)),
            now - Duration::days(30)
        );
        assert_eq!(cutoff_micros(i64::MIN + 1, MAX_RETENTION_DAYS), i64::MIN, "saturates");
    }
}
