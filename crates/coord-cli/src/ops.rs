//! `coord ops` and `coord call`: every operation of the registry, listed and callable
//! from the shell, with no per-operation code.

use crate::call_flags;
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::{Access, Effect, Principal};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::{Coordination, Method, OpEntry, op_named, ops};
use serde_json::{Value, json};
use std::io::Read;

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Agent => "agent",
        Access::Operator => "operator",
    }
}

fn effect_name(e: Effect) -> &'static str {
    match e {
        Effect::Read => "read",
        Effect::Write => "write",
        Effect::Destructive => "destructive",
    }
}

/// The HTTP routes of an operation as `POST /locks/acquire`.
pub fn routes(op: &coord_service::OpEntry) -> Vec<String> {
    op.http
        .iter()
        .map(|h| {
            let method = match h.method {
                Method::Get => "GET",
                Method::Post => "POST",
            };
            format!("{method} {}", h.path.replace("{*", "{"))
        })
        .collect()
}

/// `coord ops`.
pub fn list(out: Output) -> u8 {
    if out.json {
        let mut g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let all: Vec<Value> = ops()
            .iter()
            .map(|op| {
                json!({
                    "name": op.name,
                    "summary": op.summary,
                    "description": op.description,
                    "access": op.access,
                    "effect": op.effect,
                    "audit": op.audit,
                    "http": routes(op),
                    "mcp_tool": op.is_mcp_tool(),
                    "request_schema": (op.input_schema)(),
                    "response_schema": (op.response_schema)(&mut g).to_value(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({"success": true, "operations": all, "definitions": g.take_definitions(true)})
        );
        return 0;
    }
    let mut t = table(&["OPERATION", "ACCESS", "EFFECT", "HTTP", "MCP", "SUMMARY"]);
    for op in ops() {
        t.add_row(vec![
            op.name.to_string(),
            access_name(op.access).to_string(),
            effect_name(op.effect).to_string(),
            routes(op).join(", "),
            if op.is_mcp_tool() { "yes" } else { "no" }.to_string(),
            op.summary.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "\nRun one with `coord call <operation> --field value…` or `coord call <operation> '<json>'`;\n\
         `coord call <operation> --help` lists its flags, `coord ops --json` has the request schemas."
    );
    0
}

/// The request text of `coord call`: inline JSON, `@file`, `-` (stdin), or none (`{}`).
fn request_text(raw: Option<&str>) -> CoordResult<String> {
    let unreadable = |what: String, e: std::io::Error| {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "request",
            format!("cannot read {what}: {e}"),
        )
    };
    match raw {
        None => Ok("{}".into()),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| unreadable("standard input".into(), e))?;
            Ok(s)
        }
        Some(r) if r.starts_with('@') => {
            std::fs::read_to_string(&r[1..]).map_err(|e| unreadable(r[1..].to_string(), e))
        }
        Some(r) => Ok(r.to_string()),
    }
}

/// The request words of `coord call`: its JSON (or `@FILE`, `-`) and the flags after it.
fn request_words(args: &crate::args::CallArgs) -> (Option<&str>, &[String]) {
    match args.rest.split_first() {
        Some((first, rest)) if !first.starts_with("--") => (Some(first.as_str()), rest),
        _ => (None, args.rest.as_slice()),
    }
}

/// Whether `coord call OPERATION` asks for the operation's help (`--help` or `-h`
/// anywhere among its words).
pub fn help_asked(args: &crate::args::CallArgs) -> bool {
    args.help || args.rest.iter().any(|w| w == "--help" || w == "-h")
}

/// `coord call OPERATION --help`: printed without opening the coordinator.
pub fn help(args: &crate::args::CallArgs) -> u8 {
    match op_named(args.operation.as_deref().unwrap_or_default().trim()) {
        Ok(op) => {
            print!("{}", help_page(op));
            0
        }
        Err(e) => Output { json: true }.error(&e),
    }
}

/// `coord call`: the answer as JSON, the exit code by its outcome.
pub async fn call(args: &crate::args::CallArgs, coord: &dyn Coordination, ctx: &Context) -> u8 {
    // Always JSON: the answer's shape is the operation's, not a table's.
    let out = Output { json: true };
    let op = match op_named(args.operation.as_deref().unwrap_or_default().trim()) {
        Ok(op) => op,
        Err(e) => return out.error(&e),
    };
    let (given, flags) = request_words(args);
    // A request that is not JSON, or flags that do not fit it, still reach the pipeline,
    // so the refusal is audited.
    let request = request_text(given)
        .and_then(|text| {
            serde_json::from_str::<Value>(&text).map_err(|e| {
                let hint = if text.trim_start().starts_with(['{', '[']) {
                    String::new()
                } else {
                    format!(" (to give its fields as flags: `coord call {} --help`)", op.name)
                };
                CoordError::field(
                    ErrorCode::InvalidJson,
                    "request",
                    format!("the request is not valid JSON: {e}{hint}"),
                )
            })
        })
        .and_then(|base| call_flags::apply(op.name, &(op.input_schema)(), base, flags, &crate::args::global_options));
    let who = Principal::local(ctx.caller.clone());
    out.result(coord.invoke(op, &who, request).await, |_| String::new())
}

/// A request to `O` the command line could not build (a flag that is not JSON, a file
/// that cannot be read), refused through the pipeline so that it is audited as `O`, like
/// the refusals of every other door. (In remote mode the request never leaves this
/// machine, so only the embedded coordinator audits it; see [`coord_service::refuse`].)
pub async fn refused<O: coord_service::Operation>(
    out: Output,
    coord: &dyn Coordination,
    caller: &coord_domain::Caller,
    e: CoordError,
) -> u8 {
    out.error(&coord_service::refuse::<O, _>(coord, &Principal::local(caller.clone()), e).await)
}

/// A word quoted for a POSIX shell: `'…'`, a `'` inside written `'\''`.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The page of `coord call OPERATION --help`: the operation's definition and its flags,
/// from the registry (what `coord ops --json` gives machines).
fn help_page(op: &OpEntry) -> String {
    let mut s = format!("{}: {}\n\n", op.name, op.summary);
    if !op.description.is_empty() {
        s.push_str(&textwrap(op.description));
        s.push_str("\n\n");
    }
    s.push_str(&format!(
        "Usage: coord call {} [REQUEST] [--FIELD VALUE]...\n\n",
        op.name
    ));
    let flags = call_flags::flags(&(op.input_schema)());
    if flags.is_empty() {
        s.push_str("Flags: none (the request is {})\n");
    } else {
        let mut t = table(&["FLAG", "VALUE", "NEEDED", "DESCRIPTION"]);
        for f in &flags {
            let value = if f.choices.is_empty() {
                f.kind.name()
            } else {
                f.choices.join(" | ")
            };
            t.add_row(vec![
                f.spelling(),
                value,
                if f.required { "required" } else { "-" }.to_string(),
                f.description.clone(),
            ]);
        }
        // Descriptions wrap at 100 columns, as on a terminal of any width.
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        t.set_width(100);
        let rendered = t.to_string();
        let lines: Vec<&str> = rendered.lines().map(str::trim_end).collect();
        s.push_str(&format!("Flags (the request's fields):\n{}\n", lines.join("\n")));
        s.push_str(
            "A flag replaces the field of a JSON request given before the flags (a list flag, its\n\
             whole list); a value that starts with -- is written --field=VALUE.\n",
        );
    }
    let routes = routes(op);
    s.push_str(&format!(
        "\nAccess: {} · effect: {} · HTTP: {} · MCP tool: {}\n",
        access_name(op.access),
        effect_name(op.effect),
        if routes.is_empty() {
            "none".to_string()
        } else {
            routes.join(", ")
        },
        if op.is_mcp_tool() { "yes" } else { "no" },
    ));
    if op.example != "{}" && !op.example.is_empty() {
        s.push_str(&format!(
            "Example: coord call {} {}\n",
            op.name,
            shell_quoted(op.example)
        ));
    }
    s
}

/// Text re-flowed to lines of at most 88 characters.
fn textwrap(text: &str) -> String {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > 88 {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_sources() {
        assert_eq!(request_text(None).unwrap(), "{}");
        assert_eq!(request_text(Some(r#"{"a":1}"#)).unwrap(), r#"{"a":1}"#);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(request_text(Some(&format!("@{}", file.display()))).unwrap(), "{}");
        let e = request_text(Some("@/no/such/file.json")).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("request"));
    }
}
