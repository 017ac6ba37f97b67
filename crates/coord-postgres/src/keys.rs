//! `api_keys`.

use crate::Db;
use crate::PgStore;
use crate::rows::{NOW, get, int};
use crate::{R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::keys::{ApiKeyInfo, KeyMatch, ListApiKeysResult, NewApiKey, RevokeApiKeyResult, status_of};
use coord_domain::{CoordError, Timestamp};
use coord_store::KeyStore;
use coord_store::OpCtx;
use tokio_postgres::Row;

const KEY_COLS: &str =
    "key_id, agent_id, agent_type, created_by, created_at, expires_at, revoked_at, session_id, task_id";

fn key_from_row(r: &Row, now: Timestamp) -> R<ApiKeyInfo> {
    let (expires_at, revoked_at): (Option<Timestamp>, Option<Timestamp>) = (get(r, 5)?, get(r, 6)?);
    Ok(ApiKeyInfo {
        key_id: get(r, 0)?,
        agent_id: get(r, 1)?,
        agent_type: get(r, 2)?,
        created_by: get(r, 3)?,
        created_at: get(r, 4)?,
        status: status_of(expires_at, revoked_at, now),
        expires_at,
        revoked_at,
        session_id: get(r, 7)?,
        task_id: get(r, 8)?,
    })
}

pub async fn create(tx: &Tx<'_>, ctx: &OpCtx, k: &NewApiKey) -> R<ApiKeyInfo> {
    let row = tx
        .query_one(
            &tx.prepare_cached(&format!(
                "INSERT INTO api_keys (key_id, key_hash, agent_id, agent_type, created_by, created_at, expires_at,
                                       session_id, task_id)
                 VALUES ($2, $3, $4, $5, $6, {NOW},
                         CASE WHEN $7::integer IS NULL THEN NULL ELSE {NOW} + make_interval(mins => $7) END, $8, $9)
                 RETURNING {KEY_COLS}, {NOW}"
            ))
            .await?,
            &[
                &ctx.now,
                &k.key_id,
                &k.key_hash,
                &k.agent.agent_id,
                &k.agent.agent_type,
                &ctx.who.agent_id,
                &k.expires_in_minutes.map(int),
                &k.session_id,
                &k.task_id,
            ],
        )
        .await?;
    key_from_row(&row, get(&row, 9)?)
}

pub async fn list(tx: &Tx<'_>, ctx: &OpCtx) -> R<ListApiKeysResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {KEY_COLS}, {NOW} FROM api_keys ORDER BY created_at, key_id COLLATE \"C\""
            ))
            .await?,
            &[&ctx.now],
        )
        .await?;
    let keys = rows.iter().map(|r| key_from_row(r, get(r, 9)?)).collect::<R<_>>()?;
    Ok(ListApiKeysResult { keys })
}

#[allow(clippy::ptr_arg)] // the shape of an `OpFn` over a `String`
pub async fn revoke(tx: &Tx<'_>, ctx: &OpCtx, key_id: &String) -> R<RevokeApiKeyResult> {
    let row = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, {NOW}) WHERE key_id = $2 RETURNING key_id"
            ))
            .await?,
            &[&ctx.now, key_id],
        )
        .await?;
    match row {
        Some(_) => Ok(RevokeApiKeyResult {
            success: true,
            key_id: key_id.clone(),
        }),
        None => Err(coord_domain::keys::key_not_found(key_id).into()),
    }
}

pub async fn authenticate<C: Db>(c: &C, now: Option<Timestamp>, key_hash: &str) -> R<Option<KeyMatch>> {
    let row = c
        .query_opt(
            &c.prepare_cached(&format!("SELECT {KEY_COLS}, {NOW} FROM api_keys WHERE key_hash = $2"))
                .await?,
            &[&now, &key_hash],
        )
        .await?;
    row.map(|r| Ok(key_from_row(&r, get(&r, 9)?)?.into_match())).transpose()
}

#[async_trait]
impl KeyStore for PgStore {
    async fn create_api_key(&self, ctx: OpCtx, key: NewApiKey) -> CoordResult<ApiKeyInfo> {
        self.op(ctx, key, |tx, ctx, a| Box::pin(create(tx, ctx, a))).await
    }

    async fn list_api_keys(&self, ctx: OpCtx) -> CoordResult<ListApiKeysResult> {
        self.op(ctx, (), |tx, ctx, _| Box::pin(list(tx, ctx))).await
    }

    async fn revoke_api_key(&self, ctx: OpCtx, key_id: String) -> CoordResult<RevokeApiKeyResult> {
        self.op(ctx, key_id, |tx, ctx, a| Box::pin(revoke(tx, ctx, a))).await
    }

    async fn authenticate_key(&self, now: Option<Timestamp>, key_hash: String) -> CoordResult<Option<KeyMatch>> {
        let client = self.client().await?;
        authenticate(&client, now, &key_hash).await.map_err(CoordError::from)
    }
}
