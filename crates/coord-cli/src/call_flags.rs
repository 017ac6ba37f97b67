//! `coord call OPERATION --field value …`: the command-line form of every operation,
//! read from its request's JSON schema (the one MCP and OpenAPI publish), so an
//! operation has flags the day it exists and no hand-written command per operation.
//!
//! A flag is a request field in kebab case (`--file-path` is `file_path`; the snake-case
//! spelling is accepted too). Its value is read by the field's type: numbers and booleans
//! as such (a bare boolean flag is `true`), a list field repeats (`--paths a --paths b`),
//! an object or untyped field takes JSON; `--field=VALUE` is the spelling for a value
//! that itself starts with `--`. The conversion checks only what it needs to
//! build JSON; the request's rules are the operation's, checked by the pipeline as on
//! every door.

use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::{Map, Value};

/// How a flag's text becomes a field's JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    /// A list: the flag repeats, each value read as the item's kind.
    List(Box<Kind>),
    /// Text, or a JSON object or list (`details` of `remember`): text that starts with
    /// `{` or `[` is JSON, anything else is text.
    TextOrJson,
    /// An object, a union of shapes or an untyped value: the text is JSON (a bare word
    /// that is not JSON is taken as a string, and the pipeline judges it; text that looks
    /// like JSON must be JSON).
    Json,
}

impl Kind {
    /// How `--help` names it.
    pub fn name(&self) -> String {
        match self {
            Kind::String => "text".into(),
            Kind::Integer => "integer".into(),
            Kind::Number => "number".into(),
            Kind::Boolean => "true|false".into(),
            Kind::List(inner) => format!("{}, repeatable", inner.name()),
            Kind::TextOrJson => "text|JSON".into(),
            Kind::Json => "JSON".into(),
        }
    }
}

/// One flag of an operation, as `coord call OP --help` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    pub field: String,
    pub kind: Kind,
    /// The values the schema allows, when it lists them (`low`, `normal`, …).
    pub choices: Vec<String>,
    pub required: bool,
    pub description: String,
}

impl Flag {
    pub fn spelling(&self) -> String {
        format!("--{}", self.field.replace('_', "-"))
    }
}

/// The flags of a request schema, in the schema's order of properties.
pub fn flags(schema: &Map<String, Value>) -> Vec<Flag> {
    let defs = schema.get("$defs").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(field, s)| Flag {
            field: field.clone(),
            kind: kind(s, defs, 0),
            choices: choices(s, defs, 0),
            required: required.contains(&field.as_str()),
            description: description(s, defs),
        })
        .collect()
}

fn resolve<'a>(s: &'a Value, defs: Option<&'a Map<String, Value>>) -> &'a Value {
    match s
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(name) => defs.and_then(|d| d.get(name)).unwrap_or(s),
        None => s,
    }
}

/// The values an enumeration allows: `enum`, `const` alternatives, through references,
/// optional wrappers and lists.
fn choices(s: &Value, defs: Option<&Map<String, Value>>, depth: usize) -> Vec<String> {
    let s = resolve(s, defs);
    if depth > 8 {
        return Vec::new();
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(Value::as_str).map(str::to_string).collect();
    }
    if let Some(c) = s.get("const").and_then(Value::as_str) {
        return vec![c.to_string()];
    }
    if let Some(items) = s.get("items") {
        return choices(items, defs, depth + 1);
    }
    s.get("anyOf")
        .or_else(|| s.get("oneOf"))
        .and_then(Value::as_array)
        .map(|alts| alts.iter().flat_map(|a| choices(a, defs, depth + 1)).collect())
        .unwrap_or_default()
}

fn description(s: &Value, defs: Option<&Map<String, Value>>) -> String {
    [s, resolve(s, defs)]
        .iter()
        .find_map(|v| v.get("description").and_then(Value::as_str))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A schema's kind: `null` alternatives (optional fields) set aside, references followed
/// (bounded: a recursive type is JSON).
fn kind(s: &Value, defs: Option<&Map<String, Value>>, depth: usize) -> Kind {
    if depth > 8 {
        return Kind::Json;
    }
    let s = resolve(s, defs);
    if let Some(alts) = s.get("anyOf").or_else(|| s.get("oneOf")).and_then(Value::as_array) {
        let kinds: Vec<Kind> = alts
            .iter()
            .filter(|a| resolve(a, defs).get("type").and_then(Value::as_str) != Some("null"))
            .map(|a| kind(a, defs, depth + 1))
            .collect();
        return match kinds.split_first() {
            Some((first, rest)) if rest.iter().all(|k| k == first) => first.clone(),
            _ if kinds.contains(&Kind::String) => Kind::TextOrJson,
            _ => Kind::Json,
        };
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        // `enum`/`const` without a type: strings in every request type coord has.
        _ if s.get("enum").is_some() || s.get("const").is_some_and(Value::is_string) => vec!["string"],
        _ => Vec::new(),
    };
    match types.as_slice() {
        ["string"] => Kind::String,
        ["integer"] => Kind::Integer,
        ["number"] => Kind::Number,
        ["boolean"] => Kind::Boolean,
        ["array"] => Kind::List(Box::new(
            s.get("items").map_or(Kind::Json, |i| kind(i, defs, depth + 1)),
        )),
        // `["string", "object"]`: text, or JSON when it looks like JSON.
        many if many.len() > 1 && many.contains(&"string") => Kind::TextOrJson,
        _ => Kind::Json,
    }
}

fn bad(flag: &str, message: String) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, &field_of(flag), message)
}

fn value(kind: &Kind, flag: &str, text: &str) -> CoordResult<Value> {
    match kind {
        Kind::String => Ok(Value::String(text.into())),
        Kind::Integer => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| bad(flag, format!("{flag} takes a whole number, not {text:?}"))),
        Kind::Number => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| bad(flag, format!("{flag} takes a number, not {text:?}"))),
        Kind::Boolean => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(bad(flag, format!("{flag} takes true or false, not {text:?}"))),
        },
        Kind::List(inner) => value(inner, flag, text),
        Kind::TextOrJson if !text.trim_start().starts_with(['{', '[']) => Ok(Value::String(text.into())),
        Kind::TextOrJson | Kind::Json => match serde_json::from_str(text) {
            Ok(v) => Ok(v),
            Err(e) if text.trim_start().starts_with(['{', '[', '"']) => Err(CoordError::field(
                ErrorCode::InvalidJson,
                &field_of(flag),
                format!("{flag} is not valid JSON: {e}"),
            )),
            Err(_) => Ok(Value::String(text.into())),
        },
    }
}

/// The request field a flag names: `--file-path` is `file_path`.
fn field_of(flag: &str) -> String {
    let name = flag.strip_prefix("--").unwrap_or(flag);
    name.split_once('=').map_or(name, |(n, _)| n).replace('-', "_")
}

/// The request `base` (a JSON object, `{}` when none was given) with the fields the
/// flags name set: a flag replaces the same field of `base` (a list flag its whole list).
/// Unknown or repeated flags, missing values and values of the wrong kind are refused
/// with the flag named; `globals` gives coord's own options (asked only for an unknown
/// flag: building them costs the whole grammar), named in the hint when one is
/// given after the operation.
pub fn apply(
    op: &str,
    schema: &Map<String, Value>,
    base: Value,
    args: &[String],
    globals: &dyn Fn() -> Vec<String>,
) -> CoordResult<Value> {
    let known = flags(schema);
    let mut request = match base {
        Value::Object(o) => o,
        // Not an object: the pipeline refuses it with the operation's own message.
        other if args.is_empty() => return Ok(other),
        _ => return Err(bad("request", "flags add fields to a JSON object request".into())),
    };
    let mut lists: Map<String, Value> = Map::new();
    let mut given: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = known_flag(op, &known, &args[i], globals)?;
        let spelled = flag.spelling();
        let next = args.get(i + 1).filter(|n| !n.starts_with("--"));
        let text = match (inline, next) {
            (Some(v), _) => v,
            // The word after a flag is its value (`--force false`); a bare boolean is true.
            (None, Some(v)) => {
                i += 1;
                v.clone()
            }
            (None, None) if flag.kind == Kind::Boolean => "true".into(),
            (None, None) => {
                let m = format!(
                    "{spelled} needs a value ({}); one that starts with -- is written {spelled}=VALUE",
                    flag.kind.name()
                );
                return Err(bad(&spelled, m));
            }
        };
        let v = value(&flag.kind, &spelled, &text)?;
        if matches!(flag.kind, Kind::List(_)) {
            let entry = lists
                .entry(flag.field.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = entry {
                items.push(v);
            }
        } else if given.contains(&flag.field.as_str()) {
            return Err(bad(&spelled, format!("{spelled} is given twice; it takes one value")));
        } else {
            given.push(&flag.field);
            request.insert(flag.field.clone(), v);
        }
        i += 1;
    }
    request.extend(lists);
    Ok(Value::Object(request))
}

/// The flag `arg` names, and its value when written `--flag=VALUE`.
fn known_flag<'a>(
    op: &str,
    known: &'a [Flag],
    arg: &str,
    globals: &dyn Fn() -> Vec<String>,
) -> CoordResult<(&'a Flag, Option<String>)> {
    let Some(body) = arg
        .strip_prefix("--")
        .filter(|b| !b.is_empty() && !b.starts_with(['-', '=']))
    else {
        return Err(bad(
            "request",
            format!(
                "{arg:?} is not a flag: give a request as one JSON object before the flags (`coord call {op} --help`)"
            ),
        ));
    };
    let (name, inline) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (body, None),
    };
    let field = name.replace('-', "_");
    if let Some(flag) = known.iter().find(|f| f.field == field) {
        return Ok((flag, inline));
    }
    let all: Vec<String> = known.iter().map(Flag::spelling).collect();
    let list = if all.is_empty() {
        "none".to_string()
    } else {
        all.join(", ")
    };
    let mut message = format!("{op} has no flag --{name}; its flags: {list}");
    if globals().iter().any(|g| g == name) {
        message.push_str(&format!(
            " (--{name} is an option of coord itself: put it before `call`)"
        ));
    }
    Err(bad(&format!("--{name}"), message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        let s = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The file.\n  Relative."},
                "ttl_minutes": {"type": ["integer", "null"]},
                "ratio": {"type": "number"},
                "force": {"type": "boolean"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "counts": {"type": "array", "items": {"type": "integer"}},
                "mode": {"$ref": "#/$defs/Mode"},
                "who": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                "meta": {"type": "object"},
                "details": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]},
                "any": {},
                "note": {"type": ["string", "object", "null"]}
            },
            "required": ["file_path"],
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"], "description": "A mode."}}
        });
        s.as_object().unwrap().clone()
    }

    fn run(args: &[&str]) -> CoordResult<Value> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        apply("op", &schema(), json!({}), &args, &Vec::new)
    }

    #[test]
    fn kinds_from_the_schema() {
        let f = flags(&schema());
        let by = |n: &str| f.iter().find(|x| x.field == n).unwrap().clone();
        assert_eq!(by("file_path").kind, Kind::String);
        assert!(by("file_path").required);
        assert_eq!(by("file_path").description, "The file. Relative.");
        assert_eq!(by("ttl_minutes").kind, Kind::Integer);
        assert!(!by("ttl_minutes").required);
        assert_eq!(by("ratio").kind, Kind::Number);
        assert_eq!(by("force").kind, Kind::Boolean);
        assert_eq!(by("paths").kind, Kind::List(Box::new(Kind::String)));
        assert_eq!(by("mode").kind, Kind::String);
        assert_eq!(by("mode").description, "A mode.");
        assert_eq!(by("who").kind, Kind::String);
        assert_eq!(by("meta").kind, Kind::Json);
        assert_eq!(by("details").kind, Kind::TextOrJson);
        assert_eq!(by("note").kind, Kind::TextOrJson);
        assert_eq!(by("mode").choices, ["a", "b"]);
        assert_eq!(by("who").choices, ["a", "b"]);
        assert!(by("file_path").choices.is_empty());
        assert_eq!(by("any").kind, Kind::Json);
        assert_eq!(by("file_path").spelling(), "--file-path");
    }

    #[test]
    fn flags_become_fields() {
        let cases: &[(&[&str], Value)] = &[
            (&["--file-path", "src/a.rs"], json!({"file_path": "src/a.rs"})),
            (&["--file_path=src/a.rs"], json!({"file_path": "src/a.rs"})),
            (&["--ttl-minutes", "30"], json!({"ttl_minutes": 30})),
            (&["--ratio=0.5"], json!({"ratio": 0.5})),
            (&["--force"], json!({"force": true})),
            (&["--force", "false"], json!({"force": false})),
            (&["--force", "--mode", "a"], json!({"force": true, "mode": "a"})),
            (&["--paths", "a", "--paths", "b"], json!({"paths": ["a", "b"]})),
            (&["--counts", "1", "--counts=2"], json!({"counts": [1, 2]})),
            (&["--meta", r#"{"k":1}"#], json!({"meta": {"k": 1}})),
            (&["--any", "word"], json!({"any": "word"})),
            (&["--details", "42"], json!({"details": "42"})),
            (&["--details", "plain words"], json!({"details": "plain words"})),
            (&["--details", r#"{"k":1}"#], json!({"details": {"k": 1}})),
            // A value may start with one dash: a negative number is the pipeline's to judge.
            (&["--ttl-minutes", "-5"], json!({"ttl_minutes": -5})),
            (&[], json!({})),
        ];
        for (args, want) in cases {
            assert_eq!(&run(args).unwrap(), want, "{args:?}");
        }
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        let cases: &[(&[&str], &str, &str)] = &[
            (
                &["--nope", "x"],
                "nope",
                "op has no flag --nope; its flags: --file-path",
            ),
            (&["--ttl-minutes", "soon"], "ttl_minutes", "takes a whole number"),
            (&["--ratio", "x"], "ratio", "takes a number"),
            (&["--force=yes"], "force", "takes true or false"),
            (&["--file-path"], "file_path", "needs a value (text)"),
            (&["--file-path", "--force"], "file_path", "needs a value"),
            (&["stray"], "request", "is not a flag"),
            (&["---file-path", "x"], "request", "is not a flag"),
            (&["--"], "request", "is not a flag"),
            (&["--=x"], "request", "is not a flag"),
            (&["--nope=secret-value"], "nope", "op has no flag --nope;"),
            (&["--force", "False"], "force", "takes true or false"),
            (&["--file-path", "a", "--file-path", "b"], "file_path", "given twice"),
        ];
        for (args, field, message) in cases {
            let e = run(args).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{args:?}");
            assert_eq!(e.field.as_deref(), Some(*field), "{args:?}");
            assert!(e.message.contains(message), "{args:?}: {}", e.message);
        }
    }

    /// The flags a person would type for a JSON value of this kind.
    fn typed(kind: &Kind, v: &Value) -> String {
        match (kind, v) {
            (Kind::String, Value::String(s)) => s.clone(),
            (Kind::Json, _) => v.to_string(),
            (Kind::List(inner), _) => typed(inner, v),
            _ => v.to_string(),
        }
    }

    /// Every operation's documented example, typed as flags, is the same request: the
    /// schema of every request type reads as flags.
    #[test]
    fn every_example_of_the_registry_reads_as_flags() {
        for op in coord_service::ops() {
            let schema = (op.input_schema)();
            let example: Value = serde_json::from_str(op.example).unwrap();
            let known = flags(&schema);
            let mut args = Vec::new();
            for (field, v) in example.as_object().unwrap() {
                let flag = known
                    .iter()
                    .find(|f| &f.field == field)
                    .unwrap_or_else(|| panic!("{}: {field}", op.name));
                match (&flag.kind, v) {
                    (Kind::List(_), Value::Array(items)) => {
                        for item in items {
                            args.push(format!("{}={}", flag.spelling(), typed(&flag.kind, item)));
                        }
                    }
                    (kind, v) => args.push(format!("{}={}", flag.spelling(), typed(kind, v))),
                }
            }
            let got =
                apply(op.name, &schema, json!({}), &args, &Vec::new).unwrap_or_else(|e| panic!("{}: {e:?}", op.name));
            assert_eq!(got, example, "{}: {args:?}", op.name);
        }
    }

    #[test]
    fn json_that_does_not_parse_is_refused_and_globals_are_named() {
        for args in [
            &["--meta", "{bad"][..],
            &["--details", "{\"a\":"][..],
            &["--any", "[1,"][..],
        ] {
            let e = run(args).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidJson, "{args:?}");
            assert!(e.message.contains("is not valid JSON"), "{}", e.message);
        }
        let args = vec!["--agent-id".to_string(), "bob".into()];
        let e = apply("op", &schema(), json!({}), &args, &|| vec!["agent-id".into()]).unwrap_err();
        assert!(
            e.message.contains("an option of coord itself: put it before `call`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn flags_win_over_the_json_request() {
        let args = vec!["--ttl-minutes".to_string(), "5".into()];
        let got = apply(
            "op",
            &schema(),
            json!({"file_path": "a", "ttl_minutes": 1}),
            &args,
            &Vec::new,
        )
        .unwrap();
        assert_eq!(got, json!({"file_path": "a", "ttl_minutes": 5}));
        // A request that is not an object stays the pipeline's to refuse, unless flags add to it.
        assert_eq!(apply("op", &schema(), json!([1]), &[], &Vec::new).unwrap(), json!([1]));
        assert!(apply("op", &schema(), json!([1]), &args, &Vec::new).is_err());
    }
}
