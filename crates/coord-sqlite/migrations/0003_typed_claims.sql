-- Claims filtered by task type: the claimable tasks of those types, most urgent first,
-- without walking the claimable tasks of every other type.
CREATE INDEX work_queue_claimable_typed ON work_queue (task_type, priority, created_at, seq)
    WHERE status = 'pending' AND pending_deps = 0;
