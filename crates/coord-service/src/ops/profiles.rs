//! Agent profiles: what each agent may do (trust level, permissions, resource limits),
//! assigned per agent id or per agent type. The pipeline enforces them on every
//! operation; these operations read, change and explain them.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::profiles::{
    self, ApplyProfilesRequest, ApplyProfilesResult, AssignProfileRequest, AssignProfileResult, Assignee,
    ExplainProfileRequest, ExplainProfileResult, LimitUsage, ListProfilesResult, Need, OperationVerdict, Permission,
    Profile, Resource, UnassignProfileRequest, format_duration, validate_assign, validate_assignee,
};
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::{OpCtx, UsageOf};
use serde_json::Value;

pub struct ListProfiles;
impl Operation for ListProfiles {
    const NAME: &'static str = "list_profiles";
    const SUMMARY: &'static str = "Every agent profile and who it is assigned to";
    const DESCRIPTION: &'static str = "List the agent profiles (name, agent_type, trust_level 0-4, \
        allowed/blocked operations, resource limits, network policy, guardrails) and their assignments to \
        agent ids and agent types. An agent's profile is the one assigned to its id, else its type's \
        default, else least-privilege (read only). Answers {success:true, profiles:[...], \
        assignments:[{kind:\"agent\"|\"agent_type\", value, profile}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/profiles").input(crate::op::Input::None)];
    type Request = Empty;
    type Response = ListProfilesResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ListProfilesResult> {
        c.store().list_profiles(ctx).await
    }
}

pub struct ApplyProfiles;
impl Operation for ApplyProfiles {
    const NAME: &'static str = "apply_profiles";
    const SUMMARY: &'static str = "Create or replace agent profiles (trust 4 or an operator key)";
    const DESCRIPTION: &'static str = "Create or replace agent profiles by name (all or none). Each profile: \
        name, agent_type, trust_level (0-4), allowed_operations, blocked_operations (blocked beats allowed), \
        elevated_operations, resource_limits {max_file_modifications, max_file_reads, max_execution_time \
        (\"2h\"), max_spawned_agents, max_api_calls; a number or \"unlimited\"}, network_policy, guardrails. \
        Needs trust level 4 or an operator key. Answers {success:true, changes:[{name, action:\"created\"|\
        \"updated\"|\"unchanged\", before, after}]}; invalid input names the field (profiles[1].trust_level).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/profiles/apply")];
    const EXAMPLE: &'static str = "{\"profiles\": [{\"name\": \"docs-writer\", \"agent_type\": \"claude_code\", \
        \"trust_level\": 1, \"allowed_operations\": [\"read\", \"write\"], \"resource_limits\": \
        {\"max_file_modifications\": 20, \"max_execution_time\": \"1h\"}}]}";
    type Request = ApplyProfilesRequest;
    type Response = ApplyProfilesResult;
    type Args = Vec<Profile>;

    fn validate(_: &Coordinator, _: &Identity, req: ApplyProfilesRequest) -> CoordResult<Vec<Profile>> {
        profiles::validate_apply(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, list: Vec<Profile>) -> CoordResult<ApplyProfilesResult> {
        c.store().apply_profiles(ctx, list).await
    }
}

pub struct AssignProfile;
impl Operation for AssignProfile {
    const NAME: &'static str = "assign_profile";
    const SUMMARY: &'static str = "Assign a profile to an agent id or an agent type (trust 4 or an operator key)";
    const DESCRIPTION: &'static str = "Assign a profile to one agent (target_agent_id) or as the default of an \
        agent type (target_agent_type); an agent id's assignment wins over its type's. Needs trust level 4 or an \
        operator key. Answers {success:true, kind, value, before, after} (the profile names before and \
        after); an unknown profile is not_found.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/profiles/assign").errors(&[404])];
    const EXAMPLE: &'static str =
        "{\"profile\": \"claude-code-web-implementer\", \"target_agent_id\": \"web-session-42\"}";
    type Request = AssignProfileRequest;
    type Response = AssignProfileResult;
    type Args = (Assignee, String);

    fn validate(_: &Coordinator, _: &Identity, req: AssignProfileRequest) -> CoordResult<Self::Args> {
        validate_assign(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (who, name): Self::Args) -> CoordResult<AssignProfileResult> {
        c.store().assign_profile(ctx, who, Some(name)).await
    }
}

pub struct UnassignProfile;
impl Operation for UnassignProfile {
    const NAME: &'static str = "unassign_profile";
    const SUMMARY: &'static str = "Remove the profile assigned to an agent id or an agent type";
    const DESCRIPTION: &'static str = "Remove the profile assigned to one agent (target_agent_id) or the default of \
        an agent type (target_agent_type). The agent then gets its type's default, or least-privilege. Needs trust \
        level 4 or an operator key. Answers {success:true, kind, value, before, after:null}; removing what \
        is not assigned succeeds with before:null.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/profiles/unassign")];
    const EXAMPLE: &'static str = "{\"target_agent_id\": \"web-session-42\"}";
    type Request = UnassignProfileRequest;
    type Response = AssignProfileResult;
    type Args = Assignee;

    fn validate(_: &Coordinator, _: &Identity, req: UnassignProfileRequest) -> CoordResult<Assignee> {
        validate_assignee(req.target_agent_id.as_deref(), req.target_agent_type.as_deref())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, who: Assignee) -> CoordResult<AssignProfileResult> {
        c.store().assign_profile(ctx, who, None).await
    }
}

pub struct ExplainProfile;
impl Operation for ExplainProfile {
    const METERED: bool = false;
    const NAME: &'static str = "explain_profile";
    const SUMMARY: &'static str = "An agent's effective profile, where it comes from, its usage, and what it may do";
    const DESCRIPTION: &'static str = "Explain an agent's profile (yours when target_agent_id is absent): the \
        effective profile and its source (agent_assignment, type_default, or fallback = least-privilege), each \
        limit with the current session's usage, and for every operation (or the one named) whether it would \
        be allowed and why. Answers {success:true, agent_id, agent_type, source, profile, session_id, \
        limits:[{limit, max, used}], operations:[{operation, permission, min_trust, allowed, reason}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::post("/profiles/explain").errors(&[404])];
    const EXAMPLE: &'static str = "{\"target_agent_id\": \"web-session-42\", \"operation\": \"acquire_lock\"}";
    type Request = ExplainProfileRequest;
    type Response = ExplainProfileResult;
    /// (agent id, agent type if known, the operations to explain)
    type Args = (String, Option<String>, Vec<&'static crate::OpEntry>);

    fn validate(_: &Coordinator, me: &Identity, req: ExplainProfileRequest) -> CoordResult<Self::Args> {
        let (agent_id, agent_type) = match req.target_agent_id.as_deref().map(str::trim) {
            None | Some("") => (
                me.agent_id.clone(),
                Some(req.target_agent_type.unwrap_or(me.agent_type.clone())),
            ),
            Some(id) => {
                let Assignee::Agent(id) = validate_assignee(Some(id), None)? else {
                    unreachable!("an agent id was given")
                };
                let ty = req
                    .target_agent_type
                    .as_deref()
                    .map(|t| validate_assignee(None, Some(t)).map(|a| a.value().to_string()))
                    .transpose()?;
                (id, ty)
            }
        };
        let ops = match req.operation.as_deref().map(str::trim) {
            None | Some("") => crate::ops().iter().collect(),
            Some(name) => vec![crate::op_named(name).map_err(|e| e.with_field("operation"))?],
        };
        Ok((agent_id, agent_type, ops))
    }

    async fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        (agent_id, agent_type, ops): Self::Args,
    ) -> CoordResult<ExplainProfileResult> {
        // Explaining yourself through a managed key: your usage is the key's, your time
        // runs from its issue (as the pipeline counts them).
        let key = ctx.origin.clone().filter(|_| agent_id == ctx.who.agent_id);
        let usage = key
            .as_ref()
            .map_or(UsageOf::CurrentSession, |k| UsageOf::Key(k.key_id.clone()));
        let facts = c
            .store()
            .policy_facts(ctx.now, &agent_id, agent_type.as_deref(), usage)
            .await?;
        let (profile, source) = profiles::resolve(facts.by_agent, facts.by_type);
        // Explaining yourself: what your credential lets you reach of it, as the pipeline
        // would decide your calls (a key's cap, an agent session's person decisions).
        let yourself = agent_id == ctx.who.agent_id;
        let profile = match yourself {
            true => profiles::within_reach(profile, source, ctx.credential),
            false => profile,
        };
        let started = match &key {
            Some(k) => k.issued_at,
            None => facts.session.as_ref().map(|s| s.1),
        };
        let age = started.map(|started| (facts.now - started).to_std().unwrap_or_default());
        let mut limits = vec![LimitUsage {
            limit: Resource::MaxExecutionTime,
            max: to_value(&profile.resource_limits.max_execution_time),
            used: age.map(|a| Value::String(format_duration(a))),
        }];
        for r in Resource::COUNTED {
            let max = profile.resource_limits.count(r);
            let used = facts.usage.iter().find(|(u, _)| *u == r).map_or(0, |(_, n)| *n);
            limits.push(LimitUsage {
                limit: r,
                max: to_value(&max),
                // Only limited resources are counted.
                used: max.max().map(|_| Value::from(used)),
            });
        }
        let operations = ops
            .into_iter()
            .map(|op| {
                let verdict = match yourself {
                    true => coord_domain::access::admit(
                        ctx.credential,
                        op.access,
                        op.need.permission.is_administrative(),
                        op.name,
                    )
                    .and_then(|()| profiles::decide(&profile, op.name, op.need)),
                    false => profiles::decide(&profile, op.name, op.need),
                };
                let reason = match (&verdict, profile.grant(op.need.permission)) {
                    (Err(e), _) => format!("{}: {}", e.code, e.message),
                    (Ok(()), profiles::Grant::ImpliedByTrust) => format!(
                        "allowed: `{}` is implied by trust level {}",
                        op.need.permission, profile.trust_level
                    ),
                    (Ok(()), _) => format!("allowed: the profile allows `{}`", op.need.permission),
                };
                OperationVerdict {
                    operation: op.name.to_string(),
                    permission: op.need.permission,
                    min_trust: op.need.min_trust,
                    allowed: verdict.is_ok(),
                    reason,
                }
            })
            .collect();
        let result = ExplainProfileResult {
            success: true,
            agent_type: facts.agent_type.unwrap_or_else(|| "unknown".into()),
            agent_id,
            source,
            profile,
            session_id: facts.session.map(|s| s.0),
            limits,
            operations,
            guardrail_violations: facts.guardrail_violations,
        };
        // A read made of a store read: its audit row is appended on its own.
        c.store().append_audit(ctx.now, ctx.audit(Ok(&result))).await?;
        Ok(result)
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
