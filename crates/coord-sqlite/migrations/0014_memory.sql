-- Agent memory (coord_domain::memory). Episodic memories and skills share one table so
-- that one full-text index and one ranking serve both; a skill's event_type is its
-- task type and its summary the skill.
CREATE TABLE memories (
    seq              INTEGER PRIMARY KEY,   -- the FTS5 rowid: a rowid alias, stable across VACUUM
    id               TEXT NOT NULL UNIQUE,
    memory_type      TEXT NOT NULL CHECK (memory_type IN ('episodic', 'procedural')),
    agent_id         TEXT NOT NULL,
    agent_type       TEXT NOT NULL,
    session_id       TEXT,
    event_type       TEXT NOT NULL,
    summary          TEXT NOT NULL,
    details          TEXT,
    details_text     TEXT NOT NULL DEFAULT '',
    outcome          TEXT CHECK (outcome IN ('positive', 'negative', 'neutral')),
    lessons          TEXT NOT NULL DEFAULT '[]',
    lessons_text     TEXT NOT NULL DEFAULT '',
    tags             TEXT NOT NULL DEFAULT '[]',
    -- Tags and the event type, for the full-text index.
    tags_text        TEXT NOT NULL DEFAULT '',
    merge_key        TEXT NOT NULL,
    occurrences      INTEGER NOT NULL DEFAULT 1,
    successes        INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,
    useful_count     INTEGER NOT NULL DEFAULT 0,
    not_useful_count INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    last_seen_at     INTEGER NOT NULL
);
CREATE INDEX memories_merge ON memories (merge_key, last_seen_at);
CREATE UNIQUE INDEX memories_one_skill ON memories (merge_key) WHERE memory_type = 'procedural';
CREATE INDEX memories_recent ON memories (last_seen_at);

CREATE TABLE memory_tags (
    tag TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tag, seq)
) WITHOUT ROWID;
CREATE INDEX memory_tags_seq ON memory_tags (seq);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    summary, lessons_text, tags_text, details_text,
    content = 'memories', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, summary, lessons_text, tags_text, details_text)
    VALUES (new.seq, new.summary, new.lessons_text, new.tags_text, new.details_text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, summary, lessons_text, tags_text, details_text)
    VALUES ('delete', old.seq, old.summary, old.lessons_text, old.tags_text, old.details_text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, lessons_text, tags_text, details_text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, summary, lessons_text, tags_text, details_text)
    VALUES ('delete', old.seq, old.summary, old.lessons_text, old.tags_text, old.details_text);
    INSERT INTO memories_fts (rowid, summary, lessons_text, tags_text, details_text)
    VALUES (new.seq, new.summary, new.lessons_text, new.tags_text, new.details_text);
END;

-- How many memories hold each indexed term (after the index's stemming): FTS5 reads a
-- term's whole posting list to count it, so recall reads the counts here to choose a
-- task's rarest words (crate::memory keeps it in each write's transaction).
CREATE TABLE memory_terms (
    term TEXT PRIMARY KEY,
    df   INTEGER NOT NULL
) WITHOUT ROWID;

-- One vote per agent and memory; the memory's counts are recomputed from these.
CREATE TABLE memory_feedback (
    memory_id TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    useful    INTEGER NOT NULL,
    at        INTEGER NOT NULL,
    PRIMARY KEY (memory_id, agent_id)
) WITHOUT ROWID;

-- A session's working memory; archived (kept, out of the context) when the session ends.
CREATE TABLE working_memory (
    seq         INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    key         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    content     TEXT NOT NULL,
    original    TEXT,
    critical    INTEGER NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('active', 'compressed', 'folded')),
    tokens      INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    archived_at INTEGER
);
CREATE UNIQUE INDEX working_memory_live ON working_memory (session_id, key) WHERE archived_at IS NULL;
