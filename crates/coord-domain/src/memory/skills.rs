//! Procedural memory: skills (reusable techniques, named in words) with how often they
//! worked, per task type. A skill is the project's, not one agent's: every agent's uses
//! count. Ranked by the Wilson lower bound of the success rate, which is honest about
//! small samples: one lucky success (0.21) never outranks 95 of 100 (0.89).

use super::rank::round;
pub use super::rank::wilson_lower_bound;
use super::{MAX_SUMMARY, merge_key, validate_kind_word};
use crate::error::CoordResult;
use crate::time::Timestamp;
use crate::validate;
use serde::{Deserialize, Serialize};

pub const DEFAULT_SKILLS_LIMIT: i64 = 10;
pub const MAX_SKILLS_LIMIT: i64 = 100;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSkillUseRequest {
    /// The technique, in words ("bisect the flaky test alone with --test-threads=1").
    #[schemars(length(min = 1, max = 1000), regex(pattern = r"\S"))]
    pub skill: String,
    /// The kind of task it was used for (`flaky-test`, `migration`, ...).
    #[schemars(length(min = 1, max = 64))]
    pub task_type: String,
    /// Whether it worked this time.
    pub success: bool,
}

/// A validated skill use.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillUse {
    /// The id the skill gets if it is new.
    pub memory_id: String,
    pub skill: String,
    pub task_type: String,
    pub success: bool,
}

impl SkillUse {
    /// A skill is one per task type and wording (whitespace and case folded), whoever
    /// records it.
    pub fn key(&self) -> String {
        merge_key("", &format!("skill:{}", self.task_type), &self.skill)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skill {
    #[schemars(extend("format" = "uuid"))]
    pub memory_id: String,
    pub skill: String,
    pub task_type: String,
    pub successes: i64,
    pub failures: i64,
    pub uses: i64,
    /// successes / uses.
    pub success_rate: f64,
    /// The Wilson lower bound of the success rate (95%): what the ranking uses.
    pub effectiveness: f64,
    /// Who recorded it first.
    pub agent_id: String,
    pub last_used_at: Timestamp,
}

impl Skill {
    pub fn new(
        memory_id: String,
        skill: String,
        task_type: String,
        successes: i64,
        failures: i64,
        agent_id: String,
        last_used_at: Timestamp,
    ) -> Skill {
        let uses = successes + failures;
        Skill {
            memory_id,
            skill,
            task_type,
            successes,
            failures,
            uses,
            success_rate: if uses > 0 {
                super::rank::round(successes as f64 / uses as f64)
            } else {
                0.0
            },
            effectiveness: round(wilson_lower_bound(successes, uses)),
            agent_id,
            last_used_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordSkillUseResult {
    pub success: bool,
    #[serde(flatten)]
    pub skill: Skill,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSkillsRequest {
    pub task_type: String,
    /// How many, most effective first; default 10, at most 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillQuery {
    pub task_type: String,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetSkillsResult {
    /// Most effective first (ties: more uses, then most recently used).
    pub skills: Vec<Skill>,
}

pub fn validate_skill_use(req: RecordSkillUseRequest, memory_id: String) -> CoordResult<SkillUse> {
    skill_use(&req.skill, &req.task_type, req.success, memory_id)
}

/// A skill use from its parts (also what `complete_work` with `skill` records).
pub fn skill_use(skill: &str, task_type: &str, success: bool, memory_id: String) -> CoordResult<SkillUse> {
    Ok(SkillUse {
        memory_id,
        skill: validate::required_text("skill", skill.trim(), MAX_SUMMARY)?,
        task_type: validate_kind_word("task_type", task_type)?,
        success,
    })
}

/// The task type a queue task's type counts as for skills: lowercase, other characters
/// as `-`, at most 64 characters (a queue task type is free text).
pub fn task_type_of(queue_task_type: &str) -> String {
    let t: String = queue_task_type
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/') {
                c
            } else {
                '-'
            }
        })
        .take(super::MAX_EVENT_TYPE)
        .collect();
    if t.is_empty() { "task".into() } else { t }
}

/// The use of `skill` a completion counts: for the task's type, a success or not.
pub fn completion_use(skill: &(String, String), queue_task_type: &str, success: bool) -> SkillUse {
    SkillUse {
        memory_id: skill.1.clone(),
        skill: skill.0.clone(),
        task_type: task_type_of(queue_task_type),
        success,
    }
}

pub fn validate_get(req: GetSkillsRequest) -> CoordResult<SkillQuery> {
    Ok(SkillQuery {
        task_type: validate_kind_word("task_type", &req.task_type)?,
        limit: validate::int_in_range(
            "limit",
            req.limit,
            DEFAULT_SKILLS_LIMIT,
            1,
            MAX_SKILLS_LIMIT,
            crate::error::ErrorCode::InvalidArgument,
        )?,
    })
}

/// Orders skills most effective first, then by uses, then most recently used, then id.
pub fn order(skills: &mut [Skill]) {
    skills.sort_by(|a, b| {
        b.effectiveness
            .total_cmp(&a.effectiveness)
            .then(b.uses.cmp(&a.uses))
            .then(b.last_used_at.cmp(&a.last_used_at))
            .then(a.memory_id.cmp(&b.memory_id))
    });
}

/// A skill as `recall` shows it.
pub fn content(skill: &str, task_type: &str, successes: i64, failures: i64) -> String {
    format!(
        "Skill for {task_type}: {skill} (worked {successes} of {} times)",
        successes + failures
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_table() {
        let cases = [
            ((0, 0), 0.0),
            ((0, 1), 0.0),
            ((1, 1), 0.2065),
            ((3, 3), 0.4385),
            ((9, 10), 0.5958),
            ((95, 100), 0.8883),
        ];
        for ((s, n), want) in cases {
            let got = wilson_lower_bound(s, n);
            assert!((got - want).abs() < 1e-3, "{s}/{n}: {got}");
        }
        // More evidence at the same rate is worth more; a higher rate at the same count too.
        assert!(wilson_lower_bound(10, 10) > wilson_lower_bound(1, 1));
        assert!(wilson_lower_bound(8, 10) > wilson_lower_bound(7, 10));
    }

    #[test]
    fn one_skill_per_task_type_and_wording() {
        let a = skill_use("Bisect  the test", "flaky-test", true, "1".into()).unwrap();
        let b = skill_use("bisect the TEST", "Flaky-Test", false, "2".into()).unwrap();
        let c = skill_use("bisect the test", "migration", true, "3".into()).unwrap();
        assert_eq!(a.key(), b.key());
        assert_ne!(a.key(), c.key());
        assert!(skill_use(" ", "x", true, "4".into()).is_err());
        assert_eq!(
            skill_use("s", " Has  Space ", true, "4".into()).unwrap().task_type,
            "has-space"
        );
        assert!(skill_use("s", "semi;colon", true, "4".into()).is_err());
    }

    #[test]
    fn queue_task_types_become_skill_task_types() {
        for (t, want) in [
            ("Code Review", "code-review"),
            ("", "task"),
            ("bench", "bench"),
            ("a\"b", "a-b"),
        ] {
            assert_eq!(task_type_of(t), want);
            assert!(validate_kind_word("task_type", &task_type_of(t)).is_ok());
        }
    }

    #[test]
    fn order_puts_proven_skills_first() {
        let t = chrono::Utc::now();
        let mut v = vec![
            Skill::new("a".into(), "lucky".into(), "t".into(), 1, 0, "x".into(), t),
            Skill::new("b".into(), "proven".into(), "t".into(), 95, 5, "x".into(), t),
            Skill::new("c".into(), "failing".into(), "t".into(), 1, 9, "x".into(), t),
        ];
        order(&mut v);
        let names: Vec<&str> = v.iter().map(|s| s.skill.as_str()).collect();
        assert_eq!(names, ["proven", "lucky", "failing"]);
    }
}
