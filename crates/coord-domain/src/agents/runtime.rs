//! The agent runtimes coord launches (Claude Code, Codex, Aider): their names, and the
//! oldest version of each whose behaviour coord verified. How each is launched (argv,
//! environment, generated files) is `coord_agents::launch`.

use serde::Serialize;

/// Turns a launched agent gets when its definition does not say.
pub const DEFAULT_MAX_TURNS: u32 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    Claude,
    Codex,
    Aider,
}

impl Runtime {
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Aider => "aider",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude" | "claude-code" | "claude_code" => Some(Self::Claude),
            "codex" => Some(Self::Codex),
            "aider" => Some(Self::Aider),
            _ => None,
        }
    }

    /// The oldest version whose flags and settings the plans were verified against
    /// (docs/agents.md): older Claude Code silently ignores settings keys it does not know
    /// (`blockReadsOutsideWorkingDirectories`, …) and lacks `--restricted` and
    /// `--permission-prompts`; older Codex reads its config differently.
    pub fn min_version(self) -> Option<(u64, u64, u64)> {
        match self {
            Self::Claude => Some((2, 1, 330)),
            Self::Codex => Some((0, 169, 0)),
            Self::Aider => None,
        }
    }

    /// Whether `--version`'s output names a version this runtime's plans hold for; an
    /// output without a readable version is refused (unknown means not verified).
    pub fn check_version(self, version_output: &str) -> Result<(), String> {
        let Some(min) = self.min_version() else {
            return Ok(());
        };
        let found = version_output
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .find_map(|w| {
                let w = w.trim_start_matches('v');
                let mut parts = w.split('.').map(|p| p.parse::<u64>().ok());
                match (parts.next()?, parts.next()?, parts.next()?, parts.next()) {
                    (Some(a), Some(b), Some(c), None) => Some((a, b, c)),
                    _ => None,
                }
            });
        let want = format!("{}.{}.{}", min.0, min.1, min.2);
        match found {
            None => Err(format!(
                "cannot read {}'s version from {:?}: coord launches only versions it knows (≥ {want})",
                self.name(),
                version_output.trim()
            )),
            Some(v) if v < min => Err(format!(
                "{} {}.{}.{} is older than {want}, the oldest whose permission flags and settings coord's \
                 plans were verified on (older versions silently ignore some of them): upgrade it",
                self.name(),
                v.0,
                v.1,
                v.2
            )),
            Some(_) => Ok(()),
        }
    }
}
