//! `agent_profiles`, `agent_profile_assignments` and `resource_usage`.

use crate::Db;
use crate::rows::{NOW, get};
use crate::{PgStore, R, Tx};
use async_trait::async_trait;
use coord_domain::profiles::{
    self, ApplyProfilesResult, AssignProfileResult, Assignee, Assignment, ListProfilesResult, Profile, Resource,
};
use coord_domain::{CoordError, CoordResult, Timestamp};
use coord_store::{OpCtx, PolicyFacts, ProfileStore, UsageOf};
use tokio_postgres::types::Json;

/// Seeds the built-in profiles and type defaults (right after the migration that
/// creates their tables; later migrations may upgrade them the same way).
pub async fn seed_builtin(tx: &Tx<'_>) -> R<()> {
    let b = profiles::builtin();
    for p in &b.profiles {
        upsert(tx, None, "migration", p, true).await?;
    }
    for (ty, profile) in &b.type_defaults {
        tx.execute(
            "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
             VALUES ('agent_type', $1, $2, statement_timestamp(), 'migration')
             ON CONFLICT (kind, value) DO UPDATE SET profile = excluded.profile",
            &[ty, profile],
        )
        .await?;
    }
    Ok(())
}

/// Gives `agent_type` its built-in default profile unless it has one assigned.
pub async fn seed_type_default(tx: &Tx<'_>, agent_type: &str) -> R<()> {
    if let Some(profile) = profiles::builtin().type_defaults.get(agent_type) {
        tx.execute(
            "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
             SELECT 'agent_type', $1, $2, statement_timestamp(), 'migration'
             WHERE EXISTS (SELECT 1 FROM agent_profiles WHERE name = $2)
             ON CONFLICT (kind, value) DO NOTHING",
            &[&agent_type, profile],
        )
        .await?;
    }
    Ok(())
}

/// Adds the built-in profiles a database does not have yet (built-ins added by a later
/// version), leaving every existing one as it is.
pub async fn seed_missing_builtin(tx: &Tx<'_>) -> R<()> {
    for p in &profiles::builtin().profiles {
        tx.execute(
            "INSERT INTO agent_profiles (name, agent_type, trust_level, definition, builtin, updated_at, updated_by)
             VALUES ($1, $2, $3, $4, true, statement_timestamp(), 'migration') ON CONFLICT (name) DO NOTHING",
            &[&p.name, &p.agent_type, &i16::from(p.trust_level), &Json(p)],
        )
        .await?;
    }
    Ok(())
}

async fn upsert(tx: &Tx<'_>, now: Option<Timestamp>, by: &str, p: &Profile, builtin: bool) -> R<()> {
    tx.execute(
        &tx.prepare_cached(&format!(
            "INSERT INTO agent_profiles (name, agent_type, trust_level, definition, builtin, updated_at, updated_by)
             VALUES ($2, $3, $4, $5, $6, {NOW}, $7)
             ON CONFLICT (name) DO UPDATE SET agent_type = excluded.agent_type,
                 trust_level = excluded.trust_level, definition = excluded.definition,
                 updated_at = excluded.updated_at, updated_by = excluded.updated_by"
        ))
        .await?,
        &[
            &now,
            &p.name,
            &p.agent_type,
            &i16::from(p.trust_level),
            &Json(p),
            &builtin,
            &by,
        ],
    )
    .await?;
    Ok(())
}

pub(crate) async fn profile(tx: &Tx<'_>, name: &str) -> R<Option<Profile>> {
    let row = tx
        .query_opt(
            &tx.prepare_cached("SELECT definition FROM agent_profiles WHERE name = $1")
                .await?,
            &[&name],
        )
        .await?;
    row.map(|r| get::<Json<Profile>>(&r, 0).map(|j| j.0)).transpose()
}

async fn assignment(tx: &Tx<'_>, who: &Assignee) -> R<Option<String>> {
    let row = tx
        .query_opt(
            &tx.prepare_cached("SELECT profile FROM agent_profile_assignments WHERE kind = $1 AND value = $2")
                .await?,
            &[&who.kind(), &who.value()],
        )
        .await?;
    row.map(|r| get(&r, 0)).transpose()
}

/// Counts `charges` in the operation's transaction, serialised per (scope, resource) by
/// an advisory lock so concurrent calls cannot both take the last unit; answers the
/// refusal of the first one over its limit, if any (all are counted).
pub async fn apply_charges(tx: &Tx<'_>, ctx: &OpCtx) -> R<Option<CoordError>> {
    let mut over = None;
    for ch in &ctx.charges {
        let resource = ch.resource.as_str();
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('usage:' || $1 || ':' || $2, 0))",
            &[&ch.scope, &resource],
        )
        .await?;
        let count = "SELECT count(*) FROM resource_usage WHERE scope = $1 AND resource = $2";
        let before: i64 = get(&tx.query_one(count, &[&ch.scope, &resource]).await?, 0)?;
        tx.execute(
            &tx.prepare_cached(&format!(
                "INSERT INTO resource_usage (scope, resource, item, at)
                 SELECT $2, $3, item, {NOW} FROM unnest($4::text[]) AS item
                 ON CONFLICT DO NOTHING"
            ))
            .await?,
            &[&ctx.now, &ch.scope, &resource, &ch.items],
        )
        .await?;
        let after: i64 = get(&tx.query_one(count, &[&ch.scope, &resource]).await?, 0)?;
        if over.is_none() && ch.over(before.max(0) as u64, after.max(0) as u64) {
            over = Some(ch.exceeded(before.max(0) as u64));
        }
    }
    Ok(over)
}

/// The policy facts of `$2` (with type `$3`, else its session's) as the one-row relation
/// `f`, and their fingerprint over it ([`DIGEST`]).
const FACTS_FROM: &str =
    "WITH s AS (SELECT session_id::text AS session_id, started_at, agent_type FROM agent_sessions WHERE agent_id = $2),
          t AS (SELECT COALESCE($3::text, (SELECT agent_type FROM s)) AS agent_type),
          f AS (SELECT (SELECT session_id FROM s) AS session_id, (SELECT started_at FROM s) AS started_at,
                       (SELECT agent_type FROM t) AS agent_type,
                       (SELECT p.definition FROM agent_profile_assignments a JOIN agent_profiles p ON p.name = a.profile
                         WHERE a.kind = 'agent' AND a.value = $2) AS by_agent,
                       (SELECT p.definition FROM agent_profile_assignments a JOIN agent_profiles p ON p.name = a.profile
                         WHERE a.kind = 'agent_type' AND a.value = (SELECT agent_type FROM t)) AS by_type)";

/// What [`PolicyFacts::digest`] holds: the facts' row as text (a definition's `jsonb` text
/// is canonical, a missing value is empty, a time is its epoch: a time's text depends on
/// the connection's time zone), hashed.
const DIGEST: &str =
    "md5(row(f.session_id, extract(epoch FROM f.started_at), f.agent_type, f.by_agent, f.by_type)::text)";

/// The policy facts of `$2` (with type `$3`, else its session's) at `$1`, in one row.
pub(crate) static FACTS_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{FACTS_FROM} SELECT f.session_id, f.started_at, f.agent_type, f.by_agent, f.by_type, {NOW}, {DIGEST} FROM f"
    )
});

/// The audit chain's lock statement (`chain`) checking first that the facts of `$2`
/// (type `$3`) are still those of digest `$4` — a premise of an operation decided on the
/// caller's last facts (`predicted`), which fails (`coord_expect`) otherwise — and then
/// taking the lock (`$5`): its key is computed from the check, so the check runs outside
/// the chain's critical section. `settings` (what the durability adds, ending in ", ")
/// come first. `$1` (the time) is not read, and typed for the statement to prepare. One
/// statement, where the premise had one of its own. The lock is taken whenever the
/// statement succeeds: `coord_expect` (migration 0027) raises or answers true, never
/// NULL, and `f` is always one row (scalar subqueries, no `FROM`).
pub(crate) fn facts_hold_then_lock(settings: &str) -> String {
    format!(
        "{FACTS_FROM} SELECT {settings}$1::timestamptz,
             pg_advisory_xact_lock(CASE WHEN coord_expect({DIGEST} = $4) THEN $5::bigint END) FROM f"
    )
}

/// A row of [`FACTS_SQL`] as facts, without usage.
pub(crate) fn facts_of(row: &tokio_postgres::Row) -> R<PolicyFacts> {
    let session_id: Option<String> = get(row, 0)?;
    let started: Option<Timestamp> = get(row, 1)?;
    Ok(PolicyFacts {
        guardrail_violations: 0,
        agent_type: get(row, 2)?,
        by_agent: get::<Option<Json<Profile>>>(row, 3)?.map(|j| j.0),
        by_type: get::<Option<Json<Profile>>>(row, 4)?.map(|j| j.0),
        session: session_id.zip(started),
        now: get(row, 5)?,
        usage: Vec::new(),
        digest: get(row, 6)?,
    })
}

async fn facts<C: Db>(
    c: &C,
    now: Option<Timestamp>,
    agent_id: &str,
    agent_type: Option<&str>,
    of: &UsageOf,
) -> R<PolicyFacts> {
    let row = c
        .query_one(&c.prepare_cached(&FACTS_SQL).await?, &[&now, &agent_id, &agent_type])
        .await?;
    let mut facts = facts_of(&row)?;
    let session_id = facts.session.as_ref().map(|s| s.0.clone());
    if let Some(scope) = of.scope(agent_id, session_id.as_deref()) {
        facts.usage = c
            .query(
                "SELECT resource, count(*) FROM resource_usage WHERE scope = $1 GROUP BY resource",
                &[&scope],
            )
            .await?
            .iter()
            .map(|r| Ok((get::<String>(r, 0)?, get::<i64>(r, 1)?)))
            .collect::<R<Vec<_>>>()?
            .into_iter()
            .filter_map(|(r, n)| Some((Resource::parse(&r)?, n.max(0) as u64)))
            .collect();
    }
    facts.guardrail_violations = match of {
        UsageOf::Nothing => 0,
        _ => crate::violations::blocked_count(c, agent_id).await?,
    };
    Ok(facts)
}

/// Refuses with `policy_changed` when the caller's facts, read in this transaction, are
/// not the ones the pipeline decided with (`OpCtx::policy`); nothing to check otherwise.
pub(crate) async fn verify(tx: &Tx<'_>, ctx: &OpCtx) -> R<()> {
    let Some(check) = &ctx.policy else { return Ok(()) };
    let Some(row) = tx.checked().await? else {
        return Err(CoordError::internal().into());
    };
    if !check.holds(&facts_of(&row)?) {
        return Err(coord_store::PolicyCheck::changed().into());
    }
    if let Some(seen) = &check.rules {
        let stands: Option<String> = get(
            &tx.query_one(
                &tx.prepare_cached(&crate::guardrail_rules::RULES_DIGEST_SQL).await?,
                &[],
            )
            .await?,
            0,
        )?;
        if stands.as_ref() != Some(seen) {
            return Err(coord_store::PolicyCheck::changed().into());
        }
    }
    Ok(())
}

async fn list(tx: &Tx<'_>) -> R<ListProfilesResult> {
    let profiles = tx
        .query(
            "SELECT definition FROM agent_profiles ORDER BY trust_level DESC, name COLLATE \"C\"",
            &[],
        )
        .await?
        .iter()
        .map(|r| get::<Json<Profile>>(r, 0).map(|j| j.0))
        .collect::<R<Vec<_>>>()?;
    let assignments = tx
        .query(
            "SELECT kind, value, profile FROM agent_profile_assignments ORDER BY kind COLLATE \"C\", value COLLATE \"C\"",
            &[],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(Assignment {
                kind: get(r, 0)?,
                value: get(r, 1)?,
                profile: get(r, 2)?,
            })
        })
        .collect::<R<Vec<_>>>()?;
    Ok(ListProfilesResult {
        success: true,
        profiles,
        assignments,
    })
}

async fn apply(tx: &Tx<'_>, ctx: &OpCtx, list: &[Profile]) -> R<ApplyProfilesResult> {
    let mut changes = Vec::with_capacity(list.len());
    for p in list {
        let change = profiles::change(profile(tx, &p.name).await?, p.clone());
        if change.action != "unchanged" {
            upsert(tx, ctx.now, &ctx.who.agent_id, &change.after, false).await?;
        }
        changes.push(change);
    }
    Ok(ApplyProfilesResult { success: true, changes })
}

pub(crate) async fn assign(
    tx: &Tx<'_>,
    ctx: &OpCtx,
    (who, name): &(Assignee, Option<String>),
) -> R<AssignProfileResult> {
    let before = assignment(tx, who).await?;
    match name {
        Some(n) => {
            if profile(tx, n).await?.is_none() {
                return Err(profiles::profile_not_found(n).into());
            }
            tx.execute(
                &tx.prepare_cached(&format!(
                    "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
                     VALUES ($2, $3, $4, {NOW}, $5)
                     ON CONFLICT (kind, value) DO UPDATE SET profile = excluded.profile,
                         assigned_at = excluded.assigned_at, assigned_by = excluded.assigned_by"
                ))
                .await?,
                &[&ctx.now, &who.kind(), &who.value(), n, &ctx.who.agent_id],
            )
            .await?;
        }
        None => {
            tx.execute(
                "DELETE FROM agent_profile_assignments WHERE kind = $1 AND value = $2",
                &[&who.kind(), &who.value()],
            )
            .await?;
        }
    }
    Ok(profiles::assigned(who, before, name.clone()))
}

#[async_trait]
impl ProfileStore for PgStore {
    async fn policy_facts(
        &self,
        now: Option<Timestamp>,
        agent_id: &str,
        agent_type: Option<&str>,
        usage: UsageOf,
    ) -> CoordResult<PolicyFacts> {
        let client = self.client().await?;
        facts(&client, now, agent_id, agent_type, &usage)
            .await
            .map_err(CoordError::from)
    }

    async fn list_profiles(&self, ctx: OpCtx) -> CoordResult<ListProfilesResult> {
        self.op(ctx, (), |tx, _, _| Box::pin(list(tx))).await
    }

    async fn apply_profiles(&self, ctx: OpCtx, profiles: Vec<Profile>) -> CoordResult<ApplyProfilesResult> {
        self.op(ctx, profiles, |tx, ctx, a| Box::pin(apply(tx, ctx, a))).await
    }

    async fn assign_profile(
        &self,
        ctx: OpCtx,
        who: Assignee,
        profile: Option<String>,
    ) -> CoordResult<AssignProfileResult> {
        self.op(ctx, (who, profile), |tx, ctx, a| Box::pin(assign(tx, ctx, a)))
            .await
    }
}
