//! Short ids: wherever a request names a task, an approval or a message by id, a unique
//! prefix of it is accepted, the way git accepts a short commit hash. The pipeline asks
//! the store for the ids in the prefix's range that the caller can see ([`IdPrefix`]'s
//! bounds) and [`resolve`] decides: one is the id, none is not found, several is
//! `ambiguous_id` listing them. A whole id never costs a lookup.

use crate::{CoordError, CoordResult, ErrorCode};

/// The shortest prefix accepted: shorter ones would match too much to be useful.
pub const MIN_PREFIX: usize = 4;
/// At most this many candidates are listed when a prefix is ambiguous.
pub const MAX_CANDIDATES: usize = 10;

const UUID_DIGITS: usize = 32;
const APPROVAL_PREFIX: &str = "apr_";
const APPROVAL_DIGITS: usize = 16;

/// The most ids one request may name (a task's dependencies are the most).
pub const MAX_IDS: usize = crate::queue::MAX_DEPENDENCIES;

/// Refuses a request naming more than [`MAX_IDS`] ids (`field`: the first of them), before
/// any of them is looked up.
pub fn check_count(field: Option<&str>, count: usize) -> CoordResult<()> {
    if count <= MAX_IDS {
        return Ok(());
    }
    Err(CoordError::field(
        ErrorCode::InvalidArgument,
        field.unwrap_or("ids"),
        format!("{count} ids in one request: at most {MAX_IDS}"),
    ))
}

/// What an id names, and so where its candidates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A task of the work queue (a UUID); every task is a candidate.
    Task,
    /// An approval request (`apr_` and 16 hex digits); every request is a candidate.
    Approval,
    /// A message (a UUID); candidates are the messages of the caller's inbox.
    Message,
    /// A message thread (a UUID); candidates are the threads the caller wrote or received in.
    Thread,
}

impl IdKind {
    /// What the candidates are, as a plural noun phrase.
    pub fn candidates(self) -> &'static str {
        match self {
            IdKind::Task => "tasks",
            IdKind::Approval => "approval requests",
            IdKind::Message => "messages in your inbox",
            IdKind::Thread => "threads you wrote or received in",
        }
    }

    fn not_found(self) -> ErrorCode {
        match self {
            IdKind::Task => ErrorCode::TaskNotFound,
            _ => ErrorCode::NotFound,
        }
    }
}

/// A shortened id: the prefix as typed (normalised) and the range of whole ids it covers,
/// inclusive at both ends, in the order both stores sort them (lowercase text, and
/// PostgreSQL's `uuid` order, which is the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdPrefix {
    pub kind: IdKind,
    pub text: String,
    pub low: String,
    pub high: String,
}

/// The prefix `raw` stands for, or `None` when it is a whole id or not an id at all (then
/// the operation's own validation answers as it always has). Case and a UUID's hyphens are
/// not significant: `5B0C6A1E8F2D` is `5b0c6a1e-8f2d`.
pub fn prefix_of(kind: IdKind, raw: &str) -> Option<IdPrefix> {
    let raw = raw.trim().to_ascii_lowercase();
    match kind {
        IdKind::Approval => {
            let digits = raw.strip_prefix(APPROVAL_PREFIX).unwrap_or(&raw);
            let whole = raw.starts_with(APPROVAL_PREFIX) && digits.len() == APPROVAL_DIGITS;
            if whole || !is_hex(digits, APPROVAL_DIGITS) {
                return None;
            }
            let bound = |fill: char| format!("{APPROVAL_PREFIX}{}", padded(digits, APPROVAL_DIGITS, fill));
            Some(IdPrefix {
                kind,
                text: format!("{APPROVAL_PREFIX}{digits}"),
                low: bound('0'),
                high: bound('f'),
            })
        }
        IdKind::Task | IdKind::Message | IdKind::Thread => {
            let digits: String = raw.chars().filter(|c| *c != '-').collect();
            if digits.len() >= UUID_DIGITS || !is_hex(&digits, UUID_DIGITS) {
                return None;
            }
            Some(IdPrefix {
                kind,
                text: hyphenated(&digits),
                low: hyphenated(&padded(&digits, UUID_DIGITS, '0')),
                high: hyphenated(&padded(&digits, UUID_DIGITS, 'f')),
            })
        }
    }
}

fn is_hex(digits: &str, max: usize) -> bool {
    (MIN_PREFIX..=max).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_hexdigit())
}

fn padded(digits: &str, len: usize, fill: char) -> String {
    let mut s = digits.to_string();
    s.extend(std::iter::repeat_n(fill, len.saturating_sub(digits.len())));
    s
}

/// `digits` with a UUID's hyphens (after the 8th, 12th, 16th and 20th digit).
fn hyphenated(digits: &str) -> String {
    let mut s = String::with_capacity(digits.len() + 4);
    for (i, c) in digits.chars().enumerate() {
        if matches!(i, 8 | 12 | 16 | 20) {
            s.push('-');
        }
        s.push(c);
    }
    s
}

/// The whole id `prefix` names among `candidates` (the visible ids in its range, at most
/// [`MAX_CANDIDATES`], sorted), or why it names none (`missing`, where the field answers
/// an unknown whole id with its own code, else the kind's not-found) or several.
pub fn resolve(
    prefix: &IdPrefix,
    field: &str,
    missing: Option<ErrorCode>,
    candidates: Vec<String>,
) -> CoordResult<String> {
    let among = prefix.kind.candidates();
    match candidates.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CoordError::field(
            missing.unwrap_or(prefix.kind.not_found()),
            field,
            format!("none of the {among} has an id starting with {}", prefix.text),
        )
        .with_detail("prefix", prefix.text.as_str())),
        many => {
            let more = if many.len() >= MAX_CANDIDATES {
                " (and maybe more)"
            } else {
                ""
            };
            Err(CoordError::field(
                ErrorCode::AmbiguousId,
                field,
                format!(
                    "{} is the start of more than one id among the {among}: {}{more}; give more characters",
                    prefix.text,
                    many.join(", ")
                ),
            )
            .with_detail("prefix", prefix.text.as_str())
            .with_detail("candidates", many.to_vec()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: &str = "5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a";

    #[test]
    fn what_counts_as_a_prefix() {
        #[rustfmt::skip]
        let cases: &[(IdKind, &str, Option<&str>)] = &[
            (IdKind::Task, "5b0c", Some("5b0c")),
            (IdKind::Task, " 5B0C6A1E ", Some("5b0c6a1e")),
            (IdKind::Task, "5b0c6a1e8f2d", Some("5b0c6a1e-8f2d")),
            (IdKind::Task, "5b0c6a1e-8f2d-4c", Some("5b0c6a1e-8f2d-4c")),
            (IdKind::Message, "5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9", Some("5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9")),
            (IdKind::Task, TASK, None),                      // whole: no lookup
            (IdKind::Task, "5b0c6a1e8f2d4c1a9a573f7e2d1c0b9a", None),
            (IdKind::Task, "5b0", None),                     // too short
            (IdKind::Task, "", None),
            (IdKind::Task, "----", None),
            (IdKind::Task, "5b0g", None),                    // not hex
            (IdKind::Task, "5b0c%", None),                   // never a wildcard
            (IdKind::Thread, "abcd", Some("abcd")),
            (IdKind::Approval, "apr_0123", Some("apr_0123")),
            (IdKind::Approval, "0123", Some("apr_0123")),
            (IdKind::Approval, "APR_0123ab", Some("apr_0123ab")),
            (IdKind::Approval, "0123456789abcdef", Some("apr_0123456789abcdef")),
            (IdKind::Approval, "apr_0123456789abcdef", None), // whole
            (IdKind::Approval, "apr_012", None),
            (IdKind::Approval, "apr_1", None),
            (IdKind::Approval, "apr_0123456789abcdef0", None),
            (IdKind::Approval, "apr_xyzw", None),
        ];
        for (kind, raw, want) in cases {
            assert_eq!(
                prefix_of(*kind, raw).map(|p| p.text),
                want.map(String::from),
                "{kind:?} {raw:?}"
            );
        }
    }

    #[test]
    fn a_request_names_at_most_max_ids() {
        assert!(check_count(None, 0).is_ok() && check_count(Some("depends_on"), MAX_IDS).is_ok());
        let e = check_count(Some("depends_on"), MAX_IDS + 1).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidArgument, Some("depends_on"))
        );
    }

    #[test]
    fn a_prefix_covers_exactly_the_ids_that_start_with_it() {
        let p = prefix_of(IdKind::Task, "5b0c6a1e8").unwrap();
        assert_eq!(p.low, "5b0c6a1e-8000-0000-0000-000000000000");
        assert_eq!(p.high, "5b0c6a1e-8fff-ffff-ffff-ffffffffffff");
        assert!(p.low.as_str() <= TASK && TASK <= p.high.as_str());
        let a = prefix_of(IdKind::Approval, "0123").unwrap();
        assert_eq!(
            (a.low.as_str(), a.high.as_str()),
            ("apr_0123000000000000", "apr_0123ffffffffffff")
        );
    }

    #[test]
    fn one_candidate_is_the_id_none_is_not_found_several_are_listed() {
        let p = prefix_of(IdKind::Task, "5b0c").unwrap();
        assert_eq!(resolve(&p, "task_id", None, vec![TASK.into()]).unwrap(), TASK);
        let e = resolve(&p, "task_id", None, vec![]).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::TaskNotFound, Some("task_id")));
        assert!(
            e.message.contains("none of the tasks has an id starting with 5b0c"),
            "{}",
            e.message
        );
        let other = "5b0c0000-0000-4000-8000-000000000000".to_string();
        let e = resolve(&p, "depends_on", None, vec![other.clone(), TASK.into()]).unwrap_err();
        assert_eq!(e.code, ErrorCode::AmbiguousId);
        assert!(e.message.contains(&other) && e.message.contains(TASK), "{}", e.message);
        assert_eq!(e.details["candidates"], serde_json::json!([other, TASK]));
        let missing = Some(ErrorCode::UnknownDependency);
        assert_eq!(
            resolve(&p, "depends_on", missing, vec![]).unwrap_err().code,
            ErrorCode::UnknownDependency
        );
        let m = prefix_of(IdKind::Message, "abcd").unwrap();
        assert_eq!(
            resolve(&m, "message_id", None, vec![]).unwrap_err().code,
            ErrorCode::NotFound
        );
        let many: Vec<String> = (0..MAX_CANDIDATES).map(|i| format!("abcd{i:04}")).collect();
        assert!(
            resolve(&m, "message_id", None, many)
                .unwrap_err()
                .message
                .contains("maybe more")
        );
    }
}
