//! Code for another interpreter inside a command line (`python -c`, `node -e`,
//! `ruby -e`, `perl -e`, `php -r`, or a here-document fed to one).
//!
//! These languages are not parsed: the code is read lexically (strings, comments and
//! brackets of its language), for the two ways it destroys things — running a shell
//! command (`os.system`, `subprocess.run`, `execSync`, `system`, backticks), whose command
//! line (or argument list) is then analysed like any other, and calling a deletion API
//! (`shutil.rmtree`, `fs.rmSync`, `FileUtils.rm_rf`, `os.remove`, `unlink`), judged as
//! the equivalent `rm`. A string the lexer cannot close fails closed: the code cannot be
//! read. Code that does neither is not a finding.

use crate::rules::RUNTIME_OPERAND;
use crate::walk::Arg;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Js,
    Ruby,
    Perl,
    Php,
}

/// An interpreter's command line: the short options that carry code (`-c`, `-e`), the
/// long ones (`--eval`), options that take a value (the next word; the rest of the word
/// for `value_letters`: `-MData::Dumper`, `-rtime`), and options that name what runs
/// instead of stdin (`python -m`, `php -f`).
pub struct Interpreter {
    pub lang: Lang,
    pub letters: &'static [char],
    pub long: &'static [&'static str],
    pub value_options: &'static [&'static str],
    pub value_letters: &'static [char],
    pub script_options: &'static [&'static str],
}

pub fn interpreter(prog: &str) -> Option<Interpreter> {
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" => Interpreter {
            lang: Lang::Python,
            letters: &['c'],
            long: &[],
            value_options: &["-W", "-X", "--check-hash-based-pycs"],
            value_letters: &['W', 'X'],
            script_options: &["-m"],
        },
        "node" | "nodejs" | "bun" | "deno" => Interpreter {
            lang: Lang::Js,
            letters: &['e', 'p'],
            long: &["--eval", "--print", "eval"],
            value_options: &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
                "--input-type",
                "-C",
                "--conditions",
                "--env-file",
            ],
            value_letters: &['r', 'C'],
            script_options: &[],
        },
        "ruby" => Interpreter {
            lang: Lang::Ruby,
            letters: &['e'],
            long: &[],
            value_options: &["-r", "-I", "-C", "-E", "-F"],
            value_letters: &['r', 'I', 'C', 'E', 'F'],
            script_options: &[],
        },
        "perl" => Interpreter {
            lang: Lang::Perl,
            letters: &['e', 'E'],
            long: &[],
            value_options: &["-I", "-M", "-m"],
            value_letters: &['I', 'M', 'm'],
            script_options: &[],
        },
        "php" => Interpreter {
            lang: Lang::Php,
            letters: &['r'],
            long: &[],
            value_options: &["-d", "-c", "-z"],
            value_letters: &['d', 'c', 'z'],
            script_options: &["-f"],
        },
        _ => return None,
    })
}

/// What inline code does that the shell analysis must judge: command lines it runs,
/// argument lists it runs (no shell), and `rm` argument lists equivalent to its deletions.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct InlineEffects {
    pub shell: Vec<String>,
    pub argvs: Vec<Vec<Arg>>,
    pub deletions: Vec<Vec<Arg>>,
    /// The code replaces its standard descriptors (`os.dup2`): a shell it starts then
    /// reads and writes whatever they now are (a reverse shell, with a socket).
    pub redirects_descriptors: bool,
    /// The code opens a network connection (`socket`, `fsockopen`, `net.connect`, …).
    pub mentions_socket: bool,
    /// The code forks a copy of itself (`os.fork()`, Perl's and Ruby's `fork`,
    /// `pcntl_fork()`) inside a loop without end (`while True`, `while 1`, Ruby's `loop`,
    /// `for (;;)`, Perl's `redo`): a fork bomb, whatever else the code does.
    pub forks_forever: bool,
    /// The code forks a copy of itself inside a bounded loop (`for _ in range(40)` is 2^40
    /// processes when the children loop on).
    pub forks_in_loop: bool,
    /// The code can end a process or leave a loop (`exit`, `os._exit`, `die`, `last`,
    /// `break`, an `exec` of a program): the children of a fork in a bounded loop may stop
    /// there instead of looping on.
    pub exits: bool,
}

/// What opening a network connection looks like in the languages read here.
const SOCKET_WORDS: &[&str] = &[
    "socket",
    "Socket",
    "fsockopen",
    "stream_socket_client",
    "net.connect",
    "net.createConnection",
    "require('net')",
    "require(\"net\")",
    "from 'net'",
    "from \"net\"",
    "/dev/tcp/",
];

/// Calls that run a command in every language they exist in.
const SHELL_CALLS: &[&str] = &[
    "os.system",
    "os.popen",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "commands.getoutput",
    "pty.spawn",
    "execSync",
    "execFileSync",
    "spawnSync",
    "system",
    "Kernel.system",
    "Kernel.exec",
    "Kernel.spawn",
    "IO.popen",
    "Open3.capture2",
    "Open3.capture2e",
    "Open3.capture3",
    "Open3.popen3",
    "shell_exec",
    "passthru",
    "proc_open",
    "popen",
    "Deno.Command",
    "Bun.spawn",
    "Bun.spawnSync",
];

/// Python's exec family: the first string is the program file, the rest its argv.
const PY_EXEC: &[&str] = &[
    "os.execl",
    "os.execle",
    "os.execlp",
    "os.execlpe",
    "os.execv",
    "os.execve",
    "os.execvp",
    "os.execvpe",
    "os.spawnl",
    "os.spawnle",
    "os.spawnlp",
    "os.spawnlpe",
    "os.spawnv",
    "os.spawnve",
    "os.spawnvp",
    "os.spawnvpe",
    "os.posix_spawn",
    "os.posix_spawnp",
];

/// Deletion APIs: (call, recursive, recursive only when the call says so).
const DELETE_CALLS: &[(&str, bool, bool)] = &[
    ("shutil.rmtree", true, false),
    ("os.removedirs", true, false),
    ("rimraf", true, false),
    ("rimraf.sync", true, false),
    ("FileUtils.rm_rf", true, false),
    ("FileUtils.rm_r", true, false),
    ("FileUtils.remove_dir", true, false),
    ("FileUtils.remove_entry", true, false),
    ("FileUtils.remove_entry_secure", true, false),
    ("rmtree", true, false),
    ("remove_tree", true, false),
    ("rmSync", true, true),
    ("rmdirSync", true, true),
    ("rm", true, true),
    ("Deno.remove", true, true),
    ("Deno.removeSync", true, true),
    ("os.remove", false, false),
    ("os.unlink", false, false),
    ("os.rmdir", false, false),
    ("unlinkSync", false, false),
    ("fs.unlink", false, false),
    ("File.delete", false, false),
    ("File.unlink", false, false),
    ("FileUtils.rm", false, false),
    ("unlink", false, false),
];

/// One lexical token of inline code.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    /// A string with interpolation (`f"..."`, `` `${x}` ``, `"#{x}"`, Perl `"$x"`).
    Dynamic(String),
    /// A backtick string in Ruby, Perl or PHP: a command.
    Backtick(String),
    Punct(char),
}

/// Code the lexer cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

fn lex(code: &str, lang: Lang) -> Result<Vec<Tok>, Unreadable> {
    let chars: Vec<char> = code.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // Comments of the language.
        let hash_comment = c == '#'
            && match lang {
                Lang::Python | Lang::Ruby => true,
                Lang::Perl => i == 0 || chars[i - 1] != '$',
                Lang::Php => at(i + 1) != Some('['),
                Lang::Js => false,
            };
        let slash_comment = c == '/' && matches!(lang, Lang::Js | Lang::Php) && at(i + 1) == Some('/');
        if hash_comment || slash_comment {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && matches!(lang, Lang::Js | Lang::Php) && at(i + 1) == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && at(i + 1) == Some('/')) {
                i += 1;
            }
            i += 2;
            continue;
        }
        // A JavaScript regular expression where an operand starts (`/'/g`, `/\//`): data.
        if c == '/' && lang == Lang::Js && regex_may_start(&out) {
            i = skip_regex(&chars, i)?;
            continue;
        }
        if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '.' | '$')) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // Perl's quote-like operators (`s/'//g`, `s#a##`, `q{…}`, `qw(…)`): data, except
            // `qx`, a command.
            if lang == Lang::Perl
                && let Some(parts) = perl_quote_parts(&word)
                && at(i).is_some_and(|d| {
                    !d.is_alphanumeric()
                        && !d.is_whitespace()
                        && !matches!(d, ',' | ';' | '=' | ')' | ']' | '}' | '>' | '-')
                })
            {
                let (body, next) = perl_quote(&chars, i, parts)?;
                i = next;
                if word == "qx" {
                    out.push(Tok::Backtick(body));
                }
                continue;
            }
            // A Python string prefix (f"...", r'...'): the string follows.
            let prefixed = lang == Lang::Python
                && matches!(
                    word.to_ascii_lowercase().as_str(),
                    "f" | "r" | "b" | "rb" | "br" | "fr" | "rf" | "u"
                )
                && matches!(at(i), Some('"' | '\''));
            if prefixed {
                let (s, next) = string(&chars, i)?;
                i = next;
                let f = word.to_ascii_lowercase().contains('f');
                out.push(if f && s.contains('{') {
                    Tok::Dynamic(s)
                } else {
                    Tok::Str(s)
                });
            } else {
                out.push(Tok::Ident(word.trim_end_matches('.').to_string()));
            }
            continue;
        }
        if matches!(c, '"' | '\'' | '`') {
            let (s, next) = string(&chars, i)?;
            i = next;
            let interpolates = match (lang, c) {
                (Lang::Js, '`') => s.contains("${"),
                (Lang::Ruby, '"' | '`') => s.contains("#{"),
                (Lang::Perl | Lang::Php, '"' | '`') => s.contains('$'),
                _ => false,
            };
            out.push(match c {
                '`' if lang != Lang::Js => Tok::Backtick(if interpolates { runtime_holes(&s) } else { s }),
                _ if interpolates => Tok::Dynamic(s),
                _ => Tok::Str(s),
            });
            continue;
        }
        if !c.is_whitespace() || c == '\n' {
            out.push(Tok::Punct(c));
        }
        i += 1;
    }
    Ok(out)
}

/// Whether a `/` here starts a regular expression rather than dividing: after an operator,
/// an opening bracket or nothing.
fn regex_may_start(out: &[Tok]) -> bool {
    match out.iter().rev().find(|t| **t != Tok::Punct('\n')) {
        None => true,
        Some(Tok::Punct(p)) => !matches!(p, ')' | ']' | '}'),
        Some(Tok::Ident(w)) => matches!(w.as_str(), "return" | "typeof" | "case" | "do" | "else" | "in" | "of"),
        Some(_) => false,
    }
}

/// The index after the regular expression starting at `chars[at]` (`/…/flags`).
fn skip_regex(chars: &[char], at: usize) -> Result<usize, Unreadable> {
    let mut i = at + 1;
    let mut class = false;
    loop {
        match chars.get(i) {
            None | Some('\n') => return Err(Unreadable("a regular expression is not closed".into())),
            Some('\\') => i += 2,
            Some('[') => {
                class = true;
                i += 1;
            }
            Some(']') => {
                class = false;
                i += 1;
            }
            Some('/') if !class => {
                i += 1;
                while chars.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
                    i += 1;
                }
                return Ok(i);
            }
            Some(_) => i += 1,
        }
    }
}

/// How many delimited parts a Perl quote-like operator has.
fn perl_quote_parts(word: &str) -> Option<usize> {
    match word {
        "s" | "tr" | "y" => Some(2),
        "m" | "q" | "qq" | "qw" | "qr" | "qx" => Some(1),
        _ => None,
    }
}

/// The first part of the Perl quote-like construct whose delimiter is `chars[at]`, and the
/// index after the whole construct (`parts` delimited parts; bracket pairs nest).
fn perl_quote(chars: &[char], at: usize, parts: usize) -> Result<(String, usize), Unreadable> {
    let mut i = at;
    let mut first = String::new();
    for part in 0..parts {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) && part > 0 {
            i += 1;
        }
        let Some(&open) = chars.get(i) else {
            return Err(Unreadable("a Perl quote-like operator is not closed".into()));
        };
        let close = match open {
            '(' => ')',
            '[' => ']',
            '{' => '}',
            '<' => '>',
            other => other,
        };
        let mut depth = 1;
        i += 1;
        let mut body = String::new();
        loop {
            let Some(&c) = chars.get(i) else {
                return Err(Unreadable("a Perl quote-like operator is not closed".into()));
            };
            i += 1;
            if c == '\\' {
                if let Some(&n) = chars.get(i) {
                    body.push(n);
                    i += 1;
                }
                continue;
            }
            if c == close && open != close {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            } else if c == open && open != close {
                depth += 1;
            } else if c == close {
                break;
            }
            body.push(c);
        }
        if part == 0 {
            first = body;
        }
        // `s/a/b/` shares the middle delimiter; `s{a}{b}` opens a new one.
        if open == close && part + 1 < parts {
            i -= 1;
        }
    }
    Ok((first, i))
}

/// The string starting at the quote `chars[at]` (Python's triple quotes too), with
/// escapes resolved; the index after it.
fn string(chars: &[char], at: usize) -> Result<(String, usize), Unreadable> {
    let quote = chars[at];
    let triple = chars.get(at + 1) == Some(&quote) && chars.get(at + 2) == Some(&quote);
    let (mut i, close) = if triple { (at + 3, 3) } else { (at + 1, 1) };
    let mut s = String::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(Unreadable(format!("a string opened with {quote} is not closed")));
        };
        if c == quote && (close == 1 || (chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote))) {
            return Ok((s, i + close));
        }
        if c == '\\' && i + 1 < chars.len() {
            i += 1;
            s.push(match chars[i] {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
        } else {
            s.push(c);
        }
        i += 1;
    }
}

/// The tokens between the bracket at `toks[open]` and its match.
fn group(toks: &[Tok], open: usize) -> &[Tok] {
    let (o, c) = match toks.get(open) {
        Some(Tok::Punct('(')) => ('(', ')'),
        Some(Tok::Punct('[')) => ('[', ']'),
        Some(Tok::Punct('{')) => ('{', '}'),
        _ => return &[],
    };
    let mut depth = 0;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct(p) if *p == o => depth += 1,
            Tok::Punct(p) if *p == c => {
                depth -= 1;
                if depth == 0 {
                    return &toks[open + 1..k];
                }
            }
            _ => {}
        }
    }
    &toks[open + 1..]
}

/// The top-level arguments of a call, split at commas outside brackets.
fn arguments(toks: &[Tok]) -> Vec<Vec<Tok>> {
    let mut out = vec![Vec::new()];
    let mut depth = 0i32;
    for t in toks {
        match t {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                out.push(Vec::new());
                continue;
            }
            Tok::Punct('\n') => continue,
            _ => {}
        }
        if let Some(last) = out.last_mut() {
            last.push(t.clone());
        }
    }
    out.retain(|a| !a.is_empty());
    out
}

fn call_named(ident: &str, name: &str) -> bool {
    ident == name || ident.ends_with(&format!(".{name}"))
}

/// What `code` in `lang` does that the shell analysis must judge.
pub fn effects(code: &str, lang: Lang) -> Result<InlineEffects, Unreadable> {
    let mut fx = InlineEffects::default();
    scan(code, lang, &mut fx, 0)?;
    fx.mentions_socket = SOCKET_WORDS.iter().any(|w| code.contains(w));
    Ok(fx)
}

fn scan(code: &str, lang: Lang, fx: &mut InlineEffects, depth: usize) -> Result<(), Unreadable> {
    if depth > 4 {
        return Err(Unreadable("code nested in code more than 4 levels deep".into()));
    }
    let toks = lex(code, lang)?;
    // JavaScript's bare exec/spawn are child_process's only when the code uses it
    // (`/re/.exec(s)` is a regular expression).
    let child_process = lang == Lang::Js && code.contains("child_process");
    // `import subprocess as sp; sp.run(…)`, `from subprocess import run`.
    let subprocess = lang == Lang::Python && code.contains("subprocess");
    // The loops met so far (and whether one had no end): a fork after one is inside it.
    let mut looping: Option<bool> = None;
    // Looked for once, not at every fork (a line may hold thousands).
    let jumps_back = lang == Lang::Perl
        && toks
            .iter()
            .any(|t| matches!(t, Tok::Ident(w) if w == "redo" || w == "goto"));
    for (i, t) in toks.iter().enumerate() {
        let Tok::Ident(id) = t else {
            if let Tok::Backtick(cmd) = t {
                fx.shell.push(cmd.clone());
            }
            if matches!(t, Tok::Punct(')' | ']')) {
                computed_name(&toks, i, "", None, lang)?;
            }
            continue;
        };
        let args = call_arguments(&toks, i, lang);
        computed_name(&toks, i, id, args.as_deref(), lang)?;
        forks_and_loops(&toks, i, lang, jumps_back, &mut looping, fx);
        fx.redirects_descriptors |= call_named(id, "dup2")
            || call_named(id, "reopen")
            || (lang == Lang::Perl && call_named(id, "open") && reopens_std(args.as_deref()));
        if lang == Lang::Python && call_named(id, "pty.spawn") {
            // pty.spawn("/bin/sh") runs a program as os.exec* does.
            if let Some(args) = &args {
                let words: Vec<Arg> = args.iter().flatten().filter_map(word).collect();
                if !words.is_empty() {
                    fx.argvs.push(words);
                }
            }
        }
        let js_bare = child_process && ["exec", "execFile", "spawn", "fork"].iter().any(|c| call_named(id, c));
        let py_bare = subprocess
            && [
                "run",
                "call",
                "check_call",
                "check_output",
                "Popen",
                "getoutput",
                "getstatusoutput",
            ]
            .iter()
            .any(|c| call_named(id, c));
        let shell_call = SHELL_CALLS.iter().any(|c| call_named(id, c))
            || js_bare
            || py_bare
            || (matches!(lang, Lang::Ruby | Lang::Perl | Lang::Php) && call_named(id, "exec"))
            || (lang == Lang::Ruby && call_named(id, "spawn"));
        if shell_call {
            if let Some(args) = args {
                // proc_open's later arguments are its descriptors and pipes, not argv.
                let command = if call_named(id, "proc_open") {
                    &args[..args.len().min(1)]
                } else {
                    &args[..]
                };
                command_of(command, fx);
            }
        } else if lang == Lang::Python && PY_EXEC.iter().any(|c| call_named(id, c)) {
            if let Some(args) = args {
                let words: Vec<Arg> = args.iter().flatten().filter_map(word).skip(1).collect();
                if !words.is_empty() {
                    fx.argvs.push(words);
                }
            }
        } else if matches!(
            (lang, id.as_str()),
            (Lang::Python, "exec" | "eval" | "compile") | (Lang::Js, "eval" | "Function")
        ) {
            // Code in a string: read it in the same language; code built at run time
            // cannot be read.
            let Some(args) = args else { continue };
            match args.first().map(Vec::as_slice) {
                Some([Tok::Str(inner)]) => scan(inner, lang, fx, depth + 1)?,
                None => {}
                Some(_) => {
                    return Err(Unreadable(format!("{id}() of code only known at run time")));
                }
            }
        } else if let Some((name, recursive, when_asked)) = DELETE_CALLS.iter().find(|(c, _, _)| call_named(id, c)) {
            let Some(args) = args else { continue };
            if *name == "rm" && lang != Lang::Js {
                continue; // `rm` as a call is JavaScript's fs.rm
            }
            let asked = args
                .iter()
                .flatten()
                .any(|t| matches!(t, Tok::Ident(i) if i == "recursive"));
            let recursive = *recursive && (!when_asked || asked);
            // The path: a literal, the object's own (`Path("x").unlink()`, or only
            // keyword arguments), or computed at run time (a file list only known then).
            let path = match args.first().map(Vec::as_slice) {
                Some([Tok::Str(s)]) => Arg::Lit(s.clone()),
                None | Some([Tok::Ident(_), Tok::Punct('='), ..]) => Arg::Unknown("(the object's path)".into()),
                Some(_) => Arg::Unknown(RUNTIME_OPERAND.into()),
            };
            let mut argv = Vec::new();
            if recursive {
                argv.push(Arg::Lit("-rf".into()));
            }
            argv.push(path);
            fx.deletions.push(argv);
        }
    }
    Ok(())
}

/// What the word at `i` says of processes: a loop starting (`looping` remembers the loops
/// met so far, and whether one had no end), a fork of the running code inside one, a way
/// out for a fork's children.
/// `jumps_back`: the code is Perl with a `redo` or `goto` (a loop without a keyword).
fn forks_and_loops(
    toks: &[Tok],
    i: usize,
    lang: Lang,
    jumps_back: bool,
    looping: &mut Option<bool>,
    fx: &mut InlineEffects,
) {
    let Some(Tok::Ident(id)) = toks.get(i) else { return };
    if let Some(forever) = loop_at(toks, i, lang) {
        *looping = Some(looping.unwrap_or(false) || forever);
    }
    if forks_itself(toks, i, lang) {
        // A loop before the fork holds it; Perl's modifiers come after (`fork while 1`).
        let modifier = if lang == Lang::Perl {
            loop_at(toks, i + 1, lang)
        } else {
            None
        };
        let within = match (*looping, modifier) {
            (Some(a), Some(b)) => Some(a || b),
            (a, b) => a.or(b),
        };
        match within {
            Some(true) => fx.forks_forever = true,
            // A new program per pass (JavaScript's `fork`) does not multiply itself.
            Some(false) if lang != Lang::Js => fx.forks_in_loop = true,
            _ => {}
        }
        fx.forks_forever |= jumps_back;
    }
    // Python's `exec` runs code, not a program.
    fx.exits |= ["exit", "_exit", "die", "abort", "quit"]
        .iter()
        .any(|c| call_named(id, c))
        || matches!(id.as_str(), "last" | "break")
        || id.starts_with("os.exec")
        || (lang != Lang::Python && matches!(id.as_str(), "exec" | "pcntl_exec"));
}

/// Whether the word at `i` starts a loop, and whether that loop has no end: `while` or
/// `until` on a constant (`while True`, `while(1)`, `until false`) or on a fork (Perl's
/// `fork while fork`), Ruby's `loop`, `for (;;)`; `Some(false)` for any other loop.
fn loop_at(toks: &[Tok], i: usize, lang: Lang) -> Option<bool> {
    let Some(Tok::Ident(id)) = toks.get(i) else { return None };
    let next = match toks[i + 1..].iter().find(|t| !matches!(t, Tok::Punct('('))) {
        Some(Tok::Ident(w)) => w.as_str(),
        _ => "",
    };
    match id.as_str() {
        "while" => Some(matches!(next, "1" | "True" | "true" | "fork")),
        "until" => Some(matches!(next, "0" | "False" | "false")),
        "for" => Some(matches!(
            toks.get(i + 1..i + 4),
            Some([Tok::Punct('('), Tok::Punct(';'), Tok::Punct(';')])
        )),
        "foreach" => Some(false),
        "loop" if lang == Lang::Ruby => Some(true),
        _ if lang == Lang::Ruby && ["times", "each", "upto"].iter().any(|m| call_named(id, m)) => Some(false),
        _ => None,
    }
}

/// Whether the word at `i` forks a copy of the running code: `os.fork()`, `pty.fork()`,
/// Perl's and Ruby's `fork` (not Ruby's `fork { … }`, whose child ends with its block),
/// PHP's `pcntl_fork()`; JavaScript's `fork` starts a new program (a flood only in a loop
/// without end).
fn forks_itself(toks: &[Tok], i: usize, lang: Lang) -> bool {
    let Some(Tok::Ident(id)) = toks.get(i) else {
        return false;
    };
    let block =
        matches!(toks.get(i + 1), Some(Tok::Punct('{'))) || matches!(toks.get(i + 1), Some(Tok::Ident(w)) if w == "do");
    match lang {
        Lang::Python => matches!(id.as_str(), "os.fork" | "pty.fork" | "os.forkpty" | "fork"),
        Lang::Perl => matches!(id.as_str(), "fork" | "POSIX::fork"),
        Lang::Ruby => matches!(id.as_str(), "fork" | "Process.fork" | "Kernel.fork") && !block,
        Lang::Php => id == "pcntl_fork",
        Lang::Js => call_named(id, "fork"),
    }
}

/// Perl's `open(STDIN, ">&S")`: a standard handle made a duplicate of another one.
fn reopens_std(args: Option<&[Vec<Tok>]>) -> bool {
    let Some([handle, mode, ..]) = args else { return false };
    let std = matches!(handle.as_slice(), [Tok::Ident(h)] if matches!(h.as_str(), "STDIN" | "STDOUT" | "STDERR"));
    let dup = mode
        .iter()
        .any(|t| matches!(t, Tok::Str(m) | Tok::Dynamic(m) if m.trim_start().starts_with(['>', '<', '+']) && m.contains('&')));
    std && dup
}

/// Refuses a call whose function is named at run time, which no reading of the code can
/// judge: Python's `getattr(obj, name)` (and `operator.attrgetter`, `methodcaller`)
/// with a name that is not a string literal, or whose literal names a call that runs
/// commands or deletes; and, in every language, a member picked by a computed key and
/// called (`fs['rm' + 'Sync'](…)`, `obj[name](…)`).
fn computed_name(toks: &[Tok], i: usize, id: &str, args: Option<&[Vec<Tok>]>, lang: Lang) -> Result<(), Unreadable> {
    let dangerous = |name: &str| {
        SHELL_CALLS
            .iter()
            .chain(PY_EXEC)
            .map(|c| c.rsplit('.').next().unwrap_or(c))
            .chain(DELETE_CALLS.iter().map(|(c, _, _)| c.rsplit('.').next().unwrap_or(c)))
            .chain(["exec", "eval", "compile", "__import__", "import_module", "spawn"])
            .any(|c| c == name)
    };
    if lang == Lang::Python
        && ["getattr", "attrgetter", "methodcaller"]
            .iter()
            .any(|c| call_named(id, c))
        && let Some(args) = args
    {
        let name = if id.ends_with("getattr") {
            args.get(1)
        } else {
            args.first()
        };
        return match name.map(Vec::as_slice) {
            None => Ok(()),
            Some([Tok::Str(n)]) if !dangerous(n) => Ok(()),
            Some([Tok::Str(n)]) => Err(Unreadable(format!(
                "{id}() of {n:?} hides a call that runs commands or deletes files; call it by name"
            ))),
            Some(_) => Err(Unreadable(format!("{id}() of a name only known at run time"))),
        };
    }
    computed_member(toks, i, &dangerous)
}

/// `x[key](…)` at `toks[i]` (`x` a name or a bracketed expression) with a key that is
/// not a harmless literal.
fn computed_member(toks: &[Tok], i: usize, dangerous: &dyn Fn(&str) -> bool) -> Result<(), Unreadable> {
    if toks.get(i + 1) != Some(&Tok::Punct('[')) {
        return Ok(());
    }
    let key = group(toks, i + 1);
    let called = toks.get(i + 2 + key.len() + 1) == Some(&Tok::Punct('('));
    let literal = matches!(key, [Tok::Str(k)] if !dangerous(k))
        || matches!(key, [Tok::Ident(k)] if k.chars().all(|c| c.is_ascii_digit()));
    if called && !literal {
        return Err(Unreadable("a member only known at run time is called (x[…](…))".into()));
    }
    Ok(())
}

/// The arguments of the call at `toks[i]`: bracketed, or (Ruby, Perl) the rest of the
/// statement. None when it is not a call.
fn call_arguments(toks: &[Tok], i: usize, lang: Lang) -> Option<Vec<Vec<Tok>>> {
    match toks.get(i + 1) {
        Some(Tok::Punct('(')) => Some(arguments(group(toks, i + 1))),
        Some(Tok::Str(_) | Tok::Dynamic(_) | Tok::Ident(_)) if matches!(lang, Lang::Ruby | Lang::Perl) => {
            let rest: Vec<Tok> = toks[i + 1..]
                .iter()
                .take_while(|t| !matches!(t, Tok::Punct(';' | '\n' | '}')))
                .cloned()
                .collect();
            Some(arguments(&rest))
        }
        _ => None,
    }
}

/// A token as a word of an argument list.
fn word(t: &Tok) -> Option<Arg> {
    match t {
        Tok::Str(s) => Some(Arg::Lit(s.clone())),
        Tok::Dynamic(_) | Tok::Ident(_) | Tok::Backtick(_) => Some(Arg::Unknown(RUNTIME_OPERAND.into())),
        Tok::Punct(_) => None,
    }
}

/// The command a shell-running call runs: an argument list (`["rm", "-rf", "/"]`,
/// `execFile("rm", [...])`, Perl's `system("rm", "-rf", "/")`) or one command line, which
/// may be built from pieces (`"rm -rf " + path`: the path is a run-time value).
fn command_of(args: &[Vec<Tok>], fx: &mut InlineEffects) {
    let Some(first) = args.first() else { return };
    let list = |a: &[Tok]| -> Option<Vec<Arg>> {
        match a {
            [Tok::Punct('['), .., Tok::Punct(']')] => Some(a[1..a.len() - 1].iter().filter_map(word).collect()),
            _ => None,
        }
    };
    if let Some(argv) = list(first) {
        fx.argvs.push(argv);
        return;
    }
    if let [Tok::Str(program)] = first.as_slice() {
        if let Some(rest) = args.get(1).and_then(|a| list(a)) {
            let mut argv = vec![Arg::Lit(program.clone())];
            argv.extend(rest);
            fx.argvs.push(argv);
            return;
        }
        let strings: Vec<&String> = args
            .iter()
            .map_while(|a| match a.as_slice() {
                [Tok::Str(s)] => Some(s),
                _ => None,
            })
            .collect();
        if strings.len() > 1 && strings.len() == args.len() {
            fx.argvs
                .push(strings.into_iter().map(|s| Arg::Lit(s.clone())).collect());
            return;
        }
        fx.shell.push(program.clone());
        return;
    }
    // A command line built from pieces.
    let mut line = String::new();
    for t in first {
        match t {
            Tok::Str(s) => line.push_str(s),
            Tok::Dynamic(s) => line.push_str(&runtime_holes(s)),
            Tok::Punct('+' | '.' | '%' | '(' | ')') => {}
            _ => line.push_str(" \"$RUNTIME\" "),
        }
    }
    if !line.trim().is_empty() {
        fx.shell.push(line);
    }
}

/// An interpolating string as a command line: each `{...}` (`${...}`, `#{...}`) or Perl
/// `$name` is a value only known at run time.
fn runtime_holes(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                if depth == 0 {
                    if out.ends_with('$') || out.ends_with('#') {
                        out.pop();
                    }
                    out.push_str("\"$RUNTIME\"");
                }
                depth += 1;
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            '$' if chars.peek().is_some_and(|n| n.is_alphabetic() || *n == '_') => {
                while chars.peek().is_some_and(|n| n.is_alphanumeric() || *n == '_') {
                    chars.next();
                }
                out.push_str("\"$RUNTIME\"");
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(fx: &InlineEffects) -> (Vec<String>, Vec<String>, usize) {
        let argvs = fx
            .argvs
            .iter()
            .map(|a| a.iter().map(Arg::raw).collect::<Vec<_>>().join(" "))
            .collect();
        (fx.shell.clone(), argvs, fx.deletions.len())
    }

    #[test]
    fn reads_shell_outs_and_deletions() {
        use Lang::*;
        // (language, code, command lines, argument lists, deletions)
        type Case<'a> = (Lang, &'a str, &'a [&'a str], &'a [&'a str], usize);
        let cases: &[Case] = &[
            (Python, "import os; os.system('rm -rf /')", &["rm -rf /"], &[], 0),
            (
                Python,
                "import subprocess; subprocess.run(['rm', '-rf', '/'])",
                &[],
                &["rm -rf /"],
                0,
            ),
            (
                Python,
                "subprocess.run('rm -rf ~', shell=True, pass_fds=[])",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (Python, "os.system('rm -rf ' + '~')", &["rm -rf ~"], &[], 0),
            (
                Python,
                "os.system('rm -rf ' + path)",
                &["rm -rf  \"$RUNTIME\" "],
                &[],
                0,
            ),
            (
                Python,
                "os.system(f\"rm -rf {path}\")",
                &["rm -rf \"$RUNTIME\""],
                &[],
                0,
            ),
            (Python, "os.execlp('rm', 'rm', '-rf', '/')", &[], &["rm -rf /"], 0),
            (
                Python,
                "exec(\"import os; os.system('rm -rf /')\")",
                &["rm -rf /"],
                &[],
                0,
            ),
            (Python, "exec('import sys; print(sys.path)')", &[], &[], 0),
            (Python, "x='''don't'''; os.system(\"rm -rf ~\")", &["rm -rf ~"], &[], 0),
            (Python, "import shutil; shutil.rmtree('/home/user')", &[], &[], 1),
            (
                Python,
                "from pathlib import Path; Path('x').unlink(missing_ok=True)",
                &[],
                &[],
                1,
            ),
            (Python, "print('hello')", &[], &[], 0),
            (Python, "# os.system('rm -rf /')\nprint(1)", &[], &[], 0),
            (Python, "from os import unlink", &[], &[], 0),
            (
                Js,
                "require('child_process').execSync('git push -f')",
                &["git push -f"],
                &[],
                0,
            ),
            (
                Js,
                "require('child_process').execFileSync('rm',['-rf','/home/u'])",
                &[],
                &["rm -rf /home/u"],
                0,
            ),
            (
                Js,
                "const cp = require('child_process'); cp.exec('rm -rf ~')",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (Js, "console.log(/(\\d+)/.exec(\"v1.2 (beta)\")[1])", &[], &[], 0),
            (
                Js,
                "// don't\nrequire('child_process').execSync('rm -rf ~')",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (
                Js,
                "class A{#p=1}; require(\"child_process\").execSync(\"rm -rf ~\")",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (Js, "require('fs').rmSync('/etc', {recursive: true})", &[], &[], 1),
            (Js, "const fs=require('fs'); fs.rmSync('out.txt')", &[], &[], 1),
            (Js, "require('fs').promises.rm('/srv', {recursive: true})", &[], &[], 1),
            (Ruby, "system \"rm -rf /\"", &["rm -rf /"], &[], 0),
            (Ruby, "`rm -rf /`", &["rm -rf /"], &[], 0),
            (Ruby, "FileUtils.rm_rf('/')", &[], &[], 1),
            (Perl, "system(\"rm\",\"-rf\",\"/home/u\")", &[], &["rm -rf /home/u"], 0),
            (Perl, "print $#a; system(\"rm -rf ~\")", &["rm -rf ~"], &[], 0),
            (Perl, "unlink glob(\"/etc/*\");", &[], &[], 1),
            (Php, "shell_exec('rm -rf /');", &["rm -rf /"], &[], 0),
            (
                Python,
                "import subprocess as sp; sp.run('rm -rf ~', shell=True)",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (
                Python,
                "from subprocess import run; run(['rm', '-rf', '/srv'])",
                &[],
                &["rm -rf /srv"],
                0,
            ),
            (Python, "print(eval('1+2'))", &[], &[], 0),
            (
                Js,
                "eval(\"require('child_process').execSync('rm -rf ~')\")",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (
                Js,
                "p.split(/\\//); require('child_process').execSync('rm -rf ~')",
                &["rm -rf ~"],
                &[],
                0,
            ),
            (Js, "console.log(s.replace(/'/g, ''))", &[], &[], 0),
            (Js, "const x = a / b / c; console.log(x)", &[], &[], 0),
            (Perl, "s#a##; system \"rm -rf ~\"", &["rm -rf ~"], &[], 0),
            (Perl, "s/'//g; print", &[], &[], 0),
            (
                Perl,
                "my %h = (y => 1); print $h{y}; qx(rm -rf ~)",
                &["rm -rf ~"],
                &[],
                0,
            ),
        ];
        for (lang, code, shell, argvs, deletions) in cases {
            let fx = effects(code, *lang).unwrap_or_else(|e| panic!("{code}: {e:?}"));
            let (s, a, d) = render(&fx);
            let want = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            assert_eq!((s, a, d), (want(shell), want(argvs), *deletions), "{lang:?}: {code}");
        }
        // What its lexer cannot close is not read.
        assert!(effects("print('unclosed)", Lang::Python).is_err());
        assert!(effects("exec(input())", Lang::Python).is_err());
        assert!(effects("eval(code)", Lang::Js).is_err());
        // A function named at run time cannot be judged (issue 57, finding 5).
        for (lang, code) in [
            (Lang::Python, "import shutil; getattr(shutil,'rmt'+'ree')('/srv')"),
            (Lang::Python, "import shutil; getattr(shutil, n)('/srv')"),
            (Lang::Python, "import os; getattr(os, 'system')('id')"),
            (
                Lang::Python,
                "import operator; operator.methodcaller('rmtree', '/srv')(shutil)",
            ),
            (
                Lang::Js,
                "const fs = require('fs'); fs['rm' + 'Sync']('/srv', {recursive: true})",
            ),
            (Lang::Js, "require('child_process')[k]('id')"),
        ] {
            assert!(effects(code, lang).is_err(), "{code}");
        }
        for (lang, code) in [
            (Lang::Python, "print(getattr(obj, 'name', None))"),
            (Lang::Js, "console.log(a['x'](1), b[0](2))"),
        ] {
            assert!(effects(code, lang).is_ok(), "{code}");
        }
    }
}
