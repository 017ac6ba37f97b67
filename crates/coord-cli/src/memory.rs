//! `coord memory`: agent memory from the shell (the operations agents call over MCP).

use crate::args::MemoryCommand;
use crate::context::Context;
use crate::output::{Output, table};
use coord_domain::access::Principal;
use coord_domain::memory::retention::PruneMemoriesRequest;
use coord_domain::memory::skills::{GetSkillsRequest, RecordSkillUseRequest, Skill};
use coord_domain::memory::working::GetWorkingMemoryRequest;
use coord_domain::memory::{
    ForgetRequest, MemoryFeedbackRequest, Outcome, RecallRequest, RecallResult, RememberRequest,
};
use coord_service::ops::memory::{
    Forget, GetSkills, GetWorkingMemory, MemoryFeedback, PruneMemories, Recall, RecordSkillUse, Remember,
};
use coord_service::{Coordination, call};

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_string()
    }
}

fn render_recall(r: &RecallResult) -> String {
    if r.memories.is_empty() {
        return "no relevant memories".into();
    }
    let mut t = table(&["RELEVANCE", "TYPE", "EVENT", "SEEN", "MEMORY", "CONTENT"]);
    for m in &r.memories {
        t.add_row(vec![
            format!("{:.3}", m.relevance),
            m.memory_type.as_str().to_string(),
            m.event_type.clone(),
            m.last_seen_at.format("%Y-%m-%d").to_string(),
            m.memory_id.clone(),
            first_line(&m.content, 80),
        ]);
    }
    let mut out = t.to_string();
    for m in r.memories.iter().filter(|m| m.explain.is_some()) {
        if let Some(e) = m.explain {
            out.push_str(&format!(
                "\n{}: text {:.3} tags {:.3} → match {:.3} × recency {:.3} (age {:.1} d) × substance {:.3} × usefulness {:.3}",
                m.memory_id, e.text, e.tags, e.matched, e.recency, e.age_days, e.substance, e.usefulness
            ));
        }
    }
    out
}

fn render_skills(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return "no skills recorded for this task type".into();
    }
    let mut t = table(&["EFFECTIVENESS", "WORKED", "USES", "LAST USED", "SKILL"]);
    for s in skills {
        t.add_row(vec![
            format!("{:.3}", s.effectiveness),
            s.successes.to_string(),
            s.uses.to_string(),
            s.last_used_at.format("%Y-%m-%d").to_string(),
            first_line(&s.skill, 80),
        ]);
    }
    t.to_string()
}

pub async fn run(cmd: MemoryCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = Principal::local(ctx.caller.clone());
    let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
    match cmd {
        MemoryCommand::Remember {
            event_type,
            summary,
            details,
            outcome,
            lessons,
            tags,
        } => {
            let req = RememberRequest {
                event_type,
                summary,
                details: details.map(serde_json::Value::String),
                outcome: outcome.as_deref().and_then(Outcome::parse),
                lessons: some(lessons),
                tags: some(tags),
            };
            out.result(call::<Remember, _>(coord, &me, req).await, |r| {
                if r.merged {
                    format!("merged into memory {} (seen {} times)", r.memory_id, r.occurrences)
                } else {
                    format!("remembered {}", r.memory_id)
                }
            })
        }
        MemoryCommand::Recall {
            task,
            tags,
            limit,
            agent,
            explain,
        } => {
            let req = RecallRequest {
                task_description: task.join(" "),
                tags: some(tags),
                limit,
                author: agent,
                memory_type: None,
                explain: explain.then_some(true),
            };
            out.result(call::<Recall, _>(coord, &me, req).await, render_recall)
        }
        MemoryCommand::Feedback { memory_id, useful, .. } => {
            let req = MemoryFeedbackRequest { memory_id, useful };
            out.result(call::<MemoryFeedback, _>(coord, &me, req).await, |r| {
                format!(
                    "memory {}: {} useful, {} not useful",
                    r.memory_id, r.useful_count, r.not_useful_count
                )
            })
        }
        MemoryCommand::Forget { memory_id } => {
            let req = ForgetRequest { memory_id };
            out.result(call::<Forget, _>(coord, &me, req).await, |r| {
                format!("forgot memory {}", r.memory_id)
            })
        }
        MemoryCommand::Prune {
            older_than_days,
            dry_run,
        } => {
            let req = PruneMemoriesRequest {
                older_than_days,
                dry_run: dry_run.then_some(true),
            };
            out.result(call::<PruneMemories, _>(coord, &me, req).await, render_prune)
        }
        MemoryCommand::Skills { task_type, limit } => {
            let req = GetSkillsRequest { task_type, limit };
            out.result(call::<GetSkills, _>(coord, &me, req).await, |r| {
                render_skills(&r.skills)
            })
        }
        MemoryCommand::SkillUse {
            skill,
            task_type,
            success,
            ..
        } => {
            let req = RecordSkillUseRequest {
                skill,
                task_type,
                success,
            };
            out.result(call::<RecordSkillUse, _>(coord, &me, req).await, |r| {
                render_skills(std::slice::from_ref(&r.skill))
            })
        }
        MemoryCommand::Working { originals } => {
            let req = GetWorkingMemoryRequest {
                include_originals: originals.then_some(true),
            };
            out.result(call::<GetWorkingMemory, _>(coord, &me, req).await, render_working)
        }
    }
}

/// A session's working memory: its entries, then its tokens against the budget.
fn render_working(r: &coord_domain::memory::working::WorkingMemoryResult) -> String {
    let mut t = table(&["KEY", "KIND", "STATE", "TOKENS", "CRITICAL", "CONTENT"]);
    for e in &r.entries {
        t.add_row(vec![
            e.key.clone(),
            e.kind.as_str().to_string(),
            e.state.as_str().to_string(),
            e.tokens.to_string(),
            if e.critical { "yes".into() } else { String::new() },
            first_line(e.original.as_deref().unwrap_or(&e.content), 70),
        ]);
    }
    format!(
        "{t}\nsession {}: {} of {} tokens ({} as written){}",
        r.session_id,
        r.tokens,
        r.budget,
        r.tokens_before,
        if r.over_budget {
            "; OVER BUDGET (critical entries alone exceed it)"
        } else {
            ""
        }
    )
}

fn render_prune(r: &coord_domain::memory::retention::PruneMemoriesResult) -> String {
    let verb = if r.dry_run { "would remove" } else { "removed" };
    let more = if r.more { " (more remain: run it again)" } else { "" };
    format!(
        "{verb} {} memories last seen before {}; kept {} voted useful{more}",
        r.pruned,
        r.cutoff.format("%Y-%m-%d %H:%M:%SZ"),
        r.kept_useful
    )
}
