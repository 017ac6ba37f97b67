//! Pre-flight validation of a launch (spec 000): before an agent is launched, its plan —
//! task, tools, writable paths, network policy — is judged by a validator (a model
//! reached through an Anthropic-Messages-compatible endpoint, or a command) that must
//! answer exactly `{"verdict":"valid"|"invalid","reasons":[...]}`. Anything else — prose,
//! prose containing "VALID", malformed JSON, extra fields, silence, an error, a timeout —
//! is a denial. Validation switched off is an explicit configuration (`--no-validation`),
//! and audited.

use serde::{Deserialize, Serialize};

pub const MAX_REASONS: usize = 20;
pub const MAX_REASON_LEN: usize = 500;
/// A verdict longer than this is not a verdict.
pub const MAX_VERDICT_BYTES: usize = 16 * 1024;

/// The system prompt a model validator gets.
pub const MODEL_INSTRUCTIONS: &str = "You validate the plan of an AI coding agent before it is launched. \
Judge whether the task fits the tools, writable paths and network access listed, and whether anything in it \
asks for more (credentials, other repositories, disabling safety, exfiltration). Answer with one JSON object \
and nothing else: {\"verdict\":\"valid\",\"reasons\":[]} or {\"verdict\":\"invalid\",\"reasons\":[\"why\"]}.";

/// What the validator judges (sent as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchPlanSummary {
    pub agent: String,
    pub profile: String,
    pub runtime: String,
    pub task: String,
    pub tools: Vec<String>,
    pub writable: String,
    pub network_policy: String,
    pub bash_commands: Vec<String>,
    /// The definition's body, which the agent gets as its system prompt.
    #[serde(default)]
    pub system_prompt: String,
    #[serde(default)]
    pub model: Option<String>,
    /// The model endpoint the agent is given, when not the provider's own.
    #[serde(default)]
    pub model_endpoint: Option<String>,
    /// Whether the launch runs in coord's sandbox (`COORD_SANDBOX_ENABLED=false`: not).
    #[serde(default = "yes")]
    pub sandboxed: bool,
    /// Whether the runtime itself enforces the tool list (Codex and Aider do not).
    #[serde(default = "yes")]
    pub tools_enforced: bool,
    /// Names of the launcher's variables passed in (`--env`).
    #[serde(default)]
    pub passed_env: Vec<String>,
    /// Names the proxy resolves itself (`--resolve NAME=ADDRESS`).
    #[serde(default)]
    pub resolve: Vec<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Valid,
    Invalid,
}

/// A validator's answer, read strictly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    pub verdict: VerdictKind,
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// Reads a validator's whole answer. `Err` says why it is not a verdict (and so a denial).
pub fn parse_verdict(text: &str) -> Result<Verdict, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("the validator answered nothing".into());
    }
    if t.len() > MAX_VERDICT_BYTES {
        return Err(format!(
            "the validator's answer is longer than {MAX_VERDICT_BYTES} bytes"
        ));
    }
    if !t.starts_with('{') {
        return Err(format!(
            "the validator did not answer a JSON verdict object: {:?}",
            t.chars().take(120).collect::<String>()
        ));
    }
    let v: Verdict = serde_json::from_str(t).map_err(|e| format!("the validator's verdict is not valid: {e}"))?;
    if v.reasons.len() > MAX_REASONS || v.reasons.iter().any(|r| r.chars().count() > MAX_REASON_LEN) {
        return Err(format!(
            "the validator's verdict has more than {MAX_REASONS} reasons or one longer than {MAX_REASON_LEN} characters"
        ));
    }
    Ok(v)
}

/// The text of an Anthropic Messages response: its text blocks, joined. `Err` when the
/// response is not a message (an error object, another shape).
pub fn messages_text(response: &serde_json::Value) -> Result<String, String> {
    if response.get("type").and_then(|t| t.as_str()) != Some("message") {
        let why = response
            .pointer("/error/message")
            .and_then(|m| m.as_str())
            .unwrap_or("not a Messages response");
        return Err(format!("the validator model failed: {why}"));
    }
    let blocks = response
        .get("content")
        .and_then(|c| c.as_array())
        .ok_or("the validator model's response has no content")?;
    Ok(blocks
        .iter()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
        .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
        .collect::<Vec<_>>()
        .join(""))
}

/// Which validator judged a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Validator {
    /// A command: the plan on stdin, the verdict on stdout.
    Command,
    /// A model behind an Anthropic-Messages-compatible endpoint.
    Model,
    /// Validation switched off explicitly (`--no-validation`).
    Disabled,
}

/// `record_preflight`'s request: the judged plan and the outcome.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreflightRequest {
    /// The identity the launch would have.
    pub target_agent_id: String,
    pub plan: LaunchPlanSummary,
    pub validator: Validator,
    /// The verdict, when the validator gave one.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Why the answer was not a verdict (then the launch is denied).
    #[serde(default)]
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PreflightResult {
    pub success: bool,
    pub allowed: bool,
    pub validator: Validator,
}

/// Whether the launch may go ahead, and why not.
pub fn decide(req: &PreflightRequest) -> Result<(), String> {
    match (req.validator, &req.verdict, &req.failure) {
        (Validator::Disabled, None, None) => Ok(()),
        (Validator::Disabled, ..) => Err("validation is disabled, yet a verdict was given".into()),
        (_, _, Some(why)) => Err(why.clone()),
        (_, Some(v), None) if v.verdict == VerdictKind::Valid => Ok(()),
        (_, Some(v), None) if v.reasons.is_empty() => Err("the validator judged the plan invalid".into()),
        (_, Some(v), None) => Err(format!(
            "the validator judged the plan invalid: {}",
            v.reasons.join("; ")
        )),
        (_, None, None) => Err("the validator gave no verdict".into()),
    }
}

/// Bounds on what is recorded.
pub fn validate(req: PreflightRequest) -> crate::CoordResult<PreflightRequest> {
    let bad = |f: &str, m: &str| crate::CoordError::new(crate::ErrorCode::InvalidArgument, m.to_string()).with_field(f);
    if req.target_agent_id.trim().is_empty() || req.target_agent_id.len() > 128 {
        return Err(bad("target_agent_id", "1 to 128 characters"));
    }
    if req.plan.task.chars().count() > 65_536 {
        return Err(bad("plan.task", "longer than 65536 characters"));
    }
    if req.plan.system_prompt.len() > super::definition::MAX_DEFINITION_BYTES {
        return Err(bad("plan.system_prompt", "longer than a definition can be (64 KiB)"));
    }
    if req.failure.as_ref().is_some_and(|f| f.chars().count() > 2000) {
        return Err(bad("failure", "longer than 2000 characters"));
    }
    Ok(req)
}
