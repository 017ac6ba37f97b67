//! What a command line itself sets before a later command of the same line runs: shell
//! variables it assigns (`dir=$(mktemp -d)`, `out=/tmp/x`) and the directory it changes
//! to (`cd /tmp && …`), so that a deletion is judged by the path it really reaches.
//!
//! Only what surely holds is known: an assignment is followed by the commands that can
//! only run after it ran (the rest of its `&&` chain; the rest of the line when it stands
//! first in its chain and cannot fail), a `cd` only along its `&&` chain (it may fail).
//! Anything that may change a variable in a way not read here — a loop, a function, `read`,
//! `eval`, `source`, arithmetic, an `IFS` change — forgets what was known. A value with
//! blanks or glob characters is one word only quoted; unquoted and alone (`$b`), a value
//! with blanks is the words it splits into.
//! `$TMPDIR` is the temporary directory (`/tmp`) unless the line assigns it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use brush_parser::word::{Parameter, ParameterExpr, ParameterTestType, SpecialParameter};

/// Where the temporary directory is taken to be.
pub const TMP: &str = "/tmp";

/// What a mktemp without a template creates (its `X`s are not glob characters).
const MKTEMP_DEFAULT: &str = "/tmp/tmp.XXXXXXXXXX";

/// A process id or a random number, as a word: some digits.
const SOME_NUMBER: &str = "12345";

/// The shell state a command sees, as far as the line sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Names the line assigned: the value when known and one word.
    vars: BTreeMap<String, Option<String>>,
    /// Names whose value is the one in `vars` or the empty string: a `d=$(mktemp -d)`
    /// not followed by `&&` (a failed substitution assigns nothing). Unknown wherever
    /// the empty string would matter ([`Scope::or_empty`]).
    maybe_empty: BTreeSet<String>,
    /// Something may have changed any variable (`eval`, `source`): the environment's
    /// conventions (`$TMPDIR` is the temporary directory) no longer hold either.
    forgot: bool,
    /// The working directory, when the line surely changed it to an absolute path.
    pub cwd: Option<String>,
    /// `IFS` was assigned: no unquoted expansion can be read as one word.
    pub split_changed: bool,
    /// Assignments and `cd` are no longer taken at their word ([`Effect::Distrust`]).
    distrusted: bool,
    /// Inside a function called with these arguments, as far as the body has not changed
    /// them in a way not followed (`set --`).
    positional: Option<Arguments>,
    /// When what this scope knows last changed, for code that runs at a moment of its own
    /// (an exit handler: [`Scope::since`]).
    changes: Changes,
}

/// When a scope's names, directory and arguments last changed, on one clock for every
/// scope ([`mark`]). History, not state: scopes that know the same are equal whatever
/// led to them.
#[derive(Debug, Clone, Default)]
struct Changes {
    names: BTreeMap<String, u64>,
    everything: u64,
    cwd: u64,
    arguments: u64,
}

impl PartialEq for Changes {
    fn eq(&self, _: &Changes) -> bool {
        true
    }
}

impl Eq for Changes {}

impl Changes {
    /// Also what `other` changed.
    fn merge(&mut self, other: &Changes) {
        for (name, at) in &other.names {
            let mine = self.names.entry(name.clone()).or_default();
            *mine = (*mine).max(*at);
        }
        self.everything = self.everything.max(other.everything);
        self.cwd = self.cwd.max(other.cwd);
        self.arguments = self.arguments.max(other.arguments);
    }
}

/// The clock of [`Changes`]: shared by every walk (one walk compares only its own
/// moments, and the clock only moves forward).
static CLOCK: AtomicU64 = AtomicU64::new(1);

fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::Relaxed)
}

/// The moment now: changes made after it are later ([`Scope::since`]).
pub fn mark() -> u64 {
    CLOCK.load(Ordering::Relaxed)
}

/// A function's arguments, numbered from `$1`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arguments {
    /// The first ones, each when known and one word.
    pub known: Vec<Option<String>>,
    /// They are all: `$#` is their number and past them a parameter is empty. Otherwise a
    /// word of the call could expand to none or to several, and what follows is unknown.
    pub exact: bool,
}

/// What one simple command does to the shell state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Names assigned: the value when known, and whether the assignment can fail
    /// (its value comes from a command whose failure leaves it empty).
    Assign(Vec<(String, Option<String>, bool)>),
    /// `cd`/`pushd`: the absolute directory, when known.
    Cd(Option<String>),
    /// Something that may change any variable or the directory (`eval`, `source`, a
    /// function call, `popd`): nothing known survives it.
    Forget,
    /// Something after which no assignment or `cd` can be taken at its word for the rest
    /// of the line: a nameref, a read-only or integer variable, `shopt`, a DEBUG trap,
    /// `hash`, `enable`, an alias, a changed PATH.
    Distrust,
    /// `shift N` (`None`: the positional parameters changed in a way not followed, `set --`).
    Shift(Option<usize>),
}

impl Scope {
    /// A scope that knows only the working directory.
    pub fn at(cwd: Option<String>) -> Scope {
        Scope {
            cwd,
            ..Default::default()
        }
    }

    /// The value of a parameter expansion, when this line surely set it.
    /// `quoted`: inside double quotes or a here-document, where a changed IFS does not
    /// split it.
    pub fn param(&self, expr: &ParameterExpr, quoted: bool) -> Option<String> {
        if (self.split_changed && !quoted) || self.distrusted {
            return None;
        }
        // Unquoted, a value with blanks or glob characters is no longer one word.
        self.param_value(expr).filter(|v| quoted || one_word(v))
    }

    /// The words an unquoted `$name` alone splits into (the default IFS, no glob
    /// characters, at least one word): `b="curl -s"; $b URL` runs curl.
    pub fn split_words(&self, name: &str) -> Option<Vec<String>> {
        if self.split_changed || self.distrusted {
            return None;
        }
        let value = self.value(&Parameter::Named(name.to_string()))?;
        let words: Vec<String> = value
            .split([' ', '\t', '\n'])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        (!words.is_empty() && words.iter().all(|w| one_word(w))).then_some(words)
    }

    fn param_value(&self, expr: &ParameterExpr) -> Option<String> {
        match expr {
            // `${TMPDIR:?}`: set and not empty, or the command stops.
            ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect: false,
                test_type,
                ..
            } => self
                .value(parameter)
                .or_else(|| match parameter {
                    // `:?` and empty, the command stops: the value it may hold otherwise.
                    Parameter::Named(name) if matches!(test_type, ParameterTestType::UnsetOrNull) => {
                        self.or_empty(name).map(str::to_string)
                    }
                    _ => None,
                })
                .or_else(|| self.convention(parameter)),
            ParameterExpr::Parameter {
                parameter,
                indirect: false,
            } => self.value(parameter),
            // `${TMPDIR:-/tmp}`: the temporary directory either way (a default elsewhere
            // is where the command goes when TMPDIR is unset, as it usually is).
            ParameterExpr::UseDefaultValues {
                parameter: p @ Parameter::Named(name),
                indirect: false,
                default_value: Some(d),
                ..
            } if name == "TMPDIR" && (d == TMP || d.starts_with("/tmp/") || d == "/var/tmp") => {
                self.value(p).or_else(|| self.convention(p))
            }
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect: false,
                ..
            } => self.value(parameter).filter(|v| !v.is_empty()),
            _ => None,
        }
    }

    /// What a variable the line did not set holds by convention, when it is set: the
    /// temporary directory for TMPDIR. (Unset, `$TMPDIR/x` is `/x`: a bare `$TMPDIR` is not
    /// taken for /tmp, only `${TMPDIR:?}` and `${TMPDIR:-/tmp}`.)
    fn convention(&self, p: &Parameter) -> Option<String> {
        match p {
            Parameter::Named(name) if name == "TMPDIR" && !self.forgot && !self.vars.contains_key(name) => {
                Some(TMP.into())
            }
            _ => None,
        }
    }

    fn value(&self, p: &Parameter) -> Option<String> {
        match p {
            // Names the shell itself sets behind the line's back.
            Parameter::Named(name)
                if matches!(
                    name.as_str(),
                    "REPLY"
                        | "OLDPWD"
                        | "PWD"
                        | "_"
                        | "OPTARG"
                        | "OPTIND"
                        | "MAPFILE"
                        | "PIPESTATUS"
                        | "BASH_REMATCH"
                        | "FUNCNAME"
                        | "DIRSTACK"
                        | "BASH_SOURCE"
                        | "BASH_LINENO"
                        | "BASH_ARGV"
                        | "BASH_ARGC"
                        | "BASH_COMMAND"
                        | "BASH_SUBSHELL"
                        | "GROUPS"
                        | "SECONDS"
                        | "LINENO"
                        | "HISTCMD"
                        | "EPOCHSECONDS"
                        | "EPOCHREALTIME"
                ) =>
            {
                None
            }
            Parameter::Named(name) if self.maybe_empty.contains(name) => None,
            Parameter::Named(name) => match self.vars.get(name) {
                Some(v) => v.clone(),
                None if self.forgot => None,
                // The home directory, as `~` (what the deletion and write rules know).
                None if name == "HOME" => Some("~".into()),
                None if matches!(name.as_str(), "RANDOM" | "BASHPID" | "SRANDOM") => Some(SOME_NUMBER.into()),
                None => None,
            },
            Parameter::Special(SpecialParameter::ProcessId | SpecialParameter::LastBackgroundProcessId) => {
                Some(SOME_NUMBER.into())
            }
            // Past the last argument, a positional parameter is empty.
            Parameter::Positional(n @ 1..) => {
                let args = self.positional.as_ref()?;
                match args.known.get(*n as usize - 1) {
                    Some(v) => v.clone(),
                    None => args.exact.then(String::new),
                }
            }
            Parameter::Special(SpecialParameter::PositionalParameterCount) => {
                let args = self.positional.as_ref()?;
                args.exact.then(|| args.known.len().to_string())
            }
            // `"$*"`: the arguments joined by a blank, one word only when there is one.
            Parameter::Special(SpecialParameter::AllPositionalParameters { concatenate: true }) => {
                let args = self.positional.as_ref().filter(|a| a.exact)?;
                match args.known.as_slice() {
                    [] => Some(String::new()),
                    [one] => one.clone(),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The words `"$@"` (or `$*`, whose words do not split further) stands for, inside a
    /// function whose arguments are known.
    pub fn arguments(&self) -> Option<&Arguments> {
        self.positional.as_ref().filter(|_| !self.distrusted)
    }

    /// A scope for a function's body called with `known` arguments (all of them when
    /// `exact`), knowing nothing else: its variables may be set anywhere before the call.
    pub fn call(&self, known: Vec<Option<String>>, exact: bool) -> Scope {
        let mut s = Scope::default();
        s.forget_all();
        if self.distrusted {
            s.distrust();
        }
        s.split_changed = self.split_changed;
        let known = known.into_iter().map(|v| v.filter(|v| one_word(v))).collect();
        s.positional = Some(Arguments { known, exact });
        s
    }

    /// The function arguments `other` knows.
    pub fn arguments_of(&mut self, other: &Scope) {
        self.positional.clone_from(&other.positional);
    }

    fn shift(&mut self, n: Option<usize>, certain: bool) {
        self.positional = match (self.positional.take(), n) {
            (Some(mut args), Some(n)) if n <= args.known.len() && certain => {
                args.known.drain(..n);
                Some(args)
            }
            _ => None,
        };
        self.changes.arguments = tick();
    }

    /// `name` holds `value` (a loop's variable, for one pass).
    pub fn bind(&mut self, name: &str, value: String) {
        self.set(name, Some(value));
    }

    /// `effect` surely happened: what follows sees it.
    pub fn apply(&mut self, effect: &Effect) {
        match effect {
            Effect::Assign(names) => {
                for (name, value, _) in names {
                    self.set(name, value.clone());
                }
            }
            Effect::Cd(dir) => self.set_cwd(dir.clone().filter(|_| !self.distrusted)),
            Effect::Forget => self.forget_everything(),
            Effect::Distrust => self.distrust(),
            Effect::Shift(n) => self.shift(*n, true),
        }
    }

    /// `effect` happened first in its chain: what comes after the chain (whatever the
    /// chain did next) sees what could not fail.
    pub fn apply_certain(&mut self, effect: &Effect) {
        match effect {
            Effect::Assign(names) => {
                for (name, value, fallible) in names {
                    self.set(name, value.clone());
                    if *fallible && value.is_some() {
                        self.maybe_empty.insert(name.clone());
                    }
                }
            }
            Effect::Cd(_) => self.set_cwd(None),
            Effect::Forget => self.forget_everything(),
            Effect::Distrust => self.distrust(),
            Effect::Shift(n) => self.shift(*n, true),
        }
    }

    /// `effect` may or may not have happened.
    pub fn forget(&mut self, effect: &Effect) {
        match effect {
            Effect::Assign(names) => {
                for (name, _, _) in names {
                    self.set(name, None);
                }
            }
            Effect::Cd(_) => self.set_cwd(None),
            Effect::Forget => self.forget_everything(),
            Effect::Distrust => self.distrust(),
            Effect::Shift(n) => self.shift(*n, false),
        }
    }

    /// What holds whether or not the code that led from this scope to `other` ran (the
    /// rest of an `&&` chain): what both know alike.
    pub fn meet(&mut self, other: &Scope) {
        let names: Vec<String> = self.vars.keys().chain(other.vars.keys()).cloned().collect();
        // Knowledge merged, not a change: what either side changed, and when, is kept.
        self.changes.merge(&other.changes);
        for name in names {
            if self.vars.get(&name) != other.vars.get(&name) {
                self.vars.insert(name.clone(), None);
            }
            if other.maybe_empty.contains(&name) {
                self.maybe_empty.insert(name);
            }
        }
        if self.cwd != other.cwd {
            self.cwd = None;
        }
        if self.positional != other.positional {
            self.positional = None;
        }
        self.forgot |= other.forgot;
        self.split_changed |= other.split_changed;
        self.distrusted |= other.distrusted;
    }

    /// Names assigned somewhere this scope cannot follow (a loop, a branch).
    pub fn forget_names<'a>(&mut self, names: impl IntoIterator<Item = &'a String>, moved: bool) {
        for n in names {
            self.set(n, None);
        }
        if moved {
            self.set_cwd(None);
        }
    }

    /// What `other` changed, and when, is history of this scope too (the state it
    /// replaces was reached through it).
    pub fn keep_changes(&mut self, other: &Scope) {
        self.changes.merge(&other.changes);
    }

    /// Whether this scope's directory changed at or after `mark` ([`mark`]).
    pub fn cwd_changed_since(&self, mark: u64) -> bool {
        self.changes.cwd >= mark || self.changes.everything >= mark
    }

    /// `name` holds another value for a while (a command's own assignment): a change
    /// for an exit handler, though not for what follows.
    pub fn touch(&mut self, name: &str) {
        self.changes.names.insert(name.to_string(), tick());
    }

    fn set_cwd(&mut self, cwd: Option<String>) {
        self.cwd = cwd;
        self.changes.cwd = tick();
    }

    /// What code set to run at the shell's exit (`trap … EXIT`) may see, from `then` — the
    /// state when it was set, at moment `mark` — and this scope, the line's at its end: what
    /// was known then, less anything the line changed since (it may exit at any moment).
    pub fn since(&self, then: &Scope, mark: u64) -> Scope {
        let mut s = then.clone();
        if self.changes.everything >= mark {
            s.forget_everything();
        }
        for (name, at) in &self.changes.names {
            if *at >= mark {
                s.set(name, None);
            }
        }
        if self.changes.cwd >= mark {
            s.set_cwd(None);
        }
        if self.changes.arguments >= mark {
            s.positional = None;
        }
        s.split_changed |= self.split_changed;
        if self.distrusted {
            s.distrust();
        }
        s
    }

    /// Nothing the line sets is taken at its word any more.
    pub fn distrust(&mut self) {
        self.forget_all();
        self.distrusted = true;
    }

    /// The value of a name that holds it or the empty string (`d=$(mktemp -d); rm -rf
    /// "$d"`): for a word that is only that name, quoted, where an empty word names no
    /// file.
    pub fn or_empty(&self, name: &str) -> Option<&str> {
        if self.distrusted || !self.maybe_empty.contains(name) {
            return None;
        }
        self.vars.get(name)?.as_deref()
    }

    /// Whether `$(mktemp …)` and literal assignments may still be trusted.
    pub fn trusted(&self) -> bool {
        !self.distrusted
    }

    /// After code that may have changed anything (`eval`, `source`, a function of the
    /// line): `IFS` too.
    fn forget_everything(&mut self) {
        self.forget_all();
        self.split_changed = true;
    }

    pub fn forget_all(&mut self) {
        self.vars.clear();
        self.maybe_empty.clear();
        self.cwd = None;
        self.forgot = true;
        // `eval 'set -- …'`, `source`: the arguments too.
        self.positional = None;
        self.changes.everything = tick();
    }

    fn set(&mut self, name: &str, value: Option<String>) {
        // `x[0]=…` assigns x.
        let name = name.split('[').next().unwrap_or(name);
        if name == "IFS" {
            self.split_changed = true;
        }
        if matches!(name, "PATH" | "BASH_ENV" | "ENV" | "PROMPT_COMMAND") {
            self.distrusted = true; // which `mktemp` or `cd` runs, or what runs before each command
        }
        self.vars.insert(name.to_string(), value);
        self.maybe_empty.remove(name);
        self.changes.names.insert(name.to_string(), tick());
    }

    /// The directory `dir` names, seen from this scope's working directory: known only
    /// when absolute (a relative `cd` may follow `CDPATH`).
    pub fn cd_target(&self, dir: Option<&str>) -> Option<String> {
        let dir = dir.unwrap_or("~");
        (dir.starts_with('/') || dir == "~" || dir.starts_with("~/")).then(|| dir.trim_end_matches('/').to_string())
    }

    /// `path` as the command reaches it: joined to the working directory the line
    /// changed to, when relative.
    pub fn reach(&self, path: &str) -> String {
        match &self.cwd {
            Some(cwd) if !path.starts_with(['/', '~', '$', '-']) && !path.is_empty() => {
                // Lexically normal, so that `.` in /tmp is /tmp itself, not a name under it.
                let mut parts: Vec<&str> = Vec::new();
                for part in cwd.split('/').chain(path.split('/')) {
                    match part {
                        "" | "." => {}
                        ".." => {
                            parts.pop();
                        }
                        p => parts.push(p),
                    }
                }
                let root = if cwd.starts_with('~') { "" } else { "/" };
                format!("{root}{}", parts.join("/"))
            }
            _ => path.to_string(),
        }
    }
}

/// A value that stays one word when expanded unquoted, and is no glob.
fn one_word(v: &str) -> bool {
    !v.chars()
        .any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '[' | ']'))
}

/// What `mktemp ARGS…` prints, when the arguments say: the directory it creates under,
/// and the template.
pub fn mktemp_path(args: &[&str]) -> Option<String> {
    let (mut dir, mut in_tmp, mut template) = (None::<String>, false, None::<&str>);
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-d" | "--directory" | "-q" | "--quiet" | "-u" | "--dry-run" => {}
            "-t" => in_tmp = true,
            "-p" => {
                dir = Some(args.get(i + 1)?.to_string());
                i += 1;
            }
            "--tmpdir" => in_tmp = true,
            _ if a.starts_with("--tmpdir=") => dir = Some(a["--tmpdir=".len()..].to_string()),
            _ if a.starts_with("--suffix=") => {}
            _ if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") => {
                // Bundled short options (`-dt`, `-qd`): any that take a value is not read.
                if a[1..].chars().any(|c| !matches!(c, 'd' | 'q' | 'u' | 't')) {
                    return None;
                }
                in_tmp |= a.contains('t');
            }
            _ if a.starts_with('-') => return None,
            _ => {
                if template.is_some() {
                    return None;
                }
                template = Some(a);
            }
        }
        i += 1;
    }
    let Some(t) = template else {
        return Some(match dir {
            Some(d) => format!("{}/tmp.XXXXXXXXXX", d.trim_end_matches('/')),
            None => MKTEMP_DEFAULT.into(),
        });
    };
    if t.contains('/') && (in_tmp || dir.is_some()) {
        return None; // mktemp refuses a template with a slash under a directory
    }
    Some(match (dir, in_tmp) {
        (Some(d), _) => format!("{}/{t}", d.trim_end_matches('/')),
        (None, true) => format!("{TMP}/{t}"),
        (None, false) => t.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mktemp_paths() {
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["-d"], Some("/tmp/tmp.XXXXXXXXXX")),
            (&[], Some("/tmp/tmp.XXXXXXXXXX")),
            (&["-d", "-t", "build.XXXX"], Some("/tmp/build.XXXX")),
            (&["-dt", "build.XXXX"], Some("/tmp/build.XXXX")),
            (&["--tmpdir", "x.XXX"], Some("/tmp/x.XXX")),
            (&["-p", "/var/tmp", "x.XXX"], Some("/var/tmp/x.XXX")),
            (&["--tmpdir=/scratch", "-d"], Some("/scratch/tmp.XXXXXXXXXX")),
            (&["-d", "/tmp/foo.XXXXXX"], Some("/tmp/foo.XXXXXX")),
            (&["-d", "out.XXXX"], Some("out.XXXX")),
            (&["-t", "a/b.XXX"], None),
            (&["-d", "a", "b"], None),
            (&["--weird"], None),
            (&["-dz"], None),
        ];
        for (args, want) in cases {
            assert_eq!(mktemp_path(args).as_deref(), *want, "{args:?}");
        }
    }

    #[test]
    fn values_are_one_word_or_unknown() {
        let mut s = Scope::default();
        let named = |n: &str| ParameterExpr::Parameter {
            parameter: Parameter::Named(n.into()),
            indirect: false,
        };
        assert_eq!(s.param(&named("TMPDIR"), false), None, "unset, $TMPDIR/x is /x");
        let required = ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter: Parameter::Named("TMPDIR".into()),
            indirect: false,
            test_type: brush_parser::word::ParameterTestType::UnsetOrNull,
            error_message: None,
        };
        assert_eq!(s.param(&required, false).as_deref(), Some("/tmp"));
        let default = |d: &str| ParameterExpr::UseDefaultValues {
            parameter: Parameter::Named("TMPDIR".into()),
            indirect: false,
            test_type: brush_parser::word::ParameterTestType::UnsetOrNull,
            default_value: Some(d.into()),
        };
        assert_eq!(s.param(&default("/tmp"), false).as_deref(), Some("/tmp"));
        assert_eq!(s.param(&default("/home/me"), false), None, "unset, that is the default");
        assert_eq!(s.param(&named("HOME"), false).as_deref(), Some("~"));
        assert_eq!(s.param(&named("USER"), false), None);
        s.apply(&Effect::Assign(vec![
            ("a".into(), Some("/tmp/x".into()), false),
            ("b".into(), Some("/tmp/a /".into()), false),
            ("c".into(), Some("*".into()), false),
        ]));
        assert_eq!(s.param(&named("a"), false).as_deref(), Some("/tmp/x"));
        assert_eq!(s.param(&named("b"), false), None, "splits into two words");
        assert_eq!(
            s.param(&named("b"), true).as_deref(),
            Some("/tmp/a /"),
            "quoted, one word"
        );
        assert_eq!(s.split_words("b"), Some(vec!["/tmp/a".to_string(), "/".to_string()]));
        assert_eq!(s.split_words("c"), None, "a glob");
        assert_eq!(s.param(&named("c"), false), None, "a glob");
        s.apply(&Effect::Assign(vec![("TMPDIR".into(), None, false)]));
        assert_eq!(s.param(&required, false), None, "assigned something unknown");
        s.apply(&Effect::Assign(vec![("IFS".into(), Some("/".into()), false)]));
        assert_eq!(s.param(&named("a"), false), None, "word splitting changed");
        assert_eq!(s.split_words("b"), None, "word splitting changed");
        assert_eq!(
            s.param(&named("a"), true).as_deref(),
            Some("/tmp/x"),
            "quoted, it is not split"
        );
    }

    #[test]
    fn failures_and_chains() {
        let named = |n: &str| ParameterExpr::Parameter {
            parameter: Parameter::Named(n.into()),
            indirect: false,
        };
        let fallible = Effect::Assign(vec![("d".into(), Some("/tmp/tmp.X".into()), true)]);
        let mut chain = Scope::default();
        chain.apply(&fallible);
        assert_eq!(chain.param(&named("d"), false).as_deref(), Some("/tmp/tmp.X"));
        let mut after = Scope::default();
        after.apply_certain(&fallible);
        assert_eq!(
            after.param(&named("d"), false),
            None,
            "mktemp may fail, leaving it empty"
        );
        assert_eq!(
            after.or_empty("d"),
            Some("/tmp/tmp.X"),
            "the value, or the empty string"
        );
        let stops = ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter: Parameter::Named("d".into()),
            indirect: false,
            test_type: ParameterTestType::UnsetOrNull,
            error_message: None,
        };
        assert_eq!(
            after.param(&stops, false).as_deref(),
            Some("/tmp/tmp.X"),
            "empty, it stops"
        );
        let mut reassigned = after.clone();
        reassigned.apply_certain(&Effect::Assign(vec![("d".into(), Some("/".into()), false)]));
        assert_eq!(reassigned.or_empty("d"), None);
        let mut branches = Scope::default();
        branches.apply(&Effect::Assign(vec![("d".into(), Some("/tmp/tmp.X".into()), false)]));
        branches.meet(&after);
        assert_eq!(
            branches.or_empty("d"),
            Some("/tmp/tmp.X"),
            "either side may leave it empty"
        );
        assert_eq!(branches.param(&named("d"), false), None);
        let mut s = Scope::default();
        s.apply(&Effect::Cd(Some("/tmp".into())));
        assert_eq!(s.reach("x"), "/tmp/x");
        assert_eq!(s.reach("./x"), "/tmp/x");
        assert_eq!(s.reach("/etc"), "/etc");
        assert_eq!(s.reach("."), "/tmp", "the directory itself, not a name under it");
        assert_eq!(s.reach("x/../.."), "/");
        s.apply_certain(&Effect::Cd(Some("/tmp".into())));
        assert_eq!(s.reach("x"), "x", "after `;` a cd may have failed");
        assert_eq!(s.cd_target(Some("sub")), None, "CDPATH may move a relative cd");
        assert_eq!(s.cd_target(Some("/tmp/")).as_deref(), Some("/tmp"));
    }
}
