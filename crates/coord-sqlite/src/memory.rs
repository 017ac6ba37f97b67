//! `memories` (episodic and procedural, one FTS5 index), `memory_tags`,
//! `memory_feedback`, `working_memory`.

use crate::rows::{json, opt_json, string_list, to_json, ts};
use crate::{R, SqliteStore};
use async_trait::async_trait;
use coord_domain::memory::query::{choose_terms, tags_text};
use coord_domain::memory::rank::{Candidate, RankParams};
use coord_domain::memory::retention::{self, PruneMemories, PruneMemoriesResult};
use coord_domain::memory::skills::{self, GetSkillsResult, RecordSkillUseResult, Skill, SkillQuery, SkillUse};
use coord_domain::memory::working::{self, Entry, EntryKind, EntryState, WorkingMemoryResult, WorkingUpdate};
use coord_domain::memory::{
    self, ForgetResult, MemoryFeedbackResult, MemoryType, Mergeable, NewMemory, Outcome, RecallQuery, RecallResult,
    RememberResult,
};
use coord_domain::time::from_micros;
use coord_domain::{CoordResult, Identity};
use coord_store::{MemoryStore, OpCtx};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// `-bm25` weights of summary, lessons, tags and event type, details.
const BM25: &str = "bm25(memories_fts, 4.0, 2.0, 1.0, 1.0)";

const CANDIDATE_COLS: &str = "m.id, m.memory_type, m.agent_id, m.event_type, m.summary, m.outcome, m.lessons, m.tags,
    m.occurrences, m.successes, m.failures, m.useful_count, m.not_useful_count, m.last_seen_at";

fn candidate(r: &Row, raw_text: f64) -> rusqlite::Result<Candidate> {
    Ok(Candidate {
        memory_id: r.get(0)?,
        memory_type: MemoryType::parse(&r.get::<_, String>(1)?).unwrap_or(MemoryType::Episodic),
        agent_id: r.get(2)?,
        event_type: r.get(3)?,
        summary: r.get(4)?,
        outcome: r.get::<_, Option<String>>(5)?.as_deref().and_then(Outcome::parse),
        lessons: string_list(r, 6)?,
        tags: string_list(r, 7)?,
        occurrences: r.get(8)?,
        successes: r.get(9)?,
        failures: r.get(10)?,
        useful: r.get(11)?,
        not_useful: r.get(12)?,
        last_seen_at: ts(r, 13)?,
        raw_text,
    })
}

fn session_of(c: &Connection, agent_id: &str) -> R<Option<String>> {
    Ok(
        c.prepare_cached("SELECT session_id FROM agent_sessions WHERE agent_id = ?1 AND status <> 'disconnected'")?
            .query_row([agent_id], |r| r.get(0))
            .optional()?,
    )
}

fn add_tags(c: &Connection, seq: i64, tags: &[String]) -> R<()> {
    let mut insert = c.prepare_cached("INSERT OR IGNORE INTO memory_tags (tag, seq) VALUES (?1, ?2)")?;
    for t in tags {
        insert.execute(params![t, seq])?;
    }
    Ok(())
}

pub fn remember(c: &Connection, now: i64, who: &Identity, m: &NewMemory) -> R<RememberResult> {
    let key = memory::merge_key(&who.agent_id, &m.event_type, &m.summary);
    let since = now - memory::MERGE_WINDOW_MINUTES * 60_000_000;
    let session = session_of(c, &who.agent_id)?;
    let existing = c
        .prepare_cached(
            "SELECT seq, id, details, outcome, lessons, tags, occurrences FROM memories
             WHERE merge_key = ?1 AND memory_type = 'episodic' AND last_seen_at >= ?2
             ORDER BY last_seen_at DESC, seq DESC LIMIT 1",
        )?
        .query_row(params![key, since], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                Mergeable {
                    details: opt_json(r, 2)?,
                    outcome: r.get::<_, Option<String>>(3)?.as_deref().and_then(Outcome::parse),
                    lessons: json(r, 4)?,
                    tags: json(r, 5)?,
                    occurrences: r.get(6)?,
                },
            ))
        })
        .optional()?;
    if let Some((seq, id, old)) = existing {
        count_terms(c, &indexed_text(c, seq)?, -1)?;
        let merged = memory::merge(old, m);
        c.prepare_cached(
            "UPDATE memories SET details = ?2, details_text = ?3, outcome = ?4, lessons = ?5, lessons_text = ?6,
                 tags = ?7, tags_text = ?8, occurrences = ?9, last_seen_at = MAX(last_seen_at, ?10),
                 session_id = COALESCE(?11, session_id)
             WHERE seq = ?1",
        )?
        .execute(params![
            seq,
            merged.details.as_ref().map(to_json),
            memory::details_text(merged.details.as_ref()),
            merged.outcome.map(Outcome::as_str),
            to_json(&merged.lessons),
            merged.lessons.join("\n"),
            to_json(&merged.tags),
            tags_text(&merged.tags, &m.event_type),
            merged.occurrences,
            now,
            session,
        ])?;
        // A merge only adds tags (a union).
        add_tags(c, seq, &merged.tags)?;
        count_terms(c, &indexed_text(c, seq)?, 1)?;
        return Ok(RememberResult {
            success: true,
            memory_id: id,
            merged: true,
            occurrences: merged.occurrences,
        });
    }
    let seq: i64 = c
        .prepare_cached(
            "INSERT INTO memories (id, memory_type, agent_id, agent_type, session_id, event_type, summary, details,
                 details_text, outcome, lessons, lessons_text, tags, tags_text, merge_key, created_at, last_seen_at)
             VALUES (?1, 'episodic', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15)
             RETURNING seq",
        )?
        .query_row(
            params![
                m.memory_id,
                who.agent_id,
                who.agent_type,
                session,
                m.event_type,
                m.summary,
                m.details.as_ref().map(to_json),
                memory::details_text(m.details.as_ref()),
                m.outcome.map(Outcome::as_str),
                to_json(&m.lessons),
                m.lessons.join("\n"),
                to_json(&m.tags),
                tags_text(&m.tags, &m.event_type),
                key,
                now,
            ],
            |r| r.get(0),
        )?;
    add_tags(c, seq, &m.tags)?;
    count_terms(c, &indexed_text(c, seq)?, 1)?;
    Ok(RememberResult {
        success: true,
        memory_id: m.memory_id.clone(),
        merged: false,
        occurrences: 1,
    })
}

pub fn recall(c: &Connection, now: i64, q: &RecallQuery, params: RankParams) -> R<RecallResult> {
    let kind = q.memory_type.map(MemoryType::as_str);
    let limit = memory::CANDIDATES;
    let mut candidates = Vec::new();
    if !q.text.is_empty() {
        // bm25 costs twice over in a large store: it counts each query word's documents
        // (for its IDF) by reading the word's whole posting list, then scores every match.
        // So the words are chosen by their document frequency (read from the index's
        // vocabulary, one lookup each): the rarest first, while their frequencies add up
        // to at most memory::POSTINGS — words more common than that weigh little and are
        // left out. Then, when more than SCORED memories match, only the newest SCORED are
        // scored with every chosen word, plus every memory holding a rare word (in at most
        // RARE memories), however old, scored on its rare words: a lower bound of its
        // full score, since bm25 sums over the words.
        let stats = term_stats(c, &q.text.terms)?;
        let chosen = choose_terms(q.text.terms.iter().zip(stats));
        let or = |terms: &mut dyn Iterator<Item = &String>| {
            terms.map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR ")
        };
        let expr = or(&mut chosen.iter().map(|(t, _)| *t));
        let rare = or(&mut chosen.iter().filter(|(_, df)| *df <= memory::RARE).map(|(t, _)| *t));
        // With a filter (an author, a memory type) the newest matches may all be
        // filtered out: every match of the chosen words is scored instead.
        let filtered = q.author.is_some() || q.memory_type.is_some();
        let boundary: Option<i64> = if chosen.is_empty() || filtered {
            None
        } else {
            c.prepare_cached(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
            )?
            .query_row(params![expr, memory::SCORED], |r| r.get(0))
            .optional()?
        };
        // (expression, rowid bound, whether the bound is a floor or a ceiling)
        let mut passes = Vec::new();
        if !chosen.is_empty() {
            passes.push((expr, boundary.unwrap_or(0), true));
        }
        if let Some(boundary) = boundary
            && !rare.is_empty()
        {
            // The older rows only: the newest pass scored the others with every word.
            passes.push((rare, boundary, false));
        }
        for (expr, bound, floor) in passes {
            // Plain rowid constraints, which FTS5 applies while reading its index.
            let range = if floor {
                "memories_fts.rowid > ?5"
            } else {
                "memories_fts.rowid <= ?5"
            };
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {CANDIDATE_COLS}, -{BM25} FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND {range}
                   AND (?2 IS NULL OR m.agent_id = ?2) AND (?3 IS NULL OR m.memory_type = ?3)
                 ORDER BY {BM25} LIMIT ?4"
            ))?;
            let rows = stmt.query_map(params![expr, q.author, kind, limit, bound], |r| {
                let raw: f64 = r.get(14)?;
                candidate(r, raw)
            })?;
            for row in rows {
                candidates.push(row?);
            }
        }
    }
    if !q.tags.is_empty() || q.text.is_empty() {
        // The newest memories sharing a tag (the newest of all without tags nor text);
        // then, when a common tag filled those, every memory with a rare tag (held by at
        // most memory::RARE memories), however old, so that it is not crowded out.
        let mut passes = vec![q.tags.clone()];
        // With one tag (or none) the first pass is every candidate already: nothing to count.
        if q.tags.len() > 1 {
            let rare = rare_tags(c, &q.tags)?;
            if !rare.is_empty() && rare.len() < q.tags.len() {
                passes.push(rare);
            }
        }
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {CANDIDATE_COLS} FROM memories m
             WHERE (?1 = '[]' OR m.seq IN (SELECT seq FROM memory_tags WHERE tag IN (SELECT value FROM json_each(?1))))
               AND (?2 IS NULL OR m.agent_id = ?2) AND (?3 IS NULL OR m.memory_type = ?3)
             ORDER BY m.last_seen_at DESC LIMIT ?4"
        ))?;
        for tags in passes {
            let rows = stmt.query_map(params![to_json(&tags), q.author, kind, limit], |r| candidate(r, 0.0))?;
            for row in rows {
                candidates.push(row?);
            }
        }
    }
    Ok(memory::answer(candidates, q, from_micros(now), params))
}

/// The asked tags held by at most memory::RARE memories (each count stops there).
fn rare_tags(c: &Connection, tags: &[String]) -> R<Vec<String>> {
    let mut count = c.prepare_cached("SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag = ?1 LIMIT ?2)")?;
    let mut rare = Vec::new();
    for t in tags {
        let n: i64 = count.query_row(params![t, memory::RARE + 1], |r| r.get(0))?;
        if n <= memory::RARE {
            rare.push(t.clone());
        }
    }
    Ok(rare)
}

/// The connection's scratch tables for [`stems`], created once when the connection is
/// opened (parsing the statement on every recall cost more than using the tables).
pub(crate) const STEMS: &str = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.coord_stems
         USING fts5(t, tokenize = 'porter unicode61 remove_diacritics 2');
     CREATE VIRTUAL TABLE IF NOT EXISTS temp.coord_stem_terms USING fts5vocab(temp, coord_stems, 'instance');";

/// The index's terms for each of `texts` (the same tokenizer and stemmer, run over a
/// scratch table of this connection), in order.
fn stems(c: &Connection, texts: &[&str]) -> R<Vec<Vec<String>>> {
    let clear = || c.prepare_cached("DELETE FROM temp.coord_stems")?.execute([]);
    clear()?;
    let mut insert = c.prepare_cached("INSERT INTO temp.coord_stems (rowid, t) VALUES (?1, ?2)")?;
    for (i, t) in texts.iter().enumerate() {
        insert.execute(params![i as i64, t])?;
    }
    let mut out: Vec<Vec<String>> = vec![Vec::new(); texts.len()];
    let mut rows = c.prepare_cached("SELECT DISTINCT doc, term FROM temp.coord_stem_terms ORDER BY doc, term")?;
    let found = rows.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in found {
        let (doc, term) = row?;
        if let Some(slot) = out.get_mut(doc as usize) {
            slot.push(term);
        }
    }
    clear()?;
    Ok(out)
}

/// Adds `delta` to the document frequency of every term of a memory's indexed text.
fn count_terms(c: &Connection, text: &str, delta: i64) -> R<()> {
    let terms = stems(c, &[text])?.pop().unwrap_or_default();
    let mut upsert = c.prepare_cached(
        "INSERT INTO memory_terms (term, df) VALUES (?1, ?2) ON CONFLICT (term) DO UPDATE SET df = df + excluded.df",
    )?;
    for t in terms {
        upsert.execute(params![t, delta])?;
    }
    Ok(())
}

/// A memory's indexed text, as the full-text index reads it.
fn indexed_text(c: &Connection, seq: i64) -> R<String> {
    Ok(c.prepare_cached(
        "SELECT summary || ' ' || lessons_text || ' ' || tags_text || ' ' || details_text FROM memories WHERE seq = ?1",
    )?
    .query_row([seq], |r| r.get(0))?)
}

/// How many memories hold each of `terms` (0 for a word the index drops).
fn term_stats(c: &Connection, terms: &[String]) -> R<Vec<i64>> {
    let texts: Vec<&str> = terms.iter().map(String::as_str).collect();
    let mut df = c.prepare_cached("SELECT df FROM memory_terms WHERE term = ?1")?;
    stems(c, &texts)?
        .iter()
        .map(|stems| match stems.first() {
            None => Ok(0),
            Some(s) => Ok(df.query_row([s], |r| r.get::<_, i64>(0)).optional()?.unwrap_or(0)),
        })
        .collect()
}

pub fn feedback(c: &Connection, now: i64, who: &Identity, memory_id: &str, useful: bool) -> R<MemoryFeedbackResult> {
    let exists: Option<i64> = c
        .prepare_cached("SELECT seq FROM memories WHERE id = ?1")?
        .query_row([memory_id], |r| r.get(0))
        .optional()?;
    if exists.is_none() {
        return Err(memory::memory_not_found(memory_id).into());
    }
    c.prepare_cached(
        "INSERT INTO memory_feedback (memory_id, agent_id, useful, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (memory_id, agent_id) DO UPDATE SET useful = excluded.useful, at = excluded.at",
    )?
    .execute(params![memory_id, who.agent_id, useful, now])?;
    let (useful_count, not_useful_count) = c
        .prepare_cached(
            "UPDATE memories SET
                 useful_count = (SELECT count(*) FROM memory_feedback WHERE memory_id = ?1 AND useful = 1),
                 not_useful_count = (SELECT count(*) FROM memory_feedback WHERE memory_id = ?1 AND useful = 0)
             WHERE id = ?1 RETURNING useful_count, not_useful_count",
        )?
        .query_row([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(MemoryFeedbackResult {
        success: true,
        memory_id: memory_id.to_string(),
        useful_count,
        not_useful_count,
    })
}

pub fn forget(c: &Connection, who: &Identity, memory_id: &str, admin: bool) -> R<ForgetResult> {
    let found: Option<(i64, String)> = c
        .prepare_cached("SELECT seq, agent_id FROM memories WHERE id = ?1")?
        .query_row([memory_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((seq, author)) = found else {
        return Err(memory::memory_not_found(memory_id).into());
    };
    if author != who.agent_id && !admin {
        return Err(memory::not_memory_author(memory_id, &author).into());
    }
    delete(c, seq, memory_id)?;
    Ok(ForgetResult {
        success: true,
        memory_id: memory_id.to_string(),
    })
}

/// Removes one memory with its term counts, tags and votes.
fn delete(c: &Connection, seq: i64, memory_id: &str) -> R<()> {
    count_terms(c, &indexed_text(c, seq)?, -1)?;
    c.prepare_cached("DELETE FROM memory_tags WHERE seq = ?1")?
        .execute([seq])?;
    c.prepare_cached("DELETE FROM memory_feedback WHERE memory_id = ?1")?
        .execute([memory_id])?;
    c.prepare_cached("DELETE FROM memories WHERE seq = ?1")?
        .execute([seq])?;
    Ok(())
}

/// The retention rule of `coord_domain::memory::retention::expired`, in SQL (?1: the
/// cutoff in microseconds).
const EXPIRED: &str = "memory_type = 'episodic' AND last_seen_at < ?1 AND useful_count <= not_useful_count";

pub fn prune(c: &Connection, now: i64, p: &PruneMemories) -> R<PruneMemoriesResult> {
    let cutoff = retention::cutoff_micros(now, p.older_than_days);
    let kept_useful: i64 = c
        .prepare_cached(
            "SELECT count(*) FROM memories
             WHERE memory_type = 'episodic' AND last_seen_at < ?1 AND useful_count > not_useful_count",
        )?
        .query_row([cutoff], |r| r.get(0))?;
    let (pruned, more) = if p.dry_run {
        let n: i64 = c
            .prepare_cached(&format!("SELECT count(*) FROM memories WHERE {EXPIRED}"))?
            .query_row([cutoff], |r| r.get(0))?;
        (n, false)
    } else {
        let gone = c
            .prepare_cached(&format!(
                "SELECT seq, id FROM memories WHERE {EXPIRED} ORDER BY last_seen_at, seq LIMIT ?2"
            ))?
            .query_map(params![cutoff, p.batch + 1], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let more = gone.len() as i64 > p.batch;
        let mut n = 0;
        for (seq, id) in gone.iter().take(usize::try_from(p.batch).unwrap_or(0)) {
            delete(c, *seq, id)?;
            n += 1;
        }
        (n, more)
    };
    Ok(PruneMemoriesResult {
        success: true,
        cutoff: from_micros(cutoff),
        pruned,
        kept_useful,
        more,
        dry_run: p.dry_run,
    })
}

const SKILL_COLS: &str = "id, summary, event_type, successes, failures, agent_id, last_seen_at";

fn skill_from_row(r: &Row) -> rusqlite::Result<Skill> {
    Ok(Skill::new(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        ts(r, 6)?,
    ))
}

/// Counts one use of a skill, creating it on first use (also called by `complete_work`).
pub fn record_skill(c: &Connection, now: i64, who: &Identity, s: &SkillUse) -> R<Skill> {
    let session = session_of(c, &who.agent_id)?;
    let (ok, failed) = if s.success { (1, 0) } else { (0, 1) };
    let tags = vec![s.task_type.clone()];
    let (seq, skill): (i64, Skill) = c
        .prepare_cached(&format!(
            "INSERT INTO memories (id, memory_type, agent_id, agent_type, session_id, event_type, summary, tags,
                 tags_text, merge_key, successes, failures, created_at, last_seen_at)
             VALUES (?1, 'procedural', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)
             ON CONFLICT (merge_key) WHERE memory_type = 'procedural' DO UPDATE SET
                 successes = successes + excluded.successes, failures = failures + excluded.failures,
                 last_seen_at = MAX(last_seen_at, excluded.last_seen_at)
             RETURNING {SKILL_COLS}, seq"
        ))?
        .query_row(
            params![
                s.memory_id,
                who.agent_id,
                who.agent_type,
                session,
                s.task_type,
                s.skill,
                to_json(&tags),
                tags_text(&tags, &s.task_type),
                s.key(),
                ok,
                failed,
                now
            ],
            |r| Ok((r.get(7)?, skill_from_row(r)?)),
        )?;
    add_tags(c, seq, std::slice::from_ref(&s.task_type))?;
    if skill.uses == 1 {
        // Created by this use.
        count_terms(c, &indexed_text(c, seq)?, 1)?;
    }
    Ok(skill)
}

pub fn get_skills(c: &Connection, q: &SkillQuery) -> R<GetSkillsResult> {
    let mut skills = c
        .prepare_cached(&format!(
            "SELECT {SKILL_COLS} FROM memories WHERE memory_type = 'procedural' AND event_type = ?1
             ORDER BY last_seen_at DESC LIMIT 1000"
        ))?
        .query_map([&q.task_type], skill_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    skills::order(&mut skills);
    skills.truncate(q.limit as usize);
    Ok(GetSkillsResult { skills })
}

fn live_session(c: &Connection, who: &Identity) -> R<String> {
    session_of(c, &who.agent_id)?.ok_or_else(|| coord_domain::sessions::no_live_session(&who.agent_id).into())
}

fn entry_from_row(r: &Row) -> rusqlite::Result<Entry> {
    Ok(Entry {
        key: r.get(0)?,
        kind: EntryKind::parse(&r.get::<_, String>(1)?).unwrap_or_default(),
        content: r.get(2)?,
        original: r.get(3)?,
        critical: r.get(4)?,
        state: EntryState::parse(&r.get::<_, String>(5)?).unwrap_or(EntryState::Active),
        tokens: r.get(6)?,
        position: r.get(7)?,
        updated_at: ts(r, 8)?,
    })
}

fn entries(c: &Connection, session: &str) -> R<Vec<Entry>> {
    Ok(c.prepare_cached(
        "SELECT key, kind, content, original, critical, state, tokens, position, updated_at FROM working_memory
             WHERE session_id = ?1 AND archived_at IS NULL ORDER BY position",
    )?
    .query_map([session], entry_from_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn update_working(c: &Connection, now: i64, who: &Identity, u: &WorkingUpdate) -> R<WorkingMemoryResult> {
    let session = live_session(c, who)?;
    let at = from_micros(now);
    let applied = working::apply(entries(c, &session)?, &u.entries, at)?;
    let (compacted, _) = working::compact(applied, u.budget, at);
    c.prepare_cached("DELETE FROM working_memory WHERE session_id = ?1 AND archived_at IS NULL")?
        .execute([&session])?;
    let mut insert = c.prepare_cached(
        "INSERT INTO working_memory (session_id, agent_id, key, kind, content, original, critical, state, tokens,
             position, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for e in &compacted {
        insert.execute(params![
            session,
            who.agent_id,
            e.key,
            e.kind.as_str(),
            e.content,
            e.original,
            e.critical,
            e.state.as_str(),
            e.tokens,
            e.position,
            coord_domain::time::to_micros(e.updated_at),
        ])?;
    }
    Ok(working::result(session, u.budget, compacted, false))
}

pub fn get_working(c: &Connection, who: &Identity, budget: i64, originals: bool) -> R<WorkingMemoryResult> {
    let session = live_session(c, who)?;
    let entries = entries(c, &session)?;
    Ok(working::result(session, budget, entries, originals))
}

/// Archives the working memory of `agent_id`'s session (its session is ending).
pub fn archive_working(c: &Connection, now: i64, agent_id: &str) -> R<()> {
    c.prepare_cached(
        "UPDATE working_memory SET archived_at = ?2
         WHERE session_id = (SELECT session_id FROM agent_sessions WHERE agent_id = ?1) AND archived_at IS NULL",
    )?
    .execute(params![agent_id, now])?;
    Ok(())
}

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn remember(&self, ctx: OpCtx, m: NewMemory) -> CoordResult<RememberResult> {
        self.op(ctx, move |c, now, who| remember(c, now, who, &m)).await
    }

    async fn recall(&self, ctx: OpCtx, q: RecallQuery, params: RankParams) -> CoordResult<RecallResult> {
        self.op(ctx, move |c, now, _| recall(c, now, &q, params)).await
    }

    async fn memory_feedback(&self, ctx: OpCtx, memory_id: String, useful: bool) -> CoordResult<MemoryFeedbackResult> {
        self.op(ctx, move |c, now, who| feedback(c, now, who, &memory_id, useful))
            .await
    }

    async fn forget_memory(&self, ctx: OpCtx, memory_id: String, admin: bool) -> CoordResult<ForgetResult> {
        self.op(ctx, move |c, _, who| forget(c, who, &memory_id, admin)).await
    }

    async fn prune_memories(&self, ctx: OpCtx, p: PruneMemories) -> CoordResult<PruneMemoriesResult> {
        self.op_long(ctx, move |c, now, _| prune(c, now, &p)).await
    }

    async fn record_skill_use(&self, ctx: OpCtx, s: SkillUse) -> CoordResult<RecordSkillUseResult> {
        self.op(ctx, move |c, now, who| {
            Ok(RecordSkillUseResult {
                success: true,
                skill: record_skill(c, now, who, &s)?,
            })
        })
        .await
    }

    async fn get_skills(&self, ctx: OpCtx, q: SkillQuery) -> CoordResult<GetSkillsResult> {
        self.op(ctx, move |c, _, _| get_skills(c, &q)).await
    }

    async fn update_working_memory(&self, ctx: OpCtx, u: WorkingUpdate) -> CoordResult<WorkingMemoryResult> {
        self.op(ctx, move |c, now, who| update_working(c, now, who, &u)).await
    }

    async fn get_working_memory(&self, ctx: OpCtx, budget: i64, originals: bool) -> CoordResult<WorkingMemoryResult> {
        self.op(ctx, move |c, _, who| get_working(c, who, budget, originals))
            .await
    }
}
