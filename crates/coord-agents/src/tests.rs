use crate::*;
use coord_domain::agents::*;

fn def(text: &str) -> Result<AgentDefinition, Vec<FieldError>> {
    parse_definition(text)
}

fn fields(text: &str) -> Vec<String> {
    def(text)
        .expect_err("refused")
        .iter()
        .map(|e| e.field.clone())
        .collect()
}

#[test]
fn definitions_read_claude_code_agent_files() {
    let d = def("---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob\n---\nYou review.\n")
        .unwrap();
    assert_eq!(d.name, "code-reviewer");
    assert_eq!(d.profile, WorkerProfile::ReadOnly);
    assert_eq!(d.profile_from, "spec 003");
    assert_eq!(d.tools, ["Read", "Grep", "Glob"]);
    assert_eq!(d.prompt, "You review.");
    // A list, a BOM, CRLF, an explicit profile, disallowed tools subtracted.
    let d = def("\u{feff}---\r\nname: fixer\r\ndescription: x\r\nprofile: write\r\ntools: [Read, Edit, Bash, mcp__coord__acquire_lock]\r\ndisallowedTools: Bash\r\n---\r\n").unwrap();
    assert_eq!((d.profile, d.profile_from.as_str()), (WorkerProfile::Write, "profile"));
    assert_eq!(d.tools, ["Read", "Edit"]);
    // No tools: the profile's; no profile and no spec name: from the tools, else read only.
    let d = def("---\nname: helper\ndescription: x\n---\n").unwrap();
    assert_eq!((d.profile, d.tools.len()), (WorkerProfile::ReadOnly, 4));
    let d = def("---\nname: helper\ndescription: x\ntools: Read, Write\n---\n").unwrap();
    assert_eq!((d.profile, d.profile_from.as_str()), (WorkerProfile::Write, "tools"));
    let d = def("---\nname: planner\ndescription: x\nmodel: sonnet\nmaxTurns: 12\ncolor: blue\n---\n").unwrap();
    assert_eq!(
        (d.profile, d.model.as_deref(), d.max_turns),
        (WorkerProfile::Design, Some("sonnet"), Some(12))
    );
}

#[test]
fn definitions_report_every_problem_with_its_field() {
    let cases: &[(&str, &[&str])] = &[
        ("no front matter", &["front_matter"]),
        ("---\nname: x\n", &["front_matter"]),
        ("---\n[1, 2]\n---\n", &["front_matter"]),
        ("---\nname: [\n---\n", &["front_matter"]),
        ("---\ndescription: x\n---\n", &["name"]),
        ("---\nname:\ndescription:\n---\n", &["name", "description"]),
        ("---\nname: X Y\ndescription: x\n---\n", &["name"]),
        ("---\nname: a\n---\n", &["description"]),
        ("---\nname: a\ndescription: 3\n---\n", &["description"]),
        (
            "---\nname: a\ndescription: x\ntools: Read, Frobnicate\n---\n",
            &["tools[1]"],
        ),
        ("---\nname: a\ndescription: x\ntools: [Read, 7]\n---\n", &["tools[1]"]),
        ("---\nname: a\ndescription: x\ntools: {a: 1}\n---\n", &["tools"]),
        (
            "---\nname: a\ndescription: x\ntools: mcp__github__push\n---\n",
            &["tools[0]"],
        ),
        // A tool beyond the profile: named, not dropped.
        (
            "---\nname: code-reviewer\ndescription: x\ntools: Read, Write\n---\n",
            &["tools[1]"],
        ),
        ("---\nname: a\ndescription: x\nprofile: admin\n---\n", &["profile"]),
        ("---\nname: a\ndescription: x\nmaxTurns: 0\n---\n", &["maxTurns"]),
        ("---\nname: a\ndescription: x\nmaxTurns: many\n---\n", &["maxTurns"]),
        (
            "---\nname: a\ndescription: x\npermissionMode: bypassPermissions\n---\n",
            &["permissionMode"],
        ),
        (
            "---\nname: a\ndescription: x\nhooks: {}\nmcpServers: {}\n---\n",
            &["hooks", "mcpServers"],
        ),
        ("---\nname: a\ndescription: x\nflavour: x\n---\n", &["flavour"]),
        // All at once.
        (
            "---\ntools: Read, Nope\nprofile: x\nextra: 1\n---\n",
            &["extra", "name", "description", "tools[1]", "profile"],
        ),
    ];
    for (text, want) in cases {
        let mut got = fields(text);
        got.sort();
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "{text:?}");
    }
    let e = def("---\nname: code-reviewer\ndescription: x\ntools: Write\n---\n").unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "tools[0]: \"Write\" is not allowed by profile read_only (its tools: Read, Grep, Glob, Bash)"
    );
    assert!(def(&format!("---\nname: a\ndescription: x\n---\n{}", "x".repeat(70_000))).is_err());
}

fn inputs<'a>(d: &'a AgentDefinition, env: &'a [(String, String)]) -> LaunchInputs<'a> {
    LaunchInputs {
        definition: d,
        task: "-review src/",
        workspace: "/w/repo",
        run_dir: "/r/run1",
        coord_exe: "/usr/bin/coord",
        program: "claude",
        coord_env: env,
        model_base_url: Some("http://127.0.0.1:9/"),
        files: &[],
    }
}

fn after<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().position(|a| a == flag).map(|i| argv[i + 1].as_str())
}

#[test]
fn claude_plans_restrict_tools_and_pre_approve_only_the_profile() {
    let env = vec![("COORD_AGENT_ID".to_string(), "rev-1".to_string())];
    let table: &[(&str, &str, &str, Writable)] = &[
        ("read_only", "Read,Grep,Glob,Bash", "dontAsk", Writable::Nothing),
        (
            "write",
            "Read,Grep,Glob,Edit,Write,NotebookEdit,Bash",
            "acceptEdits",
            Writable::Workspace,
        ),
        ("verification", "Read,Grep,Glob,Bash", "dontAsk", Writable::Nothing),
        ("design", "Read,Grep,Glob,Edit,Write,Bash", "dontAsk", Writable::Docs),
    ];
    for (profile, tools, mode, writable) in table {
        let d = def(&format!(
            "---\nname: a\ndescription: x\nprofile: {profile}\n---\nBe careful.\n"
        ))
        .unwrap();
        let p = plan(Runtime::Claude, &inputs(&d, &env));
        assert_eq!(after(&p.argv, "--tools"), Some(*tools), "{profile}");
        assert_eq!(after(&p.argv, "--permission-mode"), Some(*mode), "{profile}");
        assert_eq!(after(&p.argv, "--setting-sources"), Some(""));
        assert_eq!(after(&p.argv, "--append-system-prompt"), Some("Be careful."));
        assert!(p.argv.contains(&"--strict-mcp-config".to_string()) && p.argv.contains(&"--restricted".to_string()));
        assert_eq!(p.writable, *writable);
        // The task is the last argument, after `--`, even when it looks like an option.
        assert_eq!(&p.argv[p.argv.len() - 2..], ["--", "-review src/"]);
        let allowed = after(&p.argv, "--allowedTools").unwrap();
        assert!(allowed.starts_with("mcp__coord,Bash(git status:*)"), "{allowed}");
        for never in [
            "Bash(python:",
            "Bash(python3:",
            "Bash(node:",
            "Bash(git diff",
            "Bash(git log",
            "Bash(git show",
            "Bash(bash",
            "Bash(sh:",
            "Bash(env:",
            "Read",
            "Write,",
        ] {
            assert!(!allowed.contains(never), "{profile}: {allowed}");
        }
        assert_eq!(allowed.contains("Edit(./docs/**)"), *profile == "design");
        let settings: serde_json::Value = serde_json::from_str(&p.files[0].contents).unwrap();
        assert_eq!(settings["permissions"]["blockWritesOutsideWorkingDirectories"], true);
        assert_eq!(
            settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "/usr/bin/coord hook PreToolUse"
        );
        let mcp: serde_json::Value = serde_json::from_str(&p.files[1].contents).unwrap();
        assert_eq!(mcp["mcpServers"].as_object().unwrap().len(), 1);
        assert_eq!(mcp["mcpServers"]["coord"]["env"]["COORD_AGENT_ID"], "rev-1");
        assert!(p.env.contains(&("HOME".into(), "/r/run1/home".into())));
        let target = p
            .env
            .iter()
            .any(|(k, v)| k == "CARGO_TARGET_DIR" && v == "/r/run1/target");
        assert_eq!(
            target,
            *writable != Writable::Workspace,
            "{profile}: build output where it may write"
        );
        assert!(
            p.env
                .contains(&("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9/".into()))
        );
    }
    // A definition without Bash gets no Bash rules.
    let d = def("---\nname: a\ndescription: x\ntools: Read\n---\n").unwrap();
    let p = plan(Runtime::Claude, &inputs(&d, &env));
    assert_eq!(after(&p.argv, "--allowedTools"), Some("mcp__coord"));
}

#[test]
fn codex_and_aider_plans() {
    let env = vec![("COORD_AGENT_ID".to_string(), "a\"b".to_string())];
    let d = def("---\nname: a\ndescription: x\nprofile: read_only\n---\nSay \"hi\"\n").unwrap();
    let p = plan(Runtime::Codex, &inputs(&d, &env));
    let config = &p.files[0];
    assert_eq!(config.path, "/r/run1/codex/config.toml");
    assert!(
        config.contents.contains("COORD_AGENT_ID = \"a\\\"b\""),
        "{}",
        config.contents
    );
    assert!(config.contents.contains("developer_instructions = \"Say \\\"hi\\\"\""));
    assert!(config.contents.contains("default_tools_approval_mode = \"approve\""));
    assert!(config.contents.contains("env_vars = [\"COORDINATION_API_KEY\"]"));
    assert!(config.contents.contains("web_search = \"disabled\""));
    // Top-level keys before the first table (a key after a header belongs to the table).
    let first_table = config.contents.find("\n[").unwrap();
    assert!(config.contents.find("developer_instructions").unwrap() < first_table);
    assert!(config.contents.find("model_provider =").unwrap() < first_table);
    assert!(p.env.contains(&("CODEX_HOME".into(), "/r/run1/codex".into())));
    assert_eq!(&p.argv[p.argv.len() - 2..], ["--", "-review src/"]);
    assert_eq!(p.writable, Writable::Nothing);
    let p = plan(Runtime::Aider, &inputs(&d, &env));
    assert!(p.argv.contains(&"--dry-run".to_string()));
    for kept_out in [
        "--no-git",
        "--no-dirty-commits",
        "--no-gitignore",
        "/r/run1/aider-chat.md",
        "/r/run1/aider-input.txt",
    ] {
        assert!(p.argv.iter().any(|a| a == kept_out), "{kept_out}: {:?}", p.argv);
    }
    assert!(p.files[0].contents.ends_with("-review src/\n"));
    let w = def("---\nname: a\ndescription: x\nprofile: write\n---\n").unwrap();
    let p = plan(Runtime::Aider, &inputs(&w, &env));
    assert!(p.argv.contains(&"--yes-always".to_string()) && !p.argv.contains(&"--dry-run".to_string()));
    let files = ["src/a.rs".to_string(), "./-odd.rs".to_string()];
    let p = plan(
        Runtime::Aider,
        &LaunchInputs {
            files: &files,
            ..inputs(&w, &env)
        },
    );
    assert_eq!(
        &p.argv[p.argv.len() - 2..],
        ["/w/repo/src/a.rs", "/w/repo/-odd.rs"],
        "in its chat, never read as options"
    );
    assert_eq!(p.writable, Writable::Workspace);
}

#[test]
fn an_agent_without_hooks_is_told_and_kept_from_what_others_hold() {
    use crate::launch::{held_note, held_paths};
    let lock = |path: &str, reason: Option<&str>| coord_domain::locks::LockInfo {
        file_path: path.into(),
        locked_by: "alice".into(),
        agent_type: "claude_code".into(),
        session_id: None,
        reason: reason.map(String::from),
        locked_at: chrono::Utc::now(),
        expires_at: chrono::Utc::now(),
        fencing_token: 1,
    };
    let held = [
        lock("src/auth.rs", Some("refactoring")),
        lock("src/db/", None),
        lock("src/**/*.sql", None),
        lock("app/[id]/page.tsx", None),
    ];
    assert_eq!(held_paths(&held), ["src/auth.rs", "src/db"], "globs cannot be mounted");
    let note = held_note(&held).unwrap();
    assert!(note.contains("- src/auth.rs, held by alice: refactoring\n"), "{note}");
    assert!(note.contains("- src/**/*.sql (a pattern), held by alice\n"), "{note}");
    assert_eq!(held_note(&[]), None);
}
