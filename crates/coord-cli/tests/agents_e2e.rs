//! Real agent runtimes end to end: the pinned Claude Code and Codex CLIs, configured as
//! a user would (`coord init claude`, `coord init codex --write`), driven by an in-repo
//! scripted model server on loopback (`tests/agents/scripted_model.py`; no network, no
//! model). The scenarios (`tests/agents/e2e.py`) assert on coord's state and audit trail,
//! never on the CLIs' exit codes (both exit 0 when a tool call is refused).
//!
//! `.ci/run` installs the CLIs into `.ci/node_modules`; elsewhere point
//! `COORD_TEST_AGENT_BIN` at a directory holding `claude` and `codex`. Without them the
//! tests say so loudly and skip — except under CI, where they fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use support::{BIN, under_ci};

/// The scenarios start several CLIs each: one at a time on a 2-core machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn agent_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("COORD_TEST_AGENT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/node_modules/.bin"));
    let works = |cli: &str, version: &str| {
        Command::new(dir.join(cli))
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(version))
    };
    let sdk = dir.join("../@modelcontextprotocol/sdk/package.json");
    if works("claude", "2.1.332") && works("codex", "0.171.0") && sdk.exists() {
        return Some(dir);
    }
    assert!(
        !under_ci(),
        "the pinned agent CLIs and the TypeScript MCP SDK are required under CI but are not in {}",
        dir.display()
    );
    eprintln!(
        "\n*** SKIPPING the real agent CLI tests: claude 2.1.332 and codex 0.171.0 are not in {}. Run .ci/run once, or set COORD_TEST_AGENT_BIN.\n",
        dir.display()
    );
    None
}

fn scenario(name: &str) {
    scenario_with(name, &[]);
}

fn scenario_with(name: &str, extra: &[&std::ffi::OsStr]) {
    let Some(bin) = agent_bin() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/e2e.py");
    // Bounded: a CLI that hangs fails the scenario instead of the whole run.
    let out = Command::new("timeout")
        .args(["--kill-after=10", "600", "python3"])
        .arg(script)
        .arg(name)
        .args(["--coord", BIN, "--bin"])
        .arg(&bin)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"ok\": true"),
        "scenario {name} failed:\n{stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The measured detail (identities, time to release) goes to the test log.
    eprintln!("{}", stdout.lines().last().unwrap_or_default());
}

/// Two Claude Code sessions on one host, both set up by `coord init claude` only: A locks
/// and writes a file and keeps running; B's Write of it is denied by B's hook, the file
/// keeps A's content, and the denial is audited under B's own identity.
/// Claude Code 2.1.328, installed by `.ci/run` in its own prefix.
fn claude_2_1_328() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/claude-2.1.328/node_modules/.bin");
    let works = Command::new(dir.join("claude"))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("2.1.328"));
    if works {
        return Some(dir);
    }
    assert!(
        !under_ci(),
        "Claude Code 2.1.328 is required under CI but is not in {}",
        dir.display()
    );
    eprintln!(
        "\n*** SKIPPING the Claude Code 2.1.328 scenarios: it is not in {}. Run .ci/run once.\n",
        dir.display()
    );
    None
}

fn scenario_on_2_1_328(name: &str) {
    let Some(old) = claude_2_1_328() else { return };
    scenario_with(name, &["--claude-bin".as_ref(), old.as_os_str()]);
}

/// Claude Code 2.1.328 set up by `coord init claude` only: coord's tools are offered and
/// work, its hooks fire (and whether it also loads the server without the user approval
/// `coord init claude` writes is reported).
#[test]
fn claude_code_2_1_328_is_wired_by_coord_init_claude() {
    scenario_on_2_1_328("approval");
}

/// The identity scenario on 2.1.328: two sessions are two agents there too.
#[test]
fn two_claude_code_2_1_328_sessions_are_two_agents() {
    scenario_on_2_1_328("two-claude-sessions");
}

#[test]
fn two_claude_code_sessions_are_two_agents() {
    scenario("two-claude-sessions");
}

/// Two Claude Code sessions in two worktrees of one repository share one coordination
/// space: a lock taken in the main checkout refuses a Write of that path in the worktree,
/// and both sessions are listed with their worktree and branch.
#[test]
fn claude_code_sessions_in_two_worktrees_share_locks() {
    scenario("two-worktrees");
}

/// An agent spawned with `--isolation worktree` edits in a worktree of its own: its
/// lock is visible from the main checkout; when it ends its change is a commit on its
/// branch and its worktree is removed.
#[test]
fn a_spawned_agent_works_in_a_worktree_of_its_own() {
    scenario("worktree-isolation");
}

/// Fail closed: Claude Code and Codex whose configured coord is gone have their edits
/// and commands refused by the hook, not let through.
#[test]
fn a_hook_whose_coord_is_gone_refuses_for_claude_code_and_codex() {
    scenario("missing-coord");
}

/// No self-approval: Claude Code and Codex cannot approve their own blocked force push
/// from their shell, with a borrowed identity or by writing coord's store.
#[test]
fn claude_code_and_codex_cannot_approve_their_own_requests() {
    scenario("self-approval");
}

/// A project's entry point is judged by its code: Claude Code's and Codex's hooks read the
/// package.json script `npm run ship` runs (`vercel --prod`) and refuse it; `npm run build`
/// runs.
#[test]
fn entry_points_are_judged_by_their_code_in_claude_code_and_codex() {
    scenario("entry-points");
}

/// coord installed into Claude Code and Codex through the repository's plugin marketplace
/// alone (no `coord init`): each session has coord's tools, and the plugin's hooks refuse
/// a held file and a destructive command, audited as the session.
#[test]
fn the_plugin_alone_wires_claude_code_and_codex() {
    scenario("plugin");
}

/// The runtimes' own sandboxes as `coord init` sets them up: a script Claude Code or Codex
/// wrote and runs (its paths invisible to the hooks) cannot write coord's store, plant a
/// file in the coordination space, rewrite coord's settings or dial the coordinator.
#[test]
fn the_runtime_sandbox_keeps_coords_state_from_the_agents_shell() {
    scenario("runtime-sandbox");
}

/// Claude Code set up by `coord init claude` only: a destructive Bash command is denied by
/// coord's hook (and audited, with an approval id), a benign one runs.
#[test]
fn claude_code_bash_goes_through_the_guardrails() {
    scenario("claude-guardrails");
}

/// An interactive Claude Code session in a terminal (no -p), in a repository set up by
/// `coord init claude` only: the person answers the trust and API-key dialogs and types a
/// prompt; coord's MCP tools load, the hooks fire under the session's own identity (a
/// Write of a held file denied and audited), and /exit ends the session.
#[test]
fn an_interactive_claude_code_session_is_wired_by_coord_init_claude() {
    scenario("interactive-claude");
}

/// A new Claude Code session's SessionStart hook gives the model the project's relevant
/// memories (and not the unrelated ones).
#[test]
fn claude_code_starts_with_the_relevant_memories() {
    scenario("claude-session-start-memory");
}

/// Claude Code set up by `coord init claude` only, through coord's file tools: a file
/// another agent holds is not written, an escape is refused, a fenced write lands and a
/// stale token writes nothing; all audited with spec 000's events.
#[test]
fn claude_code_writes_through_the_confined_file_tools() {
    scenario("claude-file-tools");
}

/// A Claude Code session SIGKILLed while holding a claimed task and a lock: after the
/// grace period another agent takes both, the attempt counted.
#[test]
fn a_killed_claude_code_session_releases_what_it_held() {
    scenario("killed-claude");
}

/// The official TypeScript MCP SDK runs the two-agent lock and queue scenario over stdio
/// and over streamable HTTP.
#[test]
fn the_typescript_mcp_sdk_over_stdio_and_http() {
    scenario("typescript-sdk");
}

/// The Python of `.ci/venv-strands` (or $COORD_TEST_STRANDS_PYTHON) if Strands imports
/// there; under CI it must.
fn strands_python(what: &str) -> Option<PathBuf> {
    let probe = ["-c", "import strands, strands.models.anthropic"];
    test_tool(
        "COORD_TEST_STRANDS_PYTHON",
        ".ci/venv-strands/bin/python",
        &probe,
        "",
        "Strands",
        what,
    )
}

/// A tool the scenarios run from `.ci/` (`default`, or `$env`), when `probe` succeeds and
/// prints `expect`: required under CI, skipped loudly otherwise.
fn test_tool(env: &str, default: &str, probe: &[&str], expect: &str, name: &str, what: &str) -> Option<PathBuf> {
    let tool = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(default));
    let works = Command::new(&tool)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(expect));
    if !works {
        assert!(
            !under_ci(),
            "{name} is required under CI but {} does not work",
            tool.display()
        );
        eprintln!(
            "\n*** SKIPPING {what}: {} does not work. Run .ci/run once, or set {env}.\n",
            tool.display()
        );
        return None;
    }
    Some(tool)
}

/// A Strands agent (`strands-agents` 1.62 in `.ci/venv-strands`), its model the scripted
/// one, claims and completes a task through coord's MCP server.
#[test]
fn a_strands_agent_claims_and_completes_a_task() {
    let Some(python) = strands_python("the Strands test") else {
        return;
    };
    scenario_with("strands", &["--strands-python".as_ref(), python.as_os_str()]);
}

/// A Strands orchestrator (the same venv, the `strands-orchestrator` profile) creates a graph
/// workflow through coord's MCP server; workers end its nodes (test fails, so fix, then
/// report); a second run of the orchestrator reads the aggregated results, and coord's state
/// and audit trail say the Strands identity made both calls.
#[test]
fn a_strands_orchestrator_creates_a_workflow_and_reads_its_results() {
    let Some(python) = strands_python("the Strands orchestrator test") else {
        return;
    };
    scenario_with(
        "strands-orchestrator",
        &["--strands-python".as_ref(), python.as_os_str()],
    );
}

/// Codex CLI takes a lock through coord's MCP server and is refused a file a Claude Code
/// session holds; the two are different agents.
#[test]
fn codex_is_refused_a_file_claude_code_holds() {
    scenario("codex-vs-claude");
}

/// The same with `mcp-direct = "on"` in the repository's configuration: Claude Code's
/// `coord mcp` (on the Unix sockets Node gives it) and Codex's (on pipes) hand them to the
/// repository's coordinator, which says so in its log, and the outcome is the same.
#[test]
fn claude_code_and_codex_hand_their_pipes_to_the_coordinator() {
    scenario("direct-handover");
}

/// Codex set up by `coord init codex --write` only: its hooks refuse a shell write of a
/// held file and an `rm -rf`, audited under the session's own identity (its MCP server's);
/// two Codex sessions are two agents.
#[test]
fn codex_is_guarded_by_its_hooks_like_claude_code() {
    scenario("codex-hooks");
}

/// `coord agent run` launches a READ_ONLY Claude Code worker (a `.claude/agents` definition)
/// in the sandbox: Write does not exist for it, its Bash write and its read outside the
/// workspace are refused, the file is untouched; coord's MCP tools work under its own
/// identity and key (revoked afterwards); its final answer reaches the caller.
#[test]
fn a_read_only_worker_cannot_write() {
    scenario("worker-read-only");
}

/// A WRITE worker edits inside the workspace, is refused outside it, and a test runner it
/// may run (`make`, repository code running curl) cannot reach a host its policy denies:
/// the proxy answers 403 and the access log has the refusal.
#[test]
fn a_write_worker_writes_inside_only_and_reaches_only_allowed_hosts() {
    scenario("worker-write");
}

/// A worker past its deadline is stopped (its whole process group), its lock released and
/// its claimed task back in the queue for another agent.
#[test]
fn a_worker_past_its_deadline_is_stopped_and_its_work_released() {
    scenario("worker-deadline");
}

/// Pre-flight validation of `coord agent run`: a validator answering INVALID, prose,
/// malformed JSON, nothing, an invalid verdict, a failure or too late blocks the launch
/// before anything is registered (no key, the model never asked), each denial audited with
/// its reason; a structured valid verdict from a command or a model lets it run; switching
/// validation off is recorded.
#[test]
fn pre_flight_validation_blocks_all_but_a_structured_valid_verdict() {
    scenario("preflight");
}

/// `coord agent run --runtime codex` launches a READ_ONLY Codex worker: its shell write is
/// refused by the read-only workspace (the file untouched), coord's MCP tools work under its
/// identity (its key passed by name only), provider-side web search is off, and its last
/// message reaches the caller.
#[test]
fn a_read_only_codex_worker_cannot_write() {
    scenario("worker-codex-read-only");
}

/// Spec 003's toggle `COORD_SANDBOX_ENABLED=false`: the launch runs outside the sandbox with
/// a loud warning and an audit row saying so (advisory enforcement), the CLI's own checks
/// and the profile's tools kept; an unreadable value is refused.
/// Aider's script in `.ci/venv-aider` (or `COORD_TEST_AIDER`); required under CI.
fn aider(what: &str) -> Option<PathBuf> {
    test_tool(
        "COORD_TEST_AIDER",
        ".ci/venv-aider/bin/aider",
        &["--version"],
        "0.86.2",
        "Aider 0.86.2",
        what,
    )
}

/// Aider as a read-only worker: the model's edit is not applied (ask mode, --dry-run, a
/// read-only workspace); its output is the result; the launch is audited.
#[test]
fn a_read_only_aider_worker_changes_nothing() {
    let Some(aider) = aider("the read-only Aider test") else {
        return;
    };
    scenario_with("aider-read-only", &["--aider".as_ref(), aider.as_os_str()]);
}

/// Aider as a writing worker: its edit lands, a file another agent held when it started
/// is read-only in its sandbox and named in its message, and nothing but the model is
/// reached.
#[test]
fn an_aider_worker_writes_but_not_what_others_hold() {
    let Some(aider) = aider("the writing Aider test") else {
        return;
    };
    scenario_with("aider-write", &["--aider".as_ref(), aider.as_os_str()]);
}

#[test]
fn the_sandbox_toggle_is_loud_and_audited() {
    scenario("worker-unsandboxed");
}

/// `spawn_agent` through a door (`coord agent spawn`): a READ_ONLY Claude Code worker is
/// registered with its task claimed, run in the background by its supervisor (Write absent,
/// its Bash write and outside read refused, the file untouched), and its final answer
/// completes the task and reaches the orchestrator through `get_agent_output`; its key is
/// revoked and its start and end audited. Bad input, no validator and a validator's prose
/// are refused.
#[test]
fn a_spawned_worker_completes_its_task_with_its_answer() {
    scenario("spawn");
}

/// Spawned WRITE workers: one whose runtime is SIGKILLed (failed), one whose supervisor is
/// SIGKILLed (found out and reclaimed by the next `get_agent_status`: lost, nothing of it
/// left running), one stopped by `stop_agent` (stopped): each time its lock is released,
/// its task back in the queue and its key revoked.
#[test]
fn a_killed_or_stopped_spawned_worker_gives_its_work_back() {
    scenario("spawned-worker-killed");
}

/// Spec 001's orchestration scenario for real: a Claude Code orchestrator set up by `coord
/// init claude` calls the MCP tool `spawn_agent` (refused while its profile lacks
/// `spawn_agent`, nothing registered); with an orchestrator profile the worker is registered
/// under it, runs, and completes its task with its answer; `delegate_task` hands the
/// orchestrator's model a worker's final answer as the tool's result.
#[test]
fn a_claude_code_orchestrator_spawns_a_worker_over_mcp() {
    scenario("orchestrator-spawns");
}

/// Spec 001's graph with conditional edges, run by real spawned workers: implement → test;
/// test → fix when it fails, → review if its result says passed; fix → review (join
/// any). Each node names a profile, so coord spawns a Claude Code worker for it when it is
/// queued; the scripted test fails once: the failure edge runs, then the success path; the
/// results are aggregated.
#[test]
fn a_graph_workflow_is_run_by_spawned_workers_through_its_failure_edge() {
    scenario("workflow-graph");
}

/// Spec 001's swarm: two Claude Code workers and one Codex worker spawned by create_swarm
/// drain a shared queue of six tasks: each task done once, two per member, no lock
/// conflict, results aggregated by get_swarm_results.
#[test]
fn a_swarm_of_claude_code_and_codex_workers_drains_a_shared_queue() {
    scenario("swarm");
}

/// Spec 003's other two profiles, spawned side by side as generic workers: DESIGN writes
/// `docs/` and nothing else; VERIFICATION runs the tests in a read-only workspace without a
/// Write tool.
#[test]
fn design_and_verification_workers_keep_to_their_paths() {
    scenario("design-and-verification");
}
