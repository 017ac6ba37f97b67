//! GNU sed scripts that run shell commands: the `e` command (`e` alone runs the pattern
//! space, `e CMD` runs CMD) and the `e` flag of `s` (`s/x/date/e` runs the replacement).
//! What they run is known only when the input is read, so such a script fails closed.
//! The script is read as sed reads it (addresses, `s` and `y` with any delimiter and
//! escapes, text of `a`/`i`/`c`, file names of `r`/`w`, labels, comments), so an `e`
//! inside a regular expression, a replacement or a file name is not taken for one.

use crate::hit::Hit;
use crate::rules::option_values;
use crate::walk::Arg;
use coord_domain::guardrails::{Action, Category};

/// The finding for a sed whose literal script runs a command.
pub fn sed(prog: &str, args: &[Arg]) -> Option<Hit> {
    if !matches!(prog, "sed" | "gsed") {
        return None;
    }
    let scripts = scripts(args);
    let runs = scripts.iter().filter_map(Arg::lit).any(executes);
    runs.then(|| Hit {
        category: Category::Unverifiable,
        operation: "dynamic_command".into(),
        action: Action::Block,
        reason: "this sed script runs a shell command (the `e` command or the `e` flag of `s`) that is only known \
                 when the input is read; run the command itself"
            .into(),
    })
}

/// The scripts of a sed command line: every `-e`/`--expression`, or else its first operand.
fn scripts(args: &[Arg]) -> Vec<Arg> {
    let given = option_values(args, &["-e", "--expression"], 'e');
    if !given.is_empty()
        || args
            .iter()
            .any(|a| matches!(a.raw(), "-f" | "--file") || a.raw().starts_with("--file="))
    {
        return given;
    }
    let mut skip = false;
    for a in args {
        let raw = a.raw();
        if std::mem::take(&mut skip) {
            continue;
        }
        match raw {
            "-l" | "--line-length" => skip = true,
            "--" => continue,
            _ if raw.starts_with('-') && raw.len() > 1 => {}
            _ => return vec![a.clone()],
        }
    }
    Vec::new()
}

/// Whether a sed script runs a command.
fn executes(script: &str) -> bool {
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
                while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                    match c[i] {
                        'e' => return true,
                        // `w FILE` ends the flags: the rest of the line is a file name.
                        'w' => i = line_end(&c, i),
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
            'r' | 'R' | 'w' | 'W' | '#' => i = line_end(&c, i),
            ':' | 'b' | 't' | 'T' => i = label_end(&c, i),
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
        // The line's last character before its newline: a `\` continues the text.
        let continued = end >= 2 && c[end - 1] == '\n' && c[end - 2] == '\\';
        if !continued || end >= c.len() {
            return end;
        }
        i = end;
    }
}

fn label_end(c: &[char], i: usize) -> usize {
    c[i..]
        .iter()
        .position(|&x| x == '\n' || x == ';')
        .map_or(c.len(), |p| i + p + 1)
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
            (&["-E", "s/(e+)/x/2", "f"], false),
        ];
        for (args, want) in cases {
            assert_eq!(sed("sed", &lit(args)).is_some(), *want, "sed {args:?}");
        }
        assert!(sed("grep", &lit(&["-e", "1e"])).is_none());
        // A script only known at run time is not judged here (`sed "s/x/$V/"` is everyday).
        assert!(sed("sed", &[Arg::Unknown("$S".into()), Arg::Lit("f".into())]).is_none());
    }
}
