//! The operation definitions, one module per capability. Each `impl Operation` is the
//! whole service-side cost of an operation; its store methods sit beside their SQL.

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod files;
pub mod github;
pub(crate) mod github_sync;
pub mod guardrails;
pub mod handoffs;
pub mod keys;
pub mod locks;
pub mod memory;
pub mod messages;
pub mod network;
pub mod notifications;
pub mod overrides;
pub mod ports;
pub mod profiles;
pub mod queue;
pub mod sessions;
pub mod spawn;
pub mod verification;
pub mod workflows;

/// Audits an operation's answer (operations that read through unaudited store methods)
/// and answers it.
pub(crate) async fn answer<T: serde::Serialize>(
    c: &crate::Coordinator,
    ctx: &coord_store::OpCtx,
    result: T,
) -> coord_domain::CoordResult<T> {
    c.store().append_audit(ctx.now, ctx.audit(Ok(&result))).await?;
    Ok(result)
}

/// Audits a refusal met after admission, and answers it.
pub(crate) async fn refuse<T>(
    c: &crate::Coordinator,
    ctx: &coord_store::OpCtx,
    e: coord_domain::CoordError,
) -> coord_domain::CoordResult<T> {
    c.audit_refusal(ctx, &e).await;
    Err(e)
}
