//! The GitHub outbox sent to a fake GitHub (a real HTTP server on loopback recording
//! what it is sent): comments and commit statuses arrive with the token and API
//! version; a rate limit and a server error are retried after the wait GitHub asks for
//! (or the backoff), never before; a request once sent is not sent again.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use coord_github::sync::{commit_status, issue_comment};
use coord_remote::github::{GithubApi, refresh_issues, send_due};
use coord_service::{CoordConfig, Coordinator, ManualClock};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    auth: String,
    version: String,
    body: serde_json::Value,
}

#[derive(Default)]
struct Fake {
    seen: Mutex<Vec<Seen>>,
    /// Status calls answered 403 rate-limited this many more times.
    limited: Mutex<u32>,
}

async fn handle(State(fake): State<Arc<Fake>>, headers: HeaderMap, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let path = parts.uri.path().to_string();
    fake.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        path: path.clone(),
        auth: header("authorization"),
        version: header("x-github-api-version"),
        body: serde_json::from_slice(&bytes).unwrap_or_default(),
    });
    if path == "/api/v3/repos/octocat/Hello-World/issues/12" {
        // The issue as GitHub has it now: still labelled, nothing new.
        return axum::Json(serde_json::json!({
            "number": 12, "title": "Harden login", "state": "open", "updated_at": "2026-11-26T10:00:00Z",
            "labels": [{"name": "agent:claude-1"}, {"name": "locked:src/a.rs"}]
        }))
        .into_response();
    }
    if path == "/api/v3/repos/octocat/Hello-World" {
        return axum::Json(serde_json::json!({"id": 1296269, "full_name": "octocat/Hello-World"})).into_response();
    }
    if path == "/api/v3/repos/octocat/Hello-World/issues/13" {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({"message": "Not Found"})),
        )
            .into_response();
    }
    if path.contains("/broken/") {
        return (StatusCode::BAD_GATEWAY, "upstream").into_response();
    }
    if path.contains("/statuses/") {
        let mut left = fake.limited.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            let mut h = HeaderMap::new();
            h.insert("x-ratelimit-remaining", "0".parse().unwrap());
            h.insert("retry-after", "600".parse().unwrap());
            return (
                StatusCode::FORBIDDEN,
                h,
                axum::Json(serde_json::json!({"message": "API rate limit exceeded"})),
            )
                .into_response();
        }
    }
    (StatusCode::CREATED, axum::Json(serde_json::json!({"id": 1}))).into_response()
}

/// The fake GitHub served on loopback, and a coordinator on a new SQLite file with its
/// clock at `start`: (address, coordinator, clock, the file's directory).
async fn setup(
    fake: Arc<Fake>,
    start: chrono::DateTime<chrono::Utc>,
) -> (std::net::SocketAddr, Coordinator, Arc<ManualClock>, tempfile::TempDir) {
    let app = axum::Router::new().fallback(handle).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    let store = coord_sqlite::SqliteStore::open(&dir.path().join("coord.db")).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let coord = Coordinator::new(Arc::new(store), clock.clone(), CoordConfig::default());
    (addr, coord, clock, dir)
}

#[tokio::test]
async fn the_outbox_reaches_github_with_retries_and_rate_limits() {
    let fake = Arc::new(Fake::default());
    *fake.limited.lock().unwrap() = 1;
    let (addr, coord, clock, _dir) = setup(fake.clone(), chrono::Utc::now()).await;
    let api = GithubApi::new(&format!("http://{addr}/api/v3/"), "t0ken").unwrap();

    let s = coord.store();
    s.queue_github_request(
        coord.now(),
        issue_comment("octocat/Hello-World", 12, "`src/a.rs` is locked".into()),
    )
    .await
    .unwrap();
    s.queue_github_request(
        coord.now(),
        commit_status(
            "octocat/Hello-World",
            "abc123",
            "failure",
            "coord/locks",
            &"x".repeat(300),
        ),
    )
    .await
    .unwrap();
    s.queue_github_request(coord.now(), issue_comment("octocat/broken", 1, "hi".into()))
        .await
        .unwrap();

    assert_eq!(send_due(&coord, &api).await.unwrap(), (1, 2));
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/api/v3/repos/octocat/Hello-World/issues/12/comments")
    );
    assert_eq!(seen[0].body["body"], "`src/a.rs` is locked");
    for s in &seen {
        assert_eq!((s.auth.as_str(), s.version.as_str()), ("Bearer t0ken", "2022-11-28"));
    }
    // GitHub keeps 140 characters of a status description.
    assert_eq!(seen[1].body["description"].as_str().unwrap().len(), 140);

    // Not again before the backoff (30 s) or the rate limit's wait (600 s).
    assert_eq!(send_due(&coord, &api).await.unwrap(), (0, 0));
    clock.advance(chrono::Duration::seconds(60));
    assert_eq!(
        send_due(&coord, &api).await.unwrap(),
        (0, 1),
        "only the broken one is due"
    );
    clock.advance(chrono::Duration::seconds(600));
    let (sent, _) = send_due(&coord, &api).await.unwrap();
    assert_eq!(sent, 1, "the status, once the limit is over");
    let statuses = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path.contains("/statuses/"))
        .count();
    assert_eq!(statuses, 2);
    // Sent requests are never sent again.
    clock.advance(chrono::Duration::days(1));
    send_due(&coord, &api).await.unwrap();
    let comments = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path.ends_with("/issues/12/comments"))
        .count();
    assert_eq!(comments, 1);
}

/// Issues are read back from GitHub: label locks renewed while their labels stay, an
/// issue gone from GitHub released as deleted; only links quiet for an hour are read.
#[tokio::test]
async fn issues_are_read_back_from_github() {
    let fake = Arc::new(Fake::default());
    let (addr, coord, clock, _dir) = setup(fake.clone(), "2026-11-26T10:00:00Z".parse().unwrap()).await;
    let api = GithubApi::new(&format!("http://{addr}/api/v3"), "t0ken").unwrap();
    let webhook = coord_domain::access::Principal::new(
        coord_domain::Caller::new("github-webhook", "github"),
        coord_domain::access::Credential::Operator,
    );
    for (n, path) in [(12, "src/a.rs"), (13, "src/b.rs")] {
        let request = coord_github::webhook::GithubDeliveryRequest {
            delivery_id: format!("d-{n}"),
            event: "issues".into(),
            payload: serde_json::json!({
                "action": "labeled",
                "issue": {"number": n, "state": "open", "updated_at": "2026-11-26T10:00:00Z",
                          "labels": [{"name": "agent:claude-1"}, {"name": format!("locked:{path}")}]},
                "repository": {"id": 1296269, "full_name": "octocat/Hello-World"}
            }),
        };
        let r = coord_service::call::<coord_service::ops::github::ReceiveGithubDelivery, _>(&coord, &webhook, request)
            .await
            .unwrap();
        assert_eq!(r.status, coord_github::webhook::DeliveryStatus::Processed, "{r:?}");
    }
    let live = |coord: &Coordinator| {
        let coord = coord.clone();
        async move {
            let who = coord_domain::access::Principal::local(coord_domain::Caller::new("observer", "cli"));
            let mut paths: Vec<String> = coord_service::call::<coord_service::ops::locks::CheckLocks, _>(
                &coord,
                &who,
                coord_domain::locks::CheckLocksRequest { file_paths: None },
            )
            .await
            .unwrap()
            .locks
            .into_iter()
            .map(|l| l.file_path)
            .collect();
            paths.sort();
            paths
        }
    };
    assert_eq!(live(&coord).await, ["src/a.rs", "src/b.rs"]);
    // Quiet for less than an hour: nothing is read.
    assert_eq!(refresh_issues(&coord, &api).await.unwrap(), (0, 0));
    clock.advance(chrono::Duration::hours(2));
    // A wrong API URL answers 404 for everything: nothing is taken as gone.
    let wrong = GithubApi::new(&format!("http://{addr}/nowhere"), "t0ken").unwrap();
    assert_eq!(refresh_issues(&coord, &wrong).await.unwrap(), (0, 2));
    assert_eq!(live(&coord).await, ["src/a.rs", "src/b.rs"]);
    // Tried: not again for an hour.
    assert_eq!(refresh_issues(&coord, &api).await.unwrap(), (0, 0));
    clock.advance(chrono::Duration::hours(2));
    assert_eq!(refresh_issues(&coord, &api).await.unwrap(), (2, 0));
    // #13 is gone from GitHub: released. #12's lock was renewed: live past its first 8 h.
    assert_eq!(live(&coord).await, ["src/a.rs"]);
    clock.advance(chrono::Duration::hours(7));
    assert_eq!(
        live(&coord).await,
        ["src/a.rs"],
        "renewed 7 hours ago, 11 after it was taken"
    );
    let reads = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "GET" && s.path.starts_with("/api/v3/repos/octocat/Hello-World/issues/"))
        .count();
    assert_eq!(reads, 2);
}

#[test]
fn configuration_errors_name_the_setting() {
    for (base, token, field) in [
        ("not a url", "t", "COORD_GITHUB_API_URL"),
        ("ftp://example.com", "t", "COORD_GITHUB_API_URL"),
        ("https://api.github.com", " ", "COORD_GITHUB_TOKEN"),
    ] {
        let e = GithubApi::new(base, token).err().expect("refused");
        assert_eq!(e.field.as_deref(), Some(field), "{base}");
    }
}
