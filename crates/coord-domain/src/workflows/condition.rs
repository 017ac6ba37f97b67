//! Edge conditions in CEL (the `cel` crate): not Turing-complete, bounded by a source
//! size and a parse depth, and checked when the workflow is defined — a syntax error or
//! a variable other than `result` and `task` is a definition error, not a surprise at
//! run time. Evaluation that fails (a missing field) or answers no bool takes no edge.

use serde_json::Value;

pub const MAX_SOURCE_BYTES: usize = 1024;
pub const MAX_DEPTH: u16 = 32;
/// The largest result a condition is evaluated on (a task's result may be larger).
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
/// What a condition may read: the upstream task's `result`, and `task` (`status`,
/// `attempts`, `failure_reason`, `error`).
pub const VARIABLES: &[&str] = &["result", "task"];

#[derive(Debug)]
pub struct Condition {
    program: cel::Program,
}

impl Condition {
    /// Compiles and checks `source`; the error says what is wrong, for people.
    pub fn compile(source: &str) -> Result<Condition, String> {
        if source.trim().is_empty() {
            return Err("empty: give a CEL expression such as result.status == \"passed\"".into());
        }
        if source.len() > MAX_SOURCE_BYTES {
            return Err(format!("longer than {MAX_SOURCE_BYTES} bytes"));
        }
        let parsed = cel::parser::Parser::new()
            .max_recursion_depth(MAX_DEPTH)
            .parse(source)
            .map_err(|e| parse_error(&e.to_string()))?;
        // Macros (all, exists, exists_one, map, filter) expand to comprehensions, loops
        // over the data whose cost grows with it (nested ones as a power of it): refused.
        if format!("{:?}", parsed.expr).contains("Comprehension(") {
            return Err(
                "uses a macro (all, exists, exists_one, map, filter): loops are not allowed in a condition; \
                        compare fields (result.failures == 0) or use size() and in"
                    .into(),
            );
        }
        for v in parsed.references().variables() {
            if !VARIABLES.contains(&v) {
                return Err(format!(
                    "unknown variable {v:?}: a condition reads result (the upstream task's result) and task (status, attempts, failure_reason, error)"
                ));
            }
        }
        let program = cel::Program::compile(source).map_err(|e| parse_error(&e.to_string()))?;
        Ok(Condition { program })
    }

    /// The condition on `(result, task)`: `Err` when it cannot be evaluated or does not
    /// answer a bool.
    pub fn evaluate(&self, (result, task): &(Value, Value)) -> Result<bool, String> {
        if result.to_string().len() > MAX_RESULT_BYTES {
            return Err(format!(
                "the result is larger than {MAX_RESULT_BYTES} bytes: not evaluated"
            ));
        }
        let mut ctx = cel::Context::default();
        ctx.add_variable("result", result.clone()).map_err(|e| e.to_string())?;
        ctx.add_variable("task", task.clone()).map_err(|e| e.to_string())?;
        match self.program.execute(&ctx) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("answered {}, not true or false", kind(&other))),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The parser's message, without its internals (`OtherError(ParseError { … })`).
fn parse_error(raw: &str) -> String {
    if raw.contains("Recursion limit") {
        return format!("nested more than {MAX_DEPTH} levels deep");
    }
    let line = first_line(raw);
    let line = match (line.find("msg: \""), line.rfind('"')) {
        (Some(at), Some(end)) if end > at + 6 => line[at + 6..end].to_string(),
        _ => line,
    };
    format!("not CEL: {line}")
}

/// What a value is, for people.
fn kind(v: &cel::Value) -> &'static str {
    match v {
        cel::Value::Int(_) | cel::Value::UInt(_) | cel::Value::Float(_) => "a number",
        cel::Value::String(_) => "a string",
        cel::Value::Null => "null",
        cel::Value::List(_) => "a list",
        cel::Value::Map(_) => "a map",
        _ => "a value",
    }
}

fn first_line(s: &str) -> String {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim().to_string()
}
