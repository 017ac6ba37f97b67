-- The verification gateway (coord_domain::verification): policies as jsonb rows,
-- changesets, and one row per policy run over a changeset.
CREATE TABLE verification_policies (
    name       text PRIMARY KEY,
    policy     jsonb NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE changesets (
    changeset_id text PRIMARY KEY,
    agent_id     text NOT NULL,
    agent_type   text NOT NULL,
    source       text NOT NULL CHECK (source IN ('agent', 'github')),
    -- '' when none was given, so the resubmission key below is one plain unique index.
    branch       text NOT NULL DEFAULT '',
    commit_sha   text,
    description  text,
    files        jsonb NOT NULL,
    diff         text,
    trust_level  smallint NOT NULL,
    created_at   timestamptz NOT NULL
);
-- The same agent submitting the same branch and commit again (from the same source: its
-- own submission never stands for a push's file list) gets the recorded changeset.
CREATE UNIQUE INDEX changesets_commit ON changesets (agent_id, source, branch, commit_sha) WHERE commit_sha IS NOT NULL;
CREATE INDEX changesets_agent ON changesets (agent_id, created_at);

CREATE TABLE verification_results (
    changeset_id text NOT NULL REFERENCES changesets (changeset_id),
    policy       text NOT NULL,
    attempt      integer NOT NULL DEFAULT 1,
    tier         smallint NOT NULL,
    executor     text NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending', 'running', 'awaiting_approval', 'passed', 'failed',
                                                 'error', 'timed_out', 'skipped', 'cancelled')),
    reason       text,
    -- The policy as routed: a later change to it does not change what this run does.
    policy_snapshot jsonb NOT NULL,
    files        jsonb NOT NULL,
    file_count   integer NOT NULL,
    approval_id  text,
    -- The worker running it (claim_verification_run) and until when its claim holds.
    claimed_by   text,
    lease_until  timestamptz,
    exit_code    integer,
    duration_ms  bigint,
    output_tail  text,
    started_at   timestamptz,
    finished_at  timestamptz,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (changeset_id, policy, attempt)
);
CREATE INDEX verification_results_status ON verification_results (status, created_at);

ALTER TABLE verification_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE changesets ENABLE ROW LEVEL SECURITY;
ALTER TABLE verification_results ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON verification_policies FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON changesets FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON verification_results FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON verification_policies, changesets, verification_results TO service_role;
REVOKE ALL ON verification_policies, changesets, verification_results FROM PUBLIC, anon, authenticated;

-- GitHub webhook deliveries: recorded before they are acted on (a delivery the
-- coordinator did not finish is processed on its next start), one row per delivery id
-- (a redelivery is answered as a duplicate).
CREATE TABLE github_deliveries (
    delivery_id  text PRIMARY KEY,
    event        text NOT NULL,
    action       text,
    payload      jsonb NOT NULL,
    status       text NOT NULL CHECK (status IN ('received', 'processed', 'ignored', 'failed')),
    note         text,
    changeset_id text,
    received_at  timestamptz NOT NULL,
    processed_at timestamptz
);
CREATE INDEX github_deliveries_status ON github_deliveries (status, received_at);
ALTER TABLE github_deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON github_deliveries FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON github_deliveries TO service_role;
REVOKE ALL ON github_deliveries FROM PUBLIC, anon, authenticated;
