//! `coord verify`: the verification gateway from the shell — policies from a file,
//! submitting a change (listed, or read from git), and a changeset's runs.

use crate::args::{GithubCommand, VerifyCommand};
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::verification::{
    self, DeleteVerificationPolicyRequest, Executor, GetVerificationRequest, ListVerificationPoliciesResult, RunStatus,
    SubmitChangesetRequest, VerificationPolicy, VerificationResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_runtime::actions::Actions;
use coord_runtime::verify_worker::{Remote, Worker, WorkerEvent, work};
use coord_service::ops::verification::{
    DeleteVerificationPolicy, GetVerification, ListVerificationPolicies, SetVerificationPolicy, SubmitChangeset,
};
use coord_service::{Coordination, call};
use serde_json::Value;

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
    // What went wrong, where it can be read: the end of each unsuccessful run's output.
    for run in &r.runs {
        if let (Some(out), RunStatus::Failed | RunStatus::Error | RunStatus::TimedOut) = (&run.output_tail, run.status)
        {
            let lines: Vec<&str> = out.lines().collect();
            let last = &lines[lines.len().saturating_sub(20)..];
            text.push_str(&format!(
                "\n\n--- {} ({}), the end of its output ---\n{}",
                run.policy,
                status_word(&run.status),
                last.join("\n")
            ));
        }
    }
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
    let one = matches!(&doc, Value::Object(m) if m.contains_key("name"));
    let list = if one {
        Some(Value::Array(vec![doc]))
    } else {
        crate::profiles::named_items(doc, "policies")
    };
    let Some(list) = list else {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "file",
            format!("{file}: expected `policies: [...]`, a list of policies, a map of name -> policy, or one policy"),
        ));
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
                Err(e) => return crate::ops::refused::<SetVerificationPolicy>(out, coord, &ctx.caller, e).await,
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
                    Err(e) => return crate::ops::refused::<SubmitChangeset>(out, coord, &ctx.caller, e).await,
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
                        let e = CoordError::field(
                            ErrorCode::InvalidArgument,
                            "diff_file",
                            format!("cannot read {path}: {e}"),
                        );
                        return crate::ops::refused::<SubmitChangeset>(out, coord, &ctx.caller, e).await;
                    }
                }
            }
            out.result(call::<SubmitChangeset, _>(coord, &me, req).await, render_result)
        }
        VerifyCommand::Run {
            once,
            executor,
            repository,
            actions_poll,
            poll_seconds,
            no_sandbox,
        } => {
            let w = Worker {
                executors: if executor.is_empty() {
                    vec![Executor::Inline, Executor::Local]
                } else {
                    executor.iter().filter_map(|e| Executor::parse(e)).collect()
                },
                once,
                poll: std::time::Duration::from_secs(poll_seconds.max(1)),
                no_sandbox,
            };
            run_worker(coord, ctx, &me, w, repository.as_deref(), actions_poll, out).await
        }
        VerifyCommand::Status { changeset_id, diff } => out.result(
            call::<GetVerification, _>(coord, &me, GetVerificationRequest { changeset_id, diff }).await,
            render_result,
        ),
    }
}

/// `coord verify run`: the executors' services from the environment, then the
/// runtime's worker, each run it does shown as it is reported.
async fn run_worker(
    coord: &dyn Coordination,
    ctx: &Context,
    me: &Principal,
    w: Worker,
    repository: Option<&str>,
    actions_poll: f64,
    out: Output,
) -> u8 {
    let repository = match repository.map(|r| (r, coord_github::sync::repository_name(r))) {
        None => None,
        Some((_, Some(r))) => Some(r),
        Some((r, None)) => {
            return out.error(&CoordError::field(
                ErrorCode::InvalidArgument,
                "repository",
                format!("--repository {r:?}: OWNER/NAME as GitHub spells it"),
            ));
        }
    };
    let e2b = w.executors.contains(&Executor::E2b).then(|| {
        needed(
            coord_remote::e2b::E2b::from_env(),
            "E2B_API_KEY",
            "e2b runs need E2B_API_KEY (E2B_API_URL for another control plane)",
        )
    });
    let e2b = match e2b.transpose() {
        Ok(e) => e,
        Err(e) => return out.error(&e),
    };
    let api = w.executors.contains(&Executor::GithubActions).then(|| {
        needed(
            coord_remote::github::GithubApi::from_env(),
            "COORD_GITHUB_TOKEN",
            "github_actions runs need COORD_GITHUB_TOKEN (or GITHUB_TOKEN): a token that may dispatch workflows (Actions: write)",
        )
    });
    let api = match api.transpose() {
        Ok(a) => a,
        Err(e) => return out.error(&e),
    };
    if !(0.01..=3600.0).contains(&actions_poll) {
        return out.error(&CoordError::field(
            ErrorCode::InvalidArgument,
            "actions_poll",
            "--actions-poll: 0.01 to 3600 seconds",
        ));
    }
    let actions = api.as_ref().map(|api| Actions {
        api,
        repository,
        poll: std::time::Duration::from_secs_f64(actions_poll),
    });
    let remote = Remote {
        actions,
        e2b: e2b.as_ref(),
    };
    let mut show = |event: WorkerEvent<'_>| show_worker_event(event, out);
    match work(coord, ctx, me, w, remote, &mut show).await {
        Ok(()) => 0,
        Err(e) => out.error(&e),
    }
}

/// A service an executor needs, configured in the environment: unset is an error naming
/// the variable to set.
fn needed<T>(found: CoordResult<Option<T>>, var: &str, why: &str) -> CoordResult<T> {
    found?.ok_or_else(|| CoordError::field(ErrorCode::InvalidArgument, var, why))
}

fn show_worker_event(event: WorkerEvent<'_>, out: Output) {
    match event {
        WorkerEvent::Drained { done } if !out.json => println!(
            "{done} run{} done; nothing left to run",
            if done == 1 { "" } else { "s" }
        ),
        WorkerEvent::Drained { .. } => {}
        WorkerEvent::FinishedElsewhere { run, reason } if !out.json => {
            println!("{} on {}: {reason}", run.policy.name, run.changeset_id)
        }
        WorkerEvent::FinishedElsewhere { .. } => {}
        WorkerEvent::Reported { result, .. } if out.json => {
            println!("{}", serde_json::to_string(result).unwrap_or_default())
        }
        WorkerEvent::Reported {
            run,
            status,
            reason,
            seconds,
            result,
        } => println!(
            "{} on {}: {}{} ({seconds:.1} s); changeset {}",
            run.policy.name,
            run.changeset_id,
            status.as_str(),
            reason.map(|r| format!(": {r}")).unwrap_or_default(),
            status_word(&result.status),
        ),
        // The claim may have passed to another worker: say so and go on.
        WorkerEvent::NotReported { run, error } => eprintln!(
            "could not report {} on {}: {} [{}]",
            run.policy.name, run.changeset_id, error.message, error.code
        ),
    }
}

/// The outbox as a table.
fn render_outbox(rows: &[Value]) -> String {
    if rows.is_empty() {
        return "nothing waits to be sent to GitHub".into();
    }
    let mut t = table(&["ID", "REQUEST", "TRIES", "STATE", "LAST ERROR"]);
    for r in rows {
        let at = |k: &str| {
            r[k].as_str()
                .and_then(|s| s.parse::<coord_domain::Timestamp>().ok())
                .map(crate::output::when)
        };
        let state = match (at("sent_at"), r["attempts"].as_i64().unwrap_or(0)) {
            (Some(sent), _) => format!("sent {sent}"),
            (None, n) if n >= i64::from(coord_github::sync::MAX_REQUEST_ATTEMPTS) => "given up".to_string(),
            (None, _) => format!("next try {}", at("next_attempt_at").unwrap_or_default()),
        };
        t.add_row(vec![
            r["id"].to_string(),
            format!(
                "{} {}",
                r["method"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or("")
            ),
            r["attempts"].to_string(),
            state,
            crate::output::ellipsis(r["last_error"].as_str().unwrap_or("-"), 60),
        ]);
    }
    t.to_string()
}

async fn send_now(coord: &dyn Coordination) -> CoordResult<(u64, u64)> {
    let local = coord.local().ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            "in remote mode the server sends GitHub its requests (`coord serve` with COORD_GITHUB_TOKEN)",
        )
    })?;
    let api = coord_remote::github::GithubApi::from_env()?.ok_or_else(|| {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "COORD_GITHUB_TOKEN",
            "set COORD_GITHUB_TOKEN (or GITHUB_TOKEN) to a token that may write issues and commit statuses",
        )
    })?;
    coord_remote::github::send_due(local, &api).await
}

/// `coord github label PATH`: the lock label of a path (no coordinator needed);
/// `coord github send`: one pass over the outbox.
pub async fn github(cmd: GithubCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match cmd {
        GithubCommand::Send => match send_now(coord).await {
            Ok((sent, failed)) => {
                let answer = serde_json::json!({"success": failed == 0, "sent": sent, "failed": failed});
                let code = out.result(Ok(answer), |_| {
                    format!("sent {sent}, failed {failed} (failures are retried with backoff)")
                });
                if failed == 0 { code } else { crate::output::EXIT_REFUSED }
            }
            Err(e) => out.error(&e),
        },
        GithubCommand::Outbox { sent, limit } => {
            let Some(local) = coord.local() else {
                return out.error(&CoordError::new(
                    ErrorCode::InvalidArgument,
                    "in remote mode the server keeps the outbox: run coord github outbox where coord serve runs",
                ));
            };
            let rows = local.store().github_outbox(sent, limit.clamp(1, 1000)).await;
            out.result(
                rows.map(|rows| serde_json::json!({"success": true, "requests": rows})),
                |v| render_outbox(v["requests"].as_array().map(Vec::as_slice).unwrap_or_default()),
            )
        }
        GithubCommand::Label { path } => {
            let root = ctx.repo_root.to_string_lossy().into_owned();
            let normalised = match coord_domain::path::normalize_path(&path, Some(&root)) {
                Ok(p) => p,
                Err(e) => return out.error(&e),
            };
            let label = coord_github::labels::lock_label(&normalised);
            let hashed = !label.ends_with(normalised.as_str());
            let answer = serde_json::json!({
                "success": true,
                "path": normalised,
                "label": label,
                "hashed": hashed,
            });
            out.result(Ok(answer), |_| {
                if hashed {
                    format!(
                        "{label}\n(the path is longer than a label allows: list it in the issue body under {} so coord can resolve it)",
                        coord_github::labels::LOCKS_BLOCK
                    )
                } else {
                    label.clone()
                }
            })
        }
    }
}
