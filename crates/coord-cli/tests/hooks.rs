//! `coord hook <event>` fed with Claude Code hook payloads (tests/fixtures/claude-code),
//! and `coord init` for Claude Code, Codex and git, including a real `git commit`.

mod support;

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_coord");

struct Project {
    dir: tempfile::TempDir,
    /// The user's Claude Code configuration directory, outside the repository.
    user: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        Project {
            dir,
            user: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.root())
            .env_remove("COORD_DATABASE_URL")
            .env_remove("COORD_AGENT_ID")
            .env_remove("COORD_AGENT_TYPE")
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            // `coord init claude` approves its server in the user's settings: a scratch one.
            .env("CLAUDE_CONFIG_DIR", self.user.path())
            .env("XDG_CONFIG_HOME", self.user.path().join("xdg"));
        c
    }

    fn coord(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.coord(&all);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{args:?}: {out:?}"))
    }

    /// Runs a hook with a recorded payload (its `$E2E/work` pointing at this project).
    fn hook(&self, event: &str, fixture: &str, env: &[(&str, &str)]) -> Output {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code")
            .join(fixture);
        let payload = std::fs::read_to_string(path)
            .unwrap()
            .replace("$E2E/work", &self.root().display().to_string());
        self.hook_raw(event, &payload, env)
    }

    /// The Bash tool's PreToolUse hook for `command` (JSON-escaped into the payload).
    fn bash(&self, command: &str) -> Output {
        let payload = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/PreToolUse-Bash.json"),
        )
        .unwrap()
        .replace("$E2E/work", &self.root().display().to_string())
        .replace(
            "\"git push --force origin main\"",
            &serde_json::to_string(command).unwrap(),
        );
        self.hook_raw("PreToolUse", &payload, CLAUDE)
    }

    fn hook_raw(&self, event: &str, stdin: &str, env: &[(&str, &str)]) -> Output {
        let mut c = self.command(&["hook", event]);
        // Claude Code runs hooks from the project but not necessarily in it.
        c.current_dir(std::env::temp_dir());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }
}

const CLAUDE: &[(&str, &str)] = &[("COORD_AGENT_ID", "claude-1"), ("CLAUDECODE", "1")];

fn stdout_json(out: &Output) -> Option<Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        None
    } else {
        Some(serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("hook stdout is not JSON ({e}): {text}")))
    }
}

#[test]
fn session_start_registers_and_hands_over_the_last_handoff() {
    let p = Project::new();
    p.coord(&[
        "--agent-id",
        "claude-1",
        "handoff",
        "write",
        "Refactored auth",
        "--next",
        "write logout tests",
    ]);
    p.coord(&["--agent-id", "bob", "lock", "acquire", "src/db.rs"]);
    let out = p.hook("SessionStart", "SessionStart.json", CLAUDE);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out).expect("SessionStart answers with context");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("Refactored auth") && context.contains("write logout tests"),
        "{context}"
    );
    assert!(context.contains("src/db.rs (locked by bob)"), "{context}");
    let agents = p.json(&["agents", "discover", "--status", "active"]);
    assert!(
        agents["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["agent_id"] == "claude-1")
    );
}

#[test]
fn session_start_adds_the_relevant_memories_and_the_working_memory() {
    let p = Project::new();
    p.coord(&[
        "--agent-id",
        "claude-1",
        "handoff",
        "write",
        "Refactored auth",
        "--next",
        "write logout tests",
    ]);
    let remember = |summary: &str, lesson: &str| {
        p.json(&[
            "--agent-id",
            "codex-2",
            "memory",
            "remember",
            "test_failure",
            summary,
            "--lesson",
            lesson,
        ])
    };
    let relevant = remember(
        "logout tests failed: the session cookie survived the logout handler",
        "clear the cookie in the logout handler",
    );
    remember("docker image grew to 2 GB", "use a distroless base image");
    let out = p.hook("SessionStart", "SessionStart.json", CLAUDE);
    let v = stdout_json(&out).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("session cookie survived") && context.contains(relevant["memory_id"].as_str().unwrap()),
        "{context}"
    );
    assert!(
        !context.contains("docker image"),
        "unrelated memories stay out: {context}"
    );
    assert!(!context.contains("working memory"), "{context}");
    // A resumed (or compacted) session gets its working memory back.
    let entries = r#"{"entries": [{"key": "plan", "kind": "plan", "content": "cover logout on every device", "critical": true}]}"#;
    let w = p.json(&["--agent-id", "claude-1", "call", "update_working_memory", entries]);
    assert_eq!(w["success"], true, "{w}");
    let out = p.hook("SessionStart", "SessionStart.json", CLAUDE);
    let v = stdout_json(&out).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("plan (plan, critical): cover logout on every device"),
        "{context}"
    );
}

#[test]
fn session_start_without_any_handoff_still_answers() {
    let p = Project::new();
    let out = p.hook("SessionStart", "SessionStart.json", CLAUDE);
    let v = stdout_json(&out).unwrap();
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("No handoff documents yet")
    );
}

#[test]
fn pre_tool_use_blocks_edits_of_files_locked_by_another_agent() {
    let p = Project::new();
    p.coord(&[
        "--agent-id",
        "bob",
        "lock",
        "acquire",
        "src/locked.rs",
        "--reason",
        "migrating the schema",
    ]);
    p.coord(&["--agent-id", "bob", "lock", "acquire", "nb/analysis.ipynb"]);
    for fixture in [
        "PreToolUse-Write.json",
        "PreToolUse-MultiEdit.json",
        "PreToolUse-NotebookEdit.json",
    ] {
        let out = p.hook("PreToolUse", fixture, CLAUDE);
        assert_eq!(out.status.code(), Some(0), "{fixture}");
        let v = stdout_json(&out).unwrap_or_else(|| panic!("{fixture}: the edit must be denied"));
        let decision = &v["hookSpecificOutput"];
        assert_eq!(decision["hookEventName"], "PreToolUse");
        assert_eq!(decision["permissionDecision"], "deny", "{fixture}");
        let reason = decision["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("bob"), "{reason}");
    }
    let write = stdout_json(&p.hook("PreToolUse", "PreToolUse-Write.json", CLAUDE)).unwrap();
    assert!(
        write["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("migrating the schema")
    );
    // Unlocked files, non-edit tools, and the agent's own locks pass silently.
    let free = p.hook("PreToolUse", "PreToolUse-Edit.json", CLAUDE);
    assert_eq!((free.status.code(), stdout_json(&free)), (Some(0), None));
    let mcp = p.hook("PreToolUse", "PreToolUse.json", CLAUDE);
    assert_eq!((mcp.status.code(), stdout_json(&mcp)), (Some(0), None));
    p.coord(&["--agent-id", "claude-1", "lock", "acquire", "src/free.rs"]);
    let mine = p.hook("PreToolUse", "PreToolUse-Edit.json", CLAUDE);
    assert_eq!(stdout_json(&mine), None, "an agent may edit what it locked itself");

    // A shell command writing or removing a held file is an edit of it too (issue 51).
    for command in [
        "printf x > src/locked.rs",
        "sed -i 's/a/b/' src/locked.rs",
        "rm -f src/locked.rs",
        "cp /tmp/x src/locked.rs",
    ] {
        let v = stdout_json(&p.bash(command)).unwrap_or_else(|| panic!("{command} must be denied"));
        assert!(
            v["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("bob"),
            "{v}"
        );
    }
    for command in [
        "cat src/locked.rs",
        "printf x > src/free.rs",
        "printf x > /tmp/elsewhere",
    ] {
        assert_eq!(stdout_json(&p.bash(command)), None, "{command}");
    }
    // Codex's apply_patch: every file the patch touches.
    let patch = serde_json::json!({
        "session_id": "s", "cwd": p.root().display().to_string(), "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Update File: src/free.rs\n@@\n-a\n+b\n*** Update File: src/locked.rs\n@@\n-a\n+b\n*** End Patch\n"},
    });
    let v = stdout_json(&p.hook_raw("PreToolUse", &patch.to_string(), CLAUDE)).expect("the patch is denied");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("bob"),
        "{v}"
    );
}

/// A directory lock covers every file below it, a glob lock every file it can match: the
/// edit hook refuses them like a lock on the file itself.
/// The Bash tool goes through the guardrails: a destructive command is denied with the
/// approval that would let it through once; a credential file's edit needs a person;
/// without a coordinator the hook still decides (it never fails open).
#[test]
fn pre_tool_use_denies_destructive_commands_and_credential_edits() {
    let p = Project::new();
    let reason = denial_reason;
    let denied = reason(&p.hook("PreToolUse", "PreToolUse-Bash.json", CLAUDE));
    assert!(denied.contains("force_push"), "{denied}");
    let id = denied
        .split_whitespace()
        .find(|w| w.starts_with("apr_"))
        .map(|w| w.trim_end_matches(['.', ',']).to_string())
        .expect("an approval id");
    let approved = p.coord(&["approvals", "approve", &id]);
    assert!(approved.status.success(), "{approved:?}");
    assert_eq!(
        stdout_json(&p.hook("PreToolUse", "PreToolUse-Bash.json", CLAUDE)),
        None,
        "passes once"
    );
    assert!(reason(&p.hook("PreToolUse", "PreToolUse-Bash.json", CLAUDE)).contains("force_push"));
    let bash = |command: &str| p.bash(command);
    assert_eq!(stdout_json(&bash("cargo test && git status")), None);
    assert!(reason(&bash("cd /tmp && sudo rm -rf /srv")).contains("recursive_delete"));
    let write_env = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/PreToolUse-Write.json"),
    )
    .unwrap()
    .replace("$E2E/work", &p.root().display().to_string())
    .replace("src/locked.rs", "config/.env");
    assert!(reason(&p.hook_raw("PreToolUse", &write_env, CLAUDE)).contains("credential"));
    // Every decision is in the audit trail.
    let audit = p.json(&["audit", "--operation", "check_guardrails"]);
    assert!(audit["entries"].as_array().unwrap().len() >= 5, "{audit}");
    // The coordinator is unreachable: the hook still decides, locally.
    let down = [
        ("COORD_AGENT_ID", "claude-1"),
        ("CLAUDECODE", "1"),
        (
            "COORD_DATABASE_URL",
            "postgres://nobody@127.0.0.1:1/none?connect_timeout=1",
        ),
    ];
    let offline = reason(&p.hook("PreToolUse", "PreToolUse-Bash.json", &down));
    assert!(offline.contains("decided locally"), "{offline}");
}

#[test]
fn pre_tool_use_honours_directory_and_glob_locks() {
    let p = Project::new();
    p.coord(&["--agent-id", "bob", "lock", "acquire", "src/", "--reason", "moving src"]);
    let out = p.hook("PreToolUse", "PreToolUse-Edit.json", CLAUDE);
    let v = stdout_json(&out).expect("src/free.rs is under bob's src/ lock");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("src/") && reason.contains("bob") && reason.contains("moving src"),
        "{reason}"
    );
    p.coord(&["--agent-id", "bob", "lock", "release", "src/"]);
    assert_eq!(stdout_json(&p.hook("PreToolUse", "PreToolUse-Edit.json", CLAUDE)), None);
    p.coord(&["--agent-id", "bob", "lock", "acquire", "**/*.rs"]);
    let v = stdout_json(&p.hook("PreToolUse", "PreToolUse-Write.json", CLAUDE)).expect("**/*.rs covers src/locked.rs");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
}

#[test]
fn session_end_releases_locks_and_writes_a_final_handoff() {
    let p = Project::new();
    p.hook("SessionStart", "SessionStart.json", CLAUDE);
    p.coord(&["--agent-id", "claude-1", "lock", "acquire", "src/a.rs"]);
    p.coord(&["--agent-id", "claude-1", "lock", "acquire", "src/b.rs"]);
    p.coord(&["--agent-id", "bob", "lock", "acquire", "src/c.rs"]);
    p.coord(&["--agent-id", "boss", "work", "submit", "t", "finish the parser"]);
    p.coord(&["--agent-id", "claude-1", "work", "claim"]);
    let out = p.hook("SessionEnd", "SessionEnd.json", CLAUDE);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    let locks = p.json(&["lock", "list"]);
    let holders: Vec<&str> = locks["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["locked_by"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["bob"], "only claude-1's locks were released");
    let handoff = p.json(&["--agent-id", "claude-1", "handoff", "read"]);
    let h = &handoff["handoffs"][0];
    assert!(
        h["summary"]
            .as_str()
            .unwrap()
            .contains("63a0ffd8-c0f4-4551-876b-d459d921360f"),
        "{h}"
    );
    assert_eq!(h["relevant_files"], serde_json::json!(["src/a.rs", "src/b.rs"]));
    assert!(h["in_progress"][0].as_str().unwrap().contains("finish the parser"));
    let idle = p.json(&["agents", "discover", "--status", "idle"]);
    assert_eq!(idle["agents"][0]["agent_id"], "claude-1");
}

/// Unread urgent messages reach the model at its next prompt, once each, within a
/// budget; other messages wait in the inbox.
#[test]
fn urgent_messages_are_added_to_the_next_prompt_once() {
    let p = Project::new();
    let send = |importance: &str, subject: &str| {
        let request = serde_json::json!({"to": "claude-1", "subject": subject, "body": "please release src/a.rs", "importance": importance});
        p.json(&["--agent-id", "bob", "call", "send_message", &request.to_string()])
    };
    send("normal", "fyi");
    let urgent = send("urgent", "need src/a.rs");
    let out = p.hook("UserPromptSubmit", "UserPromptSubmit.json", CLAUDE);
    let reply = stdout_json(&out).expect("the urgent message is shown");
    let context = reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("from bob") && context.contains("need src/a.rs"),
        "{context}"
    );
    assert!(context.contains(urgent["message_id"].as_str().unwrap()), "{context}");
    assert!(!context.contains("fyi"), "only urgent messages: {context}");
    // Shown once: read now; the normal one stays unread in the inbox.
    let again = p.hook("UserPromptSubmit", "UserPromptSubmit.json", CLAUDE);
    assert_eq!(stdout_json(&again), None);
    let inbox = p.json(&["--agent-id", "claude-1", "call", "inbox", r#"{"unread_only": true}"#]);
    assert_eq!(inbox["messages"][0]["subject"], "fyi");
    assert_eq!(inbox["unread"], 1);
    // Many urgent messages: the budget holds, the rest wait for the next prompt.
    for i in 0..12 {
        send("urgent", &format!("urgent number {i} {}", "x".repeat(150)));
    }
    let out = p.hook("UserPromptSubmit", "UserPromptSubmit.json", CLAUDE);
    let reply = stdout_json(&out).unwrap();
    let context = reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.len() < 2500, "{}", context.len());
    assert!(context.contains("more urgent: call inbox"), "{context}");
    assert!(context.contains("urgent number 0"), "oldest first: {context}");
}

/// The reason of a hook's denial (the test fails when the hook did not deny).
fn denial_reason(out: &Output) -> String {
    let v = stdout_json(out).unwrap_or_else(|| panic!("denied: {out:?}"));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn other_events_are_accepted_silently() {
    let p = Project::new();
    for event in ["PostToolUse", "Stop", "UserPromptSubmit"] {
        let out = p.hook(event, &format!("{event}.json"), CLAUDE);
        assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None), "{event}");
    }
}

#[test]
fn hooks_never_break_the_session_and_log_locally() {
    let p = Project::new();
    let down = [("COORD_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")];
    for (event, fixture) in [
        ("SessionStart", "SessionStart.json"),
        ("PreToolUse", "PreToolUse-Write.json"),
        ("SessionEnd", "SessionEnd.json"),
    ] {
        let out = p.hook(event, fixture, &down);
        assert_eq!(out.status.code(), Some(0), "{event} must let the session continue");
        assert_eq!(stdout_json(&out), None, "{event}");
    }
    // An unreadable event carries no cwd: its failure is logged where the hook runs.
    let mut garbled = p.command(&["hook", "SessionStart"]);
    let mut child = garbled.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"{ not json").unwrap();
    let garbled = child.wait_with_output().unwrap();
    assert_eq!((garbled.status.code(), garbled.stdout.is_empty()), (Some(0), true));
    let log_path: PathBuf = p.root().join(".coord/hooks.log");
    let log = std::fs::read_to_string(&log_path).expect("failures are logged in the project");
    assert_eq!(
        log.lines().filter(|l| l.contains("database_unavailable")).count(),
        3,
        "{log}"
    );
    assert_eq!(log.lines().filter(|l| l.contains("not JSON")).count(), 1, "{log}");
}

#[test]
fn without_configuration_hooks_speak_as_claude_code_on_this_host() {
    let p = Project::new();
    p.hook("SessionStart", "SessionStart.json", &[]);
    let agents = p.json(&["agents", "discover"]);
    let id = agents["agents"][0]["agent_id"].as_str().unwrap();
    // Without CLAUDE_CODE_SESSION_ID (older Claude Code): one agent per host, as the MCP
    // server of such a Claude Code would be.
    assert!(id.starts_with("claude-code@"), "{id}");
    assert_eq!(agents["agents"][0]["agent_type"], "claude_code");
    // A `coord` run from Claude Code's shell is the same agent.
    let out = p
        .command(&["--json", "lock", "acquire", "x.rs"])
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true);
    let locks = p.json(&["lock", "list"]);
    assert_eq!(locks["locks"][0]["locked_by"], id);
}

/// Two Claude Code sessions on one host, both unconfigured, are two agents: the second
/// session's Write of a file the first holds is denied, and the denial is audited.
#[test]
fn two_claude_sessions_on_one_host_are_two_agents() {
    let p = Project::new();
    let fixture = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/claude-code")
                .join(name),
        )
        .unwrap()
        .replace("$E2E/work", &p.root().display().to_string())
    };
    let session_a = "aaaaaaaa-0000-4000-8000-000000000001";
    let session_b = "bbbbbbbb-0000-4000-8000-000000000002";
    // Claude Code gives its hooks and its MCP server the session in CLAUDE_CODE_SESSION_ID.
    for session in [session_a, session_b] {
        let start = fixture("SessionStart.json").replace("63a0ffd8-c0f4-4551-876b-d459d921360f", session);
        p.hook_raw(
            "SessionStart",
            &start,
            &[("CLAUDECODE", "1"), ("CLAUDE_CODE_SESSION_ID", session)],
        );
    }
    let agents = p.json(&["agents", "discover"]);
    let ids: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{agents}");
    // Session A's MCP server (CLAUDE_CODE_SESSION_ID in its environment) takes the lock…
    let out = p
        .command(&["--json", "lock", "acquire", "src/shared.rs"])
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_SESSION_ID", session_a)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // …and session B's Write of it is denied by B's hook, A's own Write is not.
    let write = |session: &str| {
        let event = fixture("PreToolUse-Write.json")
            .replace("63a0ffd8-c0f4-4551-876b-d459d921360f", session)
            .replace("src/locked.rs", "src/shared.rs");
        p.hook_raw(
            "PreToolUse",
            &event,
            &[("CLAUDECODE", "1"), ("CLAUDE_CODE_SESSION_ID", session)],
        )
    };
    let denied = stdout_json(&write(session_b)).expect("B is denied");
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(stdout_json(&write(session_a)), None, "A's own lock never blocks A");
    let audit = p.json(&["audit", "--operation", "check_edit", "--result", "failure"]);
    assert_eq!(audit["entries"].as_array().unwrap().len(), 1, "{audit}");
}

#[test]
fn init_claude_writes_mcp_and_hook_configuration_idempotently() {
    let p = Project::new();
    let dry = p.json(&["init", "claude", "--dry-run"]);
    assert_eq!(dry["files"][0]["action"], "would_create");
    assert!(dry["files"][0]["diff"].as_str().unwrap().contains("\"coord\""));
    assert!(!p.root().join(".mcp.json").exists(), "a dry run writes nothing");
    let first = p.json(&["init", "claude"]);
    assert!(
        first["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["action"] == "created"),
        "{first}"
    );
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(p.root().join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["coord"],
        serde_json::json!({"type": "stdio", "command": "coord", "args": ["mcp"]})
    );
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(p.root().join(".claude/settings.json")).unwrap()).unwrap();
    for (event, command) in [
        ("SessionStart", "coord hook SessionStart"),
        ("SessionEnd", "coord hook SessionEnd"),
        // Fails closed: a coord that cannot be run is a refusal (exit 2), not a pass.
        ("PreToolUse", "coord hook PreToolUse || exit 2"),
    ] {
        assert_eq!(settings["hooks"][event][0]["hooks"][0]["command"], command);
    }
    let again = p.json(&["init", "claude"]);
    assert!(
        again["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["action"] == "unchanged"),
        "{again}"
    );
    // CLAUDE.md tells the agent how to work beside others, once, in a marked section.
    let claude_md = std::fs::read_to_string(p.root().join("CLAUDE.md")).unwrap();
    assert!(claude_md.contains("Working beside other agents (coord)") && claude_md.contains("acquire_lock"));
    assert!(
        claude_md.chars().count() <= 1500,
        "{} characters",
        claude_md.chars().count()
    );
    let human = String::from_utf8(p.coord(&["init", "claude", "--dry-run"]).stdout).unwrap();
    assert!(human.contains("unchanged"), "{human}");
    assert!(
        human.contains("outside the repository"),
        "it says what it touched outside: {human}"
    );
}

/// The user-level approval: merged into existing user settings, idempotent, shown by a
/// dry run, skipped with --no-user-settings.
#[test]
fn init_claude_approves_its_server_in_the_user_settings() {
    let p = Project::new();
    let user = p.user.path().join("settings.json");
    std::fs::write(&user, r#"{"theme": "dark", "enabledMcpjsonServers": ["other"]}"#).unwrap();
    let bare = p.json(&[
        "init",
        "claude",
        "--no-user-settings",
        "--no-runtime-sandbox",
        "--no-instructions",
    ]);
    assert_eq!(bare["files"].as_array().unwrap().len(), 2, "{bare}");
    assert!(
        !p.root().join("CLAUDE.md").exists(),
        "--no-instructions leaves CLAUDE.md alone"
    );
    let skipped = p.json(&["init", "claude", "--no-user-settings", "--no-instructions"]);
    let files = skipped["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{skipped}");
    assert!(
        files[2]["path"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.local.json"),
        "the sandbox goes to this checkout's settings: {skipped}"
    );
    let dry = p.json(&["init", "claude", "--dry-run"]);
    let approval = dry["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == user.display().to_string())
        .unwrap();
    assert_eq!(approval["action"], "would_update");
    assert!(approval["diff"].as_str().unwrap().contains("\"coord\""), "{approval}");
    p.json(&["init", "claude"]);
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    assert_eq!(settings["enabledMcpjsonServers"], serde_json::json!(["other", "coord"]));
    assert_eq!(settings["theme"], "dark", "the rest is kept");
    let again = p.json(&["init", "claude"]);
    assert!(
        again["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["action"] == "unchanged"),
        "{again}"
    );
}

#[test]
fn init_codex_prints_or_merges_the_config_entry() {
    let p = Project::new();
    let printed = String::from_utf8(p.coord(&["init", "codex"]).stdout).unwrap();
    assert!(
        printed.contains("[mcp_servers.coord]") && printed.contains("args = [\"mcp\"]"),
        "{printed}"
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "model = \"gpt\"\n").unwrap();
    std::fs::write(p.root().join("AGENTS.md"), "# Conventions\n\nRun make test.\n").unwrap();
    let run = |args: &[&str]| {
        let out = p.command(args).env("CODEX_HOME", home.path()).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(
        run(&["--json", "init", "codex", "--dry-run"])["files"][0]["action"],
        "would_update"
    );
    assert_eq!(
        run(&["--json", "init", "codex", "--write"])["files"][0]["action"],
        "updated"
    );
    assert_eq!(
        run(&["--json", "init", "codex", "--write"])["files"][0]["action"],
        "unchanged"
    );
    let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(text.starts_with("model = \"gpt\""), "{text}");
    // AGENTS.md: what the user wrote stays; coord's section is added once.
    let agents_md = std::fs::read_to_string(p.root().join("AGENTS.md")).unwrap();
    assert!(
        agents_md.starts_with("# Conventions\n\nRun make test.\n\n<!-- coord: begin"),
        "{agents_md}"
    );
    assert_eq!(
        agents_md.matches("Working beside other agents (coord)").count(),
        1,
        "{agents_md}"
    );
    assert!(text.contains("default_tools_approval_mode = \"approve\""));
}

/// Every file under `dirs`, with its content (coord's store left out: it is data, and
/// stays).
fn snapshot(dirs: &[&Path]) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo: Vec<std::path::PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.ends_with(".coord") || path.ends_with("objects") || path.ends_with("refs") {
                continue;
            }
            if path.is_dir() {
                files.insert(path.clone(), b"(a directory)".to_vec());
                todo.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// `coord init claude|codex --write|git-hook` and then `--remove`: the repository, the
/// user's Claude Code settings and Codex's home are as they were, byte for byte; the
/// user's own settings, hooks and instructions were kept throughout; a dry run changes
/// nothing; a second removal has nothing to do.
#[test]
fn init_remove_takes_out_exactly_what_init_added() {
    let dir = tempfile::tempdir().unwrap();
    assert!(git(dir.path(), &["init", "-q"]).status.success());
    let p = Project {
        dir,
        user: tempfile::tempdir().unwrap(),
    };
    let codex = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(p.root().join(".claude")).unwrap();
    let mine = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"make lint\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    std::fs::write(p.root().join(".claude/settings.json"), mine).unwrap();
    std::fs::write(p.root().join("CLAUDE.md"), "# Project\n\nBuild with make.\n").unwrap();
    std::fs::write(p.user.path().join("settings.json"), "{\n  \"theme\": \"dark\"\n}\n").unwrap();
    std::fs::write(codex.path().join("config.toml"), "model = \"gpt\"\n").unwrap();
    let dirs = [p.root(), p.user.path(), codex.path()];
    let before = snapshot(&dirs);
    let run = |args: &[&str]| -> Value {
        let out = p
            .command(&[&["--json"], args].concat())
            .env("CODEX_HOME", codex.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    run(&["init", "claude"]);
    run(&["init", "codex", "--write"]);
    run(&["init", "git-hook", "--command", BIN]);
    let installed = snapshot(&dirs);
    assert!(
        installed.len() > before.len() + 4,
        "init wrote files: {:?}",
        installed.keys()
    );
    for target in [&["claude"][..], &["codex"], &["git-hook"]] {
        let dry = run(&[&["init"], target, &["--remove", "--dry-run"]].concat());
        let files = dry["files"].as_array().unwrap();
        assert!(
            !files.is_empty()
                && files
                    .iter()
                    .all(|f| f["action"].as_str().unwrap().starts_with("would_") || f["action"] == "unchanged"),
            "{target:?}: {dry}"
        );
    }
    assert!(snapshot(&dirs) == installed, "a dry run changed nothing");
    let removed = run(&["init", "claude", "--remove"]);
    assert!(
        removed["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["action"] == "removed"),
        "{removed}"
    );
    run(&["init", "codex", "--remove"]);
    run(&["init", "git-hook", "--remove"]);
    let after = snapshot(&dirs);
    let differ: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| (k, after.get(k).map(|b| String::from_utf8_lossy(b).into_owned())))
        .collect();
    assert!(differ.is_empty(), "not as before: {differ:#?}");
    assert!(p.root().join(".coord").is_dir(), "coord's store stays");
    for target in ["claude", "codex", "git-hook"] {
        let again = run(&["init", target, "--remove"]);
        assert!(
            again["files"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["action"] == "unchanged"),
            "{target}: {again}"
        );
    }
    let human = String::from_utf8(p.command(&["init", "claude", "--remove"]).output().unwrap().stdout).unwrap();
    assert!(
        human.contains("coord's store stays") && human.contains("claude plugin uninstall"),
        "{human}"
    );
    let refused = p.coord(&["init", "claude", "--remove", "--toolsets", "all"]);
    assert!(
        !refused.status.success(),
        "--remove with an option of the install is refused"
    );
}

/// With the coord plugin enabled in Claude Code, `coord init claude` leaves the MCP server
/// and hooks to it (written twice, each hook would run twice) and writes the rest.
#[test]
fn init_claude_leaves_the_server_and_hooks_to_an_enabled_plugin() {
    let p = Project::new();
    let install = p.user.path().join("plugins/cache/coord/coord/0.1.0");
    std::fs::create_dir_all(install.join("hooks")).unwrap();
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/coord/hooks/hooks.json");
    std::fs::copy(plugin, install.join("hooks/hooks.json")).unwrap();
    std::fs::write(
        p.user.path().join("settings.json"),
        r#"{"enabledPlugins": {"coord@coord": true}}"#,
    )
    .unwrap();
    std::fs::write(
        p.user.path().join("plugins/installed_plugins.json"),
        serde_json::json!({"version": 2, "plugins": {"coord@coord": [{"scope": "user", "installPath": install}]}})
            .to_string(),
    )
    .unwrap();
    // A checkout that turns the plugin off gets the server and hooks written after all.
    std::fs::create_dir_all(p.root().join(".claude")).unwrap();
    let off = r#"{"enabledPlugins": {"coord@coord": false}}"#;
    std::fs::write(p.root().join(".claude/settings.local.json"), off).unwrap();
    let dry = p.json(&["init", "claude", "--dry-run"]);
    assert!(dry["files"].to_string().contains(".mcp.json"), "{dry}");
    std::fs::remove_file(p.root().join(".claude/settings.local.json")).unwrap();
    let r = p.json(&["init", "claude"]);
    assert!(
        !p.root().join(".mcp.json").exists() && !p.root().join(".claude/settings.json").exists(),
        "{r}"
    );
    assert!(p.root().join(".claude/settings.local.json").exists() && p.root().join("CLAUDE.md").exists());
    assert!(r["notes"][0].as_str().unwrap().contains("coord@coord plugin"), "{r}");
    let doctor = p.json(&["doctor"]);
    let hooks = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "claude code hooks")
        .unwrap();
    assert_eq!(hooks["status"], "ok", "{hooks}");
    assert!(
        hooks["detail"].as_str().unwrap().contains("coord@coord plugin"),
        "{hooks}"
    );
}

/// `git args`, and what it did. The git hooks coord installs run coord: they see no
/// agent identity, agent runtime or database of the test's own environment.
fn git(dir: &Path, args: &[&str]) -> Output {
    support::git_command(dir, args)
        .env_remove("COORD_AGENT_ID")
        .env_remove("CLAUDECODE")
        .env_remove("COORD_DATABASE_URL")
        .output()
        .unwrap()
}

#[test]
fn the_git_hook_refuses_commits_of_files_locked_by_others() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(git(root, &["init", "-q"]).status.success());
    let p = Project {
        dir,
        user: tempfile::tempdir().unwrap(),
    };
    let installed = p.json(&["init", "git-hook", "--command", BIN]);
    assert_eq!(installed["files"][0]["action"], "created");
    assert_eq!(
        p.json(&["init", "git-hook", "--command", BIN])["files"][0]["action"],
        "unchanged"
    );

    p.coord(&[
        "--agent-id",
        "bob",
        "lock",
        "acquire",
        "locked.rs",
        "--reason",
        "bob's refactor",
    ]);
    std::fs::write(p.root().join("locked.rs"), "x").unwrap();
    std::fs::write(p.root().join("free.rs"), "y").unwrap();
    git(p.root(), &["add", "free.rs"]);
    let ok = git(p.root(), &["commit", "-q", "-m", "free file"]);
    assert!(
        ok.status.success(),
        "an unlocked file commits: {}",
        String::from_utf8_lossy(&ok.stderr)
    );

    git(p.root(), &["add", "locked.rs"]);
    let refused = git(p.root(), &["commit", "-q", "-m", "locked file"]);
    assert!(!refused.status.success(), "a file locked by bob must not be committed");
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("locked.rs") && why.contains("bob") && why.contains("--no-verify"),
        "{why}"
    );
    let bypass = git(p.root(), &["commit", "-q", "--no-verify", "-m", "forced"]);
    assert!(bypass.status.success(), "--no-verify remains the escape hatch");

    // A directory lock refuses commits of files below it.
    p.coord(&["--agent-id", "bob", "lock", "acquire", "gen/"]);
    std::fs::create_dir_all(p.root().join("gen/deep")).unwrap();
    std::fs::write(p.root().join("gen/deep/out.rs"), "z").unwrap();
    git(p.root(), &["add", "gen/deep/out.rs"]);
    let refused = git(p.root(), &["commit", "-q", "-m", "generated"]);
    assert!(!refused.status.success(), "gen/ is locked by bob");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("gen/"));

    // A foreign pre-commit hook is never overwritten.
    let hook = p.root().join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho mine\n").unwrap();
    let out = p.coord(&["init", "git-hook"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), "#!/bin/sh\necho mine\n");
}

/// `coord init git-hook` also installs pre-push: a force push or a deletion of main, a
/// release tag pushed, or any push to a remote that deploys, is refused (git's own
/// ancestry decides, no coordinator needed), a feature branch is the agent's business;
/// pre-commit refuses credential files.
#[test]
fn the_git_hooks_refuse_force_pushes_of_protected_branches_and_credential_commits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    let remote = dir.path().join("remote.git");
    std::fs::create_dir(&root).unwrap();
    assert!(
        git(dir.path(), &["init", "-q", "--bare", "remote.git"])
            .status
            .success()
    );
    assert!(git(&root, &["init", "-q", "-b", "main"]).status.success());
    git(&root, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let install = Command::new(BIN)
        .args(["--json", "init", "git-hook", "--command", BIN])
        .current_dir(&root)
        .env_remove("COORD_DATABASE_URL")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&install.stdout).unwrap();
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert!(files.iter().any(|f| f.ends_with("pre-push")), "{v}");
    std::fs::write(root.join("a.txt"), "1").unwrap();
    git(&root, &["add", "a.txt"]);
    assert!(git(&root, &["commit", "-q", "-m", "one"]).status.success());
    let first = git(&root, &["push", "-q", "origin", "main"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    std::fs::write(root.join("a.txt"), "2").unwrap();
    git(&root, &["add", "a.txt"]);
    assert!(
        git(&root, &["commit", "-q", "--amend", "-m", "rewritten"])
            .status
            .success()
    );
    let forced = git(&root, &["push", "-q", "--force", "origin", "main"]);
    assert!(!forced.status.success(), "a force push of main is refused");
    assert!(
        String::from_utf8_lossy(&forced.stderr).contains("force-pushing main"),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    let deleted = git(&root, &["push", "-q", "origin", ":main"]);
    assert!(!deleted.status.success(), "deleting main is refused");
    // A release tag starts a release: refused, as the Bash hooks refuse `git push origin v1.0.0`.
    git(&root, &["tag", "v1.0.0"]);
    let tagged = git(&root, &["push", "-q", "origin", "v1.0.0"]);
    assert!(!tagged.status.success(), "a release tag push is refused");
    assert!(
        String::from_utf8_lossy(&tagged.stderr).contains("the release tag v1.0.0"),
        "{}",
        String::from_utf8_lossy(&tagged.stderr)
    );
    // A remote named heroku deploys what it receives: refused whatever is pushed (git
    // passes the remote's name to the hook).
    git(&root, &["remote", "add", "heroku", remote.to_str().unwrap()]);
    let deploy = git(&root, &["push", "-q", "heroku", "HEAD:refs/heads/feature-x"]);
    assert!(!deploy.status.success(), "a push to heroku is refused");
    assert!(
        String::from_utf8_lossy(&deploy.stderr).contains("pushing to heroku"),
        "{}",
        String::from_utf8_lossy(&deploy.stderr)
    );
    // A feature branch may be rewritten.
    git(&root, &["checkout", "-q", "-b", "feature"]);
    assert!(git(&root, &["push", "-q", "origin", "feature"]).status.success());
    assert!(git(&root, &["commit", "-q", "--amend", "-m", "again"]).status.success());
    let feature = git(&root, &["push", "-q", "--force", "origin", "feature"]);
    assert!(feature.status.success(), "{}", String::from_utf8_lossy(&feature.stderr));
    // Credential files are not committed.
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    git(&root, &["add", ".env"]);
    let cred = git(&root, &["commit", "-q", "-m", "secrets"]);
    assert!(!cred.status.success(), "a credential file is refused");
    assert!(String::from_utf8_lossy(&cred.stderr).contains(".env"));
}

/// The security review's bypasses (issue 57, finding 5), through the Bash hook in a
/// real repository: an alias that expands to a force push (set in the repository's
/// configuration, or defined on the command line) is judged by what it runs, defining such
/// an alias is refused too, every spelling of `clean.requireForce=false` is a forced clean,
/// `tar --remove-files` deletes, a Python function named at run time cannot be judged. A
/// harmless alias still passes. The bare remote keeps both its commits.
#[test]
fn aliases_config_spellings_and_computed_calls_do_not_slip_past_the_hook() {
    let p = Project::new();
    let w = p.root();
    std::fs::remove_dir(w.join(".git")).unwrap();
    let remote = tempfile::tempdir().unwrap();
    assert!(
        git(remote.path(), &["init", "-q", "--bare", "-b", "main"])
            .status
            .success()
    );
    assert!(git(w, &["init", "-q", "-b", "main"]).status.success());
    for (i, f) in ["a", "b"].iter().enumerate() {
        std::fs::write(w.join(f), "x").unwrap();
        assert!(git(w, &["add", f]).status.success());
        assert!(git(w, &["commit", "-qm", &format!("c{i}")]).status.success());
    }
    let url = remote.path().display().to_string();
    assert!(git(w, &["push", "-q", &url, "main"]).status.success());
    assert!(git(w, &["config", "alias.sync", "push --force"]).status.success());
    assert!(git(w, &["config", "alias.st", "status --short"]).status.success());
    let bash = |command: &str| {
        stdout_json(&p.bash(command)).map(|v| {
            v["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
    };
    let sync = format!("git reset -q HEAD~1 --soft && git sync {url} main");
    for (command, want) in [
        (sync.as_str(), "force_push"),
        ("git -c alias.up='push -f' up origin main", "force_push"),
        ("git config alias.pub 'push --force'", "force_push"),
        ("git -c clean.requireForce=0 clean -dx", "clean_force"),
        ("git -c clean.requireforce=off clean -x", "clean_force"),
        ("tar --remove-files -czf src.tgz src", "bulk_delete"),
        (
            "python3 -c \"import shutil; getattr(shutil,'rmt'+'ree')('/srv/x')\"",
            "unreadable_code",
        ),
    ] {
        let reason = bash(command).unwrap_or_else(|| panic!("{command} must be denied"));
        assert!(reason.contains(want), "{command}: {reason}");
    }
    assert_eq!(bash("git st"), None, "a harmless alias passes");
    let log = git(remote.path(), &["rev-list", "--count", "main"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "2");
}

/// The self-approval of the security review (issue 57 finding 3, issue 54): a Claude
/// Code session's force push is denied with an approval request; the same session then
/// tries to approve it itself through its Bash tool, with a borrowed identity. The hook
/// refuses the command, and so does coord itself when it runs inside the session (its
/// environment says so), without teaching the workaround; nothing is approved. A person
/// (this test, outside any agent's session) approves, and the push passes once.
#[test]
fn an_agent_cannot_approve_its_own_request_nor_borrow_an_identity() {
    let p = Project::new();
    let reason = denial_reason;
    let bash = |command: &str| p.bash(command);
    let denied = reason(&bash("git push --force origin main"));
    let id = denied
        .split_whitespace()
        .find(|w| w.starts_with("apr_"))
        .map(|w| w.trim_end_matches(['.', ',', ')']).to_string())
        .expect("an approval id");
    assert!(
        !denied.contains("--agent-id"),
        "the refusal does not teach the workaround: {denied}"
    );
    for command in [
        format!("coord --agent-id someone --agent-type cli approvals approve {id}"),
        format!("coord approval approve {id}"),
        format!("COORD_AGENT_ID=ops coord approval approve {id}"),
        format!("coord call decide_approval '{{\"approval_id\":\"{id}\",\"decision\":\"approve\"}}'"),
        "sqlite3 .coord/coord.db \"UPDATE approval_queue SET status = 'approved'\"".to_string(),
        "coord --agent-id alice lock release src/a.rs".to_string(),
    ] {
        let why = reason(&bash(&command));
        assert!(
            ["borrowed_identity", "person_decision", "coord_state_write"]
                .iter()
                .any(|op| why.contains(op))
                && !why.contains("decided locally"),
            "{command}: {why}"
        );
    }
    // If the command ran anyway (the hook bypassed), coord refuses it inside the session.
    let inside = |args: &[&str]| {
        let mut c = p.command(args);
        c.env("CLAUDECODE", "1");
        c.output().unwrap()
    };
    let out = inside(&["--json", "approvals", "approve", &id]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["error"], "person_required", "{out:?}");
    let out = inside(&["--json", "--agent-id", "someone", "approvals", "approve", &id]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["error"], "forbidden", "{out:?}");
    assert!(
        v["message"].as_str().unwrap_or("").contains("--agent-id is refused"),
        "{v}"
    );
    let shown = p.json(&["approvals", "show", &id]);
    assert_eq!(shown["approval"]["status"], "pending", "nothing was approved: {shown}");
    // The refusals are audited as the session's own.
    let audit = p.json(&["audit", "--operation", "decide_approval", "--result", "refused"]);
    assert!(!audit["entries"].as_array().unwrap().is_empty(), "{audit}");
    // A person approves (outside any agent's session): the push passes once.
    assert!(p.coord(&["approvals", "approve", &id]).status.success());
    assert_eq!(stdout_json(&bash("git push --force origin main")), None);
}

/// Fail closed: a tool call coord cannot read is refused; a hook whose coord cannot be
/// run (moved, not on PATH) refuses with exit 2 — what Claude Code and Codex take as a
/// refusal — and `coord init` warns when the coord it configures is not there.
#[test]
fn hooks_fail_closed_when_coord_cannot_read_or_run() {
    let p = Project::new();
    let garbled = p.hook_raw("PreToolUse", "{ not json", CLAUDE);
    let reply = stdout_json(&garbled).expect("a decision");
    assert_eq!(garbled.status.code(), Some(0));
    assert_eq!(reply["hookSpecificOutput"]["permissionDecision"], "deny", "{reply}");
    assert!(reply.to_string().contains("could not be read"), "{reply}");

    let init = p.coord(&["init", "claude", "--command", "/nonexistent/coord"]);
    assert!(init.status.success(), "{init:?}");
    let warned = String::from_utf8_lossy(&init.stderr);
    assert!(
        warned.contains("warning") && warned.contains("/nonexistent/coord"),
        "{warned}"
    );
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(p.root().join(".claude/settings.json")).unwrap()).unwrap();
    let hooks = settings["hooks"]["PreToolUse"][0]["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "one hook of ours: {hooks:?}");
    let command = hooks[0]["command"].as_str().unwrap();
    // As the runtime runs it: through the shell, the event on stdin.
    let mut child = Command::new("sh")
        .args(["-c", command])
        .current_dir(p.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The shell may give up before it reads anything (a broken pipe here): it is the
    // exit code that matters.
    let _ = child.stdin.take().unwrap().write_all(b"{}");
    let ran = child.wait_with_output().unwrap();
    assert_eq!(ran.status.code(), Some(2), "a missing coord refuses: {ran:?}");
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("/nonexistent/coord"),
        "{ran:?}"
    );
}

/// `coord doctor` checks an installation and says what to fix: before `coord init claude`
/// the hooks are missing (a warning, exit 0); after it they are complete and failing
/// closed; a configuration whose PreToolUse hook fails open (written by an earlier coord)
/// is a failure (exit 1) whose fix is to run `coord init claude` again. It creates nothing.
#[test]
fn doctor_says_what_to_fix() {
    let p = Project::new();
    let codex_home = p.user.path().join("codex");
    let doctor = |p: &Project| {
        let out = p
            .command(&["--json", "doctor"])
            .env("CODEX_HOME", &codex_home)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
        let by_name = |name: &str| {
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["check"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name}: {v}"))
        };
        (out.status.code(), by_name("claude code hooks"), by_name("store"), v)
    };
    let (code, hooks, store, v) = doctor(&p);
    assert_eq!((code, v["success"].as_bool()), (Some(0), Some(true)), "{v}");
    assert_eq!(
        (hooks["status"].as_str(), hooks["fix"].as_str()),
        (Some("warn"), Some("`coord init claude`"))
    );
    assert_eq!(store["status"], "warn", "{store}");
    assert!(!p.root().join(".coord/coord.db").exists(), "the doctor created a store");

    assert!(p.coord(&["init", "claude"]).status.success());
    let (code, hooks, _, v) = doctor(&p);
    assert_eq!((code, hooks["status"].as_str()), (Some(0), Some("ok")), "{v}");
    let mcp = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "claude code mcp")
        .unwrap();
    assert_eq!(mcp["status"], "ok", "{mcp}");

    let settings = p.root().join(".claude/settings.json");
    let legacy = std::fs::read_to_string(&settings).unwrap().replace(" || exit 2", "");
    std::fs::write(&settings, legacy).unwrap();
    let (code, hooks, _, v) = doctor(&p);
    assert_eq!((code, v["success"].as_bool()), (Some(1), Some(false)), "{v}");
    assert_eq!(hooks["status"], "fail", "{hooks}");
    assert!(hooks["detail"].as_str().unwrap().contains("fails open"), "{hooks}");
    let human = String::from_utf8(
        p.command(&["doctor"])
            .env("CODEX_HOME", &codex_home)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(human.contains("FAIL") && human.contains("coord init claude"), "{human}");
}
