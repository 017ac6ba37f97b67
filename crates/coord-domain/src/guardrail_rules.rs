//! The editable part of the guardrails' pattern registry (`operation_guardrails`): rows
//! that add a pattern, replace a built-in one of the same name, or switch one off.
//! The patterns themselves (their fields and how they match) belong to
//! `coord_guardrails::patterns`; here they are JSON the store keeps and the service
//! compiles, and these are the wire types and their validation.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most rows the registry holds (each is compiled for every check).
pub const MAX_RULES: usize = 500;
/// The largest pattern, as JSON.
pub const MAX_PATTERN_BYTES: usize = 8 * 1024;

/// One row of `operation_guardrails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailRule {
    pub name: String,
    /// The pattern; absent when the row only switches a built-in pattern off.
    #[serde(default)]
    pub pattern: Option<Value>,
    pub enabled: bool,
    pub updated_by: String,
    pub updated_at: Timestamp,
}

/// Where a pattern of the registry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// Built into coord, unchanged.
    Builtin,
    /// A built-in pattern replaced or switched off by a row.
    Modified,
    /// Added by a row.
    Custom,
}

/// One pattern of the registry in effect, as `list_guardrails` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailEntry {
    pub name: String,
    pub source: RuleSource,
    pub enabled: bool,
    /// The pattern in effect (the built-in one when a row only switches it off).
    pub pattern: Value,
    #[serde(default)]
    pub updated_by: Option<String>,
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListGuardrailsResult {
    pub success: bool,
    pub guardrails: Vec<GuardrailEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetGuardrailRequest {
    /// The pattern's name: a built-in name replaces (or, with only `enabled:false`,
    /// switches off) that pattern; a new name adds one.
    pub name: String,
    /// The pattern (fields: program, words, anywhere, ignore_case, options, unless,
    /// unless_next, value_options, api_path, operation, category, action, reason; see
    /// docs/guardrails.md). Its `name`, if
    /// given, must be `name`. Absent: the built-in pattern of that name, switched on or
    /// off by `enabled`.
    #[serde(default)]
    pub pattern: Option<Value>,
    /// Whether it is in effect (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetGuardrailResult {
    pub success: bool,
    pub guardrail: GuardrailEntry,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetGuardrailRequest {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResetGuardrailResult {
    pub success: bool,
    pub name: String,
    /// A built-in pattern of this name is in effect again.
    pub builtin_restored: bool,
}

/// A validated change: the row to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRule {
    pub name: String,
    pub pattern: Option<Value>,
    pub enabled: bool,
}

/// The refusal of a new row past [`MAX_RULES`].
pub fn too_many_rules() -> CoordError {
    CoordError::new(
        ErrorCode::ResourceLimitExceeded,
        format!("the guardrail registry holds at most {MAX_RULES} rows; reset some first"),
    )
}

/// The answer to a reset of a name no row holds.
pub fn no_row(name: &str) -> CoordError {
    CoordError::new(
        ErrorCode::NotFound,
        format!("no guardrail row named {name}: nothing was changed under that name"),
    )
}

/// A pattern name: 1 to 64 letters, digits, `-`, `_`, `.`.
pub fn validate_name(name: &str) -> CoordResult<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(CoordError::new(
            ErrorCode::InvalidGuardrail,
            "name: 1 to 64 letters, digits, '-', '_' or '.'",
        )
        .with_detail("field", "name"))
    }
}

/// The shape of a change (what only the pattern compiler can judge — globs, categories,
/// actions — is checked by the service).
pub fn validate_set(req: SetGuardrailRequest) -> CoordResult<NewRule> {
    let name = validate_name(&req.name)?;
    let bad = |m: String| CoordError::new(ErrorCode::InvalidGuardrail, m).with_detail("field", "pattern");
    let pattern = match req.pattern {
        None => None,
        Some(Value::Object(mut o)) => {
            match o.get("name") {
                None => {
                    o.insert("name".into(), Value::String(name.clone()));
                }
                Some(Value::String(n)) if *n == name => {}
                Some(other) => return Err(bad(format!("pattern.name {other} is not the name {name}"))),
            }
            let p = Value::Object(o);
            if p.to_string().len() > MAX_PATTERN_BYTES {
                return Err(bad(format!("a pattern is at most {MAX_PATTERN_BYTES} bytes of JSON")));
            }
            Some(p)
        }
        Some(other) => return Err(bad(format!("pattern must be an object, not {other}"))),
    };
    Ok(NewRule {
        name,
        pattern,
        enabled: req.enabled.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_are_validated() {
        let set = |name: &str, pattern: Option<Value>| {
            validate_set(SetGuardrailRequest {
                name: name.into(),
                pattern,
                enabled: None,
            })
        };
        let ok = set("my-rule", Some(json!({"program": "x"}))).unwrap();
        assert_eq!(ok.pattern.unwrap()["name"], "my-rule");
        assert!(ok.enabled);
        assert!(set("kubectl-mutate", None).unwrap().pattern.is_none());
        for (name, pattern) in [
            ("", None),
            ("a b", None),
            (&"x".repeat(65)[..], None),
            ("ok", Some(json!("text"))),
            ("ok", Some(json!({"name": "other"}))),
            ("ok", Some(json!({"reason": "x".repeat(MAX_PATTERN_BYTES)}))),
        ] {
            let e = set(name, pattern).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidGuardrail, "{name}");
        }
    }
}
