-- Tasks only one agent may claim (made from GitHub issues labelled agent:<id>).
ALTER TABLE work_queue ADD COLUMN assigned_to TEXT;

-- What coord last applied for a GitHub issue (key issue:<number>) or agent branch
-- (key branch:<name>): whose locks it took, which, its task, the issue's updated_at.
-- Deliveries arrive out of order and twice; each is reconciled against this row.
CREATE TABLE github_links (
    repo_id    INTEGER NOT NULL,
    key        TEXT NOT NULL,
    repository TEXT NOT NULL,
    agent_id   TEXT,
    locks      TEXT NOT NULL,
    task_id    TEXT,
    updated_at INTEGER,
    notice     TEXT,
    saved_at   INTEGER NOT NULL,
    PRIMARY KEY (repo_id, key)
) WITHOUT ROWID;

-- Requests for GitHub's API (issue comments, commit statuses) waiting to be sent by
-- `coord serve`; retried with backoff, kept once sent.
CREATE TABLE github_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    sent_at         INTEGER,
    last_error      TEXT
);
CREATE INDEX github_outbox_due ON github_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- The GitHub repository a pushed changeset came from (results go back as commit
-- statuses), and a run started elsewhere (a GitHub Actions run): its id, so no other
-- worker starts it again and the workflow_run webhook finds it, and its page.
ALTER TABLE changesets ADD COLUMN repository TEXT;
ALTER TABLE verification_results ADD COLUMN external_id TEXT;
ALTER TABLE verification_results ADD COLUMN external_url TEXT;
CREATE UNIQUE INDEX verification_results_external ON verification_results (executor, external_id)
    WHERE external_id IS NOT NULL;
