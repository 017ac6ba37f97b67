//! Requirement "Session Continuity".

use crate::{Backend, Harness, agent};
use coord_domain::ErrorCode;
use coord_domain::handoffs::{ReadHandoffRequest, WriteHandoffRequest};
use coord_domain::sessions::RegisterSessionRequest;
use coord_service::CoordinationExt as _;

fn items(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| s.to_string()).collect())
}

pub async fn handoffs_write_and_read_newest_first(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let (a, bb) = (agent("agent-a"), agent("agent-b"));
    let none = h.coord.read_handoff(&a, ReadHandoffRequest::default()).await.unwrap();
    assert_eq!(
        serde_json::to_value(&none).unwrap(),
        serde_json::json!({"handoffs": []})
    );

    let session = h
        .coord
        .register_session(&a, RegisterSessionRequest::default())
        .await
        .unwrap();
    let first = h
        .coord
        .write_handoff(
            &a,
            WriteHandoffRequest {
                summary: "Implemented file locking".into(),
                completed_work: items(&["acquire", "release"]),
                in_progress: items(&["tests"]),
                decisions: items(&["fencing tokens from a counter"]),
                next_steps: items(&["benchmarks"]),
                relevant_files: items(&["src/locks.rs"]),
            },
        )
        .await
        .unwrap();
    assert!(first.success);
    h.advance(1);
    let second = h
        .coord
        .write_handoff(
            &a,
            WriteHandoffRequest {
                summary: "Second session".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    h.advance(1);
    h.coord
        .write_handoff(
            &bb,
            WriteHandoffRequest {
                summary: "B's notes".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let latest = h.coord.read_handoff(&a, ReadHandoffRequest::default()).await.unwrap();
    assert_eq!(latest.handoffs.len(), 1, "default limit is 1");
    assert_eq!(latest.handoffs[0].id, second.handoff_id);
    let two = h
        .coord
        .read_handoff(
            &a,
            ReadHandoffRequest {
                agent_name: None,
                limit: Some(10),
            },
        )
        .await
        .unwrap();
    let ids: Vec<_> = two.handoffs.iter().map(|x| x.id.clone()).collect();
    assert_eq!(
        ids,
        [second.handoff_id.clone(), first.handoff_id.clone()],
        "own handoffs, newest first"
    );
    let full = &two.handoffs[1];
    assert_eq!(full.summary, "Implemented file locking");
    assert_eq!(full.completed_work, ["acquire", "release"]);
    assert_eq!(full.in_progress, ["tests"]);
    assert_eq!(full.decisions, ["fencing tokens from a counter"]);
    assert_eq!(full.next_steps, ["benchmarks"]);
    assert_eq!(full.relevant_files, ["src/locks.rs"]);
    assert_eq!(full.agent_name, "agent-a");
    assert_eq!(full.session_id.as_deref(), Some(session.session_id.as_str()));
    assert_eq!(full.created_at, h.now() - chrono::Duration::minutes(2));

    let of_a = h
        .coord
        .read_handoff(
            &bb,
            ReadHandoffRequest {
                agent_name: Some("agent-a".into()),
                limit: Some(5),
            },
        )
        .await
        .unwrap();
    assert_eq!(of_a.handoffs.len(), 2);
    let everyone = h
        .coord
        .read_handoff(
            &bb,
            ReadHandoffRequest {
                agent_name: Some("*".into()),
                limit: Some(5),
            },
        )
        .await
        .unwrap();
    let names: Vec<_> = everyone.handoffs.iter().map(|x| x.agent_name.as_str()).collect();
    assert_eq!(names, ["agent-b", "agent-a", "agent-a"]);
    let nobody = h
        .coord
        .read_handoff(
            &bb,
            ReadHandoffRequest {
                agent_name: Some("nobody".into()),
                limit: None,
            },
        )
        .await
        .unwrap();
    assert!(nobody.handoffs.is_empty());
}

pub async fn handoffs_validation(b: &dyn Backend) {
    let h = Harness::new(b).await;
    let a = agent("agent-a");
    let e = h
        .coord
        .write_handoff(&a, WriteHandoffRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidArgument, Some("summary"))
    );
    let e = h
        .coord
        .write_handoff(
            &a,
            WriteHandoffRequest {
                summary: "s".into(),
                next_steps: items(&["ok", " "]),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("next_steps"));
    let e = h
        .coord
        .read_handoff(
            &a,
            ReadHandoffRequest {
                agent_name: None,
                limit: Some(0),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("limit"));
    assert!(
        h.coord
            .read_handoff(&a, ReadHandoffRequest::default())
            .await
            .unwrap()
            .handoffs
            .is_empty()
    );
}
