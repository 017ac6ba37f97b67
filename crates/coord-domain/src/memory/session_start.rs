//! What a session is told from memory when it starts (Claude Code's SessionStart hook):
//! the few memories clearly relevant to what it is about to do, and its working memory,
//! each within a small budget of the model's context. The hook fetches; these decide.

use super::RecalledMemory;
use super::working::{Entry, EntryState};
use crate::handoffs::Handoff;

/// How much of the model's context the session-start memories may take.
pub const MEMORY_BUDGET_CHARS: usize = 1200;
/// How much of it the session's working memory may take (after a compaction).
pub const WORKING_BUDGET_CHARS: usize = 2000;
/// How many memories are recalled for it (fewer are shown: only the clearly relevant).
pub const RECALL_LIMIT: i64 = 3;
/// The longest recall query it sends.
const QUERY_CHARS: usize = 4000;

/// What the session is about to do: its claimed tasks, its handoff's summary and open
/// work (empty: nothing to go on, the project's newest memories are recalled).
pub fn recall_query(claimed_tasks: &[String], handoff: Option<&Handoff>) -> String {
    let mut about: Vec<&str> = claimed_tasks.iter().map(String::as_str).collect();
    if let Some(h) = handoff {
        about.push(&h.summary);
        about.extend(h.in_progress.iter().map(String::as_str));
        about.extend(h.next_steps.iter().map(String::as_str));
    }
    about.join("\n").chars().take(QUERY_CHARS).collect()
}

/// The recalled memories worth the context: at least half the best one's relevance (a
/// memory that shares one common word with the task is noise in a context this small),
/// one line each, within [`MEMORY_BUDGET_CHARS`]. Empty when none is.
pub fn memories_block(recalled: &[RecalledMemory]) -> String {
    let best = recalled.first().map_or(0.0, |m| m.relevance);
    let floor = (best / 2.0).max(0.1);
    let relevant: Vec<&RecalledMemory> = recalled.iter().filter(|m| m.relevance >= floor).collect();
    if relevant.is_empty() {
        return String::new();
    }
    let mut text = String::from("Memories of this project that may help (memory_feedback says whether they did):\n");
    for m in relevant {
        let content: String = m.content.replace('\n', " — ").chars().take(400).collect();
        let line = format!("  - [{}] {} (memory {})\n", m.event_type, content, m.memory_id);
        if text.len() + line.len() > MEMORY_BUDGET_CHARS {
            break;
        }
        text.push_str(&line);
    }
    text
}

/// The session's working memory, folded entries left out, within
/// [`WORKING_BUDGET_CHARS`] (a pointer to the rest past it). Empty when it has none.
pub fn working_block(entries: &[Entry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut block = String::from("Your working memory (update_working_memory keeps it):\n");
    for e in entries.iter().filter(|e| e.state != EntryState::Folded) {
        let critical = if e.critical { ", critical" } else { "" };
        let line = format!(
            "  - {} ({}{critical}): {}\n",
            e.key,
            e.kind.as_str(),
            e.content.replace('\n', " ")
        );
        if block.len() + line.len() > WORKING_BUDGET_CHARS {
            block.push_str("  (more: get_working_memory)\n");
            break;
        }
        block.push_str(&line);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryType;
    use crate::memory::working::EntryKind;

    fn memory(id: &str, relevance: f64, content: &str) -> RecalledMemory {
        RecalledMemory {
            memory_type: MemoryType::Episodic,
            memory_id: id.into(),
            content: content.into(),
            relevance,
            event_type: "fix".into(),
            tags: Vec::new(),
            outcome: None,
            occurrences: 1,
            agent_id: "a".into(),
            last_seen_at: chrono::DateTime::UNIX_EPOCH,
            explain: None,
        }
    }

    fn entry(key: &str, state: EntryState, content: &str) -> Entry {
        Entry {
            key: key.into(),
            kind: EntryKind::Finding,
            content: content.into(),
            critical: key == "k1",
            state,
            tokens: 1,
            original: None,
            position: 0,
            updated_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn the_query_is_the_claimed_work_then_the_handoffs_open_work() {
        let h = Handoff {
            id: "h".into(),
            agent_name: "a".into(),
            agent_type: "t".into(),
            session_id: None,
            summary: "summary".into(),
            completed_work: vec!["done".into()],
            in_progress: vec!["doing".into()],
            decisions: vec!["decided".into()],
            next_steps: vec!["next".into()],
            relevant_files: Vec::new(),
            created_at: chrono::DateTime::UNIX_EPOCH,
        };
        let cases: &[(&[&str], Option<&Handoff>, &str)] = &[
            (&[], None, ""),
            (&["task a", "task b"], None, "task a\ntask b"),
            (&["task"], Some(&h), "task\nsummary\ndoing\nnext"),
        ];
        for (tasks, handoff, want) in cases {
            let tasks: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
            assert_eq!(recall_query(&tasks, *handoff), *want);
        }
        let long = vec!["x".repeat(QUERY_CHARS + 10)];
        assert_eq!(recall_query(&long, None).chars().count(), QUERY_CHARS, "bounded");
    }

    #[test]
    fn only_clearly_relevant_memories_within_the_budget() {
        let cases: Vec<(Vec<RecalledMemory>, Vec<&str>)> = vec![
            (vec![], vec![]),
            (
                vec![memory("m1", 0.9, "a"), memory("m2", 0.5, "b"), memory("m3", 0.3, "c")],
                vec!["m1", "m2"],
            ),
            // Below the absolute floor, even the best is noise.
            (vec![memory("m1", 0.05, "a")], vec![]),
            (
                vec![
                    memory("m1", 0.8, &"long ".repeat(100)),
                    memory("m2", 0.8, &"long ".repeat(100)),
                    memory("m3", 0.8, &"long ".repeat(100)),
                ],
                vec!["m1", "m2"],
            ),
        ];
        for (recalled, shown) in cases {
            let text = memories_block(&recalled);
            for m in &recalled {
                assert_eq!(
                    text.contains(&format!("(memory {})", m.memory_id)),
                    shown.contains(&m.memory_id.as_str()),
                    "{text}"
                );
            }
            assert!(text.len() <= MEMORY_BUDGET_CHARS);
            assert_eq!(text.is_empty(), shown.is_empty());
        }
        assert!(memories_block(&[memory("m1", 0.9, "line one\nline two")]).contains("line one — line two"));
    }

    #[test]
    fn the_working_memory_without_folded_entries_and_with_a_pointer_past_the_budget() {
        assert_eq!(working_block(&[]), "");
        let text = working_block(&[
            entry("k1", EntryState::Active, "a\nb"),
            entry("k2", EntryState::Folded, "gone"),
        ]);
        assert_eq!(
            text,
            "Your working memory (update_working_memory keeps it):\n  - k1 (finding, critical): a b\n"
        );
        let many: Vec<Entry> = (0..50)
            .map(|i| entry(&format!("k{i}"), EntryState::Active, &"x".repeat(80)))
            .collect();
        let text = working_block(&many);
        assert!(text.ends_with("  (more: get_working_memory)\n") && text.len() <= WORKING_BUDGET_CHARS + 40);
    }
}
