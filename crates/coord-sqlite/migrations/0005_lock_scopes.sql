-- Directory and glob locks. `scope` holds a lock's leading literal path components
-- (coord_domain::target::LockTarget::scope), so an overlap check reads only the rows
-- whose scope is an ancestor of, equal to or below its own. Rows from before this
-- migration get the empty scope, which every check reads: correct, only less narrow.
ALTER TABLE file_locks ADD COLUMN scope TEXT NOT NULL DEFAULT '';
CREATE INDEX file_locks_scope ON file_locks (scope, expires_at);
