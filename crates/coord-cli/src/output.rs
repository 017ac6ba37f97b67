//! Printing results: JSON for machines (`--json`), tables and sentences for people.
//! The exit code follows the outcome, whichever form is printed.

use chrono::Utc;
use comfy_table::{Table, presets};
use coord_domain::error::ErrorKind;
use coord_domain::{CoordError, CoordResult, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// Prints one line to stdout. Commands that keep SIGPIPE ignored (they may launch
/// agents, whose validator may not read what it is given) end quietly, as a shell
/// expects, when stdout's reader went away (`coord call … | head`), instead of panicking
/// in `println!`.
pub fn line(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(141);
    }
}

pub const EXIT_OK: u8 = 0;
pub const EXIT_REFUSED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_UNAVAILABLE: u8 = 3;

pub fn exit_code(e: &CoordError) -> u8 {
    match e.kind() {
        ErrorKind::Input => EXIT_USAGE,
        ErrorKind::Refused | ErrorKind::NotFound | ErrorKind::Forbidden => EXIT_REFUSED,
        ErrorKind::Unavailable | ErrorKind::Internal => EXIT_UNAVAILABLE,
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints a result; exit code 1 when its wire `success` flag is false.
    pub fn result<T: Serialize>(&self, r: CoordResult<T>, human: impl FnOnce(&T) -> String) -> u8 {
        match r {
            Ok(v) => {
                let value = serde_json::to_value(&v).unwrap_or(Value::Null);
                let ok = value.get("success").and_then(Value::as_bool).unwrap_or(true);
                if self.json {
                    line(&value.to_string());
                } else {
                    let text = human(&v);
                    if !text.is_empty() {
                        line(text.trim_end());
                    }
                }
                if ok { EXIT_OK } else { EXIT_REFUSED }
            }
            Err(e) => self.error(&e),
        }
    }

    pub fn error(&self, e: &CoordError) -> u8 {
        if self.json {
            line(&e.to_value().to_string());
        } else {
            eprintln!("error: {} [{}]", e.message, e.code);
            if e.code == coord_domain::ErrorCode::InvalidIdentity {
                eprintln!("hint: set --agent-id/--agent-type, or COORD_AGENT_ID/COORD_AGENT_TYPE");
            }
        }
        exit_code(e)
    }
}

pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    t.set_header(header.to_vec());
    t
}

/// `2026-11-21 10:00:00Z (in 1h59m)`.
pub fn when(t: Timestamp) -> String {
    format!("{} ({})", t.format("%Y-%m-%d %H:%M:%SZ"), relative(t, Utc::now()))
}

pub fn relative(t: Timestamp, now: Timestamp) -> String {
    let secs = (t - now).num_seconds();
    let a = secs.unsigned_abs();
    let span = match a {
        0..=59 => format!("{a}s"),
        60..=3599 => format!("{}m", a / 60),
        3600..=86399 => format!("{}h{:02}m", a / 3600, (a % 3600) / 60),
        _ => format!("{}d{}h", a / 86400, (a % 86400) / 3600),
    };
    if secs >= 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

pub fn ellipsis(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!("{}…", one_line.chars().take(n.saturating_sub(1)).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn relative_times() {
        let now = Utc::now();
        let cases = [
            (Duration::seconds(30), "in 30s"),
            (Duration::minutes(119) + Duration::seconds(59), "in 1h59m"),
            (Duration::minutes(-5), "5m ago"),
            (Duration::days(2) + Duration::hours(3), "in 2d3h"),
        ];
        for (d, want) in cases {
            assert_eq!(relative(now + d, now), want);
        }
    }

    #[test]
    fn exit_codes_follow_error_kinds() {
        use coord_domain::ErrorCode::*;
        let cases = [
            (TtlOutOfRange, 2),
            (InvalidPath, 2),
            (NotLockOwner, 1),
            (TaskNotFound, 1),
            (DatabaseUnavailable, 3),
            (Internal, 3),
        ];
        for (code, want) in cases {
            assert_eq!(exit_code(&CoordError::new(code, "x")), want, "{code}");
        }
    }
}
