//! `memories` (episodic and procedural, one weighted `tsvector`), `memory_feedback`,
//! `working_memory`.

use crate::rows::{NOW, get, id_text, int, uuid};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::memory::query::{choose_terms, tags_text, words};
use coord_domain::memory::rank::{Candidate, RankParams};
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

pub async fn recall(tx: &Tx<'_>, ctx: &OpCtx, q: &RecallQuery, params: RankParams) -> R<RecallResult> {
    let kind = q.memory_type.map(MemoryType::as_str);
    let limit = memory::CANDIDATES;
    let mut candidates = Vec::new();
    if let Some(expr) = q.text.tsquery() {
        // Ranking costs per match, and a task's common words match tens of thousands in
        // a large store: the words are chosen by how many memories hold them (kept in
        // memory_terms), the rarest first, while that adds up to at most
        // memory::POSTINGS; the matches of the chosen words are ranked on the whole query.
        let stats = tx
            .query(
                &tx.prepare_cached(
                    "SELECT u.t, COALESCE(mt.df, 0)::bigint FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i)
                     LEFT JOIN LATERAL (SELECT (tsvector_to_array(to_tsvector('english', u.t)))[1] AS lexeme) s ON true
                     LEFT JOIN memory_terms mt ON mt.term = s.lexeme
                     ORDER BY u.i",
                )
                .await?,
                &[&q.text.terms],
            )
            .await?;
        let stats = stats
            .iter()
            .map(|r| Ok((get::<String>(r, 0)?, get::<i64>(r, 1)?)))
            .collect::<R<Vec<_>>>()?;
        let chosen = choose_terms(stats);
        if !chosen.is_empty() {
            let filter = chosen
                .iter()
                .map(|(t, _)| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(" | ");
            let rows = tx
                .query(
                    &tx.prepare_cached(&format!(
                        "SELECT {CANDIDATE_COLS}, ts_rank_cd(m.tsv, q, 32)::float8 AS score
                         FROM memories m, to_tsquery('english', $1) q, to_tsquery('english', $5) f
                         WHERE m.tsv @@ f
                           AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.memory_type = $3)
                         ORDER BY score DESC LIMIT $4"
                    ))
                    .await?,
                    &[&expr, &q.agent_id, &kind, &limit, &filter],
                )
                .await?;
            for r in &rows {
                candidates.push(candidate(r, get(r, 14)?)?);
            }
        }
    }
    if !q.tags.is_empty() || q.text.is_empty() {
        let rows = tx
            .query(
                &tx.prepare_cached(&format!(
                    "SELECT {CANDIDATE_COLS} FROM memories m
                     WHERE (cardinality($1::text[]) = 0 OR m.tags && $1::text[])
                       AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.memory_type = $3)
                     ORDER BY m.last_seen_at DESC LIMIT $4"
                ))
                .await?,
                &[&q.tags, &q.agent_id, &kind, &limit],
            )
            .await?;
        for r in &rows {
            candidates.push(candidate(r, 0.0)?);
        }
    }
    Ok(memory::answer(candidates, q, now_of(tx, ctx).await?, params))
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
