//! The verification gateway: policies route a changeset's files to verification tiers
//! and executors (`coord_domain::verification::route`, with the submitter's trust);
//! the store records the changeset, one run per matching policy, and an approval
//! request for each run a person must decide.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::profiles::{self, Need, Permission};
use coord_domain::verification::{
    self, ClaimFilter, ClaimVerificationRunRequest, ClaimVerificationRunResult, DeleteVerificationPolicyRequest,
    DeleteVerificationPolicyResult, GetVerificationRequest, ListVerificationPoliciesResult, Matcher, NewChangeset,
    ReportVerificationRunRequest, RunReport, SetVerificationPolicyResult, SubmitChangesetRequest, VerificationPolicy,
    VerificationResult,
};
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::{OpCtx, RoutedChangeset, UsageOf};

pub struct SetVerificationPolicy;
impl Operation for SetVerificationPolicy {
    const NAME: &'static str = "set_verification_policy";
    const SUMMARY: &'static str = "Add a verification policy or replace one (administrators)";
    const DESCRIPTION: &'static str = "Store a whole verification policy: name, description, tier (0 static \
        analysis, 1 unit tests, 2 integration, 3 system, 4 a person's review), executor (inline, local, \
        github_actions, e2b, manual; tier 4 is manual), patterns and exclude_patterns (globs over repo-relative \
        paths: * stays in one directory, **/ spans any number), required_env (variable names the executor needs), \
        timeout_seconds (default 300), requires_approval (a person approves before the executor runs), enabled, \
        and what the executor needs: command (inline, local: program and arguments, no shell), workflow \
        (github_actions), template (e2b). Every field is checked first; nothing is stored on an error. Takes \
        effect for the next changeset. Trust 4 (manage_policies). Answers {success:true, policy:{...}}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/verification/policies/set")];
    const EXAMPLE: &'static str = "{\"name\": \"lint\", \"tier\": 0, \"executor\": \"inline\", \"patterns\": \
        [\"**/*.rs\"], \"exclude_patterns\": [\"vendor/**\"], \"command\": [\"cargo\", \"clippy\", \"--\", \"-D\", \
        \"warnings\"], \"timeout_seconds\": 600}";
    type Request = VerificationPolicy;
    type Response = SetVerificationPolicyResult;
    type Args = VerificationPolicy;

    fn validate(_: &Coordinator, _: &Identity, req: VerificationPolicy) -> CoordResult<VerificationPolicy> {
        verification::validate_policy(req)
    }

    async fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        policy: VerificationPolicy,
    ) -> CoordResult<SetVerificationPolicyResult> {
        let policy = c.store().set_verification_policy(ctx, policy).await?;
        Ok(SetVerificationPolicyResult { success: true, policy })
    }
}

pub struct ListVerificationPolicies;
impl Operation for ListVerificationPolicies {
    const NAME: &'static str = "list_verification_policies";
    const SUMMARY: &'static str = "List the verification policies";
    const DESCRIPTION: &'static str = "List every verification policy by name: tier, executor, patterns, \
        exclude_patterns, required_env, timeout, whether it needs a person's approval, whether it is enabled, \
        who changed it last. Use it to see which checks a change to some files will go through before calling \
        submit_changeset. Answers {success:true, policies:[{policy, updated_by, updated_at}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/verification/policies").input(Input::None)];
    const EXAMPLE: &'static str = "{}";
    type Request = Empty;
    type Response = ListVerificationPoliciesResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ListVerificationPoliciesResult> {
        let policies = c.store().list_verification_policies(ctx).await?;
        Ok(ListVerificationPoliciesResult {
            success: true,
            policies,
        })
    }
}

pub struct DeleteVerificationPolicy;
impl Operation for DeleteVerificationPolicy {
    const NAME: &'static str = "delete_verification_policy";
    const SUMMARY: &'static str = "Delete a verification policy (administrators)";
    const DESCRIPTION: &'static str = "Delete the verification policy called name: later changesets are not \
        routed to it; runs already routed keep the policy as it was. not_found when there is none. Trust 4 \
        (manage_policies). Answers {success:true, name}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManagePolicies);
    const HTTP: &'static [Http] = &[Http::post("/verification/policies/delete").errors(&[404])];
    const EXAMPLE: &'static str = "{\"name\": \"lint\"}";
    type Request = DeleteVerificationPolicyRequest;
    type Response = DeleteVerificationPolicyResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: DeleteVerificationPolicyRequest) -> CoordResult<String> {
        verification::validate_name(&req.name)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, name: String) -> CoordResult<DeleteVerificationPolicyResult> {
        let name = c.store().delete_verification_policy(ctx, name).await?;
        Ok(DeleteVerificationPolicyResult { success: true, name })
    }
}

pub struct SubmitChangeset;
impl Operation for SubmitChangeset {
    const NAME: &'static str = "submit_changeset";
    const SUMMARY: &'static str = "Submit changed files for verification; answers the tiers and checks they go to";
    const DESCRIPTION: &'static str = "When you have finished a change (before asking for it to be merged), \
        submit it: files (added or modified, repo-relative), removed (deleted files), branch, commit (hex; \
        submitting the same branch and commit again answers the changeset already recorded, existing:true), \
        description and diff for reviewers. Every enabled verification policy whose patterns cover one of the \
        files (and whose exclude_patterns do not) gets a run: status pending (its executor will run it), \
        awaiting_approval (a person reviews it in the approval queue: tier 4, or requires_approval before the \
        executor runs), or skipped (trust level 3 and above skips tiers 0 and 1). Answers {success:true, \
        changeset:{changeset_id, ...}, status: not_required|pending|awaiting_approval|passed|failed, \
        runs:[{policy, tier, executor, status, reason, files, approval_id}]}. Follow it with get_verification.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/verification/changesets")];
    const PATH_FIELDS: &'static [&'static str] = &["files", "removed"];
    const EXAMPLE: &'static str = "{\"files\": [\"src/auth/login.rs\", \"migrations/0042_users.sql\"], \"branch\": \
        \"agent/claude-1/42\", \"commit\": \"9fceb02d0ae598e95dc970b74767f19372d61af8\", \"description\": \
        \"hash passwords with argon2\"}";
    type Request = SubmitChangesetRequest;
    type Response = VerificationResult;
    type Args = NewChangeset;

    fn validate(c: &Coordinator, _: &Identity, req: SubmitChangesetRequest) -> CoordResult<NewChangeset> {
        verification::validate_changeset(req, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, changeset: NewChangeset) -> CoordResult<VerificationResult> {
        submit(c, ctx, changeset, "agent").await
    }
}

/// Routes `changeset` by the policies and the trust of `ctx.who` (an agent's profile; a
/// push from GitHub: 0) as they are now, and records it with its runs (each run keeps the policy as it was then). A stored policy
/// that no longer compiles refuses the submission (audited) rather than being skipped.
pub(crate) async fn submit(
    c: &Coordinator,
    ctx: OpCtx,
    changeset: NewChangeset,
    source: &'static str,
) -> CoordResult<VerificationResult> {
    let matchers = c
        .store()
        .verification_policy_rows()
        .await?
        .into_iter()
        .map(|row| Matcher::new(row.policy))
        .collect::<CoordResult<Vec<_>>>();
    let matchers = match matchers {
        Ok(m) => m,
        Err(e) => return super::refuse(c, &ctx, e).await,
    };
    // A push arrives from GitHub with a name GitHub vouches for, not a coord profile:
    // least privilege, every tier runs.
    let trust = if source == "agent" {
        let facts = c
            .store()
            .policy_facts(ctx.now, &ctx.who.agent_id, Some(&ctx.who.agent_type), UsageOf::Nothing)
            .await?;
        profiles::resolve(facts.by_agent, facts.by_type).0.trust_level
    } else {
        0
    };
    let runs = verification::route(&matchers, &changeset.paths(), trust, changeset.incomplete.as_deref());
    let routed = RoutedChangeset {
        changeset,
        source,
        trust_level: trust,
        runs,
    };
    let now = ctx.now;
    let result = c.store().submit_changeset(ctx, routed).await?;
    if !result.existing {
        report_to_github(c, now, &result, None).await;
    }
    Ok(result)
}

/// Queues commit statuses (`coord/<policy>`) for a changeset pushed from a GitHub
/// repository: every run's, or one policy's. Best effort: a status that cannot be
/// queued is logged, the verification stands.
pub(crate) async fn report_to_github(
    c: &Coordinator,
    now: Option<coord_domain::Timestamp>,
    v: &VerificationResult,
    only: Option<&str>,
) {
    let (Some(repo), Some(sha)) = (&v.changeset.repository, &v.changeset.commit) else {
        return;
    };
    for run in v.runs.iter().filter(|r| only.is_none_or(|p| p == r.policy)) {
        let description = match (&run.reason, run.status) {
            (Some(why), _) => format!("{}: {why}", run.status.as_str()),
            (None, s) => format!("{} ({} executor, tier {})", s.as_str(), run.executor.as_str(), run.tier),
        };
        let mut request = coord_github::sync::commit_status(
            repo,
            sha,
            verification::commit_state(run.status),
            &format!("coord/{}", run.policy),
            &description,
        );
        if let Some(url) = &run.external_url {
            request.body["target_url"] = serde_json::Value::String(url.clone());
        }
        if let Err(e) = c.store().queue_github_request(now, request).await {
            tracing::warn!(error = %e.message, "could not queue a commit status for GitHub");
        }
    }
}

pub struct GetVerification;
impl Operation for GetVerification {
    const NAME: &'static str = "get_verification";
    const SUMMARY: &'static str = "A changeset's verification: each policy's run and the overall status";
    const DESCRIPTION: &'static str = "Read what became of a submitted changeset: changeset_id as \
        submit_changeset answered it (diff:true also returns the submitted diff). Answers {success:true, \
        changeset, status: not_required|pending|awaiting_approval|passed|failed, runs:[{policy, tier, executor, \
        status: pending|running|awaiting_approval|passed|failed|error|timed_out|skipped|cancelled, reason, files, \
        approval_id, exit_code, duration_ms, output_tail}]}. A run a person reviews follows their decision in the \
        approval queue (approved: passed, or pending for its executor when approval only let it run; denied: \
        failed; unanswered until the request expires: timed_out). not_found for an unknown id.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    // The body route first: it carries diff (remote clients use the first).
    const HTTP: &'static [Http] = &[
        Http::post("/verification/changesets/get").errors(&[404]),
        Http::get("/verification/changesets/{changeset_id}")
            .input(Input::Path("changeset_id"))
            .errors(&[404]),
    ];
    const EXAMPLE: &'static str = "{\"changeset_id\": \"cs_0f8e6d4c2b0a49e7a5c3b1d9f7e5c3a1\"}";
    type Request = GetVerificationRequest;
    type Response = VerificationResult;
    type Args = (String, bool);

    fn validate(_: &Coordinator, _: &Identity, req: GetVerificationRequest) -> CoordResult<(String, bool)> {
        Ok((verification::validate_changeset_id(&req.changeset_id)?, req.diff))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (id, diff): (String, bool)) -> CoordResult<VerificationResult> {
        c.store().get_verification(ctx, id, diff).await
    }
}

pub struct ClaimVerificationRun;
impl Operation for ClaimVerificationRun {
    const NAME: &'static str = "claim_verification_run";
    const SUMMARY: &'static str = "Claim the next verification run to execute (verification workers)";
    const DESCRIPTION: &'static str = "For verification workers (`coord verify run` is one): claim the oldest run \
        of the executors you run (executors, default inline and local), of a changeset at commit (your checkout's; \
        changesets naming no commit match any): pending, approved to run, or running past its claim (a worker \
        that died). Never a run of your own changeset. Answers {success:true, run:null} when \
        there is nothing to do, or {success:true, run:{changeset_id, attempt, policy (as routed: command, \
        required_env, timeout_seconds, ...), files, branch, commit, lease_until}}; the run is then running and \
        yours: report its outcome with report_verification_run before lease_until (the policy's timeout plus a \
        minute). Trust 4 with the execute permission: a worker's report decides whether a change is verified.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::Execute);
    const HTTP: &'static [Http] = &[Http::post("/verification/runs/claim")];
    const EXAMPLE: &'static str =
        "{\"executors\": [\"inline\", \"local\"], \"commit\": \"9fceb02d0ae598e95dc970b74767f19372d61af8\"}";
    type Request = ClaimVerificationRunRequest;
    type Response = ClaimVerificationRunResult;
    type Args = ClaimFilter;

    fn validate(_: &Coordinator, _: &Identity, req: ClaimVerificationRunRequest) -> CoordResult<ClaimFilter> {
        verification::validate_claim(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, filter: ClaimFilter) -> CoordResult<ClaimVerificationRunResult> {
        let run = c.store().claim_verification_run(ctx, filter).await?;
        Ok(ClaimVerificationRunResult { success: true, run })
    }
}

pub struct ReportVerificationRun;
impl Operation for ReportVerificationRun {
    const NAME: &'static str = "report_verification_run";
    const SUMMARY: &'static str = "Report the outcome of a claimed verification run (verification workers)";
    const DESCRIPTION: &'static str = "For the worker that claimed a run with claim_verification_run: its outcome \
        — changeset_id, policy, attempt (default 1), status passed|failed|error|timed_out (error: could not judge, \
        e.g. a missing environment variable; say which in reason), exit_code, duration_ms, output_tail (the end \
        of the output; longer text keeps its last 64 KiB), reason. A run started elsewhere (a dispatched GitHub \
        Actions run) is reported first as status running with external_id (and external_url): recorded, so no \
        other worker starts it again and the workflow_run webhook can finish it, and the lease renewed. A \
        changeset pushed from GitHub gets each result as a commit status coord/<policy>. Refused (forbidden) unless you hold the claim \
        and the run is still running, and never on your own changeset. Answers the changeset as get_verification \
        would. Trust 4 with the execute permission.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::Execute);
    const HTTP: &'static [Http] = &[Http::post("/verification/runs/report").errors(&[403, 404])];
    const EXAMPLE: &'static str = "{\"changeset_id\": \"cs_0f8e6d4c2b0a49e7a5c3b1d9f7e5c3a1\", \"policy\": \"lint\", \
        \"status\": \"failed\", \"exit_code\": 101, \"duration_ms\": 5120, \"output_tail\": \"error: unused variable\"}";
    type Request = ReportVerificationRunRequest;
    type Response = VerificationResult;
    type Args = RunReport;

    fn validate(_: &Coordinator, _: &Identity, req: ReportVerificationRunRequest) -> CoordResult<RunReport> {
        verification::validate_report(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, report: RunReport) -> CoordResult<VerificationResult> {
        let now = ctx.now;
        let policy = report.policy.clone();
        let result = c.store().report_verification_run(ctx, report).await?;
        report_to_github(c, now, &result, Some(&policy)).await;
        Ok(result)
    }
}
