//! GNU sed scripts that run shell commands: the `e` command (`e` alone runs the pattern
//! space, `e CMD` runs CMD) and the `e` flag of `s` (`s/x/date/e` runs the replacement).
//! What they run is known only when the input is read, so such a script fails closed.
//! The script is read as sed reads it (addresses, `s` and `y` with any delimiter and
//! escapes, text of `a`/`i`/`c`, file names of `r`/`w`, labels, comments), so an `e`
//! inside a regular expression, a replacement or a file name is not taken for one.

use crate::hit::{Hit, hit};
use crate::walk::Arg;
use coord_domain::guardrails::{Action, Category};

/// The finding for a sed whose literal script runs a command.
pub fn sed(prog: &str, args: &[Arg]) -> Option<Hit> {
    if !matches!(prog, "sed" | "gsed") {
        return None;
    }
    // `--sandbox` refuses e, r and w.
    if sandboxed(args) {
        return None;
    }
    let (scripts, files) = scripts(args);
    let runs = scripts.iter().filter_map(Arg::lit).any(executes);
    // A script file is not read (as a script run by its path is not), but one that
    // arrives through standard input, a pipe or a substitution is code of the moment.
    let streamed = files.iter().any(|f| match f.lit() {
        None => true,
        Some(f) => f == "-" || f.starts_with("/dev/") || f.starts_with("/proc/"),
    });
    let reason = if runs {
        "this sed script runs a shell command (the `e` command or the `e` flag of `s`) that is only known when the \
         input is read; run the command itself"
    } else {
        "this sed script arrives at run time (standard input, a pipe or a substitution); write it on the command line"
    };
    (runs || streamed).then(|| hit(Category::Unverifiable, "dynamic_command", Action::Block, reason))
}

/// Whether `arg` is the long option `name` (`--expression`) or a prefix of it that sed
/// accepts (at least `shortest` characters, `--e`), with its value when written `=VALUE`.
fn long_option<'a>(arg: &'a str, name: &str, shortest: usize) -> Option<Option<&'a str>> {
    let (flag, value) = match arg.split_once('=') {
        Some((f, v)) => (f, Some(v)),
        None => (arg, None),
    };
    (flag.len() >= shortest && name.starts_with(flag)).then_some(value)
}

/// The scripts of a sed command line (every `-e`/`--expression`, or else its first
/// operand) and its script files (`-f`/`--file`).
fn scripts(args: &[Arg]) -> (Vec<Arg>, Vec<Arg>) {
    let (mut scripts, mut files) = (Vec::new(), Vec::new());
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let raw = args[i].raw();
        let next = args.get(i + 1).cloned();
        // The option's value: attached (`=VALUE`, `-eSCRIPT`) or the next word.
        let value = |into: &mut Vec<Arg>, attached: Option<&str>, i: &mut usize| match attached {
            Some(v) => into.push(Arg::Lit(v.to_string())),
            None => {
                into.extend(next.clone());
                *i += 1;
            }
        };
        if raw == "--" {
            operands.extend(args[i + 1..].iter().cloned());
            break;
        } else if let Some(v) = long_option(raw, "--expression", 3) {
            value(&mut scripts, v, &mut i);
        } else if let Some(v) = long_option(raw, "--file", 4) {
            value(&mut files, v, &mut i);
        } else if raw == "-l" || long_option(raw, "--line-length", 3) == Some(None) {
            i += 1; // its value
        } else if let Some(letters) = raw.strip_prefix('-').filter(|l| !l.is_empty() && !l.starts_with('-')) {
            // A bundle (`-ne SCRIPT`, `-nf FILE`): the first of e and f takes the rest
            // of the word, or the next word. `-i` takes an attached suffix only.
            for (at, c) in letters.char_indices() {
                match c {
                    'i' => break,
                    // `-l N` (line length) takes the rest of the word, or the next word.
                    'l' => {
                        if letters[at + 1..].is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    'e' | 'f' => {
                        let rest = &letters[at + 1..];
                        let into = if c == 'e' { &mut scripts } else { &mut files };
                        value(into, (!rest.is_empty()).then_some(rest), &mut i);
                        break;
                    }
                    _ => {}
                }
            }
        } else if !raw.starts_with("--") {
            operands.push(args[i].clone());
        }
        i += 1;
    }
    if scripts.is_empty() && files.is_empty() {
        scripts.extend(operands.into_iter().next());
    }
    (scripts, files)
}

/// The files a sed command line writes with `w`/`W` commands and the `w` flag of `s`
/// (`sed 's/a/b/w /etc/hosts' f`), as [`crate::rules::written_files`] reports them.
/// `--sandbox` refuses them, so there are none.
pub fn writes(args: &[Arg]) -> Vec<Arg> {
    if sandboxed(args) {
        return Vec::new();
    }
    let (scripts, _) = scripts(args);
    let mut out = Vec::new();
    for script in scripts.iter().filter_map(Arg::lit) {
        read(script, &mut out);
    }
    out.into_iter().map(Arg::Lit).collect()
}

/// Whether sed's `--sandbox` (an option: before any `--`) is given.
fn sandboxed(args: &[Arg]) -> bool {
    args.iter()
        .take_while(|a| a.raw() != "--")
        .any(|a| a.raw() == "--sandbox")
}

/// Whether a sed script runs a command.
fn executes(script: &str) -> bool {
    read(script, &mut Vec::new())
}

/// The file name of a `w` at `i` (the rest of the line, leading blanks dropped) and the
/// index after it.
fn file_name(c: &[char], i: usize, into: &mut Vec<String>) -> usize {
    let end = line_end(c, i);
    let name: String = c[i + 1..end].iter().collect::<String>().trim().to_string();
    if !name.is_empty() {
        into.push(name);
    }
    end
}

/// Reads a sed script as sed does: whether it runs a command (answered at the first
/// one), and the files its `w` commands and flags write (into `writes`).
fn read(script: &str, writes: &mut Vec<String>) -> bool {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' => i += 1,
            '0'..='9' | '$' | '~' | '+' => i += 1,
            // An address: `/re/` or `\%re%`, then its flags (`I`, `M`).
            '/' => i = past(&c, i + 1, '/'),
            '\\' if i + 1 < c.len() => i = past(&c, i + 2, c[i + 1]),
            's' if i + 1 < c.len() => {
                let delim = c[i + 1];
                i = past(&c, past(&c, i + 2, delim), delim);
                while i < c.len() && !matches!(c[i], ';' | '\n' | '}' | ' ' | '\t' | '#') {
                    match c[i] {
                        'e' => return true,
                        // `w FILE` ends the flags: the rest of the line is a file name.
                        'w' => i = file_name(&c, i, writes),
                        _ => i += 1,
                    }
                }
            }
            'y' if i + 1 < c.len() => {
                let delim = c[i + 1];
                i = past(&c, past(&c, i + 2, delim), delim);
            }
            'e' => return true,
            // Text runs to the end of its last line (`a\` and lines ending in `\` go on);
            // file names and comments to the end of the line.
            'a' | 'i' | 'c' => i = text_end(&c, i),
            'w' | 'W' => i = file_name(&c, i, writes),
            'r' | 'R' | '#' => i = line_end(&c, i),
            ':' | 'b' | 't' | 'T' => i = label_end(&c, i + 1),
            _ => i += 1,
        }
    }
    false
}

/// The index after the next unescaped `delim` from `i` (the end when there is none).
fn past(c: &[char], mut i: usize, delim: char) -> usize {
    while i < c.len() {
        if c[i] == '\\' {
            i += 2;
        } else if c[i] == delim {
            return i + 1;
        } else {
            i += 1;
        }
    }
    c.len()
}

fn line_end(c: &[char], i: usize) -> usize {
    c[i..].iter().position(|&x| x == '\n').map_or(c.len(), |p| i + p + 1)
}

fn text_end(c: &[char], mut i: usize) -> usize {
    loop {
        let end = line_end(c, i);
        // A line ending in an odd number of `\` goes on (`\\` is a backslash).
        let newline = end > i && c[end - 1] == '\n';
        let trailing = c[i..end - usize::from(newline)]
            .iter()
            .rev()
            .take_while(|&&x| x == '\\')
            .count();
        let continued = newline && trailing % 2 == 1;
        if !continued || end >= c.len() {
            return end;
        }
        i = end;
    }
}

/// The end of a label (`:x`, `b loop`): GNU sed ends it at white space, `;` or `}`.
fn label_end(c: &[char], mut i: usize) -> usize {
    while i < c.len() && matches!(c[i], ' ' | '\t') {
        i += 1;
    }
    while i < c.len() && !matches!(c[i], ' ' | '\t' | '\n' | ';' | '}') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(args: &[&str]) -> Vec<Arg> {
        args.iter().map(|a| Arg::Lit(a.to_string())).collect()
    }

    #[test]
    fn scripts_that_run_commands() {
        let cases: &[(&[&str], bool)] = &[
            (&["-e", "s/y/echo hi/e", "f"], true),
            (&["s/x/date/e", "f"], true),
            (&["s|x|date|ge", "f"], true),
            (&["-n", "-e", "1e date"], true),
            (&["1e"], true),
            (&["/start/,/end/{e cat x\n}"], true),
            (&["--expression=s/a/b/;e"], true),
            (&["-ne", "s/a/b/e", "f"], true),
            // Everyday scripts: an `e` in a regex, a replacement, text, a file name.
            (&["-e", "s/e/E/g", "f"], false),
            (&["s/echo/print/", "f"], false),
            (&["-i", "s/version = .*/version = 2/", "Cargo.toml"], false),
            (&["/error/d", "log"], false),
            (&["\\%exec%d", "log"], false),
            (&["-n", "/^e/p"], false),
            (&["s/a/b/w edits.txt", "f"], false),
            (&["1i\\\nheader line"], false),
            (&["a end of line"], false),
            (&["1i\\\nheader e line\ns/a/b/"], false),
            (&["1i\\\nheader line\ne date"], true),
            (&["y/abc/xyz/"], false),
            (&[":loop;N;b loop"], false),
            (&["# the example\ns/a/b/"], false),
            (&["-f", "script.sed", "f"], false),
            (&["1a foo\\\\\ne date", "f"], true),
            (&[":x e date", "f"], true),
            (&[":a s/x/y/e", "f"], true),
            (&["-e", "tx e date", "-e", ":x", "f"], true),
            (&["--expr=1e date", "f"], true),
            (&["--e", "1e date", "f"], true),
            (&["-f", "-", "f"], true),
            (&["-f", "/dev/stdin", "f"], true),
            (&["--file=/dev/fd/63", "f"], true),
            (&["-nf", "-", "f"], true),
            (&["--sandbox", "1e date", "f"], false),
            (&["1e date", "f", "--", "--sandbox"], true),
            (&["-nl", "5", "1e date", "f"], true),
            (&["-l5", "1e date", "f"], true),
            (&["s/h/H/ # replace e", "f"], false),
            (&["b end; s/a/b/; :end", "f"], false),
            (&["-E", "s/(e+)/x/2", "f"], false),
        ];
        for (args, want) in cases {
            assert_eq!(sed("sed", &lit(args)).is_some(), *want, "sed {args:?}");
        }
        assert!(sed("grep", &lit(&["-e", "1e"])).is_none());
        // A script only known at run time is not judged here (`sed "s/x/$V/"` is everyday).
        assert!(sed("sed", &[Arg::Unknown("$S".into()), Arg::Lit("f".into())]).is_none());
        // A script file only known at run time (`-f <(…)`) is refused.
        assert!(sed("sed", &[Arg::Lit("-f".into()), Arg::Unknown("<(...)".into())]).is_some());
    }

    #[test]
    fn files_scripts_write() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["s/a/b/w /etc/hosts", "f"], &["/etc/hosts"]),
            (&["-n", "/x/w out.txt", "f"], &["out.txt"]),
            (&["-e", "s/a/b/gw  spaced name", "f"], &["spaced name"]),
            (&["1W first.txt\ns/a/b/", "f"], &["first.txt"]),
            (&["-e", "/a/w a.txt", "-e", "/b/w b.txt", "f"], &["a.txt", "b.txt"]),
            // Not a write: a `w` in a regex, a replacement, text or a read file's name.
            (&["s/w/W/g", "f"], &[]),
            (&["/w x/d", "f"], &[]),
            (&["r w.txt", "f"], &[]),
            (&["1i\\\nw here", "f"], &[]),
            // `--sandbox` refuses `w`.
            (&["--sandbox", "s/a/b/w /etc/hosts", "f"], &[]),
        ];
        for (args, want) in cases {
            let got: Vec<String> = writes(&lit(args)).iter().map(|a| a.raw().to_string()).collect();
            assert_eq!(
                got,
                want.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
                "sed {args:?}"
            );
        }
    }
}
