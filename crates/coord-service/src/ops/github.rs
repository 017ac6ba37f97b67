//! GitHub webhook deliveries (`POST /webhook/github`, which checks the signature and
//! calls `receive_github_delivery` as the webhook's principal): recorded first, then
//! acted on — a push becomes a changeset routed to verification. A delivery recorded
//! but not acted on (the coordinator stopped in between) is acted on at the next start
//! (`resume_deliveries`).

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::profiles::{Need, Permission};
use coord_domain::verification;
use coord_domain::{CoordResult, Identity};
use coord_github::webhook::{
    self as github, Delivery, DeliveryStatus, GithubDeliveryRequest, GithubDeliveryResult, Push, PushPlan,
};
use coord_store::OpCtx;

pub struct ReceiveGithubDelivery;
impl Operation for ReceiveGithubDelivery {
    const NAME: &'static str = "receive_github_delivery";
    const SUMMARY: &'static str = "Record a GitHub webhook delivery and act on it (the webhook door)";
    const DESCRIPTION: &'static str = "What POST /webhook/github does once GitHub's signature checks out: \
        records the delivery (delivery_id from X-GitHub-Delivery, event from X-GitHub-Event, the payload) and acts \
        on it: a push to a branch becomes a changeset of github:<sender login> routed to verification like \
        submit_changeset, at trust 0 (every tier runs; a partial file list runs every policy), and a push to \
        agent/<id>/<task> locks its files to that agent until the branch is merged or deleted; an issue (or pull \
        request) with one agent:<id> label gets that agent locks for its locked:<path> labels and, with \
        status:assigned, a task only that agent can claim; closing it releases the locks and completes (closed as \
        completed) or cancels the task. A delivery id seen before is answered with duplicate:true and nothing is \
        done again. Operator only.";
    const ACCESS: Access = Access::Operator;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[];
    const NOT_HTTP: &'static str = "GitHub reaches it through POST /webhook/github, which checks X-Hub-Signature-256 \
        against the raw body first (GITHUB_WEBHOOK_SECRET)";
    const NOT_MCP: &'static str =
        "GitHub delivers events signed over HTTP; agents submit changes with submit_changeset";
    const EXAMPLE: &'static str = "{\"delivery_id\": \"72d3162e-cc78-11e3-81ab-4c9367dc0958\", \"event\": \"ping\", \
        \"payload\": {\"zen\": \"Keep it logically awesome.\", \"hook_id\": 1}}";
    type Request = GithubDeliveryRequest;
    type Response = GithubDeliveryResult;
    type Args = Delivery;

    fn validate(_: &Coordinator, _: &Identity, req: GithubDeliveryRequest) -> CoordResult<Delivery> {
        github::validate_delivery(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, delivery: Delivery) -> CoordResult<GithubDeliveryResult> {
        let now = ctx.now;
        let recorded = c.store().record_github_delivery(ctx, delivery.clone()).await?;
        if recorded.duplicate {
            return Ok(recorded);
        }
        Ok(process(c, now, delivery).await)
    }
}

/// Acts on a recorded delivery and records what became of it. Never fails: what went
/// wrong is the delivery's `failed` status and note (GitHub would not redeliver anyway).
pub async fn process(c: &Coordinator, now: Option<coord_domain::Timestamp>, d: Delivery) -> GithubDeliveryResult {
    let mut outcome = GithubDeliveryResult {
        success: true,
        delivery_id: d.delivery_id.clone(),
        event: d.event.clone(),
        duplicate: false,
        status: DeliveryStatus::Ignored,
        note: None,
        changeset_id: None,
    };
    match d.event.as_str() {
        "ping" => outcome.note = Some("ping: the webhook reaches coord".into()),
        "push" => match serde_json::from_value::<Push>(d.payload.clone()) {
            Err(e) => {
                outcome.status = DeliveryStatus::Failed;
                outcome.note = Some(format!("not a push payload: {e}"));
            }
            Ok(push) => match github::plan_push(&push) {
                PushPlan::Nothing(why) => {
                    outcome.note = Some(why);
                    branch_locks(c, now, &d, &push, &mut outcome).await;
                }
                PushPlan::Changeset {
                    agent_id,
                    request,
                    incomplete,
                } => match submit_push(c, now, &d, agent_id, request, incomplete).await {
                    Ok(r) => {
                        outcome.status = DeliveryStatus::Processed;
                        outcome.note = Some(format!(
                            "changeset of {} ({} run{})",
                            r.changeset.agent_id,
                            r.runs.len(),
                            if r.runs.len() == 1 { "" } else { "s" }
                        ));
                        outcome.changeset_id = Some(r.changeset.changeset_id);
                        branch_locks(c, now, &d, &push, &mut outcome).await;
                    }
                    Err(e) => {
                        let (status, note) = super::github_sync::stopped(e);
                        outcome.status = status;
                        outcome.note = Some(note);
                    }
                },
            },
        },
        "workflow_run" => {
            let (status, note) = workflow_run(c, now, &d).await;
            outcome.status = status;
            outcome.note = Some(note);
        }
        "issues" | "issue_comment" | "pull_request" | "delete" => {
            let (status, note) = match d.event.as_str() {
                // A comment carries the issue as it is: reconciled (and its label locks
                // renewed) like any event on it.
                "issues" | "issue_comment" => super::github_sync::issues(c, now, &d).await,
                "pull_request" => super::github_sync::pull_request(c, now, &d).await,
                _ => super::github_sync::delete(c, now, &d).await,
            };
            outcome.status = status;
            outcome.note = Some(note);
        }
        other => outcome.note = Some(format!("coord does not act on {other} events")),
    }
    if let Err(e) = c.store().finish_github_delivery(now, outcome.clone()).await {
        tracing::warn!(delivery = %d.delivery_id, error = %e.message, "could not record what became of a delivery");
    }
    outcome
}

/// A `workflow_run` that completed finishes the verification run that dispatched it
/// (found by the run id the worker recorded); the worker polling it learns it is done.
async fn workflow_run(c: &Coordinator, now: Option<coord_domain::Timestamp>, d: &Delivery) -> (DeliveryStatus, String) {
    let e: coord_github::sync::WorkflowRunEvent = match serde_json::from_value(d.payload.clone()) {
        Ok(e) => e,
        Err(e) => return (DeliveryStatus::Failed, format!("not a workflow_run payload: {e}")),
    };
    let run = &e.workflow_run;
    if e.action != "completed" {
        return (DeliveryStatus::Ignored, format!("workflow run {} {}", run.id, e.action));
    }
    let status = verification::conclusion_status(run.conclusion.as_deref());
    let finish = verification::ExternalFinish {
        executor: verification::Executor::GithubActions,
        external_id: run.id.to_string(),
        status,
        reason: Some(format!(
            "GitHub Actions run {} concluded {}",
            run.id,
            run.conclusion.as_deref().unwrap_or("without a conclusion")
        )),
        url: run.html_url.clone(),
    };
    let who = Identity {
        agent_id: github::WEBHOOK_AGENT.into(),
        agent_type: github::WEBHOOK_AGENT_TYPE.into(),
    };
    let ctx = OpCtx::internal(
        now,
        who,
        "finish_verification_run",
        serde_json::json!({"delivery_id": d.delivery_id, "external_id": finish.external_id, "status": status.as_str()}),
    );
    match c.store().finish_external_run(ctx, finish).await {
        Ok(Some((policy, v))) => {
            super::verification::report_to_github(c, now, &v, Some(&policy)).await;
            (
                DeliveryStatus::Processed,
                format!(
                    "changeset {}: GitHub Actions run {} {}",
                    v.changeset.changeset_id,
                    run.id,
                    status.as_str()
                ),
            )
        }
        Ok(None) => (
            DeliveryStatus::Ignored,
            format!("workflow run {} is not a running verification run", run.id),
        ),
        Err(e) => super::github_sync::stopped(e),
    }
}

/// A push to an agent branch also locks its files to the agent (see
/// `github_sync::push_locks`); what it did joins the delivery's note.
async fn branch_locks(
    c: &Coordinator,
    now: Option<coord_domain::Timestamp>,
    d: &Delivery,
    push: &Push,
    outcome: &mut GithubDeliveryResult,
) {
    match super::github_sync::push_locks(c, now, d, push).await {
        Ok(None) => {}
        Ok(Some(note)) => {
            if outcome.status == DeliveryStatus::Ignored {
                outcome.status = DeliveryStatus::Processed;
            }
            let before = outcome.note.take().unwrap_or_default();
            outcome.note = Some(if before.is_empty() {
                note
            } else {
                format!("{before}; {note}")
            });
        }
        Err(e) => {
            let (status, note) = super::github_sync::stopped(e);
            outcome.status = status;
            outcome.note = Some(format!("branch locks: {note}"));
        }
    }
}

/// A push's changeset, submitted as `github:<login>` (type `github`, routed at trust 0:
/// every tier runs), audited as `submit_changeset` with the delivery id.
async fn submit_push(
    c: &Coordinator,
    now: Option<coord_domain::Timestamp>,
    d: &Delivery,
    agent_id: String,
    request: verification::SubmitChangesetRequest,
    incomplete: Option<String>,
) -> CoordResult<verification::VerificationResult> {
    let who = coord_domain::Caller::new(agent_id, github::WEBHOOK_AGENT_TYPE).validate()?;
    let parameters = serde_json::json!({
        "delivery_id": d.delivery_id,
        "files": request.files,
        "removed": request.removed,
        "branch": request.branch,
        "commit": request.commit,
    });
    let ctx = OpCtx::internal(now, who.clone(), super::verification::SubmitChangeset::NAME, parameters);
    let mut changeset = match verification::validate_changeset(request, None) {
        Ok(cs) => cs,
        Err(e) => return super::refuse(c, &ctx, e).await,
    };
    changeset.incomplete = incomplete;
    changeset.repository = d
        .payload
        .pointer("/repository/full_name")
        .and_then(serde_json::Value::as_str)
        .and_then(coord_github::sync::repository_name);
    super::verification::submit(c, ctx, changeset, "github").await
}

/// Acts on the deliveries recorded more than a minute ago and not acted on (a
/// coordinator stopped in between; younger ones may still be in hand), one batch of at
/// most 100 per call; answers how many.
pub async fn resume_deliveries(c: &Coordinator, now: Option<coord_domain::Timestamp>) -> CoordResult<usize> {
    let before = now.unwrap_or_else(chrono::Utc::now) - chrono::Duration::minutes(1);
    let batch = c.store().unprocessed_github_deliveries(before, 100).await?;
    let n = batch.len();
    for d in batch {
        process(c, now, d).await;
    }
    Ok(n)
}
