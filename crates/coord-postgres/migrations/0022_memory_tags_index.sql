-- The tag index too (recall's tag pass reads it on every call with tags): with GIN's
-- fast update a store filled by a burst of memories kept ~11,000 of them in the pending
-- list, which every tag search scanned in full (5 ms of a 6 ms tag pass at 100,000
-- memories, docs/benchmarks.md). Each write updates the index itself from now on, and
-- what waits in either index's pending list is merged now, not at the next vacuum.
ALTER INDEX memories_tags SET (fastupdate = off);
SELECT gin_clean_pending_list('memories_tags'::regclass);
SELECT gin_clean_pending_list('memories_text'::regclass);
