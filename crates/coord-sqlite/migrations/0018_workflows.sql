-- Graph workflows and swarms (create_workflow, create_swarm; coord_domain::workflows):
-- one row each, its record as JSON, moved on under a version (compare-and-set); the
-- tasks of its nodes mapped back to it.
CREATE TABLE workflows (
    workflow_id TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    status      TEXT NOT NULL,
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    record      TEXT NOT NULL
);
CREATE INDEX workflows_created_by ON workflows (created_by, created_at);
CREATE TABLE workflow_tasks (
    task_id     TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL REFERENCES workflows (workflow_id),
    node        TEXT NOT NULL
);
CREATE INDEX workflow_tasks_workflow ON workflow_tasks (workflow_id);
