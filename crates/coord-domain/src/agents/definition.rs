//! Agent definitions in the format agents already use: Claude Code's
//! `.claude/agents/<name>.md`, YAML front matter between `---` lines and a body that is
//! the agent's system prompt. Every problem is reported with its field, all at once.

use super::{KNOWN_TOOLS, WRITE_TOOLS, WorkerProfile};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const MAX_DEFINITION_BYTES: usize = 64 * 1024;
pub const MAX_NAME_LEN: usize = 64;
pub const MAX_DESCRIPTION_LEN: usize = 1024;
pub const MAX_TURNS: u64 = 500;

/// One problem of a definition: the field (`tools[2]`, `name`, `body`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// A valid definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    pub profile: WorkerProfile,
    /// Where the profile came from: `profile` (the field), `spec 003` (the agent's name),
    /// `tools` (a write tool listed) or `default` (least privilege).
    pub profile_from: String,
    /// The built-in tools the agent gets: its `tools:` (or its profile's, when absent)
    /// less `disallowedTools:`; never more than the profile's.
    pub tools: Vec<String>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// The body: the agent's system prompt.
    pub prompt: String,
}

impl AgentDefinition {
    /// Whether `runtime` itself keeps the agent to its `tools` (only Claude Code has a
    /// tool list; for the others the sandbox is all there is).
    pub fn tools_enforced_by(&self, runtime: super::Runtime) -> bool {
        runtime == super::Runtime::Claude
    }
}

/// Front-matter fields coord reads.
const FIELDS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "maxTurns",
    "profile",
    "color",
    "effort",
];

/// Claude Code fields that would widen what the profile decides: refused, not ignored.
const DECIDED_BY_COORD: &[(&str, &str)] = &[
    ("permissionMode", "coord decides the permission mode from the profile"),
    (
        "mcpServers",
        "a launched agent gets coord's MCP server and nothing else",
    ),
    ("hooks", "a launched agent runs coord's hooks and no others"),
    ("isolation", "coord runs every launch in its own sandbox"),
    ("background", "coord supervises the launch"),
    ("memory", "coord's memory is reached through its MCP tools"),
    ("skills", "a launched agent loads no skills"),
    ("initialPrompt", "the task is the prompt"),
];

fn split_front_matter(text: &str) -> Result<(&str, &str), FieldError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| FieldError::new("front_matter", "missing: the file must start with a line `---`"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err(FieldError::new(
        "front_matter",
        "not closed: add a line `---` after the last field",
    ))
}

/// A tool list: a comma- or space-separated string, or a list of strings.
fn tool_list(field: &str, v: &Value, errors: &mut Vec<FieldError>) -> Vec<(String, String)> {
    let items: Vec<(String, Value)> = match v {
        Value::String(s) => s
            .split([',', ' '])
            .filter(|t| !t.trim().is_empty())
            .enumerate()
            .map(|(i, t)| (format!("{field}[{i}]"), Value::String(t.trim().to_string())))
            .collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("{field}[{i}]"), t.clone()))
            .collect(),
        Value::Null => Vec::new(),
        _ => {
            errors.push(FieldError::new(
                field,
                "give a list of tool names, or one string of names separated by commas",
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (at, t) in items {
        match t {
            Value::String(name) if KNOWN_TOOLS.contains(&name.as_str()) || is_coord_mcp(&name) => out.push((at, name)),
            Value::String(name) if name.starts_with("mcp__") => errors.push(FieldError::new(
                at,
                format!("{name:?}: a launched agent has coord's MCP server only (mcp__coord or mcp__coord__<tool>)"),
            )),
            Value::String(name) => errors.push(FieldError::new(
                at,
                format!(
                    "unknown tool {name:?} (known: {}, mcp__coord, mcp__coord__<tool>)",
                    KNOWN_TOOLS.join(", ")
                ),
            )),
            _ => errors.push(FieldError::new(at, "not a tool name (a string)")),
        }
    }
    out
}

fn is_coord_mcp(name: &str) -> bool {
    name == "mcp__coord"
        || name.strip_prefix("mcp__coord__").is_some_and(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

fn string(field: &str, v: Option<&Value>, max: usize, errors: &mut Vec<FieldError>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => {
            errors.push(FieldError::new(field, "empty"));
            None
        }
        Some(Value::String(s)) if s.chars().count() > max => {
            errors.push(FieldError::new(field, format!("longer than {max} characters")));
            None
        }
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(_) => {
            errors.push(FieldError::new(field, "not a string"));
            None
        }
    }
}

/// Reads a definition file's text. `stem` is the file name without `.md` (used in the
/// error when `name` is missing). Errors list every problem found.
pub fn parse_definition(text: &str) -> Result<AgentDefinition, Vec<FieldError>> {
    if text.len() > MAX_DEFINITION_BYTES {
        return Err(vec![FieldError::new(
            "file",
            format!("larger than {MAX_DEFINITION_BYTES} bytes"),
        )]);
    }
    let (yaml, body) = split_front_matter(text).map_err(|e| vec![e])?;
    let value: Value = if yaml.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or("unreadable YAML").to_string();
            vec![FieldError::new("front_matter", format!("not YAML: {first}"))]
        })?
    };
    let Value::Object(map) = value else {
        return Err(vec![FieldError::new(
            "front_matter",
            "must be a mapping of fields (name: ..., description: ...)",
        )]);
    };
    let mut errors = Vec::new();
    for key in map.keys() {
        if FIELDS.contains(&key.as_str()) {
            continue;
        }
        match DECIDED_BY_COORD.iter().find(|(k, _)| k == key) {
            Some((_, why)) => errors.push(FieldError::new(key.as_str(), format!("not allowed: {why}"))),
            None => errors.push(FieldError::new(
                key.as_str(),
                format!("unknown field (known: {})", FIELDS.join(", ")),
            )),
        }
    }
    let name = string("name", map.get("name"), MAX_NAME_LEN, &mut errors);
    let absent = |k: &str| map.get(k).is_none_or(Value::is_null);
    match &name {
        None if absent("name") => errors.push(FieldError::new("name", "missing")),
        Some(n)
            if !n
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            errors.push(FieldError::new(
                "name",
                format!("{n:?}: use lowercase letters, digits and '-'"),
            ))
        }
        _ => {}
    }
    let description = string("description", map.get("description"), MAX_DESCRIPTION_LEN, &mut errors);
    if absent("description") {
        errors.push(FieldError::new("description", "missing"));
    }
    let model = string("model", map.get("model"), 100, &mut errors);
    let max_turns = match map.get("maxTurns") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64().filter(|t| (1..=MAX_TURNS).contains(t)) {
            Some(t) => u32::try_from(t).ok(),
            None => {
                errors.push(FieldError::new("maxTurns", format!("give 1 to {MAX_TURNS}")));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new("maxTurns", "not a number"));
            None
        }
    };
    let listed = map.get("tools").map(|v| tool_list("tools", v, &mut errors));
    let denied = map
        .get("disallowedTools")
        .map(|v| tool_list("disallowedTools", v, &mut errors))
        .unwrap_or_default();
    let explicit = match map.get("profile") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match WorkerProfile::parse(s) {
            Some(p) => Some(p),
            None => {
                errors.push(FieldError::new(
                    "profile",
                    format!("{s:?} is not a profile: use read_only, write, verification or design"),
                ));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new("profile", "not a string"));
            None
        }
    };
    let writes = listed
        .as_ref()
        .is_some_and(|l| l.iter().any(|(_, t)| WRITE_TOOLS.contains(&t.as_str())));
    let (profile, profile_from) = match (explicit, name.as_deref().and_then(WorkerProfile::of_spec_agent)) {
        (Some(p), _) => (p, "profile"),
        (None, Some(p)) => (p, "spec 003"),
        (None, None) if writes => (WorkerProfile::Write, "tools"),
        (None, None) => (WorkerProfile::ReadOnly, "default"),
    };
    let mut tools: Vec<String> = Vec::new();
    match &listed {
        Some(l) => {
            for (at, t) in l {
                if !is_coord_mcp(t) && !profile.tools().contains(&t.as_str()) {
                    errors.push(FieldError::new(
                        at.as_str(),
                        format!(
                            "{t:?} is not allowed by profile {profile} (its tools: {})",
                            profile.tools().join(", ")
                        ),
                    ));
                } else if !is_coord_mcp(t) && !tools.contains(t) {
                    tools.push(t.clone());
                }
            }
        }
        None => tools = profile.tools().iter().map(|t| t.to_string()).collect(),
    }
    tools.retain(|t| !denied.iter().any(|(_, d)| d == t));
    let prompt = body.trim().to_string();
    if errors.is_empty() {
        Ok(AgentDefinition {
            name: name.unwrap_or_default(),
            description: description.unwrap_or_default(),
            profile,
            profile_from: profile_from.into(),
            tools,
            model,
            max_turns,
            prompt,
        })
    } else {
        Err(errors)
    }
}
