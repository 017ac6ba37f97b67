//! The `github_actions` executor of `coord verify run`: dispatches the policy's workflow
//! through GitHub's REST API, records the run's id with coord (so no other worker
//! dispatches it again, and the `workflow_run` webhook can finish it), then follows it
//! until it completes or the policy's timeout passes.
//!
//! Dispatching is not idempotent: a dispatch that got no clear answer (a 5xx, a
//! timeout) is reconciled by listing the workflow's runs for one whose title names the
//! changeset — never by dispatching again. The workflow should name its runs with the
//! changeset (`run-name: coord ${{ inputs.changeset_id }}`), which GitHub Enterprise
//! servers without `return_run_details` also need.

use coord_domain::access::Principal;
use coord_domain::verification::{
    ClaimedRun, GetVerificationRequest, ReportVerificationRunRequest, RunStatus, conclusion_status,
};
use coord_domain::{CoordError, ErrorCode};
use coord_remote::github::{ApiError, GithubApi};
use coord_service::ops::verification::{GetVerification, ReportVerificationRun};
use coord_service::{Coordination, call};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How a followed run ended, for the worker's report.
pub struct Followed {
    pub status: RunStatus,
    pub reason: Option<String>,
    pub output: String,
    /// Already finished in coord (the webhook was first): nothing to report.
    pub finished_elsewhere: bool,
}

fn error(reason: String) -> Followed {
    Followed {
        status: RunStatus::Error,
        reason: Some(reason),
        output: String::new(),
        finished_elsewhere: false,
    }
}

/// Where the worker follows runs: the API, the repository when the changeset names
/// none, and the wait between polls (10 s, growing to 60 s).
pub struct Actions<'a> {
    pub api: &'a GithubApi,
    pub repository: Option<String>,
    pub poll: Duration,
}

/// The run of this changeset and policy among the workflow's dispatched runs (its title
/// names both, as `run-name: coord <changeset_id> <policy>` makes it), if GitHub lists it.
async fn find_run(a: &Actions<'_>, repo: &str, workflow: &str, run: &ClaimedRun) -> Result<Option<Value>, ApiError> {
    let mut path = format!("/repos/{repo}/actions/workflows/{workflow}/runs?event=workflow_dispatch&per_page=100");
    if let Some(b) = &run.branch {
        path.push_str(&format!(
            "&branch={}",
            form_urlencoded::byte_serialize(b.as_bytes()).collect::<String>()
        ));
    }
    let listed = a.api.call("GET", &path, None).await?;
    Ok(listed["workflow_runs"]
        .as_array()
        .and_then(|runs| {
            runs.iter().find(|r| {
                r["display_title"].as_str().is_some_and(|t| {
                    let words: Vec<&str> = t.split_whitespace().collect();
                    words.contains(&run.changeset_id.as_str()) && words.contains(&run.policy.name.as_str())
                })
            })
        })
        .cloned())
}

/// Dispatches the workflow; answers the run's (id, page).
async fn dispatch(
    a: &Actions<'_>,
    repo: &str,
    workflow: &str,
    run: &ClaimedRun,
) -> Result<(String, Option<String>), String> {
    let Some(branch) = &run.branch else {
        return Err(
            "a GitHub Actions run needs the changeset's branch (submit it with --branch or from a push)".into(),
        );
    };
    let body = json!({
        "ref": branch,
        "inputs": {"changeset_id": run.changeset_id, "policy": run.policy.name},
        "return_run_details": true,
    });
    let path = format!("/repos/{repo}/actions/workflows/{workflow}/dispatches");
    let answered = a.api.call("POST", &path, Some(&body)).await;
    let details = match answered {
        Ok(v) if v["workflow_run_id"].is_i64() || v["workflow_run_id"].is_u64() => Some(v),
        // 204 without details (older servers), or no clear answer: find it, never
        // dispatch again.
        Ok(_) => None,
        Err(e) if e.ambiguous => None,
        Err(e) => return Err(e.message),
    };
    if let Some(v) = details {
        let id = v["workflow_run_id"].to_string();
        let url = v["html_url"].as_str().or(v["run_url"].as_str()).map(str::to_string);
        return Ok((id, url));
    }
    // GitHub lists a dispatched run within seconds.
    for attempt in 0..5u32 {
        match find_run(a, repo, workflow, run).await {
            Ok(Some(r)) => return Ok((r["id"].to_string(), r["html_url"].as_str().map(str::to_string))),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "listing the workflow's runs failed"),
        }
        tokio::time::sleep(a.poll.min(Duration::from_secs(2)) * (attempt + 1)).await;
    }
    Err(format!(
        "the dispatch of {workflow} got no run id and no run titled with {} and {} appeared: not dispatched again (name the workflow's runs with `run-name: coord ${{{{ inputs.changeset_id }}}} ${{{{ inputs.policy }}}}`)",
        run.changeset_id, run.policy.name
    ))
}

/// Whether coord already has the run finished (the webhook came first).
async fn finished_in_coord(coord: &dyn Coordination, me: &Principal, run: &ClaimedRun) -> bool {
    let req = GetVerificationRequest {
        changeset_id: run.changeset_id.clone(),
        diff: false,
    };
    match call::<GetVerification, _>(coord, me, req).await {
        Ok(v) => v
            .runs
            .iter()
            .any(|r| r.policy == run.policy.name && r.status.is_final()),
        Err(_) => false,
    }
}

/// Runs a claimed `github_actions` run: dispatched (unless an earlier worker did), its id
/// reported to coord, then followed until it completes, coord learns it finished, or
/// the policy's timeout passes (the workflow run is then cancelled).
pub async fn execute(coord: &dyn Coordination, me: &Principal, a: &Actions<'_>, run: &ClaimedRun) -> Followed {
    let Some(workflow) = run.policy.workflow.as_deref() else {
        return error(format!("policy {} names no workflow", run.policy.name));
    };
    let Some(repo) = run.repository.clone().or_else(|| a.repository.clone()) else {
        return error(
            "no GitHub repository: the changeset was not pushed from one; give the worker --repository OWNER/NAME"
                .into(),
        );
    };
    let started = Instant::now();
    let (id, url) = match &run.external_id {
        // An earlier worker dispatched it and stopped: follow that run.
        Some(id) => (id.clone(), run.external_url.clone()),
        // An earlier worker may have dispatched it and stopped before recording the
        // run: look for it first, dispatch only if GitHub has none.
        None => match find_run(a, &repo, workflow, run).await {
            Ok(Some(r)) => (r["id"].to_string(), r["html_url"].as_str().map(str::to_string)),
            Ok(None) => match dispatch(a, &repo, workflow, run).await {
                Ok(found) => found,
                Err(why) => return error(why),
            },
            Err(e) => {
                return error(format!(
                    "cannot list the workflow's runs, so cannot tell whether it was dispatched already: {e}"
                ));
            }
        },
    };
    let attach = ReportVerificationRunRequest {
        changeset_id: run.changeset_id.clone(),
        policy: run.policy.name.clone(),
        attempt: Some(run.attempt),
        status: RunStatus::Running,
        exit_code: None,
        duration_ms: None,
        output_tail: None,
        reason: None,
        external_id: Some(id.clone()),
        external_url: url.clone(),
    };
    let mut recorded = call::<ReportVerificationRun, _>(coord, me, attach.clone()).await;
    for pause in [1, 3] {
        match &recorded {
            // Refused: the claim passed to another worker (or the run finished): theirs.
            Ok(_)
            | Err(CoordError {
                code: ErrorCode::Forbidden,
                ..
            }) => break,
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(pause)).await;
                recorded = call::<ReportVerificationRun, _>(coord, me, attach.clone()).await;
            }
        }
    }
    if let Err(e) = recorded {
        // A worker taking the run over finds the dispatched run by its title.
        return Followed {
            finished_elsewhere: true,
            ..error(format!("could not record run {id}: {} [{}]", e.message, e.code))
        };
    }
    let limit = Duration::from_secs(u64::from(run.policy.timeout_seconds));
    let mut wait = a.poll;
    loop {
        if finished_in_coord(coord, me, run).await {
            return Followed {
                finished_elsewhere: true,
                ..error("finished by GitHub's workflow_run webhook".into())
            };
        }
        match a
            .api
            .call("GET", &format!("/repos/{repo}/actions/runs/{id}"), None)
            .await
        {
            Ok(r) if r["status"].as_str() == Some("completed") => {
                let conclusion = r["conclusion"].as_str();
                let page = r["html_url"].as_str().map(str::to_string).or(url.clone());
                return Followed {
                    status: conclusion_status(conclusion),
                    reason: Some(format!(
                        "GitHub Actions run {id} concluded {}",
                        conclusion.unwrap_or("without a conclusion")
                    )),
                    output: page.map(|p| format!("{p}\n")).unwrap_or_default(),
                    finished_elsewhere: false,
                };
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(run = %id, error = %e, "polling the workflow run failed");
                if let Some(s) = e.retry_after {
                    wait = wait.max(Duration::from_secs(s.min(3600)));
                }
            }
        }
        if started.elapsed() >= limit {
            let _ = a
                .api
                .call("POST", &format!("/repos/{repo}/actions/runs/{id}/cancel"), None)
                .await;
            return Followed {
                status: RunStatus::TimedOut,
                reason: Some(format!(
                    "GitHub Actions run {id} still running after {} s: cancelled",
                    run.policy.timeout_seconds
                )),
                output: url.map(|p| format!("{p}\n")).unwrap_or_default(),
                finished_elsewhere: false,
            };
        }
        tokio::time::sleep(wait.min(limit.saturating_sub(started.elapsed()))).await;
        wait = (wait * 2).min(Duration::from_secs(60)).max(a.poll);
    }
}
