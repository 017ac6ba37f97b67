-- Agent memory (coord_domain::memory). Episodic memories and skills share one table so
-- that one full-text index and one ranking serve both; a skill's event_type is its
-- task type and its summary the skill. The *_words columns hold the text split the way
-- coord splits queries (coord_domain::memory::query::words), so that the parser never
-- reads `src/auth/login.ts` as one file-path token that no query term matches.
CREATE TABLE memories (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               uuid NOT NULL UNIQUE,
    memory_type      text NOT NULL CHECK (memory_type IN ('episodic', 'procedural')),
    agent_id         text NOT NULL,
    agent_type       text NOT NULL,
    session_id       uuid,
    event_type       text NOT NULL,
    summary          text NOT NULL,
    details          jsonb,
    outcome          text CHECK (outcome IN ('positive', 'negative', 'neutral')),
    lessons          text[] NOT NULL DEFAULT '{}',
    tags             text[] NOT NULL DEFAULT '{}',
    summary_words    text NOT NULL DEFAULT '',
    lessons_words    text NOT NULL DEFAULT '',
    -- Tags and the event type.
    tags_words       text NOT NULL DEFAULT '',
    details_words    text NOT NULL DEFAULT '',
    merge_key        text NOT NULL,
    occurrences      integer NOT NULL DEFAULT 1,
    successes        integer NOT NULL DEFAULT 0,
    failures         integer NOT NULL DEFAULT 0,
    useful_count     integer NOT NULL DEFAULT 0,
    not_useful_count integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    last_seen_at     timestamptz NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, summary_words), 'A')
        || setweight(to_tsvector('english'::regconfig, lessons_words), 'B')
        || setweight(to_tsvector('english'::regconfig, tags_words), 'C')
        || setweight(to_tsvector('english'::regconfig, details_words), 'D')
    ) STORED
);
CREATE INDEX memories_merge ON memories (merge_key, last_seen_at);
CREATE UNIQUE INDEX memories_one_skill ON memories (merge_key) WHERE memory_type = 'procedural';
CREATE INDEX memories_recent ON memories (last_seen_at);
CREATE INDEX memories_text ON memories USING gin (tsv);
CREATE INDEX memories_tags ON memories USING gin (tags);

-- How many memories hold each lexeme (PostgreSQL keeps no such statistic that is cheap to
-- read): recall chooses a task's rarest words with it, bounding what it ranks. Kept by a
-- trigger; each change is one statement over the lexemes in sorted order, so concurrent
-- writers lock the rows in the same order.
CREATE TABLE memory_terms (
    term text PRIMARY KEY,
    df   integer NOT NULL
);
CREATE FUNCTION memory_terms_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_terms AS t (term, df)
    SELECT l, sum(d)::integer FROM (
        SELECT l, 1 AS d FROM unnest(CASE WHEN TG_OP = 'DELETE' THEN '{}'::text[] ELSE tsvector_to_array(NEW.tsv) END) l
        UNION ALL
        SELECT l, -1 AS d FROM unnest(CASE WHEN TG_OP = 'INSERT' THEN '{}'::text[] ELSE tsvector_to_array(OLD.tsv) END) l
    ) changes
    GROUP BY l HAVING sum(d) <> 0 ORDER BY l
    ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_terms_count AFTER INSERT OR DELETE OR UPDATE OF tsv ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_count();

-- One vote per agent and memory; the memory's counts are recomputed from these.
CREATE TABLE memory_feedback (
    memory_id uuid NOT NULL,
    agent_id  text NOT NULL,
    useful    boolean NOT NULL,
    at        timestamptz NOT NULL,
    PRIMARY KEY (memory_id, agent_id)
);

-- A session's working memory; archived (kept, out of the context) when the session ends.
CREATE TABLE working_memory (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  uuid NOT NULL,
    agent_id    text NOT NULL,
    key         text NOT NULL,
    kind        text NOT NULL,
    content     text NOT NULL,
    original    text,
    critical    boolean NOT NULL,
    state       text NOT NULL CHECK (state IN ('active', 'compressed', 'folded')),
    tokens      integer NOT NULL,
    position    bigint NOT NULL,
    updated_at  timestamptz NOT NULL,
    archived_at timestamptz
);
CREATE UNIQUE INDEX working_memory_live ON working_memory (session_id, key) WHERE archived_at IS NULL;

ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE working_memory ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY service_role_all ON memory_terms FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON memory_terms TO service_role;
REVOKE ALL ON memory_terms FROM PUBLIC, anon, authenticated;
CREATE POLICY service_role_all ON memories FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON memory_feedback FOR ALL TO service_role USING (true) WITH CHECK (true);
CREATE POLICY service_role_all ON working_memory FOR ALL TO service_role USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON memories, memory_feedback, working_memory TO service_role;
REVOKE ALL ON memories, memory_feedback, working_memory FROM PUBLIC, anon, authenticated;
