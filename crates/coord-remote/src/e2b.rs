//! E2B sandboxes, the `e2b` verification executor's service: a sandbox is created
//! from the policy's template on the control plane (`POST /sandboxes`, `X-API-Key`),
//! the command started in it through its envd process service (Connect RPC with JSON:
//! `process.Process/Start`, a server stream of start/data/end events), its output and
//! exit code collected within the timeout, and the sandbox deleted whatever happened.
//! There is no Rust SDK; the two endpoints and the Connect envelope (one flags byte, a
//! four-byte big-endian length, the message) are small enough to write here.

use base64::Engine as _;
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub const DEFAULT_API_URL: &str = "https://api.e2b.app";
/// The port envd listens on inside every sandbox.
pub const ENVD_PORT: u16 = 49983;
/// Connect's end-of-stream flag.
const END_STREAM: u8 = 0x02;
/// A larger message from the sandbox is refused (output arrives in small chunks).
const MAX_ENVELOPE: usize = 16 * 1024 * 1024;

pub struct E2b {
    api: reqwest::Url,
    /// Overrides `https://sandbox.<domain>` (tests, self-hosted E2B).
    envd: Option<reqwest::Url>,
    key: String,
    http: reqwest::Client,
}

/// A command to run in a sandbox.
pub struct Job<'a> {
    pub template: &'a str,
    pub command: &'a [String],
    pub envs: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, String>,
    pub timeout: Duration,
}

/// What became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Exited {
        code: i32,
        output: String,
    },
    TimedOut {
        output: String,
    },
    /// The service did not run it (unreachable, refused, a broken stream): why.
    Failed {
        why: String,
        output: String,
    },
}

fn url(name: &str, value: &str) -> CoordResult<reqwest::Url> {
    let u = reqwest::Url::parse(&format!("{}/", value.trim().trim_end_matches('/')))
        .map_err(|_| CoordError::field(ErrorCode::InvalidArgument, name, format!("{value:?} is not a URL")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            name,
            format!("{value:?} must be an http:// or https:// URL"),
        ));
    }
    Ok(u)
}

/// The first whole Connect envelope in `buf`, drained from it: (flags, message).
fn next_envelope(buf: &mut Vec<u8>) -> Option<(u8, Vec<u8>)> {
    if buf.len() < 5 {
        return None;
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if buf.len() < 5 + len {
        return None;
    }
    let flags = buf[0];
    let message = buf[5..5 + len].to_vec();
    buf.drain(..5 + len);
    Some((flags, message))
}

fn envelope(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).unwrap_or_default();
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(0);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Keeps the last `cap` bytes of the output.
fn keep(out: &mut Vec<u8>, more: &[u8], cap: usize) {
    out.extend_from_slice(more);
    if out.len() > cap {
        out.drain(..out.len() - cap);
    }
}

impl E2b {
    pub fn new(api: &str, envd: Option<&str>, key: &str) -> CoordResult<E2b> {
        if key.trim().is_empty() {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "E2B_API_KEY",
                "the E2B API key is empty",
            ));
        }
        let api = url("E2B_API_URL", api)?;
        let envd = envd.map(|e| url("E2B_ENVD_URL", e)).transpose()?;
        super::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CoordError::unavailable(format!("cannot build the E2B client: {e}")))?;
        Ok(E2b {
            api,
            envd,
            key: key.trim().to_string(),
            http,
        })
    }

    /// From `E2B_API_KEY`, `E2B_API_URL` and `E2B_ENVD_URL`; None without a key.
    pub fn from_env() -> CoordResult<Option<E2b>> {
        let Some(key) = std::env::var("E2B_API_KEY").ok().filter(|k| !k.trim().is_empty()) else {
            return Ok(None);
        };
        let api = std::env::var("E2B_API_URL").unwrap_or_else(|_| DEFAULT_API_URL.into());
        let envd = std::env::var("E2B_ENVD_URL").ok().filter(|e| !e.trim().is_empty());
        E2b::new(&api, envd.as_deref(), &key).map(Some)
    }

    async fn delete(&self, id: &str) {
        let Ok(u) = self.api.join(&format!("sandboxes/{id}")) else {
            return;
        };
        let done = self
            .http
            .delete(u)
            .header("x-api-key", &self.key)
            .timeout(Duration::from_secs(15))
            .send()
            .await;
        if let Err(e) = done {
            tracing::warn!(sandbox = id, error = %e, "could not delete an E2B sandbox (it ends at its own timeout)");
        }
    }

    /// Runs the job in a new sandbox, which is deleted afterwards whatever happened.
    pub async fn run(&self, job: &Job<'_>, output_cap: usize) -> Ran {
        let failed = |why: String| Ran::Failed {
            why,
            output: String::new(),
        };
        let Some((program, args)) = job.command.split_first() else {
            return failed("the policy runs no command".into());
        };
        let created = self
            .http
            .post(self.api.join("sandboxes").expect("a relative path joins"))
            .header("x-api-key", &self.key)
            .timeout(Duration::from_secs(60))
            .json(&json!({
                "templateID": job.template,
                // The sandbox outlives the command by a minute at most, even if coord
                // cannot delete it.
                "timeout": job.timeout.as_secs() + 60,
                "secure": true,
                "allow_internet_access": false,
                "metadata": job.metadata,
                "envVars": job.envs,
            }))
            .send()
            .await;
        let sandbox: Value = match created {
            Err(e) => return failed(format!("cannot reach E2B: {e}")),
            Ok(r) if !r.status().is_success() => {
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                return failed(format!(
                    "E2B refused the sandbox ({status}): {}",
                    text.chars().take(300).collect::<String>()
                ));
            }
            Ok(r) => r.json().await.unwrap_or_default(),
        };
        let Some(id) = sandbox["sandboxID"].as_str().map(str::to_string) else {
            return failed("E2B answered no sandboxID".into());
        };
        let ran = self.start(&sandbox, &id, program, args, job, output_cap).await;
        self.delete(&id).await;
        ran
    }

    async fn start(&self, sandbox: &Value, id: &str, program: &str, args: &[String], job: &Job<'_>, cap: usize) -> Ran {
        let base = match self.envd_base(sandbox) {
            Ok(u) => u,
            Err(failed) => return failed,
        };
        let started = Instant::now();
        let mut request = self
            .http
            .post(base.join("process.Process/Start").expect("a relative path joins"))
            .header("content-type", "application/connect+json")
            .header("connect-protocol-version", "1")
            .header("e2b-sandbox-id", id)
            .header("e2b-sandbox-port", ENVD_PORT.to_string())
            .body(envelope(&json!({
                "process": {"cmd": program, "args": args, "envs": job.envs}
            })));
        if let Some(token) = sandbox["envdAccessToken"].as_str() {
            request = request.header("x-access-token", token);
        }
        let deadline = job.timeout;
        let response = match tokio::time::timeout(deadline, request.send()).await {
            Err(_) => return Ran::TimedOut { output: String::new() },
            Ok(Err(e)) => {
                return Ran::Failed {
                    why: format!("cannot reach the sandbox: {e}"),
                    output: String::new(),
                };
            }
            Ok(Ok(r)) if !r.status().is_success() => {
                return Ran::Failed {
                    why: format!("the sandbox refused the command ({})", r.status()),
                    output: String::new(),
                };
            }
            Ok(Ok(r)) => r,
        };
        events(response, started, deadline, cap).await
    }

    /// Where the sandbox's envd answers: the override, else `sandbox.<domain>` of the
    /// domain E2B answered; `Err`: what became of the job when that is unusable.
    fn envd_base(&self, sandbox: &Value) -> Result<reqwest::Url, Ran> {
        match &self.envd {
            Some(u) => Ok(u.clone()),
            None => {
                let domain = sandbox["domain"].as_str().unwrap_or("e2b.app");
                // The sandbox's token goes there: a host name, nothing else.
                let host_like = !domain.is_empty()
                    && domain.len() <= 253
                    && domain
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
                match reqwest::Url::parse(&format!("https://sandbox.{domain}/"))
                    .ok()
                    .filter(|_| host_like)
                {
                    Some(u) => Ok(u),
                    None => Err(Ran::Failed {
                        why: format!("E2B answered an unusable domain {domain:?}"),
                        output: String::new(),
                    }),
                }
            }
        }
    }
}

/// What became of the command, read from the stream of its process's events until its
/// end, within `deadline` of `started`; `cap`: the most output kept (the last bytes).
async fn events(mut response: reqwest::Response, started: Instant, deadline: Duration, cap: usize) -> Ran {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    loop {
        let left = deadline.saturating_sub(started.elapsed());
        let chunk = match tokio::time::timeout(left, response.chunk()).await {
            Err(_) => return Ran::TimedOut { output: text(&out) },
            Ok(Err(e)) => {
                return Ran::Failed {
                    why: format!("the sandbox's stream broke: {e}"),
                    output: text(&out),
                };
            }
            Ok(Ok(None)) => {
                return Ran::Failed {
                    why: "the sandbox's stream ended without the command's end".into(),
                    output: text(&out),
                };
            }
            Ok(Ok(Some(c))) => c,
        };
        buf.extend_from_slice(&chunk);
        if buf.len() >= 5 && u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize > MAX_ENVELOPE {
            return Ran::Failed {
                why: "the sandbox sent a message larger than 16 MiB".into(),
                output: text(&out),
            };
        }
        while let Some((flags, message)) = next_envelope(&mut buf) {
            if let Some(ran) = event(flags, &message, &mut out, cap) {
                return ran;
            }
        }
    }
}

/// One message of the stream: output kept in `out`; `Some` at the end of the command (or
/// of the stream).
fn event(flags: u8, message: &[u8], out: &mut Vec<u8>, cap: usize) -> Option<Ran> {
    let v: Value = serde_json::from_slice(message).unwrap_or_default();
    if flags & END_STREAM != 0 {
        let why = v["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| "the sandbox's stream ended without the command's end".into());
        return Some(Ran::Failed { why, output: text(out) });
    }
    let event = &v["event"];
    for stream in ["stdout", "stderr", "pty"] {
        if let Some(b64) = event["data"][stream].as_str()
            && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64)
        {
            keep(out, &bytes, cap);
        }
    }
    if event["end"].is_object() {
        let end = &event["end"];
        let code = end["exitCode"]
            .as_i64()
            .unwrap_or(if end["exited"] == true { 0 } else { -1 });
        if let Some(e) = end["error"].as_str().filter(|e| !e.is_empty()) {
            keep(out, format!("\n{e}\n").as_bytes(), cap);
        }
        return Some(Ran::Exited {
            code: i32::try_from(code).unwrap_or(-1),
            output: text(out),
        });
    }
    None
}

/// The output kept, as text.
fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[cfg(test)]
mod envelope_tests {
    use super::*;

    #[test]
    fn envelopes_frame_and_split() {
        let mut buf = envelope(&json!({"a": 1}));
        buf.extend(envelope(&json!({"b": 2})));
        buf.truncate(buf.len() - 1);
        let (flags, first) = next_envelope(&mut buf).unwrap();
        assert_eq!((flags, first), (0, br#"{"a":1}"#.to_vec()));
        assert_eq!(next_envelope(&mut buf), None, "a partial envelope waits");
        buf.push(b'}');
        assert_eq!(next_envelope(&mut buf).unwrap().1, br#"{"b":2}"#.to_vec());
        let mut out = Vec::new();
        keep(&mut out, b"abcdef", 4);
        assert_eq!(out, b"cdef");
    }
}
