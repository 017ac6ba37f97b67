//! The audit trail, the one-screen status and the fleet's figures.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::audit::{AuditFilter, AuditQueryRequest, AuditQueryResult, validate_audit_query};
use coord_domain::audit_chain::{self, PruneAuditRequest, PruneAuditResult, VerifyAuditRequest, VerifyAuditResult};
use coord_domain::profiles::{Need, Permission};
use coord_domain::stats::StatsResult;
use coord_domain::status::StatusResult;
use coord_domain::validate;
use coord_domain::{CoordError, CoordResult, Empty, ErrorCode, Identity};
use coord_store::OpCtx;

pub struct QueryAudit;
impl Operation for QueryAudit {
    const NAME: &'static str = "query_audit";
    const SUMMARY: &'static str = "Query the audit trail, newest first";
    const DESCRIPTION: &'static str = "Query the append-only audit trail of coordination operations, newest first, \
        filtered by agent_id, operation, time range (since/until, RFC 3339), result (allowed, refused, error) and \
        elevated; after_id pages forward oldest first (an export). You see your own rows; an administrator (trust \
        4, an operator key) sees everyone's. Answers {entries:[...]}, each with its place in the hash chain.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/audit")];
    const PATH_FIELDS: &'static [&'static str] = &["path"];
    const EXAMPLE: &'static str = "{\"operation\": \"acquire_lock\", \"success\": false, \"limit\": 20}";
    type Request = AuditQueryRequest;
    type Response = AuditQueryResult;
    type Args = AuditFilter;

    fn validate(_: &Coordinator, _: &Identity, req: AuditQueryRequest) -> CoordResult<AuditFilter> {
        validate_audit_query(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, f: AuditFilter) -> CoordResult<AuditQueryResult> {
        match f.scoped(&ctx.who, ctx.audit_admin) {
            Ok(f) => c.store().query_audit(ctx, f).await,
            Err(e) => {
                c.audit_refusal(&ctx, &e).await;
                Err(e)
            }
        }
    }
}

pub struct VerifyAudit;
impl Operation for VerifyAudit {
    const NAME: &'static str = "verify_audit";
    const SUMMARY: &'static str = "Check the audit trail's hash chain";
    const DESCRIPTION: &'static str = "Check that the audit trail is whole: every row still matches its hash and \
        follows the one before it, no position is missing or repeated, and every prune checkpoint is signed by this \
        server's audit key. Pass a head recorded earlier as expect_head to detect rows cut from the end. Answers \
        {success:true, intact, rows_checked, head, problem?:{kind, seq, id, message}} naming the first bad row.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::admin(Permission::ManageAudit);
    const HTTP: &'static [Http] = &[Http::post("/audit/verify")];
    const EXAMPLE: &'static str = "{}";
    type Request = VerifyAuditRequest;
    type Response = VerifyAuditResult;
    type Args = audit_chain::VerifyAudit;

    fn validate(c: &Coordinator, _: &Identity, req: VerifyAuditRequest) -> CoordResult<audit_chain::VerifyAudit> {
        if let Some(h) = &req.expect_head
            && (h.seq < 1 || h.hash.len() != 64 || !h.hash.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "expect_head",
                "expect_head is {seq: a position of 1 or more, hash: 64 hex digits}, as verify_audit printed it",
            ));
        }
        Ok(audit_chain::VerifyAudit {
            key: c.config().audit_key.clone(),
            expect_head: req.expect_head.map(|h| audit_chain::ChainHead {
                seq: h.seq,
                hash: h.hash.to_ascii_lowercase(),
            }),
        })
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, check: audit_chain::VerifyAudit) -> CoordResult<VerifyAuditResult> {
        c.store().verify_audit(ctx, check).await
    }
}

pub struct PruneAudit;
impl Operation for PruneAudit {
    const NAME: &'static str = "prune_audit";
    const SUMMARY: &'static str = "Remove audit rows older than the retention";
    const DESCRIPTION: &'static str = "Remove audit rows older than older_than_days (default: the server's \
        retention, 90 days) and leave a checkpoint signed with the server's audit key in their place, so the rest of \
        the chain still verifies. dry_run says how many rows would go. Answers {success:true, cutoff, pruned_rows, \
        checkpoint?}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManageAudit);
    const HTTP: &'static [Http] = &[Http::post("/audit/prune")];
    const EXAMPLE: &'static str = "{\"older_than_days\": 90, \"dry_run\": true}";
    type Request = PruneAuditRequest;
    type Response = PruneAuditResult;
    type Args = audit_chain::PruneAudit;

    fn validate(c: &Coordinator, _: &Identity, req: PruneAuditRequest) -> CoordResult<audit_chain::PruneAudit> {
        let older_than_days = validate::int_in_range(
            "older_than_days",
            req.older_than_days,
            c.config().audit_retention_days,
            1,
            audit_chain::MAX_RETENTION_DAYS,
            ErrorCode::InvalidArgument,
        )?;
        let key = c.config().audit_key.clone().ok_or_else(|| {
            CoordError::new(
                ErrorCode::AuditKeyMissing,
                "this server has no audit key to sign the prune checkpoint with: set COORD_AUDIT_KEY_FILE (the \
                 coord CLI creates one next to a SQLite database by itself)",
            )
        })?;
        Ok(audit_chain::PruneAudit {
            older_than_days,
            dry_run: req.dry_run.unwrap_or(false),
            key,
        })
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, p: audit_chain::PruneAudit) -> CoordResult<PruneAuditResult> {
        c.store().prune_audit(ctx, p).await
    }
}

pub struct Status;
impl Operation for Status {
    const NAME: &'static str = "status";
    const SUMMARY: &'static str = "One-screen summary for the caller";
    const DESCRIPTION: &'static str = "One summary of the coordinator for you: who you are, your live locks and \
        claimed tasks, queue counts by status, agents by status, the latest handoff, and the backend. Use it to \
        orient yourself at the start of work. Answers {success:true, identity, my_locks, my_tasks, tasks, agents, \
        latest_handoff, ...}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/status").input(Input::None)];
    type Request = Empty;
    type Response = StatusResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<StatusResult> {
        c.store().status(ctx).await
    }
}

pub struct GetStats;
impl Operation for GetStats {
    const NAME: &'static str = "get_stats";
    const SUMMARY: &'static str = "The fleet's figures: agents, locks, queue, approvals, guardrail blocks";
    const DESCRIPTION: &'static str = "The coordinator's figures for whoever supervises the fleet: agents by \
        session status, file locks held, tasks by status, approvals pending, spawned agents running, how long \
        completed tasks were held from claim to completion (a histogram), guardrail blocks by category and memory \
        feedback votes. For administrators (trust 4, an operator key); GET /metrics serves the same figures to \
        Prometheus. Answers {success:true, backend, at, agents, locks_held, tasks, approvals_pending, \
        spawned_running, claim_to_complete:{count, sum_seconds, buckets:[{le, count}]}, guardrail_blocks:[{category, \
        count}], memory_feedback:{useful, not_useful}}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::admin(Permission::ManageAudit);
    const HTTP: &'static [Http] = &[Http::get("/stats").input(Input::None)];
    type Request = Empty;
    type Response = StatsResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<StatsResult> {
        c.store().stats(ctx).await
    }
}
