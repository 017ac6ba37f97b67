//! The registry: every operation, listed once. MCP tools, HTTP routes, OpenAPI, the
//! remote client, `coord call` / `coord ops`, the generated `docs/operations.md` and the
//! generic door tests all iterate [`ops`].

use crate::op::{Audit, Http, Operation};
use crate::ops::{
    agents, approvals, audit, files, github, guardrails, handoffs, keys, locks, memory, messages, network,
    notifications, overrides, ports, profiles, queue, sessions, spawn, verification, workflows,
};
use crate::{Coordinator, pipeline};
use coord_domain::access::{Access, Effect, Principal};
use coord_domain::profiles::Need;
use coord_domain::{CoordError, CoordResult, ErrorCode};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An operation's definition with its types erased, for the generic doors.
pub struct OpEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub description: &'static str,
    pub access: Access,
    pub effect: Effect,
    pub need: Need,
    pub audit: Audit,
    pub audit_redact: &'static [&'static str],
    pub http: &'static [Http],
    pub not_http: &'static str,
    pub not_mcp: &'static str,
    pub path_fields: &'static [&'static str],
    pub example: &'static str,
    /// The request's schema as a component (OpenAPI bodies).
    pub request_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The request's own schema, its properties inline (OpenAPI query and path parameters).
    pub request_root: fn(&mut SchemaGenerator) -> Schema,
    pub response_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The request's schema as a standalone object schema (an MCP tool's input schema).
    pub input_schema: fn() -> Map<String, Value>,
    /// A query string typed through the request type (numbers stay numbers), as JSON.
    pub query_to_json: fn(&str) -> CoordResult<Value>,
    pub(crate) run: for<'a> fn(&'a Coordinator, &'a Principal, CoordResult<Value>) -> BoxFuture<'a, CoordResult<Value>>,
}

impl OpEntry {
    pub fn is_mcp_tool(&self) -> bool {
        self.not_mcp.is_empty()
    }
}

impl std::fmt::Debug for OpEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A request type's schema as MCP wants it: draft 2020-12, definitions inlined under
/// `$defs`, the root's own title and description dropped (noise to a model).
fn input_schema_of<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    object.remove("title");
    object.remove("description");
    object
}

fn query_to_json_of<T: serde::Serialize + serde::de::DeserializeOwned>(raw: &str) -> CoordResult<Value> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.as_bytes()));
    let typed: T = serde_path_to_error::deserialize(de).map_err(pipeline::field_error)?;
    serde_json::to_value(typed).map_err(|e| {
        tracing::error!(error = %e, "a request would not serialize");
        CoordError::internal()
    })
}

pub fn entry<O: Operation>() -> OpEntry {
    OpEntry {
        name: O::NAME,
        summary: O::SUMMARY,
        description: O::DESCRIPTION,
        access: O::ACCESS,
        effect: O::EFFECT,
        need: O::NEED,
        audit: O::AUDIT,
        audit_redact: O::AUDIT_REDACT,
        http: O::HTTP,
        not_http: O::NOT_HTTP,
        not_mcp: O::NOT_MCP,
        path_fields: O::PATH_FIELDS,
        example: O::EXAMPLE,
        request_schema: |g| g.subschema_for::<O::Request>(),
        request_root: |g| g.root_schema_for::<O::Request>(),
        response_schema: |g| g.subschema_for::<O::Response>(),
        input_schema: input_schema_of::<O::Request>,
        query_to_json: query_to_json_of::<O::Request>,
        run: |c, who, raw| Box::pin(c.run_json::<O>(who, raw)),
    }
}

static OPS: LazyLock<Vec<OpEntry>> = LazyLock::new(|| {
    vec![
        entry::<locks::AcquireLock>(),
        entry::<locks::ReleaseLock>(),
        entry::<locks::ReleaseMyLocks>(),
        entry::<locks::CheckLocks>(),
        entry::<locks::LockStatus>(),
        entry::<locks::CheckEdit>(),
        entry::<files::ReadFile>(),
        entry::<files::WriteFile>(),
        entry::<queue::SubmitWork>(),
        entry::<queue::GetWork>(),
        entry::<queue::CompleteWork>(),
        entry::<queue::GetTask>(),
        entry::<queue::ListTasks>(),
        entry::<overrides::BreakLock>(),
        entry::<overrides::CancelTask>(),
        entry::<overrides::RequeueTask>(),
        entry::<sessions::RegisterSession>(),
        entry::<sessions::Heartbeat>(),
        entry::<sessions::DiscoverAgents>(),
        entry::<sessions::CleanupDeadAgents>(),
        entry::<sessions::MarkIdle>(),
        entry::<sessions::EndSessionOp>(),
        entry::<handoffs::WriteHandoff>(),
        entry::<handoffs::ReadHandoff>(),
        entry::<memory::Remember>(),
        entry::<memory::Recall>(),
        entry::<memory::MemoryFeedback>(),
        entry::<memory::Forget>(),
        entry::<memory::PruneMemories>(),
        entry::<memory::RecordSkillUse>(),
        entry::<memory::GetSkills>(),
        entry::<memory::UpdateWorkingMemory>(),
        entry::<memory::GetWorkingMemory>(),
        entry::<messages::SendMessage>(),
        entry::<messages::Inbox>(),
        entry::<messages::ReadMessage>(),
        entry::<messages::AckMessage>(),
        entry::<audit::QueryAudit>(),
        entry::<audit::VerifyAudit>(),
        entry::<audit::PruneAudit>(),
        entry::<notifications::ListNotifications>(),
        entry::<audit::Status>(),
        entry::<audit::GetStats>(),
        entry::<profiles::ListProfiles>(),
        entry::<profiles::ApplyProfiles>(),
        entry::<profiles::AssignProfile>(),
        entry::<profiles::UnassignProfile>(),
        entry::<profiles::ExplainProfile>(),
        entry::<approvals::ListApprovals>(),
        entry::<approvals::GetApproval>(),
        entry::<approvals::DecideApproval>(),
        entry::<guardrails::CheckGuardrails>(),
        entry::<guardrails::ListGuardrails>(),
        entry::<guardrails::SetGuardrail>(),
        entry::<guardrails::ResetGuardrail>(),
        entry::<network::CheckNetworkAccess>(),
        entry::<network::ListNetworkPolicies>(),
        entry::<network::SetNetworkPolicy>(),
        entry::<network::ResetNetworkPolicy>(),
        entry::<network::NetworkAccessLog>(),
        entry::<network::RecordSandboxRun>(),
        entry::<verification::SetVerificationPolicy>(),
        entry::<verification::ListVerificationPolicies>(),
        entry::<verification::DeleteVerificationPolicy>(),
        entry::<verification::SubmitChangeset>(),
        entry::<verification::GetVerification>(),
        entry::<verification::ClaimVerificationRun>(),
        entry::<verification::ReportVerificationRun>(),
        entry::<github::ReceiveGithubDelivery>(),
        entry::<agents::RecordPreflight>(),
        entry::<spawn::SpawnAgent>(),
        entry::<spawn::DelegateTask>(),
        entry::<spawn::GetAgentStatus>(),
        entry::<spawn::GetAgentOutput>(),
        entry::<spawn::ListSpawnedAgents>(),
        entry::<spawn::StopAgent>(),
        entry::<workflows::CreateWorkflow>(),
        entry::<workflows::GetWorkflowStatus>(),
        entry::<workflows::ListWorkflows>(),
        entry::<workflows::CreateSwarm>(),
        entry::<workflows::GetSwarmResults>(),
        entry::<keys::CreateApiKey>(),
        entry::<keys::ListApiKeys>(),
        entry::<keys::RevokeApiKey>(),
        entry::<ports::AllocatePorts>(),
        entry::<ports::ReleasePorts>(),
        entry::<ports::PortsStatus>(),
    ]
});

/// Every operation, in a stable order (by capability).
pub fn ops() -> &'static [OpEntry] {
    &OPS
}

/// The operation called `name`.
pub fn op(name: &str) -> Option<&'static OpEntry> {
    ops().iter().find(|o| o.name == name)
}

/// The operation called `name`, or `unknown_operation` listing what exists.
pub fn op_named(name: &str) -> CoordResult<&'static OpEntry> {
    op(name).ok_or_else(|| {
        let known: Vec<&str> = ops().iter().map(|o| o.name).collect();
        CoordError::field(
            ErrorCode::UnknownOperation,
            "operation",
            format!("no operation {name:?}; the operations are: {}", known.join(", ")),
        )
    })
}

/// The entry of a statically known operation.
pub(crate) fn entry_of<O: Operation>() -> CoordResult<&'static OpEntry> {
    op(O::NAME).ok_or_else(|| {
        // A definition missing its registry line: a bug, reported on its first remote call.
        tracing::error!(operation = O::NAME, "operation is not in the registry");
        CoordError::internal()
    })
}

fn http_routes(op: &OpEntry) -> Vec<String> {
    op.http
        .iter()
        .map(|h| format!("{} {}", h.method.as_str().to_uppercase(), h.path.replace("{*", "{")))
        .collect()
}

/// `docs/operations.md`, generated from the registry (a test keeps the committed file
/// current).
pub fn markdown() -> String {
    let name = |a: Access| match a {
        Access::Read => "read",
        Access::Agent => "agent",
        Access::Operator => "operator",
    };
    let effect = |e: Effect| match e {
        Effect::Read => "read",
        Effect::Write => "write",
        Effect::Destructive => "destructive",
    };
    let need = |n: Need| {
        format!(
            "`{}` ≥{}{}",
            n.permission,
            n.min_trust,
            if n.starts_work { " +work" } else { "" }
        )
    };
    let mut md = String::from(
        "# Operations\n\n\
         Generated from the operation registry (`crates/coord-service/src/registry.rs`) by \
         `cargo test -p coord-service --test registry`; do not edit by hand: \
         `UPDATE_DOCS=1 cargo test -p coord-service --test registry` rewrites it.\n\n\
         Every operation is one definition (`crates/coord-service/src/ops/`) that every door reads: \
         it is an MCP tool of the same name (`coord mcp`, and `/mcp` of `coord serve`), the HTTP \
         routes listed (`coord serve`; `GET /openapi.json` has the schemas), and \
         `coord call <operation> '<json>'` on the command line (`coord ops` lists them), or with the \
         request's fields as flags: `coord call acquire_lock --file-path src/auth.rs --ttl-minutes 60` \
         (`coord call <operation> --help` lists them).\n\n\
         **Access** (decided by the service for every door): `read` — anyone who reaches the \
         server, with or without an API key; `agent` — an API key (bound to one identity, or an \
         operator key) over HTTP, or a local process (CLI, hooks, `coord mcp` over stdio); \
         `operator` — an operator key (`COORDINATION_API_KEYS`) or a local process. \
         **Effect**: `read`, `write`, or `destructive` (removes other agents' state); MCP \
         clients see it as tool annotations. **Audited**: every outcome writes one audit row, \
         refusals and unparseable requests included; port blocks need no database and are not \
         audited.\n\n\
         **Profile** (decided by the service after access, see `docs/profiles.md`): the \
         permission the caller's profile must grant and the minimum trust level; `+work` marks \
         operations that start new work, refused once the session has run for its profile's \
         `max_execution_time`.\n\n\
         | operation | access | profile | effect | HTTP | MCP tool | audited | summary |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for op in ops() {
        let routes = http_routes(op)
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join("<br>");
        md.push_str(&format!(
            "| [`{n}`](#{n}) | {} | {} | {} | {} | {} | {} | {} |\n",
            name(op.access),
            need(op.need),
            effect(op.effect),
            if routes.is_empty() { "—".into() } else { routes },
            if op.is_mcp_tool() { "yes" } else { "no" },
            if op.audit == Audit::Always { "yes" } else { "no" },
            op.summary,
            n = op.name,
        ));
    }
    for op in ops() {
        md.push_str(&format!("\n## {}\n\n{}\n\n", op.name, op.description));
        md.push_str(&format!("- Profile: needs {}\n", need(op.need)));
        for route in http_routes(op) {
            md.push_str(&format!("- HTTP: `{route}`\n"));
        }
        if !op.not_http.is_empty() {
            md.push_str(&format!("- Not over HTTP: {}\n", op.not_http));
        }
        if !op.not_mcp.is_empty() {
            md.push_str(&format!("- Not an MCP tool: {}\n", op.not_mcp));
        }
        // Quoted for a POSIX shell: a `'` in the example is written `'\''`.
        md.push_str(&format!(
            "- Shell: `coord call {} '{}'`\n",
            op.name,
            op.example.replace('\'', r"'\''")
        ));
    }
    md
}
