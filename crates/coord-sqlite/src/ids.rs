//! Whole ids for shortened ones (`coord_domain::ids`): one indexed range read per id.

use crate::SqliteStore;
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::ids::{IdKind, IdPrefix};
use coord_store::IdStore;
use rusqlite::params;

fn query(kind: IdKind) -> &'static str {
    match kind {
        IdKind::Task => "SELECT task_id FROM work_queue WHERE task_id BETWEEN ?1 AND ?2 ORDER BY 1 LIMIT ?4",
        IdKind::Approval => {
            "SELECT approval_id FROM approval_queue WHERE approval_id BETWEEN ?1 AND ?2 ORDER BY 1 LIMIT ?4"
        }
        IdKind::Message => {
            "SELECT message_id FROM message_recipients
             WHERE recipient_id = ?3 AND message_id BETWEEN ?1 AND ?2 ORDER BY 1 LIMIT ?4"
        }
        IdKind::Thread => {
            "SELECT DISTINCT m.thread_id FROM messages m
             WHERE m.thread_id BETWEEN ?1 AND ?2
               AND (m.sender_id = ?3 OR EXISTS (SELECT 1 FROM message_recipients r
                                                WHERE r.message_id = m.message_id AND r.recipient_id = ?3))
             ORDER BY 1 LIMIT ?4"
        }
    }
}

#[async_trait]
impl IdStore for SqliteStore {
    async fn ids_in_range(&self, prefix: &IdPrefix, viewer: &str, limit: usize) -> CoordResult<Vec<String>> {
        let (sql, low, high, viewer) = (
            query(prefix.kind),
            prefix.low.clone(),
            prefix.high.clone(),
            viewer.to_string(),
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            Ok(c.prepare_cached(sql)?
                .query_map(params![low, high, viewer, limit], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?)
        })
        .await
    }
}
