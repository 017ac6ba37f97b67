//! The typed front of [`Coordination`] for Rust callers (CLI commands, hooks, the bench,
//! the conformance suite): [`call`] runs any registered operation; a local coordinator
//! runs it without a JSON round trip.

use crate::Coordination;
use crate::op::Operation;
use crate::ops::{audit, handoffs, keys, locks, queue, sessions};
use crate::registry::entry_of;
use async_trait::async_trait;
use coord_domain::access::Principal;
use coord_domain::audit::{AuditQueryRequest, AuditQueryResult};
use coord_domain::handoffs::{ReadHandoffRequest, ReadHandoffResult, WriteHandoffRequest, WriteHandoffResult};
use coord_domain::keys::{
    CreateApiKeyRequest, CreateApiKeyResult, ListApiKeysResult, RevokeApiKeyRequest, RevokeApiKeyResult,
};
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckEditRequest, CheckEditResult, CheckLocksRequest, CheckLocksResult,
    ReleaseAllResult, ReleaseLockRequest, ReleaseLockResult,
};
use coord_domain::queue::{
    CompleteWorkRequest, CompleteWorkResult, GetTaskRequest, GetTaskResult, GetWorkRequest, GetWorkResult,
    ListTasksRequest, ListTasksResult, SubmitWorkRequest, SubmitWorkResult,
};
use coord_domain::sessions::{
    CleanupDeadAgentsRequest, CleanupResult, DiscoverAgentsRequest, DiscoverAgentsResult, EndSessionRequest,
    EndSessionResult, HeartbeatRequest, RegisterSessionRequest, SessionResult,
};
use coord_domain::status::StatusResult;
use coord_domain::{Caller, CoordError, CoordResult, Empty};

/// Runs operation `O` through `c` for `who`.
pub async fn call<O: Operation, C: Coordination + ?Sized>(
    c: &C,
    who: &Principal,
    req: O::Request,
) -> CoordResult<O::Response> {
    if let Some(local) = c.local() {
        return local.run::<O>(who, req).await;
    }
    let entry = entry_of::<O>()?;
    let request = serde_json::to_value(&req).map_err(|e| {
        tracing::error!(operation = O::NAME, error = %e, "a request would not serialize");
        CoordError::internal()
    })?;
    let answer = c.invoke(entry, who, Ok(request)).await?;
    serde_json::from_value(answer).map_err(|e| {
        CoordError::unavailable(format!(
            "the coordinator's answer to {} cannot be read ({e}); are the versions compatible?",
            O::NAME
        ))
    })
}

/// Refuses a request to `O` that its caller could not even build (a flag that is not
/// JSON, a file that cannot be read): the refusal goes through the pipeline, so it is
/// audited as `O` like any other refusal, and comes back as the error to show.
pub async fn refuse<O: Operation, C: Coordination + ?Sized>(c: &C, who: &Principal, e: CoordError) -> CoordError {
    let entry = match entry_of::<O>() {
        Ok(entry) => entry,
        Err(_) => return e,
    };
    match c.invoke(entry, who, Err(e.clone())).await {
        Err(refusal) => refusal,
        // The pipeline never runs an operation without its request.
        Ok(_) => e,
    }
}

/// The foundation's operations as methods, for callers acting as a local process.
/// Newer operations are called with [`call`] (nothing here needs to change for them).
#[async_trait]
pub trait CoordinationExt: Coordination {
    async fn op<O: Operation>(&self, caller: &Caller, req: O::Request) -> CoordResult<O::Response> {
        call::<O, Self>(self, &Principal::local(caller.clone()), req).await
    }

    async fn acquire_lock(&self, caller: &Caller, req: AcquireLockRequest) -> CoordResult<AcquireLockResult> {
        self.op::<locks::AcquireLock>(caller, req).await
    }
    async fn release_lock(&self, caller: &Caller, req: ReleaseLockRequest) -> CoordResult<ReleaseLockResult> {
        self.op::<locks::ReleaseLock>(caller, req).await
    }
    async fn release_my_locks(&self, caller: &Caller) -> CoordResult<ReleaseAllResult> {
        self.op::<locks::ReleaseMyLocks>(caller, Empty {}).await
    }
    async fn check_locks(&self, caller: &Caller, req: CheckLocksRequest) -> CoordResult<CheckLocksResult> {
        self.op::<locks::CheckLocks>(caller, req).await
    }
    async fn check_edit(&self, caller: &Caller, req: CheckEditRequest) -> CoordResult<CheckEditResult> {
        self.op::<locks::CheckEdit>(caller, req).await
    }
    async fn submit_work(&self, caller: &Caller, req: SubmitWorkRequest) -> CoordResult<SubmitWorkResult> {
        self.op::<queue::SubmitWork>(caller, req).await
    }
    async fn get_work(&self, caller: &Caller, req: GetWorkRequest) -> CoordResult<GetWorkResult> {
        self.op::<queue::GetWork>(caller, req).await
    }
    async fn complete_work(&self, caller: &Caller, req: CompleteWorkRequest) -> CoordResult<CompleteWorkResult> {
        self.op::<queue::CompleteWork>(caller, req).await
    }
    async fn get_task(&self, caller: &Caller, req: GetTaskRequest) -> CoordResult<GetTaskResult> {
        self.op::<queue::GetTask>(caller, req).await
    }
    async fn list_tasks(&self, caller: &Caller, req: ListTasksRequest) -> CoordResult<ListTasksResult> {
        self.op::<queue::ListTasks>(caller, req).await
    }
    async fn register_session(&self, caller: &Caller, req: RegisterSessionRequest) -> CoordResult<SessionResult> {
        self.op::<sessions::RegisterSession>(caller, req).await
    }
    async fn heartbeat(&self, caller: &Caller, req: HeartbeatRequest) -> CoordResult<SessionResult> {
        self.op::<sessions::Heartbeat>(caller, req).await
    }
    async fn discover_agents(&self, caller: &Caller, req: DiscoverAgentsRequest) -> CoordResult<DiscoverAgentsResult> {
        self.op::<sessions::DiscoverAgents>(caller, req).await
    }
    async fn cleanup_dead_agents(&self, caller: &Caller, req: CleanupDeadAgentsRequest) -> CoordResult<CleanupResult> {
        self.op::<sessions::CleanupDeadAgents>(caller, req).await
    }
    async fn mark_idle(&self, caller: &Caller) -> CoordResult<SessionResult> {
        self.op::<sessions::MarkIdle>(caller, Empty {}).await
    }
    async fn end_session(&self, caller: &Caller, req: EndSessionRequest) -> CoordResult<EndSessionResult> {
        self.op::<sessions::EndSessionOp>(caller, req).await
    }
    async fn write_handoff(&self, caller: &Caller, req: WriteHandoffRequest) -> CoordResult<WriteHandoffResult> {
        self.op::<handoffs::WriteHandoff>(caller, req).await
    }
    async fn read_handoff(&self, caller: &Caller, req: ReadHandoffRequest) -> CoordResult<ReadHandoffResult> {
        self.op::<handoffs::ReadHandoff>(caller, req).await
    }
    async fn query_audit(&self, caller: &Caller, req: AuditQueryRequest) -> CoordResult<AuditQueryResult> {
        self.op::<audit::QueryAudit>(caller, req).await
    }
    async fn status(&self, caller: &Caller) -> CoordResult<StatusResult> {
        self.op::<audit::Status>(caller, Empty {}).await
    }
    async fn create_api_key(&self, caller: &Caller, req: CreateApiKeyRequest) -> CoordResult<CreateApiKeyResult> {
        self.op::<keys::CreateApiKey>(caller, req).await
    }
    async fn list_api_keys(&self, caller: &Caller) -> CoordResult<ListApiKeysResult> {
        self.op::<keys::ListApiKeys>(caller, Empty {}).await
    }
    async fn revoke_api_key(&self, caller: &Caller, req: RevokeApiKeyRequest) -> CoordResult<RevokeApiKeyResult> {
        self.op::<keys::RevokeApiKey>(caller, req).await
    }
}

impl<T: Coordination + ?Sized> CoordinationExt for T {}
