//! `GET /metrics`: Prometheus metrics (see `coord_service::metrics`). The scrape is a
//! `get_stats` call by the key's caller — so the same rule decides who may read the
//! fleet's figures on every door (an administrator: an operator key or a trust-4 agent),
//! and every scrape is audited like any other read — rendered with this process's own
//! operation counters. A database that does not answer still yields the process half to
//! an operator key (environment keys are checked without the database), with
//! `coord_store_up 0`, so the scrape shows the outage instead of failing.

use crate::api::{App, error_response};
use crate::auth;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use coord_domain::Empty;
use coord_domain::access::Principal;
use coord_domain::error::ErrorKind;
use coord_service::metrics::{CONTENT_TYPE, Metrics};
use coord_service::{call, ops};

pub async fn metrics(State(app): State<App>, headers: HeaderMap) -> Response {
    let authenticated = match auth::authenticate(&app.auth, app.server.as_ref(), &headers).await {
        Ok(a) => a,
        Err(e) => return error_response(&e),
    };
    let claims = auth::Claims::of(&headers, None, None);
    let who = match auth::identity(&authenticated, claims) {
        Ok(c) => Principal::new(c, authenticated.credential()).with_origin(authenticated.origin()),
        Err(e) => return error_response(&e),
    };
    let stats = match call::<ops::audit::GetStats, _>(app.server.as_ref(), &who, Empty {}).await {
        Ok(s) => Some(s),
        // The store did not answer: an operator key (checked without the database) still
        // gets this process's half; anyone else is told the database is unavailable.
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable) && authenticated == auth::Authenticated::Operator => {
            tracing::warn!(error = %e, "metrics: the fleet's figures could not be read");
            None
        }
        Err(e) => return error_response(&e),
    };
    // A remote coordinator (`coord serve` is always local) has no counters of its own.
    let body = match app.server.local() {
        Some(c) => c.metrics().render(stats),
        None => Metrics::default().render(stats),
    };
    ([(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))], body).into_response()
}
