//! SQL both stores run alike (the engines share the standard `FILTER` clause): built
//! here once, so that no SQL lives outside the store crates and none is copied.

use coord_domain::stats::CLAIM_TO_COMPLETE_BOUNDS;

/// The query both stores run for [`coord_domain::stats::VerificationCounts`], given `seconds`, the store's
/// expression for a run's submission-to-end time: the four counts, the count and sum
/// of times, then one column per bound.
pub fn verification_sql(seconds: &str) -> String {
    format!(
        "SELECT count(*) FILTER (WHERE status = 'passed'), count(*) FILTER (WHERE status = 'failed'),
                count(*) FILTER (WHERE status = 'timed_out'), count(*) FILTER (WHERE status = 'error'),
                count(d), coalesce(sum(d), 0.0), {}
           FROM (SELECT status, {seconds} AS d FROM verification_results
                  WHERE status IN ('passed', 'failed', 'timed_out', 'error')) v",
        bucket_columns("d")
    )
}

/// The aggregate columns a store's claim-to-complete query selects after `count(*)` and
/// the sum: one `count(*) FILTER (...)` per bound of [`CLAIM_TO_COMPLETE_BOUNDS`], over
/// `seconds`, the store's expression for a task's claim-to-complete time (both engines
/// take the standard `FILTER` clause).
pub fn bucket_columns(seconds: &str) -> String {
    CLAIM_TO_COMPLETE_BOUNDS
        .iter()
        .map(|le| format!("count(*) FILTER (WHERE {seconds} <= {le:.1})"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_columns_name_every_bound() {
        let sql = bucket_columns("d");
        assert!(sql.starts_with("count(*) FILTER (WHERE d <= 10.0), count(*) FILTER (WHERE d <= 30.0)"));
        assert!(sql.ends_with("count(*) FILTER (WHERE d <= 86400.0)"));
        assert_eq!(sql.matches("FILTER").count(), CLAIM_TO_COMPLETE_BOUNDS.len());
    }
}
