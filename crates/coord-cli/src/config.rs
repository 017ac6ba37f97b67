//! Configuration files, for the settings that are flags or environment variables:
//! the user's (`$XDG_CONFIG_HOME/coord/config.toml`, else `~/.config/coord/config.toml`)
//! and the repository's (`.coord/config.toml` in its coordination space, which every
//! worktree shares). Precedence: a flag, then the environment, then the repository's
//! file, then the user's. A file's value reaches coord exactly as its environment
//! variable would (set at start for the variables not set), so every part of coord —
//! and every process it starts — reads one source.
//!
//! Refused, never skipped: a file that is not TOML, an unknown key, a value that is not
//! a string, number, boolean or list of strings, identity (`agent-id`: two agents must
//! never share one), and in the repository's file anything but tuning ([`SETTINGS`]).

use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A setting a file may hold: its key there, its environment variable, its flag (the
/// global option's id, when it has one), whether the repository's file may set it.
#[derive(Debug)]
pub struct Setting {
    pub key: &'static str,
    pub env: &'static str,
    pub flag: Option<&'static str>,
    pub in_repository: bool,
    pub secret: bool,
}

const fn s(key: &'static str, env: &'static str, flag: Option<&'static str>, in_repository: bool) -> Setting {
    Setting {
        key,
        env,
        flag,
        in_repository,
        secret: false,
    }
}

const fn secret(key: &'static str, env: &'static str) -> Setting {
    Setting {
        key,
        env,
        flag: None,
        in_repository: false,
        secret: true,
    }
}

/// Every setting a file may hold (README.md, "Configuration", says what each does). The
/// repository's file (`true` in the last column) holds tuning only: never where coord's
/// state or credentials go, a command, what agents may reach, the server's address,
/// retention or spawn limits, or a protection switched off.
#[rustfmt::skip]
pub const SETTINGS: &[Setting] = &[
    s("db", "COORD_DATABASE_URL", Some("db"), false),
    s("remote", "COORDINATION_API_URL", Some("remote"), false),
    secret("api-key", "COORDINATION_API_KEY"),
    s("workspaces", "COORD_WORKSPACES", Some("workspaces"), true),
    s("file-size-limit", "COORD_FILE_SIZE_LIMIT", Some("file_size_limit"), true),
    s("working-memory-budget", "COORD_WORKING_MEMORY_BUDGET", Some("working_memory_budget"), true),
    s("recall-half-life-days", "COORD_RECALL_HALF_LIFE_DAYS", Some("recall_half_life_days"), true),
    s("coordination-domains", "COORD_COORDINATION_DOMAINS", Some("coordination_domains"), false),
    s("model-endpoints", "COORD_MODEL_ENDPOINTS", Some("model_endpoints"), false),
    s("sqlite-busy-timeout-ms", "COORD_SQLITE_BUSY_TIMEOUT_MS", None, true),
    s("local-server", "COORD_LOCAL_SERVER", None, true),
    s("mcp-direct", "COORD_MCP_DIRECT", None, true),
    s("pg-pool-size", "COORD_PG_POOL_SIZE", None, true),
    s("team", "COORD_TEAM", None, true),
    s("release-grace-seconds", "COORD_RELEASE_GRACE_SECONDS", None, true),
    s("audit-retention-days", "COORD_AUDIT_RETENTION_DAYS", None, false),
    s("memory-retention-days", "COORD_MEMORY_RETENTION_DAYS", None, false),
    s("audit-key-file", "COORD_AUDIT_KEY_FILE", None, false),
    secret("security-webhook-url", "COORD_SECURITY_WEBHOOK_URL"),
    s("toolsets", "COORD_TOOLSETS", None, true),
    s("sandbox-enabled", "COORD_SANDBOX_ENABLED", None, false),
    s("validator-command", "COORD_VALIDATOR_COMMAND", None, false),
    s("validator-url", "COORD_VALIDATOR_URL", None, false),
    s("validator-model", "COORD_VALIDATOR_MODEL", None, false),
    s("validator-timeout", "COORD_VALIDATOR_TIMEOUT", None, false),
    s("no-validation", "COORD_NO_VALIDATION", None, false),
    s("max-running-agents", "COORD_MAX_RUNNING_AGENTS", None, false),
    s("spawn-depth-limit", "COORD_SPAWN_DEPTH_LIMIT", None, false),
    s("proxy-port", "COORD_PROXY_PORT", None, false),
    s("log", "COORD_LOG", None, true),
    s("api-host", "API_HOST", None, false),
    s("api-port", "API_PORT", None, false),
    secret("api-keys", "COORDINATION_API_KEYS"),
    secret("api-key-identities", "COORDINATION_API_KEY_IDENTITIES"),
    s("api-require-auth-for-reads", "COORDINATION_API_REQUIRE_AUTH_FOR_READS", None, false),
    secret("github-token", "COORD_GITHUB_TOKEN"),
    s("github-api-url", "COORD_GITHUB_API_URL", None, false),
    s("github-repository", "COORD_GITHUB_REPOSITORY", None, false),
    secret("github-webhook-secret", "GITHUB_WEBHOOK_SECRET"),
    secret("e2b-api-key", "E2B_API_KEY"),
    s("e2b-api-url", "E2B_API_URL", None, false),
    s("e2b-envd-url", "E2B_ENVD_URL", None, false),
    s("otel-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", None, false),
    s("otel-service-name", "OTEL_SERVICE_NAME", None, true),
    s("port-alloc-base", "PORT_ALLOC_BASE", None, true),
    s("port-alloc-range", "PORT_ALLOC_RANGE", None, true),
    s("port-alloc-ttl-minutes", "PORT_ALLOC_TTL_MINUTES", None, true),
    s("port-alloc-max-sessions", "PORT_ALLOC_MAX_SESSIONS", None, true),
];

/// Keys refused in every file, with why.
const NEVER: &[(&str, &str)] = &[
    (
        "agent-id",
        "identity is a process's own: two agents must never share one",
    ),
    (
        "agent-type",
        "identity is a process's own: two agents must never share one",
    ),
];

/// Which file: the repository's is held to less than the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    User,
    Repository,
}

/// One file's values, as environment values.
#[derive(Debug)]
pub struct Layer {
    pub path: PathBuf,
    pub values: Vec<(&'static Setting, String)>,
}

fn refused(path: &Path, message: String) -> CoordError {
    CoordError::new(ErrorCode::InvalidArgument, format!("{}: {message}", path.display()))
}

/// A value as its environment variable would hold it: lists joined as the variable
/// takes them (`:` for workspaces, `,` otherwise).
fn env_value(setting: &Setting, value: &toml_edit::Value) -> Option<String> {
    use toml_edit::Value as V;
    match value {
        V::String(s) => Some(s.value().clone()),
        V::Integer(i) => Some(i.value().to_string()),
        V::Boolean(b) => Some(b.value().to_string()),
        V::Array(a) => {
            let items: Option<Vec<String>> = a.iter().map(|v| v.as_str().map(String::from)).collect();
            let sep = if setting.env == "COORD_WORKSPACES" { ":" } else { "," };
            items.map(|i| i.join(sep))
        }
        _ => None,
    }
}

/// The settings in `text`, the file at `path`; every mistake refused by name.
pub fn parse(text: &str, path: &Path, origin: Origin) -> CoordResult<Layer> {
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| refused(path, format!("not valid TOML ({})", e.to_string().trim())))?;
    let mut values = Vec::new();
    for (key, item) in doc.iter() {
        if let Some((_, why)) = NEVER.iter().find(|(k, _)| *k == key) {
            return Err(refused(path, format!("`{key}` cannot be set in a file: {why}")));
        }
        let Some(setting) = SETTINGS.iter().find(|s| s.key == key) else {
            return Err(refused(
                path,
                format!("unknown setting `{key}` (`coord config show --all` lists them)"),
            ));
        };
        if origin == Origin::Repository && !setting.in_repository {
            return Err(refused(
                path,
                format!(
                    "`{key}` may only be set in your user file or the environment: a repository's file holds \
                     tuning only, never where coord's state or credentials go, commands, what agents may reach \
                     or a protection switched off"
                ),
            ));
        }
        let value = item
            .as_value()
            .and_then(|v| env_value(setting, v))
            .ok_or_else(|| refused(path, format!("`{key}`: a string, number, boolean or list of strings")))?;
        values.push((setting, value));
    }
    Ok(Layer {
        path: path.to_path_buf(),
        values,
    })
}

/// The environment variables the files set: per setting, the first layer that has it
/// (layers in precedence order), unless the environment has it already.
pub fn plan<'a>(layers: &'a [Layer], set_in_env: impl Fn(&str) -> bool) -> Vec<(&'static Setting, &'a str, &'a Layer)> {
    let mut out: Vec<(&'static Setting, &'a str, &'a Layer)> = Vec::new();
    for layer in layers {
        for (setting, value) in &layer.values {
            if !set_in_env(setting.env) && !out.iter().any(|(s, _, _)| s.env == setting.env) {
                out.push((setting, value, layer));
            }
        }
    }
    out
}

/// The user's file.
pub fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("coord").join("config.toml"))
}

/// The repository's file: in the coordination space of the checkout around `cwd`.
pub fn repository_file(cwd: &Path) -> PathBuf {
    coord_runtime::context::state_dir_of(cwd).join("config.toml")
}

/// What the files set at start, for `coord config show`.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub files: Vec<FileState>,
    /// env variable → the file that set it.
    #[serde(skip)]
    pub set: Vec<(&'static str, PathBuf)>,
    /// env variables set before coord started (whatever the files say).
    #[serde(skip)]
    pub from_env: Vec<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileState {
    pub path: String,
    pub origin: Origin,
    pub exists: bool,
}

static APPLIED: std::sync::OnceLock<Applied> = std::sync::OnceLock::new();

/// What [`apply`] did in this process.
pub fn applied() -> Option<&'static Applied> {
    APPLIED.get()
}

fn read_layer(path: Option<PathBuf>, origin: Origin, files: &mut Vec<FileState>) -> CoordResult<Option<Layer>> {
    let Some(path) = path else { return Ok(None) };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(refused(&path, format!("cannot be read ({e})"))),
    };
    files.push(FileState {
        path: path.display().to_string(),
        origin,
        exists: text.is_some(),
    });
    text.map(|t| parse(&t, &path, origin)).transpose()
}

/// Reads the files and sets, for each setting they hold, its environment variable when
/// the environment does not have it.
///
/// # Safety
/// Sets environment variables: call it before any other thread exists.
pub unsafe fn apply() -> CoordResult<()> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut files = Vec::new();
    // Started by coord with its settings in the environment: no file is read.
    let (var, off) = coord_runtime::CONFIG_FILES_OFF;
    let layers: Vec<Layer> = match std::env::var(var).is_ok_and(|v| v == off) {
        true => Vec::new(),
        false => [
            read_layer(Some(repository_file(&cwd)), Origin::Repository, &mut files)?,
            read_layer(user_file(), Origin::User, &mut files)?,
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let is_set = |var: &str| std::env::var_os(var).is_some();
    let from_env = SETTINGS.iter().filter(|s| is_set(s.env)).map(|s| s.env).collect();
    let planned = plan(&layers, is_set);
    let set = planned.iter().map(|(s, _, l)| (s.env, l.path.clone())).collect();
    for (setting, value, _) in planned {
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var(setting.env, value) };
    }
    let _ = APPLIED.set(Applied { files, set, from_env });
    Ok(())
}

/// A URL's password (`postgres://user:secret@host/db`) shown as `***`.
fn without_password(value: &str) -> String {
    let Some((scheme, rest)) = value.split_once("://") else {
        return value.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{}", &rest[authority_end..])
        }
        _ => value.to_string(),
    }
}

/// One line of `coord config show`.
#[derive(Debug, Serialize)]
pub struct Shown {
    pub key: &'static str,
    pub env: &'static str,
    /// The value in effect (`(set)` for a secret); absent when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `flag`, `environment`, `file` or `default` (unset: coord's default applies).
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Every setting's value and where it came from. `flags`: the global options written on
/// the command line (their ids) and their values.
pub fn show(applied: &Applied, flags: &[(String, String)], all: bool) -> Vec<Shown> {
    SETTINGS
        .iter()
        .filter_map(|s| {
            let flagged = s
                .flag
                .and_then(|f| flags.iter().find(|(g, _)| g == f))
                .map(|(_, v)| v.clone());
            let file = applied.set.iter().find(|(e, _)| *e == s.env).map(|(_, p)| p);
            let source = match () {
                _ if flagged.is_some() => "flag",
                _ if applied.from_env.contains(&s.env) => "environment",
                _ if file.is_some() => "file",
                _ => "default",
            };
            if source == "default" && !all {
                return None;
            }
            let value = match flagged.or_else(|| std::env::var(s.env).ok()) {
                Some(_) if s.secret => Some("(set)".into()),
                v => v.map(|v| without_password(&v)),
            };
            Some(Shown {
                key: s.key,
                env: s.env,
                value,
                source,
                file: file.filter(|_| source == "file").map(|p| p.display().to_string()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str, origin: Origin) -> Result<Vec<(&'static str, String)>, String> {
        parse(text, Path::new("/c.toml"), origin)
            .map(|l| l.values.into_iter().map(|(s, v)| (s.env, v)).collect())
            .map_err(|e| e.message)
    }

    #[test]
    fn files_are_read_as_their_environment_variables() {
        let ok = [
            ("file-size-limit = 2048", "COORD_FILE_SIZE_LIMIT", "2048"),
            ("workspaces = [\"src\", \"docs\"]", "COORD_WORKSPACES", "src:docs"),
            ("release-grace-seconds = 60", "COORD_RELEASE_GRACE_SECONDS", "60"),
            ("local-server = \"off\"", "COORD_LOCAL_SERVER", "off"),
            ("toolsets = \"core,files\"", "COORD_TOOLSETS", "core,files"),
        ];
        for (text, env, value) in ok {
            assert_eq!(
                parsed(text, Origin::Repository),
                Ok(vec![(env, value.to_string())]),
                "{text}"
            );
        }
        let user_only = "only be set in your user file";
        let refused = [
            ("db = ", Origin::User, "not valid TOML"),
            ("dbb = \"x\"", Origin::User, "unknown setting `dbb`"),
            ("agent-id = \"me\"", Origin::User, "identity"),
            ("agent-type = \"x\"", Origin::User, "identity"),
            ("remote = \"http://x\"", Origin::Repository, user_only),
            ("api-key = \"k\"", Origin::Repository, user_only),
            ("validator-command = \"sh\"", Origin::Repository, user_only),
            ("sandbox-enabled = false", Origin::Repository, user_only),
            ("github-api-url = \"http://x\"", Origin::Repository, user_only),
            ("db = \"postgres://evil/x\"", Origin::Repository, user_only),
            ("coordination-domains = [\"0.0.0.0/0\"]", Origin::Repository, user_only),
            ("api-host = \"0.0.0.0\"", Origin::Repository, user_only),
            ("audit-retention-days = 1", Origin::Repository, user_only),
            ("spawn-depth-limit = 9", Origin::Repository, user_only),
            ("db = { a = 1 }", Origin::User, "a string, number"),
            ("workspaces = [1]", Origin::User, "a string, number"),
            ("[db]\nx = 1", Origin::User, "a string, number"),
        ];
        for (text, origin, want) in refused {
            let e = parsed(text, origin).unwrap_err();
            assert!(e.contains(want) && e.starts_with("/c.toml: "), "{text}: {e}");
        }
        assert!(
            parsed(
                "remote = \"http://x\"\napi-key = \"k\"\ndb = \"postgres://h/db\"",
                Origin::User
            )
            .is_ok()
        );
        assert_eq!(
            parsed("coordination-domains = [\"a.io\", \"b.io\"]", Origin::User),
            Ok(vec![("COORD_COORDINATION_DOMAINS", "a.io,b.io".to_string())])
        );
    }

    #[test]
    fn passwords_are_not_shown() {
        let cases = [
            (
                "postgres://coord:s3cret@db:5432/coord",
                "postgres://coord:***@db:5432/coord",
            ),
            ("postgres://coord@db/coord", "postgres://coord@db/coord"),
            ("https://u:p@h/x@y", "https://u:***@h/x@y"),
            ("/path/coord.db", "/path/coord.db"),
        ];
        for (given, shown) in cases {
            assert_eq!(without_password(given), shown);
        }
    }

    #[test]
    fn the_environment_wins_then_the_repository_then_the_user() {
        let repo = parse("log = \"debug\"\nteam = \"t\"", Path::new("/r"), Origin::Repository).unwrap();
        let user = parse(
            "log = \"info\"\ndb = \"user\"\nteam = \"u\"",
            Path::new("/u"),
            Origin::User,
        )
        .unwrap();
        let layers = [repo, user];
        let planned: Vec<(&str, &str, &Path)> = plan(&layers, |v| v == "COORD_TEAM")
            .into_iter()
            .map(|(s, v, l)| (s.env, v, l.path.as_path()))
            .collect();
        assert_eq!(
            planned,
            vec![
                ("COORD_LOG", "debug", Path::new("/r")),
                ("COORD_DATABASE_URL", "user", Path::new("/u")),
            ]
        );
    }

    #[test]
    fn every_setting_is_documented_once() {
        let readme = include_str!("../../../README.md");
        for s in SETTINGS {
            assert!(
                readme.contains(&format!("`{}`", s.env)),
                "README's Configuration lacks {}",
                s.env
            );
            assert_eq!(SETTINGS.iter().filter(|t| t.key == s.key).count(), 1, "{}", s.key);
            assert!(
                !(s.secret && s.in_repository),
                "{}: a secret never in the repository's file",
                s.key
            );
        }
    }
}
