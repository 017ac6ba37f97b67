//! The launch plan of an agent definition for one runtime: the exact argv, the
//! environment and the generated files (docs/agents.md has the table). Every plan is
//! run inside coord's sandbox (bubblewrap, `Writable` decides what is writable, the
//! proxy is the only way out); the runtime's own permission layer comes on top of it.

use coord_domain::agents::{AgentDefinition, DEFAULT_MAX_TURNS, Runtime, WorkerProfile, Writable};
use serde::Serialize;
use serde_json::json;

/// What a launch needs besides the definition. Paths are absolute.
#[derive(Debug, Clone)]
pub struct LaunchInputs<'a> {
    pub definition: &'a AgentDefinition,
    pub task: &'a str,
    pub workspace: &'a str,
    /// The run's own directory, outside the workspace: generated files, HOME, TMPDIR.
    pub run_dir: &'a str,
    /// The coord binary the agent's MCP server and hooks run.
    pub coord_exe: &'a str,
    /// The runtime's program (`claude`, or a path).
    pub program: &'a str,
    /// The environment coord's MCP server and hooks need inside (the coordinator's
    /// address and the agent's key and identity); written into the MCP config.
    pub coord_env: &'a [(String, String)],
    /// The model endpoint (`ANTHROPIC_BASE_URL` / an OpenAI-compatible base URL), when
    /// not the provider's own.
    pub model_base_url: Option<&'a str>,
    /// The files the task is about (`--file`): Aider gets them in its chat.
    pub files: &'a [String],
}

/// A file the plan needs, with its absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GeneratedFile {
    pub path: String,
    pub contents: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchPlan {
    pub runtime: Runtime,
    pub profile: WorkerProfile,
    pub argv: Vec<String>,
    /// Variables set for the runtime (on top of the sandbox's minimal environment).
    pub env: Vec<(String, String)>,
    pub files: Vec<GeneratedFile>,
    /// What the OS sandbox leaves writable in the workspace.
    pub writable: Writable,
    /// Where this runtime cannot do what the profile says by itself, and what holds instead.
    pub notes: Vec<String>,
}

fn file(path: String, contents: String) -> GeneratedFile {
    GeneratedFile { path, contents }
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// The plan of `inputs.definition` on `runtime`.
pub fn plan(runtime: Runtime, inputs: &LaunchInputs<'_>) -> LaunchPlan {
    match runtime {
        Runtime::Claude => claude(inputs),
        Runtime::Codex => codex(inputs),
        Runtime::Aider => aider(inputs),
    }
}

fn home_env(i: &LaunchInputs<'_>) -> Vec<(String, String)> {
    let home = format!("{}/home", i.run_dir);
    let tmp = format!("{}/tmp", i.run_dir);
    let mut env = vec![
        ("HOME".into(), home),
        ("TMPDIR".into(), tmp.clone()),
        ("XDG_RUNTIME_DIR".into(), tmp),
    ];
    // A workspace the agent may not write still gets built and tested: build output and
    // caches go to the run's directory.
    if i.definition.profile.writable() != Writable::Workspace {
        env.extend([
            ("CARGO_TARGET_DIR".into(), format!("{}/target", i.run_dir)),
            ("GOCACHE".into(), format!("{}/tmp/go-build", i.run_dir)),
            ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ("PYTHONPYCACHEPREFIX".into(), format!("{}/tmp/pycache", i.run_dir)),
        ]);
    }
    env
}

fn coord_mcp(i: &LaunchInputs<'_>) -> serde_json::Value {
    let env: serde_json::Map<String, serde_json::Value> =
        i.coord_env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({"command": i.coord_exe, "args": ["mcp"], "env": env})
}

fn claude(i: &LaunchInputs<'_>) -> LaunchPlan {
    let d = i.definition;
    let settings_path = format!("{}/claude-settings.json", i.run_dir);
    let mcp_path = format!("{}/claude-mcp.json", i.run_dir);
    let hook =
        |event: &str| json!([{"hooks": [{"type": "command", "command": format!("{} hook {event}", i.coord_exe)}]}]);
    let mut pre_tool_use = hook("PreToolUse");
    // Every tool call: coord checks a launched agent's tools against its declared ones
    // (spec 000's activation check), besides the guardrails on commands and edits.
    pre_tool_use[0]["matcher"] = json!(LAUNCHED_PRE_TOOL_USE_MATCHER);
    let settings = json!({
        "permissions": {
            "deny": ["WebFetch", "WebSearch"],
            "blockReadsOutsideWorkingDirectories": true,
            "blockWritesOutsideWorkingDirectories": true,
            "disableBypassPermissionsMode": "disable"
        },
        // Claude Code's own sandbox would nest bubblewrap inside coord's, which fails;
        // coord's sandbox holds Bash and everything else the CLI starts.
        "sandbox": {"enabled": false},
        "hooks": {
            "SessionStart": hook("SessionStart"),
            "PreToolUse": pre_tool_use,
            "SessionEnd": hook("SessionEnd")
        }
    });
    let mcp = json!({"mcpServers": {"coord": coord_mcp(i)}});
    let mut allowed: Vec<String> = vec!["mcp__coord".into()];
    if d.tools.iter().any(|t| t == "Bash") {
        allowed.extend(d.profile.bash_prefixes().iter().map(|p| format!("Bash({p}:*)")));
    }
    let mode = match d.profile {
        WorkerProfile::Write => "acceptEdits",
        WorkerProfile::ReadOnly | WorkerProfile::Verification | WorkerProfile::Design => "dontAsk",
    };
    if d.profile == WorkerProfile::Design && d.tools.iter().any(|t| t == "Edit" || t == "Write") {
        allowed.push("Edit(./docs/**)".into());
    }
    let mut argv: Vec<String> = vec![
        i.program.into(),
        "-p".into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
        "--setting-sources".into(),
        String::new(),
        "--settings".into(),
        settings_path.clone(),
        "--strict-mcp-config".into(),
        "--mcp-config".into(),
        mcp_path.clone(),
        "--no-session-persistence".into(),
        "--max-turns".into(),
        d.max_turns.unwrap_or(DEFAULT_MAX_TURNS).to_string(),
        "--tools".into(),
        d.tools.join(","),
        "--allowedTools".into(),
        allowed.join(","),
        "--permission-mode".into(),
        mode.into(),
        "--permission-prompts".into(),
        "none".into(),
        "--restricted".into(),
    ];
    if !d.prompt.is_empty() {
        argv.extend(["--append-system-prompt".into(), d.prompt.clone()]);
    }
    if let Some(m) = &d.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    // After `--`: a task starting with `-` is the prompt, not an option.
    argv.extend(["--".into(), i.task.into()]);
    let mut env = home_env(i);
    env.push(("CLAUDE_CODE_TMPDIR".into(), format!("{}/tmp", i.run_dir)));
    env.extend(
        [
            "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER",
            "DISABLE_ERROR_REPORTING",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        ]
        .map(|k| (k.to_string(), "1".to_string())),
    );
    env.extend(i.coord_env.iter().cloned());
    if let Some(url) = i.model_base_url {
        env.push(("ANTHROPIC_BASE_URL".into(), url.into()));
    }
    LaunchPlan {
        runtime: Runtime::Claude,
        profile: d.profile,
        argv,
        env,
        files: vec![file(settings_path, pretty(&settings)), file(mcp_path, pretty(&mcp))],
        writable: d.profile.writable(),
        notes: vec![
            "--tools decides which built-in tools exist; --allowedTools only pre-approves (mcp__coord and the profile's Bash commands)".into(),
            "--restricted, blockReads/WritesOutsideWorkingDirectories and the sandbox keep file tools in the workspace".into(),
            "Claude Code's own Bash sandbox is off: coord's sandbox (bubblewrap) holds the whole process tree".into(),
        ],
    }
}

/// `s` as a TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn codex(i: &LaunchInputs<'_>) -> LaunchPlan {
    let d = i.definition;
    let codex_home = format!("{}/codex", i.run_dir);
    let mut config = String::new();
    config.push_str("# Generated by coord for one launch (docs/agents.md).\n");
    config.push_str("approval_policy = \"never\"\n");
    // Web search runs on the provider's side, past coord's proxy: off unless the
    // definition lists WebSearch.
    if !d.tools.iter().any(|t| t == "WebSearch") {
        config.push_str("web_search = \"disabled\"\n");
    }
    if let Some(m) = &d.model {
        config.push_str(&format!("model = {}\n", toml_str(m)));
    }
    // Top-level keys first: a key after a table header belongs to that table.
    if !d.prompt.is_empty() {
        config.push_str(&format!("developer_instructions = {}\n", toml_str(&d.prompt)));
    }
    if i.model_base_url.is_some() {
        config.push_str("model_provider = \"coord_model\"\n");
    }
    if let Some(url) = i.model_base_url {
        config.push_str(&format!(
            "\n[model_providers.coord_model]\nname = \"coord_model\"\nbase_url = {}\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
            toml_str(url)
        ));
    }
    config.push_str(&format!(
        "\n[mcp_servers.coord]\ncommand = {}\nargs = [\"mcp\"]\ndefault_tools_approval_mode = \"approve\"\n\
         # Codex passes MCP servers no environment but this: the agent's key stays out of files.\n\
         env_vars = [\"COORDINATION_API_KEY\"]\n",
        toml_str(i.coord_exe)
    ));
    if !i.coord_env.is_empty() {
        config.push_str("\n[mcp_servers.coord.env]\n");
        for (k, v) in i.coord_env {
            config.push_str(&format!("{k} = {}\n", toml_str(v)));
        }
    }
    let argv: Vec<String> = vec![
        i.program.into(),
        "exec".into(),
        "--ephemeral".into(),
        "--skip-git-repo-check".into(),
        "--json".into(),
        // Codex's bubblewrap cannot nest inside coord's: coord's sandbox is the one
        // layer (read-only or writable workspace, the proxy the only way out).
        "--sandbox".into(),
        "danger-full-access".into(),
        "-C".into(),
        i.workspace.into(),
        "-o".into(),
        format!("{}/last-message.txt", i.run_dir),
        "--".into(),
        i.task.into(),
    ];
    let mut env = home_env(i);
    env.push(("CODEX_HOME".into(), codex_home.clone()));
    env.extend(i.coord_env.iter().cloned());
    LaunchPlan {
        runtime: Runtime::Codex,
        profile: d.profile,
        argv,
        env,
        files: vec![file(format!("{codex_home}/config.toml"), config)],
        writable: d.profile.writable(),
        notes: vec![
            "Codex has no per-tool allowlist: the definition's tools cannot be narrowed inside Codex; coord's sandbox decides what its commands and patches can write and reach".into(),
            "Codex's own sandbox is off (--sandbox danger-full-access) because bubblewrap does not nest; coord's sandbox is the enforcement".into(),
        ],
    }
}

fn aider(i: &LaunchInputs<'_>) -> LaunchPlan {
    let d = i.definition;
    let message = format!("{}/aider-message.txt", i.run_dir);
    let mut text = String::new();
    if !d.prompt.is_empty() {
        text.push_str(&d.prompt);
        text.push_str("\n\n");
    }
    text.push_str(i.task);
    text.push('\n');
    let mut argv: Vec<String> = vec![
        i.program.into(),
        "--message-file".into(),
        message.clone(),
        "--no-check-update".into(),
        "--analytics-disable".into(),
        "--no-show-release-notes".into(),
        "--no-pretty".into(),
        "--no-stream".into(),
        "--no-fancy-input".into(),
        "--no-detect-urls".into(),
        "--no-suggest-shell-commands".into(),
        "--no-auto-commits".into(),
        // Aider would write git's configuration (a user name when none is set), commit
        // dirty files before editing, add `.aider*` to `.gitignore` and keep its
        // histories and tag cache in the repository: none of it is the task's, and
        // `.git` is read-only in the sandbox (writing it crashes Aider). It works on
        // the files; coord and the person handle git. Its histories go to the run
        // directory; no repository map (its cache lives in the workspace).
        "--no-git".into(),
        "--no-dirty-commits".into(),
        "--no-gitignore".into(),
        "--map-tokens".into(),
        "0".into(),
        "--chat-history-file".into(),
        format!("{}/aider-chat.md", i.run_dir),
        "--input-history-file".into(),
        format!("{}/aider-input.txt", i.run_dir),
    ];
    match d.profile {
        WorkerProfile::ReadOnly | WorkerProfile::Verification => {
            argv.extend(["--chat-mode".into(), "ask".into(), "--dry-run".into()]);
        }
        WorkerProfile::Write | WorkerProfile::Design => argv.push("--yes-always".into()),
    }
    if let Some(m) = &d.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    if let Some(url) = i.model_base_url {
        argv.extend(["--openai-api-base".into(), url.into()]);
    }
    // Files named after the options: a leading `-` could not be read as one.
    argv.extend(
        i.files
            .iter()
            .map(|f| format!("{}/{}", i.workspace, f.trim_start_matches("./"))),
    );
    let mut env = home_env(i);
    env.push(("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into()));
    LaunchPlan {
        runtime: Runtime::Aider,
        profile: d.profile,
        argv,
        env,
        files: vec![
            file(message, text),
            // Aider fetches litellm's model list from GitHub unless its cache is fresh and
            // not empty: one entry of no model (models it does not know get its
            // defaults) keeps it to the model endpoint, the only place it needs to reach.
            file(
                format!("{}/home/.aider/caches/model_prices_and_context_window.json", i.run_dir),
                r#"{"coord-no-model": {}}"#.into(),
            ),
        ],
        writable: d.profile.writable(),
        notes: vec![
            "Aider has no permission system, no MCP and no tool list: it runs only inside coord's sandbox, which alone decides what it can write and reach".into(),
        ],
    }
}

/// The Claude Code tools coord's PreToolUse hook sees in a session `coord init claude` set up.
pub const PRE_TOOL_USE_MATCHER: &str = "Write|Edit|MultiEdit|NotebookEdit|Bash";

/// The tools it sees in an agent coord launched: all of them.
pub const LAUNCHED_PRE_TOOL_USE_MATCHER: &str = "*";

/// The files and directories other agents hold that an agent without hooks (Aider: it
/// cannot be asked before each edit) gets read-only in its sandbox: a file lock's file, a
/// directory lock's directory (repository-relative, no trailing `/`). A glob lock covers
/// paths nobody can list up front: it is named in the agent's message only.
pub fn held_paths(held: &[coord_domain::locks::LockInfo]) -> Vec<String> {
    held.iter()
        .map(|l| l.file_path.trim_end_matches('/'))
        .filter(|p| !p.is_empty() && !p.contains(coord_domain::target::GLOB_CHARS))
        .map(String::from)
        .collect()
}

/// What an agent without hooks is told about the locks other agents hold when it starts:
/// which, by whom, why, and that they are read-only for it. `None` when there are none.
pub fn held_note(held: &[coord_domain::locks::LockInfo]) -> Option<String> {
    if held.is_empty() {
        return None;
    }
    let mut note = String::from(
        "Other agents hold these paths: do not edit them (files and directories are read-only for you; \
         ask the holder through coord to have one released):\n",
    );
    for l in held {
        let why = l.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        let kind = if l.file_path.contains(coord_domain::target::GLOB_CHARS) {
            " (a pattern)"
        } else {
            ""
        };
        note.push_str(&format!("- {}{kind}, held by {}{why}\n", l.file_path, l.locked_by));
    }
    Some(note)
}
