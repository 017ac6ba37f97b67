//! `verification_policies`, `changesets` and `verification_results`: the verification
//! gateway's policies, what agents submitted and each policy's run over it.

use crate::rows::{json, opt_ts, to_json, ts};
use crate::{Fail, R, SqliteStore};
use async_trait::async_trait;
use coord_domain::approvals::ApprovalStatus;
use coord_domain::time::from_micros;
use coord_domain::verification::{
    self, CLAIM_GRACE_SECONDS, Changeset, ClaimFilter, ClaimedRun, Executor, ExternalFinish, MAX_POLICIES,
    RUN_FILES_SHOWN, Review, RunClaim, RunReport, RunStatus, VerificationPolicy, VerificationPolicyRow,
    VerificationResult, VerificationRun, no_policy, too_many_policies,
};
use coord_domain::{CoordResult, Identity};
use coord_store::{OpCtx, RoutedChangeset, VerificationStore};
use rusqlite::{Connection, OptionalExtension, Row, params};

const SELECT_POLICY: &str = "SELECT policy, updated_by, updated_at FROM verification_policies";

fn policy_row(r: &Row) -> rusqlite::Result<VerificationPolicyRow> {
    Ok(VerificationPolicyRow {
        policy: json(r, 0)?,
        updated_by: r.get(1)?,
        updated_at: ts(r, 2)?,
    })
}

fn policies(c: &Connection) -> R<Vec<VerificationPolicyRow>> {
    Ok(c.prepare_cached(&format!("{SELECT_POLICY} ORDER BY name"))?
        .query_map([], policy_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

fn set_policy(c: &Connection, now: i64, by: &str, policy: &VerificationPolicy) -> R<VerificationPolicyRow> {
    let exists = c
        .prepare_cached("SELECT 1 FROM verification_policies WHERE name = ?1")?
        .query_row([&policy.name], |_| Ok(()))
        .optional()?
        .is_some();
    let count: i64 = c.query_row("SELECT count(*) FROM verification_policies", [], |r| r.get(0))?;
    if !exists && count >= MAX_POLICIES as i64 {
        return Err(Fail::Coord(too_many_policies()));
    }
    c.prepare_cached(
        "INSERT INTO verification_policies (name, policy, updated_by, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, updated_by = excluded.updated_by,
             updated_at = excluded.updated_at",
    )?
    .execute(params![policy.name, to_json(policy), by, now])?;
    Ok(c.prepare_cached(&format!("{SELECT_POLICY} WHERE name = ?1"))?
        .query_row([&policy.name], policy_row)?)
}

fn delete_policy(c: &Connection, name: &str) -> R<String> {
    if c.prepare_cached("DELETE FROM verification_policies WHERE name = ?1")?
        .execute([name])?
        == 0
    {
        return Err(Fail::Coord(no_policy(name)));
    }
    Ok(name.to_string())
}

/// Records a routed changeset, or finds the one this agent already submitted for the
/// same branch and commit (the single writer makes the look and the insert one step).
fn submit(c: &Connection, now: i64, who: &Identity, routed: &RoutedChangeset) -> R<VerificationResult> {
    let cs = &routed.changeset;
    let branch = cs.branch.clone().unwrap_or_default();
    if let Some(commit) = &cs.commit {
        let existing: Option<String> = c
            .prepare_cached(
                "SELECT changeset_id FROM changesets
                  WHERE agent_id = ?1 AND source = ?4 AND branch = ?2 AND commit_sha = ?3",
            )?
            .query_row(params![who.agent_id, branch, commit, routed.source], |r| r.get(0))
            .optional()?;
        if let Some(id) = existing {
            return read(c, now, &id, false, true);
        }
    }
    let id = verification::new_changeset_id();
    c.prepare_cached(
        "INSERT INTO changesets (changeset_id, agent_id, agent_type, source, branch, commit_sha, description, files,
                                 diff, trust_level, created_at, repository)
         VALUES (?1, ?2, ?3, ?11, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12)",
    )?
    .execute(params![
        id,
        who.agent_id,
        who.agent_type,
        branch,
        cs.commit,
        cs.description,
        to_json(&cs.files),
        cs.diff,
        routed.trust_level,
        now,
        routed.source,
        cs.repository
    ])?;
    for run in &routed.runs {
        let approval_id = match run.status {
            RunStatus::AwaitingApproval => Some(crate::approvals::enqueue(
                c,
                now,
                &coord_store::review_request(who, &id, run, cs.description.as_deref()),
            )?),
            _ => None,
        };
        c.prepare_cached(
            "INSERT INTO verification_results (changeset_id, policy, attempt, tier, executor, status, reason,
                                               policy_snapshot, files, file_count, approval_id, created_at)
             VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            id,
            run.policy.name,
            run.policy.tier,
            run.policy.executor.as_str(),
            run.status.as_str(),
            run.reason,
            to_json(&run.policy),
            to_json(&run.files.iter().take(RUN_FILES_SHOWN).collect::<Vec<_>>()),
            run.files.len() as i64,
            approval_id,
            now
        ])?;
    }
    read(c, now, &id, false, false)
}

fn read(c: &Connection, now: i64, id: &str, with_diff: bool, existing: bool) -> R<VerificationResult> {
    let found = c
        .prepare_cached(
            "SELECT changeset_id, agent_id, agent_type, source, branch, commit_sha, description, files,
                    diff IS NOT NULL, trust_level, created_at, CASE WHEN ?2 THEN diff END, repository
               FROM changesets WHERE changeset_id = ?1",
        )?
        .query_row(params![id, with_diff], |r| {
            let branch: String = r.get(4)?;
            Ok((
                Changeset {
                    changeset_id: r.get(0)?,
                    agent_id: r.get(1)?,
                    agent_type: r.get(2)?,
                    source: r.get(3)?,
                    branch: (!branch.is_empty()).then_some(branch),
                    commit: r.get(5)?,
                    description: r.get(6)?,
                    files: json(r, 7)?,
                    has_diff: r.get(8)?,
                    trust_level: r.get(9)?,
                    created_at: ts(r, 10)?,
                    repository: r.get(12)?,
                },
                r.get::<_, Option<String>>(11)?,
            ))
        })
        .optional()?;
    let Some((changeset, diff)) = found else {
        return Err(Fail::Coord(verification::changeset_not_found(id)));
    };
    // Runs with their review, if any, in one statement.
    let mut reviews = Vec::new();
    let runs = c
        .prepare_cached(
            "SELECT v.policy, v.tier, v.executor, v.status, v.reason, v.files, v.file_count, v.approval_id,
                    v.exit_code, v.duration_ms, v.output_tail, v.started_at, v.finished_at,
                    a.status, a.expires_at, a.decided_by, a.note, v.external_url
               FROM verification_results v LEFT JOIN approval_queue a ON a.approval_id = v.approval_id
              WHERE v.changeset_id = ?1 ORDER BY v.tier, v.policy, v.attempt",
        )?
        .query_map([id], |r| {
            let executor: String = r.get(2)?;
            let status: String = r.get(3)?;
            let run = VerificationRun {
                policy: r.get(0)?,
                tier: r.get(1)?,
                executor: Executor::parse(&executor).unwrap_or(Executor::Manual),
                status: RunStatus::parse(&status).unwrap_or(RunStatus::Error),
                reason: r.get(4)?,
                files: json(r, 5)?,
                file_count: r.get::<_, i64>(6)? as usize,
                approval_id: r.get(7)?,
                exit_code: r.get(8)?,
                duration_ms: r.get(9)?,
                output_tail: r.get(10)?,
                started_at: opt_ts(r, 11)?,
                finished_at: opt_ts(r, 12)?,
                external_url: r.get(17)?,
            };
            let review = match r.get::<_, Option<String>>(13)? {
                Some(status) => Some(Review {
                    status: ApprovalStatus::parse(&status).unwrap_or(ApprovalStatus::Expired),
                    expires_at: ts(r, 14)?,
                    decided_by: r.get(15)?,
                    note: r.get(16)?,
                }),
                None => None,
            };
            Ok((run, review))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(|(run, review)| {
            if let (Some(id), Some(review)) = (&run.approval_id, review) {
                reviews.push((id.clone(), review));
            }
            run
        })
        .collect();
    Ok(verification::assemble(
        changeset,
        runs,
        &reviews,
        from_micros(now),
        diff,
        existing,
    ))
}

/// The oldest claimable run of `executors` (see `VerificationStore::claim_verification_run`);
/// the single writer makes the look and the update one step.
fn claim(c: &Connection, now: i64, who: &Identity, filter: &ClaimFilter) -> R<Option<ClaimedRun>> {
    let names: Vec<&str> = filter.executors.iter().map(|e| e.as_str()).collect();
    let found = c
        .prepare_cached(
            "SELECT v.changeset_id, v.policy, v.attempt, v.policy_snapshot, v.files, v.file_count, c.branch, c.commit_sha,
                    v.external_id, v.external_url, c.repository
               FROM verification_results v
               JOIN changesets c ON c.changeset_id = v.changeset_id
               LEFT JOIN approval_queue a ON a.approval_id = v.approval_id
              WHERE v.executor IN (SELECT value FROM json_each(?1)) AND c.agent_id <> ?2
                AND (?4 IS NULL OR c.commit_sha IS NULL OR substr(?4, 1, length(c.commit_sha)) = c.commit_sha)
                AND (v.status = 'pending'
                     OR (v.status = 'running' AND v.lease_until <= ?3)
                     OR (v.status = 'awaiting_approval' AND v.executor <> 'manual'
                         AND a.status IN ('approved', 'used')))
              ORDER BY v.created_at, v.changeset_id, v.policy LIMIT 1",
        )?
        .query_row(params![to_json(&names), who.agent_id, now, filter.commit], |r| {
            let branch: String = r.get(6)?;
            Ok(ClaimedRun {
                changeset_id: r.get(0)?,
                policy: json(r, 3)?,
                attempt: r.get(2)?,
                files: json(r, 4)?,
                file_count: r.get::<_, i64>(5)? as usize,
                branch: (!branch.is_empty()).then_some(branch),
                commit: r.get(7)?,
                lease_until: from_micros(now),
                external_id: r.get(8)?,
                external_url: r.get(9)?,
                repository: r.get(10)?,
            })
        })
        .optional()?;
    let Some(mut run) = found else {
        return Ok(None);
    };
    let lease = now + (i64::from(run.policy.timeout_seconds) + CLAIM_GRACE_SECONDS) * 1_000_000;
    run.lease_until = from_micros(lease);
    c.prepare_cached(
        "UPDATE verification_results SET status = 'running', claimed_by = ?4, started_at = ?5, lease_until = ?6,
                reason = NULL
          WHERE changeset_id = ?1 AND policy = ?2 AND attempt = ?3",
    )?
    .execute(params![
        run.changeset_id,
        run.policy.name,
        run.attempt,
        who.agent_id,
        now,
        lease
    ])?;
    Ok(Some(run))
}

fn report(c: &Connection, now: i64, who: &Identity, r: &RunReport) -> R<VerificationResult> {
    let claim = c
        .prepare_cached(
            "SELECT v.status, v.claimed_by, c.agent_id FROM verification_results v
               JOIN changesets c ON c.changeset_id = v.changeset_id
              WHERE v.changeset_id = ?1 AND v.policy = ?2 AND v.attempt = ?3",
        )?
        .query_row(params![r.changeset_id, r.policy, r.attempt], |row| {
            let status: String = row.get(0)?;
            Ok(RunClaim {
                status: RunStatus::parse(&status).unwrap_or(RunStatus::Error),
                claimed_by: row.get(1)?,
                submitter: row.get(2)?,
            })
        })
        .optional()?
        .ok_or_else(|| Fail::Coord(verification::run_not_found(r)))?;
    verification::decide_report(&claim, &who.agent_id, r)?;
    if let Some((external_id, url)) = r.external.as_ref().filter(|_| r.status == RunStatus::Running) {
        // Started elsewhere: recorded, and the lease runs from now for the policy's timeout.
        c.prepare_cached(
            "UPDATE verification_results SET external_id = ?4, external_url = ?5,
                    lease_until = ?6 + (json_extract(policy_snapshot, '$.timeout_seconds') + ?7) * 1000000
              WHERE changeset_id = ?1 AND policy = ?2 AND attempt = ?3",
        )?
        .execute(params![
            r.changeset_id,
            r.policy,
            r.attempt,
            external_id,
            url,
            now,
            CLAIM_GRACE_SECONDS
        ])?;
        return read(c, now, &r.changeset_id, false, false);
    }
    c.prepare_cached(
        "UPDATE verification_results SET status = ?4, exit_code = ?5, duration_ms = ?6, output_tail = ?7, reason = ?8,
                finished_at = ?9, lease_until = NULL
          WHERE changeset_id = ?1 AND policy = ?2 AND attempt = ?3",
    )?
    .execute(params![
        r.changeset_id,
        r.policy,
        r.attempt,
        r.status.as_str(),
        r.exit_code,
        r.duration_ms,
        r.output_tail,
        r.reason,
        now
    ])?;
    read(c, now, &r.changeset_id, false, false)
}

/// The running run an executor knows by `external_id`, finished; None when no running
/// run has that id (finished already, or not coord's).
fn finish_external(c: &Connection, now: i64, f: &ExternalFinish) -> R<Option<(String, VerificationResult)>> {
    let found: Option<(String, String)> = c
        .prepare_cached(
            "UPDATE verification_results SET status = ?3, reason = ?4, external_url = COALESCE(?5, external_url),
                    finished_at = ?6, lease_until = NULL,
                    duration_ms = CASE WHEN started_at IS NULL THEN NULL ELSE (?6 - started_at) / 1000 END
              WHERE executor = ?1 AND external_id = ?2 AND status = 'running'
              RETURNING changeset_id, policy",
        )?
        .query_row(
            params![
                f.executor.as_str(),
                f.external_id,
                f.status.as_str(),
                f.reason,
                f.url,
                now
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    found
        .map(|(id, policy)| Ok((policy, read(c, now, &id, false, false)?)))
        .transpose()
}

#[async_trait]
impl VerificationStore for SqliteStore {
    async fn verification_policy_rows(&self) -> CoordResult<Vec<VerificationPolicyRow>> {
        self.read(policies).await
    }

    async fn list_verification_policies(&self, ctx: OpCtx) -> CoordResult<Vec<VerificationPolicyRow>> {
        self.op(ctx, |c, _, _| policies(c)).await
    }

    async fn set_verification_policy(
        &self,
        ctx: OpCtx,
        policy: VerificationPolicy,
    ) -> CoordResult<VerificationPolicyRow> {
        self.op(ctx, move |c, now, who| set_policy(c, now, &who.agent_id, &policy))
            .await
    }

    async fn delete_verification_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, move |c, _, _| delete_policy(c, &name)).await
    }

    async fn submit_changeset(&self, ctx: OpCtx, routed: RoutedChangeset) -> CoordResult<VerificationResult> {
        self.op(ctx, move |c, now, who| submit(c, now, who, &routed)).await
    }

    async fn get_verification(&self, ctx: OpCtx, changeset_id: String, diff: bool) -> CoordResult<VerificationResult> {
        self.op(ctx, move |c, now, _| read(c, now, &changeset_id, diff, false))
            .await
    }

    async fn claim_verification_run(&self, ctx: OpCtx, filter: ClaimFilter) -> CoordResult<Option<ClaimedRun>> {
        self.op(ctx, move |c, now, who| claim(c, now, who, &filter)).await
    }

    async fn finish_external_run(
        &self,
        ctx: OpCtx,
        f: ExternalFinish,
    ) -> CoordResult<Option<(String, VerificationResult)>> {
        self.op(ctx, move |c, now, _| finish_external(c, now, &f)).await
    }

    async fn report_verification_run(&self, ctx: OpCtx, r: RunReport) -> CoordResult<VerificationResult> {
        self.op(ctx, move |c, now, who| report(c, now, who, &r)).await
    }
}
