//! Command-line grammar. Global flags are accepted before or after the subcommand.

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str = "Agent Coordinator: file locks, a work queue, sessions, handoffs and an audit trail \
for many AI coding agents sharing one codebase";

const LONG_ABOUT: &str = "Agent Coordinator: file locks, a work queue, sessions, handoffs and an audit \
trail for many AI coding agents (Claude Code, Codex, Aider, cloud agents) sharing one codebase.

By default the state lives in an embedded SQLite database at <git root>/.coord/coord.db, created on
first use. Point every process at one PostgreSQL with --db postgres://… to share across machines.

Exit codes: 0 success, 1 refused (e.g. the lock is held by another agent, no task available),
2 usage or input error, 3 storage unavailable.";

#[derive(Debug, Parser)]
#[command(name = "coord", version, about = ABOUT, long_about = LONG_ABOUT, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Print machine-readable JSON (the same shapes as the MCP tools and the HTTP API)
    #[arg(long, global = true)]
    pub json: bool,
    /// Database: a SQLite file path or sqlite:PATH (default <git root>/.coord/coord.db), or postgres://…
    #[arg(
        long,
        global = true,
        env = "COORD_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub db: Option<String>,
    /// Who you are to other agents (default: <user>@<host>)
    #[arg(long, global = true, env = "COORD_AGENT_ID", value_name = "ID")]
    pub agent_id: Option<String>,
    /// What kind of agent you are, e.g. claude_code, codex, human (default: cli; AGENT_TYPE is also read)
    #[arg(long, global = true, env = "COORD_AGENT_TYPE", value_name = "TYPE")]
    pub agent_type: Option<String>,
    /// Talk to a coordination API (`coord serve`) instead of opening a database
    #[arg(long, global = true, env = "COORDINATION_API_URL", value_name = "URL")]
    pub remote: Option<String>,
    /// API key for --remote (X-API-Key)
    #[arg(
        long,
        global = true,
        env = "COORDINATION_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// A directory the file tools (read_file, write_file) may touch; repeatable, each
    /// inside the repository, relative to its root or absolute (default: the whole
    /// repository). Also COORD_WORKSPACES, a ':'-separated list
    #[arg(long = "workspace", global = true, value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,
    /// Largest file the file tools read or write, in bytes (default 1048576 = 1 MiB)
    #[arg(long, global = true, env = "COORD_FILE_SIZE_LIMIT", value_name = "BYTES")]
    pub file_size_limit: Option<u64>,
    /// A session's working-memory budget in estimated tokens (bytes/4 + 4 per entry;
    /// default 4000): over it, older non-critical entries are compacted
    #[arg(long, global = true, env = "COORD_WORKING_MEMORY_BUDGET", value_name = "TOKENS",
          value_parser = clap::value_parser!(i64).range(200..=1_000_000), allow_negative_numbers = true)]
    pub working_memory_budget: Option<i64>,
    /// The half-life of recall's recency decay, in days (default 90): a memory last seen
    /// this long ago weighs 0.7 of a fresh one, never less than 0.4
    #[arg(long, global = true, env = "COORD_RECALL_HALF_LIFE_DAYS", value_name = "DAYS",
          value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub recall_half_life_days: Option<u32>,
    /// The coordinator's own hosts for network policies' `coordination` category
    /// (`host`, `*.host`, `host:port`; repeatable or comma-separated). The host of
    /// COORDINATION_API_URL is always one of them
    #[arg(
        long = "coordination-domain",
        global = true,
        env = "COORD_COORDINATION_DOMAINS",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub coordination_domains: Vec<String>,
    /// Model endpoints for network policies' `model_providers` category, beyond
    /// api.anthropic.com and api.openai.com (`host`, `host:port`; repeatable or
    /// comma-separated): what agents launched by `coord agent run` must reach
    #[arg(
        long = "model-endpoint",
        global = true,
        env = "COORD_MODEL_ENDPOINTS",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub model_endpoints: Vec<String>,
    /// Whether --agent-id and --agent-type were written on the command line (not taken
    /// from COORD_AGENT_ID/COORD_AGENT_TYPE): commands that mint a credential for another
    /// identity (`coord key`, `coord cloud`) use only what was written, so an
    /// operator's own identity in the environment never becomes the agent's.
    #[arg(skip)]
    pub identity_on_command_line: (bool, bool),
    /// The global options written on the command line (their ids), for `coord config show`.
    #[arg(skip)]
    pub written_flags: Vec<String>,
}

impl GlobalArgs {
    /// The parsed global options, as the runtime takes them.
    pub fn settings(&self) -> coord_runtime::context::Settings {
        coord_runtime::context::Settings {
            db: self.db.clone(),
            agent_id: self.agent_id.clone(),
            agent_type: self.agent_type.clone(),
            remote: self.remote.clone(),
            api_key: self.api_key.clone(),
            workspaces: self.workspaces.clone(),
            file_size_limit: self.file_size_limit,
            working_memory_budget: self.working_memory_budget,
            recall_half_life_days: self.recall_half_life_days,
            coordination_domains: self.coordination_domains.clone(),
            model_endpoints: self.model_endpoints.clone(),
        }
    }
}

/// Ends the process on a command line the grammar refuses: clap's own text unless
/// `--json` was asked for, then the error shape of every other refusal on stdout
/// (`invalid_argument`, exit code 2), so a script reading JSON gets JSON. Help and the
/// version asked for are printed as ever; a group command given nothing (`coord --json
/// lock`), which clap answers with its help, is a refusal too under `--json`.
fn usage_error(args: &[std::ffi::OsString], e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    use std::io::Write as _;
    let asked = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if asked || !json_asked(args) {
        e.exit()
    }
    let missing = e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
    let refusal = usage_refusal(&e.render().to_string(), missing);
    // Parsing comes before SIGPIPE's default is restored: a reader gone is no panic.
    let _ = writeln!(std::io::stdout(), "{}", refusal.to_value());
    std::process::exit(i32::from(crate::output::exit_code(&refusal)))
}

/// Whether `--json` is among the options of `args` (not after `--`, where it would be a
/// value).
fn json_asked(args: &[std::ffi::OsString]) -> bool {
    args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--json")
}

/// clap's rendered error as a refusal: what it says (the missing arguments, its tip) on
/// one line without the `error: ` prefix, and the usage line it names. With
/// `subcommand_missing`, what clap rendered is the group's help, not an error.
fn usage_refusal(rendered: &str, subcommand_missing: bool) -> coord_domain::CoordError {
    let lines: Vec<&str> = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let said: Vec<&str> = lines
        .iter()
        .take_while(|l| !l.starts_with("Usage: "))
        .filter(|l| !l.starts_with("For more information, try"))
        .copied()
        .collect();
    let said = said.join(" ");
    let message = match said.strip_prefix("error: ").unwrap_or(&said) {
        _ if subcommand_missing => "a subcommand is required (see --help)",
        "" => "the command line is not valid",
        m => m,
    };
    let mut e = coord_domain::CoordError::new(coord_domain::ErrorCode::InvalidArgument, message.to_string());
    if let Some(usage) = lines.iter().find_map(|l| l.strip_prefix("Usage: ")) {
        e = e.with_detail("usage", usage);
    }
    e
}

/// Whether the global option `id` was written on the command line (not taken from the
/// environment or a file).
fn written(matches: &clap::ArgMatches, id: &str) -> bool {
    // Global flags are recorded on the subcommand they were written after.
    let mut m = matches;
    loop {
        if m.try_get_raw(id).is_ok() && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            return true;
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

/// Whether `--agent-id` and `--agent-type` were written on the command line.
fn identity_written(matches: &clap::ArgMatches) -> (bool, bool) {
    (written(matches, "agent_id"), written(matches, "agent_type"))
}

/// The global options with a setting of their own that were written on the command line.
fn flags_written(matches: &clap::ArgMatches) -> Vec<String> {
    crate::config::SETTINGS
        .iter()
        .filter_map(|s| s.flag)
        .filter(|id| written(matches, id))
        .map(String::from)
        .collect()
}

/// Said under each command's help instead of the options every command takes.
const GLOBAL_OPTIONS: &str = "Options every command takes (--json, --db, --agent-id, …): `coord help options`";

/// The grammar as a person reads it: the options every command takes are listed once —
/// in `coord --help` and `coord help options` — not again under every command (each
/// still accepts them, before or after its name).
fn command() -> clap::Command {
    let options =
        clap::Command::new("options").about("The options every command takes, before or after the command's name");
    let cmd = <Cli as clap::CommandFactory>::command().subcommand(options);
    let globals: Vec<clap::Arg> = cmd.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    hide_globals(cmd, &globals)
}

/// Each command under `cmd` given its own hidden copy of every global option: clap then
/// propagates nothing there (a command's own definition wins), parses the same, and
/// reports the value where a global option's is read.
fn hide_globals(mut cmd: clap::Command, globals: &[clap::Arg]) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "options")
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |mut sub| {
            for g in globals {
                if sub.get_arguments().all(|a| a.get_id() != g.get_id()) {
                    sub = sub.arg(g.clone().hide(true));
                }
            }
            hide_globals(sub.after_help(GLOBAL_OPTIONS), globals)
        });
    }
    cmd
}

/// The long names of coord's own options (`--agent-id`, `--json`, …), which go before
/// a subcommand's words.
pub fn global_options() -> Vec<String> {
    command()
        .get_arguments()
        .filter(|a| a.is_global_set())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// After `coord call OPERATION` every word is the request's (its JSON and its fields as
/// flags, `--agent-id` of `query_audit` among them): a `--` goes there so that clap never
/// reads one as coord's own option, whatever its position.
fn request_words_literal(mut args: Vec<std::ffi::OsString>, grammar: &clap::Command) -> Vec<std::ffi::OsString> {
    let takes_value: Vec<String> = grammar
        .get_arguments()
        .filter(|a| a.get_action().takes_values())
        .flat_map(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            long.into_iter().chain(a.get_short().map(|c| format!("-{c}")))
        })
        .collect();
    // The index of the first word that is not an option (or an option's value) from `i`.
    let word_from = |args: &[std::ffi::OsString], mut i: usize| -> Option<usize> {
        while let Some(a) = args.get(i).map(|a| a.to_string_lossy()) {
            match a.as_ref() {
                "--" => return None,
                a if a.starts_with('-') => i += 1 + usize::from(takes_value.iter().any(|t| t == a)),
                _ => return Some(i),
            }
        }
        None
    };
    let Some(sub) = word_from(&args, 1) else { return args };
    if args[sub] != "call" {
        return args;
    }
    if let Some(op) = word_from(&args, sub + 1)
        && args.get(op + 1).is_some_and(|next| next != "--")
    {
        args.insert(op + 1, "--".into());
    }
    args
}

impl Cli {
    /// Parses the command line (exits with clap's message on bad usage), noting where the
    /// identity flags came from.
    pub fn from_command_line() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        match Cli::hook_line(&args) {
            Some(cli) => cli,
            None => Cli::whole_grammar(args.clone()).unwrap_or_else(|e| usage_error(&args, e)),
        }
    }

    /// `args` read by the hook-only grammar ([`HookLine`]); `None` when it does not
    /// accept them.
    fn hook_line(args: &[std::ffi::OsString]) -> Option<Cli> {
        use clap::{CommandFactory, FromArgMatches};
        if !args.iter().skip(1).any(|a| a == "hook") {
            return None;
        }
        let matches = HookLine::command().try_get_matches_from(args).ok()?;
        let line = HookLine::from_arg_matches(&matches).ok()?;
        let HookOnly::Hook(hook) = line.command;
        let mut global = line.global;
        global.identity_on_command_line = identity_written(&matches);
        global.written_flags = flags_written(&matches);
        Some(Cli {
            global,
            command: Command::Hook(hook),
        })
    }

    fn whole_grammar(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
        use clap::FromArgMatches;
        let mut grammar = command();
        let args = request_words_literal(args, &grammar);
        let matches = grammar.try_get_matches_from_mut(args)?;
        if let Some(("options", _)) = matches.subcommand()
            && let Some(options) = grammar.find_subcommand_mut("options")
        {
            // A page to read, like `coord help options`: printed, nothing run.
            let _ = options.print_long_help();
            std::process::exit(0);
        }
        if let Some(("call", call)) = matches.subcommand()
            && call.get_flag("help")
            && call.get_one::<String>("operation").is_none()
            && let Some(page) = grammar.find_subcommand_mut("call")
        {
            let _ = page.print_long_help();
            std::process::exit(0);
        }
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.global.identity_on_command_line = identity_written(&matches);
        cli.global.written_flags = flags_written(&matches);
        Ok(cli)
    }

    /// The identity flags written on the command line, for minting credentials.
    pub fn written_identity(global: &GlobalArgs) -> (Option<String>, Option<String>) {
        let (id, ty) = global.identity_on_command_line;
        (
            global.agent_id.clone().filter(|_| id),
            global.agent_type.clone().filter(|_| ty),
        )
    }
}

// Parsed once per process: the size of its largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the database and print where it is; or set up an agent runtime:
    /// `coord init claude`, `coord init codex`, `coord init git-hook`
    Init {
        #[command(subcommand)]
        target: Option<InitTarget>,
    },
    /// Apply pending schema migrations (also done automatically on every start)
    Migrate,
    /// One-screen summary: who you are, your locks and tasks, the queue, the agents
    Status,
    /// Check this installation end to end and say what to fix: the `coord` the runtimes'
    /// configurations run, the store, Claude Code's and Codex's hooks (installed, failing
    /// closed) and MCP server, the runtimes' versions against the tested ones, the sandbox.
    /// Changes nothing; exits 1 when a check fails
    Doctor,
    /// The fleet's figures for whoever supervises it: agents, locks held, the queue by
    /// state, approvals pending, claim-to-complete time, guardrail blocks by category,
    /// memory feedback (administrators: trust 4 or an operator key; `GET /metrics` serves
    /// the same figures to Prometheus)
    Stats,
    /// File locks: take one before editing a file other agents may touch
    #[command(subcommand)]
    Lock(LockCommand),
    /// The work queue: submit, claim and complete tasks
    #[command(subcommand)]
    Work(WorkCommand),
    /// Confined file tools: read or write a file of the workspace through coord (no
    /// escape, no symlinks, atomic writes fenced by your lock), as agents do over MCP
    #[command(subcommand)]
    File(FileCommand),
    /// Handoff documents: leave context for the next session, read the last one
    #[command(subcommand)]
    Handoff(HandoffCommand),
    /// Agent memory: remember what happened, recall what helps with a task, vote on
    /// recalled memories, forget; skills and their effectiveness; your session's working
    /// memory (docs/memory.md)
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Messages between agents: send (to an agent or to the holders of a file), inbox,
    /// read, ack
    #[command(subcommand)]
    Msg(MsgCommand),
    /// The audit trail: query it (newest first; the default), export it as JSON Lines,
    /// verify its hash chain, prune rows older than the retention (90 days by default)
    Audit(AuditCommandArgs),
    /// Managed API keys for the HTTP API: create (bound to --agent-id/--agent-type), list, revoke
    #[command(subcommand, name = "key", alias = "keys")]
    Keys(KeysCommand),
    /// Agent profiles: who may do what (trust level 0-4, permissions, resource limits).
    /// An agent's profile is the one assigned to its id, else its type's default, else
    /// least-privilege (read only). Changing them needs trust 4 (agent type `cli`, the
    /// person at the terminal) or an operator key
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// The approval queue: requests refused over a resource limit of a profile that
    /// allows escalation wait here for a person (trust 4 or an operator key); an
    /// approval lets the same agent's same request pass once, until it expires
    #[command(subcommand, name = "approval", alias = "approvals")]
    Approvals(ApprovalsCommand),
    /// The security channel: every destructive operation an agent ran as an elevated
    /// operation of its profile, and its delivery to the webhook
    /// (COORD_SECURITY_WEBHOOK_URL; `coord serve` delivers every few seconds)
    #[command(subcommand, name = "notification", alias = "notifications")]
    Notifications(NotificationsCommand),
    /// Destructive-operation guardrails: check a shell command line (or the files an edit
    /// changes) before running it; blocked commands can be approved once (coord approval)
    #[command(subcommand)]
    Guard(GuardCommand),
    /// Cloud agents (Claude Code on the web, Codex Cloud): `coord cloud env` issues a
    /// short-lived key for one session or task and prints the agent's environment
    #[command(subcommand)]
    Cloud(CloudCommand),
    /// Port blocks for isolated per-session environments (shared by every process on this machine)
    #[command(subcommand, name = "port", alias = "ports")]
    Ports(PortsCommand),
    /// Network policies: ask whether you may reach a host, list and change the policies
    /// (allow and deny entries, categories such as @package_managers), read the access
    /// log (docs/network.md)
    #[command(subcommand)]
    Network(NetworkCommand),
    /// Run a command where the only way out is the egress proxy, held to an agent's
    /// network policy (bubblewrap; docs/network.md)
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// The verification gateway: policies route changed files to tiers and executors
    /// (lint inline, tests on GitHub Actions, a person's review for tier 4); submit a
    /// change and follow its runs (docs/verification.md)
    #[command(subcommand)]
    Verify(VerifyCommand),
    /// GitHub: the label that locks a path (`locked:<path>`, or `locked:<tail>#<hash>` for
    /// paths over GitHub's 50 characters; docs/github.md)
    #[command(subcommand)]
    Github(GithubCommand),
    /// Agents: the registry (.claude/agents/*.md and agents.json: list, show), launching
    /// one with least privilege (flags, run, spawn and what it spawned), and sessions
    /// (register, heartbeat, discover peers, clean up dead agents); docs/agents.md
    #[command(subcommand, alias = "agents")]
    Agent(AgentCommand),
    /// Graph workflows: nodes are queue tasks, edges conditions on the upstream result
    /// (when: success|failure|always, or CEL); create from a YAML/JSON file, follow
    /// (docs/orchestration.md)
    #[command(subcommand)]
    Workflow(WorkflowCommand),
    /// Swarms: spawned agents draining a shared queue of tasks, results aggregated
    /// (docs/orchestration.md)
    #[command(subcommand)]
    Swarm(SwarmCommand),
    /// Teams declared in a file (teams.yaml): members with roles and capabilities, who
    /// delegates to whom; validate, bring up, follow (docs/orchestration.md)
    #[command(subcommand)]
    Team(TeamCommand),
    /// Run one agent of the registry on a task from the shell (spec 002's `--agent`):
    /// `coord agent run` with the agent named by --agent; prints its final answer
    #[command(hide = true)]
    Run(Box<RunArgs>),
    /// The egress proxy alone: HTTP CONNECT and plain-HTTP forwarding for agents that
    /// authenticate with `Proxy-Authorization: Basic <agent id>:<managed API key>`
    /// (`coord key create`), each held to its own network policy; every attempt is
    /// decided by check_network_access and logged (docs/network.md)
    Proxy(ProxyArgs),
    /// Run any operation by name, its request as JSON or as flags read from the request's
    /// schema (every operation is reachable from the shell the day it exists; `coord ops`
    /// lists them, `coord call OPERATION --help` lists one's flags)
    ///
    /// Examples: `coord call acquire_lock --file-path src/a.rs --ttl-minutes 30`,
    /// `coord call acquire_lock '{"file_path":"src/a.rs","ttl_minutes":30}'`,
    /// `coord call status`, `coord call write_handoff @handoff.json --summary Done`,
    /// `echo '{}' | coord call check_locks -`.
    /// The answer is printed as JSON; the exit code follows it (1 refused, 2 bad input).
    Call(CallArgs),
    /// List every operation: name, access, effect, HTTP routes, MCP tool, summary
    /// (`--json` for the full definitions, with request and response schemas)
    Ops,
    /// Serve MCP over stdin/stdout for one agent (Claude Code, Codex, any MCP client)
    ///
    /// Locally the session is served by the repository's coordinator process (started on
    /// demand; COORD_LOCAL_SERVER=off: this process serves it and opens the database),
    /// and this process relays the agent's lines to it, replaying them to a successor if
    /// it dies. COORD_MCP_DIRECT=on hands the agent's pipes to the coordinator instead:
    /// faster with many agents, no replay (docs/mcp.md).
    Mcp,
    /// Measure throughput and latency on a scratch database, with invariant checks and
    /// raw-SQL baselines; prints one JSON line per run (see docs/benchmarks.md)
    ///
    /// Every run uses its own scratch database, removed afterwards: a fresh SQLite file in
    /// the directory of --db (default: the system temp directory), or a fresh database on
    /// the PostgreSQL server of --db (its user needs CREATEDB). The repository's own
    /// coordinator is never touched. Exit code 1 when a run had errors or invariant
    /// violations.
    Bench(BenchArgs),
    /// Serve the HTTP API (and MCP over streamable HTTP at /mcp) for cloud agents
    Serve(ServeArgs),
    /// Open the live dashboard of this repository's coordinator in your browser: serves
    /// it on loopback (as `coord serve` does) and prints a one-time sign-in link (no key
    /// needed: you are at the terminal). Ctrl-C stops it
    Ui(UiArgs),
    /// Run an agent-runtime hook: a Claude Code event (reads its JSON on stdin),
    /// git-pre-commit or git-pre-push. Never breaks the agent's session when the
    /// coordinator is unreachable (the guardrails then decide locally)
    Hook(HookArgs),
    /// Print a completion script for your shell, from coord's own grammar: add
    /// `source <(coord completions bash)` to ~/.bashrc (zsh: `source <(coord completions
    /// zsh)` after compinit; fish: `coord completions fish | source`)
    Completions {
        /// bash, zsh, fish, elvish or powershell
        shell: clap_complete::Shell,
    },
    /// Print coord's man page (roff), from its own grammar: `coord man | man -l -`, or
    /// `coord man > ~/.local/share/man/man1/coord.1`
    Man,
    /// Configuration files: the repository's (.coord/config.toml, shared by its worktrees)
    /// and yours (~/.config/coord/config.toml), for settings that are flags or
    /// environment variables. A flag wins over the environment, the environment over the
    /// repository's file, that over yours
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The settings in effect and where each came from (flag, environment, file), and
    /// the files read
    Show {
        /// Every setting a file may hold, set or not (keys, environment variables)
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// SessionStart, SessionEnd, PreToolUse (other Claude Code events are accepted
    /// and ignored), git-pre-commit or git-pre-push
    pub event: String,
    /// What git passes its hook: for git-pre-push, the remote's name and URL (other
    /// events take none and ignore them)
    #[arg(num_args = 0..=2, value_name = "GIT_ARGS")]
    pub git_args: Vec<String>,
}

/// The grammar of `coord hook EVENT` alone (with every global flag): what an agent
/// runtime runs before each tool call. Building the whole grammar — every subcommand's
/// arguments — was half of a hook process's instructions (docs/benchmarks.md, "Hooks");
/// a hook line parses here first, and anything this grammar does not accept (help, a
/// typo, another command) goes to the whole grammar, which answers it as before. Being a
/// subset of the whole grammar with the same [`GlobalArgs`], whatever it accepts means
/// the same there.
#[derive(Debug, Parser)]
#[command(name = "coord", disable_help_flag = true, disable_help_subcommand = true)]
struct HookLine {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: HookOnly,
}

#[derive(Debug, Subcommand)]
enum HookOnly {
    Hook(HookArgs),
}

#[derive(Debug, Args)]
// `coord call OPERATION --help` is the operation's help, from the registry: clap's own
// flag would print this command's instead.
#[command(disable_help_flag = true)]
pub struct CallArgs {
    /// The operation's name, as `coord ops` lists it (e.g. acquire_lock)
    #[arg(required_unless_present = "help")]
    pub operation: Option<String>,
    /// The request: first a JSON object, @FILE to read one from a file, or - for stdin
    /// (default {}); then any of its fields as flags, read by the field's type
    /// (`--file-path src/a.rs --ttl-minutes 30`, a list field repeated, an object as
    /// JSON). `coord call OPERATION --help` lists an operation's flags
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "REQUEST | --FIELD VALUE"
    )]
    pub rest: Vec<String>,
    /// Print help; after an OPERATION, its flags, from its request's schema
    #[arg(short = 'h', long = "help")]
    pub help: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchWorkload {
    /// acquire+release pairs on random paths, through the service (audit included)
    Locks,
    /// claim+complete pairs by concurrent workers over a prefilled queue
    Queue,
    /// acquire_lock/release_lock round trips through `coord mcp` child processes (stdio)
    Mcp,
    /// acquire+release pairs through a `coord serve` child over loopback HTTP
    Http,
    /// many simulated agents against one `coord serve` (register, heartbeat, locks, tasks)
    Agents,
    /// faults injected while agents work (HTTP clients of two or more `coord serve`, and
    /// `coord mcp` processes): nodes SIGKILLed and restarted, stopped and continued,
    /// agents killed holding a claim, PostgreSQL cut off (a restart or a partition, as
    /// coord sees it); then the invariants, from the store and the audit chain: no lock
    /// held twice, fencing tokens growing, nothing acknowledged lost, no task completed
    /// twice, killed agents' claims requeued, service back within 30 s of each fault,
    /// the chain intact. Exit 0 when none is violated (errors during faults are expected)
    Chaos,
    /// the destructive-operation analysis on the labelled corpus (no database): share of
    /// destructive commands refused, of benign ones flagged, and latency per command
    /// beside parsing alone
    Guardrails,
    /// the confined file tools: reads and atomic writes of 4 KiB and 1 MiB files beside
    /// plain std::fs in the same run (--rounds reads per size, a tenth as many writes),
    /// and read_file/write_file through the coordinator on a scratch SQLite database
    Files,
    /// Claude Code's PreToolUse hook (`coord hook PreToolUse` with a Write and a Bash
    /// payload, whole processes, in a scratch repository) beside `coord --version`
    /// (process start) in the same run; --rounds runs each (default there: 50)
    Hooks,
    /// memory recall: top-3 hit rate and MRR on a judged fixture of coding-agent memories
    /// and tasks, beside a tag-filter-plus-recency baseline, then recall latency with
    /// --memories more memories (--rounds times each query); on a scratch database of
    /// the --db backend
    Recall,
    /// the egress proxy: per request on fresh loopback connections, direct beside
    /// forwarded and CONNECT-tunnelled through the proxy (each decided and logged on a
    /// scratch SQLite database), interleaved, --rounds each (default there: 300); then
    /// MiB/s through a tunnel beside a direct connection
    Proxy,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("baseline").args(["raw", "compare"])))]
pub struct BenchArgs {
    pub workload: BenchWorkload,
    /// Concurrent clients (connections, workers, MCP servers)
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub clients: usize,
    /// How long each run lasts (default 10; chaos: 30)
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// locks/queue: run only the raw SQL baseline (the store's statements, no service layer)
    #[arg(long)]
    pub raw: bool,
    /// Run the baseline first, then the measured path, and report their ratio: raw SQL for
    /// locks/queue, the in-process service for http/mcp. locks also runs the independent
    /// limit: Python's sqlite3 (SQLite) or pgbench (PostgreSQL) executing the leanest
    /// statements with coord's guarantees (COORD_BENCH_PYTHON, COORD_BENCH_PGBENCH)
    #[arg(long)]
    pub compare: bool,
    /// Distinct file paths the lock workloads draw from (default 1000; agents: 250, so
    /// agents contend for files)
    #[arg(long, value_name = "N")]
    pub paths: Option<usize>,
    /// locks: live locks another agent holds throughout the run (files, directories and
    /// globs near the measured paths, none overlapping them), e.g. 1000: the cost of
    /// checking an acquisition against many live locks
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub held: usize,
    /// agents, chaos: how many simulated agents (default 1000; chaos: 16)
    #[arg(long, value_name = "N")]
    pub agents: Option<usize>,
    /// agents, chaos: how many `coord serve` processes share the database, the agents
    /// split across them (the scale-out path on PostgreSQL; chaos runs at least 2)
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub nodes: usize,
    /// agents, chaos: run agent time this many times faster (heartbeat every 30 s and
    /// think times of 1-3 s are divided by it; default 1, chaos: 20)
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    /// guardrails: times each command is analysed for the latency figures; files: reads
    /// per file size (default there: 2000)
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub rounds: usize,
    /// guardrails: score a corpus of your own instead of the built-in one (JSON lines with
    /// command, label destructive|benign|warning|held, operation (optional), source; judged
    /// with the built-in patterns, not the registry's changes)
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<std::path::PathBuf>,
    /// guardrails: list every command judged against its label
    #[arg(long)]
    pub misses: bool,
    /// recall: synthetic memories added before timing recall (0: relevance only)
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub memories: usize,
    /// PostgreSQL: reach the scratch database through a relay on loopback that adds this
    /// round-trip time (milliseconds; 0 adds none) and counts round trips: reported per
    /// completed unit, and per operation with --clients 1. Child processes (mcp, http,
    /// agents) and --compare's limit go through it too
    #[arg(long, value_name = "MS")]
    pub rtt: Option<f64>,
    /// http: reach `coord serve` through a relay on loopback that adds this round-trip
    /// time (milliseconds) between the clients and the server: agents far from a `coord
    /// serve` that sits next to the database (with --rtt too, the database far from it)
    #[arg(long, value_name = "MS")]
    pub serve_rtt: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key acting as --agent-id/--agent-type (both required); prints the secret once
    Create {
        /// Lifetime, e.g. 2h, 30m, 7d (never expires when absent)
        #[arg(long, value_name = "DURATION")]
        expires_in: Option<String>,
    },
    /// Mint a short-lived key for one cloud session (--session, Claude Code on the web)
    /// or task (--task, Codex Cloud), acting as --agent-type (required) and bound to its
    /// profile; every audit row the key causes names the session or task. The secret is
    /// shown once. `coord cloud env` does this and prints the agent's environment
    Issue(IssueArgs),
    /// List keys (never their secrets)
    #[command(alias = "ls")]
    List,
    /// Revoke a key so it no longer authenticates
    Revoke {
        /// The key's id, as shown by `coord key list` and `coord key create` (not the secret)
        #[arg(value_name = "KEY_ID")]
        key_id: String,
    },
}

/// What `coord key issue` and `coord cloud env` mint a key for.
#[derive(Debug, Clone, clap::Args)]
pub struct IssueArgs {
    #[command(flatten)]
    pub work: IssueFor,
    /// Lifetime, e.g. 8h, 90m (default 8h, at most 24h)
    #[arg(long, default_value = "8h", value_name = "DURATION")]
    pub ttl: String,
    /// Assign this profile to the key's agent first (its type's default applies otherwise)
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
}

/// The one cloud session or task a key is issued for.
#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
pub struct IssueFor {
    /// The cloud session (Claude Code on the web)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The task (Codex Cloud, a CI job)
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum CloudCommand {
    /// Issue a key for one cloud session or task (as `coord key issue`) and print the
    /// environment the cloud agent needs (COORDINATION_API_URL, COORDINATION_API_KEY,
    /// AGENT_TYPE) and the domains to add to its network allowlist.
    /// `coord --agent-type codex_cloud cloud env --task T --url https://coord.example.com`
    Env {
        #[command(flatten)]
        issue: IssueArgs,
        /// The address cloud agents reach coord at (default: --remote / COORDINATION_API_URL)
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
}

/// Whom a profile is assigned to: one agent, or every agent of a type by default.
#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
pub struct ProfileTarget {
    /// This agent id (wins over its type's default)
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// The default of this agent type (`--type`, because `--agent-type` is always your
    /// own identity in coord)
    #[arg(long = "type", value_name = "TYPE")]
    pub target_type: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Every profile (trust, permissions, limits) and who it is assigned to
    #[command(alias = "ls")]
    List,
    /// One profile in full
    Show {
        #[arg(value_name = "PROFILE")]
        name: String,
    },
    /// Create or replace profiles from a YAML (or JSON) file: a list, `profiles: [...]`,
    /// or a map of name → profile as in the spec; `-` reads stdin. All or nothing;
    /// errors name the profile and the field
    Apply {
        #[arg(value_name = "FILE")]
        file: String,
    },
    /// Assign PROFILE to an agent (--agent ID) or as an agent type's default (--type TYPE)
    Assign {
        #[arg(value_name = "PROFILE")]
        profile: String,
        #[command(flatten)]
        target: ProfileTarget,
    },
    /// Remove an agent's (--agent ID) or a type's (--type TYPE) assignment
    Unassign {
        #[command(flatten)]
        target: ProfileTarget,
    },
    /// Why an agent may or may not do something: its effective profile, where it comes
    /// from, each limit with the session's usage, and a verdict per operation
    Explain {
        /// The agent (you when absent)
        #[arg(value_name = "AGENT")]
        agent: Option<String>,
        /// Its type, when it has no session to tell it
        #[arg(long = "type", value_name = "TYPE")]
        target_type: Option<String>,
        /// Only this operation (e.g. acquire_lock)
        #[arg(long, value_name = "OPERATION")]
        operation: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    /// Check a command line: `coord guard check -- 'git push --force origin main'`
    /// (several words are joined with spaces, as a shell tool sends one string). Exit 0
    /// when it may run, 1 when it is blocked (the answer names the operation and the
    /// approval requested), 2 on bad input
    Check {
        /// Paths an edit would change (credential files are checked)
        #[arg(long, num_args = 1.., value_name = "PATH")]
        files: Vec<String>,
        /// The command line
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// The pattern registry: argv patterns (kubectl apply, rsync --delete, vault kv
    /// destroy, migration runners, ...) applied besides the built-in structural rules
    /// (git, rm, find, SQL, credential files). Changes need trust 4 and apply to every
    /// check at once
    #[command(subcommand)]
    Rules(GuardRulesCommand),
}

#[derive(Debug, Subcommand)]
pub enum GuardRulesCommand {
    /// List the patterns in effect: built-in, modified (a built-in one replaced or
    /// switched off) and custom
    List {
        /// Only the patterns a change touched (modified and custom)
        #[arg(long)]
        changed: bool,
        /// Only the patterns of this program (e.g. kubectl)
        #[arg(long, value_name = "NAME")]
        program: Option<String>,
    },
    /// Add a pattern, or replace the built-in one of that name (JSON: program, words,
    /// anywhere, options, unless, unless_next, value_options, operation, category, action, reason; see
    /// docs/guardrails.md). Refused with invalid_guardrail if it does not compile
    Set {
        /// The pattern's name: a built-in name replaces that pattern, a new one adds one
        name: String,
        /// The pattern as JSON
        #[arg(long, value_name = "JSON", conflicts_with = "file", required_unless_present = "file")]
        pattern: Option<String>,
        /// Read the pattern from a file (`-` for standard input)
        #[arg(long, value_name = "FILE")]
        file: Option<std::path::PathBuf>,
    },
    /// Switch a pattern off (built-in or custom)
    Disable {
        /// The pattern's name (`coord guard rules list`)
        name: String,
    },
    /// Switch a pattern on again
    Enable {
        /// The pattern's name (`coord guard rules list`)
        name: String,
    },
    /// Undo every change under a name: a custom pattern is removed, a built-in one is in
    /// effect again as shipped
    Reset {
        /// The pattern's name (`coord guard rules list`)
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum NotificationsCommand {
    /// List notifications, newest first, with their delivery state (administrators)
    List {
        /// Only those the webhook has not accepted yet
        #[arg(long)]
        undelivered: bool,
        /// At most this many (default 100)
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
    },
    /// Post every notification that is due to COORD_SECURITY_WEBHOOK_URL now, once
    /// (what `coord serve` does every few seconds; for setups without a server, e.g. cron)
    Deliver,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Approval requests, newest first (pending ones by default)
    #[command(alias = "ls")]
    List {
        /// pending, approved, denied, used, expired, or all
        #[arg(long, default_value = "pending", value_name = "STATUS")]
        status: String,
        /// Only requests made by this agent id
        #[arg(long, value_name = "AGENT")]
        by: Option<String>,
        /// At most this many
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        limit: Option<i64>,
    },
    /// One request in full: who asked, the operation, its parameters, why it was refused
    Show {
        /// The request's id (apr_…), or a unique prefix of it (the apr_ may be left out)
        #[arg(value_name = "APPROVAL_ID")]
        approval_id: String,
    },
    /// Approve a pending request: the same agent's same request then passes once
    Approve {
        /// The request's id (apr_…), or a unique prefix of it (the apr_ may be left out)
        #[arg(value_name = "APPROVAL_ID")]
        approval_id: String,
        /// Why (kept in the audit trail)
        #[arg(long)]
        note: Option<String>,
        /// How long the approval can be used, in minutes (default 60, at most 10080)
        #[arg(long, value_name = "MINUTES", allow_negative_numbers = true)]
        valid_minutes: Option<i64>,
    },
    /// Deny a pending request
    Deny {
        /// The request's id (apr_…), or a unique prefix of it (the apr_ may be left out)
        #[arg(value_name = "APPROVAL_ID")]
        approval_id: String,
        /// Why (kept in the audit trail)
        #[arg(long)]
        note: Option<String>,
    },
    /// Wait until a request is decided (or expires); exit 0 when approved, 1 when
    /// denied, expired or still pending at the timeout
    Wait {
        /// The request's id (apr_…), or a unique prefix of it (the apr_ may be left out)
        #[arg(value_name = "APPROVAL_ID")]
        approval_id: String,
        /// How long to wait, e.g. 30s, 10m, 2h
        #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
    },
}

#[derive(Debug, Subcommand)]
pub enum PortsCommand {
    /// Lease four ports (db, rest, realtime, api) for SESSION; the same SESSION gets the
    /// same block back and refreshes its lease. `eval "$(coord port allocate wt-1 --env)"`
    Allocate {
        /// Any stable name for the environment, e.g. the worktree or branch name
        #[arg(value_name = "SESSION")]
        session_id: String,
        /// Print only the `export` lines, for eval
        #[arg(long)]
        env: bool,
    },
    /// Give SESSION's block back (releasing twice is fine)
    Release {
        /// The name given to `coord port allocate`
        #[arg(value_name = "SESSION")]
        session_id: String,
    },
    /// List live leases
    Status,
}

#[derive(Debug, Subcommand)]
pub enum InitTarget {
    /// Add the coord MCP server to .mcp.json and coordination hooks to .claude/settings.json
    /// (merging with what is there; running it again changes nothing)
    ///
    /// Claude Code loads a project's .mcp.json servers only once the user approved them
    /// (some versions silently skip them otherwise), and a project cannot approve itself:
    /// by default this also adds "coord" to enabledMcpjsonServers in your user settings
    /// ($CLAUDE_CONFIG_DIR or ~/.claude, settings.json), merging, and says so.
    Claude {
        /// Show what would change, write nothing
        #[arg(long)]
        dry_run: bool,
        /// The coord executable the configuration should run
        #[arg(long, default_value = "coord", value_name = "PATH")]
        command: String,
        /// Approve the coord server in your user settings (the default)
        #[arg(long, overrides_with = "no_user_settings")]
        user_settings: bool,
        /// Leave your user settings alone (approve the server in Claude Code yourself)
        #[arg(long)]
        no_user_settings: bool,
        /// The toolsets coord's tool list shows the agent (COORD_TOOLSETS in the server's
        /// environment): `all`, or names such as `core,files`. Default: `core`, and the
        /// toolsets the agent's profile is made for (docs/mcp.md)
        #[arg(long, value_name = "LIST", value_parser = toolsets_arg)]
        toolsets: Option<String>,
        /// Leave Claude Code's sandbox alone. By default its Bash tool runs sandboxed
        /// (.claude/settings.local.json): commands cannot write coord's store, socket or
        /// settings, nor ask to run outside the sandbox
        #[arg(long)]
        no_runtime_sandbox: bool,
        /// Leave CLAUDE.md alone. By default a short section (between coord's markers,
        /// updated in place) tells the agent how to work beside others through coord
        #[arg(long)]
        no_instructions: bool,
        /// Take out what `coord init claude` added, and nothing else: the MCP server, the
        /// hooks, the sandbox settings, the CLAUDE.md section, your user settings' approval
        /// (not with --no-user-settings). Files left empty are deleted; coord's store
        /// (.coord) stays. With --dry-run: show it
        #[arg(long, conflicts_with_all = ["toolsets", "no_runtime_sandbox", "no_instructions"])]
        remove: bool,
    },
    /// Print the Codex CLI config.toml entry for the coord MCP server, or merge it in
    #[command(group(ArgGroup::new("codex_mode").args(["write", "dry_run"])))]
    Codex {
        /// Merge the MCP server into $CODEX_HOME/config.toml (default ~/.codex/config.toml)
        /// and coord's hooks into $CODEX_HOME/hooks.json (Codex runs them once you trust
        /// them: its /hooks screen)
        #[arg(long)]
        write: bool,
        /// Put the hooks in this repository's .codex/hooks.json instead (Codex loads them
        /// only in a project it trusts)
        #[arg(long)]
        project: bool,
        /// Show what --write would change, write nothing
        #[arg(long)]
        dry_run: bool,
        /// The coord executable the configuration should run
        #[arg(long, default_value = "coord", value_name = "PATH")]
        command: String,
        /// The toolsets coord's tool list shows the agent (COORD_TOOLSETS in the server's
        /// environment): `all`, or names such as `core,files`. Default: `core`, and the
        /// toolsets the agent's profile is made for (docs/mcp.md)
        #[arg(long, value_name = "LIST", value_parser = toolsets_arg)]
        toolsets: Option<String>,
        /// Leave Codex's sandbox alone. By default --write also writes a permission
        /// profile into this repository's .codex/config.toml (default_permissions =
        /// "coord": the workspace writable, .coord read-only; Codex loads it once you
        /// trust the project), or adds .coord to your own profile; with sandbox_mode set,
        /// Codex ignores profiles and coord says so
        #[arg(long)]
        no_runtime_sandbox: bool,
        /// Leave AGENTS.md alone. By default --write also puts a short section (between
        /// coord's markers, updated in place) into this repository's AGENTS.md, telling
        /// the agent how to work beside others through coord
        #[arg(long)]
        no_instructions: bool,
        /// Take out what `coord init codex --write` added, and nothing else: the MCP
        /// server, the hooks ($CODEX_HOME and this repository's .codex), coord's
        /// permission profile, the AGENTS.md section. Files left empty are deleted; coord's
        /// store (.coord) stays. With --dry-run: show it
        #[arg(long, conflicts_with_all = ["write", "project", "toolsets", "no_runtime_sandbox", "no_instructions"])]
        remove: bool,
    },
    /// Install git hooks: pre-commit refuses commits touching files other agents have
    /// locked or credential files; pre-push refuses force pushes and deletions of
    /// protected branches and release tags pushed (`--no-verify` bypasses them)
    GitHook {
        /// Show what would change, write nothing
        #[arg(long)]
        dry_run: bool,
        /// The coord executable the hook should run
        #[arg(long, default_value = "coord", value_name = "PATH")]
        command: String,
        /// Take out the hooks `coord init git-hook` installed (a hook of anyone else's
        /// stays). With --dry-run: show it
        #[arg(long)]
        remove: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on
    #[arg(long, env = "API_HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one; the address is printed)
    #[arg(long, env = "API_PORT", default_value_t = 8081)]
    pub port: u16,
    /// Also run the egress proxy (as `coord proxy` does) on this port of --host (0 picks
    /// a free one); agents authenticate with their managed API key
    #[arg(long, env = "COORD_PROXY_PORT", value_name = "PORT", conflicts_with = "socket")]
    pub proxy_port: Option<u16>,
    /// Serve on this Unix socket instead of --host/--port: the per-repository
    /// coordinator, which `coord mcp` starts on demand (COORD_LOCAL_SERVER=off: never).
    /// Only processes of this user are admitted, and they need no key
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// With --socket: stop after this many seconds without a request (0: run until
    /// stopped). It also stops when its database or socket file is removed
    #[arg(long, value_name = "SECONDS", default_value_t = 0, requires = "socket")]
    pub idle_exit: u64,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Port on 127.0.0.1 (0 picks a free one)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Print the link without starting a browser (xdg-open)
    #[arg(long)]
    pub no_open: bool,
}

#[derive(Debug, Subcommand)]
pub enum NetworkCommand {
    /// May you (--agent-id) connect to TARGET? A URL or host[:port]; logged like every
    /// decision. Exit code 1 when refused (domain_blocked)
    ///
    /// Example: `coord network check https://pypi.org/simple/` or `coord network check github.com:22`
    Check {
        /// A URL (http, https, ws, wss) or host[:port] (port 443 when absent)
        target: String,
    },
    /// The policies in effect (built-in, modified, custom) and the domain categories
    Policies,
    /// Add a policy or replace one (trust 4) from a YAML or JSON file (`-`: stdin) with
    /// name, description, default (allow|deny), allow, deny, trust_defaults
    ///
    /// Example file: `{name: team, default: deny, allow: ["@package_managers", "api.example.com"], deny: []}`
    Set {
        /// The policy file
        file: String,
    },
    /// Remove a custom policy, or restore a built-in one as shipped (trust 4)
    Reset { name: String },
    /// The network access log, newest first (yours; an administrator's: everyone's)
    Log {
        /// Only this agent's attempts
        #[arg(long)]
        agent: Option<String>,
        /// Only refused attempts
        #[arg(long, conflicts_with = "allowed")]
        refused: bool,
        /// Only allowed attempts
        #[arg(long)]
        allowed: bool,
        /// At most this many rows (1-1000)
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum GithubCommand {
    /// Print the issue label that asks for a lock on PATH. A path longer than a label
    /// allows becomes `locked:<tail>#<first 8 hex digits of its SHA-256>`: list the full
    /// path in the issue body under `<!-- coord:locks -->` so it can be resolved
    ///
    /// Example: `coord github label src/auth/login.ts` prints `locked:src/auth/login.ts`
    Label {
        /// The file (repo-relative, or absolute inside the repository)
        path: String,
    },
    /// Send GitHub the queued issue comments and commit statuses now (`coord serve` sends
    /// them every 10 seconds). Needs COORD_GITHUB_TOKEN (or GITHUB_TOKEN): a token that may
    /// write issues and commit statuses; COORD_GITHUB_API_URL for GitHub Enterprise
    /// (https://HOST/api/v3). Failures are retried with backoff, then left with their error
    Send,
    /// The requests for GitHub waiting to be sent (comments, commit statuses), with how
    /// often each was tried and its last error; --sent also those sent. Local only
    Outbox {
        /// Also the requests already sent (kept 7 days)
        #[arg(long)]
        sent: bool,
        /// At most this many, newest first
        #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum VerifyCommand {
    /// The verification policies: tier, executor, the files they cover, what runs
    Policies,
    /// Add or replace policies (trust 4) from a YAML or JSON file (`-`: stdin):
    /// `policies: [...]`, a list, a map of name -> policy, or one policy. Every policy is
    /// checked before any is stored
    ///
    /// Example file: `policies: [{name: lint, tier: 0, executor: inline, patterns: ["**/*.rs"], command: [cargo, clippy]}]`
    Apply {
        /// The policy file
        file: String,
    },
    /// Delete a policy (trust 4); runs already routed keep it
    Delete { name: String },
    /// Submit a change for verification: the files it changed (or --git BASE to take
    /// them, the branch and the commit from git). Prints each policy's run
    ///
    /// Example: `coord verify submit --git origin/main --description "argon2 passwords"`
    Submit {
        /// Files added or modified (repo-relative)
        files: Vec<String>,
        /// A file deleted (repeatable)
        #[arg(long = "removed", value_name = "FILE")]
        removed: Vec<String>,
        /// The branch (agent/<id>/<task> by convention)
        #[arg(long)]
        branch: Option<String>,
        /// The commit; the same branch and commit again answers the recorded changeset
        #[arg(long)]
        commit: Option<String>,
        /// What the change is, for reviewers
        #[arg(long)]
        description: Option<String>,
        /// A file holding the diff, for reviewers (at most 256 KiB)
        #[arg(long, value_name = "FILE")]
        diff_file: Option<String>,
        /// Take the files changed since BASE (git diff BASE...HEAD), the branch and HEAD's commit from git
        #[arg(long, value_name = "BASE")]
        git: Option<String>,
    },
    /// Be a verification worker: claim the inline and local runs of other agents'
    /// changesets, run each policy's command in `coord sandbox run` (as agent
    /// coord-verifier: no profile, no network, unless you assign it one; the policy's
    /// required_env passed in by name) in this repository, which must be at the
    /// changeset's commit, within the policy's timeout, and report exit code, duration and
    /// the end of the output. With --executor github_actions: dispatch the policy's
    /// workflow on the changeset's branch through GitHub's API (COORD_GITHUB_TOKEN; inputs
    /// changeset_id and policy), record the run's id, follow it to its conclusion (the
    /// workflow_run webhook may finish it first). Trust 4
    ///
    /// Examples: `coord verify run --once` (what is pending now, then stop);
    /// `coord verify run --executor github_actions --repository octo/app`
    Run {
        /// Stop when nothing is left to run (default: wait for more, polling)
        #[arg(long)]
        once: bool,
        /// The executors to run (default inline and local; github_actions and e2b run
        /// elsewhere — on GitHub, in an E2B sandbox (E2B_API_KEY) — and do not need this
        /// checkout at the changeset's commit: give them their own worker)
        #[arg(long, value_parser = ["inline", "local", "github_actions", "e2b"])]
        executor: Vec<String>,
        /// github_actions: the repository (OWNER/NAME) of changesets not pushed from one
        /// (default COORD_GITHUB_REPOSITORY)
        #[arg(long, env = "COORD_GITHUB_REPOSITORY", value_name = "OWNER/NAME")]
        repository: Option<String>,
        /// github_actions: seconds between polls of a dispatched run (doubling to 60;
        /// the first poll is at once)
        #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
        actions_poll: f64,
        /// Seconds between polls when nothing is pending
        #[arg(long, default_value_t = 5)]
        poll_seconds: u64,
        /// Run the commands without bubblewrap (advisory: recorded as such)
        #[arg(long)]
        no_sandbox: bool,
    },
    /// A changeset's runs and overall status (not_required, pending, awaiting_approval,
    /// passed, failed)
    Status {
        /// The id submit answered (cs_...)
        changeset_id: String,
        /// Also print the submitted diff
        #[arg(long)]
        diff: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one; the address is printed)
    #[arg(long, default_value_t = 3128)]
    pub port: u16,
    /// Resolve NAME to ADDRESS instead of asking DNS (NAME=ADDRESS[,ADDRESS]; repeatable),
    /// like curl --resolve: split-horizon names, tests
    #[arg(long = "resolve", value_name = "NAME=ADDRESS")]
    pub resolve: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Run a command with no network but the egress proxy: bubblewrap unshares the
    /// network namespace (only loopback inside), the proxy's socket is relayed to
    /// 127.0.0.1:3128 and HTTP(S)_PROXY point there with this run's own credential, so
    /// every connection is decided by the agent's network policy and logged; a direct
    /// connection has no route. Run it inside a git repository: the repository is
    /// writable (but .git/hooks, .git/config and coord's own state are read-only), the
    /// rest of the file system read-only, /run (the host's sockets) and credential stores
    /// (~/.ssh, ~/.aws, ~/.netrc, ...) hidden; no capabilities, a new session, only a few
    /// environment variables (--env adds more). Exits with the command's exit code.
    ///
    /// Example: `coord sandbox run --agent ci-bot --profile codex-cloud-worker -- npm test`
    Run(SandboxRunArgs),
    /// (internal) Inside the sandbox: relay 127.0.0.1:PORT to the proxy socket and run
    /// the command
    #[command(hide = true)]
    Relay {
        /// PORT=SOCKET: listen on 127.0.0.1:PORT, carry each connection to SOCKET (repeatable)
        #[arg(long = "forward", value_parser = parse_forward, required = true)]
        forwards: Vec<(u16, std::path::PathBuf)>,
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// The agent registry (spec 002's `/agents`): every definition of .claude/agents/*.md
    /// and agents.json, checked, with each invalid one's errors; exits 2 when one is invalid
    List,
    /// One definition of the registry: profile (and why), tools, runtime, model,
    /// delegation, system prompt
    Show {
        /// Its id (`name:` of a .md file or its file name, `id` of agents.json)
        agent: String,
    },
    /// Sessions: register, heartbeat, discover, cleanup
    #[command(flatten)]
    Session(AgentsCommand),
    /// The exact command line, environment and generated files of a launch; $RUN,
    /// $AGENT_ID and the key stand for what each launch creates
    Flags(AgentFlagsArgs),
    /// Launch an agent on a task: its own identity and key, its profile assigned, inside
    /// the sandbox (bubblewrap; the workspace read-only unless the profile writes; the
    /// egress proxy the only way out), stopped at the profile's max_execution_time
    Run(Box<AgentRunArgs>),
    /// Spawn an agent through the coordinator (`spawn_agent`): judged by the pre-flight
    /// validator configured for the coordinator (COORD_VALIDATOR_COMMAND, COORD_VALIDATOR_URL
    /// or COORD_NO_VALIDATION=1), registered with its task, run in the background by a
    /// supervisor; prints its agent_id and task_id
    Spawn(Box<AgentSpawnArgs>),
    /// The agents you spawned (an administrator: everyone's), newest first (`list_spawned_agents`)
    Spawned {
        /// Only those starting or running
        #[arg(long)]
        active: bool,
        /// At most this many
        #[arg(long, default_value_t = 100, allow_negative_numbers = true)]
        limit: i64,
    },
    /// A spawned agent's status (`get_agent_status`)
    Status {
        /// The agent_id spawn answered
        #[arg(value_name = "AGENT_ID")]
        spawned: String,
    },
    /// A spawned agent's final answer, refusals and the end of its output (`get_agent_output`)
    Output {
        /// The agent_id spawn answered
        #[arg(value_name = "AGENT_ID")]
        spawned: String,
        /// Wait up to this long (at most 5m) for it to end first
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        wait: Option<std::time::Duration>,
    },
    /// Stop a spawned agent (`stop_agent`): its task goes back to the queue
    Stop {
        /// The agent_id spawn answered
        #[arg(value_name = "AGENT_ID")]
        spawned: String,
        /// Recorded with the stop
        #[arg(long)]
        reason: Option<String>,
    },
    /// The supervisor of a spawned agent (started by spawn_agent; not for people)
    #[command(hide = true)]
    Supervise {
        #[arg(value_name = "AGENT_ID")]
        spawned: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct AgentSpawnArgs {
    /// The agent: a definition's name in .claude/agents (or give --profile instead)
    pub agent: Option<String>,
    /// What the agent is asked to do
    #[arg(long)]
    pub task: String,
    /// A generic worker of this profile instead of a definition: read_only, write,
    /// verification or design
    #[arg(long, conflicts_with = "agent")]
    pub profile: Option<String>,
    /// claude, codex or aider
    #[arg(long)]
    pub runtime: Option<String>,
    /// The queue task type of its task (default agent_task)
    #[arg(long)]
    pub task_type: Option<String>,
    /// Stop it after this many minutes (at most its profile's max_execution_time)
    #[arg(long, value_name = "MINUTES", allow_negative_numbers = true)]
    pub timeout_minutes: Option<i64>,
    #[command(flatten)]
    pub isolation: IsolationArgs,
}

#[derive(Debug, clap::Args)]
pub struct AgentFlagsArgs {
    /// The agent: its definition's `name:` (or file name) in .claude/agents
    pub agent: String,
    /// claude, codex or aider (default: the definition's runtime, else claude)
    #[arg(long)]
    pub runtime: Option<String>,
    /// The task (default: a placeholder)
    #[arg(long, default_value = "$TASK")]
    pub task: String,
}

#[derive(Debug, clap::Args)]
pub struct AgentRunArgs {
    /// The agent: its id in the registry (`name:` of .claude/agents/*.md, `id` of agents.json)
    pub agent: String,
    /// What the agent is asked to do
    pub task: String,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// `coord run --agent ID TASK` (spec 002's `cli.py --agent researcher`): `coord agent run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The agent: its id in the registry (`name:` of .claude/agents/*.md, `id` of agents.json)
    #[arg(long, value_name = "ID")]
    pub agent: String,
    /// What the agent is asked to do
    pub task: String,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// How an agent is launched (`coord agent run`, `coord run --agent`).
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// claude, codex or aider (default: the definition's runtime, else claude)
    #[arg(long)]
    pub runtime: Option<String>,
    /// The runtime's program (default: claude, codex or aider on the PATH)
    #[arg(long)]
    pub program: Option<std::path::PathBuf>,
    /// The model endpoint the agent talks to (default: $ANTHROPIC_BASE_URL for claude,
    /// $OPENAI_BASE_URL for codex and aider, else the provider's own). An http:// URL on
    /// this machine's loopback is relayed into the sandbox; any other host goes through
    /// the proxy as the `model_providers` category
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// Stop the agent after this long (default: its profile's max_execution_time, else 30m)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Pass this variable (NAME, or NAME=VALUE) into the sandbox; repeatable
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// A file the task is about (repeatable; repository-relative): the launch is refused
    /// (file_locked, naming the holder) while another agent holds one; Aider also gets
    /// them in its chat, to edit
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// Resolve NAME to ADDRESS in the proxy instead of asking DNS (NAME=ADDRESS; repeatable)
    #[arg(long = "resolve", value_name = "NAME=ADDRESS")]
    pub resolve: Vec<String>,
    #[command(flatten)]
    pub isolation: IsolationArgs,
    #[command(flatten)]
    pub validation: ValidationArgs,
}

/// Where a launched or spawned agent works (docs/worktrees.md "Isolation").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IsolationArgs {
    /// shared (default: this checkout, with the agents working here) or worktree (a git
    /// worktree of its own in .coord-worktrees/, on a new branch coord/<agent_id>, with
    /// its own port block; what it changed is committed to that branch when it ends and
    /// the worktree removed). Either way one coordination space: its locks are everyone's
    #[arg(long, value_name = "shared|worktree", value_parser = parse_isolation)]
    pub isolation: Option<coord_domain::agents::isolation::Isolation>,
    /// With --isolation worktree: keep the worktree when the agent ends (its branch too)
    #[arg(long, requires = "isolation")]
    pub keep_worktree: bool,
}

fn parse_isolation(s: &str) -> Result<coord_domain::agents::isolation::Isolation, String> {
    coord_domain::agents::isolation::Isolation::parse(s).ok_or_else(|| format!("{s:?}: give shared or worktree"))
}

impl ValidationArgs {
    pub fn validation(&self) -> coord_runtime::launch::Validation {
        coord_runtime::launch::Validation {
            validator_command: self.validator_command.clone(),
            validator_url: self.validator_url.clone(),
            validator_model: self.validator_model.clone(),
            validator_timeout: self.validator_timeout,
            no_validation: self.no_validation,
        }
    }
}

/// Pre-flight validation of a launch: one of these must be given (docs/agents.md).
#[derive(Debug, clap::Args)]
pub struct ValidationArgs {
    /// Judge the plan with this command (run by /bin/sh -c): the plan as JSON on stdin,
    /// exactly {"verdict":"valid"|"invalid","reasons":[...]} on stdout
    #[arg(long, env = "COORD_VALIDATOR_COMMAND", value_name = "COMMAND")]
    pub validator_command: Option<String>,
    /// Judge the plan with a model behind this Anthropic-Messages-compatible endpoint
    /// (ANTHROPIC_API_KEY is sent); it must answer the same JSON verdict and nothing else
    #[arg(
        long,
        env = "COORD_VALIDATOR_URL",
        value_name = "URL",
        conflicts_with = "validator_command"
    )]
    pub validator_url: Option<String>,
    /// The validator model
    #[arg(long, env = "COORD_VALIDATOR_MODEL", default_value = "claude-sonnet-4-5")]
    pub validator_model: String,
    /// How long the validator may take; no answer in time is a denial
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    pub validator_timeout: std::time::Duration,
    /// Launch without pre-flight validation (recorded in the audit trail)
    #[arg(
        long,
        env = "COORD_NO_VALIDATION",
        value_parser = clap::builder::FalseyValueParser::new(),
        conflicts_with_all = ["validator_command", "validator_url"]
    )]
    pub no_validation: bool,
}

fn parse_forward(s: &str) -> Result<(u16, std::path::PathBuf), String> {
    let (port, socket) = s.split_once('=').ok_or("give PORT=SOCKET")?;
    let port = port.parse::<u16>().map_err(|e| format!("port {port:?}: {e}"))?;
    Ok((port, socket.into()))
}

#[derive(Debug, clap::Args)]
pub struct SandboxRunArgs {
    /// The agent the command runs as: its network policy decides (default: a fresh id
    /// sandbox-<random> of agent type `sandbox`, which has no profile: least privilege,
    /// no network at all)
    #[arg(long)]
    pub agent: Option<String>,
    /// Assign this profile to the agent first (trust 4: the person at the terminal)
    #[arg(long)]
    pub profile: Option<String>,
    /// Resolve NAME to ADDRESS in the proxy instead of asking DNS (NAME=ADDRESS; repeatable)
    #[arg(long = "resolve", value_name = "NAME=ADDRESS")]
    pub resolve: Vec<String>,
    /// Pass this environment variable in (NAME: its value here; NAME=VALUE; repeatable).
    /// Only PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, COLORTERM, TZ,
    /// NO_COLOR and FORCE_COLOR pass by default: keys and tokens stay outside
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Run WITHOUT the sandbox: only the proxy variables, which a program can ignore
    /// (advisory; recorded in the audit trail as such)
    #[arg(long)]
    pub no_sandbox: bool,
    /// The command and its arguments (after --)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Store an episodic memory (the same event type and summary within an hour merges
    /// into the earlier one)
    ///
    /// Example: `coord memory remember error "cargo build fails: linker cc not found"
    /// --lesson "install build-essential in the CI image" --tag ci --outcome negative`
    Remember {
        /// error, fix, decision, test_failure, ... (lowercase)
        event_type: String,
        /// One sentence: what happened
        summary: String,
        /// Specifics: paths, commands, error text
        #[arg(long)]
        details: Option<String>,
        /// positive, negative or neutral
        #[arg(long, value_parser = ["positive", "negative", "neutral"])]
        outcome: Option<String>,
        /// What to do next time (repeatable)
        #[arg(long = "lesson", value_name = "TEXT")]
        lessons: Vec<String>,
        /// A category (repeatable)
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// The memories most relevant to a task, most relevant first
    ///
    /// Example: `coord memory recall add a refunded value to the payment_status enum --tag postgres`
    Recall {
        /// What you are about to do (may be empty with --tag)
        task: Vec<String>,
        /// A tag that matters (repeatable)
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// How many (default 5, at most 50)
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        limit: Option<i64>,
        /// Only memories this agent stored
        #[arg(long, value_name = "AGENT_ID")]
        agent: Option<String>,
        /// Show each memory's score breakdown
        #[arg(long)]
        explain: bool,
    },
    /// Say whether a recalled memory helped (one vote per agent; voting again replaces it)
    Feedback {
        memory_id: String,
        #[arg(long, conflicts_with = "not_useful", required_unless_present = "not_useful")]
        useful: bool,
        #[arg(long)]
        not_useful: bool,
    },
    /// Delete a memory (its author, or trust 4 / an operator key)
    Forget { memory_id: String },
    /// Remove episodic memories nobody has met for the retention period (trust 4 or an
    /// operator key): last
    /// seen more than --older-than-days ago (default COORD_MEMORY_RETENTION_DAYS, 365),
    /// except those voted useful more often than not; skills stay. `coord serve` does
    /// this every hour
    Prune {
        /// Days since a memory was last seen (1 to 36500)
        #[arg(long, value_name = "DAYS", allow_negative_numbers = true)]
        older_than_days: Option<i64>,
        /// Only count what would go
        #[arg(long)]
        dry_run: bool,
    },
    /// The skills recorded for a task type, most effective first
    Skills {
        task_type: String,
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        limit: Option<i64>,
    },
    /// Count a use of a skill for a task type
    ///
    /// Example: `coord memory skill-use "run it alone with --test-threads=1" --task-type flaky-test --success`
    SkillUse {
        skill: String,
        #[arg(long, value_name = "TYPE")]
        task_type: String,
        #[arg(long, conflicts_with = "failure", required_unless_present = "failure")]
        success: bool,
        #[arg(long)]
        failure: bool,
    },
    /// Your session's working memory (entries oldest first, tokens against the budget)
    Working {
        /// Also show the originals of compressed and folded entries
        #[arg(long)]
        originals: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum FileCommand {
    /// Print a file (text by lines: --offset/--limit select a window). Refused: paths
    /// outside the workspace, symlinks, special files, hard-linked files, files over the
    /// size limit (--file-size-limit, default 1 MiB)
    ///
    /// Examples: `coord file read src/main.rs`, `coord file read src/main.rs --offset 40 --limit 20`
    Read {
        /// File, relative to the current directory or absolute inside the repository
        path: String,
        /// First line to print, from 1
        #[arg(long, value_name = "LINE", allow_negative_numbers = true)]
        offset: Option<i64>,
        /// Most lines to print
        #[arg(long, value_name = "LINES", allow_negative_numbers = true)]
        limit: Option<i64>,
    },
    /// Replace (or create) a file atomically with the content of --from FILE, --text, or
    /// standard input. Exit code 1 when refused (file_locked, stale_fencing_token,
    /// lock_required, ...); nothing is written then
    ///
    /// Examples: `coord file write notes.md --text "# Notes"`,
    /// `cargo fmt --emit stdout src/lib.rs | coord file write src/lib.rs --fencing-token 12`
    Write {
        /// File, relative to the current directory or absolute inside the repository;
        /// its directory must exist
        path: String,
        /// Read the new content from this file (-: standard input). Without --text or
        /// --from, standard input is read when it is a pipe (an empty one writes nothing)
        #[arg(long, value_name = "FILE", conflicts_with = "text")]
        from: Option<PathBuf>,
        /// The new content, as text
        #[arg(long)]
        text: Option<String>,
        /// The fencing token of your lock on the file (coord lock acquire prints it):
        /// refused if the lock changed hands since
        #[arg(long, value_name = "TOKEN", allow_negative_numbers = true)]
        fencing_token: Option<i64>,
        /// Refuse if the file exists
        #[arg(long)]
        create_only: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum LockCommand {
    /// Lock a file, a directory (trailing /) or a glob (or refresh your own lock on it).
    /// Exit code 1 when another agent holds a lock that overlaps it
    ///
    /// Examples: `coord lock acquire src/auth.rs`, `coord lock acquire src/auth/` (everything
    /// below src/auth), `coord lock acquire 'src/**/*.rs'` (quote globs so the shell leaves
    /// them alone). See docs/locks.md for the overlap rule.
    Acquire {
        /// File, directory/ or glob to lock, relative to the current directory or absolute
        /// inside the repository
        path: String,
        /// Why you need it; shown to agents your lock blocks
        #[arg(long)]
        reason: Option<String>,
        /// Lease length in minutes, 1-480 (default 120)
        #[arg(long, value_name = "MINUTES", allow_negative_numbers = true)]
        ttl: Option<i64>,
    },
    /// Release a lock you hold, named as you acquired it (src/auth/ for a directory lock)
    Release { path: String },
    /// Release another agent's lock — one that went quiet or crashed — named as its holder
    /// named it (a person: trust 4 or an operator key; refused from an agent's session).
    /// Writes through coord that carry its fencing token are refused from then on
    Break {
        /// The locked file, directory/ or glob, as `lock list` shows it
        path: String,
        /// Why, for the audit trail
        #[arg(long)]
        reason: Option<String>,
    },
    /// List live locks, all or those that cover the given files, directories or globs
    #[command(alias = "ls")]
    List { paths: Vec<String> },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatusArg {
    Pending,
    Claimed,
    Completed,
    Failed,
    Cancelled,
}

#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Add a task to the queue
    Submit {
        /// Category of work, e.g. test, refactor, review
        #[arg(value_name = "TYPE")]
        task_type: String,
        /// What needs to be done
        description: String,
        /// 1 (most urgent) to 10 (default 5)
        #[arg(long, short, allow_negative_numbers = true)]
        priority: Option<i64>,
        /// A task id (or a unique prefix of one) that must complete first (repeatable)
        #[arg(long = "depends-on", value_name = "ID")]
        depends_on: Vec<String>,
        /// Input for the worker, as JSON
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
    },
    /// Claim the most urgent available task. Exit code 1 when none is available
    Claim {
        /// Only claim tasks of this type (repeatable)
        #[arg(long = "type", value_name = "TYPE")]
        types: Vec<String>,
    },
    /// Finish a task you claimed
    #[command(group(ArgGroup::new("outcome").required(true).args(["success", "failed"])))]
    Complete {
        /// The task's id, as `work claim`, `work list` and `work submit` show it, or a unique
        /// prefix of it (at least 4 characters)
        #[arg(value_name = "ID")]
        task_id: String,
        /// The work succeeded
        #[arg(long)]
        success: bool,
        /// The work failed (tasks depending on it are cancelled)
        #[arg(long)]
        failed: bool,
        /// Result data, as JSON
        #[arg(long, value_name = "JSON")]
        result: Option<String>,
        /// What went wrong
        #[arg(long, value_name = "TEXT")]
        error: Option<String>,
    },
    /// Cancel a task that has not ended; the tasks that depend on it are cancelled too (a
    /// person: trust 4 or an operator key; refused from an agent's session)
    Cancel {
        /// The task's id, or a unique prefix of it
        #[arg(value_name = "ID")]
        task_id: String,
        /// Why, kept as the task's error message
        #[arg(long)]
        reason: Option<String>,
    },
    /// Put a claimed task back in the queue, its claim dropped — for an agent that is stuck
    /// but still heartbeating (a person: trust 4 or an operator key)
    Requeue {
        /// The task's id, or a unique prefix of it
        #[arg(value_name = "ID")]
        task_id: String,
    },
    /// Show one task in full
    Show {
        /// The task's id, as `work list` and `work submit` show it, or a unique prefix of it
        /// (at least 4 characters)
        #[arg(value_name = "ID")]
        task_id: String,
    },
    /// List tasks, most urgent first
    #[command(alias = "ls")]
    List {
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        #[arg(long = "type", value_name = "TYPE")]
        task_type: Option<String>,
        /// At most this many (default 100)
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AgentStatusArg {
    Active,
    Idle,
    Disconnected,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Start a session so other agents can discover you
    Register {
        /// Something you can do, e.g. coding, testing, review (repeatable)
        #[arg(long = "capability", value_name = "NAME")]
        capabilities: Vec<String>,
        /// What you are working on
        #[arg(long = "task", value_name = "TEXT")]
        current_task: Option<String>,
        /// The team you work in: `coord msg send team:NAME` reaches its live members
        /// (default: $COORD_TEAM)
        #[arg(long, value_name = "NAME", env = "COORD_TEAM")]
        team: Option<String>,
    },
    /// Tell the coordinator you are alive (also extends your task claims)
    Heartbeat,
    /// List agents, optionally by capability and status
    Discover {
        #[arg(long)]
        capability: Option<String>,
        #[arg(long, value_enum)]
        status: Option<AgentStatusArg>,
    },
    /// Disconnect agents without a recent heartbeat, release their locks, requeue their tasks
    Cleanup {
        /// Minutes without a heartbeat that count as dead (default 15)
        #[arg(long = "stale-minutes", value_name = "MINUTES", allow_negative_numbers = true)]
        stale_minutes: Option<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MsgCommand {
    /// Send a message: TO is an agent id, holders:PATH for whoever holds a lock covering
    /// that file, directory or glob, or team:NAME for every live member of a team
    Send {
        /// An agent id, holders:PATH or team:NAME
        to: String,
        /// One line
        subject: String,
        /// The message (default: the subject)
        body: Option<String>,
        /// low, normal (default), high or urgent (urgent ones reach Claude Code sessions at their next prompt)
        #[arg(long, value_name = "LEVEL")]
        importance: Option<String>,
        /// Reply in this thread (its id, or a unique prefix of it)
        #[arg(long, value_name = "ID")]
        thread: Option<String>,
    },
    /// Your messages, newest first
    Inbox {
        /// Only the unread ones
        #[arg(long)]
        unread: bool,
        /// How many (1-200, default 20)
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
    },
    /// Show one message and mark it read
    Read {
        /// The message's id as `msg inbox` shows it, or a unique prefix of it (at least 4
        /// characters)
        message_id: String,
    },
    /// Acknowledge a message (you have acted on it)
    Ack {
        /// The message's id, or a unique prefix of it
        message_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum HandoffCommand {
    /// Write a handoff document for the next session
    Write {
        /// What was accomplished and where things stand
        summary: String,
        /// A finished item (repeatable)
        #[arg(long = "completed", value_name = "TEXT")]
        completed_work: Vec<String>,
        /// An unfinished item (repeatable)
        #[arg(long = "in-progress", value_name = "TEXT")]
        in_progress: Vec<String>,
        /// A decision made (repeatable)
        #[arg(long = "decision", value_name = "TEXT")]
        decisions: Vec<String>,
        /// What should happen next (repeatable)
        #[arg(long = "next", value_name = "TEXT")]
        next_steps: Vec<String>,
        /// A relevant file (repeatable)
        #[arg(long = "file", value_name = "PATH")]
        relevant_files: Vec<String>,
    },
    /// Read the latest handoff(s): yours by default
    Read {
        /// Another agent's handoffs
        #[arg(long, value_name = "AGENT", conflicts_with = "all")]
        agent: Option<String>,
        /// Every agent's handoffs
        #[arg(long)]
        all: bool,
        /// How many, newest first (default 1)
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ResultArg {
    /// Operations that went through
    Allowed,
    /// Operations refused by a rule, a lock, a profile, a guardrail or bad input
    Refused,
    /// Operations that failed in the server or its database
    Error,
    /// Same as allowed
    Success,
    /// Refused or error
    Failure,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditCommandArgs {
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    #[command(flatten)]
    pub query: AuditArgs,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Query the trail, newest first (what `coord audit` alone does). You see your own
    /// rows; an administrator (trust 4: the terminal's `cli` type, an operator key)
    /// sees everyone's
    Query(AuditArgs),
    /// Write the trail as JSON Lines, oldest first, one row per line with its place in
    /// the hash chain (the same filters as query; --limit is per page)
    Export {
        #[command(flatten)]
        filters: AuditArgs,
        /// Write to this file instead of standard output
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Check the hash chain: every row matches its hash and follows the one before it,
    /// nothing is missing or inserted, every prune checkpoint is signed by this server's
    /// audit key. Exits 1 naming the first bad row. It also checks the head the last
    /// verify recorded outside the store (the anchor: a rewritten chain no longer holds
    /// it), then records the new head there (docs/audit.md)
    Verify {
        /// A head printed by an earlier verify, as SEQ:HASH (instead of the anchor's)
        #[arg(long, value_name = "SEQ:HASH")]
        expect_head: Option<String>,
        /// The anchor file (default COORD_AUDIT_ANCHOR, else one per database under
        /// $XDG_STATE_HOME/coord/anchors, ~/.local/state by default)
        #[arg(long, value_name = "FILE", conflicts_with = "no_anchor")]
        anchor: Option<std::path::PathBuf>,
        /// Neither check nor record an anchor
        #[arg(long)]
        no_anchor: bool,
    },
    /// Remove rows older than the retention (COORD_AUDIT_RETENTION_DAYS, default 90)
    /// and leave a checkpoint signed with the audit key (COORD_AUDIT_KEY_FILE, default
    /// .coord/audit.key beside a SQLite database) so the rest still verifies.
    /// `coord serve` prunes by itself every hour
    Prune {
        /// Remove rows older than this many days instead of the retention
        #[arg(long, value_name = "DAYS", allow_negative_numbers = true)]
        older_than_days: Option<i64>,
        /// Say how many rows would go, remove nothing
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// Only this agent's operations
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Only this operation, e.g. acquire_lock
    #[arg(long, value_name = "NAME")]
    pub operation: Option<String>,
    /// From this time: RFC 3339 (2026-11-21T10:00:00Z) or an age like 15m, 2h, 1d
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Before this time, same formats as --since
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only operations with this outcome
    #[arg(long, value_enum)]
    pub result: Option<ResultArg>,
    /// Only operations let through as elevated (a trust-3+ profile's elevated_operations)
    #[arg(long)]
    pub elevated: bool,
    /// Only operations on this file (its locks, reads, writes), relative to the current
    /// directory or absolute inside the repository
    #[arg(long, value_name = "FILE")]
    pub path: Option<String>,
    /// Leave out the rows of agents of this type (e.g. `dashboard`: the live dashboard's
    /// own reads)
    #[arg(long, value_name = "TYPE")]
    pub exclude_type: Option<String>,
    /// Rows after this id, oldest first (to page forward)
    #[arg(long, value_name = "ID", allow_negative_numbers = true)]
    pub after_id: Option<i64>,
    /// At most this many entries (default 100)
    #[arg(long, allow_negative_numbers = true)]
    pub limit: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// Check a workflow file without creating it: every error with its field path
    /// (nodes[1].id, edges[0].if), conditions compiled, cycles refused; exits 2 if invalid
    Validate {
        /// The workflow: YAML or JSON ({name, nodes, edges, input})
        file: std::path::PathBuf,
    },
    /// Create a workflow from a file and start it (`create_workflow`)
    Create {
        /// The workflow: YAML or JSON ({name, nodes, edges, input})
        file: std::path::PathBuf,
    },
    /// Each node's status, agent, attempts, duration and result (`get_workflow_status`)
    Status {
        /// The id `coord workflow create` printed
        workflow_id: String,
    },
    /// Workflows and swarms, newest first (`list_workflows`)
    List {
        #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum SwarmCommand {
    /// Queue the tasks under one task type and spawn the members to drain them
    /// (`create_swarm`; every spawn judged by the coordinator's pre-flight validator)
    Create {
        /// A name for people
        #[arg(long)]
        name: String,
        /// A member: an agent of the registry, NAME or NAME:RUNTIME (repeatable)
        #[arg(long = "agent", value_name = "NAME[:RUNTIME]")]
        agents: Vec<String>,
        /// A member: a generic worker of a profile, PROFILE or PROFILE:RUNTIME (repeatable)
        #[arg(long = "profile", value_name = "PROFILE[:RUNTIME]")]
        profiles: Vec<String>,
        /// A task of the swarm (repeatable)
        #[arg(long = "task", value_name = "TEXT", required = true)]
        tasks: Vec<String>,
        /// The task type of its tasks (its queue; default swarm-<id>)
        #[arg(long)]
        task_type: Option<String>,
        /// Stop each member after this many minutes (its profile's limit caps it)
        #[arg(long, allow_negative_numbers = true)]
        timeout_minutes: Option<i64>,
        /// Where each member works: shared (default) or worktree (one git worktree each)
        #[arg(long, value_name = "shared|worktree", value_parser = parse_isolation)]
        isolation: Option<coord_domain::agents::isolation::Isolation>,
    },
    /// Each task's status, result, agent and duration, and the members (`get_swarm_results`)
    Results {
        /// The id `coord swarm create` printed
        swarm_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Check a team file against the agent registry: every error with its path
    /// (agents[2].role: missing); exits 2 if invalid
    Validate { file: std::path::PathBuf },
    /// Spawn the members marked `run: true` on their tasks (the others stay defined)
    Up { file: std::path::PathBuf },
    /// Each member's agent, status, task and locks
    Status { file: std::path::PathBuf },
}

/// A `--toolsets` value, checked as `coord mcp` will read it.
fn toolsets_arg(raw: &str) -> Result<String, String> {
    coord_mcp::toolsets::parse(raw).map(|_| raw.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &str) -> Vec<std::ffi::OsString> {
        std::iter::once("coord")
            .chain(words.split_whitespace())
            .map(Into::into)
            .collect()
    }

    /// A command line the grammar refuses is, under `--json`, the refusal shape of every
    /// other error: `invalid_argument` (exit code 2), saying what clap said, with the usage.
    #[test]
    fn refused_command_lines_are_invalid_argument_refusals() {
        for (words, says) in [
            ("--json lock acquire", "<PATH>"),
            ("--json lock acquire a.rs --no-such-flag", "--no-such-flag"),
            ("lock acquire a.rs --ttl abc --json", "abc"),
            ("--json no-such-command", "no-such-command"),
        ] {
            let args = line(words);
            assert!(json_asked(&args), "{words}");
            let e = usage_refusal(&Cli::whole_grammar(args).unwrap_err().render().to_string(), false);
            let v = e.to_value();
            assert_eq!(v["error"], "invalid_argument", "{words}");
            assert!(
                e.message.contains(says) && !e.message.starts_with("error"),
                "{words}: {}",
                e.message
            );
            // clap names the usage for a missing or unknown argument, not for a bad value.
            assert!(
                v["usage"].as_str().is_none_or(|u| u.starts_with("coord")),
                "{words}: {v}"
            );
            assert_eq!(crate::output::exit_code(&e), crate::output::EXIT_USAGE);
        }
        let missing = Cli::whole_grammar(line("--json lock acquire")).unwrap_err();
        assert_eq!(
            usage_refusal(&missing.render().to_string(), false).to_value()["usage"],
            "coord lock acquire <PATH>"
        );
        let bad_value = Cli::whole_grammar(line("lock acquire a.rs --ttl abc")).unwrap_err();
        let said = usage_refusal(&bad_value.render().to_string(), false).message;
        assert!(!said.contains("For more information"), "{said}");
        assert!(!json_asked(&line("lock acquire a.rs")));
        assert!(!json_asked(&line("call x -- --json")), "a value after `--`");
        // A negative number is a value (the range check then says what is allowed).
        let cli = Cli::whole_grammar(line("lock acquire a.rs --ttl -5")).unwrap();
        assert!(format!("{cli:?}").contains("ttl: Some(-5)"), "{cli:?}");
    }

    /// Every line the hook-only grammar accepts means the same in the whole grammar
    /// (the same global flags, event and identity provenance); every other line is left
    /// to the whole grammar.
    /// The guardrails refuse a person's decisions by the command's words: every spelling
    /// the grammar accepts (a command's name and its aliases) is in their list, and every
    /// entry of the list is a command of the grammar.
    #[test]
    fn the_guardrails_know_every_spelling_of_a_persons_decision() {
        use coord_guardrails::rules::PERSON_COMMANDS;
        let grammar = command();
        let spellings = |c: &clap::Command| -> Vec<String> {
            std::iter::once(c.get_name().to_string())
                .chain(c.get_all_aliases().map(String::from))
                .collect()
        };
        let find = |parent: &clap::Command, word: &str| -> Option<clap::Command> {
            parent
                .get_subcommands()
                .find(|c| spellings(c).iter().any(|s| s == word))
                .cloned()
        };
        // Every command of the grammar, at any depth (the words may stand anywhere).
        let mut all = vec![grammar.clone()];
        let mut i = 0;
        while i < all.len() {
            let subs: Vec<clap::Command> = all[i].get_subcommands().cloned().collect();
            all.extend(subs);
            i += 1;
        }
        for entry in PERSON_COMMANDS {
            let first = all
                .iter()
                .find(|c| spellings(c).iter().any(|s| s == entry[0]))
                .unwrap_or_else(|| panic!("`{}` is not a command", entry[0]));
            let mut at = first.clone();
            for word in &entry[1..] {
                at = find(&at, word).unwrap_or_else(|| panic!("`coord … {}` is not a command", entry.join(" ")));
            }
            for spelling in spellings(first) {
                let mut other: Vec<&str> = entry.to_vec();
                other[0] = &spelling;
                assert!(
                    PERSON_COMMANDS.contains(&other.as_slice()),
                    "the guardrails refuse `coord {}` but not `coord {}`",
                    entry.join(" "),
                    other.join(" ")
                );
            }
        }
    }

    /// The guardrails read a coord line's command words past the global options' values:
    /// their list of those options is the grammar's.
    #[test]
    fn the_guardrails_know_every_global_option_that_takes_a_value() {
        let grammar = command();
        let mut taking: Vec<String> = grammar
            .get_arguments()
            .filter(|a| a.is_global_set() && a.get_action().takes_values())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        taking.sort();
        let mut known: Vec<String> = coord_guardrails::rules::COORD_VALUE_OPTIONS
            .iter()
            .map(|o| o.to_string())
            .collect();
        known.sort();
        assert_eq!(known, taking);
    }

    #[test]
    fn the_hook_grammar_is_a_subset_of_the_whole() {
        let accepted = [
            "hook PreToolUse",
            "hook SessionStart",
            "hook git-pre-commit",
            "--json hook PreToolUse",
            "hook PreToolUse --json",
            "--db /tmp/x.db hook SessionEnd",
            "hook PreToolUse --agent-id a1 --agent-type claude-code",
            "--agent-id a1 hook PreToolUse",
            "--workspace /a --workspace /b hook PreToolUse",
            "--db hook hook PreToolUse",
            "--remote http://127.0.0.1:1 hook UserPromptSubmit",
            "hook git-pre-push origin https://example.com/r.git",
        ];
        for words in accepted {
            let lean = Cli::hook_line(&line(words)).unwrap_or_else(|| panic!("{words}: not accepted"));
            let whole = Cli::whole_grammar(line(words)).unwrap();
            assert_eq!(format!("{lean:?}"), format!("{whole:?}"), "{words}");
        }
        let left_to_the_whole = [
            "--version",
            "hook --help",
            "hook -h",
            "hook",
            "hook PreToolUse one two three",
            "hook PreToolUse --version",
            "help hook",
            "lock acquire hook",
            "memory search hook",
            "hook PreToolUse --no-such-flag",
        ];
        for words in left_to_the_whole {
            assert!(
                Cli::hook_line(&line(words)).is_none(),
                "{words}: taken by the hook grammar"
            );
        }
        // What the whole grammar says of them is unchanged: usage errors, help, version.
        assert!(Cli::whole_grammar(line("hook")).is_err());
        assert!(Cli::whole_grammar(line("lock acquire hook")).is_ok());
    }
}
