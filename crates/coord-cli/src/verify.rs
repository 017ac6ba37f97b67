//! `coord verify`: the verification gateway from the shell — policies from a file,
//! submitting a change (listed, or read from git), and a changeset's runs.

use crate::args::{GithubCommand, VerifyCommand};
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::verification::{
    self, ClaimVerificationRunRequest, ClaimedRun, DeleteVerificationPolicyRequest, Executor, GetVerificationRequest,
    ListVerificationPoliciesResult, ReportVerificationRunRequest, RunStatus, SubmitChangesetRequest,
    VerificationPolicy, VerificationResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::verification::{
    ClaimVerificationRun, DeleteVerificationPolicy, GetVerification, ListVerificationPolicies, ReportVerificationRun,
    SetVerificationPolicy, SubmitChangeset,
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

/// Keeps the last `cap` bytes of what is pushed.
struct Tail {
    buf: Vec<u8>,
    cap: usize,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > 2 * self.cap {
            let cut = self.buf.len() - self.cap;
            self.buf.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.buf);
        verification::tail(&text, self.cap).to_string()
    }
}

/// The identity runs execute as inside the sandbox: no profile by default (least
/// privilege, no network); assign it one to give checks network access.
pub const VERIFIER_AGENT: &str = "coord-verifier";

/// How a worker's run ended, before it is reported.
struct Outcome {
    status: RunStatus,
    exit_code: Option<i32>,
    reason: Option<String>,
    output: String,
}

fn refused(reason: String) -> Outcome {
    Outcome {
        status: RunStatus::Error,
        exit_code: None,
        reason: Some(reason),
        output: String::new(),
    }
}

/// The commit the repository's HEAD is at, if it is a git checkout with one.
fn head(ctx: &Context) -> Option<String> {
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&ctx.repo_root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|h| !h.is_empty())
}

/// An error naming the policy's required variables this worker's environment lacks.
fn missing_env(p: &coord_domain::verification::VerificationPolicy) -> Option<Outcome> {
    let missing: Vec<&str> = p
        .required_env
        .iter()
        .filter(|n| std::env::var_os(n).is_none())
        .map(String::as_str)
        .collect();
    (!missing.is_empty()).then(|| {
        refused(format!(
            "missing environment variables: {} (set them where coord verify run runs)",
            missing.join(", ")
        ))
    })
}

/// Runs one claimed `e2b` run: the policy's command in a new sandbox of its template
/// (deleted afterwards), with the required variables' values and the changeset's id,
/// policy, branch and commit (`COORD_CHANGESET_ID`, `COORD_POLICY`, `COORD_BRANCH`,
/// `COORD_COMMIT`) in its environment: the template or the command fetches the code.
async fn execute_e2b(run: &ClaimedRun, e2b: &coord_remote::e2b::E2b) -> Outcome {
    use coord_remote::e2b::{Job, Ran};
    let p = &run.policy;
    let Some(template) = p.template.as_deref() else {
        return refused(format!("policy {} names no template", p.name));
    };
    let mut envs: std::collections::BTreeMap<String, String> = p
        .required_env
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        .collect();
    envs.insert("COORD_CHANGESET_ID".into(), run.changeset_id.clone());
    envs.insert("COORD_POLICY".into(), p.name.clone());
    for (k, v) in [("COORD_BRANCH", &run.branch), ("COORD_COMMIT", &run.commit)] {
        if let Some(v) = v {
            envs.insert(k.into(), v.clone());
        }
    }
    let metadata = [
        ("coord_changeset_id".to_string(), run.changeset_id.clone()),
        ("coord_policy".to_string(), p.name.clone()),
    ]
    .into_iter()
    .collect();
    let job = Job {
        template,
        command: &p.command,
        envs,
        metadata,
        timeout: std::time::Duration::from_secs(u64::from(p.timeout_seconds)),
    };
    match e2b.run(&job, verification::MAX_OUTPUT_TAIL).await {
        Ran::Exited { code, output } => Outcome {
            status: if code == 0 {
                RunStatus::Passed
            } else {
                RunStatus::Failed
            },
            exit_code: Some(code),
            reason: (code != 0).then(|| format!("exit code {code} in the E2B sandbox")),
            output,
        },
        Ran::TimedOut { output } => Outcome {
            status: RunStatus::TimedOut,
            exit_code: None,
            reason: Some(format!(
                "still running after {} s: the sandbox was deleted",
                p.timeout_seconds
            )),
            output,
        },
        Ran::Failed { why, output } => Outcome { output, ..refused(why) },
    }
}

/// Runs one claimed run's command in `coord sandbox run` (as [`VERIFIER_AGENT`], the
/// policy's required variables passed in by name), in the repository, within the
/// policy's timeout (the process group is killed past it).
async fn execute(run: &ClaimedRun, ctx: &Context, no_sandbox: bool) -> Outcome {
    let p = &run.policy;
    if let Some(commit) = &run.commit {
        // The run must see the changeset's code and nothing else: HEAD at its commit, no
        // changes or untracked files (coord's own state aside).
        match head(ctx) {
            Some(h) if h.starts_with(commit.as_str()) => {}
            Some(h) => {
                return refused(format!(
                    "the working tree is at {h}, not the changeset's commit {commit}: run the worker in a checkout of it"
                ));
            }
            None => {
                return refused(format!(
                    "{} is not a git checkout: cannot check commit {commit}",
                    ctx.repo_root.display()
                ));
            }
        }
        let status = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all", "--", ".", ":!.coord"])
            .current_dir(&ctx.repo_root)
            .output();
        match status {
            Ok(o) if o.status.success() && o.stdout.is_empty() => {}
            Ok(o) if o.status.success() => {
                let first = String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                return refused(format!(
                    "the working tree has changes beside commit {commit} ({first}, ...): run the worker in a clean checkout"
                ));
            }
            _ => return refused("git status failed: cannot tell whether the working tree is the commit's".into()),
        }
    }
    let Ok(exe) = std::env::current_exe() else {
        return refused("cannot find the coord binary".into());
    };
    let mut command = tokio::process::Command::new(exe);
    command.args(["sandbox", "run", "--agent", VERIFIER_AGENT]);
    if no_sandbox {
        command.arg("--no-sandbox");
    }
    for name in &p.required_env {
        command.args(["--env", name]);
    }
    command.arg("--").args(&p.command);
    // The sandboxed run reaches the same coordinator, as this worker.
    match &ctx.remote {
        Some(r) => {
            command.env("COORDINATION_API_URL", &r.url);
            if let Some(key) = &r.api_key {
                command.env("COORDINATION_API_KEY", key);
            }
        }
        None => {
            let db = match &ctx.db {
                crate::context::DbTarget::Sqlite(path) => format!("sqlite:{}", path.display()),
                crate::context::DbTarget::Postgres(url) => url.clone(),
            };
            command.env("COORD_DATABASE_URL", db);
        }
    }
    command
        .env("COORD_AGENT_ID", &ctx.caller.agent_id)
        .env("COORD_AGENT_TYPE", &ctx.caller.agent_type)
        .current_dir(&ctx.repo_root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return refused(format!("cannot start coord sandbox run: {e}")),
    };
    let group = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw);
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Tail {
        buf: Vec::new(),
        cap: verification::MAX_OUTPUT_TAIL,
    }));
    let mut readers = Vec::new();
    let streams: Vec<Box<dyn tokio::io::AsyncRead + Unpin + Send>> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    .collect();
    for mut stream in streams {
        let tail = tail.clone();
        readers.push(tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            let mut chunk = [0u8; 8192];
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                tail.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(&chunk[..n]);
            }
        }));
    }
    let limit = std::time::Duration::from_secs(u64::from(p.timeout_seconds));
    let waited = tokio::time::timeout(limit, child.wait()).await;
    // Whatever the command left behind (a background child holding the output open)
    // goes with it: past the timeout, and after it ended.
    if let Some(g) = group {
        let _ = rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
    }
    if waited.is_err() {
        let _ = child.wait().await;
    }
    for r in readers {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), r).await;
    }
    let output = tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner).text();
    match waited {
        Err(_) => Outcome {
            status: RunStatus::TimedOut,
            exit_code: None,
            reason: Some(format!("still running after {} s: stopped", p.timeout_seconds)),
            output,
        },
        Ok(Err(e)) => Outcome {
            output,
            ..refused(format!("waiting for the run: {e}"))
        },
        Ok(Ok(status)) => {
            let code = coord_egress::sandbox::exit_code(status);
            Outcome {
                status: if code == 0 {
                    RunStatus::Passed
                } else {
                    RunStatus::Failed
                },
                exit_code: Some(code),
                reason: (code != 0).then(|| format!("exit code {code}")),
                output,
            }
        }
    }
}

/// The services runs of the remote executors go to.
struct Remote<'a> {
    actions: Option<crate::actions::Actions<'a>>,
    e2b: Option<&'a coord_remote::e2b::E2b>,
}

/// What `coord verify run` was asked to do.
struct Worker {
    executors: Vec<Executor>,
    /// Stop when nothing is left (else poll every `poll`).
    once: bool,
    poll: std::time::Duration,
    no_sandbox: bool,
}

/// `coord verify run`: claims runs of the executors this machine runs, executes each and
/// reports it; with `once`, until nothing is left.
async fn work(
    coord: &dyn Coordination,
    ctx: &Context,
    me: &Principal,
    w: Worker,
    remote: Remote<'_>,
    out: Output,
) -> u8 {
    let Remote { actions, e2b } = remote;
    let Worker {
        executors,
        once,
        poll,
        no_sandbox,
    } = w;
    // Runs on this machine need its checkout at the changeset's commit and the sandbox;
    // runs on GitHub need neither.
    let here = executors
        .iter()
        .any(|e| matches!(e, Executor::Inline | Executor::Local));
    // A sandbox that cannot start would fail every run as the change's fault: say so
    // once, before claiming anything.
    if here && !no_sandbox {
        let why = match coord_egress::sandbox::find_bwrap() {
            None => Some("bubblewrap (bwrap) is not installed (apt-get install bubblewrap)".to_string()),
            Some(bwrap) => coord_egress::sandbox::unavailable(&bwrap).await,
        };
        if let Some(why) = why {
            return out.error(&CoordError::new(
                ErrorCode::SandboxUnavailable,
                format!("{why}: runs need the sandbox (--no-sandbox runs them without it, advisory)"),
            ));
        }
    }
    let mut done = 0usize;
    loop {
        let req = ClaimVerificationRunRequest {
            executors: executors.clone(),
            commit: if here { head(ctx) } else { None },
        };
        let run = match call::<ClaimVerificationRun, _>(coord, me, req).await {
            Ok(r) => r.run,
            Err(e) => return out.error(&e),
        };
        let Some(run) = run else {
            if once {
                if !out.json {
                    println!(
                        "{done} run{} done; nothing left to run",
                        if done == 1 { "" } else { "s" }
                    );
                }
                return 0;
            }
            tokio::select! {
                () = tokio::time::sleep(poll) => continue,
                _ = tokio::signal::ctrl_c() => return 0,
            }
        };
        let started = std::time::Instant::now();
        // Every executor that runs the policy's command needs its variables: a run
        // without one is an error naming them, never a silent pass. (A GitHub Actions
        // run takes its secrets from GitHub, not from this worker.)
        let needs_env = run.policy.executor != Executor::GithubActions;
        let outcome = if let Some(missing) = missing_env(&run.policy).filter(|_| needs_env) {
            missing
        } else {
            match (&actions, run.policy.executor) {
                (Some(a), Executor::GithubActions) => {
                    let followed = crate::actions::execute(coord, me, a, &run).await;
                    if followed.finished_elsewhere {
                        done += 1;
                        if !out.json {
                            println!(
                                "{} on {}: {}",
                                run.policy.name,
                                run.changeset_id,
                                followed.reason.unwrap_or_default()
                            );
                        }
                        continue;
                    }
                    Outcome {
                        status: followed.status,
                        exit_code: None,
                        reason: followed.reason,
                        output: followed.output,
                    }
                }
                (_, Executor::E2b) => match e2b {
                    Some(e) => execute_e2b(&run, e).await,
                    None => refused("this worker has no E2B_API_KEY".into()),
                },
                _ => execute(&run, ctx, no_sandbox).await,
            }
        };
        let report = ReportVerificationRunRequest {
            changeset_id: run.changeset_id.clone(),
            policy: run.policy.name.clone(),
            attempt: Some(run.attempt),
            status: outcome.status,
            exit_code: outcome.exit_code,
            duration_ms: Some(i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)),
            output_tail: Some(outcome.output),
            reason: outcome.reason.clone(),
            external_id: None,
            external_url: None,
        };
        match call::<ReportVerificationRun, _>(coord, me, report).await {
            Ok(r) => {
                done += 1;
                if out.json {
                    println!("{}", serde_json::to_string(&r).unwrap_or_default());
                } else {
                    println!(
                        "{} on {}: {}{} ({:.1} s); changeset {}",
                        run.policy.name,
                        run.changeset_id,
                        outcome.status.as_str(),
                        outcome.reason.map(|r| format!(": {r}")).unwrap_or_default(),
                        started.elapsed().as_secs_f64(),
                        status_word(&r.status),
                    );
                }
            }
            Err(e) => {
                // The claim may have passed to another worker: say so and go on.
                eprintln!(
                    "could not report {} on {}: {} [{}]",
                    run.policy.name, run.changeset_id, e.message, e.code
                );
            }
        }
    }
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
        VerifyCommand::Run {
            once,
            executor,
            repository,
            actions_poll,
            poll_seconds,
            no_sandbox,
        } => {
            let executors: Vec<Executor> = if executor.is_empty() {
                vec![Executor::Inline, Executor::Local]
            } else {
                executor.iter().filter_map(|e| Executor::parse(e)).collect()
            };
            let repository = match repository
                .as_deref()
                .map(|r| (r, coord_domain::github_sync::repository_name(r)))
            {
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
            let e2b = if executors.contains(&Executor::E2b) {
                match coord_remote::e2b::E2b::from_env() {
                    Ok(Some(e)) => Some(e),
                    Ok(None) => {
                        return out.error(&CoordError::field(
                            ErrorCode::InvalidArgument,
                            "E2B_API_KEY",
                            "e2b runs need E2B_API_KEY (E2B_API_URL for another control plane)",
                        ));
                    }
                    Err(e) => return out.error(&e),
                }
            } else {
                None
            };
            let api = if executors.contains(&Executor::GithubActions) {
                match coord_remote::github::GithubApi::from_env() {
                    Ok(Some(api)) => Some(api),
                    Ok(None) => {
                        return out.error(&CoordError::field(
                            ErrorCode::InvalidArgument,
                            "COORD_GITHUB_TOKEN",
                            "github_actions runs need COORD_GITHUB_TOKEN (or GITHUB_TOKEN): a token that may dispatch workflows (Actions: write)",
                        ));
                    }
                    Err(e) => return out.error(&e),
                }
            } else {
                None
            };
            if !(0.01..=3600.0).contains(&actions_poll) {
                return out.error(&CoordError::field(
                    ErrorCode::InvalidArgument,
                    "actions_poll",
                    "--actions-poll: 0.01 to 3600 seconds",
                ));
            }
            let poll = std::time::Duration::from_secs(poll_seconds.max(1));
            let w = Worker {
                executors,
                once,
                poll,
                no_sandbox,
            };
            let actions = api.as_ref().map(|api| crate::actions::Actions {
                api,
                repository,
                poll: std::time::Duration::from_secs_f64(actions_poll),
            });
            let remote = Remote {
                actions,
                e2b: e2b.as_ref(),
            };
            work(coord, ctx, &me, w, remote, out).await
        }
        VerifyCommand::Status { changeset_id, diff } => out.result(
            call::<GetVerification, _>(coord, &me, GetVerificationRequest { changeset_id, diff }).await,
            render_result,
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
            (None, n) if n >= i64::from(coord_domain::github_sync::MAX_REQUEST_ATTEMPTS) => "given up".to_string(),
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
            let label = coord_domain::labels::lock_label(&normalised);
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
                        coord_domain::labels::LOCKS_BLOCK
                    )
                } else {
                    label.clone()
                }
            })
        }
    }
}
