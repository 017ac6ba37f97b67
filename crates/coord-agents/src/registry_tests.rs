use crate::parse_definition;
use crate::registry::{Entry, NotFound, assemble, find, parse_agents_json};
use coord_domain::agents::{Runtime, WorkerProfile};

/// The example of spec 002, as printed there.
const SPEC_002: &str = r#"[
  {
    "id": "researcher",
    "name": "Researcher",
    "description": "Expert at searching the web and summarizing documentation.",
    "tools": ["google_search", "read_file", "summarize"]
  },
  {
    "id": "coder",
    "name": "Senior Engineer",
    "description": "Expert Python/JS developer.",
    "tools": ["all"]
  }
]"#;

fn errors(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .flat_map(|e| e.errors().iter().map(ToString::to_string))
        .collect()
}

#[test]
fn spec_002_example_names_tools_no_runtime_has_and_all_means_the_profile() {
    let entries = assemble(parse_agents_json("agents.json", SPEC_002));
    assert_eq!(entries.len(), 2);
    assert_eq!(
        errors(&entries),
        vec![
            "agents[0].tools[0]: unknown tool \"google_search\" (known: Read, Grep, Glob, Bash, Edit, Write, NotebookEdit, WebFetch, WebSearch, TodoWrite, Task, Agent, mcp__coord, mcp__coord__<tool>, all)",
            "agents[0].tools[1]: unknown tool \"read_file\" (known: Read, Grep, Glob, Bash, Edit, Write, NotebookEdit, WebFetch, WebSearch, TodoWrite, Task, Agent, mcp__coord, mcp__coord__<tool>, all)",
            "agents[0].tools[2]: unknown tool \"summarize\" (known: Read, Grep, Glob, Bash, Edit, Write, NotebookEdit, WebFetch, WebSearch, TodoWrite, Task, Agent, mcp__coord, mcp__coord__<tool>, all)",
        ]
    );
    let coder = entries[1].definition().expect("coder is valid");
    assert_eq!(coder.display_name.as_deref(), Some("Senior Engineer"));
    assert_eq!(coder.profile, WorkerProfile::Write, "spec 003 names coder a writer");
    assert_eq!(coder.tools, WorkerProfile::Write.tools());
}

#[test]
fn agents_json_fields() {
    let text = r#"{"agents": [
      {"id": "lead", "description": "Plans and delegates", "system_prompt": "You lead.",
       "allowed_tools": ["Read", "Grep"], "delegates_to": ["researcher"], "runtime": "codex",
       "model": "m", "max_turns": 7},
      {"id": "researcher", "name": "Researcher", "description": "Reads", "tools": ["Read"], "parent_id": "lead"}
    ]}"#;
    let entries = assemble(parse_agents_json("agents.json", text));
    assert!(errors(&entries).is_empty(), "{:?}", errors(&entries));
    let lead = entries[0].definition().unwrap();
    assert_eq!(lead.prompt, "You lead.");
    assert_eq!(lead.tools, vec!["Read", "Grep"]);
    assert_eq!(lead.runtime, Some(Runtime::Codex));
    assert_eq!(lead.max_turns, Some(7));
    let researcher = entries[1].definition().unwrap();
    assert_eq!(researcher.parent.as_deref(), Some("lead"));
    assert!(lead.may_delegate_to(researcher), "named in delegates_to");
    assert!(!researcher.may_delegate_to(lead), "a child does not delegate up");
    assert_eq!(lead.children, vec!["researcher"], "the registry fills in children");
    let mut other = researcher.clone();
    other.name = "other".into();
    other.parent = Some("lead".into());
    assert!(
        !lead.may_delegate_to(&other),
        "a parent_id the registry did not see is not a child"
    );
    other.parent = None;
    let mut any = researcher.clone();
    any.delegates_to = vec!["*".into()];
    assert!(any.may_delegate_to(&other));
    assert!(!lead.may_delegate_to(&other));
}

#[test]
fn field_errors_name_the_path() {
    let cases: &[(&str, &[&str])] = &[
        (
            "[1]",
            &["agents[0]: not an object: give {\"id\": ..., \"description\": ..., \"tools\": [...]}"],
        ),
        ("{", &["file: not JSON: EOF while parsing an object at line 1 column 1"]),
        (
            "{\"a\": []}",
            &["file: give a list of agent objects (or {\"agents\": [...]})"],
        ),
        (r#"[{"description": "x"}]"#, &["agents[0].id: missing"]),
        (
            r#"[{"id": "Bad Name", "description": "x"}]"#,
            &["agents[0].id: \"Bad Name\": use lowercase letters, digits and '-'"],
        ),
        (r#"[{"id": "a"}]"#, &["agents[0].description: missing"]),
        (
            r#"[{"id": "a", "description": "x", "tools": ["Read"], "allowed_tools": ["Read"]}]"#,
            &["agents[0].allowed_tools: give tools or allowed_tools, not both"],
        ),
        (
            r#"[{"id": "a", "description": "x", "tools": ["all", "Read"]}]"#,
            &["agents[0].tools: \"all\" stands alone: it means every tool of the agent's profile"],
        ),
        (
            r#"[{"id": "a", "description": "x", "runtime": "gpt"}]"#,
            &["agents[0].runtime: \"gpt\": give claude, codex or aider"],
        ),
        (
            r#"[{"id": "a", "description": "x", "tools": ["Write"], "profile": "read_only"}]"#,
            &["agents[0].tools[0]: \"Write\" is not allowed by profile read_only (its tools: Read, Grep, Glob, Bash)"],
        ),
        (
            r#"[{"id": "a", "description": "x", "permissionMode": "bypassPermissions"}]"#,
            &["agents[0].permissionMode: not allowed: coord decides the permission mode from the profile"],
        ),
        (
            r#"[{"id": "a", "description": "x", "sandbox": "docker"}]"#,
            &[
                "agents[0].sandbox: unknown field (known: id, name, description, system_prompt, tools, allowed_tools, disallowed_tools, model, max_turns, profile, runtime, delegates_to, parent_id)",
            ],
        ),
        (
            r#"[{"id": "a", "description": "x", "delegates_to": ["b", "NO"]}]"#,
            &["agents[0].delegates_to[1]: \"NO\": an agent name (lowercase letters, digits and '-') or \"*\""],
        ),
        (
            r#"[{"id": "a", "description": "x", "delegates_to": ["b"]}]"#,
            &["agents[0].delegates_to[0]: no agent \"b\" in the registry"],
        ),
        (
            r#"[{"id": "a", "description": "x", "parent_id": "a"}]"#,
            &["agents[0].parent_id: an agent cannot be its own parent"],
        ),
        (
            r#"[{"id": "a", "description": "x", "parent_id": "ghost"}]"#,
            &["agents[0].parent_id: no agent \"ghost\" in the registry"],
        ),
        (
            r#"[{"id": "a", "description": "x", "parent_id": "b"}, {"id": "b", "description": "y", "parent_id": "a"}]"#,
            &[
                "agents[0].parent_id: parents form a cycle: a → b → a",
                "agents[1].parent_id: parents form a cycle: b → a → b",
            ],
        ),
        (
            r#"[{"id": "a", "description": "x"}, {"id": "a", "description": "y"}]"#,
            &[
                "agents[0].id: \"a\" is also defined by agents.json agents[1]",
                "agents[1].id: \"a\" is also defined by agents.json agents[0]",
            ],
        ),
    ];
    for (text, want) in cases {
        let got = errors(&assemble(parse_agents_json("agents.json", text)));
        assert_eq!(&got, want, "{text}");
    }
}

#[test]
fn markdown_and_json_share_the_registry() {
    let md =
        "---\nname: lead\ndescription: Leads\ntools: Read\ndelegatesTo: [researcher]\nruntime: codex\n---\nYou lead.\n";
    let md_entry = Entry::new(
        ".claude/agents/lead.md",
        None,
        Some("lead".into()),
        parse_definition(md),
    );
    let mut entries = vec![md_entry];
    entries.extend(parse_agents_json(
        "agents.json",
        r#"[{"id": "researcher", "description": "Reads", "parent_id": "lead"},
            {"id": "lead", "description": "dup"}]"#,
    ));
    let entries = assemble(entries);
    assert_eq!(
        errors(&entries),
        vec![
            "name: \"lead\" is also defined by agents.json agents[1]",
            "agents[1].id: \"lead\" is also defined by .claude/agents/lead.md",
        ]
    );
    // A duplicate is refused by name, with its errors, never resolved to one of the two.
    match find(&entries, "lead") {
        Err(NotFound::Invalid { place, errors }) => {
            assert_eq!(place, ".claude/agents/lead.md");
            assert_eq!(errors.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(find(&entries, "researcher").unwrap().parent.as_deref(), Some("lead"));
    assert_eq!(
        find(&entries, "nobody"),
        Err(NotFound::Missing {
            known: vec!["researcher".into()]
        })
    );
    let d = parse_definition(md).unwrap();
    assert_eq!(d.delegates_to, vec!["researcher"]);
    assert_eq!(d.runtime, Some(Runtime::Codex));
}
