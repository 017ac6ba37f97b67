//! A project's own entry points, read from the repository so that a command that runs one
//! is judged by what it runs: `package.json` scripts (`npm run deploy`, `yarn build`), Makefile
//! targets with their prerequisites (`make release`), justfile recipes (`just ship`) and
//! shell scripts run by path (`./scripts/deploy.sh prod`).
//!
//! This module only parses the files' text into the shell code each entry point runs;
//! the files come from the door that runs in the repository ([`crate::Facts::files`],
//! read beneath the working directory by the kernel), and the analysis walks the code
//! like any other (bounded depth, cycles refused). Where a file cannot be read, the entry
//! point is judged by its name (the `entry-point-*` patterns).

use std::collections::BTreeMap;

/// Repository files by path relative to where the command runs (`Makefile`,
/// `scripts/deploy.sh`).
pub type Files = BTreeMap<String, String>;

/// How many entry points may run each other before the analysis refuses (a loop, or code
/// too deep to judge).
pub const MAX_ENTRY_DEPTH: usize = 6;

/// The largest file read for an entry point.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// The files a package manager, make or just reads, in the order they are looked for.
pub const MAKEFILES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];
pub const JUSTFILES: &[&str] = &["justfile", "Justfile", ".justfile"];
pub const PACKAGE_JSON: &str = "package.json";

/// The scripts of a `package.json`, or `None` when it does not parse.
pub fn npm_scripts(text: &str) -> Option<BTreeMap<String, String>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let Some(scripts) = v.get("scripts") else {
        return Some(BTreeMap::new());
    };
    Some(
        scripts
            .as_object()?
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    )
}

/// One target or recipe: the entry points it runs first, then its shell lines (each
/// run by a shell of its own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub prerequisites: Vec<String>,
    pub lines: Vec<String>,
}

/// A makefile or justfile, as far as entry points go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recipes {
    pub rules: BTreeMap<String, Rule>,
    /// What runs without a target named.
    pub default: Option<String>,
}

/// An unknown value in the shell code: a make function or variable the file does not
/// define, a just interpolation. As a command word it is refused (fail closed).
const UNKNOWN_VALUE: &str = "\"$ENTRY_POINT_VALUE\"";

/// An unknown value inside make's expansion (it holds no `$` make would expand again).
const UNKNOWN_MARK: &str = "\u{1}unknown\u{1}";

/// Variables make defines itself.
const MAKE_DEFAULTS: &[(&str, &str)] = &[
    ("MAKE", "make"),
    ("CC", "cc"),
    ("CXX", "g++"),
    ("CPP", "cc -E"),
    ("AR", "ar"),
    ("AS", "as"),
    ("RM", "rm -f"),
    ("SHELL", "/bin/sh"),
    ("INSTALL", "install"),
    ("CFLAGS", ""),
    ("CXXFLAGS", ""),
    ("CPPFLAGS", ""),
    ("LDFLAGS", ""),
    ("LDLIBS", ""),
    ("ARFLAGS", "rv"),
    ("MAKEFLAGS", ""),
];

/// A makefile's explicit rules, with its variables expanded in the recipes. `overrides`
/// are `NAME=value` given on make's command line.
pub fn makefile(text: &str, overrides: &BTreeMap<String, String>) -> Recipes {
    let mut vars: BTreeMap<String, String> = MAKE_DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut out = Recipes::default();
    let mut current: Vec<String> = Vec::new();
    for line in logical_lines(text) {
        if let Some(recipe) = line.strip_prefix('\t') {
            for t in &current {
                if let Some(r) = out.rules.get_mut(t) {
                    r.lines.push(recipe.to_string());
                }
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = make_assignment(trimmed) {
            // `NAME ?= value`: the environment's value wins when it has one.
            let conditional = trimmed
                .split_once('=')
                .is_some_and(|(l, _)| l.trim_end().ends_with('?'));
            let value = if conditional {
                UNKNOWN_MARK.to_string()
            } else {
                value.trim().to_string()
            };
            vars.insert(name.to_string(), value);
            current.clear();
            continue;
        }
        current.clear();
        let Some((targets, rest)) = trimmed.split_once(':') else {
            continue;
        };
        let rest = rest.trim_start_matches(':');
        let (prereqs, inline) = rest.split_once(';').unwrap_or((rest, ""));
        for target in targets.split_whitespace() {
            if target.contains(['%', '$']) {
                continue;
            }
            if !target.starts_with('.') && out.default.is_none() {
                out.default = Some(target.to_string());
            }
            let rule = out.rules.entry(target.to_string()).or_default();
            rule.prerequisites.extend(
                prereqs
                    .split_whitespace()
                    .filter(|p| !p.contains('$'))
                    .map(str::to_string),
            );
            if !inline.trim().is_empty() {
                rule.lines.push(inline.trim().to_string());
            }
            current.push(target.to_string());
        }
    }
    vars.extend(overrides.clone());
    for (target, rule) in out.rules.iter_mut() {
        let prereqs = rule.prerequisites.join(" ");
        rule.lines = rule
            .lines
            .iter()
            .map(|l| make_expand(strip_prefixes(l), &vars, target, &prereqs, 0).replace(UNKNOWN_MARK, UNKNOWN_VALUE))
            .collect();
    }
    out
}

/// Whether a makefile uses what this reading does not follow (other files, functions
/// that define rules, another shell or recipe prefix, a default goal set elsewhere):
/// its targets are then judged by name.
pub fn makefile_unread(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        [
            "include ",
            "-include ",
            "sinclude ",
            "define ",
            ".RECIPEPREFIX",
            ".DEFAULT_GOAL",
            ".ONESHELL",
            "SHELL",
            ".SHELLFLAGS",
            "MAKEFLAGS",
            "vpath",
        ]
        .iter()
        .any(|k| l.starts_with(k))
            || l.contains("$(eval")
            || l.contains("$(call")
    })
}

/// Whether a justfile uses what this reading does not follow (another shell, imports,
/// modules, script recipes): its recipes are then judged by name.
pub fn justfile_unread(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        [
            "set shell",
            "set windows-shell",
            "set script-interpreter",
            "import ",
            "mod ",
            "[script",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    })
}

/// A makefile's lines with backslash-newlines joined (recipe lines keep theirs: the
/// shell reads them as one line too).
fn logical_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut joining = false;
    for line in text.lines() {
        if joining && let Some(last) = out.last_mut() {
            last.push('\n');
            last.push_str(line.trim_start_matches('\t'));
        } else {
            out.push(line.to_string());
        }
        joining = line.ends_with('\\');
    }
    out
}

/// `NAME = value`, `NAME := value`, `NAME ?= value`, `NAME += value` (appending is
/// read as replacing: the value is what the file says last), `export NAME = value`.
fn make_assignment(line: &str) -> Option<(&str, &str)> {
    let line = line
        .strip_prefix("export ")
        .or_else(|| line.strip_prefix("override "))
        .unwrap_or(line);
    let eq = line.find('=')?;
    let colon = line.find(':');
    if colon.is_some_and(|c| c < eq && !line[c..].starts_with(":=") && !line[c..].starts_with("::=")) {
        return None; // a rule with `=` in a prerequisite or target-specific variable
    }
    let name = line[..eq].trim_end_matches([':', '?', '+', '!']).trim();
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
    .then(|| (name, &line[eq + 1..]))
}

/// A recipe line without make's `@` (silent), `-` (ignore errors) and `+` prefixes.
fn strip_prefixes(line: &str) -> &str {
    line.trim_start().trim_start_matches(['@', '-', '+']).trim_start()
}

/// Make's expansion of `$(NAME)`, `${NAME}`, `$@`, `$<`, `$^` and `$$`; `$(shell CODE)`
/// becomes the shell's `$(CODE)` (the analysis reads it as code); any other function, or
/// a name the file does not define (it may come from the environment), is unknown.
fn make_expand(text: &str, vars: &BTreeMap<String, String>, target: &str, prereqs: &str, depth: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' || i + 1 >= chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let next = chars[i + 1];
        match next {
            '$' => out.push('$'),
            '@' => out.push_str(target),
            '<' => out.push_str(prereqs.split_whitespace().next().unwrap_or_default()),
            '^' | '+' | '?' => out.push_str(prereqs),
            '(' | '{' => {
                let close = if next == '(' { ')' } else { '}' };
                let mut level = 0;
                let mut j = i + 1;
                while j < chars.len() {
                    if chars[j] == next {
                        level += 1;
                    } else if chars[j] == close {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    j += 1;
                }
                let inner: String = chars[i + 2..j.min(chars.len())].iter().collect();
                out.push_str(&make_reference(&inner, vars, target, prereqs, depth));
                i = j + 1;
                continue;
            }
            c if c.is_alphanumeric() || c == '_' => {
                out.push_str(&make_reference(&c.to_string(), vars, target, prereqs, depth))
            }
            _ => out.push(next),
        }
        i += 2;
    }
    out
}

fn make_reference(inner: &str, vars: &BTreeMap<String, String>, target: &str, prereqs: &str, depth: usize) -> String {
    if depth > 8 {
        return UNKNOWN_VALUE.into();
    }
    // Variables that expand into each other many times over: not followed.
    if vars.get(inner.trim()).is_some_and(|v| v.matches('$').count() > 16) {
        return UNKNOWN_VALUE.into();
    }
    if let Some(code) = inner.strip_prefix("shell ") {
        return format!("$({})", make_expand(code, vars, target, prereqs, depth + 1));
    }
    match vars.get(inner.trim()) {
        Some(v) => make_expand(v, vars, target, prereqs, depth + 1),
        None => UNKNOWN_VALUE.into(),
    }
}

/// A justfile's recipes (`{{…}}` interpolations are unknown values). A recipe whose body
/// is a script for another interpreter (`#!/usr/bin/env python3`) has no lines: it is
/// judged by its name.
pub fn justfile(text: &str) -> Recipes {
    let mut out = Recipes::default();
    let mut current: Option<String> = None;
    let mut shebang: Option<bool> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            let Some(name) = &current else { continue };
            let body = line.trim();
            if body.is_empty() || (body.starts_with('#') && !body.starts_with("#!")) {
                continue;
            }
            let Some(rule) = out.rules.get_mut(name) else { continue };
            if shebang.is_none() {
                shebang = Some(body.starts_with("#!"));
                if body.starts_with("#!") {
                    let shell = ["sh", "bash", "zsh", "dash"]
                        .iter()
                        .any(|s| body.ends_with(&format!("/{s}")) || body.ends_with(&format!(" {s}")));
                    if !shell {
                        out.rules.remove(name);
                        current = None;
                    }
                    continue;
                }
            }
            rule.lines.push(interpolations_unknown(strip_prefixes(body)));
            continue;
        }
        current = None;
        shebang = None;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('[') {
            continue;
        }
        let Some((head, deps)) = trimmed.split_once(':') else {
            continue;
        };
        if deps.starts_with('=')
            || head.starts_with("set ")
            || head.starts_with("export ")
            || head.starts_with("alias ")
        {
            continue; // `name := value`, settings
        }
        let mut words = head.trim_start_matches('@').split_whitespace();
        let Some(name) = words.next() else { continue };
        if !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let prerequisites = deps
            .split_whitespace()
            .map(|d| d.trim_start_matches('(').trim_end_matches(')'))
            .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-'))
            .map(str::to_string)
            .collect();
        if out.default.is_none() {
            out.default = Some(name.to_string());
        }
        out.rules.insert(
            name.to_string(),
            Rule {
                prerequisites,
                lines: Vec::new(),
            },
        );
        current = Some(name.to_string());
    }
    out
}

fn interpolations_unknown(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => {
                out.push_str(UNKNOWN_VALUE);
                rest = &rest[start + end + 2..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a file run by path is shell code the analysis can read: a shell's `#!` line,
/// or none and a shell's extension.
pub fn is_shell_script(path: &str, text: &str) -> bool {
    match text.lines().next().and_then(|l| l.strip_prefix("#!")) {
        Some(interp) => {
            let mut words = interp.split_whitespace();
            let first = words.next().unwrap_or_default();
            let prog = if first.ends_with("/env") {
                // `env -S 'bash -c …'` and other options: not a plain shell.
                match words.next() {
                    Some(w) if !w.starts_with('-') && words.next().is_none() => w,
                    _ => return false,
                }
            } else {
                first.rsplit('/').next().unwrap_or_default()
            };
            matches!(prog, "sh" | "bash" | "dash" | "zsh" | "ksh")
        }
        None => path.ends_with(".sh") || path.ends_with(".bash"),
    }
}

/// The files a tool reads in `dir`: the one named (`make -f FILE`), else its defaults in
/// the order it looks for them.
pub fn candidates(dir: &str, named: Option<&str>, defaults: &[&str]) -> Vec<String> {
    match named {
        Some(f) => relative(dir, f).into_iter().collect(),
        None => defaults.iter().filter_map(|m| relative(dir, m)).collect(),
    }
}

/// `path` relative to the directory the command runs in, as the repository reader takes
/// it: no `./`, no `..`, not absolute (`None`: not in the repository).
pub fn relative(dir: &str, path: &str) -> Option<String> {
    let joined = if dir.is_empty() {
        path.to_string()
    } else {
        format!("{dir}/{path}")
    };
    if joined.starts_with(['/', '~', '$']) {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_json_scripts() {
        let s = npm_scripts(r#"{"name":"x","scripts":{"deploy":"vercel --prod","build":"vite build","n":1}}"#).unwrap();
        assert_eq!(s.get("deploy").map(String::as_str), Some("vercel --prod"));
        assert_eq!(s.len(), 2, "non-string entries are not scripts");
        assert_eq!(npm_scripts(r#"{"name":"x"}"#), Some(BTreeMap::new()));
        assert_eq!(npm_scripts("{nope"), None);
    }

    #[test]
    fn makefile_rules_variables_and_prerequisites() {
        let text = "KUBECTL := kubectl\nENV ?= staging\n.PHONY: deploy build\n\nall: build\n\nbuild:\n\t@cargo build --release\n\ndeploy: build push\n\t$(KUBECTL) apply -f k8s/$(ENV).yaml\n\t-echo done $$HOME $@\n\npush:\n\tdocker push img:$(shell git rev-parse HEAD)\n\nclean: ; rm -rf target\n%.o: %.c\n\t$(CC) -c $<\nlong:\n\techo a \\\n\t  b\n";
        let m = makefile(text, &BTreeMap::new());
        assert_eq!(m.default.as_deref(), Some("all"));
        let deploy = &m.rules["deploy"];
        assert_eq!(deploy.prerequisites, ["build", "push"]);
        // `ENV ?= staging`: the environment may say otherwise.
        assert_eq!(
            deploy.lines,
            [
                format!("kubectl apply -f k8s/{UNKNOWN_VALUE}.yaml"),
                "echo done $HOME deploy".to_string()
            ]
        );
        assert_eq!(m.rules["build"].lines, ["cargo build --release"]);
        assert_eq!(m.rules["push"].lines, ["docker push img:$(git rev-parse HEAD)"]);
        assert_eq!(m.rules["clean"].lines, ["rm -rf target"]);
        assert_eq!(m.rules["long"].lines, ["echo a \\\n  b"]);
        assert!(!m.rules.contains_key("%.o"));
        let prod = makefile(text, &BTreeMap::from([("ENV".to_string(), "prod".to_string())]));
        assert_eq!(prod.rules["deploy"].lines[0], "kubectl apply -f k8s/prod.yaml");
        let undefined = makefile("x:\n\t$(TOOL) run\n", &BTreeMap::new());
        assert_eq!(undefined.rules["x"].lines, [format!("{UNKNOWN_VALUE} run")]);
    }

    #[test]
    fn justfile_recipes() {
        let text = "set shell := [\"bash\", \"-c\"]\nversion := \"1.0\"\n\ndefault: test\n\ntest:\n    cargo test\n\n# Ship it\n@release tag=version: test (build \"x\")\n    git tag {{tag}}\n    git push --tags\n\nbuild target:\n    cargo build\n\npy:\n    #!/usr/bin/env python3\n    print(1)\n\nsh:\n    #!/usr/bin/env bash\n    set -e\n    rm -rf dist\n";
        let j = justfile(text);
        assert_eq!(j.default.as_deref(), Some("default"));
        assert_eq!(j.rules["release"].prerequisites, ["test", "build"]);
        assert_eq!(
            j.rules["release"].lines,
            [format!("git tag {UNKNOWN_VALUE}"), "git push --tags".to_string()]
        );
        assert!(!j.rules.contains_key("py"), "another interpreter: judged by name");
        assert_eq!(j.rules["sh"].lines, ["set -e", "rm -rf dist"]);
        assert!(!j.rules.contains_key("version"));
    }

    #[test]
    fn scripts_and_paths() {
        assert!(is_shell_script("deploy", "#!/usr/bin/env bash\nset -e"));
        assert!(is_shell_script("x.sh", "echo"));
        assert!(!is_shell_script("deploy", "#!/usr/bin/env python3\n"));
        assert!(!is_shell_script("deploy.py", "print(1)"));
        assert_eq!(
            relative("", "./scripts/deploy.sh").as_deref(),
            Some("scripts/deploy.sh")
        );
        assert_eq!(relative("web", "package.json").as_deref(), Some("web/package.json"));
        assert_eq!(relative("", "../x.sh"), None);
        assert_eq!(relative("", "/usr/bin/x"), None);
    }
}
