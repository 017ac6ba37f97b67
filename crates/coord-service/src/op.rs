//! What an operation is: one type implementing [`Operation`] carries everything every
//! door, the pipeline and the generated docs need — its one name, its texts, its
//! request and response types, its access and effect classes, its audit policy, its HTTP
//! bindings and whether it is an MCP tool — plus its validation and its execution.
//!
//! Adding an operation is: its definition (next to its capability in `ops/`), its store
//! methods, and one line in [`crate::registry`].

use crate::Coordinator;
use crate::follow_up::FollowUp;
use coord_domain::access::{Access, Effect};
use coord_domain::ids::IdKind;
use coord_domain::profiles::{Need, Resource};
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;

/// Whether the pipeline writes an audit row for the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Audit {
    /// Every outcome is audited, refusals and unparseable requests included.
    Always,
    /// Never audited: the operation touches no database (port blocks live in a file
    /// shared by the machine's processes, and must work where there is no database).
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
        }
    }
}

/// Where an HTTP binding finds the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A JSON object body (POST); `agent_id`/`agent_type` in it are identity claims.
    Body,
    /// The query string (GET), typed through the request type.
    Query,
    /// One path parameter (GET) that becomes the request's only field.
    Path(&'static str),
    /// Nothing (GET only): the request is `{}`; query strings are ignored.
    None,
}

/// One HTTP route of an operation. An operation may have several (`GET /locks` and
/// `POST /locks/check` are both `check_locks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http {
    pub method: Method,
    /// axum syntax: `{name}` for a segment, `{*name}` for the rest of the path.
    pub path: &'static str,
    pub input: Input,
    /// Error statuses the route answers besides the common ones (for OpenAPI).
    pub errors: &'static [u16],
    /// Overrides the operation's summary in OpenAPI for this route.
    pub summary: Option<&'static str>,
}

impl Http {
    pub const fn post(path: &'static str) -> Http {
        Http {
            method: Method::Post,
            path,
            input: Input::Body,
            errors: &[],
            summary: None,
        }
    }

    pub const fn get(path: &'static str) -> Http {
        Http {
            method: Method::Get,
            path,
            input: Input::Query,
            errors: &[],
            summary: None,
        }
    }

    pub const fn input(mut self, input: Input) -> Http {
        self.input = input;
        self
    }

    pub const fn errors(mut self, errors: &'static [u16]) -> Http {
        self.errors = errors;
        self
    }

    pub const fn summary(mut self, summary: &'static str) -> Http {
        self.summary = Some(summary);
        self
    }
}

/// A request field that holds an id of `kind`, for [`Operation::ids`].
pub struct IdSlot<'a> {
    pub kind: IdKind,
    pub field: &'static str,
    pub value: &'a mut String,
    /// The code for a prefix that names nothing, where the field answers an unknown whole
    /// id with its own (`unknown_dependency`); the kind's not-found otherwise.
    pub missing: Option<coord_domain::ErrorCode>,
}

impl<'a> IdSlot<'a> {
    pub fn new(kind: IdKind, field: &'static str, value: &'a mut String) -> Self {
        IdSlot {
            kind,
            field,
            value,
            missing: None,
        }
    }

    /// Slots for an optional field or a list of ids.
    pub fn each(kind: IdKind, field: &'static str, values: impl IntoIterator<Item = &'a mut String>) -> Vec<Self> {
        values
            .into_iter()
            .map(|value| IdSlot::new(kind, field, value))
            .collect()
    }

    pub fn missing(mut self, code: coord_domain::ErrorCode) -> Self {
        self.missing = Some(code);
        self
    }
}

/// One coordination operation, defined once.
pub trait Operation: Send + Sync + 'static {
    /// THE name: audit rows, the MCP tool, `coord call`, tracing spans, the docs.
    const NAME: &'static str;
    /// One line for people (OpenAPI summary, `coord ops`).
    const SUMMARY: &'static str;
    /// Model-facing prose (the MCP tool description): when to use it and what it answers.
    const DESCRIPTION: &'static str;
    const ACCESS: Access;
    const EFFECT: Effect;
    /// What the caller's profile must grant: a permission and a minimum trust level
    /// (and whether it starts new work, which `max_execution_time` stops).
    const NEED: Need;
    const AUDIT: Audit = Audit::Always;
    /// Whether a call counts against `max_api_calls`. Off only for what an agent over its
    /// limits still needs: reading its approval requests and why it is refused.
    const METERED: bool = true;
    /// Whether the pipeline may decide this operation on the caller's policy facts from
    /// its previous call, where the store checks them in the operation's own transaction
    /// (`coord_store::PolicyCheck`; PostgreSQL): saves the round trip that reads them.
    /// Only for operations that run one store operation and, before it, nothing that
    /// depends on the caller's facts, so that every outcome, refusals included, is decided
    /// on checked facts.
    const POLICY_FROM_LAST_CALL: bool = false;
    /// Fields (at any depth of the request and the answer) whose values the audit row
    /// replaces with `"[redacted]"`: the audit trail is readable by every agent with a
    /// key, and some contents are not theirs to read.
    const AUDIT_REDACT: &'static [&'static str] = &[];
    /// The event names of its audit rows (the file tools' spec 000 names), if any.
    const AUDIT_EVENTS: Option<coord_domain::audit::AuditEvents> = None;
    /// Its HTTP routes; empty only with [`Operation::NOT_HTTP`] saying why.
    const HTTP: &'static [Http];
    /// Why it has no HTTP route (empty when it has one).
    const NOT_HTTP: &'static str = "";
    /// Why it is not an MCP tool (empty when it is one).
    const NOT_MCP: &'static str = "";
    /// Request fields holding repository paths (a string or an array of strings): a
    /// remote client makes absolute paths inside its checkout repo-relative before
    /// sending, since the server's checkout lives elsewhere.
    const PATH_FIELDS: &'static [&'static str] = &[];
    /// A valid request, as JSON: shown in `docs/operations.md` and run by the generic
    /// tests that check every operation on every door.
    const EXAMPLE: &'static str = "{}";

    type Request: Serialize + DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static;
    type Response: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
    /// The validated, normalised arguments ("parse, don't validate").
    type Args: Send + 'static;

    /// The limited resources a call with these arguments uses — the files it modifies,
    /// the agents it spawns — counted against the caller's profile in the operation's
    /// own transaction.
    fn uses(_args: &Self::Args) -> Vec<(Resource, Vec<String>)> {
        Vec::new()
    }

    /// A resource this call uses an unknown amount of (a directory or glob lock covers
    /// any number of files): refused when the caller's profile limits it.
    fn unbounded(_args: &Self::Args) -> Option<Resource> {
        None
    }

    /// The request's fields that name a task, an approval or a message by id: the
    /// pipeline accepts a unique prefix there (`coord_domain::ids`) and puts the whole id
    /// in its place before [`Operation::validate`] sees the request.
    fn ids(_req: &mut Self::Request) -> Vec<IdSlot<'_>> {
        Vec::new()
    }

    /// Turns the request into arguments the store accepts, or refuses it (audited).
    fn validate(c: &Coordinator, who: &Identity, req: Self::Request) -> CoordResult<Self::Args>;

    /// Runs it; a store operation appends the audit row in its own transaction.
    fn execute(
        c: &Coordinator,
        ctx: OpCtx,
        args: Self::Args,
    ) -> impl Future<Output = CoordResult<Self::Response>> + Send;

    /// What its outcome leaves to do (a workflow to move on, an agent to settle): run by
    /// the coordinator ([`crate::follow_up`]) after the operation and before the door
    /// answers. An operation never runs another one itself.
    fn follow_ups(_answer: &CoordResult<Self::Response>) -> Vec<FollowUp> {
        Vec::new()
    }
}
