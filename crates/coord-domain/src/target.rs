//! What a lock covers: one file, a directory and everything below it, or the paths a
//! glob can match — and the rule that decides whether two of them can overlap.
//!
//! The spelling decides the kind: a trailing `/` is a directory (`src/auth/`); a path
//! with `*`, `?`, `[` or `{` is a glob (`src/auth/**/*.rs`); anything else is a file.
//! `dir/**` is the same lock as `dir/`, so it is stored as `dir/`. Globs follow
//! `globset` with `literal_separator`: `*`, `?` and classes stay inside one path
//! component, `**` as a whole component spans any number of them (zero included).
//!
//! Overlap is decided conservatively, never optimistically: when two locks *might*
//! cover a common path they conflict. Two things make it conservative on purpose:
//! - a glob also covers its own literal spelling, so a lock on `app/[id]/page.tsx` (a
//!   Next.js route, not meant as a class) still covers that very file;
//! - two wildcard components (`a*` and `*b`) overlap unless their literal heads or
//!   tails already disagree (`a*.rs` and `b*` do not overlap; `a*` and `*b` do, since
//!   `ab` matches both).
//!
//! A lock's *scope* is its leading literal components (`src/auth` for `src/auth/` and
//! for `src/auth/**/*.rs`; empty for `**/*.rs`). Two locks can only overlap when one
//! scope is a component prefix of the other, which lets a store fetch the few candidate
//! rows by an indexed scope column instead of scanning every live lock.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::path::normalize_path;
use globset::GlobBuilder;

pub const GLOB_CHARS: [char; 4] = ['*', '?', '[', '{'];

/// A parsed lock target; `key()` is the canonical spelling stored as the lock's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockTarget {
    key: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// A component matched literally.
    Literal(String),
    /// A component with wildcards, matched inside one component.
    Pattern(String),
    /// `**`: any number of components, zero included.
    Deep,
}

/// How deep [`LockTarget::serial_keys`] goes: a scope of more components is ordered by
/// its ancestor at this depth.
pub const SERIAL_DEPTH: usize = 12;

/// The rows a store must read to find every lock that can overlap a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// Every live lock (the target's scope is the whole repository).
    All,
    /// Locks whose scope is one of `at` (the target's scope and its ancestors, the
    /// empty scope included), or lies below the target's scope: `from <= scope < to`.
    Scoped { at: Vec<String>, from: String, to: String },
}

impl LockTarget {
    /// Parses what an agent asked to lock (or to check).
    pub fn parse(input: &str, repo_root: Option<&str>) -> CoordResult<LockTarget> {
        let unified = input.replace('\\', "/");
        let is_glob = unified.contains(GLOB_CHARS);
        let is_dir = unified.ends_with('/');
        if is_glob {
            check_glob_syntax(input, &unified)?;
        }
        let path = normalize_path(&unified, repo_root)?;
        if !is_glob {
            return Ok(if is_dir { Self::dir(&path) } else { Self::file(path) });
        }
        // A directory whose name has glob characters is the glob of everything below it;
        // repeated `**` components mean one.
        let mut parts: Vec<&str> = path.split('/').collect();
        if is_dir {
            parts.push("**");
        }
        parts.dedup_by(|a, b| *a == "**" && *b == "**");
        let path = parts.join("/");
        // `dir/**` covers exactly what `dir/` covers: one spelling for one lock.
        if let Some(dir) = path.strip_suffix("/**").filter(|d| !d.contains(GLOB_CHARS)) {
            return Ok(Self::dir(dir));
        }
        GlobBuilder::new(&path)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid(input, &format!("it is not a valid glob: {}", e.kind())))?;
        Ok(Self::from_key(&path))
    }

    /// A concrete file, taken literally even when its name has glob characters (what an
    /// edit or a commit touches).
    pub fn literal_file(input: &str, repo_root: Option<&str>) -> CoordResult<LockTarget> {
        Ok(Self::file(normalize_path(input, repo_root)?))
    }

    /// The target a stored key denotes (the inverse of `key()`).
    pub fn from_key(key: &str) -> LockTarget {
        if let Some(dir) = key.strip_suffix('/').filter(|_| !key.contains(GLOB_CHARS)) {
            return Self::dir(dir);
        }
        let segments = key
            .split('/')
            .map(|s| match s {
                "**" => Segment::Deep,
                s if s.contains(GLOB_CHARS) => Segment::Pattern(s.to_string()),
                s => Segment::Literal(s.to_string()),
            })
            .collect();
        LockTarget {
            key: key.to_string(),
            segments,
        }
    }

    fn file(path: String) -> LockTarget {
        let segments = path.split('/').map(|s| Segment::Literal(s.to_string())).collect();
        LockTarget { key: path, segments }
    }

    fn dir(path: &str) -> LockTarget {
        let mut segments: Vec<Segment> = path.split('/').map(|s| Segment::Literal(s.to_string())).collect();
        segments.push(Segment::Deep);
        LockTarget {
            key: format!("{path}/"),
            segments,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn into_key(self) -> String {
        self.key
    }

    /// Whether this is a directory or glob lock (covers more than one path).
    pub fn is_pattern(&self) -> bool {
        self.segments.iter().any(|s| !matches!(s, Segment::Literal(_)))
    }

    /// The leading literal components, joined: the indexed column that narrows the
    /// candidates of an overlap check.
    pub fn scope(&self) -> String {
        let literal: Vec<&str> = self
            .segments
            .iter()
            .map_while(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        literal.join("/")
    }

    /// The scopes of every lock that could overlap this one.
    pub fn candidates(&self) -> Candidates {
        let scope = self.scope();
        if scope.is_empty() {
            return Candidates::All;
        }
        let mut at = vec![String::new()];
        let mut prefix = String::new();
        for part in scope.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            at.push(prefix.clone());
        }
        // '0' is the byte after '/': every scope that starts with "<scope>/".
        Candidates::Scoped {
            at,
            from: format!("{scope}/"),
            to: format!("{scope}0"),
        }
    }

    /// The advisory keys that order acquisitions of overlapping targets where writers
    /// run side by side (PostgreSQL): `(shared, exclusive)`, to be taken in that order and
    /// held to commit. Shared: every proper ancestor of the target's scope, the
    /// repository (`base`) first; exclusive: the scope itself (`base` for the whole
    /// repository, `base:scope` otherwise). Past [`SERIAL_DEPTH`] components the scope's
    /// ancestor at that depth stands for it (exclusive), so a deep path holds a bounded
    /// number of locks (PostgreSQL's lock table is shared by the whole server).
    ///
    /// Two overlapping targets have scopes one of which is a component prefix of the
    /// other's, or equal: the shorter one's exclusive key is among the other's keys, so
    /// they conflict (past the depth bound both take the ancestor they share
    /// exclusively), while acquisitions of unrelated targets (two files of one
    /// directory) share only shared keys and go on side by side. Every transaction takes
    /// its shared keys before its one exclusive key, from the root down, so waits cannot
    /// form a cycle.
    pub fn serial_keys(&self, base: &str) -> (Vec<String>, String) {
        let scope = self.scope();
        if scope.is_empty() {
            return (Vec::new(), base.to_string());
        }
        let parts: Vec<&str> = scope.split('/').take(SERIAL_DEPTH).collect();
        let mut shared = vec![base.to_string()];
        for depth in 1..parts.len() {
            shared.push(format!("{base}:{}", parts[..depth].join("/")));
        }
        (shared, format!("{base}:{}", parts.join("/")))
    }

    /// Whether some path can be covered by both targets (conservatively: see the module).
    pub fn overlaps(&self, other: &LockTarget) -> bool {
        overlap(&self.segments, &other.segments)
    }
}

fn invalid(input: &str, why: &str) -> CoordError {
    CoordError::field(
        ErrorCode::InvalidPath,
        "file_path",
        format!("invalid path {:?}: {why}", input.chars().take(200).collect::<String>()),
    )
}

/// Refuses the glob spellings the component-wise overlap rule cannot reason about: a
/// `/` inside a class or alternation, and `**` that is not a whole component.
fn check_glob_syntax(input: &str, unified: &str) -> CoordResult<()> {
    let (mut class, mut alt) = (false, 0usize);
    for c in unified.chars() {
        match c {
            '[' if !class => class = true,
            ']' if class => class = false,
            '{' if !class => alt += 1,
            '}' if !class && alt > 0 => alt -= 1,
            '/' if class || alt > 0 => {
                return Err(invalid(
                    input,
                    "a [class] or {alternation} may not contain '/'; lock each directory separately",
                ));
            }
            _ => {}
        }
    }
    if unified.split('/').any(|c| c == "..") {
        return Err(invalid(input, "'..' is not allowed in a glob"));
    }
    if unified.split('/').any(|c| c.contains("**") && c != "**") {
        return Err(invalid(input, "'**' must be a whole path component, as in src/**/*.rs"));
    }
    Ok(())
}

/// Component-wise overlap by dynamic programming: `can[i][j]` says whether `a[i..]` and
/// `b[j..]` can match a common sequence of components.
fn overlap(a: &[Segment], b: &[Segment]) -> bool {
    let (n, m) = (a.len(), b.len());
    let mut can = vec![vec![false; m + 1]; n + 1];
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            can[i][j] = match (a.get(i), b.get(j)) {
                (None, None) => true,
                (Some(Segment::Deep), _) => can[i + 1][j] || (j < m && can[i][j + 1]),
                (_, Some(Segment::Deep)) => can[i][j + 1] || (i < n && can[i + 1][j]),
                (None, _) | (_, None) => false,
                (Some(x), Some(y)) => component_overlap(x, y) && can[i + 1][j + 1],
            };
        }
    }
    can[0][0]
}

fn component_overlap(x: &Segment, y: &Segment) -> bool {
    match (x, y) {
        (Segment::Literal(l), Segment::Literal(r)) => l == r,
        // The head/tail test is cheap and rejects most pairs before a glob is compiled.
        (Segment::Pattern(p), Segment::Literal(l)) | (Segment::Literal(l), Segment::Pattern(p)) => {
            p == l || (l.starts_with(head(p)) && l.ends_with(tail(p)) && pattern_matches(p, l))
        }
        (Segment::Pattern(p), Segment::Pattern(q)) => p == q || heads_and_tails_agree(p, q),
        // Deep is handled by the caller.
        _ => true,
    }
}

fn pattern_matches(pattern: &str, component: &str) -> bool {
    match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher().is_match(component),
        // A stored pattern that no longer compiles: assume the worst.
        Err(_) => true,
    }
}

/// A necessary condition for two wildcard components to match a common name: every
/// match starts with the pattern's literal head and ends with its literal tail.
fn heads_and_tails_agree(p: &str, q: &str) -> bool {
    let (hp, hq, tp, tq) = (head(p), head(q), tail(p), tail(q));
    (hp.starts_with(hq) || hq.starts_with(hp)) && (tp.ends_with(tq) || tq.ends_with(tp))
}

const META: [char; 6] = ['*', '?', '[', ']', '{', '}'];

/// The literal text every match of a wildcard component starts with.
fn head(pattern: &str) -> &str {
    pattern.split(META).next().unwrap_or("")
}

/// The literal text every match of a wildcard component ends with.
fn tail(pattern: &str) -> &str {
    pattern.rsplit(META).next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> LockTarget {
        LockTarget::parse(s, None).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn spellings() {
        // (input, canonical key, scope, is_pattern)
        let cases = [
            ("src/a.rs", "src/a.rs", "src/a.rs", false),
            ("./src//a.rs", "src/a.rs", "src/a.rs", false),
            ("src/auth/", "src/auth/", "src/auth", true),
            ("src\\auth\\", "src/auth/", "src/auth", true),
            ("src/auth/**", "src/auth/", "src/auth", true),
            ("./src/auth/./**", "src/auth/", "src/auth", true),
            ("src/auth/**/*.rs", "src/auth/**/*.rs", "src/auth", true),
            ("src/**/", "src/", "src", true),
            ("src/**/**/*.rs", "src/**/*.rs", "src", true),
            ("app/[id]/", "app/[id]/**", "app", true),
            ("**/*.rs", "**/*.rs", "", true),
            ("**", "**", "", true),
            ("app/[id]/page.tsx", "app/[id]/page.tsx", "app", true),
            ("src/{a,b}.rs", "src/{a,b}.rs", "src", true),
        ];
        for (input, key, scope, pattern) in cases {
            let got = t(input);
            assert_eq!(got.key(), key, "{input}");
            assert_eq!(got.scope(), scope, "{input}");
            assert_eq!(got.is_pattern(), pattern, "{input}");
            assert_eq!(LockTarget::from_key(got.key()), got, "{input} round trip");
        }
        let root = Some("/repo");
        assert_eq!(LockTarget::parse("/repo/src/*.rs", root).unwrap().key(), "src/*.rs");
        assert_eq!(LockTarget::parse("/repo/src/", root).unwrap().key(), "src/");
    }

    #[test]
    fn refusals() {
        for bad in [
            "",
            "/",
            "./",
            "../x/",
            "../*.rs",
            "src/{a,b/c}.rs",
            "src/[a/b].rs",
            "src/a**/x",
            "src/**b",
            "src/[z-a].rs",
            "src/{a,b.rs",
            "src/[ab.rs",
            "/etc/*.conf",
            "src/x/../*.rs",
        ] {
            let e = LockTarget::parse(bad, Some("/repo")).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidPath, "{bad}");
            assert_eq!(e.field.as_deref(), Some("file_path"), "{bad}");
        }
        // A literal file may have any of those characters.
        assert_eq!(LockTarget::literal_file("a/[id].rs", None).unwrap().key(), "a/[id].rs");
        assert!(!LockTarget::literal_file("a/[id].rs", None).unwrap().is_pattern());
    }

    #[test]
    fn overlap_table() {
        // (a, b, overlap?) — checked both ways round.
        let cases = [
            // files
            ("src/a.rs", "src/a.rs", true),
            ("src/a.rs", "src/b.rs", false),
            ("src/a", "src/a.rs", false),
            // directories and files
            ("src/auth/", "src/auth/login.rs", true),
            ("src/auth/", "src/auth/deep/x/y.rs", true),
            ("src/auth/", "src/auth", true),
            ("src/auth/", "src/authz.rs", false),
            ("src/auth/", "src/au", false),
            ("src/auth/", "src/", true),
            ("src/auth/", "src/other/", false),
            ("src/auth/", "lib/auth/", false),
            // globs and files
            ("src/**/*.rs", "src/a.rs", true),
            ("src/**/*.rs", "src/x/y/z.rs", true),
            ("src/**/*.rs", "src/a.py", false),
            ("src/**/*.rs", "lib/a.rs", false),
            ("src/*.rs", "src/x/a.rs", false),
            ("**/*.rs", "a.rs", true),
            ("**/*.rs", "deep/in/a.rs", true),
            ("**", "anything/at/all", true),
            ("src/{a,b}.rs", "src/b.rs", true),
            ("src/{a,b}.rs", "src/c.rs", false),
            ("src/?.rs", "src/a.rs", true),
            ("src/?.rs", "src/ab.rs", false),
            ("src/[ab].rs", "src/b.rs", true),
            ("src/[ab].rs", "src/c.rs", false),
            // a glob also covers its own literal spelling
            ("app/[id]/page.tsx", "app/i/page.tsx", true),
            // globs and directories
            ("src/**/*.rs", "src/auth/", true),
            ("src/auth/*.rs", "src/auth/", true),
            ("src/*.rs", "src/auth/", false),
            ("src/*/x.rs", "src/auth/", true),
            ("lib/**", "src/auth/", false),
            ("src/auth/*.rs", "src/other/", false),
            ("*.md", "src/", false),
            ("*", "src/", true),
            // globs and globs
            ("src/**/*.rs", "src/auth/*.rs", true),
            ("src/**/*.rs", "**/*.py", false),
            ("**/*.rs", "**/*.py", false),
            ("src/*.rs", "src/*.py", false),
            ("src/a*", "src/*b", true),
            ("src/a*.rs", "src/b*", false),
            ("src/*/a.rs", "src/*/b.rs", false),
            ("src/*/a.rs", "src/x/*", true),
            ("src/**/a.rs", "src/**/b.rs", false),
            ("src/**/test/*.rs", "src/**/*_test.rs", true),
            ("src/{a,b}/*.rs", "src/c/*.rs", false),
            ("**/*", "x", true),
            ("a/**/b/**/c", "a/b/c", true),
            ("a/**/b/**/c", "a/c", false),
        ];
        for (a, b, want) in cases {
            let (ta, tb) = (t(a), t(b));
            assert_eq!(ta.overlaps(&tb), want, "{a} vs {b}");
            assert_eq!(tb.overlaps(&ta), want, "{b} vs {a}");
        }
        // A literal file with glob characters against the glob with that spelling.
        let literal = LockTarget::literal_file("app/[id]/page.tsx", None).unwrap();
        assert!(t("app/[id]/page.tsx").overlaps(&literal));
        assert!(literal.overlaps(&t("app/[id]/page.tsx")));
        assert!(!literal.overlaps(&t("app/x/page.tsx")));
    }

    #[test]
    fn serial_keys_share_ancestors_and_lock_the_scope() {
        let cases: [(&str, &[&str], &str); 6] = [
            ("**/*.md", &[], "k"),
            ("README.md", &["k"], "k:README.md"),
            ("src/a/x.rs", &["k", "k:src", "k:src/a"], "k:src/a/x.rs"),
            ("src/a/", &["k", "k:src"], "k:src/a"),
            ("src/**/*.rs", &["k"], "k:src"),
            (
                "a/b/c/d/e/f/g/h/i/j/k/l/m/n.rs",
                &[
                    "k",
                    "k:a",
                    "k:a/b",
                    "k:a/b/c",
                    "k:a/b/c/d",
                    "k:a/b/c/d/e",
                    "k:a/b/c/d/e/f",
                    "k:a/b/c/d/e/f/g",
                    "k:a/b/c/d/e/f/g/h",
                    "k:a/b/c/d/e/f/g/h/i",
                    "k:a/b/c/d/e/f/g/h/i/j",
                    "k:a/b/c/d/e/f/g/h/i/j/k",
                ],
                "k:a/b/c/d/e/f/g/h/i/j/k/l",
            ),
        ];
        for (target, shared, exclusive) in cases {
            assert_eq!(
                t(target).serial_keys("k"),
                (owned(shared), exclusive.to_string()),
                "{target}"
            );
        }
    }

    fn owned(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    /// Overlapping targets always meet on a key one of them takes exclusively; two files
    /// of one directory share no exclusive key.
    #[test]
    fn overlapping_targets_conflict_on_their_serial_keys() {
        let targets = [
            "src/",
            "src/a/",
            "src/a/x.rs",
            "src/b/y.rs",
            "src/**/*.rs",
            "**/*.md",
            "src/a/*.rs",
            "docs/",
            "docs/x.md",
            "src/b/",
            "src/*/z.rs",
            "README.md",
            "src/a/y.rs",
            "src/ab/x.rs",
            // Past the depth bound.
            "a/b/c/d/e/f/g/h/i/j/k/l/",
            "a/b/c/d/e/f/g/h/i/j/k/l/m/n.rs",
            "a/b/c/d/e/f/g/h/i/j/k/l/m/o.rs",
            "a/b/c/d/e/f/g/h/i/j/k/",
            "a/b/c/d/e/f/g/h/i/j/k/l/m/",
            "a/**/*.rs",
        ];
        let conflict = |a: &LockTarget, b: &LockTarget| {
            let ((sa, xa), (sb, xb)) = (a.serial_keys("k"), b.serial_keys("k"));
            xa == xb || sb.contains(&xa) || sa.contains(&xb)
        };
        for x in targets {
            for y in targets {
                let (a, b) = (t(x), t(y));
                if a.overlaps(&b) {
                    assert!(conflict(&a, &b), "{x} and {y} overlap but would not be ordered");
                }
            }
        }
        assert!(!conflict(&t("src/a/x.rs"), &t("src/a/y.rs")));
        assert!(!conflict(&t("src/a/x.rs"), &t("src/b/")));
    }

    /// When globset says a concrete path matches a glob, the overlap rule agrees; when
    /// two targets share a matched path, one scope is a prefix of the other (so the
    /// candidate query finds the row).
    #[test]
    fn agrees_with_globset_and_scopes() {
        let globs = [
            "src/**/*.rs",
            "src/*.rs",
            "**/*.rs",
            "src/a*/**",
            "src/{a,b}/c.rs",
            "**/mod.rs",
            "src/**/x/*",
            "src/auth/",
        ];
        let paths = [
            "src/a.rs",
            "src/x/a.rs",
            "src/ab/c.rs",
            "src/a/c.rs",
            "lib/mod.rs",
            "src/q/x/y",
            "src/auth/z.rs",
            "README.md",
            "mod.rs",
        ];
        for g in globs {
            let target = t(g);
            let pattern = if g.ends_with('/') {
                format!("{g}**")
            } else {
                g.to_string()
            };
            let m = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .unwrap()
                .compile_matcher();
            for p in paths {
                let file = LockTarget::literal_file(p, None).unwrap();
                if m.is_match(p) {
                    assert!(target.overlaps(&file), "{g} should cover {p}");
                    assert!(in_candidates(&file, &target), "{g} is a candidate for {p}");
                    assert!(in_candidates(&target, &file), "{p} is a candidate for {g}");
                }
            }
        }
    }

    proptest::proptest! {
        /// Whatever globset matches, the overlap rule (and the candidate query) finds.
        #[test]
        fn never_misses_a_match(
            glob in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "ab", "*", "a*", "*b", "?", "[ab]", "{a,b}", "**"]), 1..5),
            path in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "ab", "ba", "c"]), 1..6),
        ) {
            let mut glob = glob;
            glob.dedup_by(|x, y| *x == "**" && *y == "**");
            let glob = glob.join("/");
            let path = path.join("/");
            if let Ok(target) = LockTarget::parse(&glob, None) {
                let m = GlobBuilder::new(&glob).literal_separator(true).build().unwrap().compile_matcher();
                let file = LockTarget::literal_file(&path, None).unwrap();
                if m.is_match(&path) {
                    proptest::prop_assert!(target.overlaps(&file), "{} vs {}", glob, path);
                    proptest::prop_assert!(in_candidates(&file, &target), "{} for {}", glob, path);
                }
            }
        }
    }

    fn in_candidates(of: &LockTarget, row: &LockTarget) -> bool {
        match of.candidates() {
            Candidates::All => true,
            Candidates::Scoped { at, from, to } => {
                let s = row.scope();
                at.contains(&s) || (s >= from && s < to)
            }
        }
    }

    #[test]
    fn overlapping_pairs_are_always_candidates() {
        let all = [
            "src/a.rs",
            "src/auth/",
            "src/auth/x.rs",
            "src/**/*.rs",
            "**/*.rs",
            "src/a*/b",
            "src/ab/b",
            "lib/",
            "src/authz/",
            "src/auth/deep/",
        ];
        for a in all {
            for b in all {
                let (ta, tb) = (t(a), t(b));
                if ta.overlaps(&tb) {
                    assert!(in_candidates(&ta, &tb), "{b} must be a candidate for {a}");
                }
            }
        }
        assert_eq!(t("**/*.rs").candidates(), Candidates::All);
        assert_eq!(
            t("src/auth/x.rs").candidates(),
            Candidates::Scoped {
                at: vec!["".into(), "src".into(), "src/auth".into(), "src/auth/x.rs".into()],
                from: "src/auth/x.rs/".into(),
                to: "src/auth/x.rs0".into(),
            }
        );
    }
}
