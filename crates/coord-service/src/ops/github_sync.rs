//! What issue, pull request and branch events do to locks and tasks
//! (`coord_github::sync` plans it; this applies the plan through the store, each
//! step audited as its operation under the agent it is for, with the delivery id).
//!
//! Every step is idempotent (acquiring a held lock renews it, releasing a released
//! one is a no-op, a task ends once), so a delivery processed twice — a restart
//! mid-way, a redelivery — leaves the same state. The link is saved last.

use crate::Coordinator;
use crate::op::Operation;
use coord_domain::locks::LockAction;
use coord_domain::queue::{NewTask, TaskEnding};
use coord_domain::target::LockTarget;
use coord_domain::{Caller, CoordResult, Identity, Timestamp};
use coord_github::sync::{
    self as sync, DeleteEvent, Issue, IssuesEvent, Link, PullRequest, PullRequestEvent, Repository, TaskEnd,
};
use coord_github::webhook::{Delivery, DeliveryStatus, Push};
use coord_store::OpCtx;
use serde_json::json;

/// What became of an event: its status and a note for the delivery row.
pub(crate) type Outcome = (DeliveryStatus, String);

fn failed(why: impl std::fmt::Display) -> Outcome {
    (DeliveryStatus::Failed, why.to_string())
}

/// A step that could not be done: a database that does not answer for now leaves the
/// delivery `received`, so it is acted on again (every step is idempotent); anything
/// else fails it.
pub(crate) fn stopped(e: coord_domain::CoordError) -> Outcome {
    // Only the database not answering is a passing state; other errors would keep the
    // delivery `received`, retried hourly, for ever.
    match e.code {
        coord_domain::ErrorCode::DatabaseUnavailable => (
            DeliveryStatus::Received,
            format!("will be acted on again: {} [{}]", e.message, e.code),
        ),
        _ => failed(format!("{} [{}]", e.message, e.code)),
    }
}

/// One event at a time per coordinator process: an issue's or branch's link is read,
/// acted on and saved without another delivery for it in between (GitHub sends several
/// `labeled` events for one edit at once). Across processes the save is guarded by the
/// issue's `updated_at`.
static SYNC: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn agent(id: &str) -> CoordResult<Identity> {
    Caller::new(id, coord_github::webhook::WEBHOOK_AGENT_TYPE).validate()
}

fn webhook() -> Identity {
    Identity {
        agent_id: coord_github::webhook::WEBHOOK_AGENT.into(),
        agent_type: coord_github::webhook::WEBHOOK_AGENT_TYPE.into(),
    }
}

/// An audited context for one step of a delivery.
fn step(now: Option<Timestamp>, who: Identity, op: &'static str, d: &Delivery, params: serde_json::Value) -> OpCtx {
    let mut p = json!({ "delivery_id": d.delivery_id });
    if let (Some(p), serde_json::Value::Object(extra)) = (p.as_object_mut(), params) {
        p.extend(extra);
    }
    OpCtx::internal(now, who, op, p)
}

/// Locks taken (or renewed) and locks held by someone else.
struct Taken {
    held: Vec<String>,
    contested: Vec<(String, String)>,
}

/// How a link names its paths: labels may name a directory (`src/auth/`) or a glob;
/// a pushed file is that file, whatever characters its name has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Paths {
    Labels,
    Pushed,
}

/// Takes (or renews) the locks on `paths` for `owner`. Only locks this link took are
/// renewed: a path the agent already holds otherwise (through coord, or another link)
/// is left as it is and not recorded, so ending this link never releases it. Answers
/// the lock keys held for the link and the paths another agent holds.
#[allow(clippy::too_many_arguments)] // one delivery step: who, what, why, how long
async fn acquire(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    owner: &str,
    paths: &[String],
    ours: &[String],
    reason: &str,
    ttl: i64,
    kind: Paths,
) -> CoordResult<Taken> {
    let who = agent(owner)?;
    let mut out = Taken {
        held: Vec::new(),
        contested: Vec::new(),
    };
    let mut targets: Vec<(String, LockTarget)> = Vec::new();
    for path in paths {
        let parsed = match kind {
            Paths::Labels => LockTarget::parse(path, None),
            Paths::Pushed => LockTarget::literal_file(path, None),
        };
        match parsed {
            Ok(t) if !targets.iter().any(|(_, o)| o.key() == t.key()) => targets.push((path.clone(), t)),
            Ok(_) => {}
            Err(e) => out.contested.push((path.clone(), format!("nobody ({})", e.message))),
        }
    }
    // The locks the agent holds already, not through this link: one read for all.
    let others: Vec<LockTarget> = targets
        .iter()
        .filter(|(_, t)| !ours.iter().any(|k| k == t.key()))
        .map(|(_, t)| t.clone())
        .collect();
    let mut held_already: Vec<String> = Vec::new();
    if !others.is_empty() {
        let keys: Vec<&str> = others.iter().map(LockTarget::key).collect();
        let ctx = step(
            now,
            who.clone(),
            super::locks::CheckLocks::NAME,
            d,
            json!({"file_paths": keys}),
        );
        held_already = c
            .store()
            .check_locks(ctx, Some(others))
            .await?
            .locks
            .into_iter()
            .filter(|l| l.locked_by == owner)
            .map(|l| l.file_path)
            .collect();
    }
    for (path, target) in targets {
        let key = target.key().to_string();
        if !ours.contains(&key) && held_already.contains(&key) {
            continue;
        }
        let ctx = step(
            now,
            who.clone(),
            super::locks::AcquireLock::NAME,
            d,
            json!({"file_path": key, "reason": reason}),
        );
        let r = c
            .store()
            .acquire_lock(ctx, target, Some(reason.to_string()), ttl)
            .await?;
        match r.action {
            LockAction::Acquired | LockAction::Refreshed => out.held.push(key),
            LockAction::Blocked => out
                .contested
                .push((path.clone(), r.locked_by.unwrap_or_else(|| "another agent".into()))),
        }
    }
    Ok(out)
}

async fn release(c: &Coordinator, now: Option<Timestamp>, d: &Delivery, locks: &[(String, String)]) {
    for (owner, path) in locks {
        let Ok(who) = agent(owner) else { continue };
        let ctx = step(now, who, super::locks::ReleaseLock::NAME, d, json!({"file_path": path}));
        // Gone already (expired, released by the agent): nothing to undo.
        if let Err(e) = c.store().release_lock(ctx, path.clone()).await {
            tracing::debug!(path, error = %e.message, "a GitHub lock was not held any more");
        }
    }
}

/// Queues a comment unless it is the one queued last for this link.
async fn notify(c: &Coordinator, now: Option<Timestamp>, link: &mut Link, number: i64, body: Option<String>) {
    let Some(body) = body else {
        link.notice = None;
        return;
    };
    if link.notice.as_deref() == Some(body.as_str()) || link.repository.is_empty() {
        return;
    }
    let request = sync::issue_comment(&link.repository, number, body.clone());
    match c.store().queue_github_request(now, request).await {
        Ok(()) => link.notice = Some(body),
        Err(e) => tracing::warn!(error = %e.message, "could not queue a comment for GitHub"),
    }
}

/// Reconciles an issue (or a pull request's labels) with what its link holds.
async fn reconcile_issue(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    action: &str,
    issue: &Issue,
    repo: &Repository,
    merged: bool,
) -> CoordResult<Outcome> {
    let _one = SYNC.lock().await;
    let key = sync::issue_key(issue.number);
    let mut link = c
        .store()
        .github_link(repo.id, key.clone())
        .await?
        .unwrap_or_else(|| Link::new(repo.id, key, repo.full_name.clone()));
    if sync::stale(&link, issue.updated_at) {
        return Ok((
            DeliveryStatus::Ignored,
            format!(
                "issue #{} changed since this event (it was delivered late): the newer state stands",
                issue.number
            ),
        ));
    }
    // Only a name GitHub could have: it goes into the API paths of comments.
    if let Some(name) = sync::repository_name(&repo.full_name) {
        link.repository = name;
    } else if sync::repository_name(&link.repository).is_none() {
        link.repository = String::new();
    }
    let closed = sync::issue_closed(action, issue);
    let completed = sync::closed_as_completed(action, issue, merged);
    // Paths this issue locked before resolve its short-hash labels when the body no
    // longer lists them.
    let wanted = sync::wanted(issue, closed, &link.locks);
    let plan = sync::reconcile(
        &link,
        wanted.agent.as_deref(),
        &wanted.locks,
        wanted.task.as_ref(),
        completed,
    );
    release(c, now, d, &plan.release).await;
    let place = format!("GitHub issue {}#{}", link.repository, issue.number);
    let taken = take_issue_locks(c, now, d, &plan, &link, &place).await?;
    let mut task_note = end_issue_task(c, now, d, &plan, closed, &place, &mut link).await?;
    task_note.push_str(&create_issue_task(c, now, d, &plan, issue, repo, &mut link).await?);
    let comment = sync::lock_comment(&taken.contested, &wanted.problems);
    let note = issue_note(issue, &taken, plan.agent.as_deref(), &task_note, &wanted.problems);
    link.agent_id = plan.agent.clone();
    link.locks = taken.held;
    link.updated_at = Some(issue.updated_at);
    notify(c, now, &mut link, issue.number, comment).await;
    c.store().save_github_link(now, link).await?;
    Ok((DeliveryStatus::Processed, note))
}

/// Takes (or renews) the locks `plan` wants for its agent (none without one), at `place`.
async fn take_issue_locks(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    plan: &sync::Reconcile,
    link: &Link,
    place: &str,
) -> CoordResult<Taken> {
    Ok(match &plan.agent {
        Some(owner) => {
            let ours = if link.agent_id.as_deref() == Some(owner.as_str()) {
                link.locks.clone()
            } else {
                Vec::new()
            };
            acquire(
                c,
                now,
                d,
                owner,
                &plan.acquire,
                &ours,
                place,
                sync::LABEL_LOCK_TTL_MINUTES,
                Paths::Labels,
            )
            .await?
        }
        None => Taken {
            held: Vec::new(),
            contested: Vec::new(),
        },
    })
}

/// Ends the task `plan` ends (the issue at `place` `closed`, or no longer assigning it to
/// the link's agent) and forgets it in the link; answers the note (`; task T completed`).
async fn end_issue_task(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    plan: &sync::Reconcile,
    closed: bool,
    place: &str,
    link: &mut Link,
) -> CoordResult<String> {
    let mut task_note = String::new();
    if let Some((task_id, end)) = &plan.end_task {
        let ending = TaskEnding {
            completed: *end == TaskEnd::Complete,
            note: if closed {
                format!("{place} was closed")
            } else {
                format!(
                    "{place} no longer assigns it to {}",
                    link.agent_id.as_deref().unwrap_or("an agent")
                )
            },
            reason: "github_issue".into(),
        };
        let ctx = step(now, webhook(), "end_task", d, json!({"task_id": task_id}));
        if let Some(status) = c.store().end_task(ctx, task_id.clone(), ending).await? {
            task_note = format!("; task {task_id} {status}");
        }
        link.task_id = None;
    }
    Ok(task_note)
}

/// Makes the task `plan` wants for its agent, and records it in the link; answers the
/// note (`; task T for AGENT`).
async fn create_issue_task(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    plan: &sync::Reconcile,
    issue: &Issue,
    repo: &Repository,
    link: &mut Link,
) -> CoordResult<String> {
    let (Some(t), Some(owner)) = (&plan.create_task, &plan.agent) else {
        return Ok(String::new());
    };
    // The same delivery acted on again (a restart mid-way) makes the same task id:
    // the task it made before is found, not made twice.
    let task_id = sync::task_id_for(&d.delivery_id, repo.id, &link.key);
    let ctx = step(
        now,
        webhook(),
        super::queue::GetTask::NAME,
        d,
        json!({"task_id": task_id}),
    );
    let exists = c.store().get_task(ctx, task_id.clone()).await.is_ok();
    let task = NewTask {
        task_id,
        task_type: sync::ISSUE_TASK_TYPE.into(),
        task_description: t.title.clone(),
        input_data: Some(json!({
            "repository": link.repository,
            "issue": issue.number,
            "url": issue.html_url,
            "body": issue.body,
        })),
        priority: t.priority,
        depends_on: Vec::new(),
        max_attempts: c.config().max_attempts,
        assigned_to: Some(owner.clone()),
    };
    let ctx = step(
        now,
        webhook(),
        super::queue::SubmitWork::NAME,
        d,
        json!({"task_type": task.task_type, "assigned_to": owner, "issue": issue.number}),
    );
    let id = if exists {
        task.task_id
    } else {
        c.store().submit_work(ctx, task).await?.task_id
    };
    let note = format!("; task {id} for {owner}");
    link.task_id = Some(id);
    Ok(note)
}

/// The delivery's note for an issue reconciled: its locks, for whom, its task's note and
/// what its labels could not ask for.
fn issue_note(issue: &Issue, taken: &Taken, agent: Option<&str>, task_note: &str, problems: &[String]) -> String {
    format!(
        "issue #{}: {} lock{} for {}{}{}{}",
        issue.number,
        taken.held.len(),
        if taken.held.len() == 1 { "" } else { "s" },
        agent.unwrap_or("nobody"),
        if taken.contested.is_empty() {
            String::new()
        } else {
            format!(", {} held by others", taken.contested.len())
        },
        task_note,
        if problems.is_empty() {
            String::new()
        } else {
            format!("; {}", problems.join("; "))
        }
    )
}

/// `issues` and `issue_comment`: reconcile the issue.
pub(crate) async fn issues(c: &Coordinator, now: Option<Timestamp>, d: &Delivery) -> Outcome {
    let e: IssuesEvent = match serde_json::from_value(d.payload.clone()) {
        Ok(e) => e,
        Err(e) => return failed(format!("not an {} payload: {e}", d.event)),
    };
    // A comment's action (created, edited, deleted) is the comment's, not the issue's:
    // only the issue's state says whether it is closed.
    let action = if d.event == "issue_comment" {
        "commented"
    } else {
        e.action.as_str()
    };
    // A pull request read back through the issues API says whether it was merged.
    let merged = e.issue.pull_request.as_ref().is_some_and(|p| p.merged_at.is_some());
    reconcile_issue(c, now, d, action, &e.issue, &e.repository, merged)
        .await
        .unwrap_or_else(stopped)
}

/// `pull_request`: its labels like an issue's; merged, its head branch's locks end.
pub(crate) async fn pull_request(c: &Coordinator, now: Option<Timestamp>, d: &Delivery) -> Outcome {
    let e: PullRequestEvent = match serde_json::from_value(d.payload.clone()) {
        Ok(e) => e,
        Err(e) => return failed(format!("not a pull_request payload: {e}")),
    };
    let (issue, pr) = match (
        serde_json::from_value::<Issue>(e.pull_request.clone()),
        serde_json::from_value::<PullRequest>(e.pull_request.clone()),
    ) {
        (Ok(i), Ok(p)) => (i, p),
        (Err(x), _) | (_, Err(x)) => return failed(format!("not a pull_request payload: {x}")),
    };
    let labels = reconcile_issue(c, now, d, &e.action, &issue, &e.repository, pr.merged).await;
    let mut out = labels.unwrap_or_else(stopped);
    // A pull request from a fork may have a head branch of the same name: only this
    // repository's branches hold locks here.
    let same_repo = pr.head.repo.as_ref().is_none_or(|r| r.id == e.repository.id);
    if e.action == "closed" && pr.merged && same_repo {
        match end_branch(c, now, d, &e.repository, &pr.head.git_ref).await {
            Ok(Some(n)) => out
                .1
                .push_str(&format!("; merged: {n} lock(s) of {} released", pr.head.git_ref)),
            Ok(None) => {}
            Err(err) => out = stopped(err),
        }
    }
    out
}

/// `delete` of a branch: its locks end.
pub(crate) async fn delete(c: &Coordinator, now: Option<Timestamp>, d: &Delivery) -> Outcome {
    let e: DeleteEvent = match serde_json::from_value(d.payload.clone()) {
        Ok(e) => e,
        Err(e) => return failed(format!("not a delete payload: {e}")),
    };
    if e.ref_type != "branch" {
        return (DeliveryStatus::Ignored, format!("{} {} deleted", e.ref_type, e.git_ref));
    }
    match end_branch(c, now, d, &e.repository, &e.git_ref).await {
        Ok(Some(n)) => (
            DeliveryStatus::Processed,
            format!("branch {} deleted: {n} lock(s) released", e.git_ref),
        ),
        Ok(None) => (DeliveryStatus::Ignored, format!("branch {} holds no locks", e.git_ref)),
        Err(err) => stopped(err),
    }
}

/// Releases a branch's locks; None when it held none.
async fn end_branch(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    repo: &Repository,
    git_ref: &str,
) -> CoordResult<Option<usize>> {
    let _one = SYNC.lock().await;
    let Some(mut link) = c.store().github_link(repo.id, sync::branch_key(git_ref)).await? else {
        return Ok(None);
    };
    let Some(owner) = link.agent_id.clone() else {
        return Ok(None);
    };
    if link.locks.is_empty() {
        return Ok(None);
    }
    let locks: Vec<(String, String)> = link.locks.iter().map(|p| (owner.clone(), p.clone())).collect();
    release(c, now, d, &locks).await;
    let n = link.locks.len();
    link.locks.clear();
    c.store().save_github_link(now, link).await?;
    Ok(Some(n))
}

/// A push to `agent/<id>/<task>`: the files it changed are locked to that agent until
/// the branch is merged or deleted (a deleted branch's push releases them). A file
/// another agent holds stays theirs: the branch head gets a failing `coord/locks`
/// commit status saying so. Answers a note, or None for other branches.
pub(crate) async fn push_locks(
    c: &Coordinator,
    now: Option<Timestamp>,
    d: &Delivery,
    push: &Push,
) -> CoordResult<Option<String>> {
    let (Some((owner, _task)), Some(repo)) = (sync::branch_agent(&push.git_ref), push.repository.as_ref()) else {
        return Ok(None);
    };
    if push.deleted {
        let n = end_branch(c, now, d, repo, &push.git_ref).await?.unwrap_or(0);
        return Ok(Some(format!("{n} lock(s) of the deleted branch released")));
    }
    let _one = SYNC.lock().await;
    let key = sync::branch_key(&push.git_ref);
    let mut link = c
        .store()
        .github_link(repo.id, key.clone())
        .await?
        .unwrap_or_else(|| Link::new(repo.id, key, repo.full_name.clone()));
    let mut paths: Vec<String> = Vec::new();
    for f in push
        .commits
        .iter()
        .flat_map(|c| c.added.iter().chain(&c.modified).chain(&c.removed))
    {
        if let Ok(p) = coord_domain::path::normalize_path(f, None)
            && !paths.contains(&p)
            && paths.len() < sync::MAX_LINK_LOCKS
        {
            paths.push(p);
        }
    }
    // Another agent's link for this branch name (it cannot be: the name holds the id),
    // or locks it held before: kept, renewed with the new ones.
    if link.agent_id.as_deref() == Some(owner.as_str()) {
        for p in &link.locks {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
    }
    let branch = push.git_ref.strip_prefix("refs/heads/").unwrap_or(&push.git_ref);
    let reason = format!("GitHub branch {branch} of {}", repo.full_name);
    let ours = if link.agent_id.as_deref() == Some(owner.as_str()) {
        link.locks.clone()
    } else {
        Vec::new()
    };
    let taken = acquire(
        c,
        now,
        d,
        &owner,
        &paths,
        &ours,
        &reason,
        sync::BRANCH_LOCK_TTL_MINUTES,
        Paths::Pushed,
    )
    .await?;
    let sha_ok = push.after.len() == 40 && push.after.bytes().all(|b| b.is_ascii_hexdigit());
    if let (false, true, Some(repository)) = (
        taken.contested.is_empty(),
        sha_ok,
        sync::repository_name(&repo.full_name),
    ) {
        let description: String = taken
            .contested
            .iter()
            .map(|(p, who)| format!("{p} is locked by {who}"))
            .collect::<Vec<_>>()
            .join("; ");
        let request = sync::commit_status(
            &repository,
            &push.after,
            "failure",
            "coord/locks",
            &format!("coord's lock wins: {description}"),
        );
        if let Err(e) = c.store().queue_github_request(now, request).await {
            tracing::warn!(error = %e.message, "could not queue a commit status for GitHub");
        }
    }
    let note = format!(
        "{} lock(s) for {owner} on {branch}{}",
        taken.held.len(),
        if taken.contested.is_empty() {
            String::new()
        } else {
            format!(", {} held by others", taken.contested.len())
        }
    );
    link.agent_id = Some(owner);
    link.locks = taken.held;
    link.updated_at = now.or_else(|| Some(chrono::Utc::now()));
    c.store().save_github_link(now, link).await?;
    Ok(Some(note))
}
