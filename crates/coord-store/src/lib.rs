//! The store traits: every persistent operation the service needs, one trait per
//! capability ([`LockStore`], [`QueueStore`], …), and [`Store`], all of them.
//!
//! Each method receives the validated arguments and an [`OpCtx`] carrying the caller,
//! the clock reading and the audit draft. A store runs the operation and appends the
//! audit row in the same transaction, so an operation and its audit row are committed
//! together or not at all. A refusal (an `Err` that is not a storage failure) leaves no
//! change behind except its audit row.
//!
//! Stores own all SQL. They take time from `OpCtx::now` when a clock is injected (tests)
//! and from the database's own clock otherwise, so hosts sharing one database agree on
//! lease expiry. The SQL both stores run alike (the stats queries) is built once in
//! [`sql`]; no SQL text lives outside this crate, `coord-sqlite` and `coord-postgres`.
//! [`bench`] holds the types the stores' raw baselines share with `coord bench`.
//!
//! `OpCtx` also carries the resource `Charge`s a profile's limits count (only for what
//! succeeded, `counts_as_use`, in the operation's transaction), the `Escalation` that lets
//! an approvable refusal become a pending approval request in the refusal's own
//! transaction, and the key `origin` recorded in the audit row. `PolicyFacts` is what the
//! pipeline's profile stage reads first, unaudited. `FileStore::fenced_write` runs the
//! service's rename (`WriteStep`) inside the transaction that decided the write over the
//! live locks and the fencing token.
//!
//! Rules every store keeps:
//!
//! - Expired is free by predicate: a lock is live while `now < expires_at`; expired rows
//!   are ignored by every query and deleted later in bounded batches (`sweep`). A claim is
//!   a lease (`claimed_until`), settled — requeued, or failed after `max_attempts` — by
//!   `get_work` and by the sweep.
//! - Fencing tokens only grow: every acquisition (not a refresh) draws from a counter that
//!   survives row deletion (the `counters` row in SQLite, `fencing_token_seq` in
//!   PostgreSQL).
//! - The audit log is append-only (triggers; in PostgreSQL also grants) and one hash chain
//!   (`coord_domain::audit_chain`). Appends are serialised, so concurrent writers keep the
//!   chain linear; `verify_audit` reads it from one snapshot; the only deletion is
//!   `prune_audit`, after an HMAC-signed checkpoint covering the rows it removes.
//! - An approval is spent by a conditional update in the granted operation's transaction,
//!   so concurrent retries pass once.
//! - Storage failures become `database_unavailable` (with a reason) or an opaque
//!   `internal_error`; SQL text stays in the log.
//!
//! How the two stores differ, and why:
//!
//! | concern | SQLite | PostgreSQL |
//! | --- | --- | --- |
//! | atomicity | `BEGIN IMMEDIATE`: one writer at a time, so read, decide with the domain rule, write is safe | no global writer lock: an acquisition takes transaction advisory locks (shared on every ancestor of its scope, exclusive on its scope: `LockTarget::serial_keys`), so acquisitions that could overlap run one after the other; claiming uses `FOR UPDATE SKIP LOCKED`; completion locks the task row, submission its dependencies `FOR SHARE` |
//! | ordering | byte order | text ordered `COLLATE "C"` (byte order) whatever the database's collation |
//! | time | the local clock | `statement_timestamp()`, the server's, read per statement |
//! | refusals | rollback to a savepoint, audit row in the same transaction | transaction rolled back, audit row appended alone |
//! | writes | a lone write on its caller's thread; under load one writer thread with group commit; WAL checkpoints on a thread of their own | one transaction per operation on a pooled connection |
//! | contention | busy timeout (`COORD_SQLITE_BUSY_TIMEOUT_MS`, default 10 s) → `database_unavailable` | deadlocks and serialization failures retried (3 attempts) |
//! | outages | file unusable → `database_unavailable` | lost connections → `database_unavailable`; the pool replaces them on next use |
//! | migrations | `PRAGMA user_version`, re-read under the write lock | `coord_schema_migrations`, under `pg_advisory_xact_lock` |
//!
//! Tables, the same in both stores: `file_locks` (keyed by the lock's canonical spelling,
//! with its `scope`, the leading literal components, indexed, so an overlap check reads
//! only the rows above or below its own), `work_queue` and `task_dependencies` (a task's
//! `pending_deps` counts its unfinished dependencies, so claiming is one partial-index
//! lookup), `agent_sessions` (one row per agent), `handoff_documents`, `messages` and
//! `message_recipients`, `audit_log` and `audit_checkpoints`, `guardrail_violations`,
//! `operation_guardrails`, `notifications` (the security channel's outbox), `api_keys`
//! (SHA-256 of the secret, never the secret), `agent_profiles` and
//! `agent_profile_assignments`, `approval_queue`, `resource_usage` (one row per counted file
//! or call), `spawned_agents`, `workflows` and `workflow_tasks`, memory (`memories`,
//! `memory_feedback`, `memory_terms`, `working_memory`), egress (`network_policies`,
//! `network_access_log`), verification (`verification_policies`, `changesets`,
//! `verification_results`) and GitHub (`github_deliveries`, `github_links`,
//! `github_outbox`).

pub mod bench;
pub mod sql;

use async_trait::async_trait;
use coord_domain::approvals::{ApprovalFilter, ApprovalResult, ListApprovalsResult, NewDecision};
use coord_domain::audit::{AuditEvents, AuditFilter, AuditQueryResult, AuditRecord};
use coord_domain::audit_chain::{PruneAudit, PruneAuditResult, VerifyAudit, VerifyAuditResult};
use coord_domain::files::{Fence, ReadFileResult, WriteFileResult};
use coord_domain::guardrail_rules::{GuardrailRule, NewRule};
use coord_domain::guardrails::CheckGuardrailsResult;
use coord_domain::handoffs::{HandoffQuery, NewHandoff, ReadHandoffResult, WriteHandoffResult};
use coord_domain::keys::{ApiKeyInfo, KeyMatch, KeyOrigin, ListApiKeysResult, NewApiKey, RevokeApiKeyResult};
use coord_domain::locks::{AcquireLockResult, CheckEditResult, CheckLocksResult, ReleaseAllResult, ReleaseLockResult};
use coord_domain::memory::rank::RankParams;
use coord_domain::memory::skills::{GetSkillsResult, RecordSkillUseResult, SkillQuery, SkillUse};
use coord_domain::memory::working::{WorkingMemoryResult, WorkingUpdate};
use coord_domain::memory::{ForgetResult, MemoryFeedbackResult, NewMemory, RecallQuery, RecallResult, RememberResult};
use coord_domain::messages::{InboxQuery, InboxResult, MessageResult, NewMessage, SendMessageResult};
use coord_domain::network::{AccessLogFilter, CheckNetworkAccessResult, NetworkAccessRow, NetworkPolicy, PolicyRow};
use coord_domain::notifications::{ListNotificationsResult, Notification, NotificationFilter};
use coord_domain::profiles::{
    ApplyProfilesResult, AssignProfileResult, Assignee, ListProfilesResult, Profile, Resource,
};
use coord_domain::queue::{
    ClaimSpec, CompleteWorkResult, Completion, GetTaskResult, GetWorkResult, ListTasksResult, NewTask,
    SubmitWorkResult, TaskEnding, TaskFilter, TaskStatus,
};
use coord_domain::sessions::{
    AgentStatus, Cleanup, CleanupResult, DiscoverAgentsResult, EndSession, EndSessionResult, NewSession, SessionResult,
};
use coord_domain::status::StatusResult;
use coord_domain::target::LockTarget;
use coord_domain::verification::{
    self, ClaimFilter, ClaimedRun, ExternalFinish, NewChangeset, PlannedRun, REVIEW_OPERATION, RunReport,
    VerificationPolicy, VerificationPolicyRow, VerificationResult,
};
use coord_domain::{CoordError, CoordResult, Identity, Timestamp};
use coord_github::sync::{GithubRequest, Link, OutboxRow, QueuedRequest};
use coord_github::webhook::{Delivery, GithubDeliveryResult};
use serde::Serialize;
use serde_json::Value;
use std::time::Instant;

/// Everything a store needs besides the operation's own arguments.
#[derive(Debug, Clone)]
pub struct OpCtx {
    /// The injected clock's reading; `None` means "use the database's clock".
    pub now: Option<Timestamp>,
    pub who: Identity,
    pub operation: &'static str,
    pub parameters: Value,
    pub started: Instant,
    /// Fields whose values the audit row must not keep (the operation's `AUDIT_REDACT`).
    pub redact: &'static [&'static str],
    /// Resource uses to count against the caller's limits in the operation's own
    /// transaction, when it succeeds (see [`Charge`]).
    pub charges: Vec<Charge>,
    /// Set for callers with a profile: an approvable refusal of this request becomes an
    /// approval request, and an approval of this exact request lifts it once.
    pub escalation: Option<Escalation>,
    /// The managed key the request came with (recorded in the audit row).
    pub origin: Option<KeyOrigin>,
    /// Whether the caller's profile has the `lock_before_write` guardrail: writing a
    /// file through coord needs the caller's lock on it.
    pub lock_before_write: bool,
    /// The event names the audit row carries (the operation's `AUDIT_EVENTS`).
    pub events: Option<AuditEvents>,
    /// Whether the caller may read every agent's audit rows: an operator key, or a
    /// profile granted `manage_audit` (trust 4). Others see their own.
    pub audit_admin: bool,
    /// How the caller proved who it is (rules that depend on it: who may disconnect a
    /// live session, whose port blocks a caller may release).
    pub credential: coord_domain::access::Credential,
    /// What of the caller's profile egress decisions need (set for callers with a
    /// profile; `None` means least privilege: nothing is allowed).
    pub egress: Option<coord_domain::network::EgressProfile>,
    /// The policy facts the pipeline decided with when it took them from the caller's
    /// previous call (see [`PolicyCheck`]); `None` when it read them for this call.
    pub policy: Option<PolicyCheck>,
}

/// Facts the pipeline decided with without reading them for this call (a store that
/// [`Maintenance::verifies_policy`] is asked so only): the store reads them again in
/// the operation's first round trip and, when they differ, answers `policy_changed`
/// with nothing committed and nothing audited; the pipeline then decides again on the
/// facts of the moment. A decision is thus never committed on facts older than its
/// own transaction, and costs no round trip of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyCheck {
    pub agent_id: String,
    pub agent_type: String,
    pub facts: PolicyFacts,
    /// The fingerprint of the guardrail rows the operation decided with, when it took
    /// them from an earlier read ([`GuardrailRows::digest`]): confirmed with the facts.
    pub rules: Option<String>,
}

impl PolicyCheck {
    /// Whether `read` (this transaction's) are the facts decided with: the database's
    /// time aside, which moves on.
    pub fn holds(&self, read: &PolicyFacts) -> bool {
        PolicyFacts {
            now: self.facts.now,
            ..read.clone()
        } == self.facts
    }

    /// The refusal that makes the pipeline decide again.
    pub fn changed() -> CoordError {
        CoordError::new(
            coord_domain::ErrorCode::PolicyChanged,
            "the caller's profile or session changed during the call; decided again",
        )
    }
}

impl OpCtx {
    /// The context of what coord does itself, not at a caller's request (a supervisor's
    /// report, a workflow moving on): audited under `who`, no profile charged.
    pub fn internal(now: Option<Timestamp>, who: Identity, operation: &'static str, parameters: Value) -> Self {
        OpCtx {
            now,
            who,
            operation,
            parameters,
            started: Instant::now(),
            redact: &[],
            charges: Vec::new(),
            escalation: None,
            origin: None,
            lock_before_write: false,
            events: None,
            audit_admin: true,
            credential: coord_domain::access::Credential::Local,
            egress: None,
            policy: None,
        }
    }
}

/// How a request may be escalated to a person (see `coord_domain::approvals`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// `coord_domain::approvals::params_hash` of the request's parameters.
    pub params_hash: String,
    /// Whether resource-limit refusals are approvable (the profile's `escalation`).
    pub limits: bool,
}

impl OpCtx {
    /// Whether a charge over its limit may pass by spending an approval (the profile
    /// allows escalation).
    pub fn limits_escalate(&self) -> bool {
        self.escalation.as_ref().is_some_and(|e| e.limits)
    }

    /// The approval request the refusal `e` of this call becomes, if any: when the
    /// caller may escalate and `e` is approvable. Stores' operation wrappers enqueue it
    /// (or find the pending one for the same request) in the refusal's own transaction
    /// and answer `coord_domain::approvals::awaiting(e, id)`.
    pub fn approval_request(&self, e: &CoordError) -> Option<ApprovalRequest> {
        let esc = self.escalation.as_ref()?;
        if !coord_domain::approvals::approvable(e, esc.limits) {
            return None;
        }
        // Whole (not summarised like a large audit row): the person deciding sees exactly
        // what the grant is for; redacted like the audit trail.
        let mut parameters = coord_domain::validate::without_nul(self.parameters.clone());
        coord_domain::audit::redact(&mut parameters, self.redact);
        Some(ApprovalRequest {
            agent: self.who.clone(),
            operation: self.operation,
            params_hash: esc.params_hash.clone(),
            parameters,
            error: e.code.as_str(),
            reason: e.message.clone(),
            pending_minutes: coord_domain::approvals::PENDING_MINUTES,
        })
    }
}

/// A new approval request, ready for a store.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub agent: Identity,
    pub operation: &'static str,
    pub params_hash: String,
    pub parameters: Value,
    pub error: &'static str,
    pub reason: String,
    pub pending_minutes: i64,
}

/// A use of a limited resource an operation makes: `items` (distinct files, or one id
/// per call) are added to the session's usage of `resource` in the operation's own
/// transaction, only when the operation succeeds (an answer with `success:false` is not
/// a use); if the usage would then exceed `limit`, the operation is refused with
/// `resource_limit_exceeded` and nothing it did is kept. Stores serialise charges per
/// (scope, resource), so concurrent calls cannot both take the last unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub resource: Resource,
    /// Whose usage: `coord_domain::profiles::usage_scope` of the agent's session.
    pub scope: String,
    pub items: Vec<String>,
    pub limit: u64,
}

impl Charge {
    /// Whether a call that took the usage from `before` to `after` goes over the limit:
    /// only a call that adds something can (refreshing a counted file never is, even
    /// after an approval took the usage past the limit, or the limit was lowered).
    pub fn over(&self, before: u64, after: u64) -> bool {
        after > before && after > self.limit
    }

    /// The refusal when the usage would exceed the limit.
    pub fn exceeded(&self, used: u64) -> CoordError {
        coord_domain::profiles::limit_exceeded(
            self.resource,
            format!(
                "this session has used {used} of {} allowed by its profile ({}); finish, hand off and end the session, or ask an operator for another profile",
                self.limit,
                self.resource.as_str()
            ),
        )
        .with_detail("max", self.limit)
        .with_detail("used", used)
    }
}

/// Whether an operation's answer `v` uses the resources `charges` name: some are asked
/// for, and the answer is not a refusal (`success:false`, like a blocked lock).
pub fn counts_as_use<T: Serialize>(charges: &[Charge], v: &T) -> bool {
    !charges.is_empty()
        && serde_json::to_value(v)
            .ok()
            .and_then(|v| v.get("success").and_then(Value::as_bool))
            != Some(false)
}

/// Whose counted usage [`ProfileStore::policy_facts`] reads along.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageOf {
    Nothing,
    /// The agent's current session (or the agent, without one).
    CurrentSession,
    /// A managed key's (usage by a key is counted per key).
    Key(String),
}

impl UsageOf {
    /// The usage scope to read for `agent_id` whose current session is `session_id`.
    pub fn scope(&self, agent_id: &str, session_id: Option<&str>) -> Option<String> {
        match self {
            UsageOf::Nothing => None,
            UsageOf::CurrentSession => Some(coord_domain::profiles::usage_scope(agent_id, session_id)),
            UsageOf::Key(key_id) => Some(coord_domain::profiles::key_scope(key_id)),
        }
    }
}

/// What the pipeline needs to decide an operation for an agent: the profiles assigned to
/// its id and to its type, its current session and the database's time.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyFacts {
    /// The agent type the type default was looked up for (the caller's, or its session's).
    pub agent_type: Option<String>,
    pub by_agent: Option<Profile>,
    pub by_type: Option<Profile>,
    /// The agent's current session: id and start.
    pub session: Option<(String, Timestamp)>,
    pub now: Timestamp,
    /// Counted usage of the session, when asked for.
    pub usage: Vec<(Resource, u64)>,
    /// The agent's violation counter (guardrail blocks), when usage is asked for.
    pub guardrail_violations: i64,
    /// A store's fingerprint of the facts above as stored (PostgreSQL's), with which it
    /// confirms them inside a transaction without reading them back: an operation decided
    /// on them then needs no round trip to learn they still hold.
    pub digest: Option<String>,
}

impl OpCtx {
    /// The audit row for this operation's outcome, timed up to this call.
    pub fn audit<T: Serialize>(&self, outcome: Result<&T, &CoordError>) -> AuditRecord {
        AuditRecord::of_redacted(
            self.who.clone(),
            self.operation,
            self.parameters.clone(),
            outcome,
            self.started.elapsed().as_secs_f64() * 1000.0,
            self.redact,
        )
        .with_origin(self.origin.clone())
        .with_events(self.events)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchemaInfo {
    pub version: i64,
    pub applied_now: Vec<i64>,
}

/// What a maintenance sweep removed or moved.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SweepReport {
    pub expired_locks_deleted: i64,
    pub claims_requeued: i64,
    pub claims_failed: i64,
    /// GitHub deliveries and outbox requests past their keeping time
    /// (`github_sync::DELIVERIES_KEEP_DAYS`, `OUTBOX_KEEP_DAYS`).
    pub github_rows_pruned: i64,
}

/// The file-system step of a write, run inside the write's transaction once the lock
/// decision and the resource charges said yes: the rename of a prepared temporary file
/// over the name.
pub trait WriteStep: Send + Sync {
    /// Puts the write in place the first time; every later call (a store retrying its
    /// transaction) answers the first call's outcome.
    fn commit(&self) -> CoordResult<WriteFileResult>;
    /// Whether the write is in place already: a retried transaction records it instead
    /// of deciding it again (the decision was made, and the file changed).
    fn committed(&self) -> bool;
}

/// The audit and accounting side of the confined file tools (the file system work is
/// the service's, `coord-files`).
#[async_trait]
pub trait FileStore: Send + Sync {
    /// A read that the service did (or refused): counted against the caller's
    /// `max_file_reads` and audited, in one transaction — over the limit, the content is
    /// not answered.
    async fn record_file_read(&self, ctx: OpCtx, outcome: CoordResult<ReadFileResult>) -> CoordResult<ReadFileResult>;

    /// A fenced write, in one transaction: ordered after every concurrent acquisition of
    /// a lock overlapping the file, decided by `coord_domain::files::decide_write` over
    /// the live locks, counted against the caller's limits, then `step` (the rename),
    /// then audited and committed. Nobody can take the file's lock between the decision
    /// and the rename, and a refused write never reaches the file.
    async fn fenced_write(
        &self,
        ctx: OpCtx,
        fence: Fence,
        step: std::sync::Arc<dyn WriteStep>,
    ) -> CoordResult<WriteFileResult>;
}

/// File locks.
#[async_trait]
pub trait LockStore: Send + Sync {
    /// Takes, refreshes or is blocked from a lock on a file, directory or glob, decided by
    /// `coord_domain::locks::decide_acquire` over the live locks that overlap it, with no
    /// other acquisition of an overlapping target in between.
    async fn acquire_lock(
        &self,
        ctx: OpCtx,
        target: LockTarget,
        reason: Option<String>,
        ttl_minutes: i64,
    ) -> CoordResult<AcquireLockResult>;
    /// Releases the caller's lock stored under exactly this key.
    async fn release_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<ReleaseLockResult>;
    /// Releases every lock the caller holds (expired rows of theirs are removed too).
    async fn release_all_locks(&self, ctx: OpCtx) -> CoordResult<ReleaseAllResult>;
    /// Live locks that overlap any of the targets, or all live locks.
    async fn check_locks(&self, ctx: OpCtx, targets: Option<Vec<LockTarget>>) -> CoordResult<CheckLocksResult>;
    /// Releases a live lock whoever holds it (`coord_domain::overrides::decide_break`).
    async fn break_lock(&self, ctx: OpCtx, file_path: String) -> CoordResult<coord_domain::overrides::BreakLockResult>;
    /// Whether the caller may change these files: refused (`file_locked`, by
    /// `coord_domain::locks::decide_edit`) when another agent holds a live lock that
    /// overlaps one (the file itself, a directory above it, a glob matching it).
    async fn check_edit(&self, ctx: OpCtx, files: Vec<LockTarget>) -> CoordResult<CheckEditResult>;
}

/// The work queue.
#[async_trait]
pub trait QueueStore: Send + Sync {
    async fn submit_work(&self, ctx: OpCtx, task: NewTask) -> CoordResult<SubmitWorkResult>;
    async fn claim_work(&self, ctx: OpCtx, spec: ClaimSpec) -> CoordResult<GetWorkResult>;
    async fn complete_work(&self, ctx: OpCtx, completion: Completion) -> CoordResult<CompleteWorkResult>;
    async fn get_task(&self, ctx: OpCtx, task_id: String) -> CoordResult<GetTaskResult>;
    async fn list_tasks(&self, ctx: OpCtx, filter: TaskFilter) -> CoordResult<ListTasksResult>;
    /// Ends a pending or claimed task from outside: completed (its dependents move on)
    /// or cancelled (its dependents are cancelled). None when it had already ended.
    async fn end_task(&self, ctx: OpCtx, task_id: String, ending: TaskEnding) -> CoordResult<Option<TaskStatus>>;
    /// A person cancels a task that has not ended (`coord_domain::overrides::decide_cancel`);
    /// its dependents are cancelled as for any cancellation.
    async fn cancel_task(
        &self,
        ctx: OpCtx,
        cancel: coord_domain::overrides::Cancellation,
    ) -> CoordResult<coord_domain::overrides::TaskOverrideResult>;
    /// A person puts a claimed task back in the queue (`decide_requeue`): pending, its
    /// claim dropped, the attempt it used still counted.
    async fn requeue_task(
        &self,
        ctx: OpCtx,
        task_id: String,
    ) -> CoordResult<coord_domain::overrides::TaskOverrideResult>;
}

/// Agent sessions.
#[async_trait]
pub trait SessionStore: Send + Sync {
    async fn register_session(&self, ctx: OpCtx, session: NewSession) -> CoordResult<SessionResult>;
    /// Marks the caller alive and extends its claims' leases by `lease_minutes`; starts a
    /// session with `new_session_id` when the caller has none.
    async fn heartbeat(&self, ctx: OpCtx, new_session_id: String, lease_minutes: i64) -> CoordResult<SessionResult>;
    async fn discover_agents(
        &self,
        ctx: OpCtx,
        capability: Option<String>,
        status: Option<AgentStatus>,
    ) -> CoordResult<DiscoverAgentsResult>;
    /// Disconnects agents silent for `cleanup.stale_minutes` and the listed sessions (when
    /// still their agent's current session), releasing their locks and settling their claims.
    async fn cleanup_dead_agents(&self, ctx: OpCtx, cleanup: Cleanup) -> CoordResult<CleanupResult>;
    /// Sets the caller's session status (`idle` when its connection closes); a caller
    /// without a live (not disconnected) session gets `not_found`.
    async fn set_session_status(&self, ctx: OpCtx, status: AgentStatus) -> CoordResult<SessionResult>;
    /// Ends the caller's session in one transaction: releases its locks (if asked),
    /// writes the final handoff completed by `coord_domain::sessions::complete_final_handoff`,
    /// and marks the session idle (a caller without a live session is not an error).
    async fn end_session(&self, ctx: OpCtx, end: EndSession) -> CoordResult<EndSessionResult>;
}

/// Handoff documents.
#[async_trait]
pub trait HandoffStore: Send + Sync {
    async fn write_handoff(&self, ctx: OpCtx, handoff: NewHandoff) -> CoordResult<WriteHandoffResult>;
    async fn read_handoff(&self, ctx: OpCtx, query: HandoffQuery) -> CoordResult<ReadHandoffResult>;
}

/// Agent memory (see `coord_domain::memory`).
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Stores an episodic memory, or merges it into the caller's memory with the same
    /// `coord_domain::memory::merge_key` last seen within the merge window. Serialised
    /// per key, so concurrent duplicates merge too.
    async fn remember(&self, ctx: OpCtx, memory: NewMemory) -> CoordResult<RememberResult>;
    /// Finds candidates (full-text hits, tag hits, or the newest when nothing is asked)
    /// and ranks them with `coord_domain::memory::answer`.
    async fn recall(&self, ctx: OpCtx, query: RecallQuery, params: RankParams) -> CoordResult<RecallResult>;
    /// The caller's vote on a memory (one per agent and memory; the latest counts).
    async fn memory_feedback(&self, ctx: OpCtx, memory_id: String, useful: bool) -> CoordResult<MemoryFeedbackResult>;
    /// Deletes a memory: its author's, or anyone's when `admin`.
    async fn forget_memory(&self, ctx: OpCtx, memory_id: String, admin: bool) -> CoordResult<ForgetResult>;
    /// Removes (up to the batch) the memories past the retention, oldest first, with
    /// their tags, votes and term counts — `coord_domain::memory::retention::expired`.
    async fn prune_memories(
        &self,
        ctx: OpCtx,
        prune: coord_domain::memory::retention::PruneMemories,
    ) -> CoordResult<coord_domain::memory::retention::PruneMemoriesResult>;
    /// Counts one use of a skill (created on first use).
    async fn record_skill_use(&self, ctx: OpCtx, skill: SkillUse) -> CoordResult<RecordSkillUseResult>;
    async fn get_skills(&self, ctx: OpCtx, query: SkillQuery) -> CoordResult<GetSkillsResult>;
    /// Writes entries into the caller's session's working memory and compacts it to the
    /// budget (`coord_domain::memory::working`); `not_found` without a live session.
    async fn update_working_memory(&self, ctx: OpCtx, update: WorkingUpdate) -> CoordResult<WorkingMemoryResult>;
    async fn get_working_memory(&self, ctx: OpCtx, budget: i64, originals: bool) -> CoordResult<WorkingMemoryResult>;
}

/// Messages between agents.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Delivers a message to its recipients (the holders are looked up in the same
    /// transaction); refused with `no_recipients` when it would reach nobody.
    async fn send_message(&self, ctx: OpCtx, message: NewMessage) -> CoordResult<SendMessageResult>;
    async fn inbox(&self, ctx: OpCtx, query: InboxQuery) -> CoordResult<InboxResult>;
    /// Marks a message of the caller's inbox read, and acknowledged when `ack` (earlier
    /// marks are kept); `not_found` for any other message.
    async fn mark_message(&self, ctx: OpCtx, message_id: String, ack: bool) -> CoordResult<MessageResult>;
}

/// The audit trail and the status summary.
#[async_trait]
pub trait AuditStore: Send + Sync {
    async fn query_audit(&self, ctx: OpCtx, filter: AuditFilter) -> CoordResult<AuditQueryResult>;
    async fn status(&self, ctx: OpCtx) -> CoordResult<StatusResult>;
    /// Appends an audit row on its own, for operations refused before reaching a store.
    async fn append_audit(&self, now: Option<Timestamp>, record: AuditRecord) -> CoordResult<()>;
    /// Checks the hash chain from a consistent snapshot (the rows in order of position,
    /// the checkpoints, the rows outside the chain), then audits the check.
    async fn verify_audit(&self, ctx: OpCtx, check: VerifyAudit) -> CoordResult<VerifyAuditResult>;
    /// Removes the chain's prefix older than the retention and leaves a signed
    /// checkpoint in its place, in one transaction.
    async fn prune_audit(&self, ctx: OpCtx, prune: PruneAudit) -> CoordResult<PruneAuditResult>;
}

/// The security channel's outbox (see `coord_domain::notifications`). Notifications are
/// written by the operations that cause them (`guard_decision`), in their transaction.
#[async_trait]
pub trait NotificationStore: Send + Sync {
    async fn list_notifications(&self, ctx: OpCtx, filter: NotificationFilter) -> CoordResult<ListNotificationsResult>;
    /// Takes up to `limit` notifications due for delivery — undelivered, past their
    /// retry time, not taken by another dispatcher in the last `CLAIM_SECONDS` — and
    /// marks them taken (one more attempt). Not audited: delivery is not an operation.
    async fn take_due_notifications(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<Notification>>;
    /// Records an attempt: delivered, or failed with why (retried `retry_in_seconds` later).
    async fn record_delivery(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()>;
}

/// The rows of the guardrails' registry as read together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuardrailRows {
    pub rows: Vec<GuardrailRule>,
    /// A store's fingerprint of the rows (PostgreSQL's): a decision made on rows read
    /// before its call names it ([`PolicyCheck::rules`]), and the store confirms it.
    pub digest: Option<String>,
}

/// The editable pattern registry of the guardrails (`operation_guardrails`).
#[async_trait]
pub trait GuardrailStore: Send + Sync {
    /// Every row, by name, and the store's fingerprint of them. Not audited: guardrail
    /// checks read it (one decided on the caller's last facts uses the last read,
    /// confirmed by the fingerprint).
    async fn guardrail_rules(&self) -> CoordResult<GuardrailRows>;
    /// Every row, by name, as an audited operation (`list_guardrails`).
    async fn list_guardrail_rules(&self, ctx: OpCtx) -> CoordResult<Vec<GuardrailRule>>;
    /// Inserts or replaces the row of `rule.name` (without a pattern, an existing row keeps
    /// its own: switching on and off never loses a concurrent change);
    /// `resource_limit_exceeded` past `MAX_RULES` rows.
    async fn set_guardrail_rule(&self, ctx: OpCtx, rule: NewRule) -> CoordResult<GuardrailRule>;
    /// Deletes the row of `name`; `not_found` when there is none.
    async fn delete_guardrail_rule(&self, ctx: OpCtx, name: String) -> CoordResult<String>;
}

/// Managed API keys.
#[async_trait]
pub trait KeyStore: Send + Sync {
    /// Stores a new key (its hash only); the result describes it without the secret.
    async fn create_api_key(&self, ctx: OpCtx, key: NewApiKey) -> CoordResult<ApiKeyInfo>;
    async fn list_api_keys(&self, ctx: OpCtx) -> CoordResult<ListApiKeysResult>;
    /// Revokes a key; revoking twice succeeds, an unknown key is `not_found`.
    async fn revoke_api_key(&self, ctx: OpCtx, key_id: String) -> CoordResult<RevokeApiKeyResult>;
    /// The key stored under this hash, live or not (`KeyMatch::live` says which). Not
    /// audited: it runs on every HTTP request before there is an operation to audit.
    async fn authenticate_key(&self, now: Option<Timestamp>, key_hash: String) -> CoordResult<Option<KeyMatch>>;
}

/// The approval queue. Requests are enqueued and grants spent by the stores' operation
/// wrappers, in the transaction of the refused or granted operation.
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    async fn list_approvals(&self, ctx: OpCtx, filter: ApprovalFilter) -> CoordResult<ListApprovalsResult>;
    async fn get_approval(&self, ctx: OpCtx, approval_id: String) -> CoordResult<ApprovalResult>;
    /// Decides a pending request by `coord_domain::approvals::decide`, with no other
    /// decision of it in between.
    async fn decide_approval(&self, ctx: OpCtx, decision: NewDecision) -> CoordResult<ApprovalResult>;
    /// Records a guardrail check: `result` as it is when `refusal` is `None`; otherwise
    /// allowed only by spending a live approval of exactly this request (`result` then
    /// says `allowed`, `approval_used`), else refused — and, being approvable, queued.
    async fn guard_decision(
        &self,
        ctx: OpCtx,
        result: CheckGuardrailsResult,
        refusal: Option<CoordError>,
    ) -> CoordResult<CheckGuardrailsResult>;
}

/// Agent profiles, their assignments and resource usage.
#[async_trait]
pub trait ProfileStore: Send + Sync {
    /// The facts [`PolicyFacts`] for `agent_id` (with `agent_type`, or its session's type
    /// when `None`). Not audited: the pipeline reads it before every operation.
    async fn policy_facts(
        &self,
        now: Option<Timestamp>,
        agent_id: &str,
        agent_type: Option<&str>,
        usage: UsageOf,
    ) -> CoordResult<PolicyFacts>;
    async fn list_profiles(&self, ctx: OpCtx) -> CoordResult<ListProfilesResult>;
    /// Creates or replaces profiles by name; answers each one's before and after.
    async fn apply_profiles(&self, ctx: OpCtx, profiles: Vec<Profile>) -> CoordResult<ApplyProfilesResult>;
    /// Assigns `profile` to an agent or an agent type, or removes the assignment (`None`);
    /// an unknown profile is `not_found`.
    async fn assign_profile(
        &self,
        ctx: OpCtx,
        who: Assignee,
        profile: Option<String>,
    ) -> CoordResult<AssignProfileResult>;
}

/// What the store is, whether it answers, and its bounded clean-up.
#[async_trait]
pub trait Maintenance: Send + Sync {
    /// `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    /// Whether the store checks an operation's [`OpCtx::policy`] in its transaction, so
    /// that the pipeline may decide on the caller's previous facts (a database a round
    /// trip away); a store that does not is always given facts read for the call.
    fn verifies_policy(&self) -> bool {
        false
    }
    /// Where the data lives, for people (a file path, or a URL without password).
    fn location(&self) -> String;
    /// The schema version the database is at, and the migrations this process applied
    /// when it opened the store (empty when the schema was already current).
    fn schema(&self) -> SchemaInfo;
    /// Whether the database answers (health checks; not audited).
    async fn ping(&self) -> CoordResult<()>;
    /// Bounded maintenance: deletes up to `batch` expired lock rows and settles up to
    /// `batch` claims whose lease ran out. Correctness never depends on it running.
    async fn sweep(&self, now: Option<Timestamp>, batch: i64) -> CoordResult<SweepReport>;
}

/// Network egress policies (`network_policies`) and the access log (`network_access_log`).
#[async_trait]
pub trait NetworkStore: Send + Sync {
    /// Every policy row, by name. Not audited: every egress check reads it.
    async fn network_policy_rows(&self) -> CoordResult<Vec<PolicyRow>>;
    /// Every policy row, by name, as an audited operation (`list_network_policies`).
    async fn list_network_policy_rows(&self, ctx: OpCtx) -> CoordResult<Vec<PolicyRow>>;
    /// Inserts or replaces the row of `policy.name`; `resource_limit_exceeded` past
    /// `MAX_POLICIES` rows.
    async fn set_network_policy(&self, ctx: OpCtx, policy: NetworkPolicy) -> CoordResult<PolicyRow>;
    /// Deletes the row of `name`; `not_found` when there is none.
    async fn delete_network_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String>;
    /// Records an egress decision: an allowed one as a `network_access_log` row in the
    /// operation's transaction (unless `provisional`: the caller asks again once it has
    /// resolved the name); a refusal (`domain_blocked`) is refused, and its row (alert
    /// set) written with the refusal's audit row.
    async fn network_decision(
        &self,
        ctx: OpCtx,
        outcome: CoordResult<CheckNetworkAccessResult>,
        provisional: bool,
    ) -> CoordResult<CheckNetworkAccessResult>;
    /// Rows of `network_access_log`, newest first.
    async fn network_access_log(&self, ctx: OpCtx, filter: AccessLogFilter) -> CoordResult<Vec<NetworkAccessRow>>;
}

/// A changeset and the runs routing planned for it: what `submit_changeset` records in
/// one transaction.
#[derive(Debug, Clone)]
pub struct RoutedChangeset {
    pub changeset: NewChangeset,
    /// `agent` (submit_changeset) or `github` (a push delivery).
    pub source: &'static str,
    /// The submitter's trust level the routing used.
    pub trust_level: u8,
    pub runs: Vec<PlannedRun>,
}

/// The approval request of a run waiting for a person: the submitter's (so they cannot
/// decide it themselves), under [`REVIEW_OPERATION`], one per changeset and policy.
pub fn review_request(
    who: &Identity,
    changeset_id: &str,
    run: &PlannedRun,
    description: Option<&str>,
) -> ApprovalRequest {
    let parameters = verification::review_parameters(changeset_id, run, description);
    ApprovalRequest {
        agent: who.clone(),
        operation: REVIEW_OPERATION,
        params_hash: coord_domain::approvals::params_hash(&parameters),
        reason: format!(
            "verification policy {} (tier {}) needs a person's {} of changeset {changeset_id}",
            run.policy.name,
            run.policy.tier,
            if run.policy.review_only() {
                "review"
            } else {
                "approval before it runs"
            },
        ),
        parameters,
        error: "verification_review_required",
        pending_minutes: coord_domain::approvals::PENDING_MINUTES,
    }
}

/// The verification gateway: policies, changesets and their runs.
#[async_trait]
pub trait VerificationStore: Send + Sync {
    /// Every policy row, by name. Not audited: routing a changeset reads it.
    async fn verification_policy_rows(&self) -> CoordResult<Vec<VerificationPolicyRow>>;
    /// Every policy row, by name, as an audited operation.
    async fn list_verification_policies(&self, ctx: OpCtx) -> CoordResult<Vec<VerificationPolicyRow>>;
    /// Inserts or replaces the row of `policy.name`; `resource_limit_exceeded` past
    /// `MAX_POLICIES` rows.
    async fn set_verification_policy(
        &self,
        ctx: OpCtx,
        policy: VerificationPolicy,
    ) -> CoordResult<VerificationPolicyRow>;
    /// Deletes the row of `name`; `not_found` when there is none. Runs already routed
    /// keep the policy as it was.
    async fn delete_verification_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String>;
    /// Records the changeset and its runs, each run waiting for a person with its
    /// approval request (the submitter's), in one transaction. The same agent's branch
    /// and commit submitted before answer the recorded changeset (`existing`), even
    /// when two submissions race.
    async fn submit_changeset(&self, ctx: OpCtx, routed: RoutedChangeset) -> CoordResult<VerificationResult>;
    /// A changeset, its runs (those waiting for a person as their review decided) and
    /// its overall status; `not_found` for an unknown id.
    async fn get_verification(&self, ctx: OpCtx, changeset_id: String, diff: bool) -> CoordResult<VerificationResult>;
    /// Claims the oldest run one of the filter's executors runs, of a changeset at the
    /// filter's commit (or naming none), for the caller: pending, approved to run, or
    /// running past its claim (a worker that died); never a run of the caller's own
    /// changeset. Concurrent workers never claim one run twice.
    async fn claim_verification_run(&self, ctx: OpCtx, filter: ClaimFilter) -> CoordResult<Option<ClaimedRun>>;
    /// Records the outcome of a claimed run (`verification::decide_report`) and answers
    /// the changeset as it is now.
    async fn report_verification_run(&self, ctx: OpCtx, report: RunReport) -> CoordResult<VerificationResult>;
    /// Finishes the running run its executor knows by this id (a GitHub Actions run that
    /// completed); answers its policy and the changeset, or None when no running run has
    /// it (finished already, or not coord's).
    async fn finish_external_run(
        &self,
        ctx: OpCtx,
        finish: ExternalFinish,
    ) -> CoordResult<Option<(String, VerificationResult)>>;
}

/// GitHub webhook deliveries, recorded before they are acted on.
#[async_trait]
pub trait GithubStore: Send + Sync {
    /// Records a delivery as received (the operation's audited step), or answers the
    /// recorded one with `duplicate` when its id was seen before.
    async fn record_github_delivery(&self, ctx: OpCtx, delivery: Delivery) -> CoordResult<GithubDeliveryResult>;
    /// What processing made of it (bookkeeping, not audited: what it did is).
    async fn finish_github_delivery(&self, now: Option<Timestamp>, outcome: GithubDeliveryResult) -> CoordResult<()>;
    /// Deliveries received before `before` and not processed (a coordinator stopped in
    /// between), oldest first.
    async fn unprocessed_github_deliveries(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Delivery>>;
    /// What coord last applied for an issue or branch (`github_sync::Link`).
    async fn github_link(&self, repo_id: i64, key: String) -> CoordResult<Option<Link>>;
    /// Issue links that hold locks or a task and were last saved before `before`, oldest
    /// first: the issues `coord serve` reads back from GitHub (missed deliveries, locks
    /// renewed while their labels stay).
    async fn github_issue_links_due(&self, before: Timestamp, limit: i64) -> CoordResult<Vec<Link>>;
    /// Stores a link, replacing the one of its issue or branch unless that one applied a
    /// newer `updated_at` (another process was quicker with a later event).
    async fn save_github_link(&self, now: Option<Timestamp>, link: Link) -> CoordResult<()>;
    /// Queues a request for GitHub's API (sent by `coord serve` when a token is set).
    async fn queue_github_request(&self, now: Option<Timestamp>, request: GithubRequest) -> CoordResult<()>;
    /// Takes up to `limit` queued requests that are due, marking them tried (they are
    /// not due again for a while, so two senders do not send one twice at once).
    async fn take_due_github_requests(&self, now: Option<Timestamp>, limit: i64) -> CoordResult<Vec<QueuedRequest>>;
    /// The outbox, newest first: the requests not sent yet, or with `sent` all.
    async fn github_outbox(&self, sent: bool, limit: i64) -> CoordResult<Vec<OutboxRow>>;
    /// Records a send: done, or failed and due again in `retry_in_seconds`.
    async fn record_github_request(
        &self,
        now: Option<Timestamp>,
        id: i64,
        outcome: Result<(), String>,
        retry_in_seconds: i64,
    ) -> CoordResult<()>;
}

/// A registered spawn: what `spawn_agent` stores in one transaction.
#[derive(Debug, Clone)]
pub struct NewSpawn {
    /// The record (its depth and times are set by the store).
    pub record: coord_domain::agents::spawn::SpawnedAgent,
    /// The spawner's profile: the child's profile may hold no more.
    pub parent_profile: Profile,
    /// The task, submitted and claimed by the new agent until its deadline.
    pub task: NewTask,
    /// The deadline asked for (the profile's `max_execution_time` caps it).
    pub timeout_minutes: Option<i64>,
    pub limits: coord_domain::agents::spawn::SpawnLimits,
    pub validator: coord_domain::agents::preflight::Validator,
}

impl NewSpawn {
    /// The spawn's checks (`spawn::admit_spawn`) against the child's profile as stored, the
    /// spawner's own record and the running count: the record to store (depth, deadline
    /// and creation time set) and its task's lease in minutes.
    pub fn admitted(
        &self,
        child: &Profile,
        parent: Option<&coord_domain::agents::spawn::SpawnedAgent>,
        running: i64,
        now: Timestamp,
    ) -> CoordResult<(coord_domain::agents::spawn::SpawnedAgent, i64)> {
        let a = coord_domain::agents::spawn::admit_spawn(
            &self.parent_profile,
            child,
            parent,
            &self.record.definition,
            running,
            self.limits,
            self.timeout_minutes,
        )?;
        let mut record = self.record.clone();
        record.depth = a.depth;
        record.deadline_minutes = a.deadline_minutes;
        record.created_at = now;
        Ok((record, a.lease_minutes))
    }

    /// The answer once `record` is stored.
    pub fn answer(
        &self,
        record: &coord_domain::agents::spawn::SpawnedAgent,
    ) -> coord_domain::agents::spawn::SpawnAgentResult {
        coord_domain::agents::spawn::SpawnAgentResult {
            success: true,
            agent_id: record.agent_id.clone(),
            task_id: record.task_id.clone(),
            status: coord_domain::agents::spawn::SpawnStatus::Starting,
            depth: record.depth,
            profile: record.definition.profile,
            validator: self.validator,
            isolation: record.isolation,
        }
    }
}

/// Agents coord spawned (`spawn_agent`): their records.
#[async_trait]
pub trait SpawnStore {
    /// In one transaction: the child's profile is read and held against the parent's
    /// (`spawn::check_privileges`), the spawner's own record and the running count
    /// against the limits (`spawn::admit`); then the task is submitted already claimed
    /// by the new agent, the profile assigned to it, and its record stored. Audited.
    async fn spawn_agent(
        &self,
        ctx: OpCtx,
        spawn: NewSpawn,
    ) -> CoordResult<coord_domain::agents::spawn::SpawnAgentResult>;
    /// One record and its task's status now, unaudited (the activation check,
    /// supervisors; the operations audit their reads).
    async fn spawned_agent(
        &self,
        agent_id: &str,
    ) -> CoordResult<
        Option<(
            coord_domain::agents::spawn::SpawnedAgent,
            Option<coord_domain::queue::TaskStatus>,
        )>,
    >;
    /// Records newest first, of `parent`'s children (everyone's for `None`), only the
    /// active ones if asked; unaudited (the operation audits).
    async fn spawned_agents(
        &self,
        parent: Option<String>,
        active_only: bool,
        limit: i64,
    ) -> CoordResult<
        Vec<(
            coord_domain::agents::spawn::SpawnedAgent,
            Option<coord_domain::queue::TaskStatus>,
        )>,
    >;
    /// The profile called `name`, unaudited (what a spawn would be given).
    async fn profile_named(&self, name: &str) -> CoordResult<Option<Profile>>;
    /// Applies `update` (`SpawnedAgent::apply`) and answers the record. Audited.
    async fn update_spawned_agent(
        &self,
        ctx: OpCtx,
        agent_id: String,
        update: coord_domain::agents::spawn::SpawnUpdate,
    ) -> CoordResult<coord_domain::agents::spawn::SpawnedAgent>;
}

/// Graph workflows and swarms (`coord_domain::workflows`): the record, moved on under a
/// version, and its nodes' tasks.
#[async_trait]
pub trait WorkflowStore {
    /// In one transaction: the record stored (version 1) and the tasks of the nodes it
    /// starts submitted and mapped to it. Audited with `answer` (what the operation
    /// answers), which it answers.
    async fn create_workflow(
        &self,
        ctx: OpCtx,
        workflow: coord_domain::workflows::Workflow,
        tasks: Vec<(String, NewTask)>,
        answer: serde_json::Value,
    ) -> CoordResult<serde_json::Value>;
    /// The record, its version and its nodes' tasks, unaudited (the operations audit).
    async fn workflow(
        &self,
        workflow_id: &str,
    ) -> CoordResult<
        Option<(
            coord_domain::workflows::Workflow,
            i64,
            Vec<coord_domain::queue::TaskInfo>,
        )>,
    >;
    /// In one transaction, if the record is still at `version`: `next` stored, the tasks
    /// of the nodes it starts submitted and mapped. `workflow_busy` when another step came
    /// first (nothing written; audited as that refusal). Audited.
    async fn step_workflow(
        &self,
        ctx: OpCtx,
        version: i64,
        next: coord_domain::workflows::Workflow,
        tasks: Vec<(String, NewTask)>,
    ) -> CoordResult<bool>;
    /// Fails the pending tasks among `task_ids` with `reason` (`failure_reason`
    /// `no_worker`); answers those it failed. Audited.
    async fn fail_pending_tasks(&self, ctx: OpCtx, task_ids: Vec<String>, reason: String) -> CoordResult<Vec<String>>;
    /// Records newest first, of one creator (everyone's for `None`), unaudited.
    async fn workflows(
        &self,
        created_by: Option<String>,
        limit: i64,
    ) -> CoordResult<Vec<coord_domain::workflows::Workflow>>;
}

/// Whole ids for shortened ones (`coord_domain::ids`): read unaudited, before the
/// operation that names them runs (and audits the request, with the whole id).
#[async_trait]
pub trait IdStore: Send + Sync {
    /// The ids of `prefix.kind` between its bounds (inclusive) that `viewer` can see
    /// (`coord_domain::ids::IdKind` says which), sorted, at most `limit`.
    async fn ids_in_range(
        &self,
        prefix: &coord_domain::ids::IdPrefix,
        viewer: &str,
        limit: usize,
    ) -> CoordResult<Vec<String>>;
}

/// The fleet's figures (`get_stats`): counts of what the database holds now, read in one
/// snapshot, audited like any read.
#[async_trait]
pub trait StatsStore: Send + Sync {
    async fn stats(&self, ctx: OpCtx) -> CoordResult<coord_domain::stats::StatsResult>;
}

/// [`Store`] and its blanket implementation from one list of capabilities: a capability
/// added to the list is a supertrait and a bound at once.
macro_rules! whole_store {
    ($($capability:ident),+ $(,)?) => {
        /// A whole store: every capability. Implemented by any type that implements them
        /// all; a backend adds a capability by implementing its trait in the capability's
        /// module.
        pub trait Store: $($capability +)+ Send + Sync + 'static {}

        impl<T: $($capability +)+ Send + Sync + 'static> Store for T {}
    };
}

whole_store!(
    LockStore,
    QueueStore,
    SessionStore,
    ProfileStore,
    ApprovalStore,
    HandoffStore,
    MemoryStore,
    MessageStore,
    AuditStore,
    StatsStore,
    IdStore,
    NotificationStore,
    GuardrailStore,
    NetworkStore,
    VerificationStore,
    GithubStore,
    SpawnStore,
    WorkflowStore,
    FileStore,
    KeyStore,
    Maintenance,
);
