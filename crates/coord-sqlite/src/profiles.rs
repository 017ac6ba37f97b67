//! `agent_profiles`, `agent_profile_assignments` and `resource_usage`.

use crate::rows::{json, to_json, ts};
use crate::{R, SqliteStore, now_micros};
use async_trait::async_trait;
use coord_domain::profiles::{
    self, ApplyProfilesResult, AssignProfileResult, Assignee, Assignment, ListProfilesResult, Profile, Resource,
};
use coord_domain::time::from_micros;
use coord_domain::{CoordError, CoordResult, Identity, Timestamp};
use coord_store::{Charge, OpCtx, PolicyFacts, ProfileStore, UsageOf};
use rusqlite::{Connection, OptionalExtension, params};

/// Seeds the built-in profiles and type defaults (right after the migration that
/// creates their tables; later migrations may upgrade them the same way).
pub fn seed_builtin(c: &Connection) -> R<()> {
    let b = profiles::builtin();
    let now = now_micros(None);
    for p in &b.profiles {
        upsert(c, now, "migration", p, true)?;
    }
    for (ty, profile) in &b.type_defaults {
        c.execute(
            "INSERT OR REPLACE INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
             VALUES ('agent_type', ?1, ?2, ?3, 'migration')",
            params![ty, profile, now],
        )?;
    }
    Ok(())
}

/// Gives `agent_type` its built-in default profile unless it has one assigned.
pub fn seed_type_default(c: &Connection, agent_type: &str) -> R<()> {
    if let Some(profile) = profiles::builtin().type_defaults.get(agent_type) {
        c.execute(
            "INSERT INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
             SELECT 'agent_type', ?1, ?2, ?3, 'migration' WHERE EXISTS (SELECT 1 FROM agent_profiles WHERE name = ?2)
             ON CONFLICT (kind, value) DO NOTHING",
            params![agent_type, profile, now_micros(None)],
        )?;
    }
    Ok(())
}

/// Adds the built-in profiles a database does not have yet (built-ins added by a later
/// version), leaving every existing one as it is.
pub fn seed_missing_builtin(c: &Connection) -> R<()> {
    let now = now_micros(None);
    for p in &profiles::builtin().profiles {
        c.execute(
            "INSERT INTO agent_profiles (name, agent_type, trust_level, definition, builtin, updated_at, updated_by)
             VALUES (?1, ?2, ?3, ?4, 1, ?5, 'migration') ON CONFLICT (name) DO NOTHING",
            params![p.name, p.agent_type, p.trust_level, to_json(p), now],
        )?;
    }
    Ok(())
}

fn upsert(c: &Connection, now: i64, by: &str, p: &Profile, builtin: bool) -> R<()> {
    c.prepare_cached(
        "INSERT INTO agent_profiles (name, agent_type, trust_level, definition, builtin, updated_at, updated_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (name) DO UPDATE SET agent_type = excluded.agent_type, trust_level = excluded.trust_level,
             definition = excluded.definition, updated_at = excluded.updated_at, updated_by = excluded.updated_by",
    )?
    .execute(params![
        p.name,
        p.agent_type,
        p.trust_level,
        to_json(p),
        builtin,
        now,
        by
    ])?;
    Ok(())
}

pub(crate) fn profile(c: &Connection, name: &str) -> R<Option<Profile>> {
    Ok(
        c.prepare_cached("SELECT definition FROM agent_profiles WHERE name = ?1")?
            .query_row([name], |r| json(r, 0))
            .optional()?,
    )
}

fn assigned(c: &Connection, kind: &str, value: &str) -> R<Option<Profile>> {
    Ok(c.prepare_cached(
        "SELECT p.definition FROM agent_profile_assignments a JOIN agent_profiles p ON p.name = a.profile
         WHERE a.kind = ?1 AND a.value = ?2",
    )?
    .query_row([kind, value], |r| json(r, 0))
    .optional()?)
}

fn assignment(c: &Connection, who: &Assignee) -> R<Option<String>> {
    Ok(
        c.prepare_cached("SELECT profile FROM agent_profile_assignments WHERE kind = ?1 AND value = ?2")?
            .query_row([who.kind(), who.value()], |r| r.get(0))
            .optional()?,
    )
}

fn usage(c: &Connection, scope: &str) -> R<Vec<(Resource, u64)>> {
    let rows = c
        .prepare_cached("SELECT resource, count(*) FROM resource_usage WHERE scope = ?1 GROUP BY resource")?
        .query_map([scope], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(r, n)| Some((Resource::parse(&r)?, n.max(0) as u64)))
        .collect())
}

fn count(c: &Connection, ch: &Charge) -> R<u64> {
    let n: i64 = c
        .prepare_cached("SELECT count(*) FROM resource_usage WHERE scope = ?1 AND resource = ?2")?
        .query_row(params![ch.scope, ch.resource.as_str()], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// Counts `charges` in the current transaction (the single writer serialises them);
/// answers the refusal of the first one over its limit, if any (all are counted).
pub fn apply_charges(c: &Connection, now: i64, charges: &[Charge]) -> R<Option<CoordError>> {
    let mut over = None;
    for ch in charges {
        let before = count(c, ch)?;
        let mut insert = c.prepare_cached(
            "INSERT OR IGNORE INTO resource_usage (scope, resource, item, at) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for item in &ch.items {
            insert.execute(params![ch.scope, ch.resource.as_str(), item, now])?;
        }
        if over.is_none() && ch.over(before, count(c, ch)?) {
            over = Some(ch.exceeded(before));
        }
    }
    Ok(over)
}

fn facts(c: &Connection, now: i64, agent_id: &str, agent_type: Option<&str>, of: &UsageOf) -> R<PolicyFacts> {
    let session: Option<(String, Timestamp, String)> = c
        .prepare_cached("SELECT session_id, started_at, agent_type FROM agent_sessions WHERE agent_id = ?1")?
        .query_row([agent_id], |r| Ok((r.get(0)?, ts(r, 1)?, r.get(2)?)))
        .optional()?;
    let agent_type = agent_type
        .map(String::from)
        .or_else(|| session.as_ref().map(|s| s.2.clone()));
    let by_type = match &agent_type {
        Some(t) => assigned(c, "agent_type", t)?,
        None => None,
    };
    let usage = match of.scope(agent_id, session.as_ref().map(|s| s.0.as_str())) {
        Some(scope) => usage(c, &scope)?,
        None => Vec::new(),
    };
    let guardrail_violations = match of {
        UsageOf::Nothing => 0,
        _ => crate::violations::blocked_count(c, agent_id)?,
    };
    Ok(PolicyFacts {
        guardrail_violations,
        by_agent: assigned(c, "agent", agent_id)?,
        by_type,
        agent_type,
        session: session.map(|(id, started, _)| (id, started)),
        now: from_micros(now),
        usage,
        digest: None,
    })
}

pub(crate) fn assign(
    c: &Connection,
    now: i64,
    me: &Identity,
    who: &Assignee,
    name: Option<String>,
) -> R<AssignProfileResult> {
    let before = assignment(c, who)?;
    match &name {
        Some(n) => {
            if profile(c, n)?.is_none() {
                return Err(profiles::profile_not_found(n).into());
            }
            c.prepare_cached(
                "INSERT OR REPLACE INTO agent_profile_assignments (kind, value, profile, assigned_at, assigned_by)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![who.kind(), who.value(), n, now, me.agent_id])?;
        }
        None => {
            c.prepare_cached("DELETE FROM agent_profile_assignments WHERE kind = ?1 AND value = ?2")?
                .execute([who.kind(), who.value()])?;
        }
    }
    Ok(profiles::assigned(who, before, name))
}

#[async_trait]
impl ProfileStore for SqliteStore {
    async fn policy_facts(
        &self,
        now: Option<Timestamp>,
        agent_id: &str,
        agent_type: Option<&str>,
        usage: UsageOf,
    ) -> CoordResult<PolicyFacts> {
        let (agent_id, agent_type) = (agent_id.to_string(), agent_type.map(String::from));
        // Every operation reads these first: a few point reads by key, run here when the
        // connection is free rather than handed to another thread and back.
        // One read transaction for them all: one snapshot, and one round of WAL read
        // locks instead of one per statement.
        self.read_quick(move |c| {
            let read = |c: &Connection| facts(c, now_micros(now), &agent_id, agent_type.as_deref(), &usage);
            if !c.is_autocommit() {
                // Left in a transaction by a failure (the next write rolls it back): read
                // as it stands rather than fail.
                return read(c);
            }
            let tx = c.unchecked_transaction()?;
            let facts = read(&tx)?;
            tx.commit()?;
            Ok(facts)
        })
        .await
    }

    async fn list_profiles(&self, ctx: OpCtx) -> CoordResult<ListProfilesResult> {
        self.op(ctx, |c, _, _| {
            let profiles = c
                .prepare_cached("SELECT definition FROM agent_profiles ORDER BY trust_level DESC, name")?
                .query_map([], |r| json(r, 0))?
                .collect::<rusqlite::Result<Vec<Profile>>>()?;
            let assignments = c
                .prepare_cached("SELECT kind, value, profile FROM agent_profile_assignments ORDER BY kind, value")?
                .query_map([], |r| {
                    Ok(Assignment {
                        kind: r.get(0)?,
                        value: r.get(1)?,
                        profile: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(ListProfilesResult {
                success: true,
                profiles,
                assignments,
            })
        })
        .await
    }

    async fn apply_profiles(&self, ctx: OpCtx, list: Vec<Profile>) -> CoordResult<ApplyProfilesResult> {
        self.op(ctx, move |c, now, who| {
            let mut changes = Vec::with_capacity(list.len());
            for p in list {
                let change = profiles::change(profile(c, &p.name)?, p);
                if change.action != "unchanged" {
                    upsert(c, now, &who.agent_id, &change.after, false)?;
                }
                changes.push(change);
            }
            Ok(ApplyProfilesResult { success: true, changes })
        })
        .await
    }

    async fn assign_profile(
        &self,
        ctx: OpCtx,
        who: Assignee,
        name: Option<String>,
    ) -> CoordResult<AssignProfileResult> {
        self.op(ctx, move |c, now, me| assign(c, now, me, &who, name)).await
    }
}
