//! Agent definitions in the format agents already use: Claude Code's
//! `.claude/agents/<name>.md`, YAML front matter between `---` lines and a body that is
//! the agent's system prompt, and spec 002's `agents.json` entries. Every problem is
//! reported with its field, all at once.

use coord_domain::agents::definition::{MAX_DEFINITION_BYTES, MAX_DESCRIPTION_LEN, MAX_NAME_LEN, MAX_TURNS};
use coord_domain::agents::{AgentDefinition, FieldError, KNOWN_TOOLS, Runtime, WRITE_TOOLS, WorkerProfile};
use serde_json::Value;

/// Where a format keeps each field: Claude Code's `.md` front matter (camelCase, the body
/// is the prompt) or spec 002's `agents.json` (snake_case, an `id` and a display `name`).
struct Format {
    id: &'static str,
    display_name: Option<&'static str>,
    /// `None`: the body after the front matter.
    prompt: Option<&'static str>,
    tools: &'static str,
    tools_alias: Option<&'static str>,
    disallowed: &'static str,
    max_turns: &'static str,
    delegates_to: &'static str,
    parent: &'static str,
    /// Every field read (the rest are unknown).
    known: &'static [&'static str],
}

const MARKDOWN: Format = Format {
    id: "name",
    display_name: None,
    prompt: None,
    tools: "tools",
    tools_alias: None,
    disallowed: "disallowedTools",
    max_turns: "maxTurns",
    delegates_to: "delegatesTo",
    parent: "parent",
    known: &[
        "name",
        "description",
        "tools",
        "disallowedTools",
        "model",
        "maxTurns",
        "profile",
        "runtime",
        "delegatesTo",
        "parent",
        "color",
        "effort",
    ],
};

const JSON: Format = Format {
    id: "id",
    display_name: Some("name"),
    prompt: Some("system_prompt"),
    tools: "tools",
    tools_alias: Some("allowed_tools"),
    disallowed: "disallowed_tools",
    max_turns: "max_turns",
    delegates_to: "delegates_to",
    parent: "parent_id",
    known: &[
        "id",
        "name",
        "description",
        "system_prompt",
        "tools",
        "allowed_tools",
        "disallowed_tools",
        "model",
        "max_turns",
        "profile",
        "runtime",
        "delegates_to",
        "parent_id",
    ],
};

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
            Value::String(name) if KNOWN_TOOLS.contains(&name.as_str()) || is_coord_mcp(&name) || name == ALL_TOOLS => {
                out.push((at, name))
            }
            Value::String(name) if name.starts_with("mcp__") => errors.push(FieldError::new(
                at,
                format!("{name:?}: a launched agent has coord's MCP server only (mcp__coord or mcp__coord__<tool>)"),
            )),
            Value::String(name) => errors.push(FieldError::new(
                at,
                format!(
                    "unknown tool {name:?} (known: {}, mcp__coord, mcp__coord__<tool>, all)",
                    KNOWN_TOOLS.join(", ")
                ),
            )),
            _ => errors.push(FieldError::new(at, "not a tool name (a string)")),
        }
    }
    out
}

/// `tools: [all]` (spec 002): every tool of the agent's profile.
pub const ALL_TOOLS: &str = "all";

fn is_coord_mcp(name: &str) -> bool {
    name == "mcp__coord"
        || name.strip_prefix("mcp__coord__").is_some_and(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// An optional string field: trimmed, not empty, at most `max` characters.
pub(crate) fn string(field: &str, v: Option<&Value>, max: usize, errors: &mut Vec<FieldError>) -> Option<String> {
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

/// Reads a definition file's text (`.claude/agents/<name>.md`). Errors list every
/// problem found.
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
    from_fields(&map, &MARKDOWN, "", Some(body))
}

/// One entry of `agents.json` (spec 002's shape: `id`, `name`, `description`,
/// `system_prompt`, `tools`, `parent_id`, and coord's `profile`, `runtime`,
/// `delegates_to`, `model`, `max_turns`). `at` prefixes every field of an error
/// (`agents[2].`).
pub fn definition_from_json(value: &Value, at: &str) -> Result<AgentDefinition, Vec<FieldError>> {
    match value {
        Value::Object(map) => from_fields(map, &JSON, at, None),
        _ => Err(vec![FieldError::new(
            at.trim_end_matches('.'),
            "not an object: give {\"id\": ..., \"description\": ..., \"tools\": [...]}",
        )]),
    }
}

/// A list of agent names (`delegates_to`): each a name, or `*`.
fn name_list(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<String> {
    let items = match v {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(a)) => a.clone(),
        Some(_) => {
            errors.push(FieldError::new(field, "give a list of agent names (or \"*\" for any)"));
            return Vec::new();
        }
    };
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str().map(str::trim) {
            Some(n) if n == "*" || is_agent_name(n) => {
                if !out.iter().any(|o| o == n) {
                    out.push(n.to_string())
                }
            }
            Some(n) => errors.push(FieldError::new(
                format!("{field}[{i}]"),
                format!("{n:?}: an agent name (lowercase letters, digits and '-') or \"*\""),
            )),
            None => errors.push(FieldError::new(format!("{field}[{i}]"), "not a string")),
        }
    }
    out
}

fn is_agent_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME_LEN
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn from_fields(
    map: &serde_json::Map<String, Value>,
    f: &Format,
    at: &str,
    body: Option<&str>,
) -> Result<AgentDefinition, Vec<FieldError>> {
    let mut errors = Vec::new();
    let key = |k: &str| format!("{at}{k}");
    unknown_fields(map, f, at, &mut errors);
    let absent = |k: &str| map.get(k).is_none_or(Value::is_null);
    let name = string(&key(f.id), map.get(f.id), MAX_NAME_LEN, &mut errors);
    match &name {
        None if absent(f.id) => errors.push(FieldError::new(key(f.id), "missing")),
        Some(n) if !is_agent_name(n) => errors.push(FieldError::new(
            key(f.id),
            format!("{n:?}: use lowercase letters, digits and '-'"),
        )),
        _ => {}
    }
    let display_name = f
        .display_name
        .and_then(|k| string(&key(k), map.get(k), MAX_NAME_LEN * 2, &mut errors));
    let description = string(
        &key("description"),
        map.get("description"),
        MAX_DESCRIPTION_LEN,
        &mut errors,
    );
    if absent("description") {
        errors.push(FieldError::new(key("description"), "missing"));
    }
    let prompt = match (f.prompt, body) {
        (Some(k), _) => string(&key(k), map.get(k), MAX_DEFINITION_BYTES, &mut errors).unwrap_or_default(),
        (None, Some(b)) => b.trim().to_string(),
        (None, None) => String::new(),
    };
    let model = string(&key("model"), map.get("model"), 100, &mut errors);
    let max_turns = max_turns_field(&key(f.max_turns), map.get(f.max_turns), &mut errors);
    let tools_key = match f.tools_alias {
        Some(alias) if !absent(alias) => {
            if !absent(f.tools) {
                errors.push(FieldError::new(
                    key(alias),
                    format!("give {} or {alias}, not both", f.tools),
                ));
            }
            alias
        }
        _ => f.tools,
    };
    let listed = map.get(tools_key).map(|v| tool_list(&key(tools_key), v, &mut errors));
    let denied = map
        .get(f.disallowed)
        .map(|v| tool_list(&key(f.disallowed), v, &mut errors))
        .unwrap_or_default();
    let explicit = profile_field(&key("profile"), map.get("profile"), &mut errors);
    let runtime = runtime_field(&key("runtime"), map.get("runtime"), &mut errors);
    let delegates_to = name_list(&key(f.delegates_to), map.get(f.delegates_to), &mut errors);
    let parent = parent_field(&key(f.parent), map.get(f.parent), name.as_deref(), &mut errors);
    let (profile, profile_from, tools) = profile_and_tools(
        listed.as_deref(),
        &key(tools_key),
        explicit,
        name.as_deref(),
        &denied,
        &mut errors,
    );
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
            display_name,
            runtime,
            delegates_to,
            parent,
            children: Vec::new(),
        })
    } else {
        Err(errors)
    }
}

/// The fields of `map` that `f` does not read: each one coord decides, or unknown.
fn unknown_fields(map: &serde_json::Map<String, Value>, f: &Format, at: &str, errors: &mut Vec<FieldError>) {
    for k in map.keys() {
        if f.known.contains(&k.as_str()) {
            continue;
        }
        match DECIDED_BY_COORD.iter().find(|(d, _)| d == k) {
            Some((_, why)) => errors.push(FieldError::new(format!("{at}{k}"), format!("not allowed: {why}"))),
            None => errors.push(FieldError::new(
                format!("{at}{k}"),
                format!("unknown field (known: {})", f.known.join(", ")),
            )),
        }
    }
}

/// `max_turns`: 1 to [`MAX_TURNS`].
fn max_turns_field(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<u32> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64().filter(|t| (1..=MAX_TURNS).contains(t)) {
            Some(t) => u32::try_from(t).ok(),
            None => {
                errors.push(FieldError::new(field, format!("give 1 to {MAX_TURNS}")));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(field, "not a number"));
            None
        }
    }
}

/// `profile`, given explicitly.
fn profile_field(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<WorkerProfile> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match WorkerProfile::parse(s) {
            Some(p) => Some(p),
            None => {
                errors.push(FieldError::new(
                    field,
                    format!("{s:?} is not a profile: use read_only, write, verification or design"),
                ));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(field, "not a string"));
            None
        }
    }
}

/// `runtime`: claude, codex or aider.
fn runtime_field(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<Runtime> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match Runtime::parse(s) {
            Some(r) => Some(r),
            None => {
                errors.push(FieldError::new(field, format!("{s:?}: give claude, codex or aider")));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(field, "not a string"));
            None
        }
    }
}

/// `parent`: an agent name, not the agent's own (`name`).
fn parent_field(field: &str, v: Option<&Value>, name: Option<&str>, errors: &mut Vec<FieldError>) -> Option<String> {
    let parent = string(field, v, MAX_NAME_LEN, errors);
    if let Some(p) = &parent
        && !is_agent_name(p)
    {
        errors.push(FieldError::new(
            field,
            format!("{p:?}: an agent name (lowercase letters, digits and '-')"),
        ));
    }
    if let (Some(p), Some(n)) = (&parent, name)
        && p == n
    {
        errors.push(FieldError::new(field, "an agent cannot be its own parent"));
    }
    parent
}

/// The agent's profile, where it comes from, and its tools: those `listed` (at
/// `tools_field`; `all`: every tool of the profile) that the profile allows, else the
/// profile's, less those `denied`.
fn profile_and_tools(
    listed: Option<&[(String, String)]>,
    tools_field: &str,
    explicit: Option<WorkerProfile>,
    name: Option<&str>,
    denied: &[(String, String)],
    errors: &mut Vec<FieldError>,
) -> (WorkerProfile, &'static str, Vec<String>) {
    let all = listed.is_some_and(|l| l.iter().any(|(_, t)| t == ALL_TOOLS));
    if all && listed.is_some_and(|l| l.len() > 1) {
        errors.push(FieldError::new(
            tools_field,
            "\"all\" stands alone: it means every tool of the agent's profile",
        ));
    }
    let writes = listed.is_some_and(|l| l.iter().any(|(_, t)| WRITE_TOOLS.contains(&t.as_str())));
    let (profile, profile_from) = match (explicit, name.and_then(WorkerProfile::of_spec_agent)) {
        (Some(p), _) => (p, "profile"),
        (None, Some(p)) => (p, "spec 003"),
        (None, None) if writes => (WorkerProfile::Write, "tools"),
        (None, None) => (WorkerProfile::ReadOnly, "default"),
    };
    let mut tools: Vec<String> = Vec::new();
    match listed {
        Some(_) if all => tools = profile.tools().iter().map(|t| t.to_string()).collect(),
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
    (profile, profile_from, tools)
}
