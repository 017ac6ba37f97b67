//! The agent registry (spec 002): every definition of the workspace, from Claude Code's
//! `.claude/agents/<name>.md` files and from `agents.json` (spec 002's list of
//! `{id, name, description, system_prompt, tools, parent_id, …}`), checked one by one
//! and against each other. A name defined twice is refused in both places (a file added
//! later must not shadow a reviewed definition); `parent_id` and `delegates_to` must
//! name agents of the registry; parents must not form a cycle.

use crate::definition::definition_from_json;
use coord_domain::agents::{AgentDefinition, FieldError};
use serde::Serialize;
use serde_json::Value;

/// The file of spec 002's list, relative to the repository.
pub const AGENTS_JSON: &str = "agents.json";
/// The most entries `agents.json` may hold.
pub const MAX_AGENTS: usize = 500;
/// The most bytes `agents.json` may hold.
pub const MAX_AGENTS_JSON_BYTES: usize = 1024 * 1024;

/// One definition of the registry, or why it is refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The file it is in, relative to the repository.
    pub file: String,
    /// Where in the file (`agents[2]`), for `agents.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The name it claims (its `id`/`name` as written, or the file's name), valid or
    /// not: an invalid definition asked for by name answers its errors.
    #[serde(skip)]
    pub claimed: Option<String>,
    #[serde(flatten)]
    pub state: EntryState,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EntryState {
    Valid { definition: Box<AgentDefinition> },
    Invalid { errors: Vec<FieldError> },
}

impl Entry {
    pub fn new(
        file: impl Into<String>,
        at: Option<String>,
        claimed: Option<String>,
        parsed: Result<AgentDefinition, Vec<FieldError>>,
    ) -> Self {
        Self {
            file: file.into(),
            at,
            claimed,
            state: match parsed {
                Ok(definition) => EntryState::Valid {
                    definition: Box::new(definition),
                },
                Err(errors) => EntryState::Invalid { errors },
            },
        }
    }

    pub fn definition(&self) -> Option<&AgentDefinition> {
        match &self.state {
            EntryState::Valid { definition } => Some(definition),
            EntryState::Invalid { .. } => None,
        }
    }

    pub fn errors(&self) -> &[FieldError] {
        match &self.state {
            EntryState::Valid { .. } => &[],
            EntryState::Invalid { errors } => errors,
        }
    }

    /// Where it is: `agents.json agents[2]` or `.claude/agents/x.md`.
    pub fn place(&self) -> String {
        match &self.at {
            Some(at) => format!("{} {at}", self.file),
            None => self.file.clone(),
        }
    }

    /// The field `key` (`.md` name) or `json_key` (`agents.json` name) of this entry.
    fn field(&self, md_key: &str, json_key: &str) -> String {
        match &self.at {
            Some(at) => format!("{at}.{json_key}"),
            None => md_key.to_string(),
        }
    }

    fn refuse(&mut self, error: FieldError) {
        match &mut self.state {
            EntryState::Valid { .. } => self.state = EntryState::Invalid { errors: vec![error] },
            EntryState::Invalid { errors } => errors.push(error),
        }
    }
}

/// `agents.json`'s entries: a list (spec 002), or `{"agents": [...]}`. A file that is
/// not one of them is one error.
pub fn parse_agents_json(file: &str, text: &str) -> Vec<Entry> {
    let whole = |reason: String| vec![Entry::new(file, None, None, Err(vec![FieldError::new("file", reason)]))];
    if text.len() > MAX_AGENTS_JSON_BYTES {
        return whole(format!("larger than {MAX_AGENTS_JSON_BYTES} bytes"));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return whole(format!("not JSON: {e}")),
    };
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut map) if map.len() == 1 && map.contains_key("agents") => match map.remove("agents") {
            Some(Value::Array(list)) => list,
            _ => return whole("agents: give a list of agent objects".into()),
        },
        _ => return whole("give a list of agent objects (or {\"agents\": [...]})".into()),
    };
    if list.len() > MAX_AGENTS {
        return whole(format!("more than {MAX_AGENTS} agents"));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("agents[{i}]");
            let claimed = v.get("id").and_then(Value::as_str).map(|s| s.trim().to_string());
            Entry::new(
                file,
                Some(at.clone()),
                claimed,
                definition_from_json(v, &format!("{at}.")),
            )
        })
        .collect()
}

/// The registry's checks across entries: names defined twice (all of them refused),
/// `parent_id` and `delegates_to` naming no valid agent, cycles of parents.
pub fn assemble(mut entries: Vec<Entry>) -> Vec<Entry> {
    let names: Vec<Option<String>> = entries.iter().map(|e| e.definition().map(|d| d.name.clone())).collect();
    let mut problems: Vec<(usize, FieldError)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        let others: Vec<String> = (0..entries.len())
            .filter(|&j| j != i && names[j].as_ref() == Some(name))
            .map(|j| entries[j].place())
            .collect();
        if !others.is_empty() {
            let field = entries[i].field("name", "id");
            problems.push((
                i,
                FieldError::new(field, format!("{name:?} is also defined by {}", others.join(", "))),
            ));
        }
    }
    let known = |n: &str| names.iter().flatten().any(|k| k == n);
    for (i, e) in entries.iter().enumerate() {
        let Some(d) = e.definition() else { continue };
        if let Some(p) = &d.parent
            && !known(p)
        {
            problems.push((
                i,
                FieldError::new(
                    e.field("parent", "parent_id"),
                    format!("no agent {p:?} in the registry"),
                ),
            ));
        }
        // A generic worker of a profile (`write-worker`, …) is no entry but may be delegated to.
        let generic = |t: &str| {
            coord_domain::agents::WorkerProfile::ALL
                .iter()
                .any(|p| coord_domain::agents::spawn::generic_definition(*p).name == t)
        };
        for (k, t) in d.delegates_to.iter().enumerate() {
            if t != "*" && !known(t) && !generic(t) {
                let field = format!("{}[{k}]", e.field("delegatesTo", "delegates_to"));
                problems.push((i, FieldError::new(field, format!("no agent {t:?} in the registry"))));
            }
        }
        // Walk up the parents: coming back to itself is a cycle.
        let mut seen = vec![d.name.as_str()];
        let mut at = d.parent.as_deref();
        while let Some(p) = at {
            if p == d.name {
                let chain = seen.join(" → ");
                problems.push((
                    i,
                    FieldError::new(
                        e.field("parent", "parent_id"),
                        format!("parents form a cycle: {chain} → {p}"),
                    ),
                ));
                break;
            }
            if seen.contains(&p) {
                break;
            }
            seen.push(p);
            at = entries
                .iter()
                .filter_map(Entry::definition)
                .find(|x| x.name == p)
                .and_then(|x| x.parent.as_deref());
        }
    }
    for (i, error) in problems {
        entries[i].refuse(error);
    }
    let parents: Vec<(String, String)> = entries
        .iter()
        .filter_map(Entry::definition)
        .filter_map(|d| d.parent.clone().map(|p| (p, d.name.clone())))
        .collect();
    for e in &mut entries {
        if let EntryState::Valid { definition } = &mut e.state {
            definition.children = parents
                .iter()
                .filter(|(p, _)| *p == definition.name)
                .map(|(_, c)| c.clone())
                .collect();
        }
    }
    entries
}

/// Why [`find`] found nothing usable.
#[derive(Debug, Clone, PartialEq)]
pub enum NotFound {
    /// No entry is named so (the valid names, to suggest).
    Missing { known: Vec<String> },
    /// The entry named so is refused.
    Invalid { place: String, errors: Vec<FieldError> },
}

/// The valid definition `name`, from an assembled registry. An invalid entry whose id or
/// file name is `name` answers its errors, so a typo in a file is not reported as a
/// missing agent.
pub fn find<'a>(entries: &'a [Entry], name: &str) -> Result<&'a AgentDefinition, NotFound> {
    if let Some(d) = entries.iter().filter_map(Entry::definition).find(|d| d.name == name) {
        return Ok(d);
    }
    let invalid = entries
        .iter()
        .find(|e| e.definition().is_none() && e.claimed.as_deref() == Some(name));
    match invalid {
        Some(e) => Err(NotFound::Invalid {
            place: e.place(),
            errors: e.errors().to_vec(),
        }),
        None => Err(NotFound::Missing {
            known: entries
                .iter()
                .filter_map(Entry::definition)
                .map(|d| d.name.clone())
                .collect(),
        }),
    }
}
