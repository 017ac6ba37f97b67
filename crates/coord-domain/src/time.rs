//! Timestamps. All times are UTC with microsecond precision, the precision both stores
//! keep, so a value read back from either store equals the value written.

use chrono::{DateTime, TimeZone, Utc};

pub type Timestamp = DateTime<Utc>;

/// Microseconds since the Unix epoch (the SQLite store's representation).
pub fn to_micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

pub fn from_micros(us: i64) -> Timestamp {
    Utc.timestamp_micros(us).single().unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Drops sub-microsecond digits so that stored and returned values compare equal.
pub fn truncate_micros(t: Timestamp) -> Timestamp {
    from_micros(to_micros(t))
}

pub fn minutes(m: i64) -> chrono::Duration {
    chrono::Duration::minutes(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip() {
        let t = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap() + chrono::Duration::nanoseconds(123_456_789);
        let tr = truncate_micros(t);
        assert_eq!(from_micros(to_micros(tr)), tr);
        assert_eq!(to_micros(tr) % 1_000_000, 123_456);
    }
}
