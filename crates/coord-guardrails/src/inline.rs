//! Code for another interpreter inside a command line (`python -c`, `node -e`,
//! `ruby -e`, `perl -e`, `php -r`, or a here-document fed to one).
//!
//! These languages are not parsed: the code is read lexically, for the two ways it
//! destroys things — running a shell command (`os.system`, `subprocess.run`,
//! `execSync`, `system`, backticks), whose string literals are then analysed as shell
//! command lines, and calling a deletion API (`shutil.rmtree`, `fs.rmSync`,
//! `FileUtils.rm_rf`, `os.remove`, `unlink`), judged as the equivalent `rm`. Code that
//! does neither is not a finding; a deletion whose path is not a literal is (the rules
//! of `rm` decide).

use crate::walk::Arg;

/// The language of an interpreter, and the options that carry inline code.
pub fn interpreter(prog: &str) -> Option<&'static [&'static str]> {
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" => &["-c"],
        "node" | "nodejs" | "bun" | "deno" => &["-e", "--eval", "-p", "--print", "eval"],
        "ruby" | "perl" => &["-e", "-E"],
        "php" => &["-r"],
        _ => return None,
    })
}

/// What inline code does that the shell analysis must judge: shell command lines it runs,
/// and `rm` argument lists equivalent to its deletions.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct InlineEffects {
    pub shell: Vec<String>,
    pub deletions: Vec<Vec<Arg>>,
}

/// Calls that run a shell command (their string literals are command lines, or the words
/// of one when they form a list).
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
    "execSync",
    "execFileSync",
    "spawnSync",
    "exec",
    "execFile",
    "spawn",
    "system",
    "Kernel.system",
    "Kernel.exec",
    "IO.popen",
    "Open3.capture2",
    "Open3.capture3",
    "shell_exec",
    "passthru",
    "proc_open",
    "Deno.Command",
    "Bun.spawn",
    "Bun.spawnSync",
];

/// Deletion APIs: (call, recursive).
const DELETE_CALLS: &[(&str, bool)] = &[
    ("shutil.rmtree", true),
    ("os.removedirs", true),
    ("rmSync", true),
    ("rmdirSync", true),
    ("fs.rm", true),
    ("fsPromises.rm", true),
    ("rimraf", true),
    ("FileUtils.rm_rf", true),
    ("FileUtils.rm_r", true),
    ("FileUtils.remove_dir", true),
    ("FileUtils.remove_entry", true),
    ("rmtree", true),
    ("remove_tree", true),
    ("Deno.remove", true),
    ("os.remove", false),
    ("os.unlink", false),
    ("os.rmdir", false),
    ("unlinkSync", false),
    ("fs.unlink", false),
    ("File.delete", false),
    ("File.unlink", false),
    ("FileUtils.rm", false),
    ("unlink", false),
    ("pathlib.Path.unlink", false),
];

/// One lexical token of inline code.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    /// A string with interpolation (`f"..."`, `` `${x}` ``, `"#{x}"`): only known at run time.
    Dynamic(String),
    Punct(char),
}

fn lex(code: &str) -> Vec<Tok> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '.' | '$')) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A string prefix (f"...", r'...'): the string follows.
            let prefixed = matches!(word.as_str(), "f" | "r" | "b" | "rb" | "br" | "fr" | "rf" | "u")
                && chars.get(i).is_some_and(|q| matches!(q, '"' | '\''));
            if prefixed {
                let (s, next) = string(&chars, i);
                i = next;
                out.push(if word.contains('f') && s.contains('{') {
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
            let (s, next) = string(&chars, i);
            i = next;
            let dynamic = (c == '`' && s.contains("${")) || (c == '"' && s.contains("#{"));
            out.push(if c == '`' && !dynamic {
                // A backtick string: a command in Ruby and Perl, a template in JavaScript.
                Tok::Str(s)
            } else if dynamic {
                Tok::Dynamic(s)
            } else {
                Tok::Str(s)
            });
            if c == '`' {
                out.push(Tok::Punct('`'));
            }
            continue;
        }
        if c == '#' && chars.get(i + 1).is_none_or(|n| *n != '{') {
            // A comment (Python, Ruby, Perl) runs to the end of the line.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if !c.is_whitespace() {
            out.push(Tok::Punct(c));
        }
        i += 1;
    }
    out
}

/// The string starting at the quote `chars[at]`, with escapes resolved; the index after it.
fn string(chars: &[char], at: usize) -> (String, usize) {
    let quote = chars[at];
    let mut s = String::new();
    let mut i = at + 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
            s.push(match chars[i] {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
        } else {
            s.push(chars[i]);
        }
        i += 1;
    }
    (s, i + 1)
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

fn call_named(ident: &str, name: &str) -> bool {
    ident == name || ident.ends_with(&format!(".{name}"))
}

/// What `code` does that the shell analysis must judge.
pub fn effects(code: &str) -> InlineEffects {
    let toks = lex(code);
    let mut fx = InlineEffects::default();
    for (i, t) in toks.iter().enumerate() {
        match t {
            // Ruby and Perl run backtick strings; JavaScript's are templates, which only
            // run through a call, handled below.
            Tok::Str(s)
                if toks.get(i + 1) == Some(&Tok::Punct('`'))
                    && !matches!(toks.get(i.wrapping_sub(1)), Some(Tok::Punct('(' | ',' | '='))) =>
            {
                fx.shell.push(s.clone());
            }
            Tok::Ident(id) => {
                let called = || {
                    // `system "rm -rf /"` (Ruby, Perl) calls without brackets.
                    match toks.get(i + 1) {
                        Some(Tok::Punct('(')) => group(&toks, i + 1).to_vec(),
                        // `unlink glob("/etc/*")` (Perl): the rest of the statement.
                        Some(Tok::Str(_) | Tok::Dynamic(_) | Tok::Ident(_)) => toks[i + 1..]
                            .iter()
                            .take_while(|t| !matches!(t, Tok::Punct(';' | '\n')))
                            .cloned()
                            .collect(),
                        _ => Vec::new(),
                    }
                };
                if SHELL_CALLS.iter().any(|c| call_named(id, c)) {
                    let args = called();
                    shell_args(&args, &mut fx);
                } else if let Some((_, recursive)) = DELETE_CALLS.iter().find(|(c, _)| call_named(id, c)) {
                    let args = called();
                    if args.is_empty() && !matches!(toks.get(i + 1), Some(Tok::Punct('('))) {
                        continue; // a name, not a call
                    }
                    // `fs.rmSync(p)` deletes one file; `{recursive: true}` a tree.
                    let always = !matches!(id.as_str(), "fs.rm" | "fsPromises.rm" | "rmSync" | "Deno.remove");
                    let recursive = *recursive && (always || mentions_recursive(&args));
                    // A path computed at run time (a loop over a glob) is a file list only
                    // known at run time, like `xargs rm`.
                    // `Path("x").unlink()`: the object's own path, one file.
                    let path = match args.first() {
                        Some(Tok::Str(s)) => Arg::Lit(s.clone()),
                        Some(_) => Arg::Unknown(crate::rules::RUNTIME_OPERAND.into()),
                        None => Arg::Unknown("(the object's path)".into()),
                    };
                    let mut argv = Vec::new();
                    if recursive {
                        argv.push(Arg::Lit("-rf".into()));
                    }
                    argv.push(path);
                    fx.deletions.push(argv);
                }
            }
            _ => {}
        }
    }
    fx
}

/// `fs.rmSync(p, {recursive: true})`: recursive only when asked.
fn mentions_recursive(args: &[Tok]) -> bool {
    args.iter().any(|t| matches!(t, Tok::Ident(i) if i == "recursive"))
}

/// The arguments of a shell-running call: a list of string literals is one argv; a
/// single string is a command line.
fn shell_args(args: &[Tok], fx: &mut InlineEffects) {
    if let Some(open) = args.iter().position(|t| *t == Tok::Punct('[')) {
        let words: Vec<String> = group(args, open)
            .iter()
            .filter_map(|t| match t {
                Tok::Str(s) => Some(quote(s)),
                Tok::Dynamic(_) | Tok::Ident(_) => Some("\"$RUNTIME\"".into()),
                Tok::Punct(_) => None,
            })
            .collect();
        if !words.is_empty() {
            fx.shell.push(words.join(" "));
        }
        return;
    }
    for t in args {
        match t {
            Tok::Str(s) => fx.shell.push(s.clone()),
            Tok::Dynamic(s) => fx.shell.push(runtime_holes(s)),
            _ => {}
        }
    }
}

/// An interpolating string as a command line: each `{...}` (`${...}`, `#{...}`) is a
/// value only known at run time.
fn runtime_holes(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
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
            _ => out.push(c),
        }
    }
    out
}

/// `word` quoted for the shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_shell_outs_and_deletions() {
        let cases: &[(&str, &[&str], usize)] = &[
            ("import os; os.system('rm -rf /')", &["rm -rf /"], 0),
            (
                "import subprocess; subprocess.run(['rm', '-rf', '/'])",
                &["'rm' '-rf' '/'"],
                0,
            ),
            ("require('child_process').execSync('git push -f')", &["git push -f"], 0),
            ("system(\"rm -rf /home/user\")", &["rm -rf /home/user"], 0),
            ("system \"rm -rf /\"", &["rm -rf /"], 0),
            ("`rm -rf /`", &["rm -rf /"], 0),
            ("import shutil; shutil.rmtree('/home/user')", &[], 1),
            ("FileUtils.rm_rf('/')", &[], 1),
            ("require('fs').rmSync('/etc', {recursive: true})", &[], 1),
            ("print('hello')", &[], 0),
            ("import json, sys; print(json.load(sys.stdin)['rm -rf /'])", &[], 0),
            ("# os.system('rm -rf /')\nprint(1)", &[], 0),
            ("os.system(f\"rm -rf {path}\")", &["rm -rf \"$RUNTIME\""], 0),
            ("unlink glob(\"/etc/*\");", &[], 1),
            ("from os import unlink", &[], 0),
        ];
        for (code, shell, deletions) in cases {
            let fx = effects(code);
            assert_eq!(fx.shell, *shell, "{code}");
            assert_eq!(fx.deletions.len(), *deletions, "{code}: {fx:?}");
        }
    }
}
