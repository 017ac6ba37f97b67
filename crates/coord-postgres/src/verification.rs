//! `verification_policies`, `changesets` and `verification_results`: the verification
//! gateway's policies, what agents submitted and each policy's run over it.

use crate::Db;
use crate::rows::{NOW, get, int};
use crate::{Fail, PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::approvals::ApprovalStatus;
use coord_domain::verification::{
    self, CLAIM_GRACE_SECONDS, ChangedFile, Changeset, ClaimFilter, ClaimedRun, Executor, ExternalFinish, MAX_POLICIES,
    RUN_FILES_SHOWN, Review, RunClaim, RunReport, RunStatus, VerificationPolicy, VerificationPolicyRow,
    VerificationResult, VerificationRun, no_policy, too_many_policies,
};
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_store::{OpCtx, RoutedChangeset, VerificationStore};
use tokio_postgres::Row;
use tokio_postgres::types::Json;

const SELECT_POLICY: &str = "SELECT policy, updated_by, updated_at FROM verification_policies";

fn policy_row(r: &Row) -> R<VerificationPolicyRow> {
    let Json(policy) = get::<Json<VerificationPolicy>>(r, 0)?;
    Ok(VerificationPolicyRow {
        policy,
        updated_by: get(r, 1)?,
        updated_at: get(r, 2)?,
    })
}

async fn policies<C: Db>(c: &C) -> R<Vec<VerificationPolicyRow>> {
    let rows = c
        .query(&c.prepare_cached(&format!("{SELECT_POLICY} ORDER BY name")).await?, &[])
        .await?;
    rows.iter().map(policy_row).collect()
}

async fn set_policy(tx: &Tx<'_>, ctx: &OpCtx, policy: &VerificationPolicy) -> R<VerificationPolicyRow> {
    // Serialises writers, so two cannot both pass the row limit.
    tx.execute("LOCK TABLE verification_policies IN SHARE ROW EXCLUSIVE MODE", &[])
        .await?;
    let exists = tx
        .query_opt("SELECT 1 FROM verification_policies WHERE name = $1", &[&policy.name])
        .await?
        .is_some();
    let count: i64 = get(
        &tx.query_one("SELECT count(*) FROM verification_policies", &[]).await?,
        0,
    )?;
    if !exists && count >= MAX_POLICIES as i64 {
        return Err(Fail::Coord(too_many_policies()));
    }
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO verification_policies (name, policy, updated_by, updated_at) VALUES ($2, $3, $4, {NOW})
                 ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, updated_by = excluded.updated_by,
                     updated_at = excluded.updated_at
                 RETURNING policy, updated_by, updated_at"
            ),
            &[&ctx.now, &policy.name, &Json(policy), &ctx.who.agent_id],
        )
        .await?;
    policy_row(&row)
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
async fn delete_policy(tx: &Tx<'_>, name: &String) -> R<String> {
    if tx
        .execute("DELETE FROM verification_policies WHERE name = $1", &[name])
        .await?
        == 0
    {
        return Err(Fail::Coord(no_policy(name)));
    }
    Ok(name.clone())
}

/// Records a routed changeset, or answers the one this agent already submitted for the
/// same branch and commit: the unique index decides between racing submissions (the
/// loser's insert waits for the winner's commit, then does nothing).
async fn submit(tx: &Tx<'_>, ctx: &OpCtx, routed: &RoutedChangeset) -> R<VerificationResult> {
    let cs = &routed.changeset;
    let who = &ctx.who;
    let branch = cs.branch.clone().unwrap_or_default();
    let id = verification::new_changeset_id();
    let inserted = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "INSERT INTO changesets (changeset_id, agent_id, agent_type, source, branch, commit_sha, description,
                                         files, diff, trust_level, created_at, repository)
                 VALUES ($2, $3, $4, $11, $5, $6, $7, $8, $9, $10, {NOW}, $12)
                 ON CONFLICT DO NOTHING RETURNING changeset_id"
            ))
            .await?,
            &[
                &ctx.now,
                &id,
                &who.agent_id,
                &who.agent_type,
                &branch,
                &cs.commit,
                &cs.description,
                &Json(&cs.files),
                &cs.diff,
                &i16::from(routed.trust_level),
                &routed.source,
                &cs.repository,
            ],
        )
        .await?;
    if inserted.is_none() {
        let row = tx
            .query_one(
                "SELECT changeset_id FROM changesets
                  WHERE agent_id = $1 AND source = $4 AND branch = $2 AND commit_sha = $3",
                &[&who.agent_id, &branch, &cs.commit, &routed.source],
            )
            .await?;
        return read(tx, ctx, &get::<String>(&row, 0)?, false, true).await;
    }
    for run in &routed.runs {
        let approval_id = match run.status {
            RunStatus::AwaitingApproval => Some(
                crate::approvals::enqueue(
                    tx,
                    ctx,
                    &coord_store::review_request(who, &id, run, cs.description.as_deref()),
                )
                .await?,
            ),
            _ => None,
        };
        tx.execute(
            &tx.prepare_cached(&format!(
                "INSERT INTO verification_results (changeset_id, policy, attempt, tier, executor, status, reason,
                                                   policy_snapshot, files, file_count, approval_id, created_at)
                 VALUES ($2, $3, 1, $4, $5, $6, $7, $8, $9, $10, $11, {NOW})"
            ))
            .await?,
            &[
                &ctx.now,
                &id,
                &run.policy.name,
                &i16::from(run.policy.tier),
                &run.policy.executor.as_str(),
                &run.status.as_str(),
                &run.reason,
                &Json(&run.policy),
                &Json(&run.files.iter().take(RUN_FILES_SHOWN).collect::<Vec<_>>()),
                &int(run.files.len() as i64),
                &approval_id,
            ],
        )
        .await?;
    }
    read(tx, ctx, &id, false, false).await
}

async fn read(tx: &Tx<'_>, ctx: &OpCtx, id: &str, with_diff: bool, existing: bool) -> R<VerificationResult> {
    let Some(r) = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "SELECT changeset_id, agent_id, agent_type, source, branch, commit_sha, description, files,
                        diff IS NOT NULL, trust_level, created_at, CASE WHEN $3 THEN diff END, {NOW}, repository
                   FROM changesets WHERE changeset_id = $2"
            ))
            .await?,
            &[&ctx.now, &id, &with_diff],
        )
        .await?
    else {
        return Err(Fail::Coord(verification::changeset_not_found(id)));
    };
    let branch: String = get(&r, 4)?;
    let Json(files) = get::<Json<Vec<ChangedFile>>>(&r, 7)?;
    let changeset = Changeset {
        changeset_id: get(&r, 0)?,
        agent_id: get(&r, 1)?,
        agent_type: get(&r, 2)?,
        source: get(&r, 3)?,
        branch: (!branch.is_empty()).then_some(branch),
        commit: get(&r, 5)?,
        description: get(&r, 6)?,
        files,
        has_diff: get(&r, 8)?,
        trust_level: u8::try_from(get::<i16>(&r, 9)?).unwrap_or_default(),
        created_at: get(&r, 10)?,
        repository: get(&r, 13)?,
    };
    let diff: Option<String> = get(&r, 11)?;
    let now: Timestamp = get(&r, 12)?;
    // Runs with their review, if any, in one statement.
    let rows = tx
        .query(
            &tx.prepare_cached(
                "SELECT v.policy, v.tier, v.executor, v.status, v.reason, v.files, v.file_count, v.approval_id,
                        v.exit_code, v.duration_ms, v.output_tail, v.started_at, v.finished_at,
                        a.status, a.expires_at, a.decided_by, a.note, v.external_url
                   FROM verification_results v LEFT JOIN approval_queue a ON a.approval_id = v.approval_id
                  WHERE v.changeset_id = $1 ORDER BY v.tier, v.policy, v.attempt",
            )
            .await?,
            &[&id],
        )
        .await?;
    let mut runs = Vec::with_capacity(rows.len());
    let mut reviews = Vec::new();
    for r in &rows {
        let Json(files) = get::<Json<Vec<String>>>(r, 5)?;
        let run = VerificationRun {
            policy: get(r, 0)?,
            tier: u8::try_from(get::<i16>(r, 1)?).unwrap_or_default(),
            executor: Executor::parse(&get::<String>(r, 2)?).unwrap_or(Executor::Manual),
            status: RunStatus::parse(&get::<String>(r, 3)?).unwrap_or(RunStatus::Error),
            reason: get(r, 4)?,
            files,
            file_count: usize::try_from(get::<i32>(r, 6)?).unwrap_or_default(),
            approval_id: get(r, 7)?,
            exit_code: get(r, 8)?,
            duration_ms: get(r, 9)?,
            output_tail: get(r, 10)?,
            started_at: get(r, 11)?,
            finished_at: get(r, 12)?,
            external_url: get(r, 17)?,
        };
        if let (Some(approval_id), Some(status)) = (&run.approval_id, get::<Option<String>>(r, 13)?) {
            reviews.push((
                approval_id.clone(),
                Review {
                    status: ApprovalStatus::parse(&status).unwrap_or(ApprovalStatus::Expired),
                    expires_at: get(r, 14)?,
                    decided_by: get(r, 15)?,
                    note: get(r, 16)?,
                },
            ));
        }
        runs.push(run);
    }
    Ok(verification::assemble(changeset, runs, &reviews, now, diff, existing))
}

/// The oldest claimable run of `executors` (see `VerificationStore::claim_verification_run`):
/// the row is locked (`SKIP LOCKED`), so racing workers take different runs.
async fn claim(tx: &Tx<'_>, ctx: &OpCtx, filter: &ClaimFilter) -> R<Option<ClaimedRun>> {
    let names: Vec<&str> = filter.executors.iter().map(|e| e.as_str()).collect();
    let Some(r) = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "SELECT v.changeset_id, v.policy, v.attempt, v.policy_snapshot, v.files, v.file_count, c.branch,
                        c.commit_sha, {NOW}, v.external_id, v.external_url, c.repository
                   FROM verification_results v
                   JOIN changesets c ON c.changeset_id = v.changeset_id
                   LEFT JOIN approval_queue a ON a.approval_id = v.approval_id
                  WHERE v.executor = ANY($2::text[]) AND c.agent_id <> $3
                    AND ($4::text IS NULL OR c.commit_sha IS NULL OR left($4, length(c.commit_sha)) = c.commit_sha)
                    AND (v.status = 'pending'
                         OR (v.status = 'running' AND v.lease_until <= {NOW})
                         OR (v.status = 'awaiting_approval' AND v.executor <> 'manual'
                             AND a.status IN ('approved', 'used')))
                  ORDER BY v.created_at, v.changeset_id, v.policy LIMIT 1
                  FOR UPDATE OF v SKIP LOCKED"
            ))
            .await?,
            &[&ctx.now, &names, &ctx.who.agent_id, &filter.commit],
        )
        .await?
    else {
        return Ok(None);
    };
    let Json(policy) = get::<Json<VerificationPolicy>>(&r, 3)?;
    let Json(files) = get::<Json<Vec<String>>>(&r, 4)?;
    let branch: String = get(&r, 6)?;
    let now: Timestamp = get(&r, 8)?;
    let lease_until = now + chrono::Duration::seconds(i64::from(policy.timeout_seconds) + CLAIM_GRACE_SECONDS);
    let run = ClaimedRun {
        changeset_id: get(&r, 0)?,
        attempt: u32::try_from(get::<i32>(&r, 2)?).unwrap_or(1),
        policy,
        files,
        file_count: usize::try_from(get::<i32>(&r, 5)?).unwrap_or_default(),
        branch: (!branch.is_empty()).then_some(branch),
        commit: get(&r, 7)?,
        lease_until,
        external_id: get(&r, 9)?,
        external_url: get(&r, 10)?,
        repository: get(&r, 11)?,
    };
    tx.execute(
        "UPDATE verification_results SET status = 'running', claimed_by = $4, started_at = $5, lease_until = $6,
                reason = NULL
          WHERE changeset_id = $1 AND policy = $2 AND attempt = $3",
        &[
            &run.changeset_id,
            &run.policy.name,
            &int(i64::from(run.attempt)),
            &ctx.who.agent_id,
            &now,
            &lease_until,
        ],
    )
    .await?;
    Ok(Some(run))
}

async fn report(tx: &Tx<'_>, ctx: &OpCtx, r: &RunReport) -> R<VerificationResult> {
    let attempt = int(i64::from(r.attempt));
    let row = tx
        .query_opt(
            "SELECT v.status, v.claimed_by, c.agent_id FROM verification_results v
               JOIN changesets c ON c.changeset_id = v.changeset_id
              WHERE v.changeset_id = $1 AND v.policy = $2 AND v.attempt = $3
              FOR UPDATE OF v",
            &[&r.changeset_id, &r.policy, &attempt],
        )
        .await?
        .ok_or_else(|| Fail::Coord(verification::run_not_found(r)))?;
    let claim = RunClaim {
        status: RunStatus::parse(&get::<String>(&row, 0)?).unwrap_or(RunStatus::Error),
        claimed_by: get(&row, 1)?,
        submitter: get(&row, 2)?,
    };
    verification::decide_report(&claim, &ctx.who.agent_id, r)?;
    if let Some((external_id, url)) = r.external.as_ref().filter(|_| r.status == RunStatus::Running) {
        // Started elsewhere: recorded, and the lease runs from now for the policy's timeout.
        tx.execute(
            &format!(
                "UPDATE verification_results SET external_id = $5, external_url = $6,
                        lease_until = {NOW} + make_interval(secs => (policy_snapshot->>'timeout_seconds')::int + $7)
                  WHERE changeset_id = $2 AND policy = $3 AND attempt = $4"
            ),
            &[
                &ctx.now,
                &r.changeset_id,
                &r.policy,
                &attempt,
                external_id,
                url,
                &(CLAIM_GRACE_SECONDS as i32),
            ],
        )
        .await?;
        return read(tx, ctx, &r.changeset_id, false, false).await;
    }
    tx.execute(
        &format!(
            "UPDATE verification_results SET status = $5, exit_code = $6, duration_ms = $7, output_tail = $8,
                    reason = $9, finished_at = {NOW}, lease_until = NULL
              WHERE changeset_id = $2 AND policy = $3 AND attempt = $4"
        ),
        &[
            &ctx.now,
            &r.changeset_id,
            &r.policy,
            &attempt,
            &r.status.as_str(),
            &r.exit_code,
            &r.duration_ms,
            &r.output_tail,
            &r.reason,
        ],
    )
    .await?;
    read(tx, ctx, &r.changeset_id, false, false).await
}

/// The running run an executor knows by `external_id`, finished; None when no running
/// run has that id (finished already, or not coord's).
async fn finish_external(tx: &Tx<'_>, ctx: &OpCtx, f: &ExternalFinish) -> R<Option<(String, VerificationResult)>> {
    let row = tx
        .query_opt(
            &format!(
                "UPDATE verification_results SET status = $4, reason = $5, external_url = COALESCE($6, external_url),
                        finished_at = {NOW}, lease_until = NULL,
                        duration_ms = (extract(epoch FROM {NOW} - started_at) * 1000)::bigint
                  WHERE executor = $2 AND external_id = $3 AND status = 'running'
                  RETURNING changeset_id, policy"
            ),
            &[
                &ctx.now,
                &f.executor.as_str(),
                &f.external_id,
                &f.status.as_str(),
                &f.reason,
                &f.url,
            ],
        )
        .await?;
    match row {
        Some(r) => Ok(Some((
            get(&r, 1)?,
            read(tx, ctx, &get::<String>(&r, 0)?, false, false).await?,
        ))),
        None => Ok(None),
    }
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn`
async fn get_one(tx: &Tx<'_>, ctx: &OpCtx, (id, diff): &(String, bool)) -> R<VerificationResult> {
    read(tx, ctx, id, *diff, false).await
}

#[async_trait]
impl VerificationStore for PgStore {
    async fn verification_policy_rows(&self) -> CoordResult<Vec<VerificationPolicyRow>> {
        let client = self.client().await?;
        policies(&client).await.map_err(CoordError::from)
    }

    async fn list_verification_policies(&self, ctx: OpCtx) -> CoordResult<Vec<VerificationPolicyRow>> {
        self.op(ctx, (), |tx, _, _| Box::pin(policies(tx))).await
    }

    async fn set_verification_policy(
        &self,
        ctx: OpCtx,
        policy: VerificationPolicy,
    ) -> CoordResult<VerificationPolicyRow> {
        self.op(ctx, policy, |tx, ctx, p| Box::pin(set_policy(tx, ctx, p)))
            .await
    }

    async fn delete_verification_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, name, |tx, _, n| Box::pin(delete_policy(tx, n))).await
    }

    async fn submit_changeset(&self, ctx: OpCtx, routed: RoutedChangeset) -> CoordResult<VerificationResult> {
        self.op(ctx, routed, |tx, ctx, r| Box::pin(submit(tx, ctx, r))).await
    }

    async fn get_verification(&self, ctx: OpCtx, changeset_id: String, diff: bool) -> CoordResult<VerificationResult> {
        self.op(ctx, (changeset_id, diff), |tx, ctx, a| Box::pin(get_one(tx, ctx, a)))
            .await
    }

    async fn claim_verification_run(&self, ctx: OpCtx, filter: ClaimFilter) -> CoordResult<Option<ClaimedRun>> {
        self.op(ctx, filter, |tx, ctx, f| Box::pin(claim(tx, ctx, f))).await
    }

    async fn finish_external_run(
        &self,
        ctx: OpCtx,
        f: ExternalFinish,
    ) -> CoordResult<Option<(String, VerificationResult)>> {
        self.op(ctx, f, |tx, ctx, f| Box::pin(finish_external(tx, ctx, f)))
            .await
    }

    async fn report_verification_run(&self, ctx: OpCtx, r: RunReport) -> CoordResult<VerificationResult> {
        self.op(ctx, r, |tx, ctx, r| Box::pin(report(tx, ctx, r))).await
    }
}
