//! Programs the pattern registry does not know, judged by their subcommand words.
//!
//! The registry ([`crate::patterns`]) names the destructive subcommands of about two
//! hundred programs; every other command-line tool an agent meets (a hosting platform's
//! CLI, a SaaS's admin tool, a team's own binary) would pass whatever it does. Such tools
//! share a grammar: `TOOL [GROUP…] VERB [OPERANDS]`, where the verb says what happens
//! (`hcloud server delete web`, `sst deploy --stage prod`, `sanity dataset delete
//! staging`, `render secrets set KEY=…`). This module reads that grammar: among the
//! first subcommand-shaped words, one that says delete, deploy, apply or set a secret is
//! refused for approval, as the registry's own patterns are.
//!
//! What keeps it from reading operands as verbs (`cd destroy`, `grep delete src`):
//! - only programs with subcommands: the registry's programs, file and text tools,
//!   documentation readers and version-control tools whose operands are files are left
//!   to their own rules;
//! - only words shaped like subcommands (lower-case words joined by `-`, `_` or `:`),
//!   and only up to the first word that is not (a path, a number, a name with capitals);
//! - a word right after an option may be that option's value (`pytest -k delete`), so it
//!   is neither a verb nor a group;
//! - a reading word next (`deploy list`, `release notes`), a group that is a cache
//!   (`pip cache purge`), `help`, `--help` and dry runs are not a change;
//! - an unknown program whose first word names a program (`retry_with_backoff gh release
//!   create`, `xvfb-run rm -rf ~`) is read as a wrapper of that command first (by the
//!   analyzer; [`names_program`]);
//! - removing (`rm`, `remove`, `uninstall`) is a verb only under a group that is no
//!   dependency, cache or plug-in list (`nerdctl volume rm` is; `pdm remove`, `flutter
//!   pub remove` are not): package managers remove dependencies all day.

use crate::hit::{Hit, hit};
use crate::patterns::{Patterns, split};
use crate::walk::Arg;
use coord_domain::guardrails::{Action, Category};

/// Words that delete what a tool manages.
const DELETING: &[&str] = &[
    "delete",
    "destroy",
    "purge",
    "wipe",
    "nuke",
    "terminate",
    "teardown",
    "deprovision",
    "decommission",
    "erase",
    "drop",
    "truncate",
    "flushall",
    "flushdb",
    "unpublish",
    "yank",
];

/// Words that ship only under a group (`trunk push`, `mod push`): alone, `push` often
/// copies to a device or applies a patch (`adb push`, `quilt push`).
const PUSHING: &[&str] = &["push"];

/// Words that delete only under a group (`volume rm`), never as the first word.
const REMOVING: &[&str] = &["rm", "remove", "del", "uninstall"];

/// Words that ship to users or change what runs (`timoni bundle apply`, `chezmoi apply`).
const SHIPPING: &[&str] = &[
    "deploy", "undeploy", "publish", "release", "promote", "rollback", "apply",
];

/// Words that write a secret, under a `secret(s)` group.
const SETTING: &[&str] = &[
    "set", "put", "add", "create", "update", "import", "upload", "unset", "delete", "rm", "remove",
];

/// A word next to the verb (or part of it) that makes it a reading: `deploy list`,
/// `release-notes`.
const READING: &[&str] = &[
    "list", "ls", "get", "show", "describe", "status", "view", "info", "history", "help", "logs", "log", "diff",
    "plan", "preview", "check", "validate", "lint", "test", "notes", "dry", "inspect", "whoami", "version", "download",
];

/// Groups whose removals are everyday work: dependencies, caches, plug-ins, aliases, local
/// environments and simulator or build platforms.
const HOUSEKEEPING: &[&str] = &[
    "pub",
    "package",
    "packages",
    "pkg",
    "dep",
    "deps",
    "dependency",
    "dependencies",
    "plugin",
    "plugins",
    "extension",
    "extensions",
    "cache",
    "caches",
    "alias",
    "aliases",
    "completion",
    "completions",
    "help",
    "env",
    "envs",
    "venv",
    "virtualenv",
    "platform",
    "platforms",
    "kernelspec",
    "simctl",
];

/// Programs whose positionals are files, text or topics, not subcommands.
const OPERAND_PROGRAMS: &[&str] = &[
    // files and text
    "cd",
    "ls",
    "cat",
    "cp",
    "mv",
    "ln",
    "mkdir",
    "rmdir",
    "touch",
    "du",
    "df",
    "stat",
    "file",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "tee",
    "diff",
    "cmp",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "awk",
    "gawk",
    "mawk",
    "fd",
    "fdfind",
    "echo",
    "printf",
    "test",
    "[",
    "[[",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "bzip2",
    "xz",
    "zstd",
    "7z",
    "open",
    "xdg-open",
    "code",
    "vim",
    "vi",
    "nvim",
    "nano",
    "emacs",
    "bat",
    "jq",
    "yq",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "pushd",
    "popd",
    "install",
    "tree",
    "patch",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "shasum",
    "base64",
    "xxd",
    "od",
    "hexdump",
    "strings",
    "column",
    "paste",
    "join",
    "comm",
    "split",
    "fold",
    "fmt",
    "nl",
    "rev",
    "shuf",
    "seq",
    "envsubst",
    "iconv",
    "dos2unix",
    "touch",
    "chmod",
    "chown",
    "ctags",
    "wget",
    "scp",
    "rsync",
    "printenv",
    "export",
    "read",
    "local",
    "declare",
    "set",
    "unset",
    "shift",
    "return",
    "exit",
    "alias",
    "unalias",
    "hash",
    "type",
    "which",
    "whereis",
    "command",
    // publishes to a store on this machine only
    "yalc",
    // documentation and topics
    "man",
    "info",
    "tldr",
    "apropos",
    "whatis",
    "help",
    "cheat",
    "howdoi",
    // version control whose operands are files (git has its own rules)
    "hg",
    "svn",
    "jj",
    "fossil",
    "bzr",
    "darcs",
    "cvs",
    // build systems whose operands are targets or directories
    "cmake",
    "ninja",
    "meson",
    "bazel",
    "bazelisk",
    "buck",
    "buck2",
    "pants",
    "scons",
    "xcodebuild",
    "msbuild",
    // compilers, test runners and linters: files, filters and test names
    "gcc",
    "g++",
    "clang",
    "clang++",
    "cc",
    "c++",
    "go",
    "rustc",
    "javac",
    "kotlinc",
    "swiftc",
    "tsc",
    "esbuild",
    "pytest",
    "jest",
    "vitest",
    "mocha",
    "ava",
    "tap",
    "rspec",
    "phpunit",
    "eslint",
    "prettier",
    "biome",
    "ruff",
    "black",
    "isort",
    "mypy",
    "pyright",
    "flake8",
    "pylint",
    "shellcheck",
    "shfmt",
    "rubocop",
    "stylelint",
    "clippy-driver",
    "cargo-nextest",
    "nextest",
    "hyperfine",
];

/// Whether `prog` is a program this module reads: not one the registry knows, nor one
/// whose operands are files, text or topics.
pub fn unknown(patterns: &Patterns, prog: &str) -> bool {
    !OPERAND_PROGRAMS.contains(&prog) && !patterns.knows(prog)
}

/// Programs whose own rules are code (deletion, git, shells, interpreters, database
/// clients, downloads): a first word naming one, or a program the registry knows, is
/// read as the command an unknown wrapper runs.
const RULED_PROGRAMS: &[&str] = &[
    "rm",
    "unlink",
    "shred",
    "rmz",
    "srm",
    "git",
    "find",
    "dd",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "eval",
    "sudo",
    "doas",
    "run0",
    "xargs",
    "truncate",
    "chmod",
    "chown",
    "chgrp",
    "kill",
    "pkill",
    "killall",
    "curl",
    "wget",
    "python",
    "python3",
    "node",
    "perl",
    "ruby",
    "php",
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "mongosh",
    "redis-cli",
    "tee",
    "mv",
    "cp",
];

/// Whether `word` names a program whose rules judge it ([`RULED_PROGRAMS`], or one the
/// registry knows).
pub fn names_program(patterns: &Patterns, word: &str) -> bool {
    let prog = crate::rules::program(word);
    RULED_PROGRAMS.contains(&prog) || patterns.knows(prog)
}

/// The finding for `prog args` when `prog` is [`unknown`] and one of its first subcommand
/// words says it deletes, ships or writes a secret.
pub fn subcommand(prog: &str, args: &[Arg]) -> Option<Hit> {
    let (opts, positionals) = split(args, &[]);
    let looking = |name: &str| {
        matches!(
            name,
            "--help" | "-h" | "--dry-run" | "--dryrun" | "--what-if" | "--whatif" | "--plan" | "--check"
        )
    };
    if opts.iter().any(|o| looking(&o.name)) {
        return None;
    }
    // The subcommand path: the first words, those after an option left out (each may be
    // the option's value), up to the first that is no subcommand word.
    let path: Vec<&str> = positionals
        .iter()
        .filter(|p| !p.after_option)
        .map(|p| p.arg.lit().filter(|w| subcommand_shaped(w)))
        .take_while(Option::is_some)
        .flatten()
        .take(4)
        .collect();
    for (i, word) in path.iter().enumerate().take(3) {
        // Under a housekeeping group only removals are everyday (`pip cache purge`), not
        // a publish (`dart pub publish`).
        let housekeeping = path[..i].iter().any(|g| HOUSEKEEPING.contains(g));
        let next_reads = path.get(i + 1).is_some_and(|n| READING.contains(n));
        if next_reads || parts(word).any(|p| READING.contains(&p)) {
            return None;
        }
        if let Some(h) = verb_hit(prog, &path[..=i]) {
            return (!housekeeping || h.operation != "bulk_delete").then_some(h);
        }
    }
    None
}

/// The finding when the last word of `path` (the words before it its groups) is a verb.
fn verb_hit(prog: &str, path: &[&str]) -> Option<Hit> {
    let (word, groups) = path.split_last()?;
    let is = |set: &[&str]| parts(word).any(|p| set.contains(&p));
    let words = path.join(" ");
    let secret_group = groups.last().is_some_and(|g| matches!(*g, "secret" | "secrets"));
    if (secret_group && SETTING.contains(word)) || (word.starts_with("secret") && is(SETTING)) {
        return Some(hit(
            Category::CredentialModification,
            "secret_write",
            Action::ManualReview,
            format!(
                "`{prog} {words}` writes a secret through {prog}: a person must review it (whatever the agent's trust)"
            ),
        ));
    }
    if is(DELETING) || (!groups.is_empty() && is(REMOVING)) {
        return Some(hit(
            Category::MassDeletion,
            "bulk_delete",
            Action::Block,
            format!(
                "`{prog} {words}` reads as a subcommand that deletes what {prog} manages (coord has no rule of its own for {prog}); ask for approval"
            ),
        ));
    }
    (is(SHIPPING) || (!groups.is_empty() && is(PUSHING))).then(|| {
        hit(
            Category::ProductionDeployment,
            "deploy",
            Action::Block,
            format!(
                "`{prog} {words}` reads as a subcommand that deploys or publishes (coord has no rule of its own for {prog}); ask for approval"
            ),
        )
    })
}

/// Lower-case words joined by `-`, `_` or `:` (`delete`, `apps:destroy`,
/// `delete-bucket`): what a subcommand looks like, unlike a path, a file or a name.
fn subcommand_shaped(word: &str) -> bool {
    word.len() <= 40
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .split(['-', '_', ':'])
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

fn parts(word: &str) -> impl Iterator<Item = &str> {
    word.split(['-', '_', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(line: &str) -> Option<String> {
        let mut words = line.split_whitespace();
        let prog = words.next().unwrap();
        let args: Vec<Arg> = words.map(|w| Arg::Lit(w.into())).collect();
        unknown(crate::patterns::builtin(), prog)
            .then(|| subcommand(prog, &args))
            .flatten()
            .map(|h| h.operation)
    }

    #[test]
    fn subcommand_words_of_unknown_programs() {
        let cases: &[(&str, Option<&str>)] = &[
            // deleting
            ("hcloud server delete web-1", Some("bulk_delete")),
            ("sanity dataset delete staging", Some("bulk_delete")),
            ("aiven service terminate pg-prod", Some("bulk_delete")),
            ("cf delete-space dev -f", Some("bulk_delete")),
            ("nerdctl volume rm data", Some("bulk_delete")),
            ("confluent kafka topic delete orders", Some("bulk_delete")),
            ("tool --profile prod apps:destroy", Some("bulk_delete")),
            // shipping
            ("sst deploy --stage production", Some("deploy")),
            ("mkdocs2 gh-deploy --force", Some("deploy")),
            ("nx release --yes", Some("deploy")),
            ("zappa rollback production -n 1", Some("deploy")),
            ("timoni bundle apply -f bundle.cue", Some("deploy")),
            ("pod trunk push Foo.podspec", Some("deploy")),
            ("adb push app.apk /sdcard/", None),
            ("yalc publish -f", None),
            // secrets
            ("render secrets set API_KEY=x", Some("secret_write")),
            ("koyeb secrets create db-pass --value x", Some("secret_write")),
            ("mytool secret-set KEY=1", Some("secret_write")),
            // reading and housekeeping
            ("sst deploy list", None),
            ("tool release notes v1", None),
            ("tool release-notes", None),
            ("hcloud server delete --help", None),
            ("tool db drop --dry-run", None),
            ("pip cache purge", None),
            ("pdm remove requests", None),
            ("flutter pub remove http", None),
            ("dart pub publish --force", Some("deploy")),
            ("nerdctl rm web01", None),
            ("tool help delete", None),
            ("render secrets list", None),
            ("hcloud server delete test-server", Some("bulk_delete")),
            ("tool plugins remove x", None),
            // operands, not subcommands
            ("cd destroy", None),
            ("grep delete src", None),
            ("eslint destroy", None),
            ("man rm", None),
            ("pytest -k delete tests", None),
            ("tool --verbose delete", None),
            ("tool ./delete", None),
            ("tool build Release", None),
            ("tool a b c delete", None),
            ("tool Delete", None),
            // the registry's programs are the registry's
            ("kubectl get pods", None),
            ("terraform plan -destroy", None),
        ];
        for (line, want) in cases {
            assert_eq!(judge(line).as_deref(), *want, "{line}");
        }
    }
}
