//! Pre-flight validation: the plan a validator judges, and asking it.

use super::programs::provider_keys;
use coord_domain::agents::preflight::{self, LaunchPlanSummary, Validator, Verdict};
use coord_domain::agents::{AgentDefinition, Runtime};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::json;

/// Which validator judges a launch's plan: exactly one of a command, a model endpoint,
/// or validation switched off (said, and audited).
#[derive(Debug, Clone)]
pub struct Validation {
    pub validator_command: Option<String>,
    pub validator_url: Option<String>,
    pub validator_model: String,
    pub validator_timeout: std::time::Duration,
    pub no_validation: bool,
}

impl Default for Validation {
    /// Unconfigured: a launch with it is refused until one is given.
    fn default() -> Self {
        Validation {
            validator_command: None,
            validator_url: None,
            validator_model: "claude-sonnet-4-5".into(),
            validator_timeout: std::time::Duration::from_secs(60),
            no_validation: false,
        }
    }
}

impl Validation {
    /// A spawned agent's: `spawn_agent` judged it before registering it.
    pub fn already_judged() -> Self {
        Validation {
            validator_command: None,
            validator_url: None,
            validator_model: String::new(),
            validator_timeout: std::time::Duration::from_secs(60),
            no_validation: true,
        }
    }

    /// A coordinator's (`spawn_agent`): COORD_VALIDATOR_COMMAND, COORD_VALIDATOR_URL
    /// (with COORD_VALIDATOR_MODEL, COORD_VALIDATOR_TIMEOUT) or COORD_NO_VALIDATION=1.
    pub fn from_env() -> Result<Self, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let no_validation = match var("COORD_NO_VALIDATION").as_deref() {
            None | Some("0" | "false" | "no") => false,
            Some("1" | "true" | "yes") => true,
            Some(other) => return Err(format!("COORD_NO_VALIDATION={other:?}: give 1 or 0")),
        };
        let validator_timeout = match var("COORD_VALIDATOR_TIMEOUT") {
            None => std::time::Duration::from_secs(60),
            Some(t) => humantime::parse_duration(&t).map_err(|e| format!("COORD_VALIDATOR_TIMEOUT={t:?}: {e}"))?,
        };
        let v = Validation {
            validator_command: var("COORD_VALIDATOR_COMMAND"),
            validator_url: var("COORD_VALIDATOR_URL"),
            validator_model: var("COORD_VALIDATOR_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into()),
            validator_timeout,
            no_validation,
        };
        let given = [
            v.validator_command.is_some(),
            v.validator_url.is_some(),
            v.no_validation,
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err("give one of COORD_VALIDATOR_COMMAND, COORD_VALIDATOR_URL and COORD_NO_VALIDATION=1".into());
        }
        Ok(v)
    }
}

/// The plan a validator judges.
#[allow(clippy::too_many_arguments)]
pub fn summary(
    d: &AgentDefinition,
    runtime: Runtime,
    task: &str,
    network_policy: String,
    model_url: Option<String>,
    sandboxed: bool,
    env: &[String],
    resolve: &[String],
) -> LaunchPlanSummary {
    LaunchPlanSummary {
        agent: d.name.clone(),
        profile: d.profile.to_string(),
        runtime: runtime.name().into(),
        task: task.to_string(),
        tools: d.tools.clone(),
        writable: format!("{:?}", d.profile.writable()).to_lowercase(),
        network_policy,
        bash_commands: d.profile.bash_prefixes().iter().map(|p| p.to_string()).collect(),
        system_prompt: d.prompt.clone(),
        model: d.model.clone(),
        model_endpoint: model_url,
        sandboxed,
        tools_enforced: d.tools_enforced_by(runtime),
        passed_env: env
            .iter()
            .map(|e| e.split_once('=').map_or(e.as_str(), |(k, _)| k).to_string())
            .chain(provider_keys(runtime).iter().map(|k| k.to_string()))
            .collect(),
        resolve: resolve
            .iter()
            .map(|r| r.split_once('=').map_or(r.as_str(), |(k, _)| k).to_string())
            .collect(),
    }
}

/// Asks the configured validator about `plan`: which validator, its verdict, or why its
/// answer was not one (a denial). Unconfigured validation is refused: switching it off
/// must be said (`--no-validation`).
pub async fn judge(
    v: &Validation,
    plan: &LaunchPlanSummary,
) -> CoordResult<(Validator, Option<Verdict>, Option<String>)> {
    let plan_json = serde_json::to_string(plan).unwrap_or_default();
    let answer = if v.no_validation {
        eprintln!(
            "coord agent: WARNING: pre-flight validation is OFF for this launch (--no-validation / COORD_NO_VALIDATION=1); this is recorded in the audit trail"
        );
        return Ok((Validator::Disabled, None, None));
    } else if let Some(cmd) = &v.validator_command {
        (
            Validator::Command,
            run_validator_command(cmd, &plan_json, v.validator_timeout).await,
        )
    } else if let Some(url) = &v.validator_url {
        let key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.is_empty());
        let client = coord_remote::MessagesClient::new(url, key, v.validator_timeout)?;
        let body = json!({
            "model": v.validator_model,
            "max_tokens": 512,
            "system": preflight::MODEL_INSTRUCTIONS,
            "messages": [{"role": "user", "content": plan_json}],
        });
        let text = client.create(&body).await.and_then(|r| preflight::messages_text(&r));
        (Validator::Model, text)
    } else {
        return Err(no_validator());
    };
    Ok(match answer {
        (kind, Ok(text)) => match preflight::parse_verdict(&text) {
            Ok(verdict) => (kind, Some(verdict), None),
            Err(why) => (kind, None, Some(why)),
        },
        (kind, Err(why)) => (kind, None, Some(why)),
    })
}

pub(super) fn no_validator() -> CoordError {
    CoordError::new(
        ErrorCode::InvalidArgument,
        "pre-flight validation is not configured: give --validator-command or --validator-url \
         (COORD_VALIDATOR_COMMAND / COORD_VALIDATOR_URL), or --no-validation (COORD_NO_VALIDATION=1) to launch without it (audited)",
    )
    .with_field("validator")
}

/// Runs the validator command with the plan on stdin; its whole stdout, or why there is none.
async fn run_validator_command(cmd: &str, plan: &str, timeout: std::time::Duration) -> Result<String, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut child = tokio::process::Command::new("/bin/sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("the validator command cannot start: {e}"))?;
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take().ok_or("the validator command has no stdout")?;
    let plan = plan.to_string();
    let talk = async move {
        if let Some(mut i) = stdin.take() {
            // A validator that does not read its input is its business.
            let _ = i.write_all(plan.as_bytes()).await;
        }
        let mut out = Vec::new();
        (&mut stdout)
            .take(preflight::MAX_VERDICT_BYTES as u64 + 1)
            .read_to_end(&mut out)
            .await
            .map_err(|e| format!("cannot read the validator's answer: {e}"))?;
        let status = child
            .wait()
            .await
            .map_err(|e| format!("the validator command failed: {e}"))?;
        Ok::<_, String>((status, out))
    };
    match tokio::time::timeout(timeout, talk).await {
        Err(_) => Err(format!(
            "the validator command did not answer within {}",
            humantime::format_duration(timeout)
        )),
        Ok(Err(why)) => Err(why),
        Ok(Ok((status, _))) if !status.success() => Err(format!("the validator command failed ({status})")),
        Ok(Ok((_, out))) => String::from_utf8(out).map_err(|_| "the validator's answer is not UTF-8".to_string()),
    }
}
