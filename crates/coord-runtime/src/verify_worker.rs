//! The verification worker (`coord verify run`): claims runs of the executors this
//! machine runs — in the sandbox here, on GitHub Actions, or in an E2B sandbox — executes
//! each and reports it (docs/verification.md).

use crate::context::Context;
use coord_domain::access::Principal;
use coord_domain::verification::{
    self, ClaimVerificationRunRequest, ClaimedRun, Executor, ReportVerificationRunRequest, RunStatus,
    VerificationResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::verification::{ClaimVerificationRun, ReportVerificationRun};
use coord_service::{Coordination, call};

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

/// A run whose command exited with `code` (`place`: where it ran, for the reason).
fn exited(code: i32, place: &str, output: String) -> Outcome {
    Outcome {
        status: if code == 0 {
            RunStatus::Passed
        } else {
            RunStatus::Failed
        },
        exit_code: Some(code),
        reason: (code != 0).then(|| format!("exit code {code}{place}")),
        output,
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
        Ran::Exited { code, output } => exited(code, " in the E2B sandbox", output),
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
    if let Some(wrong) = wrong_checkout(run, ctx) {
        return wrong;
    }
    let mut command = match sandbox_command(run, ctx, no_sandbox) {
        Ok(c) => c,
        Err(refusal) => return refusal,
    };
    let p = &run.policy;
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
        Ok(Ok(status)) => exited(coord_egress::sandbox::exit_code(status), "", output),
    }
}

/// The run must see the changeset's code and nothing else: HEAD at its commit, no
/// changes or untracked files (coord's own state aside). Why not, as the run's outcome.
fn wrong_checkout(run: &ClaimedRun, ctx: &Context) -> Option<Outcome> {
    let commit = run.commit.as_ref()?;
    match head(ctx) {
        Some(h) if h.starts_with(commit.as_str()) => {}
        Some(h) => {
            return Some(refused(format!(
                "the working tree is at {h}, not the changeset's commit {commit}: run the worker in a checkout of it"
            )));
        }
        None => {
            return Some(refused(format!(
                "{} is not a git checkout: cannot check commit {commit}",
                ctx.repo_root.display()
            )));
        }
    }
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all", "--", ".", ":!.coord"])
        .current_dir(&ctx.repo_root)
        .output();
    match status {
        Ok(o) if o.status.success() && o.stdout.is_empty() => None,
        Ok(o) if o.status.success() => {
            let first = String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            Some(refused(format!(
                "the working tree has changes beside commit {commit} ({first}, ...): run the worker in a clean checkout"
            )))
        }
        _ => Some(refused(
            "git status failed: cannot tell whether the working tree is the commit's".into(),
        )),
    }
}

/// `coord sandbox run` for the run's command, reaching the same coordinator as this
/// worker, its output piped, in a process group of its own.
fn sandbox_command(run: &ClaimedRun, ctx: &Context, no_sandbox: bool) -> Result<tokio::process::Command, Outcome> {
    let p = &run.policy;
    let Ok(exe) = std::env::current_exe() else {
        return Err(refused("cannot find the coord binary".into()));
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
    Ok(command)
}

/// The services runs of the remote executors go to.
pub struct Remote<'a> {
    pub actions: Option<crate::actions::Actions<'a>>,
    pub e2b: Option<&'a coord_remote::e2b::E2b>,
}

/// What `coord verify run` was asked to do.
pub struct Worker {
    pub executors: Vec<Executor>,
    /// Stop when nothing is left (else poll every `poll`).
    pub once: bool,
    pub poll: std::time::Duration,
    pub no_sandbox: bool,
}

/// What a worker did, for whoever runs it to show.
pub enum WorkerEvent<'a> {
    /// A GitHub Actions run that had already been reported elsewhere (a webhook).
    FinishedElsewhere { run: &'a ClaimedRun, reason: String },
    /// A run executed and reported: its status, why, how long, and the changeset's result.
    Reported {
        run: &'a ClaimedRun,
        status: RunStatus,
        reason: Option<String>,
        seconds: f64,
        result: &'a VerificationResult,
    },
    /// A run executed whose report was refused (the claim may have passed to another worker).
    NotReported { run: &'a ClaimedRun, error: &'a CoordError },
    /// `once`: nothing is left; this many runs were done.
    Drained { done: usize },
}

/// `coord verify run`: claims runs of the executors this machine runs, executes each and
/// reports it; with `once`, until nothing is left. Ends at Ctrl-C, or with the error
/// that stops every run (no sandbox, a claim refused).
pub async fn work(
    coord: &dyn Coordination,
    ctx: &Context,
    me: &Principal,
    w: Worker,
    remote: Remote<'_>,
    on: &mut (dyn FnMut(WorkerEvent<'_>) + Send),
) -> CoordResult<()> {
    let Remote { actions, e2b } = remote;
    // Runs on this machine need its checkout at the changeset's commit and the sandbox;
    // runs on GitHub need neither.
    let here = w
        .executors
        .iter()
        .any(|e| matches!(e, Executor::Inline | Executor::Local));
    if here && !w.no_sandbox {
        sandbox_ready().await?;
    }
    let mut done = 0usize;
    loop {
        let req = ClaimVerificationRunRequest {
            executors: w.executors.clone(),
            commit: if here { head(ctx) } else { None },
        };
        let Some(run) = call::<ClaimVerificationRun, _>(coord, me, req).await?.run else {
            if w.once {
                on(WorkerEvent::Drained { done });
                return Ok(());
            }
            tokio::select! {
                () = tokio::time::sleep(w.poll) => continue,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        };
        let started = std::time::Instant::now();
        let outcome = match execute_any(coord, ctx, me, &run, (&actions, e2b), w.no_sandbox).await {
            Ok(o) => o,
            Err(reason) => {
                done += 1;
                on(WorkerEvent::FinishedElsewhere { run: &run, reason });
                continue;
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
                on(WorkerEvent::Reported {
                    run: &run,
                    status: outcome.status,
                    reason: outcome.reason,
                    seconds: started.elapsed().as_secs_f64(),
                    result: &r,
                });
            }
            Err(e) => on(WorkerEvent::NotReported { run: &run, error: &e }),
        }
    }
}

/// A sandbox that cannot start would fail every run as the change's fault: said once,
/// before claiming anything.
async fn sandbox_ready() -> CoordResult<()> {
    let why = match coord_egress::sandbox::find_bwrap() {
        None => Some("bubblewrap (bwrap) is not installed (apt-get install bubblewrap)".to_string()),
        Some(bwrap) => coord_egress::sandbox::unavailable(&bwrap).await,
    };
    match why {
        Some(why) => Err(CoordError::new(
            ErrorCode::SandboxUnavailable,
            format!("{why}: runs need the sandbox (--no-sandbox runs them without it, advisory)"),
        )),
        None => Ok(()),
    }
}

/// One claimed run on its executor: its outcome; `Err(reason)` when a GitHub Actions
/// run had already finished elsewhere (nothing to report).
async fn execute_any(
    coord: &dyn Coordination,
    ctx: &Context,
    me: &Principal,
    run: &ClaimedRun,
    (actions, e2b): (&Option<crate::actions::Actions<'_>>, Option<&coord_remote::e2b::E2b>),
    no_sandbox: bool,
) -> Result<Outcome, String> {
    // Every executor that runs the policy's command needs its variables: a run
    // without one is an error naming them, never a silent pass. (A GitHub Actions
    // run takes its secrets from GitHub, not from this worker.)
    let needs_env = run.policy.executor != Executor::GithubActions;
    if let Some(missing) = missing_env(&run.policy).filter(|_| needs_env) {
        return Ok(missing);
    }
    match (actions, run.policy.executor) {
        (Some(a), Executor::GithubActions) => {
            let followed = crate::actions::execute(coord, me, a, run).await;
            if followed.finished_elsewhere {
                return Err(followed.reason.unwrap_or_default());
            }
            Ok(Outcome {
                status: followed.status,
                exit_code: None,
                reason: followed.reason,
                output: followed.output,
            })
        }
        (_, Executor::E2b) => Ok(match e2b {
            Some(e) => execute_e2b(run, e).await,
            None => refused("this worker has no E2B_API_KEY".into()),
        }),
        _ => Ok(execute(run, ctx, no_sandbox).await),
    }
}
