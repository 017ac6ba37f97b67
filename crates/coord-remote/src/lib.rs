//! Remote mode: [`RemoteClient`] implements [`Coordination`] by calling a `coord serve`
//! over HTTP, so every door (`coord` subcommands, `coord mcp`) works unchanged for cloud
//! agents that cannot reach the database. Answers and errors travel in the same wire
//! shapes the local service produces, and are decoded back into the same types.
//!
//! Each operation goes to its first HTTP binding, the identity in POST bodies and
//! headers; HTTP errors map back to the same `CoordError` codes, and connection failures
//! to `database_unavailable`. Absolute paths in an operation's path fields are sent
//! repository-relative. `RemoteClient::unix` talks to the repository coordinator's Unix
//! socket (no key, no certificate store); `not_delivered` marks a send that made no
//! connection, safe to repeat. `Webhook` posts to the security channel.
//!
//! - `github`: `GithubApi` (bearer token, API version pinned, rate limits read from
//!   `retry-after` and `x-ratelimit-*`, server errors and timeouts marked ambiguous);
//!   `send_due` and `spawn`, the outbox sender of `coord serve` and `coord github send`;
//!   `refresh_issues`, the hourly read-back of quiet issues holding locks or a task,
//!   reconciled as deliveries.
//! - `e2b`: E2B's control plane (create, delete) and envd's `process.Process/Start` as a
//!   Connect JSON stream, deadline-bounded.

use async_trait::async_trait;
use coord_domain::access::Principal;
use coord_domain::messages::HOLDERS_PREFIX;
use coord_domain::path::relative_keeping_dir;
use coord_domain::ports::{
    AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::{Caller, CoordError, CoordResult, Empty, ErrorCode};
use coord_service::ops::ports::{AllocatePorts, PortsStatus, ReleasePorts};
use coord_service::{Coordination, Input, Method, OpEntry, Ports, call};
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::time::Duration;

/// Calls a coordination API at `base_url` with an optional API key.
#[derive(Clone)]
pub struct RemoteClient {
    base: String,
    key: Option<String>,
    http: reqwest::Client,
    /// Identity parts nobody configured (this process's defaults): sent as defaults, so
    /// a key bound to an identity is not refused for them.
    default_id: Unconfigured,
    default_type: Unconfigured,
    local_root: Option<String>,
    /// This process runs inside an agent's session: every request says so
    /// (`X-Coord-Session`), and the server takes it as the weaker credential.
    session: bool,
}

/// The header a client inside an agent's session sends: the server downgrades its
/// credential to `Session` (never upgrades anything).
pub const SESSION_HEADER: &str = "x-coord-session";

/// Which values of an identity part were not configured by the user.
#[derive(Clone, Debug, PartialEq)]
pub enum Unconfigured {
    /// The part was configured: every value is a claim.
    Nothing,
    /// This value is the process's own default.
    Value(String),
    /// Every value is derived, none configured (e.g. an MCP client's self-reported name).
    Anything,
}

impl Unconfigured {
    fn covers(&self, value: &str) -> bool {
        match self {
            Unconfigured::Nothing => false,
            Unconfigured::Value(v) => v == value,
            Unconfigured::Anything => true,
        }
    }
}

pub mod e2b;
pub mod github;

pub fn install_crypto_provider() {
    // reqwest is built without a default provider; ring is the one linked in. A second
    // install (another client in this process) is harmless and reports an error we ignore.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn unreachable(base: &str, e: impl std::fmt::Display) -> CoordError {
    CoordError::unavailable(format!("cannot reach the coordination API at {base}: {e}"))
}

/// The detail a send error carries when the connection was never made: the request did
/// not leave this process, so sending it again cannot apply it twice.
pub const NOT_DELIVERED: &str = "not_delivered";

/// A request that failed to send: [`NOT_DELIVERED`] when no connection was made.
fn send_failed(base: &str, e: reqwest::Error) -> CoordError {
    let connect = e.is_connect();
    let mut error = unreachable(base, e);
    if connect {
        error.details.insert(NOT_DELIVERED.into(), Value::Bool(true));
    }
    error
}

/// Whether `e` says its request never reached the server (see [`NOT_DELIVERED`]).
pub fn not_delivered(e: &CoordError) -> bool {
    e.details.get(NOT_DELIVERED) == Some(&Value::Bool(true))
}

/// Header values may carry any non-control bytes; identities are validated server-side.
fn header(value: &str) -> CoordResult<HeaderValue> {
    HeaderValue::from_bytes(value.as_bytes()).map_err(|_| {
        CoordError::new(
            ErrorCode::InvalidIdentity,
            format!("{value:?} cannot be sent in an HTTP header"),
        )
    })
}

impl RemoteClient {
    pub fn new(base_url: &str, api_key: Option<String>) -> CoordResult<RemoteClient> {
        let base = base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base).ok();
        let usable = parsed
            .as_ref()
            .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()));
        if !usable {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "COORDINATION_API_URL",
                format!("the coordination API URL {base_url:?} must be an http:// or https:// URL with a host"),
            ));
        }
        install_crypto_provider();
        // A coordinator on loopback is never reached through a proxy: a proxy would
        // connect to its own loopback. (Inside `coord sandbox`, the proxy variables point
        // at the egress proxy, and the coordinator is a relay on loopback.)
        let loopback = parsed.as_ref().and_then(|u| u.host_str()).is_some_and(|h| {
            h.eq_ignore_ascii_case("localhost")
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|a| a.is_loopback())
        });
        let builder = if loopback {
            reqwest::Client::builder().no_proxy()
        } else {
            reqwest::Client::builder()
        };
        let http = builder
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| unreachable(&base, e))?;
        Ok(RemoteClient {
            base,
            key: api_key.filter(|k| !k.trim().is_empty()),
            http,
            default_id: Unconfigured::Nothing,
            default_type: Unconfigured::Nothing,
            local_root: None,
            session: false,
        })
    }

    /// A client of the per-repository coordinator on the Unix socket `socket` (`coord
    /// serve --socket`): no key, as the server admits only this user's processes, which
    /// could open its database themselves.
    pub fn unix(socket: &std::path::Path) -> CoordResult<RemoteClient> {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .unix_socket(socket)
            .no_proxy()
            // Plain HTTP on the socket: no certificate store to load (reading the
            // system's roots was a sixth of a hook's process).
            .tls_certs_only(Vec::new())
            // No overall limit: operations that wait (delegate_task, get_agent_output)
            // take minutes by design, and an embedded coordinator has none either.
            .connect_timeout(Duration::from_secs(10))
            // A connection per request (a Unix connect costs microseconds): a request is
            // then never written into a kept-alive connection whose server has died or
            // stopped, where its fate would be unknown; a dead server shows as a refused
            // connect, which `not_delivered` marks safe to send again.
            .pool_max_idle_per_host(0)
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| unreachable(&socket.display().to_string(), e))?;
        Ok(RemoteClient {
            // The socket is the address; the URL's host is only the Host header.
            base: "http://localhost".into(),
            key: None,
            http,
            default_id: Unconfigured::Nothing,
            default_type: Unconfigured::Nothing,
            local_root: None,
            session: false,
        })
    }

    /// This machine's checkout of the repository. The server judges paths against its
    /// own checkout, which lives elsewhere; absolute paths inside `root` (what agents such
    /// as Claude Code send) are therefore made repository-relative before they leave.
    pub fn with_local_root(mut self, root: impl Into<String>) -> Self {
        self.local_root = Some(root.into());
        self
    }

    /// Marks every request as made from inside an agent's session.
    pub fn in_agent_session(mut self, yes: bool) -> Self {
        self.session = yes;
        self
    }

    /// An absolute path inside the checkout made repo-relative, keeping what gives it
    /// meaning: a trailing `/` (a directory lock) and a `holders:` prefix (a message to
    /// the holders of a path). Paths outside the checkout go as they are, for the server
    /// to refuse.
    fn localize(&self, raw: String) -> String {
        let Some(root) = &self.local_root else { return raw };
        let (prefix, path) = match raw.strip_prefix(HOLDERS_PREFIX) {
            Some(rest) => (HOLDERS_PREFIX, rest),
            None => ("", raw.as_str()),
        };
        if !std::path::Path::new(path).is_absolute() {
            return raw;
        }
        match relative_keeping_dir(path, root) {
            Ok(relative) => format!("{prefix}{relative}"),
            Err(_) => raw,
        }
    }

    /// Makes the path fields of `op`'s request repo-relative (see [`Self::with_local_root`]).
    fn localize_request(&self, op: &OpEntry, request: &mut Value) {
        let Value::Object(map) = request else { return };
        for field in op.path_fields {
            match map.get_mut(*field) {
                Some(Value::String(p)) => *p = self.localize(std::mem::take(p)),
                Some(Value::Array(items)) => {
                    for item in items {
                        if let Value::String(p) = item {
                            *p = self.localize(std::mem::take(p));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Marks identity parts as defaults rather than claims: they are sent as
    /// `X-Agent-Default-Id` (`-Type`), which the server uses only when the API key is
    /// not bound to an identity (a bound key then acts as its binding, not 403).
    pub fn with_unconfigured_identity(mut self, agent_id: Unconfigured, agent_type: Unconfigured) -> Self {
        self.default_id = agent_id;
        self.default_type = agent_type;
        self
    }

    /// Splits the caller into explicit claims and defaults.
    fn identity(&self, caller: &Caller) -> (Option<String>, Option<String>, HeaderMap) {
        let mut defaults = HeaderMap::new();
        let mut claim = |value: &str, default: &Unconfigured, header_name: &'static str| -> Option<String> {
            if default.covers(value) {
                if let Ok(v) = header(value) {
                    defaults.insert(header_name, v);
                }
                None
            } else {
                Some(value.to_string())
            }
        };
        let id = claim(&caller.agent_id, &self.default_id, "x-agent-default-id");
        let ty = claim(&caller.agent_type, &self.default_type, "x-agent-default-type");
        (id, ty, defaults)
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn headers(&self, caller: Option<&Caller>) -> CoordResult<HeaderMap> {
        let mut h = HeaderMap::new();
        if let Some(key) = &self.key {
            h.insert("x-api-key", header(key)?);
        }
        if self.session {
            h.insert(SESSION_HEADER, reqwest::header::HeaderValue::from_static("1"));
        }
        if let Some(who) = caller {
            let (id, ty, defaults) = self.identity(who);
            h.extend(defaults);
            if let Some(id) = id {
                h.insert("x-agent-id", header(&id)?);
            }
            if let Some(ty) = ty {
                h.insert("x-agent-type", header(&ty)?);
            }
        }
        Ok(h)
    }

    async fn decode<T: DeserializeOwned>(&self, r: reqwest::Response) -> CoordResult<T> {
        let status = r.status();
        let body = r.bytes().await.map_err(|e| unreachable(&self.base, e))?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| {
                tracing::warn!(error = %e, "unexpected answer from the coordination API");
                CoordError::unavailable(format!(
                    "the coordination API at {} gave an answer this coord cannot read ({e}); are the versions compatible?",
                    self.base
                ))
            });
        }
        match serde_json::from_slice::<CoordError>(&body) {
            // Only this client says a request was not delivered; a server's answer never does.
            Ok(mut e) => {
                e.details.remove(NOT_DELIVERED);
                Err(e)
            }
            Err(_) => Err(CoordError::unavailable(format!(
                "the coordination API at {} answered HTTP {status} without an error body",
                self.base
            ))),
        }
    }

    /// POSTs carry the identity in the body: JSON holds any identity the service may
    /// judge, where a header cannot carry control characters.
    async fn post<Res: DeserializeOwned>(&self, caller: &Caller, path: &str, mut value: Value) -> CoordResult<Res> {
        let headers = match &mut value {
            Value::Object(map) => {
                let (id, ty, defaults) = self.identity(caller);
                if let Some(id) = id {
                    map.insert("agent_id".into(), id.into());
                }
                if let Some(ty) = ty {
                    map.insert("agent_type".into(), ty.into());
                }
                let mut headers = self.headers(None)?;
                headers.extend(defaults);
                headers
            }
            // A body that is not an object cannot hold them: the headers do (the server
            // then refuses the body, and audits the refusal under the right name).
            _ => self.headers(Some(caller))?,
        };
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .headers(headers)
            .json(&value)
            .send()
            .await
            .map_err(|e| send_failed(&self.base, e))?;
        self.decode(r).await
    }

    async fn get<Q: Serialize, Res: DeserializeOwned>(
        &self,
        caller: Option<&Caller>,
        path: &str,
        query: &Q,
    ) -> CoordResult<Res> {
        let query = serde_urlencoded::to_string(query)
            .map_err(|e| CoordError::new(ErrorCode::InvalidArgument, format!("cannot encode the query: {e}")))?;
        let url = if query.is_empty() {
            format!("{}{path}", self.base)
        } else {
            format!("{}{path}?{query}", self.base)
        };
        let r = self
            .http
            .get(url)
            .headers(self.headers(caller)?)
            .send()
            .await
            .map_err(|e| send_failed(&self.base, e))?;
        self.decode(r).await
    }
}

/// Percent-encodes one path segment (task ids are UUIDs, but input is input).
fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The query string of a GET request: the request's fields (null ones left out).
fn query_of(request: &Value) -> CoordResult<Map<String, Value>> {
    match request {
        Value::Object(map) => Ok(map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()),
        _ => Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "the request must be a JSON object",
        )),
    }
}

/// `path` with its one parameter (`{name}` or `{*name}`) filled in from the request.
fn fill_path(path: &str, name: &str, request: &Value) -> CoordResult<String> {
    let value = request
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| CoordError::field(ErrorCode::InvalidArgument, name, format!("{name} must be a string")))?;
    if path.contains(&format!("{{*{name}}}")) {
        // The rest of the path: keep its slashes, encode each segment.
        let encoded: Vec<String> = value.split('/').map(segment).collect();
        Ok(path.replace(&format!("{{*{name}}}"), &encoded.join("/")))
    } else {
        Ok(path.replace(&format!("{{{name}}}"), &segment(value)))
    }
}

#[async_trait]
impl Coordination for RemoteClient {
    /// Sends the operation to its first HTTP binding: POST bodies carry the identity,
    /// GET requests carry it in headers.
    async fn invoke(&self, op: &'static OpEntry, who: &Principal, request: CoordResult<Value>) -> CoordResult<Value> {
        let mut request = request?;
        self.localize_request(op, &mut request);
        let Some(binding) = op.http.first() else {
            return Err(CoordError::new(
                ErrorCode::UnknownOperation,
                format!("{} cannot be called over HTTP: {}", op.name, op.not_http),
            ));
        };
        let caller = &who.caller;
        // A caller inside an agent's session says so on the request (the server takes
        // its credential down).
        let marked;
        let this = if who.credential == coord_domain::access::Credential::Session && !self.session {
            marked = self.clone().in_agent_session(true);
            &marked
        } else {
            self
        };
        this.send(binding, caller, request).await
    }
}

impl RemoteClient {
    async fn send(&self, binding: &coord_service::Http, caller: &Caller, request: Value) -> CoordResult<Value> {
        match (binding.method, binding.input) {
            (Method::Post, _) => self.post(caller, binding.path, request).await,
            (Method::Get, Input::Query | Input::Body) => {
                self.get(Some(caller), binding.path, &query_of(&request)?).await
            }
            // The rest of the request in the query: the server refuses what it does not know.
            (Method::Get, Input::Path(name)) => {
                let path = fill_path(binding.path, name, &request)?;
                let mut rest = query_of(&request)?;
                rest.remove(name);
                self.get(Some(caller), &path, &rest).await
            }
            (Method::Get, Input::None) => self.get(Some(caller), binding.path, &query_of(&request)?).await,
        }
    }
}

#[async_trait]
impl Ports for RemoteClient {
    async fn allocate_ports(&self, caller: &Caller, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult> {
        call::<AllocatePorts, _>(self, &Principal::local(caller.clone()), req).await
    }

    async fn release_ports(&self, caller: &Caller, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult> {
        call::<ReleasePorts, _>(self, &Principal::local(caller.clone()), req).await
    }

    async fn ports_status(&self, caller: &Caller) -> CoordResult<PortsStatusResult> {
        call::<PortsStatus, _>(self, &Principal::local(caller.clone()), Empty {}).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_segments() {
        assert!(RemoteClient::new("ftp://x", None).is_err());
        let c = RemoteClient::new("http://h", None)
            .unwrap()
            .with_local_root("/home/me/repo");
        for (input, sent) in [
            ("/home/me/repo/src/a.rs", "src/a.rs"),
            ("/home/me/repo/src/../b.rs", "b.rs"),
            ("src/a.rs", "src/a.rs"),
            ("/elsewhere/x.rs", "/elsewhere/x.rs"),
            ("/home/me/repo/src/auth/", "src/auth/"),
            ("/home/me/repo/src/**/*.rs", "src/**/*.rs"),
            ("holders:/home/me/repo/src/auth/", "holders:src/auth/"),
            ("holders:src/a.rs", "holders:src/a.rs"),
            ("holders:/elsewhere/x.rs", "holders:/elsewhere/x.rs"),
            ("bob", "bob"),
        ] {
            assert_eq!(c.localize(input.into()), sent, "{input}");
        }
        assert!(RemoteClient::new("http://", None).is_err());
        assert_eq!(
            RemoteClient::new("https://coord.example.com/", None)
                .unwrap()
                .base_url(),
            "https://coord.example.com"
        );
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        let req = serde_json::json!({"file_path": "src/a b.rs", "task_id": "x/y"});
        assert_eq!(
            fill_path("/locks/status/{*file_path}", "file_path", &req).unwrap(),
            "/locks/status/src/a%20b.rs"
        );
        assert_eq!(fill_path("/work/{task_id}", "task_id", &req).unwrap(), "/work/x%2Fy");
        assert!(fill_path("/work/{task_id}", "nope", &req).is_err());
    }
}

/// A webhook the security channel posts notifications to (`COORD_SECURITY_WEBHOOK_URL`):
/// one JSON POST per notification; any 2xx answer is a delivery.
#[derive(Clone)]
pub struct Webhook {
    url: reqwest::Url,
    http: reqwest::Client,
}

impl Webhook {
    pub fn new(url: &str) -> CoordResult<Webhook> {
        let bad = || {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "COORD_SECURITY_WEBHOOK_URL",
                format!("the security webhook {url:?} must be an http:// or https:// URL with a host"),
            )
        };
        let parsed = reqwest::Url::parse(url.trim()).map_err(|_| bad())?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad());
        }
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CoordError::unavailable(format!("cannot build the webhook client: {e}")))?;
        Ok(Webhook { url: parsed, http })
    }

    /// Where it posts, without credentials, for logs.
    pub fn target(&self) -> String {
        let mut u = self.url.clone();
        let _ = u.set_password(None);
        let _ = u.set_username("");
        u.to_string()
    }

    /// Posts `body`; `Err` says why it was not accepted (for the notification's record).
    pub async fn post(&self, body: &serde_json::Value) -> Result<(), String> {
        let answer = self
            .http
            .post(self.url.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.target()))?;
        let status = answer.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("{} answered {status}", self.target()))
        }
    }
}

/// A model behind an Anthropic-Messages-compatible endpoint (`POST <base>/v1/messages`):
/// the pre-flight validator of `coord agent run`.
pub struct MessagesClient {
    url: reqwest::Url,
    key: Option<String>,
    http: reqwest::Client,
}

impl MessagesClient {
    pub fn new(base: &str, key: Option<String>, timeout: Duration) -> CoordResult<MessagesClient> {
        let bad = || {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "validator_url",
                format!("the validator URL {base:?} must be an http:// or https:// URL with a host"),
            )
        };
        let trimmed = base.trim().trim_end_matches('/');
        let full = if trimmed.ends_with("/v1/messages") {
            trimmed.to_string()
        } else {
            format!("{trimmed}/v1/messages")
        };
        let url = reqwest::Url::parse(&full).map_err(|_| bad())?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(bad());
        }
        install_crypto_provider();
        let http = reqwest::Client::builder()
            // The key is a custom header, which redirects would carry elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(timeout)
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CoordError::unavailable(format!("cannot build the validator client: {e}")))?;
        Ok(MessagesClient { url, key, http })
    }

    /// One request; the response body as JSON. `Err` says why there is none.
    pub async fn create(&self, body: &serde_json::Value) -> Result<serde_json::Value, String> {
        let mut req = self
            .http
            .post(self.url.clone())
            .header("anthropic-version", "2023-06-01")
            .json(body);
        if let Some(k) = &self.key {
            req = req.header("x-api-key", k);
        }
        let answer = req.send().await.map_err(|e| {
            if e.is_timeout() {
                "the validator model did not answer in time".to_string()
            } else {
                format!("cannot reach the validator model: {e}")
            }
        })?;
        let status = answer.status();
        let value: serde_json::Value = answer
            .json()
            .await
            .map_err(|e| format!("the validator model answered {status} with a body that is not JSON: {e}"))?;
        if !status.is_success() {
            return Err(format!("the validator model answered {status}: {value}"));
        }
        Ok(value)
    }
}
