//! The registry of argv patterns, as data: which invocations of which program are
//! destructive (`kubectl apply`, `terraform destroy`, `vault secrets disable`,
//! `rsync --delete`, `kafka-topics --delete`, migration runners, ...).
//!
//! Structural rules that need code (git refspecs and protected branches, `rm` scoping,
//! `find`, SQL, credential files, wrappers) stay in [`crate::rules`]; every rule that is
//! "this program, these subcommand words, these options" is a [`Pattern`] here, loaded
//! from `patterns_builtin.json`, so it can be read, listed and extended without code.
//!
//! A pattern matches one command (after wrappers are peeled off) when:
//! - `program` matches the program name (`/usr/bin/aws` is `aws`);
//! - `words` match its leading positional arguments in order (`anywhere`: a run of
//!   positionals anywhere). Options are skipped; those in `value_options` take the next
//!   word as their value, so it is not a positional;
//! - every entry of `options` is present (`--prune`; `-X=DELETE` for an option with a
//!   value, however it is spelled: `-X DELETE`, `-XDELETE`, `--request=DELETE`);
//! - no entry of `unless` is present, as an option or a positional (`--dry-run`);
//! - the positional right after the matched words is none of `unless_next` (a read-only
//!   subcommand under a changing one: `kubectl apply view-last-applied`, `aws configure
//!   list`).
//!
//! Every text is a list of alternatives separated by `|`, each a glob (`*` any text).
//! A subcommand word only known at run time (`kubectl $VERB`) where a pattern of the
//! program would look is itself a finding: it cannot be verified.

use crate::hit::Hit;
use crate::walk::Arg;
use coord_domain::guardrails::{Action, Category};
use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// One pattern as written (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// Unique name, e.g. `kubectl-mutate`.
    pub name: String,
    pub program: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anywhere: bool,
    /// Words compared without case (write them in lower case).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_case: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unless: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unless_next: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_options: Vec<String>,
    /// The positionals the words match are API paths (`repos/o/r/dispatches`): compared
    /// without a query string, fragment or trailing `/`; one only partly known at run
    /// time is compared by its written text (`"repos/$REPO/dispatches"` matches
    /// `*/dispatches`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub api_path: bool,
    pub operation: String,
    pub category: Category,
    pub action: Action,
    /// Why, and what to do instead; `{program}` and `{words}` are replaced by the
    /// program and the positionals the pattern matched.
    pub reason: String,
}

/// Why a pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("guardrail pattern {name}: {message}")]
pub struct PatternError {
    pub name: String,
    pub message: String,
}

/// One alternative. Most are plain words (`delete`, `--force`), compared as text: each
/// glob compiles into a regex in every new process (every Bash hook of an agent), and
/// about a sixth of the built-in registry's texts need one (494 of 2,930; compiling the
/// whole registry takes about 12 ms in a release build).
#[derive(Debug, Clone)]
enum Word {
    Literal { text: String, fold: bool },
    Glob(GlobMatcher),
}

impl Word {
    /// The text before the first wildcard.
    fn literal_start(&self) -> &str {
        let text = match self {
            Word::Literal { text, .. } => text.as_str(),
            Word::Glob(g) => g.glob().glob(),
        };
        text.split(['*', '?', '[']).next().unwrap_or_default()
    }

    fn is_match(&self, subject: &str) -> bool {
        match self {
            // ASCII folding, as globset's own (its regexes are built `(?-u)(?i)`: `ſ`
            // and `K` never matched `s` and `k` there either).
            Word::Literal { text, fold: true } => subject.eq_ignore_ascii_case(text),
            Word::Literal { text, fold: false } => subject == text,
            Word::Glob(g) => g.is_match(subject),
        }
    }
}

/// A `|`-separated list of globs.
#[derive(Debug, Clone)]
struct Alternatives {
    words: Vec<Word>,
    /// Every alternative is a path (`*/dispatches`): what it matches is no subcommand.
    paths: bool,
}

impl Alternatives {
    fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty text matches nothing".into());
        }
        let words = text.split('|').map(|alt| glob(alt, false)).collect::<Result<_, _>>()?;
        let paths = text.split('|').all(|alt| alt.contains('/'));
        Ok(Alternatives { words, paths })
    }

    fn is_match(&self, text: &str) -> bool {
        self.words.iter().any(|g| g.is_match(text))
    }
}

/// An option condition: alternatives, each a name glob and, for `NAME=VALUE`, a value
/// glob (compared without case: `-X=DELETE` matches `-X delete`).
#[derive(Debug, Clone)]
struct OptionSpec(Vec<OptionAlt>);

#[derive(Debug, Clone)]
struct OptionAlt {
    name: Word,
    value: Option<Word>,
    /// `-n`: also found inside a bundle of short flags (`-avn`).
    short: Option<char>,
}

fn glob(text: &str, case_insensitive: bool) -> Result<Word, String> {
    if text.is_empty() {
        return Err("an empty alternative matches nothing".into());
    }
    // A text without a character globset reads specially (backslash escapes included)
    // matches only itself.
    if !text.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return Ok(Word::Literal {
            text: text.to_string(),
            fold: case_insensitive,
        });
    }
    compile(text, case_insensitive).map(Word::Glob)
}

fn compile(text: &str, case_insensitive: bool) -> Result<GlobMatcher, String> {
    GlobBuilder::new(text)
        .literal_separator(false)
        .backslash_escape(true)
        .case_insensitive(case_insensitive)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("`{text}` is not a valid glob: {e}"))
}

impl OptionSpec {
    fn parse(text: &str) -> Result<Self, String> {
        text.split('|')
            .map(|alt| {
                let (name, value) = match alt.split_once('=') {
                    Some((n, v)) => (n, Some(glob(v, true)?)),
                    None => (alt, None),
                };
                let short = match name.as_bytes() {
                    [b'-', c] if c.is_ascii_alphanumeric() && value.is_none() => Some(*c as char),
                    _ => None,
                };
                Ok(OptionAlt {
                    name: glob(name, false)?,
                    value,
                    short,
                })
            })
            .collect::<Result<_, String>>()
            .map(OptionSpec)
    }

    /// Whether one of these options is given: for an option with a value
    /// (`-m=ping`), the last time the command gives that option (`ansible -m ping -m
    /// shell` runs shell), or that field of it (`gh api -f event_type=x -f ref=y`: two
    /// fields).
    fn given(&self, opts: &[Opt]) -> bool {
        let valued = self.0.iter().any(|alt| alt.value.is_some());
        let field = |o: &Opt| {
            o.value
                .as_deref()
                .and_then(|v| v.split_once('='))
                .map(|(k, _)| k.to_string())
        };
        opts.iter().enumerate().any(|(i, o)| {
            let overridden = |later: &Opt| self.names(later) && !self.is_match(later) && field(later) == field(o);
            self.is_match(o) && !(valued && opts[i + 1..].iter().any(overridden))
        })
    }

    /// Whether `o`, whose value is only partly known at run time, may be one of these:
    /// its written start must agree with the start of a value glob (`gh api -f
    /// "project=$ID"` is no `-f query=*mergePullRequest*`).
    fn may_match_unknown(&self, o: &Opt) -> bool {
        let raw = o.value.as_deref().unwrap_or_default();
        let known: String = raw
            .trim_start_matches(['"', '\''])
            .chars()
            .take_while(|c| !matches!(c, '$' | '`' | '"' | '\'' | '\\'))
            .collect::<String>()
            .to_ascii_lowercase();
        self.0
            .iter()
            .filter(|alt| alt.name.is_match(&o.name))
            .any(|alt| match &alt.value {
                None => true,
                Some(v) => {
                    let start = v.literal_start().to_ascii_lowercase();
                    start.starts_with(&known) || known.starts_with(&start)
                }
            })
    }

    /// Whether `o` is one of these options, whatever its value.
    fn names(&self, o: &Opt) -> bool {
        self.0.iter().any(|alt| alt.name.is_match(&o.name))
    }

    fn is_match(&self, o: &Opt) -> bool {
        self.0.iter().any(|alt| {
            if alt.name.is_match(&o.name) {
                // `--dry-run` is the option alone: `--dry-run=none` is another spelling
                // (and a real run); `--dry-run=*` takes any value.
                return match (&alt.value, o.value.as_deref()) {
                    (None, None) => true,
                    // `--volumes=true` is `--volumes` (`--dry-run=none` is not).
                    (None, Some(v)) => {
                        o.separate || ["true", "1", "yes", "on"].iter().any(|t| v.eq_ignore_ascii_case(t))
                    }
                    (Some(v), Some(x)) => v.is_match(x),
                    (Some(_), None) => false,
                };
            }
            alt.short.is_some_and(|c| o.bundle.contains(c))
        })
    }
}

/// A pattern ready to match.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub pattern: Pattern,
    program: Alternatives,
    words: Vec<Alternatives>,
    options: Vec<OptionSpec>,
    unless: Vec<(OptionSpec, Alternatives)>,
    unless_next: Vec<Alternatives>,
}

impl Compiled {
    pub fn new(pattern: Pattern) -> Result<Self, PatternError> {
        let err = |message: String| PatternError {
            name: pattern.name.clone(),
            message,
        };
        let valid_name = !pattern.name.is_empty()
            && pattern.name.len() <= 64
            && pattern
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_name {
            return Err(err("a name is 1 to 64 letters, digits, '-', '_' or '.'".into()));
        }
        let valid_operation = !pattern.operation.is_empty()
            && pattern.operation.len() <= 64
            && pattern
                .operation
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_operation {
            return Err(err("an operation is 1 to 64 of a-z, 0-9 and '_'".into()));
        }
        if pattern.reason.trim().is_empty() || pattern.reason.len() > 500 {
            return Err(err("a reason is 1 to 500 characters".into()));
        }
        if let Action::RequireTrust(t) = pattern.action
            && !(1..=4).contains(&t)
        {
            return Err(err(format!("require_trust is a trust level from 1 to 4, not {t}")));
        }
        let placeholders = pattern.reason.replace("{program}", "").replace("{words}", "");
        if placeholders.contains('{') || placeholders.contains('}') {
            return Err(err(
                "the reason may use {program} and {words}, nothing else in braces".into()
            ));
        }
        if pattern
            .program
            .split('|')
            .any(|alt| !alt.is_empty() && alt.chars().all(|c| matches!(c, '*' | '?')))
        {
            return Err(err(format!(
                "program `{}` would match every program; name it",
                pattern.program
            )));
        }
        if pattern.category == Category::Unverifiable {
            return Err(err("the unverifiable category is the analyser's own".into()));
        }
        let program = Alternatives::parse(&pattern.program).map_err(err)?;
        let words = pattern
            .words
            .iter()
            .map(|w| Alternatives::parse(w))
            .collect::<Result<_, _>>()
            .map_err(err)?;
        let options = pattern
            .options
            .iter()
            .map(|o| OptionSpec::parse(o))
            .collect::<Result<_, _>>()
            .map_err(err)?;
        let unless = pattern
            .unless
            .iter()
            .map(|u| Ok((OptionSpec::parse(u)?, Alternatives::parse(u)?)))
            .collect::<Result<_, String>>()
            .map_err(err)?;
        let unless_next = pattern
            .unless_next
            .iter()
            .map(|u| Alternatives::parse(u))
            .collect::<Result<_, _>>()
            .map_err(err)?;
        Ok(Compiled {
            pattern,
            program,
            words,
            options,
            unless,
            unless_next,
        })
    }

    /// The finding of this pattern for `prog args`, if it matches.
    fn check(&self, prog: &str, args: &[Arg]) -> Option<Hit> {
        if !self.program.is_match(prog) {
            return None;
        }
        let p = &self.pattern;
        let (opts, positionals) = split(args, &p.value_options);
        if self.unless.iter().any(|(spec, _)| spec.given(&opts)) {
            return None;
        }
        let (start, end) = match self.find_words(&positionals) {
            Found::Words(start, end) => (start, end),
            // A run-time subcommand matters only where the pattern's options could be
            // there: `gh api "$endpoint" --jq .name` is no GraphQL mutation whatever it is.
            Found::Dynamic(raw) if self.options_absent(&opts, &positionals, &raw) => return None,
            Found::Dynamic(raw) => return Some(dynamic(prog, &format!("the {prog} subcommand `{raw}`"))),
            Found::No => return None,
        };
        // A word of `unless` anywhere on the command path up to the match (`gcloud
        // components update`, `rails db:migrate:status`) is not this pattern.
        let on_path = |alts: &Alternatives| {
            positionals[..end]
                .iter()
                .any(|a| a.arg.lit().is_some_and(|t| alts.is_match(t)))
        };
        if self.unless.iter().any(|(_, alts)| on_path(alts)) {
            return None;
        }
        // An option's value (`kubectl apply -k view-last-applied`) is no subcommand.
        let next = positionals
            .get(end)
            .filter(|a| !a.after_option)
            .and_then(|a| a.arg.lit());
        if next.is_some_and(|t| self.unless_next.iter().any(|alts| self.fold(alts, t))) {
            return None;
        }
        if let Some(spec) = self.missing_option(&opts) {
            return self
                .may_hide(spec, &opts, &positionals)
                .then(|| dynamic(prog, "an option of this command"));
        }
        let words = positionals[start..end]
            .iter()
            .filter(|a| !a.after_option || self.words.iter().any(|w| a.arg.lit().is_some_and(|t| w.is_match(t))))
            .map(|a| a.arg.raw())
            .collect::<Vec<_>>()
            .join(" ");
        Some(Hit {
            category: p.category,
            operation: p.operation.clone(),
            action: p.action,
            reason: p.reason.replace("{program}", prog).replace("{words}", &words),
        })
    }

    /// The first option this pattern needs that the command does not give.
    fn missing_option(&self, opts: &[Opt]) -> Option<&OptionSpec> {
        self.options.iter().find(|spec| !opts.iter().any(|o| spec.is_match(o)))
    }

    /// Whether `spec` may hide in a value only known at run time: an unquoted expansion
    /// (it splits into words), or the value of the option.
    fn may_hide(&self, spec: &OptionSpec, opts: &[Opt], positionals: &[Positional]) -> bool {
        positionals.iter().any(|a| unquoted_expansion(&a.arg))
            || opts
                .iter()
                .any(|o| o.value_unknown && spec.names(o) && spec.may_match_unknown(o))
    }

    /// An option this pattern needs is surely not there.
    /// Stricter than [`Self::may_hide`]: any other word only known at run time, quoted or
    /// not, may be the option itself (`"$FLAG"` may be `-v`).
    fn options_absent(&self, opts: &[Opt], positionals: &[Positional], subcommand: &str) -> bool {
        let other_unknown = positionals
            .iter()
            .any(|a| matches!(&a.arg, Arg::Unknown(raw) if raw != subcommand) || unquoted_expansion(&a.arg));
        !other_unknown
            && self
                .missing_option(opts)
                .is_some_and(|spec| !opts.iter().any(|o| o.value_unknown && spec.names(o)))
    }

    /// Where the words match: leading positionals in order (any positional right after an
    /// option may be that option's value, and is passed over), or a run of positionals
    /// anywhere. Answers the matched range.
    fn find_words(&self, positionals: &[Positional]) -> Found {
        let n = self.words.len();
        let api_path = self.pattern.api_path;
        let matches = |w: &Alternatives, a: &Positional| match &a.arg {
            Arg::Lit(t) if api_path => self.fold(w, path_of(t)),
            Arg::Lit(t) => self.fold(w, t),
            // `"repos/$REPO/dispatches"` ends with `/dispatches` whatever `$REPO` is.
            Arg::Unknown(raw) => api_path && self.fold(w, path_of(&raw.replace(['"', '\''], ""))),
        };
        if self.pattern.anywhere {
            // A `NAME=value` operand (`make test E2E_SKIP_TEARDOWN=true`) is an
            // assignment, no subcommand.
            let assignment = |a: &Positional| {
                a.arg.lit().and_then(|t| t.split_once('=')).is_some_and(|(name, _)| {
                    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            };
            return (0..=positionals.len().saturating_sub(n))
                .find(|&s| {
                    positionals.len() >= s + n
                        && self
                            .words
                            .iter()
                            .zip(&positionals[s..])
                            .all(|(w, a)| !assignment(a) && matches(w, a))
                })
                .map_or(Found::No, |s| Found::Words(s, s + n));
        }
        let (mut w, mut start) = (0, None);
        for (k, a) in positionals.iter().enumerate() {
            if w == n {
                break;
            }
            if matches(&self.words[w], a) {
                start.get_or_insert(k);
                w += 1;
            } else if a.after_option {
                continue;
            } else if let Arg::Unknown(raw) = &a.arg {
                // A path written in part (`"$REPO/scripts/x.py"`) is not a subcommand (an
                // `api_path` pattern compared its written end above). A word only known
                // at run time where a pattern looks for a path is judged by the
                // pattern's options (`gh api -X PUT "$endpoint"`), or passed over when
                // it needs none.
                if raw.contains('/') {
                    return Found::No;
                }
                if self.words[w].paths && self.options.is_empty() {
                    return Found::No;
                }
                return Found::Dynamic(raw.clone());
            } else {
                return Found::No;
            }
            if w == n {
                return Found::Words(start.unwrap_or(k), k + 1);
            }
        }
        if w == n { Found::Words(0, 0) } else { Found::No }
    }

    /// Words compared as written, or without case (`ignore_case`: `redis-cli flushAll`).
    fn fold(&self, w: &Alternatives, text: &str) -> bool {
        if self.pattern.ignore_case {
            w.is_match(&text.to_ascii_lowercase())
        } else {
            w.is_match(text)
        }
    }
}

/// An API path without its query string, fragment and trailing `/`.
fn path_of(text: &str) -> &str {
    let path = text.split(['?', '#']).next().unwrap_or(text);
    path.strip_suffix('/').unwrap_or(path)
}

enum Found {
    Words(usize, usize),
    Dynamic(String),
    No,
}

fn dynamic(prog: &str, what: &str) -> Hit {
    Hit {
        category: Category::Unverifiable,
        operation: "dynamic_command".into(),
        action: Action::Block,
        reason: format!("{what} is only known at run time ({prog}); write it out"),
    }
}

/// `$X`, `${X}`, `$(…)` or backticks outside quotes: split into words when it runs, so it
/// may hold options.
fn unquoted_expansion(a: &Arg) -> bool {
    matches!(a, Arg::Unknown(raw) if raw.starts_with('$') || raw.starts_with('`'))
}

/// One option of a command line.
#[derive(Debug)]
pub(crate) struct Opt {
    /// `--request`, `-X`.
    pub(crate) name: String,
    value: Option<String>,
    /// The value is only known at run time.
    value_unknown: bool,
    /// The value is the next word (`-X DELETE`), not written into the option.
    separate: bool,
    /// The letters of a bundle of short flags (`-avn`: "avn"), empty otherwise.
    bundle: String,
}

/// A positional argument, and whether it directly follows an option (then it may be that
/// option's value: `kubectl --as admin delete`).
#[derive(Debug)]
pub(crate) struct Positional {
    pub(crate) arg: Arg,
    pub(crate) after_option: bool,
}

/// Options and positionals, `value_options` taking the next word (or the rest of a short
/// option or bundle, `-XDELETE`, `-sX DELETE`) as their value. Nothing after `--` is read:
/// it is another command's (`gcloud compute ssh vm -- sudo apt-get update`) or operands.
pub(crate) fn split(args: &[Arg], value_options: &[String]) -> (Vec<Opt>, Vec<Positional>) {
    let takes_value = |name: &str| value_options.iter().any(|v| v == name);
    let (mut opts, mut positionals) = (Vec::<Opt>::new(), Vec::new());
    let mut after_option = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let raw = arg.raw();
        i += 1;
        if raw == "--" {
            break;
        }
        if !raw.starts_with('-') || raw.len() == 1 || matches!(arg, Arg::Unknown(_)) {
            positionals.push(Positional {
                arg: arg.clone(),
                after_option,
            });
            after_option = false;
            continue;
        }
        after_option = false;
        let mut value_of_next = |opts: &mut Vec<Opt>, name: String, bundle: String| {
            let next = args.get(i);
            opts.push(Opt {
                name,
                value: next.map(|a| a.raw().to_string()),
                value_unknown: matches!(next, Some(Arg::Unknown(_))),
                separate: true,
                bundle,
            });
            i += 1;
        };
        if let Some(long) = raw.strip_prefix("--") {
            if let Some((name, value)) = long.split_once('=') {
                opts.push(Opt {
                    name: format!("--{name}"),
                    value: Some(value.into()),
                    value_unknown: false,
                    separate: false,
                    bundle: String::new(),
                });
            } else if takes_value(raw) {
                value_of_next(&mut opts, raw.into(), String::new());
            } else {
                opts.push(Opt {
                    name: raw.into(),
                    value: None,
                    value_unknown: false,
                    separate: false,
                    bundle: String::new(),
                });
                after_option = true;
            }
            continue;
        }
        // Short options: a bundle of flags, up to the first that takes a value (the rest
        // of the word, or the next word).
        let letters = &raw[1..];
        let with_value = letters.char_indices().find(|(_, c)| takes_value(&format!("-{c}")));
        match with_value {
            Some((j, c)) => {
                // `-X=POST`: Go's flag parsers (gh, kubectl, helm) read the value after
                // the `=`; reading it so for every program only errs towards matching.
                let rest = &letters[j + c.len_utf8()..];
                let rest = rest.strip_prefix('=').unwrap_or(rest);
                let bundle = letters[..j].to_string();
                if rest.is_empty() {
                    value_of_next(&mut opts, format!("-{c}"), bundle);
                } else {
                    opts.push(Opt {
                        name: format!("-{c}"),
                        value: Some(rest.into()),
                        value_unknown: false,
                        separate: true,
                        bundle,
                    });
                }
            }
            None => {
                opts.push(Opt {
                    name: raw.into(),
                    value: None,
                    value_unknown: false,
                    separate: false,
                    bundle: if letters.chars().count() > 1 {
                        letters.into()
                    } else {
                        String::new()
                    },
                });
                after_option = true;
            }
        }
    }
    (opts, positionals)
}

/// A set of patterns, matched in order: every pattern that matches gives a finding.
#[derive(Debug, Clone, Default)]
pub struct Patterns(Vec<Compiled>);

impl Patterns {
    pub fn new(patterns: Vec<Pattern>) -> Result<Self, PatternError> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(patterns.len());
        for p in patterns {
            if !seen.insert(p.name.clone()) {
                return Err(PatternError {
                    name: p.name,
                    message: "two patterns have this name".into(),
                });
            }
            out.push(Compiled::new(p)?);
        }
        Ok(Patterns(out))
    }

    pub fn patterns(&self) -> impl Iterator<Item = &Pattern> {
        self.0.iter().map(|c| &c.pattern)
    }

    pub fn check(&self, prog: &str, args: &[Arg]) -> Vec<Hit> {
        self.0.iter().filter_map(|c| c.check(prog, args)).collect()
    }

    /// Whether some pattern is about `prog`: then the registry, not the generic reading
    /// of subcommand words ([`crate::verbs`]), judges it.
    pub fn knows(&self, prog: &str) -> bool {
        self.0.iter().any(|c| c.program.is_match(prog))
    }
}

/// The built-in patterns (`patterns_builtin.json`), as written.
pub fn builtin_patterns() -> Vec<Pattern> {
    serde_json::from_str(include_str!("patterns_builtin.json")).expect("patterns_builtin.json is valid (tested)")
}

/// The built-in patterns, compiled once.
pub fn builtin() -> &'static Patterns {
    static BUILTIN: OnceLock<Patterns> = OnceLock::new();
    BUILTIN.get_or_init(|| Patterns::new(builtin_patterns()).expect("patterns_builtin.json compiles (tested)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Arg> {
        line.split_whitespace().map(|w| Arg::Lit(w.into())).collect()
    }

    fn pattern(json: serde_json::Value) -> Result<Compiled, PatternError> {
        Compiled::new(serde_json::from_value(json).expect("a pattern"))
    }

    #[test]
    fn a_plain_word_matches_as_its_glob_does() {
        let subjects = [
            "delete",
            "DELETE",
            "Delete",
            "delete ",
            "delet",
            "deletes",
            "",
            "a/b",
            "A/B",
            "--force",
            "-f",
            "ſtop",
            "stop",
            "STOP",
            "é",
            "É",
            "\u{212a}ill",
            "kill",
        ];
        let texts = [
            "delete", "DELETE", "a/b", "--force", "-f", "x.y", "d!e", "stop", "é", "kill",
        ];
        for text in texts {
            for fold in [false, true] {
                let word = glob(text, fold).unwrap();
                assert!(matches!(word, Word::Literal { .. }), "{text}");
                let reference = compile(text, fold).unwrap();
                for subject in subjects {
                    assert_eq!(
                        word.is_match(subject),
                        reference.is_match(subject),
                        "{text} (fold {fold}) on {subject:?}"
                    );
                }
            }
        }
        for text in ["delete-*", "-?", "db:[a-z]", "{a,b}", "a\\*"] {
            assert!(matches!(glob(text, true).unwrap(), Word::Glob(_)), "{text}");
        }
    }

    #[test]
    fn builtin_patterns_compile_and_have_distinct_names() {
        let all = builtin_patterns();
        assert!(all.len() >= 80);
        assert_eq!(builtin().patterns().count(), all.len());
    }

    #[test]
    fn matching_reads_words_options_and_values() {
        let p = pattern(serde_json::json!({
            "name": "t", "program": "tool|tool2", "words": ["db", "drop|reset"],
            "options": ["--force|-f"], "unless": ["--dry-run|-n"], "value_options": ["-c", "--config"],
            "operation": "bulk_delete", "category": "mass_deletion", "action": "block",
            "reason": "{program} {words} drops"
        }))
        .unwrap();
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("tool", "db drop --force", Some("tool db drop drops")),
            ("tool2", "-c x.toml db reset -f", Some("tool2 db reset drops")),
            ("tool", "--config=x db drop -vf", Some("tool db drop drops")),
            ("tool", "db drop", None),              // --force missing
            ("tool", "db drop -f --dry-run", None), // unless
            ("tool", "db drop -fn", None),          // unless, in a bundle
            ("tool", "-c db drop -f", None),        // `db` is -c's value: words are `drop -f`
            ("tool", "db list -f", None),
            ("other", "db drop -f", None),
            ("tool", "--as admin db drop -f", Some("tool db drop drops")), // admin: --as's value
            ("tool", "db --env x drop -f", Some("tool db drop drops")),
            ("tool", "-- db drop -f", None), // after --: not read
            ("tool", "db drop -- -f", None),
        ];
        for (prog, line, want) in cases {
            let got = p.check(prog, &argv(line)).map(|h| h.reason);
            assert_eq!(got.as_deref(), *want, "{prog} {line}");
        }
    }

    #[test]
    fn option_values_and_spellings() {
        let p = pattern(serde_json::json!({
            "name": "curl", "program": "curl", "words": ["*:9200/*"], "anywhere": true,
            "options": ["-X=DELETE|--request=DELETE"], "value_options": ["-X", "--request", "-H"],
            "unless": ["--dry-run"],
            "operation": "bulk_delete", "category": "mass_deletion", "action": "block", "reason": "r"
        }))
        .unwrap();
        for (line, hit) in [
            ("-X DELETE http://h:9200/idx", true),
            ("-XDELETE http://h:9200/idx", true),
            ("--request=delete -H a:b http://h:9200/idx", true),
            ("-X GET http://h:9200/idx", false),
            ("-X DELETE http://h:8080/idx", false),
            ("-X DELETE --dry-run http://h:9200/idx", false),
            ("-X DELETE --dry-run=none http://h:9200/idx", true), // another option, a real run
        ] {
            assert_eq!(p.check("curl", &argv(line)).is_some(), hit, "{line}");
        }
    }

    #[test]
    fn a_valued_unless_counts_where_the_command_gives_it_last() {
        let p = pattern(serde_json::json!({
            "name": "adhoc", "program": "ansible", "unless": ["-m=ping|--module-name=ping"],
            "value_options": ["-m", "--module-name", "-a"],
            "operation": "deploy", "category": "production_deployment", "action": "block", "reason": "r"
        }))
        .unwrap();
        for (line, hit) in [
            ("all -m ping", false),
            ("all -m ping -m shell -a x", true),
            ("all -m shell -m ping", false),
            ("all --module-name=ping -m command", true),
            ("all -m ping -a x", false),
            ("all -m ping -a k=v -m k=shell", false), // (another field of a repeated option)
            ("all", true),
        ] {
            assert_eq!(p.check("ansible", &argv(line)).is_some(), hit, "{line}");
        }
    }

    #[test]
    fn unless_next_spares_a_reading_subcommand() {
        let p = pattern(serde_json::json!({
            "name": "k", "program": "k", "words": ["apply|configure"],
            "unless_next": ["view-last-applied|list"], "value_options": ["-f"],
            "operation": "deploy", "category": "production_deployment", "action": "block", "reason": "r"
        }))
        .unwrap();
        for (line, hit) in [
            ("apply -f d.yaml", true),
            ("apply view-last-applied -f d.yaml", false),
            ("apply -f view-last-applied", true), // -f's value, not a subcommand
            ("configure", true),
            ("configure --profile x", true),
            ("configure list", false),
            ("configure set x list", true),       // not right after the match
            ("apply -k view-last-applied", true), // -k's value (not a value option here)
            ("apply --field-manager view-last-applied -f d.yaml", true),
        ] {
            assert_eq!(p.check("k", &argv(line)).is_some(), hit, "{line}");
        }
    }

    #[test]
    fn unless_words_on_the_path_and_hidden_options() {
        let p = pattern(serde_json::json!({
            "name": "g", "program": "g", "words": ["delete|update"], "anywhere": true,
            "unless": ["components|--dry-run"],
            "operation": "deploy", "category": "production_deployment", "action": "block", "reason": "r"
        }))
        .unwrap();
        for (line, hit) in [
            ("compute instances delete vm", true),
            ("components update", false),
            ("compute instances delete components", true), // after the match: not on its path
            ("compute instances delete vm --dry-run", false),
            ("compute ssh vm -- sudo apt-get update", false),
        ] {
            assert_eq!(p.check("g", &argv(line)).is_some(), hit, "{line}");
        }
        let rsync = &builtin();
        let hidden = [
            Arg::Lit("-a".into()),
            Arg::Unknown("$OPTS".into()),
            Arg::Lit("src/".into()),
        ];
        assert_eq!(rsync.check("rsync", &hidden)[0].operation, "dynamic_command");
        let quoted = [
            Arg::Lit("-a".into()),
            Arg::Unknown("\"$SRC\"".into()),
            Arg::Lit("dst/".into()),
        ];
        assert!(rsync.check("rsync", &quoted).is_empty());
        // Never a panic on odd options.
        assert!(rsync.check("kubectl", &argv("-é get pods")).is_empty());
        assert!(rsync.check("rsync", &argv("-–delete a b")).is_empty());
    }

    #[test]
    fn a_subcommand_only_known_at_run_time_is_unverifiable() {
        let p = &builtin();
        let hits = p.check("kubectl", &[Arg::Unknown("$VERB".into()), Arg::Lit("x".into())]);
        assert_eq!(hits[0].category, Category::Unverifiable);
        assert!(p.check("kubectl", &argv("get pods")).is_empty());
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        let base = serde_json::json!({
            "name": "ok", "program": "x", "operation": "deploy", "category": "production_deployment",
            "action": "block", "reason": "r"
        });
        let with = |k: &str, v: serde_json::Value| {
            let mut b = base.clone();
            b[k] = v;
            b
        };
        assert!(pattern(base.clone()).is_ok());
        for (bad, why) in [
            (with("name", "".into()), "name"),
            (with("name", "a b".into()), "name"),
            (with("operation", "Deploy!".into()), "operation"),
            (with("program", "".into()), "empty"),
            (with("words", serde_json::json!(["a||b"])), "empty"),
            (with("words", serde_json::json!(["[a"])), "glob"),
            (with("reason", " ".into()), "reason"),
            (with("category", "unverifiable".into()), "unverifiable"),
            (with("program", "*".into()), "every program"),
            (with("program", "git|?*".into()), "every program"),
            (with("action", serde_json::json!({"require_trust": 9})), "1 to 4"),
            (with("reason", "{prog} breaks".into()), "braces"),
        ] {
            let e = pattern(bad.clone()).unwrap_err();
            assert!(e.message.contains(why), "{bad}: {e}");
        }
        assert!(serde_json::from_value::<Pattern>(with("colour", "red".into())).is_err());
        let twice = vec![
            serde_json::from_value::<Pattern>(base.clone()).unwrap(),
            serde_json::from_value::<Pattern>(base).unwrap(),
        ];
        assert!(Patterns::new(twice).unwrap_err().message.contains("two patterns"));
    }
}
