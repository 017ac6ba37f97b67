//! `coord approval`: list, show, approve, deny, wait. Every subcommand is one registry
//! operation (`wait` polls `get_approval`); this module renders them for people.

use crate::args::ApprovalsCommand;
use crate::context::Context;
use crate::output::{Output, ellipsis, table, when};
use coord_domain::access::Principal;
use coord_domain::approvals::{
    Approval, ApprovalResult, ApprovalStatus, DecideApprovalRequest, Decision, GetApprovalRequest,
    ListApprovalsRequest, ListApprovalsResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::approvals as ops;
use coord_service::{Coordination, Operation, call};
use std::time::{Duration, Instant};

/// How often `wait` asks.
const POLL: Duration = Duration::from_secs(1);

async fn run_op<O: Operation>(coord: &dyn Coordination, ctx: &Context, req: O::Request) -> CoordResult<O::Response> {
    call::<O, _>(coord, &Principal::local(ctx.caller.clone()), req).await
}

fn status_filter(s: &str) -> CoordResult<Option<ApprovalStatus>> {
    if s == "all" {
        return Ok(None);
    }
    ApprovalStatus::parse(s).map(Some).ok_or_else(|| {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "status",
            format!("--status must be pending, approved, denied, used, expired or all, not {s:?}"),
        )
    })
}

pub async fn run(cmd: ApprovalsCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match cmd {
        ApprovalsCommand::List { status, by, limit } => {
            let status = match status_filter(&status) {
                Ok(s) => s,
                Err(e) => return crate::ops::refused::<ops::ListApprovals>(out, coord, &ctx.caller, e).await,
            };
            let req = ListApprovalsRequest {
                status,
                requested_by: by,
                limit,
            };
            out.result(run_op::<ops::ListApprovals>(coord, ctx, req).await, render_list)
        }
        ApprovalsCommand::Show { approval_id } => {
            out.result(get(coord, ctx, approval_id).await, |r| render_one(&r.approval))
        }
        ApprovalsCommand::Approve {
            approval_id,
            note,
            valid_minutes,
        } => decide(coord, ctx, out, approval_id, Decision::Approve, note, valid_minutes).await,
        ApprovalsCommand::Deny { approval_id, note } => {
            decide(coord, ctx, out, approval_id, Decision::Deny, note, None).await
        }
        ApprovalsCommand::Wait {
            mut approval_id,
            timeout,
        } => {
            let started = Instant::now();
            loop {
                let r = match get(coord, ctx, approval_id.clone()).await {
                    Ok(r) => r,
                    Err(e) => return out.error(&e),
                };
                // A prefix named it once: later polls name it whole (a newer request
                // sharing the prefix must not make the wait ambiguous).
                approval_id.clone_from(&r.approval.approval_id);
                let status = r.approval.status;
                if status != ApprovalStatus::Pending || started.elapsed() >= timeout {
                    let code = out.result(Ok(&r), |r| render_one(&r.approval));
                    return match status {
                        ApprovalStatus::Approved => code,
                        _ => {
                            if !out.json {
                                eprintln!(
                                    "approval {approval_id} is {}{}",
                                    status.as_str(),
                                    if status == ApprovalStatus::Pending {
                                        " (timed out waiting)"
                                    } else {
                                        ""
                                    }
                                );
                            }
                            crate::output::EXIT_REFUSED
                        }
                    };
                }
                tokio::time::sleep(POLL.min(timeout.saturating_sub(started.elapsed()))).await;
            }
        }
    }
}

async fn get(coord: &dyn Coordination, ctx: &Context, approval_id: String) -> CoordResult<ApprovalResult> {
    run_op::<ops::GetApproval>(coord, ctx, GetApprovalRequest { approval_id }).await
}

async fn decide(
    coord: &dyn Coordination,
    ctx: &Context,
    out: Output,
    approval_id: String,
    decision: Decision,
    note: Option<String>,
    valid_minutes: Option<i64>,
) -> u8 {
    let req = DecideApprovalRequest {
        approval_id,
        decision,
        note,
        valid_minutes,
    };
    out.result(run_op::<ops::DecideApproval>(coord, ctx, req).await, |r| {
        let a = &r.approval;
        let changeset = a.parameters.get("changeset_id").and_then(serde_json::Value::as_str);
        match (a.status, changeset) {
            // A review of a changeset (the verification gateway): the decision is the check.
            (_, Some(cs)) if a.operation == coord_domain::verification::REVIEW_OPERATION => format!(
                "{} {}: changeset {cs}'s run of policy {} follows it (coord verify status {cs})",
                a.status.as_str(),
                a.approval_id,
                a.parameters
                    .get("policy")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?"),
            ),
            (ApprovalStatus::Approved, _) => format!(
                "approved {}: {}'s {} may pass once until {}",
                a.approval_id,
                a.agent_id,
                a.operation,
                when(a.expires_at)
            ),
            _ => format!("{} {}", a.status.as_str(), a.approval_id),
        }
    })
}

fn render_list(r: &ListApprovalsResult) -> String {
    if r.approvals.is_empty() {
        return "no approval requests".into();
    }
    let mut t = table(&["ID", "STATUS", "AGENT", "OPERATION", "WHY", "EXPIRES"]);
    for a in &r.approvals {
        t.add_row(vec![
            a.approval_id.clone(),
            a.status.as_str().to_string(),
            a.agent_id.clone(),
            a.operation.clone(),
            ellipsis(&a.reason, 60),
            when(a.expires_at),
        ]);
    }
    t.to_string()
}

fn render_one(a: &Approval) -> String {
    let mut lines = vec![
        format!("approval    {}", a.approval_id),
        format!("status      {}", a.status.as_str()),
        format!("agent       {} ({})", a.agent_id, a.agent_type),
        format!("operation   {}", a.operation),
        format!("parameters  {}", a.parameters),
        format!("refused     {}: {}", a.error, a.reason),
        format!("requested   {}", when(a.requested_at)),
        format!("expires     {}", when(a.expires_at)),
    ];
    if let (Some(by), Some(at)) = (&a.decided_by, a.decided_at) {
        lines.push(format!("decided     by {by}, {}", when(at)));
    }
    if let Some(note) = &a.note {
        lines.push(format!("note        {note}"));
    }
    if let Some(at) = a.used_at {
        lines.push(format!("used        {}", when(at)));
    }
    lines.join("\n")
}
