use crate::parse_definition;
use crate::team::parse_team;
use coord_domain::agents::{AgentDefinition, WorkerProfile};

fn registry(name: &str) -> Option<AgentDefinition> {
    let text = match name {
        "code-reviewer" => "---\nname: code-reviewer\ndescription: Reviews\ntools: Read, Grep\n---\n",
        "lead" => "---\nname: lead\ndescription: Leads\ntools: Read\ndelegatesTo: [code-reviewer]\n---\n",
        _ => return None,
    };
    parse_definition(text).ok()
}

fn errors(yaml: &str) -> Vec<String> {
    match parse_team(yaml, &registry) {
        Ok(_) => vec![],
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

const GOOD: &str = "
name: backend
agents:
  - name: lead
    role: orchestrator
    capabilities: [planning, orchestration]
    definition: lead
    run: true
    task: Plan the sprint
  - name: reviewer
    role: reviewer
    capabilities: [review, security]
    definition: code-reviewer
  - name: coder
    role: implementer
    capabilities: [coding, testing]
    profile: write
    runtime: codex
    isolation: worktree
coordination:
  queue: backend
  max_concurrent: 2
  delegation:
    lead: [reviewer]
";

#[test]
fn a_team_file_reads_members_and_rules() {
    let team = parse_team(GOOD, &registry).unwrap();
    assert_eq!(team.name, "backend");
    assert_eq!(team.members.len(), 3);
    assert_eq!(team.members[2].profile, Some(WorkerProfile::Write));
    assert_eq!(
        (team.members[2].isolation, team.members[1].isolation),
        (Some(coord_domain::agents::isolation::Isolation::Worktree), None)
    );
    assert!(team.members[0].run && !team.members[1].run);
    assert_eq!((team.queue.as_str(), team.max_concurrent), ("backend", 2));
    assert_eq!(team.delegation["lead"], vec!["reviewer"]);
}

#[test]
fn every_error_with_its_path() {
    let cases: &[(&str, &[&str])] = &[
        ("[1, 2]", &["file: must be a mapping (name: ..., agents: [...])"]),
        ("name: t", &["agents: missing: list the team's members"]),
        (
            "name: t\nagents:\n  - name: a\n    role: x\n    profile: write\n  - name: b\n    profile: write\n  - name: c\n    role: r\n    capabilities: [coding, deploy]\n    profile: write\n",
            &[
                "agents[1].role: missing",
                "agents[2].capabilities[1]: unknown capability \"deploy\" (known: analysis, coding, debugging, design, documentation, orchestration, planning, refactoring, research, review, security, testing)",
            ],
        ),
        (
            "name: T t\ncolour: red\nagents:\n  - name: a\n    role: x\n    definition: ghost\n    sandbox: docker\n",
            &[
                "colour: unknown field (known: name, description, agents, coordination)",
                "name: \"T t\": use lowercase letters, digits, '-' and '_'",
                "agents[0].sandbox: unknown field (known: name, role, capabilities, description, definition, profile, runtime, isolation, run, task)",
                "agents[0].definition: no valid agent \"ghost\" in the registry (coord agent list)",
            ],
        ),
        (
            "name: t\nagents:\n  - name: a\n    role: x\n  - name: a\n    role: z\n    profile: root\n    run: yes please\n",
            &[
                "agents[0]: give definition (an agent of the registry) or profile",
                "agents[1].profile: \"root\": give read_only, write, verification or design",
                "agents[1].run: true or false",
                "agents[1].name: \"a\" is a member twice",
            ],
        ),
        (
            "name: t\nagents:\n  - name: a\n    role: x\n    profile: write\n    run: true\n",
            &["agents[0].task: missing: a member marked run: true needs its task"],
        ),
        (
            "name: t\nagents:\n  - {name: a, role: x, profile: write, isolation: container}\n",
            &["agents[0].isolation: \"container\": give shared or worktree"],
        ),
        (
            "name: t\nagents:\n  - {name: r, role: x, definition: code-reviewer}\n  - {name: l, role: q, definition: lead}\n  - {name: w, role: z, profile: write}\ncoordination:\n  max_concurrent: 0\n  delegation:\n    r: [l]\n    l: [r, w, ghost]\n    nobody: [r]\n",
            &[
                "coordination.max_concurrent: give a number from 1 to 20",
                "coordination.delegation.l[2]: no member \"ghost\"",
                "coordination.delegation.nobody: no member \"nobody\"",
                "coordination.delegation.l[1]: l's agent lead does not delegate to w: add write-worker (or \"*\") to its delegates_to",
                "coordination.delegation.r[0]: r's agent code-reviewer does not delegate to l: add lead (or \"*\") to its delegates_to",
            ],
        ),
        (
            "name: t\nagents:\n  - {name: a, role: x, profile: write, run: true, task: go}\n  - {name: b, role: x, profile: write, run: true, task: go}\ncoordination: {max_concurrent: 1}\n",
            &["coordination.max_concurrent: 2 members are marked run: true, more than max_concurrent 1"],
        ),
    ];
    for (yaml, want) in cases {
        assert_eq!(&errors(yaml), want, "{yaml}");
    }
}
