-- The verification gateway (coord_domain::verification): policies as JSON rows,
-- changesets, and one row per policy run over a changeset.
CREATE TABLE verification_policies (
    name       TEXT PRIMARY KEY,
    policy     TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE changesets (
    changeset_id TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    agent_type   TEXT NOT NULL,
    source       TEXT NOT NULL CHECK (source IN ('agent', 'github')),
    -- '' when none was given, so the resubmission key below is one plain unique index.
    branch       TEXT NOT NULL DEFAULT '',
    commit_sha   TEXT,
    description  TEXT,
    files        TEXT NOT NULL,
    diff         TEXT,
    trust_level  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
-- The same agent submitting the same branch and commit again (from the same source: its
-- own submission never stands for a push's file list) gets the recorded changeset.
CREATE UNIQUE INDEX changesets_commit ON changesets (agent_id, source, branch, commit_sha) WHERE commit_sha IS NOT NULL;
CREATE INDEX changesets_agent ON changesets (agent_id, created_at);

CREATE TABLE verification_results (
    changeset_id TEXT NOT NULL REFERENCES changesets (changeset_id),
    policy       TEXT NOT NULL,
    attempt      INTEGER NOT NULL DEFAULT 1,
    tier         INTEGER NOT NULL,
    executor     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'running', 'awaiting_approval', 'passed', 'failed',
                                                 'error', 'timed_out', 'skipped', 'cancelled')),
    reason       TEXT,
    -- The policy as routed: a later change to it does not change what this run does.
    policy_snapshot TEXT NOT NULL,
    files        TEXT NOT NULL,
    file_count   INTEGER NOT NULL,
    approval_id  TEXT,
    -- The worker running it (claim_verification_run) and until when its claim holds.
    claimed_by   TEXT,
    lease_until  INTEGER,
    exit_code    INTEGER,
    duration_ms  INTEGER,
    output_tail  TEXT,
    started_at   INTEGER,
    finished_at  INTEGER,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (changeset_id, policy, attempt)
) WITHOUT ROWID;
CREATE INDEX verification_results_status ON verification_results (status, created_at);

-- GitHub webhook deliveries: recorded before they are acted on (a delivery the
-- coordinator did not finish is processed on its next start), one row per delivery id
-- (a redelivery is answered as a duplicate).
CREATE TABLE github_deliveries (
    delivery_id  TEXT PRIMARY KEY,
    event        TEXT NOT NULL,
    action       TEXT,
    payload      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('received', 'processed', 'ignored', 'failed')),
    note         TEXT,
    changeset_id TEXT,
    received_at  INTEGER NOT NULL,
    processed_at INTEGER
) WITHOUT ROWID;
CREATE INDEX github_deliveries_status ON github_deliveries (status, received_at);
