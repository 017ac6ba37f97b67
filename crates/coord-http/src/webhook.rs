//! `POST /webhook/github`: GitHub's deliveries. Authentication is the signature
//! (`X-Hub-Signature-256`, HMAC-SHA-256 of the raw body under `GITHUB_WEBHOOK_SECRET`):
//! its header is checked before the body is read (up to GitHub's 25 MB), the HMAC over
//! the body before anything of it is used; then the delivery is handed to
//! `receive_github_delivery` as the webhook's principal, like any operation. Without a
//! configured secret every delivery is refused.

use crate::api::{App, error_response, read_body};
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use coord_domain::access::{Credential, Principal};
use coord_domain::{Caller, CoordError, ErrorCode};
use coord_github::webhook::{self as github, MAX_PAYLOAD_BYTES, SignatureError};
use coord_service::ops::github::ReceiveGithubDelivery;
use coord_service::{Operation, op_named};
use serde_json::{Value, json};

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn refused(why: SignatureError) -> Response {
    let code = match why {
        SignatureError::NotConfigured => ErrorCode::Forbidden,
        _ => ErrorCode::Unauthorized,
    };
    error_response(&CoordError::new(code, why.message()))
}

pub async fn github(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    // The signature header first: without one (or a secret), nothing of the body is read.
    let signature = header(&headers, "x-hub-signature-256");
    if let Err(why) = github::claimed_signature(&app.github_secrets, signature) {
        return refused(why);
    }
    let bytes = match read_body(&app, body, MAX_PAYLOAD_BYTES).await {
        Ok(b) => b,
        Err(e) => return error_response(&e),
    };
    if let Err(why) = github::verify_signature(&app.github_secrets, &bytes, signature) {
        return refused(why);
    }
    let payload: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return error_response(&CoordError::new(
                ErrorCode::InvalidJson,
                format!("the delivery is not JSON: {e}"),
            ));
        }
    };
    let request = json!({
        "delivery_id": header(&headers, "x-github-delivery").unwrap_or_default(),
        "event": header(&headers, "x-github-event").unwrap_or_default(),
        "payload": payload,
    });
    let who = Principal::new(
        Caller::new(github::WEBHOOK_AGENT, github::WEBHOOK_AGENT_TYPE),
        Credential::Operator,
    );
    let op = match op_named(ReceiveGithubDelivery::NAME) {
        Ok(op) => op,
        Err(e) => return error_response(&e),
    };
    match app.server.invoke(op, &who, Ok(request)).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_response(&e),
    }
}
