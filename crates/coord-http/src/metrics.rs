//! `GET /metrics`: Prometheus metrics (see `coord_service::metrics`). The scrape is a
//! `get_stats` call by the key's caller — so the same rule decides who may read the
//! fleet's figures on every door (an administrator: an operator key or a trust-4 agent),
//! and every scrape is audited like any other read — rendered with this process's own
//! operation counters. A database that does not answer still yields the process half,
//! with `coord_store_up 0`, so the scrape shows the outage instead of failing.

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
    let stats = async {
        let authenticated = auth::authenticate(&app.auth, app.server.as_ref(), &headers).await?;
        let claims = auth::Claims::of(&headers, None, None);
        let who = Principal::new(auth::identity(&authenticated, claims)?, authenticated.credential())
            .with_origin(authenticated.origin());
        call::<ops::audit::GetStats, _>(app.server.as_ref(), &who, Empty {}).await
    }
    .await;
    let stats = match stats {
        Ok(s) => Some(s),
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable) => {
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
