//! Managed API keys: bound identity, expiry, revocation; the secret is never stored.

use crate::{Backend, Harness, operator};
use coord_domain::ErrorCode;
use coord_domain::access::{Credential, Principal};
use coord_domain::audit::AuditQueryRequest;
use coord_domain::keys::{CreateApiKeyRequest, KeyOrigin, KeyStatus, RevokeApiKeyRequest};
use coord_domain::locks::AcquireLockRequest;
use coord_service::CoordinationExt as _;
use coord_service::Server as _;
use coord_service::ops::locks;

pub async fn keys_bind_identities_expire_and_revoke(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let admin = operator("admin");
    let forever = h
        .coord
        .create_api_key(
            &admin,
            CreateApiKeyRequest {
                bound_agent_id: "cloud-1".into(),
                bound_agent_type: "codex".into(),
                expires_in_minutes: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(forever.api_key.starts_with("coord_") && forever.api_key.len() > 60);
    assert_eq!(forever.expires_at, None);
    h.advance(1);
    let task = h
        .coord
        .create_api_key(
            &admin,
            CreateApiKeyRequest {
                bound_agent_id: "task-7".into(),
                bound_agent_type: "codex_cloud".into(),
                expires_in_minutes: Some(120),
                task_id: Some("T-7".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(task.expires_at, Some(h.now() + chrono::Duration::minutes(120)));

    let (who, origin) = h
        .local
        .authenticate_key(&forever.api_key)
        .await
        .unwrap()
        .expect("a live key authenticates");
    assert_eq!((who.agent_id.as_str(), who.agent_type.as_str()), ("cloud-1", "codex"));
    assert_eq!(
        (origin.key_id.as_str(), origin.task_id),
        (forever.key_id.as_str(), None)
    );
    assert!(h.local.authenticate_key("coord_not_a_key").await.unwrap().is_none());
    let (cloud, origin) = h.local.authenticate_key(&task.api_key).await.unwrap().expect("live");
    assert_eq!(origin.task_id.as_deref(), Some("T-7"));
    // Every audit row the key causes names the key and its task.
    let as_key = Principal::new(cloud, Credential::Bound).with_origin(Some(origin.clone()));
    coord_service::call::<locks::AcquireLock, _>(
        &h.local,
        &as_key,
        AcquireLockRequest {
            file_path: "src/cloud.rs".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let rows = h
        .coord
        .query_audit(
            &admin,
            AuditQueryRequest {
                agent_id: Some("task-7".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // (The issue time is the key's own row's, not repeated in every audit row.)
    let recorded = KeyOrigin {
        issued_at: None,
        ..origin.clone()
    };
    assert_eq!(rows.entries[0].origin, Some(recorded), "{:?}", rows.entries[0]);

    h.advance(120);
    let e = h.local.authenticate_key(&task.api_key).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Unauthorized);
    assert!(e.message.contains("expired at"), "{}", e.message);
    h.coord
        .revoke_api_key(
            &admin,
            RevokeApiKeyRequest {
                key_id: forever.key_id.clone(),
            },
        )
        .await
        .unwrap();
    let e = h.local.authenticate_key(&forever.api_key).await.unwrap_err();
    assert!(e.message.contains("was revoked at"), "{}", e.message);
    h.coord
        .revoke_api_key(
            &admin,
            RevokeApiKeyRequest {
                key_id: forever.key_id.clone(),
            },
        )
        .await
        .expect("revoking twice is fine");
    let e = h
        .coord
        .revoke_api_key(
            &admin,
            RevokeApiKeyRequest {
                key_id: "key_nope".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);

    let listed = h.coord.list_api_keys(&admin).await.unwrap();
    let statuses: Vec<_> = listed.keys.iter().map(|k| (k.key_id.clone(), k.status)).collect();
    assert_eq!(
        statuses,
        [
            (forever.key_id.clone(), KeyStatus::Revoked),
            (task.key_id.clone(), KeyStatus::Expired)
        ]
    );
    assert_eq!(listed.keys[0].created_by, "admin");

    let bad = h
        .coord
        .create_api_key(
            &admin,
            CreateApiKeyRequest {
                bound_agent_id: " ".into(),
                bound_agent_type: "x".into(),
                expires_in_minutes: None,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidIdentity);
    let audit = h
        .coord
        .query_audit(
            &admin,
            AuditQueryRequest {
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let text = serde_json::to_string(&audit).unwrap();
    assert!(
        !text.contains(&forever.api_key) && !text.contains(&task.api_key),
        "secrets never reach the audit trail"
    );
    assert!(audit.entries.iter().any(|e| e.operation == "create_api_key"));
}
