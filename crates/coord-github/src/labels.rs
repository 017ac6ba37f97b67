//! GitHub lock labels: `locked:<path>` on an issue asks for a lock on the path. GitHub
//! label names are at most 50 characters, so a path that does not fit is written
//! `locked:<tail>#<h8>` — the path's last characters (a hint for people) and the first 8
//! hex digits of its SHA-256 — and resolved against the full paths the issue lists in a
//! `<!-- coord:locks -->` block (then paths coord already knows). An unresolvable or
//! ambiguous label names no lock. Anyone can compute a label without coord:
//! `printf %s "$path" | sha256sum | cut -c1-8`.

use coord_domain::path::normalize_path;
use sha2::{Digest, Sha256};

/// GitHub's limit on a label name, in characters.
pub const MAX_LABEL_CHARS: usize = 50;
pub const LOCK_PREFIX: &str = "locked:";
/// The marker of the issue body's block of full paths.
pub const LOCKS_BLOCK: &str = "<!-- coord:locks -->";

/// The first 8 hex digits of the SHA-256 of `path`.
pub fn short_hash(path: &str) -> String {
    Sha256::digest(path.as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The label that locks `path` (already normalised): the path itself when it fits in 50
/// characters, else its tail and short hash.
pub fn lock_label(path: &str) -> String {
    let literal = format!("{LOCK_PREFIX}{path}");
    if literal.chars().count() <= MAX_LABEL_CHARS {
        return literal;
    }
    let hash = short_hash(path);
    // locked: + tail + # + 8 hex digits
    let room = MAX_LABEL_CHARS - LOCK_PREFIX.len() - 1 - hash.len();
    let chars: Vec<char> = path.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(room)..].iter().collect();
    // Whole path segments read better (`oauth/handler.ts`, not `ation/oauth/handler.ts`),
    // unless even the file name does not fit.
    let tail = match tail.find('/') {
        Some(i) if i + 1 < tail.len() => tail[i + 1..].to_string(),
        _ => tail,
    };
    format!("{LOCK_PREFIX}{tail}#{hash}")
}

/// What a `locked:` label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockLabel {
    /// The path itself (normalised).
    Path(String),
    /// A path too long for a label: its short hash and the tail shown.
    Hashed { tail: String, hash: String },
}

/// Why a label names no lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// Not a `locked:` label at all.
    NotALockLabel,
    /// A path coord refuses (outside the repository, empty, ...).
    BadPath(String),
    /// A short hash no listed or known path has.
    Unknown { hash: String },
    /// A short hash several paths have.
    Ambiguous { hash: String, paths: Vec<String> },
}

impl Unresolved {
    /// What to tell the issue.
    pub fn message(&self, label: &str) -> String {
        match self {
            Unresolved::NotALockLabel => format!("{label} is not a locked: label"),
            Unresolved::BadPath(why) => format!("{label} names no lock: {why}"),
            Unresolved::Unknown { hash } => format!(
                "{label} names no lock: no path with hash {hash} is listed in the issue's {LOCKS_BLOCK} block; add the full path there"
            ),
            Unresolved::Ambiguous { hash, paths } => format!(
                "{label} names no lock: {} paths have hash {hash} ({}); use a shorter path or list only one",
                paths.len(),
                paths.join(", ")
            ),
        }
    }
}

/// Reads a label name: `locked:` in any case, then a path or `<tail>#<8 hex digits>`.
pub fn parse_label(name: &str) -> Result<LockLabel, Unresolved> {
    let name = name.trim();
    let rest = name
        .get(..LOCK_PREFIX.len())
        .filter(|p| p.eq_ignore_ascii_case(LOCK_PREFIX))
        .map(|_| &name[LOCK_PREFIX.len()..])
        .ok_or(Unresolved::NotALockLabel)?;
    if let Some((tail, hash)) = rest.rsplit_once('#')
        && hash.len() == 8
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Ok(LockLabel::Hashed {
            tail: tail.to_string(),
            hash: hash.to_ascii_lowercase(),
        });
    }
    normalize_path(rest, None)
        .map(LockLabel::Path)
        .map_err(|e| Unresolved::BadPath(e.message))
}

/// The full paths listed in the issue body's `<!-- coord:locks -->` block: the lines after
/// the marker, up to a blank line or the next comment; list markers and backticks dropped.
pub fn listed_paths(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = body.lines().skip_while(|l| !l.contains(LOCKS_BLOCK));
    if lines.next().is_none() {
        return out;
    }
    for line in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with("<!--") {
            break;
        }
        let line = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .unwrap_or(line)
            .trim()
            .trim_matches('`');
        if let Ok(p) = normalize_path(line, None)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// The path a label locks: its own, or the one path among `listed` (the block)
/// and then `known` (paths coord knows) whose hash and tail match.
pub fn resolve(label: &LockLabel, listed: &[String], known: &[String]) -> Result<String, Unresolved> {
    let (tail, hash) = match label {
        LockLabel::Path(p) => return Ok(p.clone()),
        LockLabel::Hashed { tail, hash } => (tail, hash),
    };
    for candidates in [listed, known] {
        let mut found: Vec<String> = candidates
            .iter()
            .filter(|p| p.ends_with(tail.as_str()) && &short_hash(p) == hash)
            .cloned()
            .collect();
        found.sort();
        found.dedup();
        match found.len() {
            0 => continue,
            1 => return Ok(found.remove(0)),
            _ => {
                return Err(Unresolved::Ambiguous {
                    hash: hash.clone(),
                    paths: found,
                });
            }
        }
    }
    Err(Unresolved::Unknown { hash: hash.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: &str = "src/services/authentication/oauth/callback_handler.ts";

    #[test]
    fn labels_fit_in_fifty_characters() {
        let fits = format!("src/a/{}", "b".repeat(37)); // 43 characters: a 50-character label
        let too_long = format!("{fits}c");
        let name_only = format!("a/{}", "n".repeat(60));
        // (path, label)
        let cases = [
            ("src/auth/login.ts".to_string(), "locked:src/auth/login.ts".to_string()),
            (fits.clone(), format!("locked:{fits}")),
            // Whole segments of the tail when they fit...
            (
                LONG.to_string(),
                format!("locked:oauth/callback_handler.ts#{}", short_hash(LONG)),
            ),
            (
                too_long.clone(),
                format!("locked:{}#{}", &too_long[too_long.len() - 34..], short_hash(&too_long)),
            ),
            // ...else the file name's end.
            (
                name_only.clone(),
                format!("locked:{}#{}", "n".repeat(34), short_hash(&name_only)),
            ),
        ];
        for (path, label) in cases {
            assert_eq!(lock_label(&path), label, "{path}");
            assert!(label.chars().count() <= MAX_LABEL_CHARS, "{label}");
        }
        // Non-ASCII paths are counted in characters.
        let wide = format!("docs/{}", "é".repeat(60));
        let label = lock_label(&wide);
        assert_eq!(label.chars().count(), MAX_LABEL_CHARS, "{label}");
        // The hash is what `printf %s "$path" | sha256sum | cut -c1-8` prints.
        assert_eq!(short_hash("src/auth/login.ts").len(), 8);
        assert_eq!(short_hash(""), "e3b0c442");
    }

    #[test]
    fn labels_read_back_to_their_paths() {
        let listed = listed_paths(&format!(
            "Refactor auth.\n\n{LOCKS_BLOCK}\n- `{LONG}`\n* src/other/very/long/path/that/does/not/fit/in/a/label.rs\n\nmore text\n- ignored.rs"
        ));
        assert_eq!(listed.len(), 2, "{listed:?}");
        for path in ["src/auth/login.ts", LONG] {
            let label = parse_label(&lock_label(path)).unwrap();
            assert_eq!(resolve(&label, &listed, &[]).unwrap(), path);
        }
        // Prefix in any case; a path that leaves the repository names nothing.
        assert_eq!(
            parse_label(" LOCKED:./src//a.rs ").unwrap(),
            LockLabel::Path("src/a.rs".into())
        );
        assert!(matches!(
            parse_label("locked:../etc/passwd"),
            Err(Unresolved::BadPath(_))
        ));
        assert_eq!(parse_label("bug"), Err(Unresolved::NotALockLabel));
        assert_eq!(parse_label("lock"), Err(Unresolved::NotALockLabel));
        // Not listed: found among known paths, else unknown.
        let label = parse_label(&lock_label(LONG)).unwrap();
        assert_eq!(resolve(&label, &[], &[LONG.to_string()]).unwrap(), LONG);
        let e = resolve(&label, &[], &[]).unwrap_err();
        assert!(matches!(e, Unresolved::Unknown { .. }));
        assert!(e.message("locked:x#00000000").contains(LOCKS_BLOCK));
        // The same path listed twice is one path.
        let twice = vec![LONG.to_string(), LONG.to_string()];
        assert_eq!(resolve(&label, &twice, &[]).unwrap(), LONG);
        // Two paths with the same short hash and tail (found by trying: 32 bits collide
        // after about 2^16 paths): ambiguous, no lock.
        let mut seen = std::collections::HashMap::new();
        let (a, b) = (0..1_000_000)
            .map(|i| format!("p{i}/x.rs"))
            .find_map(|p| seen.insert(short_hash(&p), p.clone()).map(|q| (q, p)))
            .expect("a collision");
        let label = LockLabel::Hashed {
            tail: "x.rs".into(),
            hash: short_hash(&a),
        };
        match resolve(&label, &[a.clone(), b.clone()], &[]) {
            Err(Unresolved::Ambiguous { paths, .. }) => {
                let mut want = vec![a, b];
                want.sort();
                assert_eq!(paths, want);
            }
            other => panic!("{other:?}"),
        }
    }
}
