-- Graph workflows and swarms (create_workflow, create_swarm; coord_domain::workflows):
-- one row each, its record as JSON, moved on under a version (compare-and-set); the
-- tasks of its nodes mapped back to it.
CREATE TABLE workflows (
    workflow_id text PRIMARY KEY,
    kind        text NOT NULL,
    name        text NOT NULL,
    created_by  text NOT NULL,
    status      text NOT NULL,
    version     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    record      jsonb NOT NULL
);
CREATE INDEX workflows_created_by ON workflows (created_by, created_at);
CREATE TABLE workflow_tasks (
    task_id     uuid PRIMARY KEY,
    workflow_id text NOT NULL REFERENCES workflows (workflow_id),
    node        text NOT NULL
);
CREATE INDEX workflow_tasks_workflow ON workflow_tasks (workflow_id);
ALTER TABLE workflows ENABLE ROW LEVEL SECURITY;
ALTER TABLE workflow_tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON workflows FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON workflow_tasks FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON workflows, workflow_tasks TO service_role;
REVOKE ALL ON workflows, workflow_tasks FROM PUBLIC, anon, authenticated;
