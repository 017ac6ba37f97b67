//! Where the process stands: working directory, repository root, database, identity.

use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use std::path::{Path, PathBuf};

pub const DEFAULT_AGENT_TYPE: &str = "cli";
pub const CLAUDE_AGENT_TYPE: &str = "claude_code";

/// Which database to open.
#[derive(Debug, Clone, PartialEq)]
pub enum DbTarget {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DbTarget {
    /// Parses `--db` / `COORD_DATABASE_URL`: `postgres://…`/`postgresql://…`, `sqlite:PATH`,
    /// `sqlite://PATH`, or a plain file path (relative to `cwd`).
    pub fn parse(raw: &str, cwd: &Path) -> CoordResult<DbTarget> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "db",
                "the database URL is empty",
            ));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(DbTarget::Postgres(raw.to_string()));
        }
        let path = raw
            .strip_prefix("sqlite://")
            .or_else(|| raw.strip_prefix("sqlite:"))
            .unwrap_or(raw);
        if path.is_empty() || path.contains("://") {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "db",
                format!("unsupported database URL {raw:?}: use postgres://…, sqlite:PATH or a file path"),
            ));
        }
        Ok(DbTarget::Sqlite(cwd.join(path)))
    }
}

/// The nearest ancestor of `start` holding `.git` (a directory, or a file for worktrees).
pub fn git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// coord's state directory (`.coord/`) for a process working in `cwd`: beside the
/// repository's main checkout (shared by its worktrees), else beside `cwd`.
pub fn state_dir_of(cwd: &Path) -> PathBuf {
    let git = git_root(cwd);
    let shared = match &git {
        Some(root) => crate::worktree::locate(root).shared_root,
        None => cwd.to_path_buf(),
    };
    shared.join(".coord")
}

/// Where remote mode sends requests.
#[derive(Debug, Clone)]
pub struct Remote {
    pub url: String,
    pub api_key: Option<String>,
    /// Identity parts that are defaults, not configured: a bound API key overrides them.
    pub default_id: coord_remote::Unconfigured,
    pub default_type: coord_remote::Unconfigured,
}

/// What a process was told about where to work and who it is: the command line's global
/// options and their environment variables (the CLI parses them; this crate never does).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--db` / `COORD_DATABASE_URL`; unset: `.coord/coord.db` beside the repository.
    pub db: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// `--remote` / `COORDINATION_API_URL`.
    pub remote: Option<String>,
    pub api_key: Option<String>,
    pub workspaces: Vec<PathBuf>,
    pub file_size_limit: Option<u64>,
    pub working_memory_budget: Option<i64>,
    pub recall_half_life_days: Option<u32>,
    pub coordination_domains: Vec<String>,
    pub model_endpoints: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Context {
    /// Set in remote mode (`--remote` / `COORDINATION_API_URL`): no database is opened.
    pub remote: Option<Remote>,
    pub cwd: PathBuf,
    /// The git root, or the working directory outside a repository.
    pub repo_root: PathBuf,
    pub db: DbTarget,
    /// Whether `db` is the default location (not given by flag or env).
    pub db_is_default: bool,
    pub caller: Caller,
    /// The file tools' workspaces (`--workspace`), as given; empty: the repository.
    pub workspaces: Vec<PathBuf>,
    /// Whether `repo_root` is a git repository's root (not just the working directory).
    pub in_git_repo: bool,
    pub file_size_limit: Option<u64>,
    pub working_memory_budget: Option<i64>,
    pub recall_half_life_days: Option<u32>,
    pub coordination_domains: Vec<String>,
    pub model_endpoints: Vec<String>,
    /// The agent's session this process runs in, if any (`agent_session::detect`): then
    /// it acts with the `Session` credential, never a person's.
    pub session: Option<crate::agent_session::AgentSession>,
    /// Where this checkout stands among its repository's worktrees (`None` outside git).
    pub worktree: Option<crate::worktree::Worktree>,
    /// coord's own state (`.coord/`): beside the repository's main checkout, shared by
    /// all its worktrees; beside the working directory outside a repository.
    pub state_dir: PathBuf,
}

impl Context {
    pub fn resolve(global: &Settings) -> CoordResult<Context> {
        let cwd = std::env::current_dir().map_err(|e| {
            CoordError::new(
                ErrorCode::InvalidArgument,
                format!("cannot read the working directory: {e}"),
            )
        })?;
        Context::resolve_in(global, cwd)
    }

    pub fn resolve_in(global: &Settings, cwd: PathBuf) -> CoordResult<Context> {
        let session = crate::agent_session::detect();
        if let Some(s) = &session {
            refuse_borrowed_identity(s, std::env::args().skip(1))?;
        }
        let git = git_root(&cwd);
        let in_git_repo = git.is_some();
        let repo_root = git.unwrap_or_else(|| cwd.clone());
        let worktree = in_git_repo.then(|| crate::worktree::locate(&repo_root));
        let state_dir = worktree
            .as_ref()
            .map_or_else(|| repo_root.clone(), |w| w.shared_root.clone())
            .join(".coord");
        let (db, db_is_default) = match global.db.as_deref() {
            Some(raw) => (DbTarget::parse(raw, &cwd)?, false),
            None => (DbTarget::Sqlite(state_dir.join("coord.db")), true),
        };
        let (default_id, default_type) = default_identity(false);
        let agent_type = explicit_agent_type(global);
        let agent_type_was_set = agent_type.is_some();
        let caller = Caller::new(
            global.agent_id.clone().unwrap_or(default_id),
            agent_type.unwrap_or(default_type),
        );
        let remote = global
            .remote
            .as_ref()
            .filter(|u| !u.trim().is_empty())
            .map(|url| Remote {
                url: url.trim().to_string(),
                api_key: global.api_key.clone(),
                default_id: unconfigured(global.agent_id.is_none(), &caller.agent_id),
                default_type: unconfigured(!agent_type_was_set, &caller.agent_type),
            });
        Ok(Context {
            remote,
            cwd,
            repo_root,
            db,
            db_is_default,
            caller,
            workspaces: if global.workspaces.is_empty() {
                // An empty or unset variable means the default.
                std::env::var("COORD_WORKSPACES")
                    .unwrap_or_default()
                    .split(':')
                    .filter(|d| !d.trim().is_empty())
                    .map(PathBuf::from)
                    .collect()
            } else {
                global.workspaces.clone()
            },
            in_git_repo,
            file_size_limit: global.file_size_limit,
            working_memory_budget: global.working_memory_budget,
            recall_half_life_days: global.recall_half_life_days,
            coordination_domains: coordination_domains(&global.coordination_domains)?,
            model_endpoints: hosts("model-endpoint", &global.model_endpoints)?,
            session,
            worktree,
            state_dir,
        })
    }

    /// The same coordinator, seen from another checkout of its repository (an isolated
    /// agent's worktree): that checkout's root and place; the same store and state.
    pub fn moved_to(&self, checkout: &Path) -> Context {
        Context {
            cwd: checkout.to_path_buf(),
            repo_root: checkout.to_path_buf(),
            worktree: Some(crate::worktree::locate(checkout)),
            ..self.clone()
        }
    }

    /// Where this process's agent works, for its session: the worktree's root and branch.
    pub fn place(&self) -> (Option<String>, Option<String>) {
        match &self.worktree {
            Some(w) => (Some(w.root.display().to_string()), w.branch.clone()),
            None => (None, None),
        }
    }

    /// How this process proves who it is to the coordinator: a process of this user, or
    /// one inside an agent's session.
    pub fn credential(&self) -> coord_domain::access::Credential {
        match self.session {
            Some(_) => coord_domain::access::Credential::Session,
            None => coord_domain::access::Credential::Local,
        }
    }

    /// The file tools' workspaces: each `--workspace` directory (relative to the
    /// repository root) with its place in the repository, or the repository itself. A
    /// workspace outside the repository is refused: its files would have no lock path.
    pub fn workspace_dirs(&self) -> CoordResult<Vec<coord_service::WorkspaceDir>> {
        let bad = |m: String| CoordError::new(ErrorCode::InvalidArgument, m).with_field("workspace");
        let root = self.repo_root.canonicalize().map_err(|e| {
            bad(format!(
                "the repository root {} cannot be resolved: {e}",
                self.repo_root.display()
            ))
        })?;
        if self.workspaces.is_empty() && !self.in_git_repo {
            // Outside a repository the default would be whatever directory coord was
            // started in (a home directory, say): the file tools stay off instead.
            return Ok(Vec::new());
        }
        if self.workspaces.is_empty() {
            return Ok(vec![coord_service::WorkspaceDir {
                dir: root,
                prefix: String::new(),
            }]);
        }
        self.workspaces
            .iter()
            .map(|w| {
                // Relative to the repository root, wherever coord was started in it.
                let dir = root
                    .join(w)
                    .canonicalize()
                    .map_err(|e| bad(format!("workspace {} cannot be opened: {e}", w.display())))?;
                let inside = dir.strip_prefix(&root).map_err(|_| {
                    bad(format!(
                        "workspace {} is outside the repository {}: its files would have no lock path",
                        dir.display(),
                        root.display()
                    ))
                })?;
                let prefix = inside
                    .to_str()
                    .ok_or_else(|| bad(format!("workspace {} is not a UTF-8 path", dir.display())))?
                    .to_string();
                Ok(coord_service::WorkspaceDir { dir, prefix })
            })
            .collect()
    }

    /// coord's own files that live inside the repository (a SQLite database given with
    /// `--db` and its journals, the audit key), repository-relative: the file tools
    /// refuse them.
    pub fn protected_paths(&self, audit_key: Option<&std::path::Path>) -> Vec<String> {
        let Ok(root) = self.repo_root.canonicalize() else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = Vec::new();
        if let DbTarget::Sqlite(db) = &self.db {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                files.push(PathBuf::from(format!("{}{suffix}", db.display())));
            }
        }
        files.extend(audit_key.map(std::path::Path::to_path_buf));
        files
            .iter()
            .filter_map(|f| {
                // The file may not exist yet: resolve its directory.
                let dir = self.cwd.join(f.parent()?).canonicalize().ok()?;
                let full = dir.join(f.file_name()?);
                Some(full.strip_prefix(&root).ok()?.to_str()?.to_string())
            })
            .collect()
    }

    /// A path the user typed (a file, a `dir/` or a glob), made repo-relative when it
    /// resolves inside the repository, keeping a trailing `/`. Paths that do not are
    /// passed on unchanged, so the service refuses (and audits) them.
    /// [`Context::lock_path`] of a path inside the repository; `None` outside it.
    pub fn lock_path_inside(&self, input: &str) -> Option<String> {
        let joined = self.cwd.join(input);
        let dir = if input.ends_with(['/', '\\']) { "/" } else { "" };
        let joined = format!("{}{dir}", joined.to_string_lossy());
        coord_domain::path::relative_keeping_dir(&joined, &self.repo_root.to_string_lossy()).ok()
    }

    pub fn lock_path(&self, input: &str) -> String {
        let joined = self.cwd.join(input);
        let root = self.repo_root.to_string_lossy();
        // `join` drops a trailing separator of `input`; put it back for the check.
        let dir = if input.ends_with(['/', '\\']) { "/" } else { "" };
        let joined = format!("{}{dir}", joined.to_string_lossy());
        coord_domain::path::relative_keeping_dir(&joined, &root).unwrap_or_else(|_| input.to_string())
    }
}

fn unconfigured(is_default: bool, value: &str) -> coord_remote::Unconfigured {
    if is_default {
        coord_remote::Unconfigured::Value(value.to_string())
    } else {
        coord_remote::Unconfigured::Nothing
    }
}

pub fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

/// The Claude Code session this process runs in, if Claude Code said (it sets
/// `CLAUDE_CODE_SESSION_ID` for its hooks and the MCP servers it starts).
pub fn claude_session() -> Option<String> {
    std::env::var("CLAUDE_CODE_SESSION_ID")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The agent id of one Claude Code session: `claude-code-<host>-<session's first 8
/// characters>`. Every session is its own agent — two sessions on one host must never
/// share an identity (or one's locks would let the other through) — and the MCP server
/// and the hooks of one session derive the same id.
pub fn claude_session_id(session: &str) -> String {
    let short: String = session.chars().filter(|c| c.is_ascii_alphanumeric()).take(8).collect();
    let host = hostname();
    if host.is_empty() {
        format!("claude-code-{short}")
    } else {
        format!("claude-code-{host}-{short}")
    }
}

/// The identity used when none is configured. Inside Claude Code (`in_claude`, or the
/// `CLAUDECODE` variable Claude Code sets for everything it runs — hooks, MCP servers,
/// its shell) it is the session's own id ([`claude_session_id`]) of type `claude_code`,
/// or `claude-code@<host>` when the session is not known (older Claude Code). Otherwise
/// it is `<user>@<host>` of type `cli`.
pub fn default_identity(in_claude: bool) -> (String, String) {
    let host = hostname();
    let at_host = |name: &str| {
        if host.is_empty() {
            name.to_string()
        } else {
            format!("{name}@{host}")
        }
    };
    if in_claude || std::env::var_os("CLAUDECODE").is_some_and(|v| !v.is_empty()) {
        let id = claude_session().map_or_else(|| at_host("claude-code"), |s| claude_session_id(&s));
        return (id, CLAUDE_AGENT_TYPE.to_string());
    }
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "user".to_string());
    (at_host(&user), DEFAULT_AGENT_TYPE.to_string())
}

/// Inside an agent's session, coord acts as that session's agent: an identity written on
/// the command line (`--agent-id`, `--agent-type`) would be another agent's, borrowed.
/// (The environment the runtime gave the session is its own; an assignment written into
/// a command, `COORD_AGENT_ID=x coord …`, is refused by the guardrails in the hook.)
pub fn refuse_borrowed_identity(
    session: &crate::agent_session::AgentSession,
    args: impl Iterator<Item = String>,
) -> CoordResult<()> {
    for a in args {
        if a == "--" {
            break;
        }
        let flag = a.split('=').next().unwrap_or("");
        if matches!(flag, "--agent-id" | "--agent-type") {
            return Err(CoordError::new(
                ErrorCode::Forbidden,
                format!(
                    "{flag} is refused inside an agent's session ({}: {}): coord acts as this session's agent, not \
                     as another",
                    session.runtime, session.sign
                ),
            )
            .with_field(&flag[2..].replace('-', "_")));
        }
    }
    Ok(())
}

/// The agent type the user set: `--agent-type` / `COORD_AGENT_TYPE`, else `AGENT_TYPE`
/// (the spec's name for it, which cloud agents get from their environment).
pub fn explicit_agent_type(global: &Settings) -> Option<String> {
    global
        .agent_type
        .clone()
        .or_else(|| std::env::var("AGENT_TYPE").ok().filter(|t| !t.trim().is_empty()))
}

/// Hosts given to `--<flag>`, each a valid policy entry that is not a category.
fn hosts(flag: &str, given: &[String]) -> CoordResult<Vec<String>> {
    let mut out = Vec::new();
    for d in given.iter().map(|d| d.trim()).filter(|d| !d.is_empty()) {
        let e = coord_domain::network::Entry::parse(d).map_err(|m| {
            CoordError::new(ErrorCode::InvalidArgument, format!("--{flag}: {m}")).with_field(&flag.replace('-', "_"))
        })?;
        if matches!(e.pattern, coord_domain::network::Pattern::Category(_)) {
            return Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("--{flag}: a host, not a @category"),
            ));
        }
        out.push(d.to_string());
    }
    Ok(out)
}

/// The coordinator's own hosts: those given, each a valid policy entry, and the host of
/// COORDINATION_API_URL.
fn coordination_domains(given: &[String]) -> CoordResult<Vec<String>> {
    let mut out = hosts("coordination-domain", given)?;
    // With its port: the API rarely listens on 80 or 443 only (`coord serve`: 8081).
    if let Ok(url) = std::env::var("COORDINATION_API_URL")
        && let Ok(t) = coord_domain::network::parse_target(&url)
    {
        out.push(t.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_targets() {
        let cwd = Path::new("/w");
        let cases: &[(&str, Option<DbTarget>)] = &[
            (
                "postgres://u:p@h/db",
                Some(DbTarget::Postgres("postgres://u:p@h/db".into())),
            ),
            (
                "postgresql://h/db",
                Some(DbTarget::Postgres("postgresql://h/db".into())),
            ),
            ("sqlite:x.db", Some(DbTarget::Sqlite("/w/x.db".into()))),
            ("sqlite:///tmp/x.db", Some(DbTarget::Sqlite("/tmp/x.db".into()))),
            ("data/c.db", Some(DbTarget::Sqlite("/w/data/c.db".into()))),
            ("/abs/c.db", Some(DbTarget::Sqlite("/abs/c.db".into()))),
            ("mysql://h/db", None),
            ("", None),
            ("sqlite:", None),
        ];
        for (raw, want) in cases {
            assert_eq!(DbTarget::parse(raw, cwd).ok(), *want, "{raw:?}");
        }
    }
}
