//! `operation_guardrails`: the editable part of the guardrails' pattern registry.

use crate::Db;
use crate::rows::{NOW, get};
use crate::{Fail, PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::guardrail_rules::{GuardrailRule, MAX_RULES, NewRule, no_row, too_many_rules};
use coord_domain::{CoordError, CoordResult};
use coord_store::{GuardrailRows, GuardrailStore, OpCtx};
use std::sync::LazyLock;
use tokio_postgres::Row;

const SELECT: &str = "SELECT name, pattern, enabled, updated_by, updated_at FROM operation_guardrails";

fn from_row(r: &Row) -> R<GuardrailRule> {
    Ok(GuardrailRule {
        name: get(r, 0)?,
        pattern: get(r, 1)?,
        enabled: get(r, 2)?,
        updated_by: get(r, 3)?,
        updated_at: get(r, 4)?,
    })
}

async fn all<C: Db>(c: &C) -> R<Vec<GuardrailRule>> {
    let rows = c
        .query(&c.prepare_cached(&format!("{SELECT} ORDER BY name")).await?, &[])
        .await?;
    rows.iter().map(from_row).collect()
}

/// The rows' fingerprint ([`GuardrailRows::digest`]) over `operation_guardrails g`.
/// A time is its epoch: a time's text depends on the connection's time zone.
const DIGEST: &str = "md5(coalesce(string_agg(row(g.name, g.pattern, g.enabled, g.updated_by,
    extract(epoch FROM g.updated_at))::text, E'\\n' ORDER BY g.name), ''))";

/// Every row and their fingerprint, in one statement (one snapshot): the fingerprint on
/// every row, and on one row of NULLs when there are none.
static WITH_DIGEST_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH d AS (SELECT {DIGEST} AS digest FROM operation_guardrails g)
         SELECT r.name, r.pattern, r.enabled, r.updated_by, r.updated_at, d.digest
         FROM d LEFT JOIN operation_guardrails r ON true ORDER BY r.name"
    )
});

/// Fails (`coord_expect`) unless the rows' fingerprint is still `$1`.
pub(crate) static RULES_HOLD_SQL: LazyLock<String> =
    LazyLock::new(|| format!("SELECT coord_expect({DIGEST} = $1) FROM operation_guardrails g"));

/// The rows' fingerprint as it stands.
pub(crate) static RULES_DIGEST_SQL: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {DIGEST} FROM operation_guardrails g"));

async fn with_digest<C: Db>(c: &C) -> R<GuardrailRows> {
    let read = c.query(&c.prepare_cached(&WITH_DIGEST_SQL).await?, &[]).await?;
    let mut rows = GuardrailRows::default();
    for r in &read {
        rows.digest = get(r, 5)?;
        if get::<Option<String>>(r, 0)?.is_some() {
            rows.rows.push(from_row(r)?);
        }
    }
    Ok(rows)
}

async fn set(tx: &Tx<'_>, ctx: &OpCtx, rule: &NewRule) -> R<GuardrailRule> {
    // Serialises writers of the registry, so two cannot both pass the row limit.
    tx.execute("LOCK TABLE operation_guardrails IN SHARE ROW EXCLUSIVE MODE", &[])
        .await?;
    let exists = tx
        .query_opt("SELECT 1 FROM operation_guardrails WHERE name = $1", &[&rule.name])
        .await?
        .is_some();
    let count: i64 = get(
        &tx.query_one("SELECT count(*) FROM operation_guardrails", &[]).await?,
        0,
    )?;
    if !exists && count >= MAX_RULES as i64 {
        return Err(Fail::Coord(too_many_rules()));
    }
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO operation_guardrails (name, pattern, enabled, updated_by, updated_at)
                 VALUES ($2, $3, $4, $5, {NOW})
                 ON CONFLICT (name) DO UPDATE SET pattern = COALESCE(excluded.pattern, operation_guardrails.pattern),
                     enabled = excluded.enabled,
                     updated_by = excluded.updated_by, updated_at = excluded.updated_at
                 RETURNING name, pattern, enabled, updated_by, updated_at"
            ),
            &[&ctx.now, &rule.name, &rule.pattern, &rule.enabled, &ctx.who.agent_id],
        )
        .await?;
    from_row(&row)
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
async fn delete(tx: &Tx<'_>, name: &String) -> R<String> {
    let n = tx
        .execute("DELETE FROM operation_guardrails WHERE name = $1", &[name])
        .await?;
    if n == 0 {
        return Err(Fail::Coord(no_row(name)));
    }
    Ok(name.clone())
}

#[async_trait]
impl GuardrailStore for PgStore {
    async fn guardrail_rules(&self) -> CoordResult<GuardrailRows> {
        let client = self.client().await?;
        with_digest(&client).await.map_err(CoordError::from)
    }

    async fn list_guardrail_rules(&self, ctx: OpCtx) -> CoordResult<Vec<GuardrailRule>> {
        self.op(ctx, (), |tx, _, _| Box::pin(all(tx))).await
    }

    async fn set_guardrail_rule(&self, ctx: OpCtx, rule: NewRule) -> CoordResult<GuardrailRule> {
        self.op(ctx, rule, |tx, ctx, r| Box::pin(set(tx, ctx, r))).await
    }

    async fn delete_guardrail_rule(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, name, |tx, _, n| Box::pin(delete(tx, n))).await
    }
}
