//! Confined file tools: the accounting and the fenced decision of `read_file` and
//! `write_file` (the file system work is the service's). A write takes the advisory
//! locks every overlapping acquisition takes, decides, is charged, and only then renames
//! — before the commit, so no lock can change hands in between and a refused write never
//! reaches the file.

use crate::locks::serialised_live;
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::CoordResult;
use coord_domain::files::{Fence, ReadFileResult, WriteFileResult, decide_write};
use coord_store::{FileStore, OpCtx, WriteStep};
use std::sync::Arc;

async fn decide(tx: &Tx<'_>, ctx: &OpCtx, (fence, step): &(Fence, Arc<dyn WriteStep>)) -> R<WriteFileResult> {
    let path = fence.target.key();
    // The read goes with the locks (one round trip); a retry after the rename ignores it.
    let live = serialised_live(tx, ctx.now, &fence.target).await?;
    if step.committed() {
        // A retried attempt after the rename: the write was decided and is in place;
        // what is left is to count and record it.
        return Ok(WriteFileResult::decided(path, None));
    }
    Ok(WriteFileResult::decided(path, decide_write(&ctx.who, fence, &live)?))
}

#[async_trait]
impl FileStore for PgStore {
    async fn record_file_read(&self, ctx: OpCtx, outcome: CoordResult<ReadFileResult>) -> CoordResult<ReadFileResult> {
        self.op(ctx, outcome, |_, _, outcome| {
            Box::pin(async move { Ok(outcome.clone()?) })
        })
        .await
    }

    async fn fenced_write(&self, ctx: OpCtx, fence: Fence, step: Arc<dyn WriteStep>) -> CoordResult<WriteFileResult> {
        let commit = step.clone();
        let then = move |d: WriteFileResult| {
            Ok(WriteFileResult {
                fencing_token: d.fencing_token,
                ..commit.commit()?
            })
        };
        self.op_then(ctx, (fence, step), |tx, ctx, a| Box::pin(decide(tx, ctx, a)), &then)
            .await
    }
}
