//! `network_policies` and `network_access_log`: egress policies and every decision.

use crate::rows::{json, to_json, ts};
use crate::{Fail, R, SqliteStore};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::network::{
    AccessLogFilter, CheckNetworkAccessResult, MAX_POLICIES, NetworkAccess, NetworkAccessRow, NetworkPolicy, PolicyRow,
    no_policy_row, too_many_policies,
};
use coord_store::{NetworkStore, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

const SELECT: &str = "SELECT policy, updated_by, updated_at FROM network_policies";

fn from_row(r: &Row) -> rusqlite::Result<PolicyRow> {
    Ok(PolicyRow {
        policy: json(r, 0)?,
        updated_by: r.get(1)?,
        updated_at: ts(r, 2)?,
    })
}

fn all(c: &Connection) -> R<Vec<PolicyRow>> {
    Ok(c.prepare_cached(&format!("{SELECT} ORDER BY name"))?
        .query_map([], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

fn set(c: &Connection, now: i64, by: &str, policy: &NetworkPolicy) -> R<PolicyRow> {
    let exists = c
        .prepare_cached("SELECT 1 FROM network_policies WHERE name = ?1")?
        .query_row([&policy.name], |_| Ok(()))
        .optional()?
        .is_some();
    let count: i64 = c.query_row("SELECT count(*) FROM network_policies", [], |r| r.get(0))?;
    if !exists && count >= MAX_POLICIES as i64 {
        return Err(Fail::Coord(too_many_policies()));
    }
    c.prepare_cached(
        "INSERT INTO network_policies (name, policy, updated_by, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET policy = excluded.policy, updated_by = excluded.updated_by,
             updated_at = excluded.updated_at",
    )?
    .execute(params![policy.name, to_json(policy), by, now])?;
    Ok(c.prepare_cached(&format!("{SELECT} WHERE name = ?1"))?
        .query_row([&policy.name], from_row)?)
}

fn delete(c: &Connection, name: &str) -> R<String> {
    if c.prepare_cached("DELETE FROM network_policies WHERE name = ?1")?
        .execute([name])?
        == 0
    {
        return Err(Fail::Coord(no_policy_row(name)));
    }
    Ok(name.to_string())
}

/// Appends a row of the access log (also the operation wrapper's, for refusals).
pub fn insert(c: &Connection, now: i64, ctx: &OpCtx, a: &NetworkAccess) -> R<()> {
    c.prepare_cached(
        "INSERT INTO network_access_log (timestamp, agent_id, agent_type, host, port, allowed, alert, policy, reason, rule)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        now,
        a.agent_id,
        ctx.who.agent_type,
        a.host,
        a.port,
        a.allowed,
        a.alert,
        a.policy,
        a.reason,
        a.rule
    ])?;
    Ok(())
}

fn log(c: &Connection, f: &AccessLogFilter) -> R<Vec<NetworkAccessRow>> {
    Ok(c.prepare_cached(
        "SELECT id, timestamp, agent_id, host, port, allowed, alert, policy, reason, rule FROM network_access_log
         WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR allowed = ?2)
         ORDER BY id DESC LIMIT ?3",
    )?
    .query_map(params![f.agent_id, f.allowed, f.limit], |r| {
        Ok(NetworkAccessRow {
            id: r.get(0)?,
            at: ts(r, 1)?,
            access: NetworkAccess {
                agent_id: r.get(2)?,
                host: r.get(3)?,
                port: r.get(4)?,
                allowed: r.get(5)?,
                alert: r.get(6)?,
                policy: r.get(7)?,
                reason: r.get(8)?,
                rule: r.get(9)?,
            },
        })
    })?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

#[async_trait]
impl NetworkStore for SqliteStore {
    async fn network_policy_rows(&self) -> CoordResult<Vec<PolicyRow>> {
        self.read(all).await
    }

    async fn list_network_policy_rows(&self, ctx: OpCtx) -> CoordResult<Vec<PolicyRow>> {
        self.op(ctx, |c, _, _| all(c)).await
    }

    async fn set_network_policy(&self, ctx: OpCtx, policy: NetworkPolicy) -> CoordResult<PolicyRow> {
        self.op(ctx, move |c, now, who| set(c, now, &who.agent_id, &policy))
            .await
    }

    async fn delete_network_policy(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, move |c, _, _| delete(c, &name)).await
    }

    async fn network_decision(
        &self,
        ctx: OpCtx,
        outcome: CoordResult<CheckNetworkAccessResult>,
        provisional: bool,
    ) -> CoordResult<CheckNetworkAccessResult> {
        let me = ctx.clone();
        self.op(ctx, move |c, now, who| {
            let r = outcome?;
            if !provisional {
                insert(c, now, &me, &NetworkAccess::of_pass(&who.agent_id, &r))?;
            }
            Ok(r)
        })
        .await
    }

    async fn network_access_log(&self, ctx: OpCtx, filter: AccessLogFilter) -> CoordResult<Vec<NetworkAccessRow>> {
        self.op(ctx, move |c, _, _| log(c, &filter)).await
    }
}
