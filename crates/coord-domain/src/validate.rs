//! Bounds on free-form input, shared by every operation so that limits and messages
//! are the same whichever door the input came through.

use crate::error::{CoordError, CoordResult, ErrorCode};
use serde_json::Value;

pub const MAX_SHORT_TEXT: usize = 256;
pub const MAX_TEXT: usize = 16 * 1024;
pub const MAX_LONG_TEXT: usize = 64 * 1024;
pub const MAX_LIST_ITEMS: usize = 256;
pub const MAX_JSON_BYTES: usize = 256 * 1024;

fn invalid(field: &str, message: String) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, message)
}

/// A required text: not blank, at most `max` characters, no NUL.
pub fn required_text(field: &str, value: &str, max: usize) -> CoordResult<String> {
    if value.trim().is_empty() {
        return Err(invalid(field, format!("{field} is required and must not be blank")));
    }
    bounded(field, value, max)
}

/// An optional text; blank counts as absent.
pub fn optional_text(field: &str, value: Option<String>, max: usize) -> CoordResult<Option<String>> {
    match value {
        Some(v) if !v.trim().is_empty() => bounded(field, &v, max).map(Some),
        _ => Ok(None),
    }
}

fn bounded(field: &str, value: &str, max: usize) -> CoordResult<String> {
    if value.chars().count() > max {
        return Err(invalid(field, format!("{field} is longer than {max} characters")));
    }
    if value.contains('\0') {
        return Err(invalid(field, format!("{field} contains a NUL character")));
    }
    Ok(value.to_string())
}

/// An integer with a default and an inclusive range; `code` lets callers keep the
/// specific codes the spec names (`ttl_out_of_range`, `priority_out_of_range`).
pub fn int_in_range(
    field: &str,
    value: Option<i64>,
    default: i64,
    min: i64,
    max: i64,
    code: ErrorCode,
) -> CoordResult<i64> {
    let v = value.unwrap_or(default);
    if v < min || v > max {
        return Err(
            CoordError::field(code, field, format!("{field} must be between {min} and {max}, got {v}"))
                .with_detail("min", min)
                .with_detail("max", max),
        );
    }
    Ok(v)
}

/// A list of short texts: each item non-blank and bounded, at most `max_items` items.
pub fn text_list(
    field: &str,
    value: Option<Vec<String>>,
    max_items: usize,
    max_len: usize,
) -> CoordResult<Vec<String>> {
    let items = value.unwrap_or_default();
    if items.len() > max_items {
        return Err(invalid(field, format!("{field} has more than {max_items} items")));
    }
    items.iter().map(|item| required_text(field, item, max_len)).collect()
}

/// JSON payloads are stored verbatim; bound their size so one caller cannot bloat the
/// store (or every audit row that repeats them).
pub fn json_payload(field: &str, value: Option<Value>) -> CoordResult<Option<Value>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            if contains_nul(&v) {
                return Err(invalid(field, format!("{field} contains a NUL character (\\u0000)")));
            }
            let size = serde_json::to_string(&v).map(|s| s.len()).unwrap_or(usize::MAX);
            if size > MAX_JSON_BYTES {
                return Err(CoordError::field(
                    ErrorCode::PayloadTooLarge,
                    field,
                    format!("{field} is {size} bytes of JSON; the limit is {MAX_JSON_BYTES}"),
                ));
            }
            Ok(Some(v))
        }
    }
}

/// Whether any string or key in `v` holds U+0000, which PostgreSQL's `jsonb` and `text`
/// cannot store; refusing it keeps both stores accepting the same input.
pub fn contains_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(contains_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// A copy of `v` with every U+0000 replaced by U+FFFD, for values that are recorded
/// (audit parameters) rather than refused.
pub fn without_nul(v: Value) -> Value {
    match v {
        Value::String(s) if s.contains('\0') => Value::String(s.replace('\0', "\u{FFFD}")),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nul).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k.replace('\0', "\u{FFFD}"), without_nul(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rules() {
        assert_eq!(required_text("s", "hi", 5).unwrap(), "hi");
        assert!(required_text("s", "  ", 5).is_err());
        assert!(required_text("s", "toolong", 5).is_err());
        assert!(required_text("s", "a\0b", 5).is_err());
        assert_eq!(optional_text("s", Some(" ".into()), 5).unwrap(), None);
        assert_eq!(optional_text("s", None, 5).unwrap(), None);
        assert_eq!(optional_text("s", Some("x".into()), 5).unwrap(), Some("x".into()));
        let e = required_text("summary", "", 5).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("summary"));
    }

    #[test]
    fn range_rules() {
        let r = |v| int_in_range("ttl_minutes", v, 120, 1, 480, ErrorCode::TtlOutOfRange);
        assert_eq!(r(None).unwrap(), 120);
        assert_eq!(r(Some(1)).unwrap(), 1);
        assert_eq!(r(Some(480)).unwrap(), 480);
        for bad in [0, -5, 481, i64::MAX] {
            let e = r(Some(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode::TtlOutOfRange);
            assert_eq!(e.details["max"], 480);
        }
    }

    #[test]
    fn list_and_json_rules() {
        assert_eq!(text_list("c", None, 2, 5).unwrap(), Vec::<String>::new());
        assert!(text_list("c", Some(vec!["a".into(), "b".into(), "c".into()]), 2, 5).is_err());
        assert!(text_list("c", Some(vec!["".into()]), 2, 5).is_err());
        assert_eq!(json_payload("d", Some(Value::Null)).unwrap(), None);
        let nul = serde_json::json!({"a": ["ok", "bad\u{0}"]});
        assert!(contains_nul(&nul));
        assert_eq!(
            json_payload("d", Some(nul.clone())).unwrap_err().field.as_deref(),
            Some("d")
        );
        assert!(!contains_nul(&without_nul(nul)));
        let big = Value::String("x".repeat(MAX_JSON_BYTES + 1));
        assert_eq!(
            json_payload("d", Some(big)).unwrap_err().code,
            ErrorCode::PayloadTooLarge
        );
    }
}
