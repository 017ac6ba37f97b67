//! `network_policies` and `network_access_log`: egress policies and every decision.

use crate::Db;
use crate::rows::{NOW, get};
use crate::{Fail, PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::network::{
    AccessLogFilter, CheckNetworkAccessResult, MAX_POLICIES, NetworkAccess, NetworkAccessRow, NetworkPolicy, PolicyRow,
    no_policy_row, too_many_policies,
};
use coord_domain::{CoordError, CoordResult};
use coord_store::{NetworkStore, OpCtx};
use tokio_postgres::Row;
use tokio_postgres::types::Json;

const SELECT: &str = "SELECT policy, updated_by, updated_at FROM network_policies";

fn from_row(r: &Row) -> R<PolicyRow> {
    let Json(policy) = get::<Json<NetworkPolicy>>(r, 0)?;
    Ok(PolicyRow {
        policy,
        updated_by: get(r, 1)?,
        updated_at: get(r, 2)?,
    })
}

async fn all<C: Db>(c: &C) -> R<Vec<PolicyRow>> {
    let rows = c
        .query(&c.prepare_cached(&format!("{SELECT} ORDER BY name")).await?, &[])
        .await?;
    rows.iter().map(from_row).collect()
}

async fn set(tx: &Tx<'_>, ctx: &OpCtx, policy: &NetworkPolicy) -> R<PolicyRow> {
    // Serialises writers, so two cannot both pass the row limit.
    tx.execute("LOCK TABLE network_policies IN SHARE ROW EXCLUSIVE MODE", &[])
        .await?;
    let exists = tx
        .query_opt("SELECT 1 FROM network_policies WHERE name = $1", &[&policy.name])
        .await?
        .is_some();
    let count: i64 = get(&tx.query_one("SELECT count(*) FROM network_policies", &[]).await?, 0)?;
    if !exists && count >= MAX_POLICIES as i64 {
        return Err(Fail::Coord(too_many_policies()));
    }
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO network_policies (name, policy, updated_by, updated_at) VALUES ($2, $3, $4, {NOW})
                 ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, updated_by = excluded.updated_by,
                     updated_at = excluded.updated_at
                 RETURNING policy, updated_by, updated_at"
            ),
            &[&ctx.now, &policy.name, &Json(policy), &ctx.who.agent_id],
        )
        .await?;
    from_row(&row)
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
async fn delete(tx: &Tx<'_>, name: &String) -> R<String> {
    if tx
        .execute("DELETE FROM network_policies WHERE name = $1", &[name])
        .await?
        == 0
    {
        return Err(Fail::Coord(no_policy_row(name)));
    }
    Ok(name.clone())
}

/// Appends a row of the access log (also the refusal path's, for refusals).
pub async fn insert<C: Db>(c: &C, ctx: &OpCtx, a: &NetworkAccess) -> R<()> {
    c.execute(
        &c.prepare_cached(&format!(
            "INSERT INTO network_access_log (\"timestamp\", agent_id, agent_type, host, port, allowed, alert, policy,
                 reason, rule)
             VALUES ({NOW}, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .await?,
        &[
            &ctx.now,
            &a.agent_id,
            &ctx.who.agent_type,
            &a.host,
            &i32::from(a.port),
            &a.allowed,
            &a.alert,
            &a.policy,
            &a.reason,
            &a.rule,
        ],
    )
    .await?;
    Ok(())
}

async fn log(tx: &Tx<'_>, f: &AccessLogFilter) -> R<Vec<NetworkAccessRow>> {
    let rows = tx
        .query(
            "SELECT id, \"timestamp\", agent_id, host, port, allowed, alert, policy, reason, rule
             FROM network_access_log
             WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::boolean IS NULL OR allowed = $2)
             ORDER BY id DESC LIMIT $3",
            &[&f.agent_id, &f.allowed, &i64::from(f.limit)],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(NetworkAccessRow {
                id: get(r, 0)?,
                at: get(r, 1)?,
                access: NetworkAccess {
                    agent_id: get(r, 2)?,
                    host: get(r, 3)?,
                    port: u16::try_from(get::<i32>(r, 4)?).unwrap_or_default(),
                    allowed: get(r, 5)?,
                    alert: get(r, 6)?,
                    policy: get(r, 7)?,
                    reason: get(r, 8)?,
                    rule: get(r, 9)?,
                },
            })
        })
        .collect()
}

/// A decision and whether it is provisional (see `NetworkStore::network_decision`).
type Outcome = (CoordResult<CheckNetworkAccessResult>, bool);

async fn pass(tx: &Tx<'_>, ctx: &OpCtx, (outcome, provisional): &Outcome) -> R<CheckNetworkAccessResult> {
    let r = outcome.clone().map_err(Fail::Coord)?;
    if !provisional {
        insert(tx, ctx, &NetworkAccess::of_pass(&ctx.who.agent_id, &r)).await?;
    }
    Ok(r)
}

#[async_trait]
impl NetworkStore for PgStore {
    async fn network_policy_rows(&self) -> CoordResult<Vec<PolicyRow>> {
        let client = self.client().await?;
        all(&client).await.map_err(CoordError::from)
    }

    async fn list_network_policy_rows(&self, ctx: OpCtx) -> CoordResult<Vec<PolicyRow>> {
        self.op(ctx, (), |tx, _, _| Box::pin(all(tx))).await
    }

    async fn set_network_policy(&self, ctx: OpCtx, policy: NetworkPolicy) -> CoordResult<PolicyRow> {
        self.op(ctx, policy, |tx, ctx, p| Box::pin(set(tx, ctx, p))).await
    }

    async fn delete_network_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, name, |tx, _, n| Box::pin(delete(tx, n))).await
    }

    async fn network_decision(
        &self,
        ctx: OpCtx,
        outcome: CoordResult<CheckNetworkAccessResult>,
        provisional: bool,
    ) -> CoordResult<CheckNetworkAccessResult> {
        self.op(ctx, (outcome, provisional), |tx, ctx, o| Box::pin(pass(tx, ctx, o)))
            .await
    }

    async fn network_access_log(&self, ctx: OpCtx, filter: AccessLogFilter) -> CoordResult<Vec<NetworkAccessRow>> {
        self.op(ctx, filter, |tx, _, f| Box::pin(log(tx, f))).await
    }
}
