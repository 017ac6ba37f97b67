//! The registry's own rules, checked for every operation: names, texts, schemas,
//! exposure on every door (or a stated reason), HTTP bindings that fit the request type,
//! examples that parse — and `docs/operations.md` generated from it.

use coord_service::{Http, Input, Method, ops, registry};
use serde_json::Value;
use std::collections::HashSet;

fn is_snake_case(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with('_')
        && !s.ends_with('_')
        && !s.contains("__")
}

#[test]
fn names_are_unique_snake_case_and_texts_are_usable() {
    let mut seen = HashSet::new();
    for op in ops() {
        assert!(is_snake_case(op.name), "{} is not snake_case", op.name);
        assert!(seen.insert(op.name), "{} is registered twice", op.name);
        assert!(registry::op(op.name).is_some_and(|o| std::ptr::eq(o, op)));
        assert!(
            !op.summary.is_empty() && op.summary.len() <= 120,
            "{}: summary",
            op.name
        );
        // A model must be able to act on it: what it does, and what it answers.
        assert!(op.description.len() >= 80, "{}: description too short", op.name);
        assert!(
            op.description.to_lowercase().contains("answer") || op.description.starts_with("List"),
            "{}: the description should say what it answers",
            op.name
        );
    }
    assert!(registry::op_named("drop_database").is_err());
}

#[test]
fn every_operation_is_on_every_door_or_says_why_not() {
    for op in ops() {
        assert!(
            !op.http.is_empty() || !op.not_http.is_empty(),
            "{} has no HTTP route and no reason",
            op.name
        );
        assert!(
            op.http.is_empty() || op.not_http.is_empty(),
            "{}: route and reason",
            op.name
        );
        // Every operation is an MCP tool today; a future exception states its reason.
        assert!(op.is_mcp_tool() || !op.not_mcp.is_empty(), "{}", op.name);
    }
}

#[test]
fn input_schemas_are_objects_and_examples_fit_them() {
    for op in ops() {
        let schema = (op.input_schema)();
        assert_eq!(
            schema.get("type").and_then(Value::as_str),
            Some("object"),
            "{}",
            op.name
        );
        assert!(
            !schema.contains_key("title"),
            "{}: the root title is noise to a model",
            op.name
        );
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let example: Value = serde_json::from_str(op.example).unwrap_or_else(|e| panic!("{}: example: {e}", op.name));
        for key in example.as_object().expect("examples are objects").keys() {
            assert!(
                props.contains_key(key),
                "{}: example field {key} is not in the schema",
                op.name
            );
        }
        for required in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let field = required.as_str().unwrap();
            assert!(
                example.get(field).is_some(),
                "{}: the example lacks required {field}",
                op.name
            );
        }
        for field in op.path_fields {
            assert!(
                props.contains_key(*field),
                "{}: path field {field} is not a request field",
                op.name
            );
        }
    }
}

#[test]
fn http_bindings_fit_their_requests() {
    let mut routes = HashSet::new();
    for op in ops() {
        let schema = (op.input_schema)();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for Http {
            method, path, input, ..
        } in op.http
        {
            assert!(path.starts_with('/'), "{}: {path}", op.name);
            assert!(
                routes.insert((*method, *path)),
                "{} {path} is bound twice",
                method.as_str()
            );
            match input {
                Input::Body => assert_eq!(*method, Method::Post, "{}: GET has no body", op.name),
                Input::Path(name) => {
                    assert!(path.contains(&format!("{{{name}}}")) || path.contains(&format!("{{*{name}}}")));
                    assert!(props.contains_key(*name), "{}: path parameter {name}", op.name);
                }
                Input::Query => assert_eq!(*method, Method::Get, "{}: queries are for GET", op.name),
                Input::None => {
                    assert_eq!(*method, Method::Get, "{}: a POST reads its body", op.name);
                    assert!(!path.contains('{'), "{}: {path}", op.name);
                }
            }
        }
    }
}

#[test]
fn the_operations_document_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operations.md");
    let generated = registry::markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(path, &generated).expect("write docs/operations.md");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/operations.md is stale: run `UPDATE_DOCS=1 cargo test -p coord-service --test registry`"
    );
}

/// The guardrails refuse a person's decisions made through `coord call` from an agent's
/// tools by name (`coord_guardrails::rules::PERSON_OPERATIONS`): that list must hold every
/// operation that changes something and needs an administrator (an administrative
/// permission, or operator access), and nothing else.
#[test]
fn the_guardrails_know_every_person_decision() {
    use coord_domain::access::{Access, Effect};
    let want: std::collections::BTreeSet<&str> = ops()
        .iter()
        .filter(|op| op.effect != Effect::Read)
        .filter(|op| op.need.permission.is_administrative() || op.access == Access::Operator)
        .map(|op| op.name)
        .collect();
    let listed: std::collections::BTreeSet<&str> = coord_guardrails::rules::PERSON_OPERATIONS.iter().copied().collect();
    assert_eq!(listed, want);
}
