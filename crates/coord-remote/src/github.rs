//! GitHub's REST API, the few calls coord makes: the outbox's comments and commit
//! statuses, and the `github_actions` verification executor's dispatch and polling.
//! Hand-written over reqwest (octocrab would bring a second TLS stack and JWT crates
//! for eight endpoints). The base URL is configurable (`COORD_GITHUB_API_URL`: GitHub
//! Enterprise, or a fake GitHub on loopback in the tests).

use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_github::sync::{GithubRequest, retry_seconds};
use coord_service::Coordinator;
use std::time::Duration;

pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The REST API version coord is written against.
pub const API_VERSION: &str = "2022-11-28";
/// Outbox requests taken per round trip to the store.
const BATCH: i64 = 50;

/// Why a call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub message: String,
    /// GitHub asked to wait this long (rate limits: `retry-after`, or until
    /// `x-ratelimit-reset` when `x-ratelimit-remaining` is 0).
    pub retry_after: Option<u64>,
    /// No answer, a 5xx or a timeout: the request may or may not have been acted on.
    pub ambiguous: bool,
    pub status: Option<u16>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub struct GithubApi {
    base: reqwest::Url,
    token: String,
    http: reqwest::Client,
}

fn config_error(field: &str, message: String) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, message)
}

impl GithubApi {
    pub fn new(base: &str, token: &str) -> CoordResult<GithubApi> {
        let base = base.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(&format!("{base}/")).map_err(|_| {
            config_error(
                "COORD_GITHUB_API_URL",
                format!("{base:?} is not a URL (GitHub: {DEFAULT_API_URL}; Enterprise: https://HOST/api/v3)"),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(config_error(
                "COORD_GITHUB_API_URL",
                format!("{base:?} must be an http:// or https:// URL"),
            ));
        }
        if token.trim().is_empty() {
            return Err(config_error("COORD_GITHUB_TOKEN", "the GitHub token is empty".into()));
        }
        super::install_crypto_provider();
        let http = reqwest::Client::builder()
            // A redirect answers a renamed repository or a transferred issue: coord
            // acts on what it asked about or not at all.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("coord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CoordError::unavailable(format!("cannot build the GitHub client: {e}")))?;
        Ok(GithubApi {
            base: parsed,
            token: token.trim().to_string(),
            http,
        })
    }

    /// From `COORD_GITHUB_TOKEN` (or `GITHUB_TOKEN`) and `COORD_GITHUB_API_URL`; None
    /// when no token is set.
    pub fn from_env() -> CoordResult<Option<GithubApi>> {
        let token = ["COORD_GITHUB_TOKEN", "GITHUB_TOKEN"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()));
        let Some(token) = token else { return Ok(None) };
        let base = std::env::var("COORD_GITHUB_API_URL").unwrap_or_else(|_| DEFAULT_API_URL.into());
        GithubApi::new(&base, &token).map(Some)
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, ApiError> {
        self.base.join(path.trim_start_matches('/')).map_err(|e| ApiError {
            message: format!("{path:?} is not a path of the API: {e}"),
            retry_after: None,
            ambiguous: false,
            status: None,
        })
    }

    /// Sends one request; answers the JSON body (Null when there is none).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<serde_json::Value, ApiError> {
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| ApiError {
            message: format!("{method:?} is not an HTTP method"),
            retry_after: None,
            ambiguous: false,
            status: None,
        })?;
        let mut req = self
            .http
            .request(method.clone(), self.url(path)?)
            .bearer_auth(&self.token)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", API_VERSION);
        if let Some(b) = body {
            req = req.json(b);
        }
        let answer = req.send().await.map_err(|e| ApiError {
            message: format!("cannot reach GitHub ({method} {path}): {e}"),
            retry_after: None,
            ambiguous: true,
            status: None,
        })?;
        let status = answer.status();
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let retry_after = header("retry-after").or_else(|| {
            (header("x-ratelimit-remaining") == Some(0))
                .then(|| header("x-ratelimit-reset"))
                .flatten()
                .map(|reset| {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0);
                    reset.saturating_sub(now).max(1)
                })
        });
        let text = answer.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(if text.trim().is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
            });
        }
        let said = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
            .unwrap_or_else(|| text.chars().take(200).collect());
        Err(ApiError {
            message: format!("GitHub answered {status} to {method} {path}: {said}"),
            retry_after,
            ambiguous: status.is_server_error(),
            status: Some(status.as_u16()),
        })
    }

    pub async fn send(&self, r: &GithubRequest) -> Result<serde_json::Value, ApiError> {
        self.call(&r.method, &r.path, Some(&r.body)).await
    }
}

/// One pass over the outbox: every due request sent once; a failure is due again after
/// the backoff (or when GitHub's rate limit resets). Answers (sent, failed).
pub async fn send_due(coord: &Coordinator, api: &GithubApi) -> CoordResult<(u64, u64)> {
    let (mut sent, mut failed) = (0, 0);
    loop {
        let due = coord.store().take_due_github_requests(coord.now(), BATCH).await?;
        let n = due.len();
        // A request tried `MAX_REQUEST_ATTEMPTS` times is not taken again: it stays with
        // its last error.
        for q in due {
            let outcome = api.send(&q.request).await;
            let retry = match &outcome {
                Ok(_) => 0,
                // Whatever GitHub asks, a day at most.
                Err(e) => e
                    .retry_after
                    .map(|s| s.min(86_400) as i64)
                    .unwrap_or(0)
                    .max(retry_seconds(q.attempts)),
            };
            match &outcome {
                Ok(_) => sent += 1,
                Err(e) => {
                    tracing::warn!(path = %q.request.path, error = %e, "a GitHub request failed");
                    failed += 1;
                }
            }
            coord
                .store()
                .record_github_request(coord.now(), q.id, outcome.map(|_| ()).map_err(|e| e.message), retry)
                .await?;
        }
        if (n as i64) < BATCH {
            return Ok((sent, failed));
        }
    }
}

/// Issue links not saved for this long are read back from GitHub.
pub const REFRESH_AFTER_MINUTES: i64 = 60;
/// Issues read back per pass.
const REFRESH_BATCH: i64 = 100;

/// The fields of an issue coord reads, from the REST API's answer: nothing else is
/// recorded (bodies aside, an issue's JSON carries its author, reactions, ...).
fn issue_fields(issue: &serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for k in [
        "number",
        "title",
        "body",
        "state",
        "state_reason",
        "updated_at",
        "html_url",
    ] {
        if let Some(v) = issue.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    let labels: Vec<serde_json::Value> = issue["labels"]
        .as_array()
        .map(|ls| ls.iter().map(|l| serde_json::json!({"name": l["name"]})).collect())
        .unwrap_or_default();
    out.insert("labels".into(), labels.into());
    if let Some(pr) = issue.get("pull_request") {
        out.insert("pull_request".into(), serde_json::json!({"merged_at": pr["merged_at"]}));
    }
    serde_json::Value::Object(out)
}

/// What reading an issue back found.
enum ReadBack {
    Issue(serde_json::Value),
    /// GitHub no longer has it (the repository still answers, with the same id).
    Gone,
}

async fn read_back(api: &GithubApi, repo: &str, repo_id: i64, number: i64) -> Result<ReadBack, ApiError> {
    match api.call("GET", &format!("/repos/{repo}/issues/{number}"), None).await {
        // Never another issue's state for this one (a transferred issue answers from its
        // new repository under another number: redirects are not followed at all).
        Ok(issue) if issue["number"].as_i64() == Some(number) => Ok(ReadBack::Issue(issue_fields(&issue))),
        Ok(_) => Err(ApiError {
            message: format!("GitHub answered another issue for {repo}#{number}"),
            retry_after: None,
            ambiguous: false,
            status: None,
        }),
        // A 404 also answers a token that cannot see the repository, or a wrong API URL:
        // the issue is gone only if the repository itself answers, as the same one.
        Err(e) if matches!(e.status, Some(404 | 410)) => {
            let same = api
                .call("GET", &format!("/repos/{repo}"), None)
                .await
                .is_ok_and(|r| r["id"].as_i64() == Some(repo_id));
            if same { Ok(ReadBack::Gone) } else { Err(e) }
        }
        Err(e) => Err(e),
    }
}

/// Reads back from GitHub the issues whose links hold locks or a task and have heard
/// nothing for an hour, and reconciles each as a delivery (`issues`, action
/// `refreshed`, delivery id `refresh-<repo>-<number>-<hour>`): a delivery GitHub never
/// sent or coord missed is repaired, label locks are renewed while their labels stay,
/// and an issue gone from GitHub (404, 410 while its repository still answers) ends as
/// if deleted. A link that could not be read back goes to the end of the line (it is
/// tried again in an hour, after the others). Answers (refreshed, failed).
pub async fn refresh_issues(coord: &Coordinator, api: &GithubApi) -> CoordResult<(u64, u64)> {
    use coord_github::webhook::{DeliveryStatus, GithubDeliveryRequest, WEBHOOK_AGENT, WEBHOOK_AGENT_TYPE};
    let now = coord.now().unwrap_or_else(chrono::Utc::now);
    let before = now - chrono::Duration::minutes(REFRESH_AFTER_MINUTES);
    let due = coord.store().github_issue_links_due(before, REFRESH_BATCH).await?;
    let who = coord_domain::access::Principal::new(
        coord_domain::Caller::new(WEBHOOK_AGENT, WEBHOOK_AGENT_TYPE),
        coord_domain::access::Credential::Operator,
    );
    let (mut refreshed, mut failed) = (0, 0);
    for link in due {
        let (Some(number), Some(repo)) = (
            link.key.strip_prefix("issue:").and_then(|n| n.parse::<i64>().ok()),
            coord_github::sync::repository_name(&link.repository),
        ) else {
            touch(coord, link.repo_id, &link.key).await;
            continue;
        };
        let repository = serde_json::json!({"id": link.repo_id, "full_name": repo});
        let payload = match read_back(api, &repo, link.repo_id, number).await {
            Ok(ReadBack::Issue(issue)) => {
                serde_json::json!({"action": "refreshed", "issue": issue, "repository": repository})
            }
            Ok(ReadBack::Gone) => {
                // Not older than what was applied, whatever GitHub's clock said then.
                let at = link.updated_at.map_or(now, |u| u.max(now));
                serde_json::json!({
                    "action": "deleted",
                    "issue": {"number": number, "state": "closed", "updated_at": at, "labels": []},
                    "repository": repository,
                })
            }
            Err(e) => {
                tracing::warn!(repository = %repo, issue = number, error = %e, "could not read an issue back from GitHub");
                failed += 1;
                touch(coord, link.repo_id, &link.key).await;
                continue;
            }
        };
        let request = GithubDeliveryRequest {
            delivery_id: format!("refresh-{}-{number}-{}", link.repo_id, now.format("%Y%m%d%H")),
            event: "issues".into(),
            payload,
        };
        match coord_service::call::<coord_service::ops::github::ReceiveGithubDelivery, _>(coord, &who, request).await {
            Ok(r) if r.status == DeliveryStatus::Processed && !r.duplicate => refreshed += 1,
            Ok(r) => {
                tracing::debug!(repository = %repo, issue = number, note = ?r.note, "an issue read back changed nothing");
                touch(coord, link.repo_id, &link.key).await;
            }
            Err(e) => {
                tracing::warn!(repository = %repo, issue = number, error = %e.message, "could not reconcile an issue");
                failed += 1;
                touch(coord, link.repo_id, &link.key).await;
            }
        }
    }
    Ok((refreshed, failed))
}

/// Saves a link as it is, so it is due again only after the others.
async fn touch(coord: &Coordinator, repo_id: i64, key: &str) {
    if let Ok(Some(link)) = coord.store().github_link(repo_id, key.to_string()).await
        && let Err(e) = coord.store().save_github_link(coord.now(), link).await
    {
        tracing::warn!(error = %e.message, "could not move a link back in the read-back's line");
    }
}

/// The GitHub task of `coord serve`: the outbox sent every `every` and, beside it (a
/// slow read-back never holds up comments and statuses), issues read back every hour.
pub fn spawn(coord: Coordinator, api: GithubApi, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let send = async {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = send_due(&coord, &api).await {
                    tracing::warn!(error = %e, "GitHub requests could not be sent");
                }
            }
        };
        let refresh = async {
            let mut tick = tokio::time::interval(Duration::from_secs(3600));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = refresh_issues(&coord, &api).await {
                    tracing::warn!(error = %e, "issues could not be read back from GitHub");
                }
            }
        };
        tokio::join!(send, refresh);
    })
}
