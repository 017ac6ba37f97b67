//! Generic cases that iterate the operation registry: every audited operation writes
//! exactly one audit row per call — for a valid request (answered or refused) and for a
//! request that is not even of the operation's type — on every store and through every
//! door the suite runs through.

use crate::{Backend, Door, Harness, operator};
use coord_domain::access::Principal;
use coord_domain::audit::AuditQueryRequest;
use coord_domain::error::ErrorKind;
use coord_domain::{CoordError, ErrorCode};
use coord_service::{Audit, CoordinationExt as _, Method, ops};
use serde_json::Value;

async fn rows(h: &Harness, agent_id: &str, operation: &str) -> Vec<bool> {
    let log = h
        .local
        .query_audit(
            &operator("auditor"),
            AuditQueryRequest {
                agent_id: Some(agent_id.into()),
                operation: Some(operation.into()),
                limit: Some(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    log.entries.iter().map(|e| e.success).collect()
}

/// Whether the harness's door carries `op` (an operation a door does not carry says why
/// and is not reached through it).
fn carried(h: &Harness, op: &coord_service::OpEntry) -> bool {
    match h.door {
        Door::InProcess => true,
        Door::Http => !op.http.is_empty(),
        Door::Mcp => op.not_mcp.is_empty(),
    }
}

pub async fn registry_every_audited_operation_writes_one_row_per_call(b: &dyn Backend) {
    // (With a launcher: without one spawn_agent is unavailable, by design.)
    let launcher = std::sync::Arc::new(crate::cases::spawn::Recorder::default());
    let h = Harness::with_launcher(b, launcher, |_| {}).await;
    for op in ops() {
        if !carried(&h, op) {
            continue;
        }
        let name = format!("reg-{}", op.name);
        // An administrator: administrative operations refuse others before reading the
        // request (profiles/cases check that).
        let who = Principal::local(operator(&name));
        let example: Value = serde_json::from_str(op.example).unwrap();
        let answered = h.coord.invoke(op, &who, Ok(example)).await;
        if let Err(e) = &answered {
            assert!(
                !matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal),
                "{}: {e:?}",
                op.name
            );
        }
        // Not an object at all. (MCP arguments are always objects, and a remote client
        // cannot put a non-object in a query string or a path.)
        let through_a_door = h.door != Door::InProcess;
        let get = h.door == Door::Mcp || op.http.first().is_some_and(|b| b.method == Method::Get);
        if !(through_a_door && get) {
            let refused = h.coord.invoke(op, &who, Ok(Value::Array(vec![]))).await;
            assert_eq!(
                refused.map_err(|e| e.code),
                Err(ErrorCode::InvalidArgument),
                "{}",
                op.name
            );
        }
        // What a door could not read at all is audited too.
        if !through_a_door {
            let unread = CoordError::new(ErrorCode::InvalidJson, "not JSON");
            assert!(h.coord.invoke(op, &who, Err(unread)).await.is_err(), "{}", op.name);
        }
        let got = rows(&h, &name, op.name).await;
        let want = match (op.audit, through_a_door, get) {
            (Audit::Never, ..) => 0,
            (Audit::Always, false, _) => 3,
            (Audit::Always, true, true) => 1,
            (Audit::Always, true, false) => 2,
        };
        assert_eq!(got.len(), want, "{}: audit rows {got:?}", op.name);
        if want >= 2 {
            // Newest first: the refusals are failures.
            assert!(!got[0], "{}: {got:?}", op.name);
        }
    }
}

/// Bad input is refused, never ignored: a field no operation knows (a misspelt `ttl` for
/// `ttl_minutes` would otherwise take the default) is refused with its name, on every
/// door, and nothing is done.
pub async fn registry_unknown_request_fields_are_refused_by_name(b: &dyn Backend) {
    let launcher = std::sync::Arc::new(crate::cases::spawn::Recorder::default());
    let h = Harness::with_launcher(b, launcher, |_| {}).await;
    for op in ops() {
        if !carried(&h, op) {
            continue;
        }
        let who = Principal::local(operator(&format!("unknown-{}", op.name)));
        let Value::Object(mut request) = serde_json::from_str(op.example).unwrap() else {
            continue;
        };
        request.insert("ttl_typo".into(), Value::from(5));
        let e = h
            .coord
            .invoke(op, &who, Ok(Value::Object(request)))
            .await
            .expect_err(op.name);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{}: {e:?}", op.name);
        assert!(
            e.message.contains("ttl_typo"),
            "{}: the refusal names the field: {e:?}",
            op.name
        );
    }
}
