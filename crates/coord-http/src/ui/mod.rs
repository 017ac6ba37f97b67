//! The live dashboard at `/` (docs/dashboard.md): one page, its script and its style
//! sheet (committed files, no CDN, no build step), the snapshot it draws
//! (`/ui/snapshot`), the server-sent events that tell it to draw again (`/ui/events`,
//! fed by the pipeline: every operation that may change something), and approve/deny
//! (`/ui/approvals/decide`).
//!
//! Only operators: signing in takes an operator key (the API's own keys), checked like
//! any request's; the browser then holds a session cookie, never the key. Changes need
//! the session's CSRF token in `X-CSRF-Token` and, when the browser sends one, an
//! `Origin` of this server; the cookie is `SameSite=Strict`. Every read and decision
//! goes through the operations, audited under the operator's name.

pub mod sessions;
pub mod snapshot;

use crate::api::{App, error_response};
use crate::auth;
use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use coord_domain::access::{Credential, Effect, Principal};
use coord_domain::{Caller, CoordError, ErrorCode};
use coord_service::op_named;
use serde_json::json;
use sessions::{COOKIE, Session};
use std::time::Instant;
use tokio_stream::StreamExt as _;

const PAGE: &str = include_str!("../../ui/index.html");
const LOGIN: &str = include_str!("../../ui/login.html");
const SCRIPT: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/style.css");

/// How often an idle live feed checks that its session is still signed in and the
/// server is not shutting down (a lookup in memory).
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The agent type the dashboard's operators act as (audit rows say who decided).
pub const AGENT_TYPE: &str = "dashboard";

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

fn html(body: String, status: StatusCode) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Text for an HTML element or attribute.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn login_page(message: Option<&str>, status: StatusCode) -> Response {
    let note = message.map_or(String::new(), |m| {
        format!("<p class=\"error\" role=\"alert\">{}</p>", escape(m))
    });
    html(LOGIN.replace("{{message}}", &note), status)
}

/// The session of a request's cookie.
fn session(app: &App, headers: &HeaderMap) -> Option<(String, Session)> {
    let token = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| sessions::cookie(c, COOKIE))?
        .to_string();
    let s = app.ui.get(&token, Instant::now())?;
    Some((token, s))
}

/// Whether a request carries a dashboard session's cookie (valid or not).
pub fn has_session_cookie(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|c| sessions::cookie(c, COOKIE).is_some())
}

fn principal(s: &Session) -> Principal {
    Principal::new(s.who.clone(), Credential::Operator)
}

fn unauthorized() -> CoordError {
    CoordError::new(ErrorCode::Unauthorized, "sign in to the dashboard first (GET /)")
}

/// A change the page asks for must carry its session's CSRF token, and come from this
/// server's own page when the browser says where it comes from.
fn check_change(s: &Session, headers: &HeaderMap) -> Result<(), CoordError> {
    same_site(headers)?;
    let sent = headers.get("x-csrf-token").and_then(|v| v.to_str().ok()).unwrap_or("");
    if !sessions::same_secret(sent, &s.csrf) {
        return Err(CoordError::new(ErrorCode::Forbidden, "missing or wrong X-CSRF-Token"));
    }
    Ok(())
}

/// Whether a request comes from this server's own page, when the browser says where it
/// comes from (`Sec-Fetch-Site`, else `Origin` against `Host`); a request that says
/// nothing (not a browser) passes.
fn same_site(headers: &HeaderMap) -> Result<(), CoordError> {
    let forbidden = |m: &str| CoordError::new(ErrorCode::Forbidden, m.to_string());
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(site) = site {
        // The browser's own word (a proxy that rewrites Host does not change it).
        if site != "same-origin" {
            return Err(forbidden("a request from another site's page"));
        }
    } else if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
        let origin_host = origin.split_once("://").map_or("", |(_, rest)| rest);
        if origin_host != host {
            return Err(forbidden("a request from another site's page"));
        }
    }
    Ok(())
}

/// Whether the browser reached this server over HTTPS (directly or through a proxy that
/// says so): the cookie is then `Secure`.
fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

fn set_cookie(token: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("coord_ui=; Max-Age=0"))
}

fn signed_in(token: &str, headers: &HeaderMap) -> Response {
    let mut r = Redirect::to("/").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(token, sessions::SESSION_TTL.as_secs(), over_https(headers)),
    );
    r
}

/// The largest sign-in form or decision body read.
const FORM_LIMIT: usize = 16 * 1024;

/// `GET /`: the dashboard, or the sign-in form.
pub async fn page(State(app): State<App>, headers: HeaderMap) -> Response {
    match session(&app, &headers) {
        Some((_, s)) => html(
            PAGE.replace("{{csrf}}", &escape(&s.csrf))
                .replace("{{operator}}", &escape(&s.who.agent_id)),
            StatusCode::OK,
        ),
        None => login_page(None, StatusCode::OK),
    }
}

#[derive(serde::Deserialize)]
pub struct LinkQuery {
    token: Option<String>,
}

/// `GET /ui/login?token=…`: `coord ui`'s one-time link.
pub async fn login_link(State(app): State<App>, headers: HeaderMap, Query(q): Query<LinkQuery>) -> Response {
    let now = Instant::now();
    match q.token.and_then(|t| app.ui.redeem(&t, now)) {
        Some(who) => signed_in(&app.ui.start(who, now).0, &headers),
        None => login_page(
            Some(
                "That sign-in link was used already or has expired: run `coord ui` again for a new one, or sign \
                 in with an operator key.",
            ),
            StatusCode::UNAUTHORIZED,
        ),
    }
}

/// `POST /ui/login` (a form: `key`, `name`): an operator key starts a session. Only
/// from this server's own page (a cross-site form would sign the visitor in as someone
/// else); a client address that failed too many keys or sign-ins in the last minute
/// waits out that minute (others are not held up).
pub async fn login(
    State(app): State<App>,
    client: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    request_headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(e) = same_site(&request_headers) {
        return login_page(Some(&e.message), StatusCode::FORBIDDEN);
    }
    let ip = client.map(|c| c.0.0.ip());
    if ip.is_some_and(|ip| app.limiter.paused(ip, Instant::now())) {
        let mut r = login_page(
            Some("Too many failed sign-ins from here in the last minute; wait a minute and try again."),
            StatusCode::TOO_MANY_REQUESTS,
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        return r;
    }
    let body = match crate::api::read_body(&app, body, FORM_LIMIT).await {
        Ok(b) => b,
        Err(e) => return login_page(Some(&e.message), crate::api::status_of(&e)),
    };
    let form: std::collections::HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let key = form.get("key").map(|k| k.trim()).unwrap_or("");
    let name = form
        .get("name")
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .unwrap_or("operator");
    if key.is_empty() {
        return login_page(Some("Enter an operator key."), StatusCode::UNAUTHORIZED);
    }
    let who = Caller::new(name, AGENT_TYPE);
    if let Err(e) = who.validate() {
        return login_page(
            Some(&format!("That name cannot be used: {}", e.message)),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
    }
    let mut headers = HeaderMap::new();
    match HeaderValue::from_str(key) {
        Ok(v) => {
            headers.insert("x-api-key", v);
        }
        Err(_) => return login_page(Some("That is not an operator key."), StatusCode::UNAUTHORIZED),
    }
    match auth::authenticate(&app.auth, app.server.as_ref(), &headers).await {
        Ok(auth::Authenticated::Operator) => signed_in(&app.ui.start(who, Instant::now()).0, &request_headers),
        Ok(_) | Err(_) => {
            if let Some(ip) = ip {
                app.limiter.failed(ip, Instant::now());
            }
            tracing::debug!("dashboard: a sign-in with a key that is not an operator key");
            login_page(
                Some("That key does not open the dashboard: it is wrong, or an agent's (only operator keys do)."),
                StatusCode::UNAUTHORIZED,
            )
        }
    }
}

/// `POST /ui/logout`.
pub async fn logout(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Some((token, s)) = session(&app, &headers) {
        if let Err(e) = check_change(&s, &headers) {
            return error_response(&e);
        }
        app.ui.end(&token);
    }
    let mut r = Redirect::to("/").into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, set_cookie("", 0, over_https(&headers)));
    r
}

/// `GET /ui/snapshot?agent=&operation=&result=`: everything the page draws.
pub async fn snapshot(
    State(app): State<App>,
    headers: HeaderMap,
    Query(filters): Query<snapshot::AuditFilters>,
) -> Response {
    let Some((_, s)) = session(&app, &headers) else {
        return error_response(&unauthorized());
    };
    let mut r = Json(snapshot::snapshot(app.server.as_ref(), &principal(&s), filters).await).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `GET /ui/events`: one `change` event per operation that may have changed something
/// (its name, the agent, the outcome), `lagged` when this listener fell behind.
pub async fn events(State(app): State<App>, headers: HeaderMap) -> Response {
    let Some((token, _)) = session(&app, &headers) else {
        return error_response(&unauthorized());
    };
    let Some(coord) = app.server.local() else {
        return error_response(&CoordError::new(
            ErrorCode::NotFound,
            "this server forwards to another coordinator: it has no live feed",
        ));
    };
    // The feed ends when the server shuts down (a graceful shutdown must not wait for
    // open dashboards) and when the session does (sign-out, expiry): checked on every
    // change and every SESSION_CHECK.
    let (ui, shutdown) = (app.ui.clone(), app.shutdown.clone());
    let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(SESSION_CHECK)).map(|_| None);
    let changes = tokio_stream::wrappers::BroadcastStream::new(coord.metrics().subscribe()).map(Some);
    let stream = changes
        .merge(ticks)
        .take_while(move |_| !shutdown.is_cancelled() && ui.get(&token, Instant::now()).is_some())
        .filter_map(|item| {
            let change = item?;
            match change {
                // A dashboard's own refused read would wake every dashboard, which would read
                // again: the feed leaves dashboards' reads out.
                Ok(c)
                    if c.agent_type == AGENT_TYPE && op_named(c.operation).is_ok_and(|o| o.effect == Effect::Read) =>
                {
                    None
                }
                Ok(c) => Some(
                    Event::default()
                        .event("change")
                        .json_data(&c)
                        .unwrap_or_else(|_| Event::default().event("change")),
                ),
                Err(_) => Some(Event::default().event("lagged").data("{}")),
            }
            .map(Ok::<_, std::convert::Infallible>)
        });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

#[derive(serde::Deserialize)]
pub struct Decide {
    approval_id: String,
    decision: String,
    note: Option<String>,
}

#[derive(serde::Deserialize)]
pub struct EndSession {
    session_id: String,
}

#[derive(serde::Deserialize)]
pub struct LockRef {
    file_path: String,
}

#[derive(serde::Deserialize)]
pub struct TaskRef {
    task_id: String,
}

/// Runs `operation` for the signed-in person on what the page sent (read as `T`, the
/// shape `expected` names): the session, the CSRF token and the origin are checked first;
/// the pipeline audits it under the person's name, type `dashboard`.
async fn act<T: serde::de::DeserializeOwned>(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    operation: &str,
    expected: &str,
    request: impl FnOnce(T) -> serde_json::Value,
) -> Response {
    let Some((_, s)) = session(app, headers) else {
        return error_response(&unauthorized());
    };
    if let Err(e) = check_change(&s, headers) {
        return error_response(&e);
    }
    let body = match crate::api::read_body(app, body, FORM_LIMIT).await {
        Ok(b) => b,
        Err(e) => return error_response(&e),
    };
    let asked: T = match serde_json::from_slice(&body) {
        Ok(d) => d,
        Err(e) => {
            return error_response(&CoordError::new(
                ErrorCode::InvalidJson,
                format!("the body is not {expected}: {e}"),
            ));
        }
    };
    let Ok(op) = op_named(operation) else {
        return error_response(&CoordError::internal());
    };
    match app.server.invoke(op, &principal(&s), Ok(request(asked))).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => (crate::api::status_of(&e), Json(snapshot::error_json(&e))).into_response(),
    }
}

/// `POST /ui/approvals/decide` `{approval_id, decision: approve|deny, note?}`.
pub async fn decide(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    act(
        &app,
        &headers,
        body,
        "decide_approval",
        "{approval_id, decision, note?}",
        |d: Decide| json!({"approval_id": d.approval_id, "decision": d.decision, "note": d.note}),
    )
    .await
}

/// `POST /ui/sessions/end` `{session_id}`: ends a session whatever its last heartbeat (its
/// locks released, its claims requeued), as `cleanup_dead_agents` does for listed sessions.
pub async fn end_session(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    act(
        &app,
        &headers,
        body,
        "cleanup_dead_agents",
        "{session_id}",
        |e: EndSession| // The longest silence allowed: the person ends this session, not every quiet one.
        json!({"sessions": [e.session_id], "stale_threshold_minutes": 10080}),
    )
    .await
}

/// `POST /ui/locks/break` `{file_path}`: releases another agent's lock (`break_lock`).
pub async fn break_lock(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    act(
        &app,
        &headers,
        body,
        "break_lock",
        "{file_path}",
        |l: LockRef| json!({"file_path": l.file_path, "reason": "released from the dashboard"}),
    )
    .await
}

/// `POST /ui/tasks/cancel` `{task_id}` (`cancel_task`).
pub async fn cancel_task(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    act(
        &app,
        &headers,
        body,
        "cancel_task",
        "{task_id}",
        |t: TaskRef| json!({"task_id": t.task_id, "reason": "cancelled from the dashboard"}),
    )
    .await
}

/// `POST /ui/tasks/requeue` `{task_id}` (`requeue_task`).
pub async fn requeue_task(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    act(
        &app,
        &headers,
        body,
        "requeue_task",
        "{task_id}",
        |t: TaskRef| json!({"task_id": t.task_id}),
    )
    .await
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// A one-time sign-in link for `who` (`coord ui`), as a path to open on the server
/// `config` configures.
pub fn sign_in_link(config: &crate::ApiConfig, who: Caller) -> String {
    format!("/ui/login?token={}", config.ui.link(who, Instant::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn changes_need_the_token_and_this_origin() {
        let s = Session {
            who: Caller::new("ops", AGENT_TYPE),
            csrf: "t0k".into(),
            expires: Instant::now(),
        };
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[("x-csrf-token", "t0k"), ("host", "h:1")], true),
            (
                &[("x-csrf-token", "t0k"), ("host", "h:1"), ("origin", "http://h:1")],
                true,
            ),
            (
                &[("x-csrf-token", "t0k"), ("host", "h:1"), ("origin", "http://evil:1")],
                false,
            ),
            (&[("x-csrf-token", "nope"), ("host", "h:1")], false),
            (&[("host", "h:1")], false),
        ];
        for (pairs, ok) in cases {
            assert_eq!(check_change(&s, &headers(pairs)).is_ok(), *ok, "{pairs:?}");
        }
    }
}
