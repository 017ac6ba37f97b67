//! `coord verify`: the verification gateway from the shell — policies from a file,
//! submitting a change (listed, or read from git), and a changeset's runs.

use crate::args::VerifyCommand;
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::verification::{
    self, DeleteVerificationPolicyRequest, GetVerificationRequest, ListVerificationPoliciesResult,
    SubmitChangesetRequest, VerificationPolicy, VerificationResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::verification::{
    DeleteVerificationPolicy, GetVerification, ListVerificationPolicies, SetVerificationPolicy, SubmitChangeset,
};
use coord_service::{Coordination, call};
use serde_json::{Map, Value};

fn list(v: &[String]) -> String {
    if v.is_empty() { "-".into() } else { v.join(", ") }
}

fn render_policies(r: &ListVerificationPoliciesResult) -> String {
    if r.policies.is_empty() {
        return "no verification policies (coord verify apply FILE adds them; docs/verification.md)".into();
    }
    let mut t = table(&[
        "POLICY", "TIER", "EXECUTOR", "PATTERNS", "EXCLUDES", "RUNS", "TIMEOUT", "APPROVAL", "ENABLED",
    ]);
    for row in &r.policies {
        let p = &row.policy;
        let runs = match p.executor {
            verification::Executor::Inline | verification::Executor::Local => p.command.join(" "),
            verification::Executor::GithubActions => p.workflow.clone().unwrap_or_default(),
            verification::Executor::E2b => p.template.clone().unwrap_or_default(),
            verification::Executor::Manual => "a person's review".into(),
        };
        t.add_row(vec![
            p.name.clone(),
            p.tier.to_string(),
            p.executor.as_str().into(),
            list(&p.patterns),
            list(&p.exclude_patterns),
            runs,
            format!("{}s", p.timeout_seconds),
            if p.needs_review() { "yes" } else { "no" }.into(),
            if p.enabled { "yes" } else { "no" }.into(),
        ]);
    }
    t.to_string()
}

fn status_word<T: serde::Serialize>(s: &T) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn render_result(r: &VerificationResult) -> String {
    let cs = &r.changeset;
    let mut head = format!(
        "changeset {}{}: {} ({} file{}, by {}, trust {})",
        cs.changeset_id,
        if r.existing { " (already submitted)" } else { "" },
        status_word(&r.status),
        cs.files.len(),
        if cs.files.len() == 1 { "" } else { "s" },
        cs.agent_id,
        cs.trust_level,
    );
    if let Some(b) = &cs.branch {
        head.push_str(&format!("\nbranch {b}"));
    }
    if let Some(c) = &cs.commit {
        head.push_str(&format!(" commit {c}"));
    }
    if r.runs.is_empty() {
        return format!("{head}\nno verification policy covers these files");
    }
    let mut t = table(&["POLICY", "TIER", "EXECUTOR", "STATUS", "FILES", "WHY", "APPROVAL"]);
    for run in &r.runs {
        t.add_row(vec![
            run.policy.clone(),
            run.tier.to_string(),
            run.executor.as_str().into(),
            status_word(&run.status),
            run.file_count.to_string(),
            run.reason.clone().unwrap_or_default(),
            run.approval_id.clone().unwrap_or_default(),
        ]);
    }
    let mut text = format!("{head}\n{t}");
    if let Some(d) = &r.diff {
        text.push_str(&format!("\n\n{d}"));
    }
    text
}

/// The policies in a YAML or JSON document — `policies: [...]`, a list, a map of name →
/// policy, or one policy — each parsed and checked before any is stored, so a file
/// with one mistake changes nothing (errors name `policies[i].field` and the policy).
pub fn read_policies(file: &str) -> CoordResult<Vec<VerificationPolicy>> {
    let doc = crate::profiles::read_document(file)?;
    let list = match doc {
        Value::Object(mut m) if m.contains_key("policies") => m.remove("policies").unwrap_or_default(),
        Value::Object(m) if m.contains_key("name") => Value::Array(vec![Value::Object(m)]),
        Value::Array(a) => Value::Array(a),
        Value::Object(m) if !m.is_empty() && m.values().all(Value::is_object) => Value::Array(
            m.into_iter()
                .map(|(name, body)| {
                    let mut body: Map<String, Value> = body.as_object().cloned().unwrap_or_default();
                    body.entry("name").or_insert(Value::String(name));
                    Value::Object(body)
                })
                .collect(),
        ),
        _ => {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "file",
                format!(
                    "{file}: expected `policies: [...]`, a list of policies, a map of name -> policy, or one policy"
                ),
            ));
        }
    };
    let Value::Array(items) = list else {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "policies",
            format!("{file}: policies must be a list"),
        ));
    };
    if items.is_empty() {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "policies",
            format!("{file}: no policies in it"),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
        let named = |mut e: CoordError| {
            e.field = Some(match e.field.take() {
                Some(f) => format!("policies[{i}].{f}"),
                None => format!("policies[{i}]"),
            });
            e.message = format!("{file}: policy {name:?}: {}", e.message);
            e
        };
        let p = coord_service::pipeline::parse_named::<VerificationPolicy>(item)
            .and_then(verification::validate_policy)
            .map_err(named)?;
        if out.iter().any(|q: &VerificationPolicy| q.name == p.name) {
            return Err(named(CoordError::field(
                ErrorCode::InvalidArgument,
                "name",
                format!("{} appears twice", p.name),
            )));
        }
        out.push(p);
    }
    Ok(out)
}

/// What git says about the change from `base` to HEAD: files (added or modified, and
/// removed), the branch and the commit.
fn from_git(base: &str) -> CoordResult<SubmitChangesetRequest> {
    let git = |args: &[&str]| -> CoordResult<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(|e| CoordError::new(ErrorCode::InvalidArgument, format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "git",
                format!(
                    "git {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let range = format!("{base}...HEAD");
    // -z: paths exactly as git has them (no quoting of unusual names).
    let listing = git(&["diff", "--name-status", "--no-renames", "-z", &range])?;
    let mut req = SubmitChangesetRequest::default();
    let mut fields = listing.split('\0').filter(|s| !s.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        if status.starts_with('D') {
            req.removed.push(path.to_string());
        } else {
            req.files.push(path.to_string());
        }
    }
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"])?.trim().to_string();
    req.branch = (branch != "HEAD").then_some(branch);
    req.commit = Some(git(&["rev-parse", "HEAD"])?.trim().to_string());
    Ok(req)
}

pub async fn run(cmd: VerifyCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = Principal::local(ctx.caller.clone());
    match cmd {
        VerifyCommand::Policies => out.result(
            call::<ListVerificationPolicies, _>(coord, &me, Default::default()).await,
            render_policies,
        ),
        VerifyCommand::Apply { file } => {
            let policies = match read_policies(&file) {
                Ok(p) => p,
                Err(e) => return out.error(&e),
            };
            let mut stored = Vec::new();
            for p in policies {
                match call::<SetVerificationPolicy, _>(coord, &me, p).await {
                    Ok(r) => stored.push(r.policy),
                    Err(e) => return out.error(&e),
                }
            }
            let names: Vec<String> = stored.iter().map(|r| r.policy.name.clone()).collect();
            out.result(
                Ok(ListVerificationPoliciesResult {
                    success: true,
                    policies: stored,
                }),
                |_| {
                    format!(
                        "stored {} verification polic{}: {}",
                        names.len(),
                        if names.len() == 1 { "y" } else { "ies" },
                        names.join(", ")
                    )
                },
            )
        }
        VerifyCommand::Delete { name } => out.result(
            call::<DeleteVerificationPolicy, _>(coord, &me, DeleteVerificationPolicyRequest { name }).await,
            |r| format!("verification policy {} deleted", r.name),
        ),
        VerifyCommand::Submit {
            files,
            removed,
            branch,
            commit,
            description,
            diff_file,
            git,
        } => {
            let mut req = match &git {
                Some(base) => match from_git(base) {
                    Ok(r) => r,
                    Err(e) => return out.error(&e),
                },
                None => SubmitChangesetRequest::default(),
            };
            req.files.extend(files);
            req.removed.extend(removed);
            req.branch = branch.or(req.branch);
            req.commit = commit.or(req.commit);
            req.description = description;
            if let Some(path) = diff_file {
                match std::fs::read_to_string(&path) {
                    Ok(d) => req.diff = Some(d),
                    Err(e) => {
                        return out.error(&CoordError::field(
                            ErrorCode::InvalidArgument,
                            "diff_file",
                            format!("cannot read {path}: {e}"),
                        ));
                    }
                }
            }
            out.result(call::<SubmitChangeset, _>(coord, &me, req).await, render_result)
        }
        VerifyCommand::Status { changeset_id, diff } => out.result(
            call::<GetVerification, _>(coord, &me, GetVerificationRequest { changeset_id, diff }).await,
            render_result,
        ),
    }
}
