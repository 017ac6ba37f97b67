//! The pipeline: every operation, on every door, runs the same steps in the same order —
//! identity → access → profile → parse → whole ids → validate → charges → execute → audit — inside one tracing span.
//! A refusal at any step before execution is audited here (exactly once); execution
//! audits in the store, in the operation's own transaction.

use crate::Coordinator;
use crate::follow_up::FollowUp;
use crate::op::{Audit, Operation};
use coord_domain::access::{Credential, Effect, Principal};
use coord_domain::approvals;
use coord_domain::audit::AuditRecord;
use coord_domain::ids;
use coord_domain::keys::KeyOrigin;
use coord_domain::profiles::{self, Need, Permission, Profile, Resource};
use coord_domain::{CoordError, CoordResult, ErrorCode, ErrorKind, Identity};
use coord_store::{Charge, Escalation, OpCtx, PolicyCheck, UsageOf};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Instant;
use tracing::Instrument;

/// serde's error for a field, named by its path (`missing field` errors name it too),
/// as `invalid_argument` with `field` set, so a model or a script can fix its call.
pub(crate) fn field_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> CoordError {
    let path = e.path().to_string();
    let inner = e.inner().to_string();
    let field = if path == "." {
        inner.split('`').nth(1).map(String::from).unwrap_or_default()
    } else {
        path
    };
    let message = if field.is_empty() {
        inner
    } else {
        format!("{field}: {inner}")
    };
    let e = CoordError::new(ErrorCode::InvalidArgument, message);
    if field.is_empty() { e } else { e.with_field(&field) }
}

/// A JSON request as the operation's request type; errors name the field.
pub fn parse_named<T: DeserializeOwned>(raw: &Value) -> CoordResult<T> {
    if !raw.is_object() {
        return Err(CoordError::new(
            ErrorCode::InvalidArgument,
            "the request must be a JSON object",
        ));
    }
    serde_path_to_error::deserialize(raw).map_err(field_error)
}

/// What an operation's `uses` (and every metered call, when calls are limited) charges against
/// the limits of `profile`; unlimited resources are not counted.
fn charges(profile: &Profile, scope: &str, uses: Vec<(Resource, Vec<String>)>, metered: bool) -> Vec<Charge> {
    let call = metered.then(|| (Resource::MaxApiCalls, vec![uuid::Uuid::new_v4().simple().to_string()]));
    uses.into_iter()
        .chain(call)
        .filter_map(|(resource, items)| {
            let limit = profile.resource_limits.count(resource).max()?;
            Some(Charge {
                resource,
                scope: scope.to_string(),
                items,
                limit,
            })
        })
        .collect()
}

/// The parameters an audit row records: the request as the operation understood it.
fn audit_parameters<T: Serialize>(req: &T) -> Value {
    serde_json::to_value(req).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a request would not serialize for the audit row");
        Value::Null
    })
}

impl Coordinator {
    /// Runs `O` for a typed request (in-process callers: CLI, hooks, bench, tests), and
    /// then what its outcome leaves to do.
    pub async fn run<O: Operation>(&self, who: &Principal, req: O::Request) -> CoordResult<O::Response> {
        let (answer, follow_ups) = self.run_only::<O>(who, req).await;
        self.follow(follow_ups).await;
        answer
    }

    /// Runs `O` and answers its follow-ups instead of running them: for the follow-up
    /// mechanism, which runs them in its own loop rather than nested.
    pub(crate) async fn run_only<O: Operation>(
        &self,
        who: &Principal,
        req: O::Request,
    ) -> (CoordResult<O::Response>, Vec<FollowUp>) {
        let parameters = audit_parameters(&req);
        let answer = self.pipeline::<O>(who, parameters, Ok(req)).await;
        let follow_ups = O::follow_ups(&answer);
        (answer, follow_ups)
    }

    /// Runs `O` for a JSON request, or for the error a door met reading one (it is
    /// audited like any other refusal); answers the wire JSON.
    pub(crate) async fn run_json<O: Operation>(&self, who: &Principal, raw: CoordResult<Value>) -> CoordResult<Value> {
        let (parameters, parsed) = match raw {
            Ok(value) => match parse_named::<O::Request>(&value) {
                Ok(req) => (audit_parameters(&req), Ok(req)),
                Err(e) => (value, Err(e)),
            },
            Err(e) => (Value::Null, Err(e)),
        };
        let answer = self.pipeline::<O>(who, parameters, parsed).await;
        self.follow(O::follow_ups(&answer)).await;
        serde_json::to_value(answer?).map_err(|e| {
            tracing::error!(operation = O::NAME, error = %e, "a response would not serialize");
            CoordError::internal()
        })
    }

    async fn pipeline<O: Operation>(
        &self,
        who: &Principal,
        parameters: Value,
        parsed: CoordResult<O::Request>,
    ) -> CoordResult<O::Response> {
        // Each attempt on the heap: follow-ups an operation runs for its answer (a
        // workflow's first agents spawned) nest a pipeline in it, and a debug build's
        // stack would not hold them.
        let speculate = O::POLICY_FROM_LAST_CALL && self.store.verifies_policy();
        if !speculate {
            return Box::pin(self.attempt::<O>(who, parameters, parsed, false)).await;
        }
        // Decided on the caller's last facts; when the store found them changed (nothing
        // committed, nothing audited), decided again on the facts of the moment.
        match Box::pin(self.attempt::<O>(who, parameters.clone(), parsed.clone(), true)).await {
            Err(e) if e.code == ErrorCode::PolicyChanged => {
                if let Ok(id) = who.caller.validate() {
                    self.policy_cache.forget(&id.agent_id, &id.agent_type);
                }
                Box::pin(self.attempt::<O>(who, parameters, parsed, false)).await
            }
            other => other,
        }
    }

    async fn attempt<O: Operation>(
        &self,
        who: &Principal,
        parameters: Value,
        parsed: CoordResult<O::Request>,
        speculate: bool,
    ) -> CoordResult<O::Response> {
        // One span per operation (exported when OpenTelemetry is on: coord-cli's
        // telemetry): the operation, the agent, the outcome, the time in the store.
        let span = tracing::info_span!(
            "coord.operation",
            otel.name = O::NAME,
            coord.operation = O::NAME,
            coord.agent_id = %who.caller.agent_id,
            coord.agent_type = %who.caller.agent_type,
            coord.outcome = tracing::field::Empty,
            coord.store_ms = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        async move {
            let started = Instant::now();
            let mut ctx = OpCtx {
                now: self.clock.now(),
                who: who.caller.for_audit(),
                operation: O::NAME,
                parameters,
                started,
                redact: O::AUDIT_REDACT,
                charges: Vec::new(),
                escalation: None,
                origin: who.origin.clone(),
                audit_admin: false,
                credential: who.credential,
                events: O::AUDIT_EVENTS,
                lock_before_write: false,
                egress: None,
                policy: None,
            };
            // A body the door could not read carries the identity it claims too: an
            // authenticated caller is told what is wrong with it, rather than refused as
            // the default identity it left. (Without a key, the key is what is wrong.)
            let unreadable = parsed
                .as_ref()
                .err()
                .filter(|e| matches!(e.code, ErrorCode::InvalidJson | ErrorCode::PayloadTooLarge))
                .filter(|_| who.credential != Credential::Anonymous)
                .cloned();
            let admitted = match unreadable {
                Some(e) => Err(e),
                None => self.admit::<O>(&mut ctx, who, speculate).await,
            };
            // A refusal of the caller, not a store that could not answer.
            let denied = admitted.as_ref().is_err_and(|e| {
                !matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Internal)
                    && !matches!(e.code, ErrorCode::InvalidJson | ErrorCode::PayloadTooLarge)
            });
            let prepared = match admitted.and_then(|granted| Ok((granted, parsed?))) {
                Ok((granted, mut req)) => match self.whole_ids::<O>(&mut ctx, &mut req).await {
                    Ok(()) => self.prepare::<O>(&mut ctx, who, granted, req),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            let prepared = match prepared {
                Ok(args) => {
                    // Timed only for a span someone listens to (OpenTelemetry on, or logs).
                    let span = tracing::Span::current();
                    let store = (!span.is_disabled()).then(Instant::now);
                    let done = O::execute(self, ctx, args).await;
                    if let Some(store) = store {
                        span.record("coord.store_ms", store.elapsed().as_secs_f64() * 1e3);
                    }
                    done
                }
                // Refused before the store could check the facts it was decided on (a
                // limit of the cached profile, a bad request): decided again on facts read
                // now, and audited then, once.
                Err(_) if ctx.policy.is_some() => Err(PolicyCheck::changed()),
                Err(e) => {
                    if O::AUDIT == Audit::Always {
                        let record = ctx.audit::<()>(Err(&e));
                        self.append_refusal(&ctx, if denied { record.tool_denied() } else { record })
                            .await;
                    }
                    Err(e)
                }
            };
            let outcome = prepared.as_ref().err().map_or("ok", |e| e.code.as_str());
            let span = tracing::Span::current();
            span.record("coord.outcome", outcome);
            if outcome != "ok" {
                span.record("error.type", outcome);
                span.record("otel.status_code", "error");
            }
            self.metrics.observe(O::NAME, outcome, started.elapsed());
            // A refused read is a change too: it left a refusal row, and a guardrail
            // block an approval request and a violation. Not a caller without a key:
            // anyone could wake every dashboard (each of them reading again) at will.
            // (A caller without a key may only read, so it changes nothing.)
            if who.credential != Credential::Anonymous && (O::EFFECT != Effect::Read || outcome != "ok") {
                self.metrics.changed(|| crate::metrics::Change {
                    operation: O::NAME,
                    agent_id: who.caller.agent_id.clone(),
                    agent_type: who.caller.agent_type.clone(),
                    outcome,
                });
            }
            prepared
        }
        .instrument(span)
        .await
    }

    /// Whether the caller may run the operation at all: a valid identity (once valid,
    /// `ctx` carries it, so refusals are audited under the trimmed name), access for its
    /// credential, its profile. A refusal here is a `tool_execution_denied`.
    async fn admit<O: Operation>(
        &self,
        ctx: &mut OpCtx,
        who: &Principal,
        speculate: bool,
    ) -> CoordResult<Option<(Profile, String)>> {
        ctx.who = who.caller.validate()?;
        coord_domain::access::admit(
            who.credential,
            O::ACCESS,
            O::NEED.permission.is_administrative(),
            O::NAME,
        )?;
        // An agent coord spawned acts through its key only while its run is active. (Its
        // supervisor, a local process, still ends its session and task afterwards.)
        let spawned = match who.credential {
            Credential::Bound if ctx.who.agent_type == coord_domain::agents::spawn::AGENT_TYPE => {
                self.store.spawned_agent(&ctx.who.agent_id).await?.map(|(a, _)| a)
            }
            _ => None,
        };
        let call = Call {
            operation: O::NAME,
            need: O::NEED,
            credential: who.credential,
            origin: who.origin.as_ref(),
            spawned: spawned.as_ref(),
        };
        let granted = self.policy_stage(&call, &ctx.who, speculate, &mut ctx.policy).await?;
        if let Some(agent) = &spawned {
            coord_domain::agents::spawn::check_activation(agent, None)?;
        }
        Ok(granted)
    }

    /// Spec 000's activation check for an agent coord spawned (other callers pass): it
    /// must be active, and `tool`, when given, one of its declared tools.
    pub(crate) async fn check_activation(&self, who: &Identity, tool: Option<&str>) -> CoordResult<()> {
        if who.agent_type != coord_domain::agents::spawn::AGENT_TYPE {
            return Ok(());
        }
        match self.store.spawned_agent(&who.agent_id).await? {
            Some((agent, _)) => coord_domain::agents::spawn::check_activation(&agent, tool),
            None => Ok(()),
        }
    }

    /// Puts the whole id in place of each unique prefix the request names one by
    /// ([`Operation::ids`]): one read per prefix, none for whole ids. The audit row (and an
    /// approval's request hash) then holds the request with the whole ids.
    async fn whole_ids<O: Operation>(&self, ctx: &mut OpCtx, req: &mut O::Request) -> CoordResult<()> {
        let slots = O::ids(req);
        // Before any read: a request naming more ids than any operation takes is refused
        // here, not after a read per id. Each prefix is read once.
        ids::check_count(slots.first().map(|s| s.field), slots.len())?;
        let mut known: HashMap<(ids::IdKind, String), String> = HashMap::new();
        for slot in slots {
            let Some(prefix) = ids::prefix_of(slot.kind, slot.value) else {
                continue;
            };
            let key = (slot.kind, prefix.text.clone());
            let whole = match known.get(&key) {
                Some(whole) => whole.clone(),
                None => {
                    let found = self
                        .store
                        .ids_in_range(&prefix, &ctx.who.agent_id, ids::MAX_CANDIDATES)
                        .await?;
                    ids::resolve(&prefix, slot.field, slot.missing, found)?
                }
            };
            *slot.value = whole.clone();
            known.insert(key, whole);
        }
        // Something was resolved: the audit row holds the whole ids.
        if !known.is_empty() {
            ctx.parameters = audit_parameters(&*req);
        }
        Ok(())
    }

    /// The steps after admission and parsing: validation, then the charges against the
    /// profile's limits; the first refusal wins.
    fn prepare<O: Operation>(
        &self,
        ctx: &mut OpCtx,
        who: &Principal,
        granted: Option<(Profile, String)>,
        req: O::Request,
    ) -> CoordResult<O::Args> {
        let args = O::validate(self, &ctx.who, req)?;
        ctx.audit_admin = who.credential == Credential::Operator
            || granted.as_ref().is_some_and(|(profile, _)| {
                profiles::decide(profile, O::NAME, Need::admin(Permission::ManageAudit)).is_ok()
            });
        if let Some((profile, scope)) = granted {
            ctx.lock_before_write = profile.guardrails.iter().any(|g| g == profiles::LOCK_BEFORE_WRITE);
            ctx.egress = Some(coord_domain::network::EgressProfile::of(&profile));
            if let Some(r) = O::unbounded(&args)
                && let Some(max) = profile.resource_limits.count(r).max()
            {
                return Err(profiles::limit_exceeded(
                    r,
                    format!(
                        "a directory or glob covers any number of files, and profile {} allows {max} ({}): lock the files one by one",
                        profile.name,
                        r.as_str()
                    ),
                )
                .with_detail("max", max));
            }
            ctx.charges = charges(&profile, &scope, O::uses(&args), O::METERED);
            // Hashed as received, unredacted: a grant is for exactly this request.
            ctx.escalation = Some(Escalation {
                params_hash: approvals::params_hash(&ctx.parameters),
                limits: profile.escalation,
            });
        }
        Ok(args)
    }

    /// The caller's profile and usage scope ([`decide`]), or `None` for an operator key
    /// running an administrative operation (operator keys administer, whoever they
    /// name). With `speculate`, decided on the caller's last facts when they grant the
    /// call, and `check` set for the store to confirm them.
    async fn policy_stage(
        &self,
        call: &Call<'_>,
        id: &Identity,
        speculate: bool,
        check: &mut Option<PolicyCheck>,
    ) -> CoordResult<Option<(Profile, String)>> {
        if call.credential == Credential::Operator && call.need.permission.is_administrative() {
            return Ok(None);
        }
        // The caller's last facts, checked by the store in the operation's transaction. A
        // refusal is never decided on them: it is decided again on facts read now.
        if let Some((read, now)) = speculate
            .then(|| self.policy_cache.get(&id.agent_id, &id.agent_type, self.clock.now()))
            .flatten()
            && let Ok(granted) = decide(call, id, &now)
            // The execution-time limit is judged on the database's time of the moment.
            && !(call.need.starts_work && granted.0.resource_limits.max_execution_time.max().is_some())
        {
            *check = Some(PolicyCheck {
                agent_id: id.agent_id.clone(),
                agent_type: id.agent_type.clone(),
                facts: read,
                rules: None,
            });
            return Ok(Some(granted));
        }
        let facts = self
            .store
            .policy_facts(self.clock.now(), &id.agent_id, Some(&id.agent_type), UsageOf::Nothing)
            .await?;
        if self.store.verifies_policy() {
            self.policy_cache.put(&id.agent_id, &id.agent_type, facts.clone());
        }
        decide(call, id, &facts).map(Some)
    }

    /// Audits the success of an operation whose change is not in the store (a port
    /// block), in a row of its own.
    pub(crate) async fn audit_success<T: Serialize>(&self, ctx: &OpCtx, answer: &T) {
        if let Err(audit_err) = self.store.append_audit(ctx.now, ctx.audit(Ok(answer))).await {
            tracing::warn!(operation = ctx.operation, error = %audit_err, "could not audit an operation");
        }
    }

    pub(crate) async fn audit_refusal(&self, ctx: &OpCtx, e: &CoordError) {
        self.append_refusal(ctx, ctx.audit::<()>(Err(e))).await
    }

    /// Audits a refusal of the caller met during execution as spec 000's
    /// `tool_execution_denied` event.
    pub(crate) async fn audit_denial(&self, ctx: &OpCtx, e: &CoordError) {
        self.append_refusal(ctx, ctx.audit::<()>(Err(e)).tool_denied()).await
    }

    async fn append_refusal(&self, ctx: &OpCtx, record: AuditRecord) {
        if let Err(audit_err) = self.store.append_audit(ctx.now, record).await {
            // The refusal still reaches the caller; the lost audit row is logged.
            tracing::warn!(operation = ctx.operation, error = %audit_err, "could not audit a refused operation");
        }
    }
}

/// What the profile is asked about: the operation, and who calls it how.
struct Call<'a> {
    operation: &'static str,
    need: Need,
    credential: Credential,
    origin: Option<&'a KeyOrigin>,
    spawned: Option<&'a coord_domain::agents::spawn::SpawnedAgent>,
}

/// The caller's profile decides (see `coord_domain::profiles::decide`): the agent id's
/// assignment, else its type's default, else least privilege. Answers the profile and
/// the usage scope its limits are counted in. A spawned agent's profile has what its
/// definition adds (delegation). A request that came with a managed key is counted per
/// key, and its time runs from the key's issue: a key is issued for one cloud session or
/// task, and registering a new coordinator session must not reset what its agent may
/// still do.
fn decide(call: &Call<'_>, id: &Identity, facts: &coord_store::PolicyFacts) -> CoordResult<(Profile, String)> {
    let (profile, source) = profiles::resolve(facts.by_agent.clone(), facts.by_type.clone());
    let profile = profiles::within_reach(profile, source, call.credential);
    let profile = match call.spawned {
        Some(agent) => coord_domain::agents::spawn::delegation_grant(profile, agent),
        None => profile,
    };
    profiles::decide(&profile, call.operation, call.need).map_err(|e| match call.spawned {
        // A spawned agent's profile is its definition's: no type of its own to set.
        Some(_) => e,
        None => profiles::with_unassigned_hint(e, source),
    })?;
    let started = match call.origin {
        Some(key) => key.issued_at,
        None => facts.session.as_ref().map(|s| s.1),
    };
    if call.need.starts_work
        && let Some(started) = started
    {
        profiles::check_execution_time(&profile, started, facts.now)?;
    }
    let scope = match call.origin {
        Some(key) => profiles::key_scope(&key.key_id),
        None => profiles::usage_scope(&id.agent_id, facts.session.as_ref().map(|s| s.0.as_str())),
    };
    Ok((profile, scope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coord_domain::locks::AcquireLockRequest;
    use serde_json::json;

    #[test]
    fn parse_errors_name_the_field() {
        let cases = [
            (json!({"ttl_minutes": 5}), Some("file_path")),
            (json!({"file_path": "a", "ttl_minutes": "soon"}), Some("ttl_minutes")),
            (json!([1]), None),
            (json!("x"), None),
        ];
        for (raw, field) in cases {
            let e = parse_named::<AcquireLockRequest>(&raw).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{raw}");
            assert_eq!(e.field.as_deref(), field, "{raw}");
        }
        let ok: AcquireLockRequest = parse_named(&json!({"file_path": "a"})).unwrap();
        assert_eq!(ok.file_path, "a");
    }
}
