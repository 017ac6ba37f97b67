//! Confined file tools: the accounting and the fenced decision of `read_file` and
//! `write_file` (the file system work is the service's). A write's rename runs in the
//! single writer's transaction after the decision and the charges, so no lock can change
//! hands in between and a refused write never reaches the file.

use crate::SqliteStore;
use crate::locks::live_overlapping;
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::files::{Fence, ReadFileResult, WriteFileResult, decide_write};
use coord_store::{FileStore, OpCtx, WriteStep};
use std::sync::Arc;

#[async_trait]
impl FileStore for SqliteStore {
    async fn record_file_read(&self, ctx: OpCtx, outcome: CoordResult<ReadFileResult>) -> CoordResult<ReadFileResult> {
        self.op(ctx, move |_, _, _| Ok(outcome?)).await
    }

    async fn fenced_write(&self, ctx: OpCtx, fence: Fence, step: Arc<dyn WriteStep>) -> CoordResult<WriteFileResult> {
        let path = fence.target.key().to_string();
        let decided = step.clone();
        self.op_then(
            ctx,
            move |c, now, who| {
                let live = live_overlapping(c, now, std::slice::from_ref(&fence.target))?;
                Ok(WriteFileResult::decided(&path, decide_write(who, &fence, &live)?))
            },
            move |d| {
                Ok(WriteFileResult {
                    fencing_token: d.fencing_token,
                    ..decided.commit()?
                })
            },
        )
        .await
    }
}
