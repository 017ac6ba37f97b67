//! Destructive-operation guardrails: `check_guardrails` analyses a command line (with a
//! real bash parser, `coord-guardrails`) and the files an edit changes, and refuses what
//! is destructive for the caller — approvable: a person's approval of this exact command
//! lets it pass once.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::guardrails::{
    self, CheckGuardrailsRequest, CheckGuardrailsResult, Finding, GuardCheck, validate_check,
};
use coord_domain::profiles::{self, Need};
use coord_domain::{CoordError, CoordResult, Identity};
use coord_store::{OpCtx, UsageOf};

pub struct CheckGuardrails;
impl Operation for CheckGuardrails {
    const NAME: &'static str = "check_guardrails";
    const SUMMARY: &'static str =
        "Check a shell command (or the files an edit changes) against the destructive-operation guardrails";
    const DESCRIPTION: &'static str = "Before running a shell command, check it: command is the whole command line \
        (bash syntax; pipelines, chains, subshells, sh -c, eval, sudo/env/xargs wrappers and substitutions are \
        all analysed), files are paths an edit would change. Destructive operations (force push, hard reset, \
        git clean -f, recursive or bulk deletion, DELETE without WHERE, TRUNCATE, DROP, deployments) are \
        refused: {success:false, error:\"destructive_operation_blocked\", operation:\"force_push\", category, \
        matched, findings, approval_required:true, approval_id}; credential files (.env, *credentials*, \
        *secrets*, private keys): {error:\"credential_file_protected\", requires:\"manual_review\"}; schema \
        migrations need trust 3; what cannot be analysed (a parse error, a command only known at run time) is \
        refused too. Once a person approves the approval_id, the same check passes once. Otherwise answers \
        {success:true, allowed:true, findings (warnings such as deleting a feature branch)}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::post("/guardrails/check").errors(&[409])];
    const EXAMPLE: &'static str = "{\"command\": \"git push --force origin main\"}";
    type Request = CheckGuardrailsRequest;
    type Response = CheckGuardrailsResult;
    type Args = GuardCheck;

    fn validate(_: &Coordinator, _: &Identity, req: CheckGuardrailsRequest) -> CoordResult<GuardCheck> {
        validate_check(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, check: GuardCheck) -> CoordResult<CheckGuardrailsResult> {
        let mut findings = check
            .command
            .as_deref()
            .map(coord_guardrails::analyze)
            .unwrap_or_default();
        findings.extend(coord_guardrails::analyze_files(&check.files));
        let (result, refusal) = judge(c, &ctx, findings).await?;
        c.store().guard_decision(ctx, result, refusal).await
    }
}

/// The decision over `findings` for the caller's profile (trust, elevated operations;
/// an operator key is judged as the identity it names): the result, and the refusal when
/// something is not allowed.
async fn judge(
    c: &Coordinator,
    ctx: &OpCtx,
    findings: Vec<Finding>,
) -> CoordResult<(CheckGuardrailsResult, Option<CoordError>)> {
    let facts = c
        .store()
        .policy_facts(ctx.now, &ctx.who.agent_id, Some(&ctx.who.agent_type), UsageOf::Nothing)
        .await?;
    let (profile, _) = profiles::resolve(facts.by_agent, facts.by_type);
    let decision = guardrails::decide(&findings, profile.trust_level, &profile.elevated_operations);
    let result = CheckGuardrailsResult {
        success: true,
        allowed: true,
        elevated: decision.as_ref().is_ok_and(|e| *e),
        findings,
        approval_used: None,
    };
    Ok((result, decision.err()))
}

/// Guardrails inside another operation (`complete_work`): nothing happens when
/// `findings` are allowed; otherwise a live approval of exactly this request is spent
/// (an audit row of its own) or the operation is refused — audited and queued for a
/// person like any guardrail block.
pub(crate) async fn enforce(c: &Coordinator, ctx: &OpCtx, findings: Vec<Finding>) -> CoordResult<()> {
    let (result, refusal) = judge(c, ctx, findings).await?;
    if refusal.is_some() {
        c.store().guard_decision(ctx.clone(), result, refusal).await?;
    }
    Ok(())
}
