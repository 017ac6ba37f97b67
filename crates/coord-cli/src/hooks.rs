//! Agent-runtime hooks: Claude Code's hook protocol (JSON event on stdin, decision as
//! JSON on stdout, exit code 0) and git's pre-commit hook.
//!
//! A Claude Code hook must never break the agent's session: when the coordinator cannot
//! be reached, or the event cannot be read, the hook appends a line to
//! `<repo>/.coord/hooks.log` and lets the session continue.

use crate::args::GlobalArgs;
use crate::context::{Context, Settings, default_identity, explicit_agent_type};
use crate::open;
use coord_domain::access::Principal;
use coord_domain::guardrails::CheckGuardrailsRequest;
use coord_domain::handoffs::{ALL_AGENTS, Handoff, ReadHandoffRequest, WriteHandoffRequest};
use coord_domain::locks::{CheckEditRequest, CheckLocksRequest, LockInfo};
use coord_domain::sessions::{EndSessionRequest, HeartbeatRequest};
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::Coordination;
use coord_service::CoordinationExt as _;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest hook event read from stdin; Claude Code's are a few KiB.
const MAX_EVENT_BYTES: u64 = 4 * 1024 * 1024;

/// Claude Code tools that write files, and where their input names the file.
const EDIT_TOOLS: &[(&str, &str)] = &[
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

pub async fn run(event: &str, git_args: &[String], global: &GlobalArgs) -> u8 {
    let global = &global.settings();
    if event.eq_ignore_ascii_case("git-pre-commit") {
        return git_pre_commit(global).await;
    }
    if event.eq_ignore_ascii_case("git-pre-push") {
        return git_pre_push(global, git_args);
    }
    let mut raw = String::new();
    let read = std::io::stdin().take(MAX_EVENT_BYTES).read_to_string(&mut raw);
    if event == "PreToolUse" && raw.len() as u64 >= MAX_EVENT_BYTES {
        // A tool call too large to read is not allowed unread.
        println!(
            "{}",
            deny(format!(
                "coord guardrails: a tool call over {MAX_EVENT_BYTES} bytes is not analysed"
            ))
        );
        return 0;
    }
    let payload: Value = match read
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&raw).map_err(|e| format!("the hook event is not JSON: {e}")))
    {
        Ok(v) => v,
        Err(why) => {
            log_failure(&std::env::current_dir().unwrap_or_default(), event, &why);
            // A tool call coord cannot read is not allowed unread.
            if event == "PreToolUse" {
                println!(
                    "{}",
                    deny(format!("coord: the tool call could not be read ({why}): refused"))
                );
            }
            return 0;
        }
    };
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let ctx = match Context::resolve_in(global, cwd.clone()) {
        Ok(mut ctx) => {
            ctx.caller = hook_identity(global, ctx.session.as_ref());
            // The hook's identity is derived, not configured, unless given explicitly.
            if let Some(r) = ctx.remote.as_mut() {
                if global.agent_id.is_none() {
                    r.default_id = coord_remote::Unconfigured::Value(ctx.caller.agent_id.clone());
                }
                if explicit_agent_type(global).is_none() {
                    r.default_type = coord_remote::Unconfigured::Value(ctx.caller.agent_type.clone());
                }
            }
            ctx
        }
        Err(e) => {
            log_failure(&cwd, event, &e.message);
            if event == "PreToolUse" {
                println!(
                    "{}",
                    deny(format!("coord: {} [{}]: the tool call is refused", e.message, e.code))
                );
            }
            return 0;
        }
    };
    // The repository's coordinator process when one is running (a hook never starts
    // one: `coord mcp` does), else the database opened here.
    let coord = match crate::local_server::connect(&ctx, false).await {
        Some(c) => Ok(open::in_session(&ctx, c)),
        None => open::coordination(&ctx, 2).await,
    };
    let outcome = match coord {
        Ok(coord) => claude_event(event, &payload, coord.as_ref(), &ctx).await,
        // Without a coordinator the guardrails still decide: a hook that fails open
        // would let any destructive command through.
        Err(e) if event == "PreToolUse" => {
            log_failure(&ctx.repo_root, event, &format!("{} [{}]", e.message, e.code));
            Ok(guard_request(&payload, &ctx).and_then(|req| local_guard(&req, &e, &ctx)))
        }
        Err(e) => Err(e),
    };
    match outcome {
        Ok(Some(reply)) => {
            println!("{reply}");
            0
        }
        Ok(None) => 0,
        Err(e) => {
            log_failure(&ctx.repo_root, event, &format!("{} [{}]", e.message, e.code));
            0
        }
    }
}

/// Claude Code hooks run inside Claude Code: without a configured identity they speak
/// as the same agent its MCP server does — the session's own id from
/// `CLAUDE_CODE_SESSION_ID`, which Claude Code gives both. (Not from the event's
/// `session_id`: a Claude Code that does not pass the variable to its MCP server would
/// then have hooks and MCP server disagree, and block the session with its own locks.)
fn hook_identity(global: &Settings, session: Option<&crate::agent_session::AgentSession>) -> Caller {
    // Codex names no session to its hooks: the Codex process they run under does.
    if let Some(s) = session.filter(|s| s.runtime == "codex")
        && let Some(id) = s.agent_id(&crate::context::hostname())
    {
        return Caller::new(
            global.agent_id.clone().unwrap_or(id),
            explicit_agent_type(global).unwrap_or_else(|| "codex".into()),
        );
    }
    let (id, ty) = default_identity(true);
    Caller::new(
        global.agent_id.clone().unwrap_or(id),
        explicit_agent_type(global).unwrap_or(ty),
    )
}

async fn claude_event(
    event: &str,
    payload: &Value,
    coord: &dyn Coordination,
    ctx: &Context,
) -> CoordResult<Option<Value>> {
    let me = &ctx.caller;
    match event {
        "SessionStart" => {
            // A heartbeat, not a registration: it starts a session when there is none and
            // keeps the one the session's MCP server may have registered already (whose
            // connection's end must end that session, not a newer one).
            coord.heartbeat(me, HeartbeatRequest {}).await?;
            let context = session_context(coord, ctx).await?;
            Ok(Some(json!({
                "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
            })))
        }
        "SessionEnd" => {
            // What ending a session means is the `end_session` operation's to decide;
            // the hook only chooses its arguments.
            let session = payload.get("session_id").and_then(Value::as_str).unwrap_or("?");
            let reason = payload.get("reason").and_then(Value::as_str).unwrap_or("unknown");
            // An agent coord launched leaves its task to its supervisor, which completes it
            // with the final answer (or gives it back when there is none).
            let launched = me.agent_type == coord_domain::agents::spawn::AGENT_TYPE;
            let requeue = crate::context::claude_session().is_some() && !launched;
            let request = EndSessionRequest {
                release_locks: Some(true),
                // Only a session of its own (Claude Code gave its id) may give its claimed
                // tasks back: without one, every session on this host shares one agent id.
                requeue_tasks: Some(requeue),
                handoff: Some(WriteHandoffRequest {
                    summary: format!(
                        "Claude Code session {session} ended (reason: {reason}); its locks were released{}.",
                        if requeue { " and its claimed tasks requeued" } else { "" }
                    ),
                    ..Default::default()
                }),
                if_session: None,
            };
            coord.end_session(me, request).await?;
            Ok(None)
        }
        "PreToolUse" => pre_tool_use(payload, coord, ctx).await,
        "UserPromptSubmit" => urgent_messages(coord, ctx).await,
        _ => Ok(None),
    }
}

/// How much of the model's context unread urgent messages may take at one prompt.
const MESSAGE_BUDGET_CHARS: usize = 1500;

/// Unread urgent messages, added to the model's context once each: a message shown is
/// marked read, so the next prompt does not repeat it; what does not fit the budget
/// waits for the next prompt. Nothing to show, nothing printed.
async fn urgent_messages(coord: &dyn Coordination, ctx: &Context) -> CoordResult<Option<Value>> {
    use coord_domain::messages::{Importance, InboxRequest, MessageIdRequest};
    use coord_service::ops::messages::{Inbox, ReadMessage};
    let me = &ctx.caller;
    let unread = InboxRequest {
        unread_only: Some(true),
        limit: Some(200),
    };
    let inbox = coord.op::<Inbox>(me, unread).await?;
    let mut urgent: Vec<_> = inbox
        .messages
        .into_iter()
        .filter(|m| m.importance == Importance::Urgent)
        .collect();
    if urgent.is_empty() {
        return Ok(None);
    }
    urgent.reverse(); // oldest first: the order they were sent in
    let mut text = String::from("Agent Coordinator: urgent messages from other agents:\n");
    let mut shown = 0;
    for m in &urgent {
        let body: String = m.body.chars().take(600).collect();
        let entry = format!("- from {} ({}): {} — {}\n", m.from, m.message_id, m.subject, body);
        if shown > 0 && text.len() + entry.len() > MESSAGE_BUDGET_CHARS {
            break;
        }
        let read = MessageIdRequest {
            message_id: m.message_id.clone(),
        };
        // Shown means read; a message that could not be marked is left for next time
        // (and what was marked already is still shown).
        if coord.op::<ReadMessage>(me, read).await.is_err() {
            break;
        }
        text.push_str(&entry);
        shown += 1;
    }
    if shown == 0 {
        return Ok(None);
    }
    if shown < urgent.len() {
        text.push_str(&format!("({} more urgent: call inbox)\n", urgent.len() - shown));
    }
    text.push_str("Reply with send_message (same thread_id); acknowledge with ack_message once you have acted.");
    Ok(Some(json!({
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}
    })))
}

/// What a new session should know: its last handoff (or the project's latest), and
/// which files others hold.
async fn session_context(coord: &dyn Coordination, ctx: &Context) -> CoordResult<String> {
    let me = &ctx.caller;
    let mine = coord.read_handoff(me, ReadHandoffRequest::default()).await?.handoffs;
    let (label, handoff) = match mine.into_iter().next() {
        Some(h) => ("Your last handoff", Some(h)),
        None => {
            let any = ReadHandoffRequest {
                agent_name: Some(ALL_AGENTS.into()),
                limit: Some(1),
            };
            (
                "The project's latest handoff",
                coord.read_handoff(me, any).await?.handoffs.into_iter().next(),
            )
        }
    };
    let mut text = format!("Agent Coordinator: you are {} ({}).\n", me.agent_id, me.agent_type);
    match &handoff {
        Some(h) => text.push_str(&format!("{label}:\n{}", handoff_text(h))),
        None => text.push_str("No handoff documents yet.\n"),
    }
    let handoff_ref = handoff;
    // Memories are a help, not a requirement: a profile that may not recall (or a
    // failure) leaves the rest of the context as it was.
    if let Ok(Some(memories)) = memory_context(coord, me, handoff_ref.as_ref()).await {
        text.push_str(&memories);
    }
    let locks = coord.check_locks(me, CheckLocksRequest::default()).await?.locks;
    let others: Vec<String> = locks
        .iter()
        .filter(|l| l.locked_by != me.agent_id)
        .map(|l| format!("  - {} (locked by {})", l.file_path, l.locked_by))
        .collect();
    if !others.is_empty() {
        text.push_str(&format!(
            "Files locked by other agents — do not edit them:\n{}\n",
            others.join("\n")
        ));
    }
    text.push_str("Before editing shared files, acquire_lock them; write_handoff before you stop.");
    Ok(text)
}

/// The few memories most relevant to what the session is about to do, and its working
/// memory when it has one (a resumed or compacted session): fetched here, chosen and
/// bounded by `coord_domain::memory::session_start`.
async fn memory_context(
    coord: &dyn Coordination,
    me: &Caller,
    handoff: Option<&Handoff>,
) -> CoordResult<Option<String>> {
    use coord_domain::memory::RecallRequest;
    use coord_domain::memory::session_start::{RECALL_LIMIT, memories_block, recall_query, working_block};
    use coord_domain::memory::working::GetWorkingMemoryRequest;
    use coord_domain::queue::{ListTasksRequest, TaskStatus};
    use coord_service::ops::memory::{GetWorkingMemory, Recall};
    let claimed = coord
        .list_tasks(
            me,
            ListTasksRequest {
                status: Some(TaskStatus::Claimed),
                task_type: None,
                limit: Some(1000),
            },
        )
        .await?;
    let mine: Vec<String> = claimed
        .tasks
        .into_iter()
        .filter(|t| t.claimed_by.as_deref() == Some(me.agent_id.as_str()))
        .map(|t| t.task_description)
        .collect();
    let request = RecallRequest {
        task_description: recall_query(&mine, handoff),
        limit: Some(RECALL_LIMIT),
        ..Default::default()
    };
    let recalled = coord.op::<Recall>(me, request).await?;
    let mut text = memories_block(&recalled.memories);
    if let Ok(working) = coord
        .op::<GetWorkingMemory>(me, GetWorkingMemoryRequest::default())
        .await
    {
        text.push_str(&working_block(&working.entries));
    }
    Ok((!text.is_empty()).then_some(text))
}

fn handoff_text(h: &Handoff) -> String {
    let mut s = format!(
        "  from {} at {}: {}\n",
        h.agent_name,
        h.created_at.format("%Y-%m-%d %H:%M UTC"),
        h.summary
    );
    for (title, items) in [
        ("completed", &h.completed_work),
        ("in progress", &h.in_progress),
        ("decisions", &h.decisions),
        ("next steps", &h.next_steps),
        ("relevant files", &h.relevant_files),
    ] {
        if !items.is_empty() {
            s.push_str(&format!("  {title}: {}\n", items.join("; ")));
        }
    }
    s
}

/// The file an edit tool's input names.
fn edited_file(payload: &Value) -> Option<&str> {
    let tool = payload.get("tool_name").and_then(Value::as_str).unwrap_or_default();
    let (_, field) = EDIT_TOOLS.iter().find(|(name, _)| *name == tool)?;
    payload.get("tool_input")?.get(*field)?.as_str()
}

/// A patch in a tool call's input (Codex's `apply_patch`: `*** Begin Patch` …), in
/// whichever field the runtime puts it.
fn patch_of(payload: &Value) -> Option<&str> {
    let input = payload.get("tool_input")?;
    let mut texts: Vec<&str> = match input {
        Value::String(s) => vec![s.as_str()],
        Value::Object(m) => m.values().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    texts.retain(|t| t.contains("*** Begin Patch"));
    texts.first().copied()
}

/// Every file a tool call changes that coord can see, repository-relative (paths
/// outside the repository are not coord's to guard): an edit tool's file, a patch's
/// files, what a shell command writes or removes (`coord_guardrails::files_written`).
fn edited_files(payload: &Value, ctx: &Context) -> Vec<String> {
    let mut files: Vec<String> = edited_file(payload).map(String::from).into_iter().collect();
    if let Some(patch) = patch_of(payload) {
        files.extend(coord_guardrails::patch_files(patch));
    }
    if payload.get("tool_name").and_then(Value::as_str) == Some("Bash")
        && let Some(command) = payload
            .get("tool_input")
            .and_then(|i| i.get("command"))
            .and_then(Value::as_str)
    {
        files.extend(coord_guardrails::files_written(command));
    }
    files.iter().filter_map(|f| ctx.lock_path_inside(f)).collect()
}

/// What the guardrails check for a tool call: a `Bash` command line, or the file an
/// edit changes (credential files).
/// For an agent coord spawned every tool call is checked (its declared tools; spec 000's
/// activation check), the others' only when there is a command or file to judge.
fn guard_request(payload: &Value, ctx: &Context) -> Option<CheckGuardrailsRequest> {
    let tool = payload.get("tool_name").and_then(Value::as_str).map(String::from);
    if tool.as_deref() == Some("Bash") {
        let command = payload.get("tool_input")?.get("command")?.as_str()?;
        return Some(CheckGuardrailsRequest {
            command: Some(command.to_string()),
            files: None,
            tool,
            git_aliases: crate::guard::git_aliases(&ctx.cwd, command),
            entry_files: crate::guard::entry_files(&ctx.cwd, command),
        });
    }
    if let Some(file) = edited_file(payload) {
        return Some(CheckGuardrailsRequest {
            command: None,
            files: Some(vec![ctx.lock_path(file)]),
            tool,
            ..Default::default()
        });
    }
    if let Some(patch) = patch_of(payload) {
        return Some(CheckGuardrailsRequest {
            command: None,
            files: Some(
                coord_guardrails::patch_files(patch)
                    .iter()
                    .map(|f| ctx.lock_path(f))
                    .collect(),
            ),
            tool,
            ..Default::default()
        });
    }
    let spawned = ctx.caller.agent_type == coord_domain::agents::spawn::AGENT_TYPE;
    tool.filter(|_| spawned).map(|tool| CheckGuardrailsRequest {
        command: None,
        files: None,
        tool: Some(tool),
        ..Default::default()
    })
}

fn deny(reason: String) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

/// The guardrails' verdict on a tool call: a denial that says why and which approval
/// would let exactly this call through once, or `None` (allowed).
async fn guard(req: CheckGuardrailsRequest, coord: &dyn Coordination, ctx: &Context) -> CoordResult<Option<Value>> {
    let who = Principal::local(ctx.caller.clone());
    match coord_service::call::<coord_service::ops::guardrails::CheckGuardrails, _>(coord, &who, req.clone()).await {
        Ok(_) => Ok(None),
        Err(e)
            if matches!(
                e.code,
                ErrorCode::DestructiveOperationBlocked
                    | ErrorCode::CredentialFileProtected
                    | ErrorCode::ToolExecutionDenied
                    | ErrorCode::PersonRequired
            ) =>
        {
            let approval = e.details.get("approval_id").and_then(Value::as_str).map_or(String::new(), |id| {
                format!(
                    " Approval requested: {id}. Do not work around this: tell the person you work with that request \
                     {id} waits for their decision (they make it in the dashboard or their own terminal), then run \
                     exactly the same command again (it passes once)."
                )
            });
            Ok(Some(deny(format!("coord guardrails: {}.{approval}", e.message))))
        }
        // A registry row that no longer reads: the coordinator's own patterns cannot be
        // applied, and the built-in ones alone would ignore them. Refused.
        Err(e) if e.code == ErrorCode::InvalidGuardrail => Ok(Some(deny(format!(
            "coord guardrails: the pattern registry cannot be read ({}); a person must fix it (coord guard rules)",
            e.message
        )))),
        // Any other failure (the coordinator unreachable, a key expired, a request it
        // refused to read) must not let the call through: decide locally.
        Err(e) => {
            log_failure(&ctx.repo_root, "PreToolUse", &format!("{} [{}]", e.message, e.code));
            Ok(local_guard(&req, &e, ctx))
        }
    }
}

/// The decision when the coordinator cannot decide: the same analysis, at trust 0, with
/// no approval to offer.
fn local_guard(req: &CheckGuardrailsRequest, why: &CoordError, ctx: &Context) -> Option<Value> {
    // An agent coord launched runs nothing its coordinator did not check.
    if ctx.caller.agent_type == coord_domain::agents::spawn::AGENT_TYPE {
        return Some(deny(format!(
            "coord could not check this call ({}): an agent coord launched runs only what its coordinator checked",
            why.message
        )));
    }
    let mut findings = req
        .command
        .as_deref()
        .map(coord_guardrails::analyze)
        .unwrap_or_default();
    findings.extend(coord_guardrails::analyze_files(
        req.files.as_deref().unwrap_or_default(),
    ));
    let refusal = coord_domain::guardrails::decide(&findings, 0, &[]).err()?;
    Some(deny(format!(
        "coord guardrails: {} (decided locally, the coordinator could not: {}; no approval can be requested)",
        refusal.message, why.message
    )))
}

/// Blocks a destructive shell command, an edit of a credential file, and an edit of a
/// file another agent holds a live lock on; otherwise says nothing, leaving Claude Code's
/// normal permission flow in charge.
///
/// The two checks are independent, so they are asked together: a hook waits for one
/// answer from a database far away, not two (docs/benchmarks.md). The guardrails' denial
/// comes first; the edit check is audited either way (a `file_locked` refusal too, when
/// the guardrails also denied the call).
async fn pre_tool_use(payload: &Value, coord: &dyn Coordination, ctx: &Context) -> CoordResult<Option<Value>> {
    let guarded = async {
        match guard_request(payload, ctx) {
            Some(req) => guard(req, coord, ctx).await,
            None => Ok(None),
        }
    };
    let paths = edited_files(payload, ctx);
    let edited = async {
        if paths.is_empty() {
            return Ok(None);
        }
        match coord.check_edit(&ctx.caller, CheckEditRequest { paths }).await {
            Ok(_) => Ok(None),
            // A path outside the repository is not ours to guard.
            Err(e) if e.code == ErrorCode::InvalidPath => Ok(None),
            Err(e) if e.code == ErrorCode::FileLocked => Ok(Some(deny(e.message))),
            Err(e) => Err(e),
        }
    };
    let (guarded, edited) = tokio::join!(guarded, edited);
    match guarded? {
        Some(denied) => Ok(Some(denied)),
        None => edited,
    }
}

/// Where hook failures are recorded (the agent's session is never failed for them): in
/// coord's state beside the main checkout, shared by the repository's worktrees.
pub fn hooks_log(repo_root: &Path) -> PathBuf {
    crate::worktree::locate(repo_root)
        .shared_root
        .join(".coord")
        .join("hooks.log")
}

fn log_failure(cwd: &Path, event: &str, why: &str) {
    let root = crate::context::git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let path = hooks_log(&root);
    let _ = std::fs::create_dir_all(path.parent().unwrap_or(&root));
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(
            f,
            "{} {event}: {}",
            chrono::Utc::now().to_rfc3339(),
            why.replace('\n', " ")
        );
    }
}

/// Refuses a commit that touches files locked by another agent. Fails open (with a
/// warning) when the coordinator is unreachable: git must stay usable.
async fn git_pre_commit(global: &Settings) -> u8 {
    let ctx = match Context::resolve(global) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coord pre-commit: skipped ({})", e.message);
            return 0;
        }
    };
    let staged = match staged_files(&ctx.repo_root) {
        Ok(files) => files,
        Err(why) => {
            eprintln!("coord pre-commit: skipped (cannot list staged files: {why})");
            return 0;
        }
    };
    if staged.is_empty() {
        return 0;
    }
    // Credential files are refused locally: no coordinator needed, nothing to fail open.
    let credentials = coord_guardrails::analyze_files(&staged);
    if !credentials.is_empty() {
        eprintln!("coord: this commit changes credential files, which a person must review:");
        for f in &credentials {
            eprintln!("  {}", f.matched);
        }
        eprintln!(
            "Unstage them (git restore --staged FILE), or, as that person, bypass with `git commit --no-verify`."
        );
        return 1;
    }
    let outcome = async {
        let coord = open::coordination(&ctx, 2).await?;
        for chunk in staged.chunks(coord_domain::locks::MAX_EDIT_PATHS) {
            let paths = chunk.to_vec();
            coord.check_edit(&ctx.caller, CheckEditRequest { paths }).await?;
        }
        Ok::<_, coord_domain::CoordError>(())
    }
    .await;
    let e = match outcome {
        Ok(_) => return 0,
        Err(e) if e.code == ErrorCode::FileLocked => e,
        Err(e) => {
            eprintln!(
                "coord pre-commit: skipped, the coordinator is unavailable ({})",
                e.message
            );
            return 0;
        }
    };
    let foreign: Vec<LockInfo> = e
        .details
        .get("blocked")
        .and_then(|b| serde_json::from_value(b.clone()).ok())
        .unwrap_or_default();
    eprintln!("coord: this commit touches files locked by other agents:");
    for l in &foreign {
        let why = l.reason.as_deref().map(|r| format!(" — {r}")).unwrap_or_default();
        eprintln!(
            "  {}  locked by {} ({}) until {}{why}",
            l.file_path,
            l.locked_by,
            l.agent_type,
            l.expires_at.format("%Y-%m-%d %H:%M UTC")
        );
    }
    eprintln!(
        "You are {}. Coordinate with them, or bypass with `git commit --no-verify`.",
        ctx.caller.agent_id
    );
    1
}

/// git's pre-push hook: stdin has one line per ref pushed, `<local ref> <local sha>
/// <remote ref> <remote sha>`. A push that deletes a protected branch, or moves one to a
/// commit that does not contain its current tip (a force push), or pushes or deletes a
/// release tag, is refused — decided locally by git's own ancestry, so it holds without a
/// coordinator. So is any push to a remote that deploys (`heroku`, `dokku`: git passes
/// the remote's name and URL as arguments).
fn git_pre_push(global: &Settings, git_args: &[String]) -> u8 {
    let repo_root = match Context::resolve(global) {
        Ok(c) => c.repo_root,
        Err(_) => std::env::current_dir().unwrap_or_default(),
    };
    let mut input = String::new();
    if std::io::stdin()
        .take(MAX_EVENT_BYTES)
        .read_to_string(&mut input)
        .is_err()
    {
        eprintln!("coord pre-push: refused (the refs git sent could not be read)");
        return 1;
    }
    let mut refused = Vec::new();
    if git_args.is_empty() {
        eprintln!(
            "coord pre-push: git passed no remote to this hook (it predates remote checks): run `coord init git-hook` again"
        );
    }
    if let Some(remote) = git_args.first()
        && coord_guardrails::rules::deploy_remote(remote, git_args.get(1).map(String::as_str))
    {
        refused.push(format!("pushing to {remote}, which deploys what it receives"));
    }
    for line in input.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, local_sha, remote_ref, remote_sha] = fields[..] else {
            continue;
        };
        let zero = |sha: &str| sha.chars().all(|c| c == '0');
        // A release tag pushed or deleted starts or withdraws a release (as the Bash
        // hooks judge `git push origin v1.2.3`).
        if coord_guardrails::rules::release_tag(remote_ref) {
            let verb = if zero(local_sha) { "deleting" } else { "pushing" };
            refused.push(format!(
                "{verb} the release tag {}",
                remote_ref.trim_start_matches("refs/tags/")
            ));
            continue;
        }
        let branch = remote_ref.strip_prefix("refs/heads/").unwrap_or(remote_ref);
        if !coord_guardrails::rules::protected(Some(branch)) {
            continue;
        }
        if zero(local_sha) {
            refused.push(format!("deleting {branch}"));
        } else if !zero(remote_sha) && !is_ancestor(&repo_root, remote_sha, local_sha) {
            refused.push(format!(
                "force-pushing {branch} (its remote tip {} is not in what you push)",
                &remote_sha[..remote_sha.len().min(12)]
            ));
        }
    }
    if refused.is_empty() {
        return 0;
    }
    eprintln!("coord: this push is refused by the guardrails: {}.", refused.join("; "));
    eprintln!(
        "For a rewritten branch, rebase or merge onto the remote one and push again; a deploy, a release or a \
         deletion is a person's decision: they may bypass with `git push --no-verify`."
    );
    1
}

/// Whether `ancestor` is reachable from `descendant` (an unknown commit is not).
fn is_ancestor(repo_root: &Path, ancestor: &str, descendant: &str) -> bool {
    std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", ancestor, descendant])
        .current_dir(repo_root)
        .status()
        .is_ok_and(|s| s.success())
}

fn staged_files(repo_root: &Path) -> Result<Vec<String>, String> {
    let out = std::process::Command::new("git")
        .args(["diff", "--cached", "--name-only", "-z", "--diff-filter=ACMRD"])
        .current_dir(repo_root)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}
