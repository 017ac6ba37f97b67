//! Values written on the command line in a person's form: JSON, a time or an age, a
//! lifetime. Parsed here into what the requests take; the requests are the service's to
//! validate.

use chrono::Utc;
use coord_domain::{CoordError, CoordResult, ErrorCode, Timestamp};
use serde_json::Value;

pub fn parse_json(field: &str, raw: Option<String>) -> CoordResult<Option<Value>> {
    raw.map(|s| {
        serde_json::from_str(&s).map_err(|e| {
            CoordError::field(
                ErrorCode::InvalidJson,
                field,
                format!("--{field} is not valid JSON: {e}"),
            )
        })
    })
    .transpose()
}

/// `15m`, `2h`, `1d` ago, or an RFC 3339 timestamp.
pub fn parse_when(field: &str, raw: &str) -> CoordResult<Timestamp> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(raw.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    humantime::parse_duration(raw.trim())
        .ok()
        .and_then(|d| chrono::Duration::from_std(d).ok())
        .and_then(|d| Utc::now().checked_sub_signed(d))
        .ok_or_else(|| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                field,
                format!("--{field} {raw:?} is neither an RFC 3339 time nor an age like 15m, 2h, 1d"),
            )
        })
}

/// `2h`, `30m`, `7d` as whole minutes.
pub fn parse_lifetime(flag: &str, raw: &str) -> CoordResult<i64> {
    humantime::parse_duration(raw.trim())
        .ok()
        .map(|d| d.as_secs().div_ceil(60) as i64)
        .filter(|m| *m > 0)
        .ok_or_else(|| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                flag,
                format!(
                    "--{} {raw:?} is not a duration like 30m, 2h or 7d",
                    flag.replace('_', "-")
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_rfc3339_or_age() {
        let t = parse_when("since", "2026-11-21T10:00:00Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-21T10:00:00+00:00");
        let ago = parse_when("since", "2h").unwrap();
        let delta = Utc::now() - ago;
        assert!(delta >= chrono::Duration::minutes(119) && delta <= chrono::Duration::minutes(121));
        for bad in ["yesterday-ish", "300000y", "99999999999999d"] {
            let e = parse_when("since", bad).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("since"), "{bad}");
        }
    }

    #[test]
    fn json_arguments_are_checked() {
        assert_eq!(
            parse_json("input", Some("{\"a\":1}".into())).unwrap(),
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(parse_json("input", None).unwrap(), None);
        assert_eq!(
            parse_json("input", Some("{".into())).unwrap_err().code,
            ErrorCode::InvalidJson
        );
    }
}
