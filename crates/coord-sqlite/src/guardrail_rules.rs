//! `operation_guardrails`: the editable part of the guardrails' pattern registry.

use crate::rows::ts;
use crate::{Fail, R, SqliteStore};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::guardrail_rules::{GuardrailRule, MAX_RULES, NewRule, no_row, too_many_rules};
use coord_store::{GuardrailRows, GuardrailStore, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

fn from_row(r: &Row) -> rusqlite::Result<GuardrailRule> {
    Ok(GuardrailRule {
        name: r.get(0)?,
        // A pattern that does not read back is an error, never a missing pattern (the
        // check would otherwise run without it).
        pattern: match r.get::<_, Option<String>>(1)? {
            None => None,
            Some(p) => {
                Some(serde_json::from_str(&p).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
                })?)
            }
        },
        enabled: r.get(2)?,
        updated_by: r.get(3)?,
        updated_at: ts(r, 4)?,
    })
}

const SELECT: &str = "SELECT name, pattern, enabled, updated_by, updated_at FROM operation_guardrails";

fn all(c: &Connection) -> R<Vec<GuardrailRule>> {
    Ok(c.prepare_cached(&format!("{SELECT} ORDER BY name"))?
        .query_map([], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

fn set(c: &Connection, now: i64, by: &str, rule: &NewRule) -> R<GuardrailRule> {
    let exists: bool = c
        .prepare_cached("SELECT 1 FROM operation_guardrails WHERE name = ?1")?
        .query_row([&rule.name], |_| Ok(()))
        .optional()?
        .is_some();
    let count: i64 = c.query_row("SELECT count(*) FROM operation_guardrails", [], |r| r.get(0))?;
    if !exists && count >= MAX_RULES as i64 {
        return Err(Fail::Coord(too_many_rules()));
    }
    c.prepare_cached(
        "INSERT INTO operation_guardrails (name, pattern, enabled, updated_by, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (name) DO UPDATE SET pattern = COALESCE(excluded.pattern, operation_guardrails.pattern),
             enabled = excluded.enabled,
             updated_by = excluded.updated_by, updated_at = excluded.updated_at",
    )?
    .execute(params![
        rule.name,
        rule.pattern.as_ref().map(|p| p.to_string()),
        rule.enabled,
        by,
        now
    ])?;
    Ok(c.prepare_cached(&format!("{SELECT} WHERE name = ?1"))?
        .query_row([&rule.name], from_row)?)
}

fn delete(c: &Connection, name: &str) -> R<String> {
    let n = c
        .prepare_cached("DELETE FROM operation_guardrails WHERE name = ?1")?
        .execute([name])?;
    if n == 0 {
        return Err(Fail::Coord(no_row(name)));
    }
    Ok(name.to_string())
}

#[async_trait]
impl GuardrailStore for SqliteStore {
    async fn guardrail_rules(&self) -> CoordResult<GuardrailRows> {
        let rows = self.read(all).await?;
        Ok(GuardrailRows { rows, digest: None })
    }

    async fn list_guardrail_rules(&self, ctx: OpCtx) -> CoordResult<Vec<GuardrailRule>> {
        self.op(ctx, |c, _, _| all(c)).await
    }

    async fn set_guardrail_rule(&self, ctx: OpCtx, rule: NewRule) -> CoordResult<GuardrailRule> {
        self.op(ctx, move |c, now, who| set(c, now, &who.agent_id, &rule)).await
    }

    async fn delete_guardrail_rule(&self, ctx: OpCtx, name: String) -> CoordResult<String> {
        self.op(ctx, move |c, _, _| delete(c, &name)).await
    }
}
