//! The terms of a recall query, as each full-text engine is given them.
//!
//! User text never reaches a query language: FTS5 and `to_tsquery` both treat `-`, `:`,
//! `*`, `"`, `AND`/`OR`/`NOT`, `NEAR`, `&`, `|`, `!` as syntax. The text is split here
//! into lowercase runs of letters and digits (the way both engines' tokenizers split
//! `src/auth/login.ts` and `acquire_lock`), common English words are dropped, and each
//! engine gets an OR of quoted terms; stemming is left to the engine.

/// Distinct terms kept from one description (the rest are dropped, first ones win).
pub const MAX_TERMS: usize = 40;

/// Words too common to tell memories apart (English function words and the filler of
/// task descriptions).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "each",
    "for", "from", "further", "get", "got", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "me", "more", "most", "must", "my", "need",
    "needs", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own",
    "please", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very", "want", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you", "your",
];

/// The terms of one query: lowercase letters and digits only, no stop words, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextQuery {
    pub terms: Vec<String>,
}

impl TextQuery {
    pub fn of(text: &str) -> TextQuery {
        let mut terms: Vec<String> = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if terms.len() == MAX_TERMS {
                break;
            }
            let w = word.to_lowercase();
            // A single letter is noise; a single digit may be a version or an id.
            let too_short = w.chars().count() < 2 && !w.chars().all(|c| c.is_ascii_digit());
            if w.is_empty() || too_short || STOP_WORDS.contains(&w.as_str()) || terms.contains(&w) {
                continue;
            }
            terms.push(w);
        }
        TextQuery { terms }
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// An FTS5 `MATCH` expression: `"term1" OR "term2" ...` (terms hold no `"`).
    pub fn fts5(&self) -> Option<String> {
        (!self.is_empty()).then(|| {
            self.terms
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(" OR ")
        })
    }

    /// A `to_tsquery` expression: `'term1' | 'term2' ...` (terms hold no `'`).
    pub fn tsquery(&self) -> Option<String> {
        (!self.is_empty()).then(|| {
            self.terms
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(" | ")
        })
    }
}

/// `text` as lowercase words of letters and digits separated by spaces: what coord's
/// query terms are made of, for a full-text parser that would otherwise read paths,
/// hosts or hyphenated words as tokens of their own (PostgreSQL's).
pub fn words(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The query words recall scores, from each word and how many memories hold it (its
/// document frequency): words no memory holds are dropped, then the rarest first while
/// their frequencies add up to at most [`super::POSTINGS`] (the rarest is always kept).
/// Common words weigh little in the score and cost a posting-list read each, so both
/// stores choose the same words this way. Answers (word, frequency), rarest first.
pub fn choose_terms<T>(terms: impl IntoIterator<Item = (T, i64)>) -> Vec<(T, i64)> {
    let mut chosen: Vec<(T, i64)> = terms.into_iter().filter(|(_, df)| *df > 0).collect();
    chosen.sort_by_key(|(_, df)| *df);
    let mut total = 0;
    chosen.retain(|(_, df)| {
        total += df;
        total - df == 0 || total <= super::POSTINGS
    });
    chosen
}

/// The lowest memory sequence number a store that cannot read its matches newest first
/// from the index (PostgreSQL: its GIN index answers row addresses, and reading each
/// match's row to learn its age is the cost being bounded) scores every match above:
/// given the sequence numbers in use (`lowest..=highest`) and the chosen words'
/// postings, the newest stretch expected to hold [`super::SCORED`] matches, matches
/// being spread evenly. `None`: few enough postings to score every match (or no
/// memories).
pub fn recent_floor(lowest: i64, highest: i64, postings: i64) -> Option<i64> {
    if postings <= 2 * super::SCORED || highest < lowest {
        return None;
    }
    let span = i128::from(highest) - i128::from(lowest) + 1;
    // Rounded up, so at least one memory is in the stretch.
    let keep = (span * i128::from(super::SCORED) + i128::from(postings) - 1) / i128::from(postings);
    // keep ≤ span / 2 (postings > 2 · SCORED), so the floor is within lowest..highest.
    i64::try_from(i128::from(highest) - keep).ok()
}

/// The text a memory's tags and event type are indexed as (a tag or an event type is a
/// word of the query's vocabulary).
pub fn tags_text(tags: &[String], event_type: &str) -> String {
    let mut words = tags.to_vec();
    words.push(event_type.to_string());
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recent_floor_keeps_the_stretch_expected_to_hold_the_scored_matches() {
        let scored = super::super::SCORED;
        let cases: &[(i64, i64, i64, Option<i64>)] = &[
            // Few postings: every match is scored.
            (1, 100_000, 2 * scored, None),
            (1, 100_000, 0, None),
            // 20 × SCORED postings over 100,000 memories: the newest 5,000.
            (1, 100_000, 20 * scored, Some(95_000)),
            // 200 × SCORED postings: the newest 500.
            (1, 100_000, 200 * scored, Some(99_500)),
            // Rounded up: 3 memories, 10 × SCORED postings keeps one.
            (1, 3, 10 * scored, Some(2)),
            // Just over the bound: about half the span.
            (500, 600, 2 * scored + 1, Some(549)),
            // No memories, or numbers near the limits: no overflow.
            (10, 9, 5000, None),
            (i64::MAX - 10, i64::MAX, 5000, Some(i64::MAX - 1)),
            (i64::MIN, i64::MAX, i64::MAX, Some(i64::MAX - (2 * scored + 1))),
        ];
        for &(lo, hi, postings, want) in cases {
            assert_eq!(recent_floor(lo, hi, postings), want, "{lo}..={hi}, {postings}");
        }
    }

    #[test]
    fn terms_are_chosen_rarest_first_within_the_postings_budget() {
        let p = super::super::POSTINGS;
        type Case<'a> = (&'a [(&'a str, i64)], &'a [&'a str]);
        let cases: &[Case] = &[
            (&[], &[]),
            (&[("absent", 0)], &[]),
            (&[("a", 5), ("b", 1), ("c", 0)], &["b", "a"]),
            (&[("common", p + 10), ("rare", 3)], &["rare"]),
            (&[("common", p + 10)], &["common"]),
            (&[("x", p / 2), ("y", p / 2), ("z", 1)], &["z", "x"]),
        ];
        for (input, want) in cases {
            let got: Vec<&str> = choose_terms(input.iter().copied())
                .into_iter()
                .map(|(t, _)| t)
                .collect();
            assert_eq!(got, *want, "{input:?}");
        }
        assert_eq!(
            tags_text(&["ci".into(), "flaky-test".into()], "error"),
            "ci flaky-test error"
        );
    }

    #[test]
    fn terms_table() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("the and of", &[]),
            (
                "Fix the flaky test in src/auth/login.ts",
                &["fix", "flaky", "test", "src", "auth", "login", "ts"],
            ),
            ("acquire_lock NEAR(a b) -x \"q\" OR * ^c", &["acquire", "lock", "near"]),
            (
                "migration 0042 v2 failed: ALTER TYPE",
                &["migration", "0042", "v2", "failed", "alter", "type"],
            ),
            ("Test test TEST", &["test"]),
            ("a 1 b 22", &["1", "22"]),
            (
                "Réseau café 'quoted' |pipe| &amp !bang",
                &["réseau", "café", "quoted", "pipe", "amp", "bang"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(TextQuery::of(text).terms, *want, "{text}");
        }
    }

    #[test]
    fn words_split_like_queries() {
        assert_eq!(
            words("See src/auth/login.ts: flaky-test, acquire_lock()"),
            "see src auth login ts flaky test acquire lock"
        );
        assert_eq!(words(""), "");
    }

    #[test]
    fn terms_are_bounded_and_engine_safe() {
        let long: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(TextQuery::of(&long).terms.len(), MAX_TERMS);
        let q = TextQuery::of("x\"y'z\\ NEAR OR lockfile");
        for t in &q.terms {
            assert!(t.chars().all(char::is_alphanumeric), "{t}");
        }
        assert_eq!(q.fts5().unwrap(), "\"near\" OR \"lockfile\"");
        assert_eq!(TextQuery::of("lock queue").tsquery().unwrap(), "'lock' | 'queue'");
        assert_eq!(TextQuery::of("").fts5(), None);
    }
}
