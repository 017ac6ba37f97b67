//! The analysis of a command that runs one of the project's entry points: the code the
//! entry point runs, read from the repository ([`crate::entry`]), is analysed in its
//! place. A file the door did not send is noted as wanted ([`crate::entry_files_wanted`])
//! and the entry point is judged by its name meanwhile.

use crate::entry::{self, Recipes};
use crate::rules::{Hit, program};
use crate::walk::Arg;
use crate::{Analyzer, unverifiable};
use std::collections::BTreeMap;

/// Subcommands of yarn, pnpm and bun that are not scripts of the package.
const PM_COMMANDS: &[&str] = &[
    "add",
    "audit",
    "bin",
    "cache",
    "config",
    "create",
    "dedupe",
    "deploy",
    "dlx",
    "env",
    "exec",
    "fetch",
    "help",
    "i",
    "import",
    "info",
    "init",
    "install",
    "licenses",
    "link",
    "list",
    "login",
    "logout",
    "ls",
    "node",
    "outdated",
    "pack",
    "patch",
    "prune",
    "publish",
    "rebuild",
    "remove",
    "rm",
    "root",
    "run",
    "setup",
    "store",
    "unlink",
    "up",
    "update",
    "upgrade",
    "version",
    "why",
    "workspace",
    "workspaces",
    "x",
];

/// `yarn|pnpm|bun NAME …` where NAME is not one of the tool's own commands: the index of
/// NAME (a script of the package, or a binary of a dependency).
pub(crate) fn direct_binary(prog: &str, args: &[Arg]) -> Option<usize> {
    if !matches!(prog, "yarn" | "pnpm" | "bun") {
        return None;
    }
    let i = args.iter().position(|a| !a.raw().starts_with('-'))?;
    let name = args[i].lit()?;
    // `pnpm check:types`: a script (a binary has no `:` in its name).
    (!PM_COMMANDS.contains(&name) && !matches!(name, "test" | "start" | "t") && !name.contains(':')).then_some(i)
}

impl Analyzer<'_> {
    /// When `argv` runs an entry point whose code the repository holds: analyses that
    /// code and answers true. False: judge the command as it is (by its name).
    pub(crate) fn entry_point(&mut self, argv: &[Arg], text: &str, depth: usize) -> bool {
        if self.facts.files.is_none() || self.cwd.is_some() || self.line_edits {
            return false; // nothing read, the line moved elsewhere, or it may edit the files first
        }
        let Some(word) = argv[0].lit() else { return false };
        let args = &argv[1..];
        match program(word) {
            "npm" | "pnpm" | "yarn" | "bun" => self.npm(program(word), args, text, depth),
            "make" | "gmake" => self.make(args, text, depth),
            "just" => self.just(args, text, depth),
            "source" | "." => args
                .first()
                .and_then(Arg::lit)
                .is_some_and(|p| self.script_file(p, text, depth)),
            _ if word.contains('/') => self.script_file(word, text, depth),
            _ => false,
        }
    }

    /// A file of the repository, or `None` (noted as wanted when it was not sent).
    fn repo_file(&mut self, path: &str) -> Option<String> {
        let files = self.facts.files?;
        match files.get(path) {
            Some(text) => Some(text.clone()),
            None => {
                if !self.wanted.iter().any(|w| w == path) {
                    self.wanted.push(path.to_string());
                }
                None
            }
        }
    }

    /// `code` run for the entry point `key`, analysed in place of the command, from the
    /// entry point's directory; a loop or too deep a chain is refused.
    fn entry_code(&mut self, key: &str, dir: &str, code: &str, text: &str, depth: usize) {
        if self.entry_stack.iter().any(|k| k == key) {
            return self.add(
                [unverifiable(
                    "entry_point_loop",
                    format!("{key} runs itself again: a loop that cannot be judged"),
                )],
                text,
            );
        }
        if self.entry_stack.len() >= entry::MAX_ENTRY_DEPTH {
            return self.add(
                [unverifiable(
                    "entry_point_depth",
                    format!(
                        "entry points run each other more than {} deep; run the steps themselves",
                        entry::MAX_ENTRY_DEPTH
                    ),
                )],
                text,
            );
        }
        self.entry_stack.push(key.to_string());
        let outer = std::mem::replace(&mut self.entry_dir, dir.to_string());
        self.script(code, depth + 1);
        self.entry_dir = outer;
        self.entry_stack.pop();
    }

    /// `npm run NAME`, `npm test`, `yarn NAME`, `pnpm --dir web run NAME`: the package's
    /// script with its `pre` and `post` scripts.
    fn npm(&mut self, prog: &str, args: &[Arg], text: &str, depth: usize) -> bool {
        let mut dir = self.entry_dir.clone();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let Some(raw) = a.lit() else { return false };
            match raw {
                "--prefix" | "-C" | "--dir" | "--cwd" => {
                    let Some(d) = args
                        .get(i + 1)
                        .and_then(Arg::lit)
                        .and_then(|d| entry::relative(&dir, d))
                    else {
                        return false;
                    };
                    dir = d;
                    i += 2;
                }
                // Another package of a workspace, or all of them: judged by name.
                "-w" | "--workspace" | "--workspaces" | "-ws" | "--filter" | "-F" | "-r" | "--recursive" => {
                    return false;
                }
                _ if raw.starts_with("--prefix=") || raw.starts_with("--dir=") || raw.starts_with("--cwd=") => {
                    return false;
                }
                _ if raw.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(sub) = args.get(i).and_then(Arg::lit) else {
            return false;
        };
        let (name, rest, direct) = match sub {
            "run" | "run-script" | "rum" | "urn" => {
                let Some(n) = args[i + 1..].iter().find(|a| !a.raw().starts_with('-')) else {
                    return false;
                };
                let Some(n) = n.lit() else { return false };
                let at = args.iter().position(|a| a.raw() == n).unwrap_or(i + 1);
                (n.to_string(), &args[at + 1..], false)
            }
            "test" | "t" | "tst" | "start" | "stop" | "restart" => {
                let n = if sub.starts_with('t') { "test" } else { sub };
                (n.to_string(), &args[i + 1..], false)
            }
            s if prog != "npm" && !PM_COMMANDS.contains(&s) => (s.to_string(), &args[i + 1..], true),
            _ => return false,
        };
        let Some(path) = entry::relative(&dir, entry::PACKAGE_JSON) else {
            return false;
        };
        let Some(json) = self.repo_file(&path) else {
            return false;
        };
        let Some(scripts) = entry::npm_scripts(&json) else {
            return false;
        };
        if !scripts.contains_key(&name) {
            // No such script: npm stops with an error; yarn, pnpm and bun run the
            // dependency's binary (or file) of that name, judged as a command.
            if prog == "npm" || direct {
                return prog == "npm";
            }
            let at = args.iter().position(|a| a.raw() == name).unwrap_or(args.len());
            self.argv(&args[at..], &crate::walk::Stdin::Inherited, text, depth);
            return true;
        }
        // The arguments after the name reach the script's last command, each one word
        // (npm quotes them).
        let extra: Vec<String> = rest
            .iter()
            .filter(|a| a.raw() != "--")
            .map(|a| format!("'{}'", a.raw().replace('\'', "'\\''")))
            .collect();
        for key in [format!("pre{name}"), name.clone(), format!("post{name}")] {
            if let Some(code) = scripts.get(&key) {
                let code = if key == name && !extra.is_empty() {
                    format!("{code} {}", extra.join(" "))
                } else {
                    code.clone()
                };
                self.entry_code(&format!("{path} script {key}"), &dir, &code, text, depth);
            }
        }
        true
    }

    /// `make [-C DIR] [-f FILE] [NAME=value…] [TARGET…]`: each target's prerequisites,
    /// then its recipe lines (each run by a shell of its own).
    fn make(&mut self, args: &[Arg], text: &str, depth: usize) -> bool {
        let (mut dir, mut file) = (self.entry_dir.clone(), None::<String>);
        let (mut targets, mut overrides) = (Vec::new(), BTreeMap::new());
        // Spellings not read here (`-Cweb`, `--file=…`, `--eval`): judged by name.
        let unread = |raw: &str| {
            (raw.starts_with("-C") || raw.starts_with("-f") || raw.starts_with("-E")) && raw.len() > 2
                || ["--directory=", "--file=", "--makefile=", "--eval"]
                    .iter()
                    .any(|p| raw.starts_with(p))
                || matches!(raw, "-E" | "-e" | "--environment-overrides")
        };
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let Some(raw) = a.lit() else { return false };
            if unread(raw) {
                return false;
            }
            let value = || args.get(i + 1).and_then(Arg::lit).map(str::to_string);
            match raw {
                "-C" | "--directory" => {
                    let Some(d) = value().and_then(|d| entry::relative(&dir, &d)) else {
                        return false;
                    };
                    dir = d;
                    i += 2;
                }
                "-f" | "--file" | "--makefile" => {
                    file = Some(match value() {
                        Some(f) => f,
                        None => return false,
                    });
                    i += 2;
                }
                "-n" | "--dry-run" | "--just-print" | "--recon" | "-q" | "--question" | "-p" | "--print-data-base"
                | "--help" | "-v" | "--version" => return true, // nothing runs
                "-j" | "-l" | "-o" | "-W" | "-I" => i += 2,
                _ if raw.starts_with('-') => i += 1,
                _ => {
                    match raw.split_once('=') {
                        Some((k, v)) => {
                            overrides.insert(k.to_string(), v.to_string());
                        }
                        None => targets.push(raw.to_string()),
                    }
                    i += 1;
                }
            }
        }
        let candidates = entry::candidates(&dir, file.as_deref(), entry::MAKEFILES);
        let Some((path, text_of)) = self.first_file(&candidates) else {
            return false;
        };
        if entry::makefile_unread(&text_of) {
            return false;
        }
        let recipes = entry::makefile(&text_of, &overrides);
        self.recipes(&recipes, &path, &dir, targets, text, depth)
    }

    /// `just [-f FILE] [-d DIR] [RECIPE [ARGS…]…]`.
    fn just(&mut self, args: &[Arg], text: &str, depth: usize) -> bool {
        let (mut dir, mut file) = (self.entry_dir.clone(), None::<String>);
        let mut words = Vec::new();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let Some(raw) = a.lit() else { return false };
            match raw {
                "-f" | "--justfile" => {
                    file = args.get(i + 1).and_then(Arg::lit).map(str::to_string);
                    i += 2;
                }
                "-d" | "--working-directory" => {
                    let Some(d) = args
                        .get(i + 1)
                        .and_then(Arg::lit)
                        .and_then(|d| entry::relative(&dir, d))
                    else {
                        return false;
                    };
                    dir = d;
                    i += 2;
                }
                "--set" => i += 3,
                "-n" | "--dry-run" | "-l" | "--list" | "--summary" | "--show" | "-s" | "--evaluate" | "--help"
                | "-h" | "--version" | "-V" | "--dump" | "--choose" | "--edit" | "-e" | "--fmt" | "--init" => {
                    return true;
                }
                _ if raw.starts_with('-') => i += 1,
                _ => {
                    words.push(raw.to_string());
                    i += 1;
                }
            }
        }
        let candidates = entry::candidates(&dir, file.as_deref(), entry::JUSTFILES);
        let Some((path, text_of)) = self.first_file(&candidates) else {
            return false;
        };
        if entry::justfile_unread(&text_of) {
            return false;
        }
        let recipes = entry::justfile(&text_of);
        // The words after a recipe are its arguments, unless they name recipes too.
        let mut targets: Vec<String> = words
            .iter()
            .filter(|w| recipes.rules.contains_key(*w))
            .cloned()
            .collect();
        if let Some(first) = words.first()
            && !recipes.rules.contains_key(first)
        {
            // Not a recipe of this file (or one for another interpreter): judged by name.
            return false;
        }
        targets.dedup();
        self.recipes(&recipes, &path, &dir, targets, text, depth)
    }

    /// The first of `candidates` the repository holds (all of them are wanted when none
    /// was sent).
    fn first_file(&mut self, candidates: &[String]) -> Option<(String, String)> {
        let files = self.facts.files?;
        if let Some(found) = candidates
            .iter()
            .find_map(|c| files.get(c).map(|t| (c.clone(), t.clone())))
        {
            return Some(found);
        }
        for c in candidates {
            self.repo_file(c);
        }
        None
    }

    /// The named targets (the default one when none is named), each after its
    /// prerequisites. False (judged by name) when a target is not one the file's explicit
    /// rules name (an included file's, a pattern rule's).
    fn recipes(&mut self, r: &Recipes, path: &str, dir: &str, targets: Vec<String>, text: &str, depth: usize) -> bool {
        let targets: Vec<String> = if targets.is_empty() {
            r.default.iter().cloned().collect()
        } else {
            targets
        };
        if targets.is_empty() || targets.iter().any(|t| !r.rules.contains_key(t)) {
            return false;
        }
        let mut done = Vec::new();
        for t in targets {
            self.target(r, path, dir, &t, &mut done, text, depth);
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn target(
        &mut self,
        r: &Recipes,
        path: &str,
        dir: &str,
        name: &str,
        done: &mut Vec<String>,
        text: &str,
        depth: usize,
    ) {
        let Some(rule) = r.rules.get(name) else { return };
        let key = format!("{path} target {name}");
        if done.contains(&name.to_string()) {
            return;
        }
        if self.entry_stack.contains(&key) || self.entry_stack.len() >= entry::MAX_ENTRY_DEPTH {
            return self.entry_code(&key, dir, "", text, depth);
        }
        done.push(name.to_string());
        self.entry_stack.push(key.clone());
        for p in &rule.prerequisites {
            self.target(r, path, dir, p, done, text, depth);
        }
        self.entry_stack.pop();
        for line in &rule.lines {
            self.entry_code(&key, dir, line, text, depth);
        }
    }

    /// A shell script of the repository run by path (`./deploy.sh prod`, `bash x.sh`,
    /// `source env.sh`): its code. False when it is not there or not shell code.
    pub(crate) fn script_file(&mut self, path: &str, text: &str, depth: usize) -> bool {
        if self.facts.files.is_none() || self.cwd.is_some() || self.line_edits {
            return false;
        }
        if self.written.contains_key(path.trim_start_matches("./")) {
            return false; // written by this line: its content is the line's, not the file's
        }
        let Some(rel) = entry::relative(&self.entry_dir, path) else {
            return false;
        };
        let Some(code) = self.repo_file(&rel) else { return false };
        if !entry::is_shell_script(&rel, &code) {
            return false;
        }
        let dir = self.entry_dir.clone();
        self.entry_code(&rel, &dir, &code, text, depth);
        true
    }

    /// A SQL file a database client runs (`psql -f FILE`, `mysql db < FILE`): judged by
    /// its statements when the repository's copy is read, by its name otherwise (a dump or
    /// backup drops and recreates tables).
    pub(crate) fn sql_file(&mut self, prog: &str, path: &str, text: &str) {
        let readable = self.facts.files.is_some()
            && self.cwd.is_none()
            && !self.line_edits
            && !self.written.contains_key(path.trim_start_matches("./"));
        let code = readable
            .then(|| entry::relative(&self.entry_dir, path))
            .flatten()
            .and_then(|rel| self.repo_file(&rel));
        match code {
            Some(sql) => self.add(crate::sql::analyze(&sql, prog, false), text),
            None => self.add(crate::rules::sql_file_by_name(prog, path), text),
        }
    }

    /// A script run by a shell, judged by its name when its code is not read
    /// (`bash scripts/deploy.sh`).
    pub(crate) fn script_by_name(&mut self, path: &str, rest: &[Arg], text: &str) {
        let mut hits: Vec<Hit> = self.patterns.check(program(path), rest);
        hits.extend(crate::rules::shipping_script(path, rest));
        self.add(hits, text);
    }
}

#[cfg(test)]
mod tests {
    use crate::entry::Files;
    use crate::{Facts, analyze_in, entry_files_wanted, patterns};

    fn repo() -> Files {
        let f = |p: &str, t: &str| (p.to_string(), t.to_string());
        Files::from([
            f(
                "package.json",
                r#"{"scripts":{"build":"vite build","deploy":"npm run build && vercel --prod","predeploy":"npm test","test":"vitest run","release:notes":"node scripts/notes.js","loop":"npm run loop","wipe":"./scripts/wipe.sh"}}"#,
            ),
            f(
                "Makefile",
                "ENV ?= staging\nall: build\nbuild:\n\tcargo build\ndeploy: build\n\tkubectl apply -f k8s/$(ENV).yaml\nclean:\n\trm -rf target\nnuke:\n\t$(MAKE) clean\n\trm -rf src\nsub:\n\t$(MAKE) -C web deploy\n",
            ),
            f("web/Makefile", "deploy:\n\tfly deploy\n"),
            f(
                "justfile",
                "default: test\ntest:\n    cargo test\nship: test\n    cargo publish\n",
            ),
            f("scripts/wipe.sh", "#!/usr/bin/env bash\nset -e\nrm -rf \"$HOME\"\n"),
            f("scripts/tidy.sh", "#!/bin/sh\nrm -rf dist\n"),
            f("scripts/deploy.py", "print('deploy')\n"),
            f("db/reset.sql", "BEGIN;\nDROP TABLE users;\nCOMMIT;\n"),
            f("db/schema.sql", "CREATE TABLE users (id int primary key);\n"),
            f("db/prod_dump.sql", "INSERT INTO t VALUES (1);\n"),
        ])
    }

    fn refused(command: &str, files: &Files) -> Vec<String> {
        let facts = Facts {
            git_aliases: None,
            files: Some(files),
        };
        analyze_in(command, patterns::builtin(), facts)
            .into_iter()
            .filter(|f| f.action != coord_domain::guardrails::Action::Warn)
            .map(|f| f.operation)
            .collect()
    }

    #[test]
    fn entry_points_are_judged_by_what_they_run() {
        let files = repo();
        // (command, refused as, or allowed when empty)
        let cases: &[(&str, &[&str])] = &[
            ("npm run build", &[]),
            ("npm test", &[]),
            ("yarn build", &[]),
            ("npm run deploy", &["deploy"]),
            ("pnpm run release:notes", &[]),
            ("npm run wipe", &["recursive_delete"]),
            ("npm run loop", &["entry_point_loop"]),
            ("npm run missing", &[]),
            ("make", &[]),
            ("make build", &[]),
            ("make clean", &[]),
            ("make deploy", &["deploy"]),
            ("make deploy ENV=prod", &["deploy"]),
            ("make -n deploy", &[]),
            ("make nuke", &["recursive_delete"]),
            ("make sub", &["deploy"]),
            ("just", &[]),
            ("just ship", &["publish"]),
            ("./scripts/wipe.sh", &["recursive_delete"]),
            ("bash scripts/wipe.sh", &["recursive_delete"]),
            ("sh ./scripts/tidy.sh", &[]),
            ("./scripts/tidy.sh", &[]),
            // Not shell code: judged by its name.
            ("python scripts/deploy.py", &["deploy"]),
            ("sudo make deploy", &["deploy"]),
            // SQL files a client runs: by their statements.
            ("psql -d app -f db/reset.sql", &["drop"]),
            ("mysql app < db/reset.sql", &["drop"]),
            ("psql app < db/schema.sql", &["migrate"]), // a schema change needs trust
            ("psql -f db/prod_dump.sql", &[]),
            // Not in the repository (nor sent): by its name.
            ("psql -f db/other_dump.sql", &["bulk_delete"]),
            ("psql -f db/other.sql", &[]),
        ];
        for (command, want) in cases {
            let got = refused(command, &files);
            for w in *want {
                assert!(got.iter().any(|g| g == w), "{command}: want {w}, got {got:?}");
            }
            if want.is_empty() {
                assert!(got.is_empty(), "{command}: allowed, got {got:?}");
            }
        }
    }

    #[test]
    fn without_the_files_an_entry_point_is_judged_by_its_name() {
        let none = Files::new();
        for command in [
            "npm run deploy",
            "make release",
            "just publish",
            "./scripts/deploy.sh prod",
            "bash deploy.sh",
        ] {
            assert!(!refused(command, &none).is_empty(), "{command}");
            assert!(!crate::analyze(command).is_empty(), "{command}, no facts at all");
        }
        for command in ["npm run build", "make test", "just fmt", "./scripts/tidy.sh"] {
            assert!(refused(command, &none).is_empty(), "{command}");
        }
    }

    #[test]
    fn the_files_wanted_follow_the_code() {
        let mut files = Files::new();
        assert_eq!(entry_files_wanted("npm run wipe", &files), ["package.json"]);
        files.insert("package.json".into(), repo()["package.json"].clone());
        assert_eq!(entry_files_wanted("npm run wipe", &files), ["scripts/wipe.sh"]);
        assert_eq!(
            entry_files_wanted("make -C web deploy", &files),
            ["web/GNUmakefile", "web/makefile", "web/Makefile"]
        );
        assert!(entry_files_wanted("ls -la && git status", &files).is_empty());
        assert_eq!(entry_files_wanted("mysql app < db/x.sql", &files), ["db/x.sql"]);
        assert!(
            entry_files_wanted("cat ../x.sh && ../x.sh", &files).is_empty(),
            "outside the directory"
        );
        assert!(entry_files_wanted("cd /tmp && ./x.sh", &files).is_empty(), "elsewhere");
    }
}
