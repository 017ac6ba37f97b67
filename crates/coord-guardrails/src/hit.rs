//! A finding before it is tied to the command it was found in: what every rule answers
//! (the program rules of [`crate::rules`], the SQL reader of [`crate::sql`], the argv
//! patterns of [`crate::patterns`]).

use coord_domain::guardrails::{Action, Category};

/// A finding before it is tied to the command it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub category: Category,
    pub operation: String,
    pub action: Action,
    pub reason: String,
}

pub(crate) fn hit(category: Category, operation: &str, action: Action, reason: impl Into<String>) -> Hit {
    Hit {
        category,
        operation: operation.into(),
        action,
        reason: reason.into(),
    }
}

/// A migration: what every runner and SQL schema change answers.
pub(crate) fn migrate_hit(what: String) -> Hit {
    hit(
        Category::DatabaseMigration,
        "migrate",
        Action::RequireTrust(3),
        format!("{what} changes a database schema: it needs trust level 3 or more (and a review of the migration)"),
    )
}
