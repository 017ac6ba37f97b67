//! The agent registry: definitions from `.claude/agents/*.md` and `agents.json`.

use crate::context::Context;
use coord_agents::registry::{self, Entry, NotFound};
use coord_domain::agents::{self, AgentDefinition, FieldError};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Where definitions live, relative to the repository.
pub const DEFINITIONS: &str = ".claude/agents";

/// The registry: every `.md` file of `.claude/agents` (by file name) and the entries of
/// `agents.json`, each checked, then checked against each other.
pub fn definitions(ctx: &Context) -> Vec<Entry> {
    let dir = ctx.repo_root.join(DEFINITIONS);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let too_big = |limit: usize| Err(vec![FieldError::new("file", format!("larger than {limit} bytes"))]);
    let unreadable = |e: std::io::Error| Err(vec![FieldError::new("file", format!("unreadable: {e}"))]);
    let mut entries: Vec<Entry> = files
        .into_iter()
        .map(|p| {
            let parsed = match std::fs::metadata(&p) {
                Ok(m) if m.len() > agents::definition::MAX_DEFINITION_BYTES as u64 => {
                    too_big(agents::definition::MAX_DEFINITION_BYTES)
                }
                _ => std::fs::read_to_string(&p).map_or_else(unreadable, |text| coord_agents::parse_definition(&text)),
            };
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let claimed = parsed.as_ref().ok().map(|d| d.name.clone()).or(stem);
            Entry::new(relative(ctx, &p), None, claimed, parsed)
        })
        .collect();
    let json = ctx.repo_root.join(registry::AGENTS_JSON);
    match std::fs::metadata(&json) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Ok(m) if m.len() > registry::MAX_AGENTS_JSON_BYTES as u64 => entries.push(Entry::new(
            registry::AGENTS_JSON,
            None,
            None,
            too_big(registry::MAX_AGENTS_JSON_BYTES),
        )),
        _ => match std::fs::read_to_string(&json) {
            Ok(text) => entries.extend(registry::parse_agents_json(registry::AGENTS_JSON, &text)),
            Err(e) => entries.push(Entry::new(registry::AGENTS_JSON, None, None, unreadable(e))),
        },
    }
    registry::assemble(entries)
}

fn relative(ctx: &Context, p: &Path) -> String {
    p.strip_prefix(&ctx.repo_root).unwrap_or(p).display().to_string()
}

/// The valid definition `name` of the registry.
pub fn find(ctx: &Context, name: &str) -> CoordResult<(String, AgentDefinition)> {
    let all = definitions(ctx);
    match registry::find(&all, name) {
        Ok(d) => {
            let place = all
                .iter()
                .find(|e| e.definition() == Some(d))
                .map(Entry::place)
                .unwrap_or_default();
            Ok((place, d.clone()))
        }
        Err(NotFound::Invalid { place, errors }) => {
            let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("{place} is not a valid agent definition: {}", list.join("; ")),
            )
            .with_detail("errors", json!(errors))
            .with_detail("file", place))
        }
        Err(NotFound::Missing { known }) => Err(CoordError::new(
            ErrorCode::NotFound,
            format!(
                "no agent {name:?} in the registry ({DEFINITIONS}/*.md, {}): {}",
                registry::AGENTS_JSON,
                if known.is_empty() {
                    "there are none: see docs/agents.md".to_string()
                } else {
                    format!("there are: {}", known.join(", "))
                }
            ),
        )
        .with_detail("known", json!(known))),
    }
}
