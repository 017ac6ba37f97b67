//! `api_keys`.

use crate::R;
use crate::rows::{minutes_to_micros, opt_ts, ts};
use crate::{SqliteStore, now_micros};
use async_trait::async_trait;
use coord_domain::Identity;
use coord_domain::keys::{ApiKeyInfo, KeyMatch, ListApiKeysResult, NewApiKey, RevokeApiKeyResult, status_of};
use coord_domain::time::from_micros;
use coord_domain::{CoordResult, Timestamp};
use coord_store::{KeyStore, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

const KEY_COLS: &str =
    "key_id, agent_id, agent_type, created_by, created_at, expires_at, revoked_at, session_id, task_id";

fn key_from_row(r: &Row, now: i64) -> rusqlite::Result<ApiKeyInfo> {
    let (expires_at, revoked_at) = (opt_ts(r, 5)?, opt_ts(r, 6)?);
    Ok(ApiKeyInfo {
        key_id: r.get(0)?,
        agent_id: r.get(1)?,
        agent_type: r.get(2)?,
        created_by: r.get(3)?,
        created_at: ts(r, 4)?,
        status: status_of(expires_at, revoked_at, from_micros(now)),
        expires_at,
        revoked_at,
        session_id: r.get(7)?,
        task_id: r.get(8)?,
    })
}

pub fn create(c: &Connection, now: i64, who: &Identity, k: &NewApiKey) -> R<ApiKeyInfo> {
    let expires = k.expires_in_minutes.map(|m| now + minutes_to_micros(m));
    Ok(c.prepare_cached(&format!(
        "INSERT INTO api_keys (key_id, key_hash, agent_id, agent_type, created_by, created_at, expires_at,
                               session_id, task_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING {KEY_COLS}"
    ))?
    .query_row(
        params![
            k.key_id,
            k.key_hash,
            k.agent.agent_id,
            k.agent.agent_type,
            who.agent_id,
            now,
            expires,
            k.session_id,
            k.task_id
        ],
        |r| key_from_row(r, now),
    )?)
}

pub fn list(c: &Connection, now: i64) -> R<ListApiKeysResult> {
    let keys = c
        .prepare_cached(&format!("SELECT {KEY_COLS} FROM api_keys ORDER BY created_at, key_id"))?
        .query_map([], |r| key_from_row(r, now))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ListApiKeysResult { keys })
}

pub fn revoke(c: &Connection, now: i64, key_id: &str) -> R<RevokeApiKeyResult> {
    let exists: Option<Option<i64>> = c
        .prepare_cached("SELECT revoked_at FROM api_keys WHERE key_id = ?1")?
        .query_row([key_id], |r| r.get(0))
        .optional()?;
    match exists {
        None => Err(coord_domain::keys::key_not_found(key_id).into()),
        Some(Some(_)) => Ok(RevokeApiKeyResult {
            success: true,
            key_id: key_id.to_string(),
        }),
        Some(None) => {
            c.prepare_cached("UPDATE api_keys SET revoked_at = ?2 WHERE key_id = ?1")?
                .execute(params![key_id, now])?;
            Ok(RevokeApiKeyResult {
                success: true,
                key_id: key_id.to_string(),
            })
        }
    }
}

pub fn authenticate(c: &Connection, now: i64, key_hash: &str) -> R<Option<KeyMatch>> {
    Ok(
        c.prepare_cached(&format!("SELECT {KEY_COLS} FROM api_keys WHERE key_hash = ?1"))?
            .query_row([key_hash], |r| key_from_row(r, now))
            .optional()?
            .map(ApiKeyInfo::into_match),
    )
}

#[async_trait]
impl KeyStore for SqliteStore {
    async fn create_api_key(&self, ctx: OpCtx, key: NewApiKey) -> CoordResult<ApiKeyInfo> {
        self.op(ctx, move |c, now, who| create(c, now, who, &key)).await
    }

    async fn list_api_keys(&self, ctx: OpCtx) -> CoordResult<ListApiKeysResult> {
        self.op(ctx, move |c, now, _| list(c, now)).await
    }

    async fn revoke_api_key(&self, ctx: OpCtx, key_id: String) -> CoordResult<RevokeApiKeyResult> {
        self.op(ctx, move |c, now, _| revoke(c, now, &key_id)).await
    }

    /// A plain read, without the write lock: authentication must not queue behind (or
    /// fail because of) another process's writes. (It may wait for this process's
    /// current write batch, which holds the connection for about a millisecond.)
    async fn authenticate_key(&self, now: Option<Timestamp>, key_hash: String) -> CoordResult<Option<KeyMatch>> {
        self.read(move |c| authenticate(c, now_micros(now), &key_hash)).await
    }
}
