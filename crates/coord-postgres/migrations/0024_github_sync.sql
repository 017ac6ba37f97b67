-- Tasks only one agent may claim (made from GitHub issues labelled agent:<id>).
ALTER TABLE work_queue ADD COLUMN assigned_to TEXT;

-- What coord last applied for a GitHub issue (key issue:<number>) or agent branch
-- (key branch:<name>): whose locks it took, which, its task, the issue's updated_at.
-- Deliveries arrive out of order and twice; each is reconciled against this row.
CREATE TABLE github_links (
    repo_id    BIGINT NOT NULL,
    key        TEXT NOT NULL,
    repository TEXT NOT NULL,
    agent_id   TEXT,
    locks      JSONB NOT NULL,
    task_id    TEXT,
    updated_at TIMESTAMPTZ,
    notice     TEXT,
    saved_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo_id, key)
);

-- Requests for GitHub's API (issue comments, commit statuses) waiting to be sent by
-- `coord serve`; retried with backoff, kept once sent.
CREATE TABLE github_outbox (
    id              BIGSERIAL PRIMARY KEY,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,
    body            JSONB NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ,
    last_error      TEXT
);
CREATE INDEX github_outbox_due ON github_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- The GitHub repository a pushed changeset came from (results go back as commit
-- statuses), and a run started elsewhere (a GitHub Actions run): its id, so no other
-- worker starts it again and the workflow_run webhook finds it, and its page.
ALTER TABLE changesets ADD COLUMN repository text;
ALTER TABLE verification_results ADD COLUMN external_id text;
ALTER TABLE verification_results ADD COLUMN external_url text;
CREATE UNIQUE INDEX verification_results_external ON verification_results (executor, external_id)
    WHERE external_id IS NOT NULL;

ALTER TABLE github_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE github_outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON github_links FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON github_outbox FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON github_links, github_outbox TO service_role;
-- The sweeper prunes deliveries acted on and requests sent (github::prune).
GRANT DELETE ON github_deliveries, github_outbox TO service_role;
GRANT USAGE ON SEQUENCE github_outbox_id_seq TO service_role;
REVOKE ALL ON github_links, github_outbox FROM PUBLIC, anon, authenticated;
