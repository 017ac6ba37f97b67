//! Whether this process runs inside an agent's session: a command that Claude Code,
//! Codex or Aider runs through its tools (or its hooks and MCP server), or one under
//! `coord sandbox run` / `coord agent run`. There, coord acts with the weaker credential
//! `Session` (docs/security.md): the agent's own work, never a person's decision
//! (approvals, profiles, policies, rules, keys, pruning the audit trail), and no
//! borrowed identity (`--agent-id` and `--agent-type` are refused).
//!
//! Two signs, either suffices: the environment the runtimes give their commands
//! (`CLAUDECODE`, Codex's `CODEX_SANDBOX*`, coord's own `COORD_SANDBOX`), and the process
//! ancestry (a `claude`, `codex` or `aider` process above this one). A cooperative or
//! mistaken agent is stopped by this; a hostile one running as the same user without a
//! sandbox could hide both signs — against that only the kernel helps (a sandbox, a key
//! bound to the agent, another Unix user: docs/security.md).

/// The agent runtime a session belongs to, and how it was recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSession {
    pub runtime: &'static str,
    pub sign: String,
    /// The runtime's own process, when found among the ancestors: its pid and start time
    /// (clock ticks since boot), which together name it for as long as the machine runs.
    pub process: Option<(u32, u64)>,
}

impl AgentSession {
    /// The identity every process of this session shares when nothing configured one:
    /// for Codex, which tells neither its hooks nor its MCP server which session they
    /// serve, one derived from the Codex process they both descend from
    /// (`codex-<host>-<8 hex>`), so its hooks and its MCP server are one agent and two
    /// Codex sessions are two. `None` for other runtimes (Claude Code names its session).
    pub fn agent_id(&self, host: &str) -> Option<String> {
        use sha2::Digest;
        let (pid, start) = self.process.filter(|_| self.runtime == "codex")?;
        let digest = sha2::Sha256::digest(format!("{host}:{pid}:{start}").as_bytes());
        let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        Some(format!("codex-{host}-{short}"))
    }

    /// The agent type of such a session.
    pub fn agent_type(&self) -> Option<&'static str> {
        match self.runtime {
            "codex" => Some("codex"),
            "claude-code" => Some("claude_code"),
            "aider" => Some("aider"),
            _ => None,
        }
    }
}

/// How many ancestors are looked at (a process tree is rarely deeper than a dozen).
const MAX_ANCESTORS: usize = 64;

/// The runtime the environment variables `var` name, if any.
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<AgentSession> {
    const MARKERS: &[(&str, &str)] = &[
        ("CLAUDECODE", "claude-code"),
        ("CLAUDE_CODE_SESSION_ID", "claude-code"),
        ("CODEX_SANDBOX", "codex"),
        ("CODEX_SANDBOX_NETWORK_DISABLED", "codex"),
        ("CODEX_THREAD_ID", "codex"),
        ("COORD_SANDBOX", "coord-sandbox"),
    ];
    MARKERS.iter().find_map(|(name, runtime)| {
        var(name).filter(|v| !v.trim().is_empty()).map(|_| AgentSession {
            runtime,
            sign: format!("${name} is set"),
            process: None,
        })
    })
}

/// The agent runtime a process with command line `argv` is, if any: its program (or,
/// for an interpreter, its script) is `claude`, `codex` or `aider`, or lives in their
/// npm packages.
pub fn runtime_of(argv: &[&str]) -> Option<&'static str> {
    let named = |word: &str| -> Option<&'static str> {
        let base = word.rsplit('/').next().unwrap_or(word);
        if word.contains("@anthropic-ai/claude-code") || base == "claude" {
            Some("claude-code")
        } else if word.contains("@openai/codex") || base == "codex" || base.starts_with("codex-") {
            Some("codex")
        } else if base == "aider" || word.contains("/aider/") {
            Some("aider")
        } else {
            None
        }
    };
    let program = *argv.first()?;
    let base = program.rsplit('/').next().unwrap_or(program);
    let interpreter = ["node", "bun", "deno", "python", "python3"]
        .iter()
        .any(|i| base == *i || base.starts_with(&format!("{i}.")) || base.starts_with("python3."));
    if interpreter {
        // The first argument that is not an option: the script.
        argv.iter().skip(1).find(|a| !a.starts_with('-')).and_then(|s| named(s))
    } else {
        named(program)
    }
}

/// The ancestors of this process that are agent runtimes: the first one met.
fn from_ancestry() -> Option<AgentSession> {
    let mut pid = std::process::id();
    for _ in 0..MAX_ANCESTORS {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name (which may hold spaces and parentheses).
        let after = stat.rsplit_once(')')?.1;
        let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
        if ppid <= 1 {
            return None;
        }
        pid = ppid;
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&raw);
        let argv: Vec<&str> = text.split('\0').filter(|a| !a.is_empty()).collect();
        if let Some(runtime) = runtime_of(&argv) {
            return Some(AgentSession {
                runtime,
                sign: format!("process {pid} ({}) is an ancestor", argv.first().unwrap_or(&"?")),
                process: start_time(pid).map(|t| (pid, t)),
            });
        }
    }
    None
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, clock ticks since boot).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// This process's agent session, if it runs inside one. The process ancestry is read
/// even when the environment already told (it names the runtime's own process, which a
/// Codex session's identity is derived from).
pub fn detect() -> Option<AgentSession> {
    match (from_env(|k| std::env::var(k).ok()), from_ancestry()) {
        (Some(env), Some(found)) if found.runtime == env.runtime => Some(found),
        (Some(env), _) => Some(env),
        (None, found) => found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_by_their_command_lines() {
        let cases: [(&[&str], Option<&str>); 10] = [
            (&["claude", "-p", "hi"], Some("claude-code")),
            (&["/usr/local/bin/claude"], Some("claude-code")),
            (
                &["node", "/x/node_modules/@anthropic-ai/claude-code/cli.js", "--print"],
                Some("claude-code"),
            ),
            (
                &[
                    "/x/node_modules/@openai/codex/bin/codex-x86_64-unknown-linux-musl",
                    "exec",
                ],
                Some("codex"),
            ),
            (&["codex", "exec", "--json"], Some("codex")),
            (&["/venv/bin/python3", "/venv/bin/aider", "--yes-always"], Some("aider")),
            (&["node", "--enable-source-maps", "/srv/app.js"], None),
            (&["bash", "-c", "claude"], None),
            (&["cargo", "test"], None),
            (&[], None),
        ];
        for (argv, want) in cases {
            assert_eq!(runtime_of(argv), want, "{argv:?}");
        }
    }

    #[test]
    fn runtimes_by_their_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(
            from_env(env(&[("CLAUDECODE", "1")])).map(|s| s.runtime),
            Some("claude-code")
        );
        assert_eq!(
            from_env(env(&[("CODEX_SANDBOX", "seatbelt")])).map(|s| s.runtime),
            Some("codex")
        );
        assert_eq!(
            from_env(env(&[("COORD_SANDBOX", "1")])).map(|s| s.runtime),
            Some("coord-sandbox")
        );
        assert_eq!(from_env(env(&[("CLAUDECODE", "")])), None);
        assert_eq!(from_env(env(&[("PATH", "/bin")])), None);
    }

    #[test]
    fn a_codex_session_is_named_after_its_codex_process() {
        let codex = |pid, start| AgentSession {
            runtime: "codex",
            sign: String::new(),
            process: Some((pid, start)),
        };
        let a = codex(100, 5_000).agent_id("vm").unwrap();
        assert!(a.starts_with("codex-vm-") && a.len() == "codex-vm-".len() + 8, "{a}");
        assert_eq!(codex(100, 5_000).agent_id("vm"), Some(a.clone()), "stable");
        assert_ne!(
            codex(100, 5_001).agent_id("vm"),
            Some(a.clone()),
            "a reused pid is another session"
        );
        assert_ne!(codex(101, 5_000).agent_id("vm"), Some(a), "another session");
        let claude = AgentSession {
            runtime: "claude-code",
            sign: String::new(),
            process: Some((1, 2)),
        };
        assert_eq!(claude.agent_id("vm"), None, "Claude Code names its session itself");
        assert_eq!(claude.agent_type(), Some("claude_code"));
    }
}
