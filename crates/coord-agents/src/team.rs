//! Declarative teams (`teams.yaml`, spec 001 "Declarative Team Composition"): a team's
//! members (name, role, capabilities, description, and an agent of the registry or a
//! worker profile), and its coordination rules (who may delegate to whom, how many run
//! at once, which queue they work). Every problem is reported at once with its path
//! (`agents[2].role: missing`, `agents[0].capabilities[1]: unknown capability "deploy"`).

use coord_domain::agents::{AgentDefinition, FieldError, Runtime, WorkerProfile};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The capabilities a member may declare (what `discover_agents` filters on).
pub const CAPABILITIES: &[&str] = &[
    "analysis",
    "coding",
    "debugging",
    "design",
    "documentation",
    "orchestration",
    "planning",
    "refactoring",
    "research",
    "review",
    "security",
    "testing",
];
pub const MAX_MEMBERS: usize = 50;
pub const MAX_CONCURRENT: u64 = 20;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    pub name: String,
    pub role: String,
    pub capabilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An agent of the registry, or …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// … a generic worker of this profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<WorkerProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// Where it works when spawned: shared (default) or worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<coord_domain::agents::isolation::Isolation>,
    /// Spawned by `coord team up`, on `task`.
    pub run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Team {
    pub name: String,
    pub members: Vec<Member>,
    /// The task type its members' tasks have.
    pub queue: String,
    /// At most this many members run at once.
    pub max_concurrent: u64,
    /// Who may delegate to whom (member names).
    pub delegation: BTreeMap<String, Vec<String>>,
}

const TEAM_FIELDS: &[&str] = &["name", "description", "agents", "coordination"];
const MEMBER_FIELDS: &[&str] = &[
    "name",
    "role",
    "capabilities",
    "description",
    "definition",
    "profile",
    "runtime",
    "isolation",
    "run",
    "task",
];
const RULE_FIELDS: &[&str] = &["queue", "max_concurrent", "delegation"];

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn unknown_fields(map: &Map<String, Value>, known: &[&str], at: &str, errors: &mut Vec<FieldError>) {
    for k in map.keys().filter(|k| !known.contains(&k.as_str())) {
        errors.push(FieldError::new(
            format!("{at}{k}"),
            format!("unknown field (known: {})", known.join(", ")),
        ));
    }
}

/// A required or optional string field.
fn text(
    map: &Map<String, Value>,
    key: &str,
    at: &str,
    required: bool,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let field = format!("{at}{key}");
    match map.get(key) {
        None | Some(Value::Null) if required => {
            errors.push(FieldError::new(field, "missing"));
            None
        }
        Some(Value::Bool(b)) => {
            errors.push(FieldError::new(
                field,
                format!("not a string: YAML read {b} (y, n, yes, no, on, off are booleans): quote it"),
            ));
            None
        }
        other => crate::definition::string(&field, other, max, errors),
    }
}

/// Reads a team file (YAML or JSON). `registry` answers the valid definition of an
/// agent of the workspace. Every problem is reported, each with its path.
pub fn parse_team(text_: &str, registry: &dyn Fn(&str) -> Option<AgentDefinition>) -> Result<Team, Vec<FieldError>> {
    let value: Value = serde_saphyr::from_str(text_).map_err(|e| {
        let first = e.to_string();
        vec![FieldError::new(
            "file",
            format!("not YAML: {}", first.lines().next().unwrap_or("unreadable")),
        )]
    })?;
    let Value::Object(top) = value else {
        return Err(vec![FieldError::new(
            "file",
            "must be a mapping (name: ..., agents: [...])",
        )]);
    };
    let mut errors = Vec::new();
    unknown_fields(&top, TEAM_FIELDS, "", &mut errors);
    let name = text(&top, "name", "", true, 64, &mut errors);
    if let Some(n) = &name
        && !is_name(n)
    {
        errors.push(FieldError::new(
            "name",
            format!("{n:?}: use lowercase letters, digits, '-' and '_'"),
        ));
    }
    text(&top, "description", "", false, 1024, &mut errors);
    let members = members(top.get("agents"), registry, &mut errors);
    let names = member_names(top.get("agents"), &mut errors);
    let queue = name.clone().unwrap_or_default();
    let max_concurrent = MAX_CONCURRENT.min(members.len().max(1) as u64);
    let (queue, max_concurrent, delegation) =
        coordination(top.get("coordination"), &names, queue, max_concurrent, &mut errors);
    delegation_allowed(&delegation, &members, registry, &mut errors);
    let running = members.iter().filter(|m| m.run).count() as u64;
    if running > max_concurrent {
        errors.push(FieldError::new(
            "coordination.max_concurrent",
            format!("{running} members are marked run: true, more than max_concurrent {max_concurrent}"),
        ));
    }
    if errors.is_empty() {
        Ok(Team {
            name: name.unwrap_or_default(),
            members,
            queue,
            max_concurrent,
            delegation,
        })
    } else {
        Err(errors)
    }
}

/// The team's members (`agents`): those that are valid.
fn members(
    agents: Option<&Value>,
    registry: &dyn Fn(&str) -> Option<AgentDefinition>,
    errors: &mut Vec<FieldError>,
) -> Vec<Member> {
    let mut members = Vec::new();
    match agents {
        None | Some(Value::Null) => errors.push(FieldError::new("agents", "missing: list the team's members")),
        Some(Value::Array(list)) if list.is_empty() => {
            errors.push(FieldError::new("agents", "empty: list the team's members"))
        }
        Some(Value::Array(list)) if list.len() > MAX_MEMBERS => {
            errors.push(FieldError::new("agents", format!("more than {MAX_MEMBERS} members")))
        }
        Some(Value::Array(list)) => {
            for (i, item) in list.iter().enumerate() {
                if let Some(m) = member(item, i, registry, errors) {
                    members.push(m);
                }
            }
        }
        Some(_) => errors.push(FieldError::new("agents", "not a list")),
    }
    members
}

/// The names the members (`agents`) give, valid or not, in order; a name given twice is
/// an error.
fn member_names(agents: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<Option<String>> {
    let names: Vec<Option<String>> = match agents {
        Some(Value::Array(list)) => list
            .iter()
            .map(|m| m.get("name").and_then(Value::as_str).map(|s| s.trim().to_string()))
            .collect(),
        _ => Vec::new(),
    };
    for (i, n) in names.iter().enumerate() {
        if let Some(n) = n
            && names[..i].iter().any(|o| o.as_deref() == Some(n))
        {
            errors.push(FieldError::new(
                format!("agents[{i}].name"),
                format!("{n:?} is a member twice"),
            ));
        }
    }
    names
}

/// The coordination rules (`coordination`): the queue and the most members running at
/// once (`queue` and `max_concurrent` unless given), and who may delegate to whom
/// (`names`: the members' names).
fn coordination(
    value: Option<&Value>,
    names: &[Option<String>],
    mut queue: String,
    mut max_concurrent: u64,
    errors: &mut Vec<FieldError>,
) -> (String, u64, BTreeMap<String, Vec<String>>) {
    let mut delegation = BTreeMap::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Object(rules)) => {
            unknown_fields(rules, RULE_FIELDS, "coordination.", errors);
            if let Some(q) = text(rules, "queue", "coordination.", false, 256, errors) {
                queue = q;
            }
            match rules.get("max_concurrent") {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_u64().is_some_and(|n| (1..=MAX_CONCURRENT).contains(&n)) => {
                    max_concurrent = n.as_u64().unwrap_or(1)
                }
                Some(_) => errors.push(FieldError::new(
                    "coordination.max_concurrent",
                    format!("give a number from 1 to {MAX_CONCURRENT}"),
                )),
            }
            match rules.get("delegation") {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => delegation = delegation_rules(map, names, errors),
                Some(_) => errors.push(FieldError::new(
                    "coordination.delegation",
                    "a mapping of member → members it may delegate to",
                )),
            }
        }
        Some(_) => errors.push(FieldError::new(
            "coordination",
            "a mapping (queue, max_concurrent, delegation)",
        )),
    }
    (queue, max_concurrent, delegation)
}

/// `coordination.delegation`: member → the members it may delegate to, each one of `names`.
fn delegation_rules(
    map: &Map<String, Value>,
    names: &[Option<String>],
    errors: &mut Vec<FieldError>,
) -> BTreeMap<String, Vec<String>> {
    let known = |n: &str| names.iter().flatten().any(|k| k == n);
    let mut delegation = BTreeMap::new();
    for (from, to) in map {
        let at = format!("coordination.delegation.{from}");
        if !known(from) {
            errors.push(FieldError::new(at.clone(), format!("no member {from:?}")));
        }
        let Some(list) = to.as_array() else {
            errors.push(FieldError::new(at, "give a list of member names"));
            continue;
        };
        let mut targets = Vec::new();
        for (k, t) in list.iter().enumerate() {
            match t.as_str() {
                Some(t) if known(t) => targets.push(t.to_string()),
                Some(t) => errors.push(FieldError::new(format!("{at}[{k}]"), format!("no member {t:?}"))),
                None => errors.push(FieldError::new(format!("{at}[{k}]"), "not a member name")),
            }
        }
        delegation.insert(from.clone(), targets);
    }
    delegation
}

/// Each delegation rule between two valid members, held against their agents' definitions.
fn delegation_allowed(
    delegation: &BTreeMap<String, Vec<String>>,
    members: &[Member],
    registry: &dyn Fn(&str) -> Option<AgentDefinition>,
    errors: &mut Vec<FieldError>,
) {
    // A rule is kept by the agents' definitions (a spawned agent delegates only as its
    // definition says): a rule they do not allow would never hold.
    for (from, targets) in delegation {
        let Some(f) = members.iter().find(|m| &m.name == from) else {
            continue;
        };
        for (k, t) in targets.iter().enumerate() {
            let Some(to) = members.iter().find(|m| &m.name == t) else {
                continue;
            };
            let allowed = match (&f.definition, &to.definition) {
                (Some(fd), Some(td)) => match (registry(fd), registry(td)) {
                    (Some(fd), Some(td)) => fd.may_delegate_to(&td),
                    _ => true,
                },
                (Some(fd), None) => registry(fd).is_some_and(|d| {
                    to.profile
                        .is_some_and(|p| d.may_delegate_to(&coord_domain::agents::spawn::generic_definition(p)))
                }),
                (None, _) => false,
            };
            if !allowed {
                errors.push(FieldError::new(
                    format!("coordination.delegation.{from}[{k}]"),
                    match &f.definition {
                        Some(fd) => format!(
                            "{from}'s agent {fd} does not delegate to {t}: add {} (or \"*\") to its delegates_to",
                            match (&to.definition, to.profile) {
                                (Some(d), _) => d.clone(),
                                (None, Some(p)) => coord_domain::agents::spawn::generic_definition(p).name,
                                (None, None) => t.clone(),
                            }
                        ),
                        None => format!(
                            "{from} is a generic {} worker: only an agent of the registry delegates",
                            f.profile.map_or("", WorkerProfile::name)
                        ),
                    },
                ));
            }
        }
    }
}

fn member(
    item: &Value,
    i: usize,
    registry: &dyn Fn(&str) -> Option<AgentDefinition>,
    errors: &mut Vec<FieldError>,
) -> Option<Member> {
    let at = format!("agents[{i}].");
    let Value::Object(map) = item else {
        errors.push(FieldError::new(
            format!("agents[{i}]"),
            "not a mapping (name: ..., role: ...)",
        ));
        return None;
    };
    let before = errors.len();
    unknown_fields(map, MEMBER_FIELDS, &at, errors);
    let name = text(map, "name", &at, true, 64, errors);
    if let Some(n) = &name
        && !is_name(n)
    {
        errors.push(FieldError::new(
            format!("{at}name"),
            format!("{n:?}: use lowercase letters, digits, '-' and '_'"),
        ));
    }
    let role = text(map, "role", &at, true, 64, errors);
    let description = text(map, "description", &at, false, 1024, errors);
    let capabilities = capabilities(map, &at, errors);
    let (definition, profile) = definition_or_profile(map, i, registry, errors);
    let runtime = text(map, "runtime", &at, false, 16, errors).and_then(|r| {
        let parsed = Runtime::parse(&r);
        if parsed.is_none() {
            errors.push(FieldError::new(
                format!("{at}runtime"),
                format!("{r:?}: give claude, codex or aider"),
            ));
        }
        parsed
    });
    let isolation = text(map, "isolation", &at, false, 16, errors).and_then(|i| {
        let parsed = coord_domain::agents::isolation::Isolation::parse(&i);
        if parsed.is_none() {
            errors.push(FieldError::new(
                format!("{at}isolation"),
                format!("{i:?}: give shared or worktree"),
            ));
        }
        parsed
    });
    let run = match map.get("run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.push(FieldError::new(format!("{at}run"), "true or false"));
            false
        }
    };
    let task = text(map, "task", &at, false, coord_domain::validate::MAX_LONG_TEXT, errors);
    if run && task.is_none() && !map.contains_key("task") {
        errors.push(FieldError::new(
            format!("{at}task"),
            "missing: a member marked run: true needs its task",
        ));
    }
    if errors.len() > before {
        return None;
    }
    Some(Member {
        name: name?,
        role: role?,
        capabilities,
        description,
        definition,
        profile,
        runtime,
        isolation,
        run,
        task,
    })
}

/// A member's `capabilities`, each one of [`CAPABILITIES`] (`at`: the member's path).
fn capabilities(map: &Map<String, Value>, at: &str, errors: &mut Vec<FieldError>) -> Vec<String> {
    let mut capabilities = Vec::new();
    match map.get("capabilities") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (k, c) in list.iter().enumerate() {
                match c.as_str().map(|c| c.trim().to_ascii_lowercase()) {
                    Some(c) if CAPABILITIES.contains(&c.as_str()) => capabilities.push(c),
                    Some(c) => errors.push(FieldError::new(
                        format!("{at}capabilities[{k}]"),
                        format!("unknown capability {c:?} (known: {})", CAPABILITIES.join(", ")),
                    )),
                    None => errors.push(FieldError::new(format!("{at}capabilities[{k}]"), "not a string")),
                }
            }
        }
        Some(_) => errors.push(FieldError::new(format!("{at}capabilities"), "give a list")),
    }
    capabilities
}

/// What member `i` runs as: an agent of the registry (`definition`), or a generic worker
/// of a `profile` — one of the two.
fn definition_or_profile(
    map: &Map<String, Value>,
    i: usize,
    registry: &dyn Fn(&str) -> Option<AgentDefinition>,
    errors: &mut Vec<FieldError>,
) -> (Option<String>, Option<WorkerProfile>) {
    let at = format!("agents[{i}].");
    let definition = text(map, "definition", &at, false, 64, errors);
    let profile_text = text(map, "profile", &at, false, 64, errors);
    let profile = profile_text.as_deref().and_then(|p| {
        let parsed = WorkerProfile::parse(p);
        if parsed.is_none() {
            errors.push(FieldError::new(
                format!("{at}profile"),
                format!("{p:?}: give read_only, write, verification or design"),
            ));
        }
        parsed
    });
    match (&definition, &profile_text) {
        (Some(_), Some(_)) => errors.push(FieldError::new(
            format!("agents[{i}]"),
            "give definition or profile, not both",
        )),
        (None, None) if !map.contains_key("definition") && !map.contains_key("profile") => {
            errors.push(FieldError::new(
                format!("agents[{i}]"),
                "give definition (an agent of the registry) or profile",
            ))
        }
        _ => {}
    }
    if let Some(d) = &definition
        && registry(d).is_none()
    {
        errors.push(FieldError::new(
            format!("{at}definition"),
            format!("no valid agent {d:?} in the registry (coord agent list)"),
        ));
    }
    (definition, profile)
}
