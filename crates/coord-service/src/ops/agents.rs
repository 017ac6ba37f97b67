//! Agents coord launches (docs/agents.md): the pre-flight verdict on a launch, recorded
//! (and refused) here so that every door and the audit trail see the same decision.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::agents::preflight::{self, PreflightRequest, PreflightResult};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordError, CoordResult, ErrorCode, Identity};
use coord_store::OpCtx;

pub struct RecordPreflight;
impl Operation for RecordPreflight {
    const NAME: &'static str = "record_preflight";
    const SUMMARY: &'static str =
        "Record the pre-flight verdict on an agent launch; refuse the launch unless it is valid";
    const DESCRIPTION: &'static str = "Written by `coord agent run` before it launches anything: the plan (agent, \
        profile, runtime, task, tools, writable paths, network policy, Bash commands), the validator (command, model, \
        or disabled — an explicit configuration) and its verdict, or why its answer was not one. Answers \
        {success:true, allowed:true} only for a structured valid verdict or disabled validation; anything else is \
        refused with preflight_denied and the reason, and audited.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    /// Only who may launch agents records a launch's verdict.
    const NEED: Need = Need::new(Permission::SpawnAgent, 0);
    const METERED: bool = false;
    const HTTP: &'static [Http] = &[Http::post("/agents/preflight")];
    const EXAMPLE: &'static str = "{\"target_agent_id\": \"code-reviewer-1a2b3c4d5e6f\", \"plan\": {\"agent\": \"code-reviewer\", \
        \"profile\": \"read_only\", \"runtime\": \"claude\", \"task\": \"Review src/auth\", \"tools\": [\"Read\", \"Grep\"], \
        \"writable\": \"nothing\", \"network_policy\": \"worker_read_only\", \"bash_commands\": [\"git status\"]}, \
        \"validator\": \"command\", \"verdict\": {\"verdict\": \"valid\", \"reasons\": []}}";
    type Request = PreflightRequest;
    type Response = PreflightResult;
    type Args = PreflightRequest;

    fn validate(_: &Coordinator, _: &Identity, req: PreflightRequest) -> CoordResult<PreflightRequest> {
        preflight::validate(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, req: PreflightRequest) -> CoordResult<PreflightResult> {
        match preflight::decide(&req) {
            Ok(()) => {
                let result = PreflightResult {
                    success: true,
                    allowed: true,
                    validator: req.validator,
                };
                c.store().append_audit(ctx.now, ctx.audit(Ok(&result))).await?;
                Ok(result)
            }
            Err(why) => {
                let e = CoordError::new(
                    ErrorCode::PreflightDenied,
                    format!(
                        "the launch of {} was denied by pre-flight validation: {why}",
                        req.target_agent_id
                    ),
                )
                .with_detail("target_agent_id", req.target_agent_id.clone())
                .with_detail("reason", why);
                c.store()
                    .append_audit(ctx.now, ctx.audit::<PreflightResult>(Err(&e)))
                    .await?;
                Err(e)
            }
        }
    }
}
