//! Whole ids for shortened ones (`coord_domain::ids`): one indexed range read per id.

use crate::{Fail, PgStore};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::ids::{IdKind, IdPrefix};
use coord_store::IdStore;
use tokio_postgres::types::ToSql;

/// The statement, and whether it takes the viewer as `$4` (a statement must use every
/// parameter it is given).
fn query(kind: IdKind) -> (&'static str, bool) {
    match kind {
        IdKind::Task => (
            "SELECT task_id::text FROM work_queue
             WHERE task_id BETWEEN $1::text::uuid AND $2::text::uuid ORDER BY 1 LIMIT $3",
            false,
        ),
        IdKind::Approval => (
            "SELECT approval_id FROM approval_queue
             WHERE approval_id COLLATE \"C\" BETWEEN $1 AND $2 ORDER BY approval_id COLLATE \"C\" LIMIT $3",
            false,
        ),
        IdKind::Message => (
            "SELECT message_id::text FROM message_recipients
             WHERE recipient_id = $4 AND message_id BETWEEN $1::text::uuid AND $2::text::uuid
             ORDER BY 1 LIMIT $3",
            true,
        ),
        IdKind::Thread => (
            "SELECT DISTINCT m.thread_id::text FROM messages m
             WHERE m.thread_id BETWEEN $1::text::uuid AND $2::text::uuid
               AND (m.sender_id = $4 OR EXISTS (SELECT 1 FROM message_recipients r
                                                WHERE r.message_id = m.message_id AND r.recipient_id = $4))
             ORDER BY 1 LIMIT $3",
            true,
        ),
    }
}

#[async_trait]
impl IdStore for PgStore {
    async fn ids_in_range(&self, prefix: &IdPrefix, viewer: &str, limit: usize) -> CoordResult<Vec<String>> {
        let (sql, with_viewer) = query(prefix.kind);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&prefix.low, &prefix.high, &limit];
        if with_viewer {
            params.push(&viewer);
        }
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(Fail::from)?;
        let rows = client.query(&statement, &params).await.map_err(Fail::from)?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<Vec<String>, _>>()
            .map_err(Fail::from)?)
    }
}
