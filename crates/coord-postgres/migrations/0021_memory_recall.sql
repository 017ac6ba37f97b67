-- Recall reads the full-text index on every call. With GIN's fast update (the default),
-- new memories wait in a pending list that every search scans in full until a vacuum
-- merges it (up to gin_pending_list_limit, 4 MB: thousands of memories): recall's
-- latency would grow and shrink with autovacuum's timing. Memories are written far less
-- often than tasks recall them, so each write updates the index itself.
ALTER INDEX memories_text SET (fastupdate = off);
