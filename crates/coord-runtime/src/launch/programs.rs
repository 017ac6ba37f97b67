//! What a launch needs from this machine: the runtime's program (of a verified version),
//! bubblewrap, the provider keys, and the switches read from the environment.

use super::AGENT_TYPE;
use crate::sandbox::unavailable;
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_egress::sandbox;
use std::path::{Path, PathBuf};

/// The provider credentials a runtime gets from the launcher's environment (a login kept
/// in the launcher's home is not visible in the sandbox).
pub fn provider_keys(runtime: Runtime) -> &'static [&'static str] {
    match runtime {
        Runtime::Claude => &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
        Runtime::Codex | Runtime::Aider => &["OPENAI_API_KEY"],
    }
}

/// The runtime asked for, else the definition's, else Claude Code.
pub fn runtime(asked: Option<&str>, d: &AgentDefinition) -> CoordResult<Runtime> {
    let Some(name) = asked else {
        return Ok(d.runtime.unwrap_or(Runtime::Claude));
    };
    Runtime::parse(name).ok_or_else(|| {
        CoordError::new(
            ErrorCode::InvalidArgument,
            format!("--runtime {name:?}: use claude, codex or aider"),
        )
        .with_field("runtime")
    })
}

/// What coord's MCP server and hooks need inside the sandbox (the key is passed in the
/// environment only, never written to a file another run could read).
pub fn coord_env(agent_id: &str, api_port: u16) -> Vec<(String, String)> {
    vec![
        ("COORDINATION_API_URL".into(), format!("http://127.0.0.1:{api_port}")),
        ("COORD_AGENT_ID".into(), agent_id.into()),
        ("COORD_AGENT_TYPE".into(), AGENT_TYPE.into()),
    ]
}

pub(crate) fn io(what: &str, e: std::io::Error) -> CoordError {
    CoordError::new(ErrorCode::SandboxUnavailable, format!("{what}: {e}"))
}

/// Spec 003's toggle: `COORD_SANDBOX_ENABLED=false` launches outside the sandbox.
/// Unset or true: sandboxed; anything unreadable is refused, not guessed.
pub fn sandbox_enabled() -> CoordResult<bool> {
    match std::env::var("COORD_SANDBOX_ENABLED") {
        Err(_) => Ok(true),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(CoordError::new(
                ErrorCode::InvalidArgument,
                format!("COORD_SANDBOX_ENABLED={v:?}: use true or false"),
            )),
        },
    }
}

/// `url`'s host and port when it is plain HTTP on this machine's loopback.
pub(super) fn loopback_http(url: &str) -> Option<(String, u16, String)> {
    let u = url::Url::parse(url).ok()?;
    if u.scheme() != "http" {
        return None;
    }
    let host = u.host_str()?.trim_matches(['[', ']']).to_string();
    let ip: std::net::IpAddr = if host.eq_ignore_ascii_case("localhost") {
        std::net::Ipv4Addr::LOCALHOST.into()
    } else {
        host.parse().ok()?
    };
    ip.is_loopback()
        .then(|| (ip.to_string(), u.port().unwrap_or(80), u.path().to_string()))
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The runtime's program (`given`, else on the PATH): an executable file of a version
/// coord's plans were verified on.
pub async fn program_of(runtime: Runtime, given: Option<PathBuf>) -> CoordResult<PathBuf> {
    let program = match given {
        Some(p) => p,
        None => find_program(runtime.name()).ok_or_else(|| {
            CoordError::new(
                ErrorCode::InvalidArgument,
                format!("{} is not on the PATH: install it, or give --program", runtime.name()),
            )
            .with_field("program")
        })?,
    };
    let program = std::fs::canonicalize(&program).unwrap_or(program);
    let executable = std::fs::metadata(&program)
        .is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0);
    if !executable {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            format!("--program {}: not an executable file", program.display()),
        )
        .with_field("program"));
    }
    check_version(runtime, &program).await?;
    Ok(program)
}

/// bubblewrap, installed and able to make namespaces here.
pub async fn bwrap_ready() -> CoordResult<PathBuf> {
    let bwrap = sandbox::find_bwrap().ok_or_else(|| {
        unavailable(
            "bubblewrap (bwrap) is not installed: coord launches agents only inside the sandbox \
             (apt-get install bubblewrap)"
                .into(),
        )
    })?;
    if let Some(why) = sandbox::unavailable(&bwrap).await {
        return Err(unavailable(why));
    }
    Ok(bwrap)
}

/// The runtime's own provider key, when the environment has one.
pub fn has_provider_key(runtime: Runtime) -> bool {
    provider_keys(runtime)
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
}

/// Refuses a runtime older than the one its plans were verified on (or one whose version
/// cannot be read): an older Claude Code silently ignores confinement settings.
async fn check_version(runtime: Runtime, program: &Path) -> CoordResult<()> {
    if runtime.min_version().is_none() {
        return Ok(());
    }
    let run = tokio::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(std::time::Duration::from_secs(30), run).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(Err(e)) => return Err(io(&format!("cannot run {} --version", program.display()), e)),
        Err(_) => String::new(),
    };
    runtime
        .check_version(&out)
        .map_err(|m| CoordError::new(ErrorCode::InvalidArgument, m).with_field("program"))
}

/// The directory a runtime is installed in: its nearest `node_modules` ancestor (an npm
/// package finds its platform binary beside it), else the Python virtual environment its
/// script belongs to (Aider: its modules are in the environment's `lib/`, beside `bin/`),
/// else its own directory.
pub(super) fn install_dir(program: &Path) -> PathBuf {
    let venv = || {
        let bin = program.parent()?;
        let root = bin.parent()?;
        (bin.file_name()? == "bin" && root.join("pyvenv.cfg").is_file()).then_some(root)
    };
    program
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .or_else(venv)
        .or_else(|| program.parent())
        .unwrap_or(program)
        .to_path_buf()
}
