//! What some of bash's builtins assign or run, read from their arguments as bash reads
//! them: option clusters (`-rs`), values attached (`-vNAME`) or following (`-v NAME`), the
//! last of a repeated option winning, `--` ending the options.

use crate::walk::Arg;

/// Options with their values, in order, and operands ([`parse`]).
type Parsed = (Vec<(char, Arg)>, Vec<Arg>);

/// A builtin's options that take a value, each with it, in order; and its operands.
/// `None` when a word where options may stand is only known at run time (`wait "$x"`:
/// it may be `-pNAME`).
fn parse(args: &[Arg], valued: &str) -> Option<Parsed> {
    let (mut values, mut operands) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut ended = false;
    while let Some(a) = args.get(i) {
        i += 1;
        let raw = a.raw();
        if !ended && operands.is_empty() && a.lit().is_none() {
            return None;
        }
        if ended || !raw.starts_with('-') || raw == "-" {
            operands.push(a.clone());
            continue;
        }
        if raw == "--" {
            ended = true;
            continue;
        }
        let text = a.lit()?;
        for (at, c) in text.char_indices().skip(1) {
            if valued.contains(c) {
                let rest = &text[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned().unwrap_or(Arg::Lit(String::new()))
                } else {
                    Arg::Lit(rest.to_string())
                };
                values.push((c, value));
                break;
            }
        }
    }
    Some((values, operands))
}

/// The names `word` assigns from `args` (`read [-a NAME] NAME…`, `printf -v NAME`,
/// `wait -p NAME`, `getopts OPTS NAME`, `mapfile … ARRAY`, `unset NAME…`, `let NAME=…`):
/// `None` when one is only known at run time, so that any variable may change.
pub(crate) fn assigned_names(word: &str, args: &[Arg]) -> Option<Vec<String>> {
    let (valued, named) = match word {
        "read" => ("adinNptu", "a"),
        "printf" => ("v", "v"),
        "wait" => ("p", "p"),
        "mapfile" | "readarray" => ("dnOsuCc", ""),
        _ => ("", ""),
    };
    let (values, operands) = parse(args, valued)?;
    let mut names: Vec<&Arg> = values
        .iter()
        .filter(|(c, _)| named.contains(*c))
        .map(|(_, v)| v)
        .collect();
    match word {
        "read" | "mapfile" | "readarray" | "unset" | "let" => names.extend(&operands),
        "getopts" => names.extend(operands.get(1)),
        _ => {}
    }
    names
        .into_iter()
        .map(|a| {
            a.lit()
                .map(|t| t.split('=').next().unwrap_or(t).trim_end_matches('+').to_string())
        })
        .collect()
}

/// What `mapfile`/`readarray` runs for the lines it reads (`-C CODE`, the last one):
/// `Ok(None)` when nothing, `Err(())` when that is only known at run time.
pub(crate) fn mapfile_callback(args: &[Arg]) -> Result<Option<Arg>, ()> {
    let (values, _) = parse(args, "dnOsuCc").ok_or(())?;
    match values.into_iter().rfind(|(c, _)| *c == 'C') {
        Some((_, code @ Arg::Lit(_))) => Ok(Some(code)),
        Some(_) => Err(()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Arg> {
        words
            .iter()
            .map(|w| match w.strip_prefix('?') {
                Some(raw) => Arg::Unknown(raw.to_string()),
                None => Arg::Lit(w.to_string()),
            })
            .collect()
    }

    #[test]
    fn the_names_builtins_assign() {
        type Case<'a> = (&'a str, &'a [&'a str], Option<&'a [&'a str]>);
        let cases: &[Case] = &[
            ("read", &["-r", "line"], Some(&["line"])),
            ("read", &["-rs", "pw"], Some(&["pw"])),
            ("read", &["-rp", "ok? ", "a"], Some(&["a"])),
            ("read", &["-ad"], Some(&["d"])),
            ("read", &["-r", "-a", "arr", "x"], Some(&["arr", "x"])),
            ("read", &["?$(echo d)"], None),
            ("read", &["?$opts", "d"], None),
            ("read", &["-p", "?$prompt", "d"], Some(&["d"])),
            ("printf", &["%s\n", "?$USER"], Some(&[])),
            ("printf", &["-vd", "%s", "/"], Some(&["d"])),
            ("printf", &["-v", "?$n", "x"], None),
            ("wait", &["?$pid"], None),
            ("wait", &["--", "?$pid"], Some(&[])),
            ("wait", &["-n", "-p", "d"], Some(&["d"])),
            ("getopts", &["ab:", "opt"], Some(&["opt"])),
            ("mapfile", &["-t", "-C", "cb", "-c", "1", "lines"], Some(&["lines"])),
            ("unset", &["-v", "d", "e"], Some(&["d", "e"])),
            ("let", &["x=1", "y+=2"], Some(&["x", "y"])),
            ("read", &["--", "-a"], Some(&["-a"])),
        ];
        for (word, given, want) in cases {
            let got = assigned_names(word, &args(given));
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{word} {given:?}");
        }
    }

    #[test]
    fn the_code_mapfile_calls_back() {
        let lit = |s: &str| Ok(Some(Arg::Lit(s.to_string())));
        type Case<'a> = (&'a [&'a str], Result<Option<Arg>, ()>);
        let cases: &[Case] = &[
            (&["-t", "lines"], Ok(None)),
            (&["-C", "rm -rf ~", "-c", "1", "a"], lit("rm -rf ~")),
            (&["-tCrm -rf ~", "a"], lit("rm -rf ~")),
            (&["-C", ":", "-C", "rm -rf ~"], lit("rm -rf ~")),
            (&["-C", "?$cb"], Err(())),
            (&["?-C$cb"], Err(())),
            (&["?\"-C$cb\"", "-c", "1", "a"], Err(())),
            (&["-c1", "-C", "echo"], lit("echo")),
        ];
        for (given, want) in cases {
            assert_eq!(&mapfile_callback(&args(given)), want, "{given:?}");
        }
    }
}
