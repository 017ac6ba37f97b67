//! `memories` (episodic and procedural, one weighted `tsvector`), `memory_feedback`,
//! `working_memory`.

use crate::rows::{NOW, get, id_text, int, uuid};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::memory::query::{choose_terms, tags_text, words};
use coord_domain::memory::rank::{Candidate, RankParams};
use coord_domain::memory::retention::{PruneMemories, PruneMemoriesResult};
use coord_domain::memory::skills::{self, GetSkillsResult, RecordSkillUseResult, Skill, SkillQuery, SkillUse};
use coord_domain::memory::working::{self, Entry, EntryKind, EntryState, WorkingMemoryResult, WorkingUpdate};
use coord_domain::memory::{
    self, ForgetResult, MemoryFeedbackResult, MemoryType, Mergeable, NewMemory, Outcome, RecallQuery, RecallResult,
    RememberResult,
};
use coord_domain::{CoordResult, Timestamp};
use coord_store::{MemoryStore, OpCtx};
use tokio_postgres::Row;
use uuid::Uuid;

const CANDIDATE_COLS: &str = "m.id, m.memory_type, m.agent_id, m.event_type, m.summary, m.outcome, m.lessons, m.tags,
    m.occurrences, m.successes, m.failures, m.useful_count, m.not_useful_count, m.last_seen_at";

fn candidate(r: &Row, raw_text: f64) -> R<Candidate> {
    Ok(Candidate {
        memory_id: id_text(get(r, 0)?),
        memory_type: MemoryType::parse(get(r, 1)?).unwrap_or(MemoryType::Episodic),
        agent_id: get(r, 2)?,
        event_type: get(r, 3)?,
        summary: get(r, 4)?,
        outcome: get::<Option<&str>>(r, 5)?.and_then(Outcome::parse),
        lessons: get(r, 6)?,
        tags: get(r, 7)?,
        occurrences: i64::from(get::<i32>(r, 8)?),
        successes: i64::from(get::<i32>(r, 9)?),
        failures: i64::from(get::<i32>(r, 10)?),
        useful: i64::from(get::<i32>(r, 11)?),
        not_useful: i64::from(get::<i32>(r, 12)?),
        last_seen_at: get(r, 13)?,
        raw_text,
    })
}

const SESSION: &str = "(SELECT session_id FROM agent_sessions WHERE agent_id = $2 AND status <> 'disconnected')";

fn tags_words(tags: &[String], event_type: &str) -> String {
    words(&tags_text(tags, event_type))
}

pub async fn remember(tx: &Tx<'_>, ctx: &OpCtx, m: &NewMemory) -> R<RememberResult> {
    let key = memory::merge_key(&ctx.who.agent_id, &m.event_type, &m.summary);
    // Concurrent duplicates wait here for each other, then the second sees the first.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&format!("coord:memory:{key}")],
    )
    .await?;
    let existing = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "SELECT seq, id, details, outcome, lessons, tags, occurrences FROM memories
                 WHERE merge_key = $2 AND memory_type = 'episodic'
                   AND last_seen_at >= {NOW} - make_interval(mins => $3)
                 ORDER BY last_seen_at DESC, seq DESC LIMIT 1 FOR UPDATE"
            ))
            .await?,
            &[&ctx.now, &key, &(memory::MERGE_WINDOW_MINUTES as i32)],
        )
        .await?;
    if let Some(r) = existing {
        let seq: i64 = get(&r, 0)?;
        let id: Uuid = get(&r, 1)?;
        let old = Mergeable {
            details: get(&r, 2)?,
            outcome: get::<Option<&str>>(&r, 3)?.and_then(Outcome::parse),
            lessons: get(&r, 4)?,
            tags: get(&r, 5)?,
            occurrences: i64::from(get::<i32>(&r, 6)?),
        };
        let merged = memory::merge(old, m);
        tx.execute(
            &tx.prepare_cached(&format!(
                "UPDATE memories SET details = $3, details_words = $4, outcome = $5, lessons = $6, lessons_words = $7,
                     tags = $8, tags_words = $9, occurrences = $10, last_seen_at = GREATEST(last_seen_at, {NOW}),
                     session_id = COALESCE((SELECT session_id FROM agent_sessions
                                            WHERE agent_id = $11 AND status <> 'disconnected'), session_id)
                 WHERE seq = $2"
            ))
            .await?,
            &[
                &ctx.now,
                &seq,
                &merged.details,
                &words(&memory::details_text(merged.details.as_ref())),
                &merged.outcome.map(Outcome::as_str),
                &merged.lessons,
                &words(&merged.lessons.join(" ")),
                &merged.tags,
                &tags_words(&merged.tags, &m.event_type),
                &int(merged.occurrences),
                &ctx.who.agent_id,
            ],
        )
        .await?;
        return Ok(RememberResult {
            success: true,
            memory_id: id_text(id),
            merged: true,
            occurrences: merged.occurrences,
        });
    }
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO memories (id, memory_type, agent_id, agent_type, session_id, event_type, summary, details,
                 outcome, lessons, tags, summary_words, lessons_words, tags_words, details_words, merge_key,
                 created_at, last_seen_at)
             VALUES ($3, 'episodic', $2, $4, {SESSION}, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, {NOW}, {NOW})"
        ))
        .await?,
        &[
            &ctx.now,
            &ctx.who.agent_id,
            &uuid(&m.memory_id)?,
            &ctx.who.agent_type,
            &m.event_type,
            &m.summary,
            &m.details,
            &m.outcome.map(Outcome::as_str),
            &m.lessons,
            &m.tags,
            &words(&m.summary),
            &words(&m.lessons.join(" ")),
            &tags_words(&m.tags, &m.event_type),
            &words(&memory::details_text(m.details.as_ref())),
            &key,
        ],
    )
    .await?;
    Ok(RememberResult {
        success: true,
        memory_id: m.memory_id.clone(),
        merged: false,
        occurrences: 1,
    })
}

async fn now_of(tx: &Tx<'_>, ctx: &OpCtx) -> R<Timestamp> {
    match ctx.now {
        Some(t) => Ok(t),
        None => get(&tx.query_one("SELECT statement_timestamp()", &[]).await?, 0),
    }
}

/// What recall needs to know before it reads any memory: the sequence numbers in use
/// and how many memories hold each query word and each asked tag.
struct RecallStats {
    lowest: Option<i64>,
    highest: Option<i64>,
    /// Per query word, in the query's order.
    word_dfs: Vec<i64>,
    /// Per asked tag, in the query's order: the fewest memories holding one of its
    /// indexed words (an upper bound of the memories tagged with it).
    tag_dfs: Vec<i64>,
    /// The statement's time (the ranking's now when the clock is the database's).
    now: Timestamp,
}

async fn recall_stats(tx: &Tx<'_>, q: &RecallQuery) -> R<RecallStats> {
    // A tag is indexed as its words (tags_words), so it is looked up as them.
    let tags: Vec<String> = q.tags.iter().map(|t| words(t)).collect();
    let r = tx
        .query_one(
            &tx.prepare_cached(
                "SELECT b.lo, b.hi,
                     ARRAY(SELECT COALESCE(mt.df, 0)::bigint FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i)
                           LEFT JOIN LATERAL (SELECT (tsvector_to_array(to_tsvector('english', u.t)))[1] AS lexeme) s ON true
                           LEFT JOIN memory_terms mt ON mt.term = s.lexeme
                           ORDER BY u.i),
                     ARRAY(SELECT (SELECT COALESCE(min(COALESCE(mt.df, 0)), 0)::bigint
                                   FROM unnest(tsvector_to_array(to_tsvector('english', u.t))) AS l
                                   LEFT JOIN memory_terms mt ON mt.term = l)
                           FROM unnest($2::text[]) WITH ORDINALITY AS u(t, i)
                           ORDER BY u.i),
                     statement_timestamp()
                 FROM (SELECT min(seq) AS lo, max(seq) AS hi FROM memories) b",
            )
            .await?,
            &[&q.text.terms, &tags],
        )
        .await?;
    Ok(RecallStats {
        lowest: get(&r, 0)?,
        highest: get(&r, 1)?,
        word_dfs: get(&r, 2)?,
        tag_dfs: get(&r, 3)?,
        now: get(&r, 4)?,
    })
}

type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

pub async fn recall(tx: &Tx<'_>, ctx: &OpCtx, q: &RecallQuery, params: RankParams) -> R<RecallResult> {
    let kind = q.memory_type.map(MemoryType::as_str);
    let limit = memory::CANDIDATES;
    let stats = recall_stats(tx, q).await?;
    // Reading a matching memory's row is what a recall pays for most (the GIN indexes
    // answer row addresses, not ages): when a pass's words or tags have many postings,
    // only its matches among the newest memories expected to hold memory::SCORED of them
    // are read (the GIN index's entries intersected with a range of the primary key
    // before any row is read). With a filter (an author, a memory type) the newest
    // matches may all be filtered out: every match is read instead.
    let filtered = q.author.is_some() || q.memory_type.is_some();
    let floor = |postings: i64| match (stats.lowest, stats.highest) {
        (Some(lo), Some(hi)) if !filtered => memory::query::recent_floor(lo, hi, postings),
        _ => None,
    };

    // The text pass. A task's common words match tens of thousands of memories in a
    // large store: the words are chosen by how many memories hold them (memory_terms),
    // the rarest first, while that adds up to at most memory::POSTINGS. Beside the
    // newest matches, every match of a rare word (held by at most memory::RARE
    // memories) is read, however old, in the same scan. Each is ranked on the whole
    // query (ts_rank: cover density ranking cost 25 µs a memory, four times as much,
    // and ranked the judged benchmark no better).
    let expr = q.text.tsquery();
    let chosen = choose_terms(q.text.terms.iter().zip(stats.word_dfs.iter().copied()));
    let quoted =
        |terms: &mut dyn Iterator<Item = &String>| terms.map(|t| format!("'{t}'")).collect::<Vec<_>>().join(" | ");
    let any_word = quoted(&mut chosen.iter().map(|(t, _)| *t));
    let rare_word = quoted(&mut chosen.iter().filter(|(_, df)| *df <= memory::RARE).map(|(t, _)| *t));
    let text_floor = floor(chosen.iter().map(|(_, df)| df).sum());
    let or_rare = if text_floor.is_some() && !rare_word.is_empty() {
        " OR m.tsv @@ to_tsquery('english', $7)"
    } else {
        ""
    };
    let text_floor = text_floor.unwrap_or(i64::MIN);
    let text_sql = format!(
        "SELECT {CANDIDATE_COLS}, ts_rank(m.tsv, q, 32)::float8 AS score
         FROM memories m, to_tsquery('english', $1) q
         WHERE ((m.tsv @@ to_tsquery('english', $5) AND m.seq > $6){or_rare})
           AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.memory_type = $3)
         ORDER BY score DESC, m.seq DESC LIMIT $4"
    );
    let mut text_params: Vec<Param> = vec![&expr, &q.author, &kind, &limit, &any_word, &text_floor];
    if !or_rare.is_empty() {
        text_params.push(&rare_word);
    }
    let text_pass = async {
        if expr.is_none() || chosen.is_empty() {
            return Ok(Vec::new());
        }
        tx.query(&text_sql, &text_params).await
    };

    // The tag pass: the newest memories with one of the tags (every memory when neither
    // text nor tags were given); when the tags are common, those within the newest
    // stretch expected to hold memory::SCORED of them, and every memory with a rare tag.
    let tag_floor = if q.tags.is_empty() {
        None
    } else {
        floor(stats.tag_dfs.iter().sum())
    };
    let rare_tags: Vec<&String> = match tag_floor {
        None => Vec::new(),
        Some(_) => q
            .tags
            .iter()
            .zip(stats.tag_dfs.iter())
            .filter(|(_, df)| **df <= memory::RARE)
            .map(|(t, _)| t)
            .collect(),
    };
    let tag_floor = tag_floor.unwrap_or(i64::MIN);
    let tag_sql = format!(
        "SELECT {CANDIDATE_COLS} FROM memories m
         WHERE ((cardinality($1::text[]) = 0 OR m.tags && $1::text[]) AND m.seq > $5 OR m.tags && $6::text[])
           AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.memory_type = $3)
         ORDER BY m.tags && $6::text[] DESC, m.last_seen_at DESC LIMIT $4"
    );
    // (A memory with a rare tag is a candidate before the newest: the newest stretch
    // alone may fill the candidates.)
    let tag_params: [Param; 6] = [&q.tags, &q.author, &kind, &limit, &tag_floor, &rare_tags];
    let tag_pass = async {
        if q.tags.is_empty() && !q.text.is_empty() {
            return Ok(Vec::new());
        }
        tx.query(&tag_sql, &tag_params).await
    };

    // Both statements are prepared for this call, not cached: planned with these values
    // (how many rows the words, tags and range hold decides the plan), never a generic
    // plan. Sent together on the connection (pipelined): one wait instead of two.
    let (text_rows, tag_rows) = tokio::try_join!(text_pass, tag_pass)?;
    let mut candidates = Vec::with_capacity(text_rows.len() + tag_rows.len());
    for r in &text_rows {
        candidates.push(candidate(r, get(r, 14)?)?);
    }
    for r in &tag_rows {
        candidates.push(candidate(r, 0.0)?);
    }
    Ok(memory::answer(candidates, q, ctx.now.unwrap_or(stats.now), params))
}

pub async fn feedback(tx: &Tx<'_>, ctx: &OpCtx, memory_id: &str, useful: bool) -> R<MemoryFeedbackResult> {
    let id = uuid(memory_id)?;
    let r = tx
        .query_opt(
            &tx.prepare_cached(&format!(
                "WITH vote AS (
                     INSERT INTO memory_feedback (memory_id, agent_id, useful, at)
                     SELECT id, $3, $4, {NOW} FROM memories WHERE id = $2
                     ON CONFLICT (memory_id, agent_id) DO UPDATE SET useful = excluded.useful, at = excluded.at
                     RETURNING memory_id)
                 SELECT count(*) FROM vote"
            ))
            .await?,
            &[&ctx.now, &id, &ctx.who.agent_id, &useful],
        )
        .await?;
    if r.map(|r| get::<i64>(&r, 0)).transpose()?.unwrap_or(0) == 0 {
        return Err(memory::memory_not_found(memory_id).into());
    }
    let r = tx
        .query_one(
            &tx.prepare_cached(
                "UPDATE memories SET
                     useful_count = (SELECT count(*) FROM memory_feedback WHERE memory_id = $1 AND useful),
                     not_useful_count = (SELECT count(*) FROM memory_feedback WHERE memory_id = $1 AND NOT useful)
                 WHERE id = $1 RETURNING useful_count, not_useful_count",
            )
            .await?,
            &[&id],
        )
        .await?;
    Ok(MemoryFeedbackResult {
        success: true,
        memory_id: memory_id.to_string(),
        useful_count: i64::from(get::<i32>(&r, 0)?),
        not_useful_count: i64::from(get::<i32>(&r, 1)?),
    })
}

pub async fn forget(tx: &Tx<'_>, ctx: &OpCtx, memory_id: &str, admin: bool) -> R<ForgetResult> {
    let id = uuid(memory_id)?;
    let author: Option<String> = tx
        .query_opt(
            &tx.prepare_cached("SELECT agent_id FROM memories WHERE id = $1 FOR UPDATE")
                .await?,
            &[&id],
        )
        .await?
        .map(|r| get(&r, 0))
        .transpose()?;
    let Some(author) = author else {
        return Err(memory::memory_not_found(memory_id).into());
    };
    if author != ctx.who.agent_id && !admin {
        return Err(memory::not_memory_author(memory_id, &author).into());
    }
    tx.execute(
        &tx.prepare_cached("DELETE FROM memory_feedback WHERE memory_id = $1")
            .await?,
        &[&id],
    )
    .await?;
    tx.execute(&tx.prepare_cached("DELETE FROM memories WHERE id = $1").await?, &[&id])
        .await?;
    Ok(ForgetResult {
        success: true,
        memory_id: memory_id.to_string(),
    })
}

/// The retention rule of `coord_domain::memory::retention::expired`, in SQL ($1: the
/// cutoff). Term counts follow by the `memories` trigger.
const EXPIRED: &str = "memory_type = 'episodic' AND last_seen_at < $1 AND useful_count <= not_useful_count";

pub async fn prune(tx: &Tx<'_>, ctx: &OpCtx, p: &PruneMemories) -> R<PruneMemoriesResult> {
    let cutoff: Timestamp = get(
        &tx.query_one(
            &tx.prepare_cached(&format!("SELECT {NOW} - make_interval(days => $2::int)"))
                .await?,
            &[&ctx.now, &int(p.older_than_days)],
        )
        .await?,
        0,
    )?;
    let kept_useful: i64 = get(
        &tx.query_one(
            &tx.prepare_cached(
                "SELECT count(*) FROM memories
                 WHERE memory_type = 'episodic' AND last_seen_at < $1 AND useful_count > not_useful_count",
            )
            .await?,
            &[&cutoff],
        )
        .await?,
        0,
    )?;
    let (pruned, more) = if p.dry_run {
        let n: i64 = get(
            &tx.query_one(
                &tx.prepare_cached(&format!("SELECT count(*) FROM memories WHERE {EXPIRED}"))
                    .await?,
                &[&cutoff],
            )
            .await?,
            0,
        )?;
        (n, false)
    } else {
        // Locked in a fixed order, skipping rows a concurrent prune or merge holds.
        let ids: Vec<Uuid> = tx
            .query(
                &tx.prepare_cached(&format!(
                    "SELECT id FROM memories WHERE {EXPIRED} ORDER BY last_seen_at, id LIMIT $2
                     FOR UPDATE SKIP LOCKED"
                ))
                .await?,
                &[&cutoff, &(p.batch + 1)],
            )
            .await?
            .iter()
            .map(|r| get(r, 0))
            .collect::<R<_>>()?;
        let more = ids.len() as i64 > p.batch;
        let gone = &ids[..ids.len().min(usize::try_from(p.batch).unwrap_or(0))];
        tx.execute(
            &tx.prepare_cached("DELETE FROM memory_feedback WHERE memory_id = ANY($1)")
                .await?,
            &[&gone],
        )
        .await?;
        let n = tx
            .execute(
                &tx.prepare_cached("DELETE FROM memories WHERE id = ANY($1)").await?,
                &[&gone],
            )
            .await?;
        (i64::try_from(n).unwrap_or(i64::MAX), more)
    };
    Ok(PruneMemoriesResult {
        success: true,
        cutoff,
        pruned,
        kept_useful,
        more,
        dry_run: p.dry_run,
    })
}

const SKILL_COLS: &str = "id, summary, event_type, successes, failures, agent_id, last_seen_at";

fn skill_from_row(r: &Row) -> R<Skill> {
    Ok(Skill::new(
        id_text(get(r, 0)?),
        get(r, 1)?,
        get(r, 2)?,
        i64::from(get::<i32>(r, 3)?),
        i64::from(get::<i32>(r, 4)?),
        get(r, 5)?,
        get(r, 6)?,
    ))
}

/// Counts one use of a skill, creating it on first use (also called by `complete_work`).
pub async fn record_skill(tx: &Tx<'_>, ctx: &OpCtx, s: &SkillUse) -> R<Skill> {
    let (ok, failed) = if s.success { (1, 0) } else { (0, 1) };
    let tags = vec![s.task_type.clone()];
    let r = tx
        .query_one(
            &tx.prepare_cached(&format!(
                "INSERT INTO memories AS m (id, memory_type, agent_id, agent_type, session_id, event_type, summary,
                     tags, summary_words, tags_words, merge_key, successes, failures, created_at, last_seen_at)
                 VALUES ($3, 'procedural', $2, $4, {SESSION}, $5, $6, $7, $8, $9, $10, $11, $12, {NOW}, {NOW})
                 ON CONFLICT (merge_key) WHERE memory_type = 'procedural' DO UPDATE SET
                     successes = m.successes + excluded.successes, failures = m.failures + excluded.failures,
                     last_seen_at = GREATEST(m.last_seen_at, excluded.last_seen_at)
                 RETURNING {SKILL_COLS}"
            ))
            .await?,
            &[
                &ctx.now,
                &ctx.who.agent_id,
                &uuid(&s.memory_id)?,
                &ctx.who.agent_type,
                &s.task_type,
                &s.skill,
                &tags,
                &words(&s.skill),
                &tags_words(&tags, &s.task_type),
                &s.key(),
                &ok,
                &failed,
            ],
        )
        .await?;
    skill_from_row(&r)
}

pub async fn get_skills(tx: &Tx<'_>, q: &SkillQuery) -> R<GetSkillsResult> {
    let rows = tx
        .query(
            &tx.prepare_cached(&format!(
                "SELECT {SKILL_COLS} FROM memories WHERE memory_type = 'procedural' AND event_type = $1
                 ORDER BY last_seen_at DESC LIMIT 1000"
            ))
            .await?,
            &[&q.task_type],
        )
        .await?;
    let mut skills = rows.iter().map(skill_from_row).collect::<R<Vec<_>>>()?;
    skills::order(&mut skills);
    skills.truncate(q.limit as usize);
    Ok(GetSkillsResult { skills })
}

async fn live_session(tx: &Tx<'_>, ctx: &OpCtx) -> R<Uuid> {
    // FOR UPDATE: one session's working-memory writes are serialised (each rewrites it).
    let r = tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT session_id FROM agent_sessions WHERE agent_id = $1 AND status <> 'disconnected' FOR UPDATE",
            )
            .await?,
            &[&ctx.who.agent_id],
        )
        .await?;
    match r {
        Some(r) => get(&r, 0),
        None => Err(coord_domain::sessions::no_live_session(&ctx.who.agent_id).into()),
    }
}

fn entry_from_row(r: &Row) -> R<Entry> {
    Ok(Entry {
        key: get(r, 0)?,
        kind: EntryKind::parse(get(r, 1)?).unwrap_or_default(),
        content: get(r, 2)?,
        original: get(r, 3)?,
        critical: get(r, 4)?,
        state: EntryState::parse(get(r, 5)?).unwrap_or(EntryState::Active),
        tokens: i64::from(get::<i32>(r, 6)?),
        position: get(r, 7)?,
        updated_at: get(r, 8)?,
    })
}

async fn entries(tx: &Tx<'_>, session: Uuid) -> R<Vec<Entry>> {
    let rows = tx
        .query(
            &tx.prepare_cached(
                "SELECT key, kind, content, original, critical, state, tokens, position, updated_at
                 FROM working_memory WHERE session_id = $1 AND archived_at IS NULL ORDER BY position",
            )
            .await?,
            &[&session],
        )
        .await?;
    rows.iter().map(entry_from_row).collect()
}

pub async fn update_working(tx: &Tx<'_>, ctx: &OpCtx, u: &WorkingUpdate) -> R<WorkingMemoryResult> {
    let session = live_session(tx, ctx).await?;
    let at = now_of(tx, ctx).await?;
    let applied = working::apply(entries(tx, session).await?, &u.entries, at)?;
    let (compacted, _) = working::compact(applied, u.budget, at);
    tx.execute(
        &tx.prepare_cached("DELETE FROM working_memory WHERE session_id = $1 AND archived_at IS NULL")
            .await?,
        &[&session],
    )
    .await?;
    let insert = tx
        .prepare_cached(
            "INSERT INTO working_memory (session_id, agent_id, key, kind, content, original, critical, state, tokens,
                 position, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .await?;
    for e in &compacted {
        tx.execute(
            &insert,
            &[
                &session,
                &ctx.who.agent_id,
                &e.key,
                &e.kind.as_str(),
                &e.content,
                &e.original,
                &e.critical,
                &e.state.as_str(),
                &int(e.tokens),
                &e.position,
                &e.updated_at,
            ],
        )
        .await?;
    }
    Ok(working::result(id_text(session), u.budget, compacted, false))
}

pub async fn get_working(tx: &Tx<'_>, ctx: &OpCtx, budget: i64, originals: bool) -> R<WorkingMemoryResult> {
    let session = live_session(tx, ctx).await?;
    let entries = entries(tx, session).await?;
    Ok(working::result(id_text(session), budget, entries, originals))
}

/// Archives the working memory of the caller's session (its session is ending).
pub async fn archive_working(tx: &Tx<'_>, ctx: &OpCtx) -> R<()> {
    // The session row first, as update_working_memory locks it: the same order, so the
    // two never deadlock and an update never slips past the archiving.
    tx.execute(
        &tx.prepare_cached("SELECT 1 FROM agent_sessions WHERE agent_id = $1 FOR UPDATE")
            .await?,
        &[&ctx.who.agent_id],
    )
    .await?;
    tx.execute(
        &tx.prepare_cached(&format!(
            "UPDATE working_memory SET archived_at = {NOW}
             WHERE session_id = (SELECT session_id FROM agent_sessions WHERE agent_id = $2) AND archived_at IS NULL"
        ))
        .await?,
        &[&ctx.now, &ctx.who.agent_id],
    )
    .await?;
    Ok(())
}

#[async_trait]
impl MemoryStore for PgStore {
    async fn remember(&self, ctx: OpCtx, m: NewMemory) -> CoordResult<RememberResult> {
        self.op(ctx, m, |tx, ctx, m| Box::pin(remember(tx, ctx, m))).await
    }

    async fn recall(&self, ctx: OpCtx, q: RecallQuery, params: RankParams) -> CoordResult<RecallResult> {
        self.op(ctx, (q, params), |tx, ctx, (q, p)| Box::pin(recall(tx, ctx, q, *p)))
            .await
    }

    async fn memory_feedback(&self, ctx: OpCtx, memory_id: String, useful: bool) -> CoordResult<MemoryFeedbackResult> {
        self.op(ctx, (memory_id, useful), |tx, ctx, (id, u)| {
            Box::pin(feedback(tx, ctx, id, *u))
        })
        .await
    }

    async fn forget_memory(&self, ctx: OpCtx, memory_id: String, admin: bool) -> CoordResult<ForgetResult> {
        self.op(ctx, (memory_id, admin), |tx, ctx, (id, a)| {
            Box::pin(forget(tx, ctx, id, *a))
        })
        .await
    }

    async fn prune_memories(&self, ctx: OpCtx, p: PruneMemories) -> CoordResult<PruneMemoriesResult> {
        self.op(ctx, p, |tx, ctx, p| Box::pin(prune(tx, ctx, p))).await
    }

    async fn record_skill_use(&self, ctx: OpCtx, s: SkillUse) -> CoordResult<RecordSkillUseResult> {
        self.op(ctx, s, |tx, ctx, s| {
            Box::pin(async move {
                Ok(RecordSkillUseResult {
                    success: true,
                    skill: record_skill(tx, ctx, s).await?,
                })
            })
        })
        .await
    }

    async fn get_skills(&self, ctx: OpCtx, q: SkillQuery) -> CoordResult<GetSkillsResult> {
        self.op(ctx, q, |tx, _, q| Box::pin(get_skills(tx, q))).await
    }

    async fn update_working_memory(&self, ctx: OpCtx, u: WorkingUpdate) -> CoordResult<WorkingMemoryResult> {
        self.op(ctx, u, |tx, ctx, u| Box::pin(update_working(tx, ctx, u))).await
    }

    async fn get_working_memory(&self, ctx: OpCtx, budget: i64, originals: bool) -> CoordResult<WorkingMemoryResult> {
        self.op(ctx, (budget, originals), |tx, ctx, (b, o)| {
            Box::pin(get_working(tx, ctx, *b, *o))
        })
        .await
    }
}
