//! `coord guard rules`: the guardrails' pattern registry listed and changed
//! (`list_guardrails`, `set_guardrail`, `reset_guardrail`); the facts of the repository
//! a check sends with a command (its git aliases).

use crate::args::GuardRulesCommand;
use crate::context::Context;
use crate::output::{Output, ellipsis, table};
use coord_domain::access::Principal;
use coord_domain::guardrail_rules::{
    GuardrailEntry, ListGuardrailsResult, ResetGuardrailRequest, RuleSource, SetGuardrailRequest,
};
use coord_domain::{CoordError, CoordResult, Empty, ErrorCode};
use coord_service::ops::guardrails::{ListGuardrails, ResetGuardrail, SetGuardrail};
use coord_service::{Coordination, call};
use serde_json::Value;
use std::io::Read;

pub async fn rules(cmd: GuardRulesCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let who = Principal::local(ctx.caller.clone());
    let set =
        |name: String, pattern: Option<Value>, enabled: Option<bool>| SetGuardrailRequest { name, pattern, enabled };
    match cmd {
        GuardRulesCommand::List { changed, program } => {
            let answer = call::<ListGuardrails, _>(coord, &who, Empty {}).await.map(|mut r| {
                r.guardrails.retain(|g| {
                    (!changed || g.source != RuleSource::Builtin)
                        && program.as_deref().is_none_or(|p| {
                            g.pattern["program"]
                                .as_str()
                                .is_some_and(|alts| alts.split('|').any(|a| a == p))
                        })
                });
                r
            });
            out.result(answer, render_list)
        }
        GuardRulesCommand::Set { name, pattern, file } => {
            let pattern = match read_pattern(pattern, file) {
                Ok(p) => p,
                Err(e) => return crate::ops::refused::<SetGuardrail>(out, coord, &ctx.caller, e).await,
            };
            let answer = call::<SetGuardrail, _>(coord, &who, set(name, Some(pattern), None)).await;
            out.result(answer, |r| format!("set\n{}", render_one(&r.guardrail)))
        }
        GuardRulesCommand::Disable { name } => {
            let answer = call::<SetGuardrail, _>(coord, &who, set(name, None, Some(false))).await;
            out.result(answer, |r| format!("{}: off", r.guardrail.name))
        }
        GuardRulesCommand::Enable { name } => {
            let answer = call::<SetGuardrail, _>(coord, &who, set(name, None, Some(true))).await;
            out.result(answer, |r| format!("{}: on", r.guardrail.name))
        }
        GuardRulesCommand::Reset { name } => {
            let answer = call::<ResetGuardrail, _>(coord, &who, ResetGuardrailRequest { name }).await;
            out.result(answer, |r| {
                if r.builtin_restored {
                    format!("{}: the built-in pattern is in effect again", r.name)
                } else {
                    format!("{}: removed", r.name)
                }
            })
        }
    }
}

/// The pattern given inline, or read from a file (`-`: standard input).
fn read_pattern(inline: Option<String>, file: Option<std::path::PathBuf>) -> CoordResult<Value> {
    let text = match (inline, file) {
        (Some(t), _) => t,
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut t = String::new();
            std::io::stdin()
                .read_to_string(&mut t)
                .map_err(|e| CoordError::field(ErrorCode::InvalidArgument, "file", format!("standard input: {e}")))?;
            t
        }
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|e| CoordError::field(ErrorCode::InvalidArgument, "file", format!("{}: {e}", path.display())))?,
        (None, None) => {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "pattern",
                "give the pattern with --pattern JSON or --file FILE",
            ));
        }
    };
    serde_json::from_str(&text).map_err(|e| {
        CoordError::field(
            ErrorCode::InvalidJson,
            "pattern",
            format!("the pattern is not JSON: {e}"),
        )
    })
}

fn source_name(s: RuleSource) -> &'static str {
    match s {
        RuleSource::Builtin => "builtin",
        RuleSource::Modified => "modified",
        RuleSource::Custom => "custom",
    }
}

/// `words`, `options` and `unless` of a pattern, as one short line.
fn matches_line(p: &Value) -> String {
    let list = |k: &str| {
        p[k].as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    let mut parts = vec![list("words")];
    if p["anywhere"] == Value::Bool(true) {
        parts[0] = format!("…{}…", parts[0]);
    }
    let options = list("options");
    if !options.is_empty() {
        parts.push(options);
    }
    let unless = list("unless");
    if !unless.is_empty() {
        parts.push(format!("unless {unless}"));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("; ")
}

fn action_line(p: &Value) -> String {
    match &p["action"] {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("require_trust")
            .map(|t| format!("trust {t}"))
            .unwrap_or_else(|| Value::Object(o.clone()).to_string()),
        other => other.to_string(),
    }
}

fn render_list(r: &ListGuardrailsResult) -> String {
    if r.guardrails.is_empty() {
        return "no patterns".into();
    }
    let mut t = table(&["NAME", "SOURCE", "ON", "PROGRAM", "MATCHES", "OPERATION", "ACTION"]);
    for g in &r.guardrails {
        t.add_row(vec![
            g.name.clone(),
            source_name(g.source).into(),
            if g.enabled { "yes" } else { "no" }.into(),
            ellipsis(g.pattern["program"].as_str().unwrap_or_default(), 30),
            ellipsis(&matches_line(&g.pattern), 60),
            g.pattern["operation"].as_str().unwrap_or_default().into(),
            action_line(&g.pattern),
        ]);
    }
    let n = r.guardrails.len();
    format!("{t}\n{n} pattern{}", if n == 1 { "" } else { "s" })
}

fn render_one(g: &GuardrailEntry) -> String {
    render_list(&ListGuardrailsResult {
        success: true,
        guardrails: vec![g.clone()],
    })
}

/// The repository files the entry points of `command` run (`package.json` for `npm run
/// NAME`, the Makefile, the justfile, scripts run by path, and what their code runs in
/// turn), read beneath `dir` by the kernel (`openat2(RESOLVE_BENEATH)`, no symlinks, to a
/// size limit), so that an entry point is judged by what it runs. `None` when nothing is
/// wanted or the directory cannot be opened confined (then entry points are judged by
/// their names).
pub fn entry_files(dir: &std::path::Path, command: &str) -> Option<std::collections::BTreeMap<String, String>> {
    use coord_guardrails::entry::MAX_FILE_BYTES;
    let mut files = std::collections::BTreeMap::new();
    let mut tried = std::collections::BTreeSet::new();
    let mut workspace = None;
    // Each round reads what the code read so far runs; a chain deeper than the analysis
    // follows needs no more.
    for _ in 0..=coord_guardrails::entry::MAX_ENTRY_DEPTH {
        let wanted: Vec<String> = coord_guardrails::entry_files_wanted(command, &files)
            .into_iter()
            .filter(|w| tried.insert(w.clone()))
            .collect();
        if wanted.is_empty() {
            break;
        }
        if workspace.is_none() {
            workspace = Some(coord_files::Workspace::open(dir).ok()?);
        }
        let ws = workspace.as_ref()?;
        for path in wanted {
            if let Ok(read) = ws.read(&path, MAX_FILE_BYTES as u64)
                && let Ok(text) = String::from_utf8(read.content)
            {
                files.insert(path, text);
            }
        }
    }
    (!tried.is_empty()).then_some(files)
}

/// The git aliases in effect in `dir` (name → what it runs, as `git config
/// --get-regexp '^alias\.'` reads them, includes and the user's configuration too), sent
/// with a command to check so that `git NAME` is judged by what it runs. Read only for
/// a command that mentions git (it costs a process); `None` when git cannot say.
pub fn git_aliases(dir: &std::path::Path, command: &str) -> Option<std::collections::BTreeMap<String, String>> {
    if !command.contains("git") {
        return None;
    }
    let out = std::process::Command::new("git")
        .args(["config", "--null", "--get-regexp", "^alias\\."])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    // 1: no alias at all.
    if !out.status.success() && out.status.code() != Some(1) {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter_map(|entry| {
                let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
                let name = key.strip_prefix("alias.")?;
                Some((name.to_string(), value.to_string()))
            })
            .collect(),
    )
}
