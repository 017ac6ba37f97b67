//! Destructive-operation guardrails: `check_guardrails` analyses a command line (with a
//! real bash parser, `coord-guardrails`) and the files an edit changes, and refuses what
//! is destructive for the caller — approvable: a person's approval of this exact command
//! lets it pass once.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::guardrail_rules::{
    GuardrailEntry, GuardrailRule, ListGuardrailsResult, NewRule, ResetGuardrailRequest, ResetGuardrailResult,
    RuleSource, SetGuardrailRequest, SetGuardrailResult, validate_name, validate_set,
};
use coord_domain::guardrails::{
    self, CheckGuardrailsRequest, CheckGuardrailsResult, Finding, GuardCheck, validate_check,
};
use coord_domain::profiles::{self, Need, Permission};
use coord_domain::{CoordError, CoordResult, Empty, ErrorCode, Identity};
use coord_guardrails::patterns::{Pattern, Patterns, builtin, builtin_patterns};
use coord_store::{GuardrailRows, OpCtx, UsageOf};
use std::sync::{Arc, Mutex, PoisonError};

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
    // Every decision on the caller's facts is made in `guard_decision`, which confirms them.
    const POLICY_FROM_LAST_CALL: bool = true;
    const HTTP: &'static [Http] = &[Http::post("/guardrails/check").errors(&[409])];
    const EXAMPLE: &'static str = "{\"command\": \"git push --force origin main\"}";
    type Request = CheckGuardrailsRequest;
    type Response = CheckGuardrailsResult;
    type Args = GuardCheck;

    fn validate(_: &Coordinator, _: &Identity, req: CheckGuardrailsRequest) -> CoordResult<GuardCheck> {
        validate_check(req)
    }

    async fn execute(c: &Coordinator, mut ctx: OpCtx, check: GuardCheck) -> CoordResult<CheckGuardrailsResult> {
        if let Some(tool) = check.tool.as_deref()
            && let Err(e) = c.check_activation(&ctx.who, Some(tool)).await
        {
            c.audit_denial(&ctx, &e).await;
            return Err(e);
        }
        // The pattern registry is read (and, in a new process such as a hook, compiled:
        // tens of milliseconds) only for a command; files alone do not need it.
        let mut findings = match check.command.as_deref() {
            Some(cmd) => {
                let facts = coord_guardrails::Facts {
                    git_aliases: check.git_aliases.as_ref(),
                    files: check.entry_files.as_ref(),
                };
                coord_guardrails::analyze_in(cmd, &*patterns_for(c, &mut ctx).await?, facts)
            }
            None => Vec::new(),
        };
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
    // The facts the pipeline decided the call on when they are the caller's last call's:
    // the store confirms them when it records the decision (`PolicyCheck`).
    let facts = match &ctx.policy {
        Some(check) => check.facts.clone(),
        None => {
            c.store()
                .policy_facts(ctx.now, &ctx.who.agent_id, Some(&ctx.who.agent_type), UsageOf::Nothing)
                .await?
        }
    };
    let (profile, source) = profiles::resolve(facts.by_agent, facts.by_type);
    let profile = profiles::within_reach(profile, source, ctx.credential);
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

/// Guardrails inside another operation (`complete_work`), before it runs: nothing
/// happens when `findings` are allowed outright; a refusal spends a live approval of
/// exactly this request (a step of its own) or refuses the operation — audited and queued
/// for a person like any guardrail block. An elevated pass is answered, to be recorded
/// with [`record_elevated`] once the operation has succeeded.
///
/// An approval spent has committed, confirming the caller's facts of the call (`ctx.policy`
/// is cleared): the operation after it must not be decided again on a later change, which
/// would refuse it with the person's approval already gone.
pub(crate) async fn enforce(
    c: &Coordinator,
    ctx: &mut OpCtx,
    findings: Vec<Finding>,
) -> CoordResult<Option<CheckGuardrailsResult>> {
    let (result, refusal) = judge(c, ctx, findings).await?;
    if refusal.is_some() {
        c.store().guard_decision(ctx.clone(), result, refusal).await?;
        ctx.policy = None;
        return Ok(None);
    }
    Ok(result.elevated.then_some(result))
}

/// An elevated pass inside an operation that succeeded, recorded like one of
/// check_guardrails: a step of its own, audited with `elevated`, a violation row and a
/// notification on the security channel.
pub(crate) async fn record_elevated(c: &Coordinator, mut ctx: OpCtx, passed: CheckGuardrailsResult) -> CoordResult<()> {
    // The facts the pass was decided on were confirmed by the operation's own commit; a
    // change since must not lose the record of what happened.
    ctx.policy = None;
    c.store().guard_decision(ctx, passed, None).await.map(|_| ())
}

/// The rows of `operation_guardrails` and the registry compiled from them.
type CompiledRows = (GuardrailRows, Arc<Patterns>);

/// The pattern registry last compiled and the rows it came from.
#[derive(Clone, Default)]
pub(crate) struct PatternCache(Arc<Mutex<Option<CompiledRows>>>);

/// The pattern registry in effect: the built-in patterns, replaced, switched off or added
/// to by the rows of `operation_guardrails` (read on every check, or confirmed by their
/// fingerprint when the check is decided on the caller's last facts, so a change made
/// through any coordinator sharing the database applies at once; compiled again only
/// when the rows change). A row that no longer compiles fails the check (closed): fix
/// or reset it.
pub(crate) async fn patterns(c: &Coordinator) -> CoordResult<Arc<Patterns>> {
    let rows = c.store().guardrail_rules().await?;
    let cache = &c.patterns.0;
    if let Some((seen, compiled)) = cache.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        && *seen == rows
    {
        return Ok(compiled.clone());
    }
    let compiled = Arc::new(if rows.rows.is_empty() {
        builtin().clone()
    } else {
        let effective = merge(&rows.rows)?
            .into_iter()
            .filter(|(e, _)| e.enabled)
            .map(|(_, p)| p)
            .collect();
        Patterns::new(effective).map_err(|e| invalid(e.to_string()))?
    });
    *cache.lock().unwrap_or_else(PoisonError::into_inner) = Some((rows, compiled.clone()));
    Ok(compiled)
}

/// The registry for a check decided on the caller's last facts (`ctx.policy`): the one
/// last compiled, without reading the rows, when the store can confirm they still stand
/// (their fingerprint goes with the facts, and a change makes the call be decided again
/// on rows read then); otherwise [`patterns`].
async fn patterns_for(c: &Coordinator, ctx: &mut OpCtx) -> CoordResult<Arc<Patterns>> {
    if let Some(check) = ctx.policy.as_mut()
        && let Some((seen, compiled)) = c.patterns.0.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        && let Some(digest) = &seen.digest
    {
        check.rules = Some(digest.clone());
        return Ok(compiled.clone());
    }
    patterns(c).await
}

fn invalid(message: String) -> CoordError {
    CoordError::new(ErrorCode::InvalidGuardrail, message)
}

fn parse(value: &serde_json::Value) -> CoordResult<Pattern> {
    serde_json::from_value(value.clone()).map_err(|e| invalid(format!("pattern: {e}")))
}

/// The registry as listed: every built-in pattern (as a row left, changed or switched
/// it off) and every pattern a row added, by name.
fn merge(rows: &[GuardrailRule]) -> CoordResult<Vec<(GuardrailEntry, Pattern)>> {
    let mut out: Vec<(GuardrailEntry, Pattern)> = builtin_patterns()
        .into_iter()
        .map(|p| {
            let entry = GuardrailEntry {
                name: p.name.clone(),
                source: RuleSource::Builtin,
                enabled: true,
                pattern: serde_json::to_value(&p).unwrap_or_default(),
                updated_by: None,
                updated_at: None,
            };
            (entry, p)
        })
        .collect();
    for row in rows {
        let at = out.iter().position(|(e, _)| e.name == row.name);
        let pattern = match (&row.pattern, at) {
            (Some(v), _) => parse(v).map_err(|e| {
                invalid(format!(
                    "the guardrail row {} no longer reads ({}); fix it with set_guardrail or remove it with reset_guardrail",
                    row.name, e.message
                ))
            })?,
            (None, Some(i)) => out[i].1.clone(),
            (None, None) => continue, // switches off a pattern that no longer exists
        };
        let entry = GuardrailEntry {
            name: row.name.clone(),
            source: if at.is_some() {
                RuleSource::Modified
            } else {
                RuleSource::Custom
            },
            enabled: row.enabled,
            pattern: serde_json::to_value(&pattern).unwrap_or_default(),
            updated_by: Some(row.updated_by.clone()),
            updated_at: Some(row.updated_at),
        };
        match at {
            Some(i) => out[i] = (entry, pattern),
            None => out.push((entry, pattern)),
        }
    }
    Ok(out)
}

pub struct ListGuardrails;
impl Operation for ListGuardrails {
    const NAME: &'static str = "list_guardrails";
    const SUMMARY: &'static str = "List the guardrails' pattern registry (built-in, modified and custom patterns)";
    const DESCRIPTION: &'static str = "List the argv patterns check_guardrails applies besides its built-in \
        structural rules (git, rm, find, SQL, credential files): each with source builtin, modified (a built-in \
        one replaced or switched off) or custom, enabled, the pattern (program, words, options, unless, \
        unless_next, value_options, operation, category, action, reason) and who changed it when. Answers {success:true, \
        guardrails:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/guardrails").input(crate::op::Input::None)];
    const EXAMPLE: &'static str = "{}";
    type Request = Empty;
    type Response = ListGuardrailsResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ListGuardrailsResult> {
        let rows = c.store().list_guardrail_rules(ctx).await?;
        Ok(ListGuardrailsResult {
            success: true,
            guardrails: merge(&rows)?.into_iter().map(|(e, _)| e).collect(),
        })
    }
}

pub struct SetGuardrail;
impl Operation for SetGuardrail {
    const NAME: &'static str = "set_guardrail";
    const SUMMARY: &'static str = "Add, replace or switch off a pattern of the guardrails' registry (administrators)";
    const DESCRIPTION: &'static str = "Change the guardrails' pattern registry: with a pattern, add it (a new \
        name) or replace the built-in pattern of that name; with only enabled:false, switch the built-in (or \
        custom) pattern of that name off (enabled:true switches it on again). The pattern is compiled first: \
        an invalid glob, category or action is refused with invalid_guardrail and nothing is stored. Applies \
        to every check at once. Trust 4 (manage_policies). Answers {success:true, guardrail:{...}}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/guardrails/set").errors(&[404])];
    const EXAMPLE: &'static str = "{\"name\": \"make-deploy\", \"pattern\": {\"program\": \"make\", \"words\": \
        [\"deploy|release\"], \"anywhere\": true, \"operation\": \"deploy\", \"category\": \"production_deployment\", \"action\": \
        \"block\", \"reason\": \"make {words} deploys to production; ask for approval\"}}";
    type Request = SetGuardrailRequest;
    type Response = SetGuardrailResult;
    type Args = NewRule;

    fn validate(_: &Coordinator, _: &Identity, req: SetGuardrailRequest) -> CoordResult<NewRule> {
        let rule = validate_set(req)?;
        if let Some(v) = &rule.pattern {
            coord_guardrails::patterns::Compiled::new(parse(v)?).map_err(|e| invalid(e.message))?;
        }
        Ok(rule)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, rule: NewRule) -> CoordResult<SetGuardrailResult> {
        if rule.pattern.is_none() && !builtin().patterns().any(|p| p.name == rule.name) {
            // Switching on or off: the store keeps the row's own pattern (in its
            // transaction); a name with neither is unknown.
            let rows = c.store().guardrail_rules().await?.rows;
            if !rows.iter().any(|r| r.name == rule.name && r.pattern.is_some()) {
                return Err(CoordError::new(
                    ErrorCode::NotFound,
                    format!(
                        "no pattern named {} (`coord guard rules list` shows them); to add one, give the pattern",
                        rule.name
                    ),
                ));
            }
        }
        let name = rule.name.clone();
        let row = c.store().set_guardrail_rule(ctx, rule).await?;
        // The answer is this row over the built-in patterns (another row that no longer
        // reads must not fail a change that is already stored).
        let guardrail = merge(std::slice::from_ref(&row))?
            .into_iter()
            .map(|(e, _)| e)
            .find(|e| e.name == name)
            .ok_or_else(|| CoordError::new(ErrorCode::NotFound, format!("no pattern named {name}")))?;
        Ok(SetGuardrailResult {
            success: true,
            guardrail,
        })
    }
}

pub struct ResetGuardrail;
impl Operation for ResetGuardrail {
    const NAME: &'static str = "reset_guardrail";
    const SUMMARY: &'static str =
        "Undo a change to the guardrails' registry: remove a custom pattern or restore a built-in one";
    const DESCRIPTION: &'static str = "Remove the registry row of name: a custom pattern is gone, a built-in \
        pattern is in effect again as shipped. not_found when nothing was changed under that name. Trust 4 \
        (manage_policies). Answers {success:true, name, builtin_restored}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/guardrails/reset").errors(&[404])];
    const EXAMPLE: &'static str = "{\"name\": \"kubectl-mutate\"}";
    type Request = ResetGuardrailRequest;
    type Response = ResetGuardrailResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: ResetGuardrailRequest) -> CoordResult<String> {
        validate_name(&req.name)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, name: String) -> CoordResult<ResetGuardrailResult> {
        let name = c.store().delete_guardrail_rule(ctx, name).await?;
        Ok(ResetGuardrailResult {
            success: true,
            builtin_restored: builtin().patterns().any(|p| p.name == name),
            name,
        })
    }
}
