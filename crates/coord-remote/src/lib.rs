//! Remote mode: [`RemoteClient`] implements [`Coordination`] by calling a `coord serve`
//! over HTTP, so every door (`coord` subcommands, `coord mcp`) works unchanged for cloud
//! agents that cannot reach the database. Answers and errors travel in the same wire
//! shapes the local service produces, and are decoded back into the same types.

use async_trait::async_trait;
use coord_domain::audit::{AuditQueryRequest, AuditQueryResult};
use coord_domain::handoffs::{ReadHandoffRequest, ReadHandoffResult, WriteHandoffRequest, WriteHandoffResult};
use coord_domain::keys::{
    CreateApiKeyRequest, CreateApiKeyResult, ListApiKeysResult, RevokeApiKeyRequest, RevokeApiKeyResult,
};
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckLocksRequest, CheckLocksResult, ReleaseAllResult, ReleaseLockRequest,
    ReleaseLockResult,
};
use coord_domain::path::normalize_path;
use coord_domain::ports::{
    AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::queue::{
    CompleteWorkRequest, CompleteWorkResult, GetTaskRequest, GetTaskResult, GetWorkRequest, GetWorkResult,
    ListTasksRequest, ListTasksResult, SubmitWorkRequest, SubmitWorkResult,
};
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, CleanupResult, DiscoverAgentsRequest, DiscoverAgentsResult, HeartbeatRequest,
    RegisterSessionRequest, SessionResult,
};
use coord_domain::status::StatusResult;
use coord_domain::{Caller, CoordError, CoordResult, ErrorCode};
use coord_service::{Coordination, Ports};
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
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
}

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

fn install_crypto_provider() {
    // reqwest is built without a default provider; ring is the one linked in. A second
    // install (another client in this process) is harmless and reports an error we ignore.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn unreachable(base: &str, e: impl std::fmt::Display) -> CoordError {
    CoordError::unavailable(format!("cannot reach the coordination API at {base}: {e}"))
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
        let http = reqwest::Client::builder()
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
        })
    }

    /// This machine's checkout of the repository. The server judges paths against its
    /// own checkout, which lives elsewhere; absolute paths inside `root` (what agents such
    /// as Claude Code send) are therefore made repository-relative before they leave.
    pub fn with_local_root(mut self, root: impl Into<String>) -> Self {
        self.local_root = Some(root.into());
        self
    }

    fn localize(&self, path: String) -> String {
        match &self.local_root {
            Some(root) if std::path::Path::new(&path).is_absolute() => {
                // Paths outside the checkout go as they are, for the server to refuse.
                normalize_path(&path, Some(root)).unwrap_or(path)
            }
            _ => path,
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
            Ok(e) => Err(e),
            Err(_) => Err(CoordError::unavailable(format!(
                "the coordination API at {} answered HTTP {status} without an error body",
                self.base
            ))),
        }
    }

    /// POSTs carry the identity in the body: JSON holds any identity the service may
    /// judge, where a header cannot carry control characters.
    async fn post<Req: Serialize, Res: DeserializeOwned>(
        &self,
        caller: &Caller,
        path: &str,
        body: &Req,
    ) -> CoordResult<Res> {
        let (id, ty, defaults) = self.identity(caller);
        let mut value = serde_json::to_value(body).unwrap_or_default();
        if let serde_json::Value::Object(map) = &mut value {
            if let Some(id) = id {
                map.insert("agent_id".into(), id.into());
            }
            if let Some(ty) = ty {
                map.insert("agent_type".into(), ty.into());
            }
        }
        let mut headers = self.headers(None)?;
        headers.extend(defaults);
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .headers(headers)
            .json(&value)
            .send()
            .await
            .map_err(|e| unreachable(&self.base, e))?;
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
            .map_err(|e| unreachable(&self.base, e))?;
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

#[derive(Serialize)]
struct Empty {}

#[async_trait]
impl Coordination for RemoteClient {
    async fn acquire_lock(&self, caller: &Caller, mut req: AcquireLockRequest) -> CoordResult<AcquireLockResult> {
        req.file_path = self.localize(req.file_path);
        self.post(caller, "/locks/acquire", &req).await
    }

    async fn release_lock(&self, caller: &Caller, mut req: ReleaseLockRequest) -> CoordResult<ReleaseLockResult> {
        req.file_path = self.localize(req.file_path);
        self.post(caller, "/locks/release", &req).await
    }

    async fn release_my_locks(&self, caller: &Caller) -> CoordResult<ReleaseAllResult> {
        self.post(caller, "/locks/release-mine", &Empty {}).await
    }

    async fn check_locks(&self, caller: &Caller, mut req: CheckLocksRequest) -> CoordResult<CheckLocksResult> {
        req.file_paths = req
            .file_paths
            .map(|paths| paths.into_iter().map(|p| self.localize(p)).collect());
        self.post(caller, "/locks/check", &req).await
    }

    async fn submit_work(&self, caller: &Caller, req: SubmitWorkRequest) -> CoordResult<SubmitWorkResult> {
        self.post(caller, "/work/submit", &req).await
    }

    async fn get_work(&self, caller: &Caller, req: GetWorkRequest) -> CoordResult<GetWorkResult> {
        self.post(caller, "/work/claim", &req).await
    }

    async fn complete_work(&self, caller: &Caller, req: CompleteWorkRequest) -> CoordResult<CompleteWorkResult> {
        self.post(caller, "/work/complete", &req).await
    }

    async fn get_task(&self, caller: &Caller, req: GetTaskRequest) -> CoordResult<GetTaskResult> {
        self.get(Some(caller), &format!("/work/{}", segment(&req.task_id)), &Empty {})
            .await
    }

    async fn list_tasks(&self, caller: &Caller, req: ListTasksRequest) -> CoordResult<ListTasksResult> {
        self.get(Some(caller), "/work", &req).await
    }

    async fn register_session(&self, caller: &Caller, req: RegisterSessionRequest) -> CoordResult<SessionResult> {
        self.post(caller, "/sessions/register", &req).await
    }

    async fn heartbeat(&self, caller: &Caller, req: HeartbeatRequest) -> CoordResult<SessionResult> {
        self.post(caller, "/sessions/heartbeat", &req).await
    }

    async fn discover_agents(&self, caller: &Caller, req: DiscoverAgentsRequest) -> CoordResult<DiscoverAgentsResult> {
        self.get(Some(caller), "/agents", &req).await
    }

    async fn cleanup_dead_agents(&self, caller: &Caller, req: CleanupDeadAgentsRequest) -> CoordResult<CleanupResult> {
        self.post(caller, "/agents/cleanup", &req).await
    }

    async fn mark_idle(&self, caller: &Caller) -> CoordResult<SessionResult> {
        self.post(caller, "/sessions/idle", &Empty {}).await
    }

    async fn write_handoff(&self, caller: &Caller, req: WriteHandoffRequest) -> CoordResult<WriteHandoffResult> {
        self.post(caller, "/handoffs", &req).await
    }

    async fn read_handoff(&self, caller: &Caller, req: ReadHandoffRequest) -> CoordResult<ReadHandoffResult> {
        self.get(Some(caller), "/handoffs", &req).await
    }

    async fn query_audit(&self, caller: &Caller, req: AuditQueryRequest) -> CoordResult<AuditQueryResult> {
        self.get(Some(caller), "/audit", &req).await
    }

    async fn status(&self, caller: &Caller) -> CoordResult<StatusResult> {
        self.get(Some(caller), "/status", &Empty {}).await
    }

    async fn create_api_key(&self, caller: &Caller, req: CreateApiKeyRequest) -> CoordResult<CreateApiKeyResult> {
        self.post(caller, "/keys", &req).await
    }

    async fn list_api_keys(&self, caller: &Caller) -> CoordResult<ListApiKeysResult> {
        self.get(Some(caller), "/keys", &Empty {}).await
    }

    async fn revoke_api_key(&self, caller: &Caller, req: RevokeApiKeyRequest) -> CoordResult<RevokeApiKeyResult> {
        self.post(caller, "/keys/revoke", &req).await
    }

    /// Asks the server who `key` acts as (its answer to `GET /status` with that key).
    async fn authenticate_key(&self, key: &str) -> CoordResult<Option<Caller>> {
        let probe = RemoteClient {
            key: Some(key.to_string()),
            ..self.clone()
        };
        match probe.get::<_, StatusResult>(None, "/status", &Empty {}).await {
            Ok(s) => Ok(Some(Caller::new(s.identity.agent_id, s.identity.agent_type))),
            Err(e) if e.code == ErrorCode::Unauthorized => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn health(&self) -> CoordResult<()> {
        #[derive(serde::Deserialize)]
        struct Health {
            status: String,
        }
        let h: Health = self.get(None, "/health", &Empty {}).await?;
        if h.status == "ok" {
            Ok(())
        } else {
            Err(CoordError::unavailable(format!(
                "the coordination API at {} reports {}",
                self.base, h.status
            )))
        }
    }
}

#[async_trait]
impl Ports for RemoteClient {
    async fn allocate_ports(&self, caller: &Caller, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult> {
        self.post(caller, "/ports/allocate", &req).await
    }

    async fn release_ports(&self, caller: &Caller, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult> {
        self.post(caller, "/ports/release", &req).await
    }

    async fn ports_status(&self, caller: &Caller) -> CoordResult<PortsStatusResult> {
        self.get(Some(caller), "/ports/status", &Empty {}).await
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
    }
}
