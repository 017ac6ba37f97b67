//! What a command does, program by program, where it takes code to say: git, rm/find,
//! SQL clients, writers of credential files (argv patterns of infrastructure CLIs and
//! migration runners are data: [`crate::patterns`]). Each rule reads a typed
//! argv (see [`crate::walk::Arg`]); wrappers (`sudo`, `env`, `xargs`, `sh -c`, ...) are
//! peeled off by [`crate::Analyzer`] before a rule sees the program they run.

pub use crate::hit::Hit;
use crate::hit::hit;
use crate::walk::Arg;
pub use crate::walk::RUNTIME_OPERAND;
use coord_domain::guardrails::{Action, Category};

/// The program name of a command word: `/usr/bin/git` is `git`.
pub fn program(word: &str) -> &str {
    match word.rsplit('/').next().unwrap_or(word) {
        // pnpm's own short name.
        "pn" => "pnpm",
        name => name,
    }
}

/// Branches nobody deletes or force-pushes without a person: an unknown one counts too.
pub fn protected(branch: Option<&str>) -> bool {
    match branch {
        None => true,
        Some(b) => {
            let b = b.trim_start_matches("refs/heads/");
            matches!(b, "main" | "master" | "HEAD" | "") || b.starts_with("release/") || b.starts_with("production")
        }
    }
}

fn short_flag_has(arg: &str, c: char) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 1 && arg[1..].contains(c)
}

// ---------------------------------------------------------------- git

/// Git global options that take a value as the next word.
const GIT_VALUE_OPTIONS: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--exec-path",
];

/// Where git's subcommand is in `args` (after its global options), and the `-c`
/// settings given before it (`key=value`, as written).
pub fn git_subcommand(args: &[Arg]) -> (usize, Vec<&Arg>) {
    let mut i = 0;
    let mut configs = Vec::new();
    while i < args.len() {
        let a = args[i].raw();
        if GIT_VALUE_OPTIONS.contains(&a) {
            if matches!(a, "-c" | "--config-env")
                && let Some(v) = args.get(i + 1)
            {
                configs.push(v);
            }
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    (i, configs)
}

/// Git's own commands (`git --list-cmds=main`, git 2.47) and the extensions installed
/// almost everywhere: a subcommand not among them is an alias or an external `git-NAME`
/// program, which only the repository's configuration tells apart.
pub const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "gc",
    "get-tar-commit-id",
    "grep",
    "gui",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "instaweb",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-octopus",
    "merge-one-file",
    "merge-ours",
    "merge-recursive",
    "merge-resolve",
    "merge-subtree",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "subtree",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
    "lfs",
    "filter-repo",
];

/// What a git subcommand that is not one of [`GIT_COMMANDS`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitAlias {
    /// An alias: git runs this instead (`push --force`), or with `!` this shell command.
    Expands(String),
    /// Not an alias of the repository's configuration: an external `git-NAME` program.
    External,
    /// Not known: the caller did not say what the repository's aliases are.
    Unknown,
}

/// What `git NAME` runs, given the aliases set on the command line (`-c alias.NAME=…`,
/// which win) and the repository's (`None`: not known).
pub fn git_alias(
    name: &str,
    configs: &[&Arg],
    aliases: Option<&std::collections::BTreeMap<String, String>>,
) -> GitAlias {
    let key = format!("alias.{}", name.to_ascii_lowercase());
    let given = configs.iter().rev().find_map(|c| {
        let (k, v) = c.raw().split_once('=')?;
        (k.to_ascii_lowercase() == key).then(|| v.to_string())
    });
    if let Some(v) = given {
        return GitAlias::Expands(v);
    }
    match aliases {
        Some(table) => table
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map_or(GitAlias::External, |(_, v)| GitAlias::Expands(v.clone())),
        None => GitAlias::Unknown,
    }
}

/// The words of a git alias's value, as git splits it (quotes and backslashes).
pub fn alias_words(value: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut in_word) = (Vec::new(), String::new(), None, false);
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (_, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// A boolean as git reads it: `false`, `no`, `off`, `0` (any case) and the empty value
/// are false; a key given without `=` is true.
pub fn git_false(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "false" | "no" | "off" | "0" | ""
        )
    })
}

/// `git config` writing `key` = `value` (any spelling: `git config K V`, `--add`,
/// `--replace-all`, `git config set K V`, with scope options), if that is what it does.
pub fn git_config_write(rest: &[Arg]) -> Option<(String, Option<&Arg>)> {
    const VALUE_OPTIONS: &[&str] = &["-f", "--file", "--blob", "--type", "--default", "--comment", "--value"];
    let mut words = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].raw();
        if VALUE_OPTIONS.contains(&a) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            // Reading or removing, not writing.
            if matches!(
                a,
                "--get"
                    | "--get-all"
                    | "--get-regexp"
                    | "--get-urlmatch"
                    | "-l"
                    | "--list"
                    | "--unset"
                    | "--unset-all"
                    | "-e"
                    | "--edit"
                    | "--remove-section"
                    | "--rename-section"
            ) {
                return None;
            }
        } else {
            words.push(&rest[i]);
        }
        i += 1;
    }
    if words.first().is_some_and(|w| w.raw() == "set") {
        words.remove(0);
    } else if words.first().is_some_and(|w| {
        matches!(
            w.raw(),
            "get" | "list" | "unset" | "rename-section" | "remove-section" | "edit"
        )
    }) {
        return None;
    }
    let key = words.first()?.raw().to_ascii_lowercase();
    Some((key, words.get(1).copied()))
}

fn reflog_expiry() -> Hit {
    hit(
        Category::GitForce,
        "rewrite_history",
        Action::Block,
        "expiring or deleting reflog entries throws away the only record of commits a reset or rebase left behind; leave the reflog to git's own expiry, or ask for approval",
    )
}

/// A `-c` setting that makes garbage collection expire reflog entries early
/// (`gc.reflogExpire=now`, `gc.reflogExpireUnreachable=0`). A `--config-env` names a
/// variable: its value is unknown, so it expires them.
fn expires_reflog(setting: &str) -> bool {
    let (key, value) = setting.split_once('=').unwrap_or((setting, ""));
    let key = key.to_ascii_lowercase();
    key.starts_with("gc.") && key.contains("reflogexpire") && !keeps_reflog(value)
}

/// An expiry that keeps reflog entries a week or more (git's defaults are 30 and 90
/// days): `never`, `false`, `2.weeks`, `90 days`, `3.months.ago`. Anything else — `now`,
/// `all`, `0`, hours, a date, a value not known — expires what a recovery needs.
fn keeps_reflog(value: &str) -> bool {
    let value = value.to_ascii_lowercase();
    if matches!(value.as_str(), "never" | "false") {
        return true;
    }
    let words: Vec<&str> = value
        .split(['.', ' ', '_'])
        .filter(|w| !w.is_empty() && *w != "ago")
        .collect();
    let [n, unit] = words[..] else { return false };
    let Ok(n) = n.parse::<u64>() else { return false };
    match unit.trim_end_matches('s') {
        "day" => n >= 7,
        "week" | "month" | "year" => n >= 1,
        _ => false,
    }
}

/// The settings git takes from its environment, as the `-c KEY=VALUE` arguments they
/// amount to: `GIT_CONFIG_KEY_<n>` with `GIT_CONFIG_VALUE_<n>` (a value only known at run
/// time stays so). `GIT_CONFIG_PARAMETERS`, git's own quoted list, is taken as unknown.
pub fn git_env_settings(env: &[(String, Option<String>)]) -> Vec<Arg> {
    let value = |name: &str| env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    for (name, key) in env {
        if name == "GIT_CONFIG_PARAMETERS" {
            out.extend([Arg::Lit("-c".into()), Arg::Unknown(format!("${name}"))]);
        }
        let Some(n) = name.strip_prefix("GIT_CONFIG_KEY_") else {
            continue;
        };
        let setting = match (key, value(&format!("GIT_CONFIG_VALUE_{n}")).flatten()) {
            (Some(k), Some(v)) => Arg::Lit(format!("{k}={v}")),
            _ => Arg::Unknown(format!("${name}")),
        };
        out.extend([Arg::Lit("-c".into()), setting]);
    }
    out
}

pub fn git(args: &[Arg]) -> Vec<Hit> {
    let (i, given) = git_subcommand(args);
    let Some(sub) = args.get(i) else { return Vec::new() };
    let Some(sub) = sub.lit() else {
        return vec![hit(
            Category::Unverifiable,
            "dynamic_git_command",
            Action::Block,
            "the git subcommand is only known at run time",
        )];
    };
    let rest = &args[i + 1..];
    // Every word that looks like an option is taken for one, even after a `--`: which
    // `--` ends the options depends on which options take a value (`git push --repo --
    // --force` force-pushes), so reading them all as options is the side that fails closed.
    let call = GitCall {
        sub,
        rest,
        flags: rest.iter().map(Arg::raw).filter(|a| a.starts_with('-')).collect(),
        positional: rest.iter().filter(|a| !a.raw().starts_with('-')).collect(),
    };
    match sub {
        "push" => git_push(&call),
        "reset" if call.has(&["--hard"]) => vec![hit(
            Category::GitForce,
            "hard_reset",
            Action::Block,
            "git reset --hard discards uncommitted work, possibly another agent's in a shared checkout; commit or stash first, or ask for approval",
        )],
        "clean" => git_clean(&call, args, &given),
        "branch" => {
            let deleting = call.has(&["--delete", "-D", "-d"])
                || call
                    .flags
                    .iter()
                    .any(|f| short_flag_has(f, 'D') || short_flag_has(f, 'd'));
            if !deleting {
                return Vec::new();
            }
            if call.positional.is_empty() {
                return vec![branch_delete(None)];
            }
            // `-d` deletes only a merged branch: nothing is lost, no warning. A forced
            // delete (`-D`, `--force`) may drop unmerged commits: worth a warning.
            let forced = call.has(&["-D", "--force", "-f"]) || call.flags.iter().any(|f| short_flag_has(f, 'D'));
            call.positional
                .iter()
                .map(|b| branch_delete(b.lit()))
                .filter(|h| forced || h.action != Action::Warn)
                .collect()
        }
        "stash" if matches!(call.positional.first().map(|a| a.raw()), Some("drop" | "clear")) => vec![hit(
            Category::GitForce,
            "drop_stash",
            Action::Block,
            "git stash drop/clear deletes stashed work for good (possibly another agent's); apply it or leave it, or ask for approval",
        )],
        "checkout" | "restore" | "switch" => git_discard(&call),
        "update-ref" if call.has(&["-d"]) => vec![branch_delete(call.positional.first().and_then(|r| r.lit()))],
        // Expiring or deleting reflog entries removes what `git reflog` recovers lost
        // commits from (a reset, a rebase, a deleted branch); `gc` then deletes them.
        "reflog"
            if matches!(call.positional.first().map(|a| a.raw()), Some("expire" | "delete"))
                && !call.has(&["--dry-run", "-n"]) =>
        {
            vec![reflog_expiry()]
        }
        // `git -c gc.reflogExpire=now gc`: the same expiry, as garbage collection's setting
        // (`git maintenance run` runs gc).
        "gc" | "maintenance"
            if given
                .iter()
                .map(|c| c.raw())
                .chain(args[..i].iter().filter_map(|a| a.raw().strip_prefix("--config-env=")))
                .any(expires_reflog)
                && !call.has(&["--dry-run", "-n"]) =>
        {
            vec![reflog_expiry()]
        }
        "rm" | "lfs" | "checkout-index" => git_rm_or_lfs(&call),
        "filter-branch" | "filter-repo" => vec![hit(
            Category::GitForce,
            "rewrite_history",
            Action::Block,
            "rewriting history invalidates every other clone; ask for approval",
        )],
        "config" => match git_config_write(rest) {
            // The setting by which every later `gc` expires the reflog.
            Some((key, Some(value))) if expires_reflog(&format!("{key}={}", value.raw())) => {
                vec![reflog_expiry()]
            }
            Some((key, value)) if key == "clean.requireforce" && git_false(value.map(Arg::raw)) => vec![hit(
                Category::GitForce,
                "clean_force",
                Action::Block,
                "turning clean.requireForce off makes every later git clean delete untracked files for good; leave it on and pass -f when you mean it, or ask for approval",
            )],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// A git subcommand's words after the subcommand, as git's rules read them.
struct GitCall<'a> {
    sub: &'a str,
    rest: &'a [Arg],
    flags: Vec<&'a str>,
    positional: Vec<&'a Arg>,
}

impl GitCall<'_> {
    /// The flags, without the values of `value_options` (`--push-option --dry-run`:
    /// `--dry-run` is the option's value there, not a flag).
    fn flags_without_values(&self, value_options: &[&str]) -> Vec<&str> {
        let mut out = Vec::new();
        let mut skip = false;
        for a in self.rest {
            let raw = a.raw();
            if std::mem::take(&mut skip) {
                continue;
            }
            if raw.starts_with('-') {
                out.push(raw);
                skip = value_options.contains(&raw);
            }
        }
        out
    }

    /// Whether one of `names` is given.
    fn has(&self, names: &[&str]) -> bool {
        // Git takes any unambiguous prefix of a long option (`--hard` as `--har`): a long
        // flag that is a prefix of a name (four characters at least) is that name.
        self.flags.iter().any(|f| {
            names.contains(f)
                || names.iter().any(|n| f.starts_with(&format!("{n}=")))
                || (f.starts_with("--") && f.len() >= 5 && names.iter().any(|n| n.starts_with(*f)))
        })
    }
}

/// `git push`: a force push, and the branches it deletes.
fn git_push(call: &GitCall<'_>) -> Vec<Hit> {
    let flags = &call.flags;
    // The last of `--dry-run`/`-n` and `--no-dry-run` wins; an option's value
    // (`--push-option --dry-run`) is no flag.
    let dry_run = call
        .flags_without_values(&["-o", "--push-option", "--repo", "--receive-pack", "--exec"])
        .iter()
        .rev()
        .find_map(|f| match *f {
            "--dry-run" | "-n" => Some(true),
            "--no-dry-run" => Some(false),
            _ => None,
        })
        .unwrap_or(false);
    if dry_run {
        return Vec::new();
    }
    let mut hits = Vec::new();
    // Git takes any unambiguous prefix of a long option (`--forc`), and an option
    // it does not know fails the push: anything spelt like a force is one.
    let forcing: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| f.starts_with("--force") || (f.len() >= 5 && "--force".starts_with(*f)))
        .collect();
    let force = call.has(&["--mirror"]) || !forcing.is_empty() || flags.iter().any(|f| short_flag_has(f, 'f'));
    // refspecs after the remote
    let refspecs: Vec<&Arg> = call.positional.iter().skip(1).copied().collect();
    let plus = refspecs.iter().any(|r| r.raw().starts_with('+'));
    // `--force-with-lease=BRANCH:COMMIT` overwrites the remote branch only if it is still
    // at the commit named: nobody's work is lost. Not for a protected branch.
    let pinned = |f: &str| {
        f.strip_prefix("--force-with-lease=")
            .and_then(|v| v.split_once(':'))
            .is_some_and(|(r, commit)| !r.is_empty() && !commit.is_empty() && !protected(Some(r)))
    };
    let destinations_unprotected = refspecs
        .iter()
        .all(|r| r.lit().is_some_and(|raw| !protected(raw.rsplit(':').next())));
    let only_pinned = !call.has(&["--mirror"])
        && !flags.iter().any(|f| short_flag_has(f, 'f'))
        && forcing.iter().any(|f| pinned(f))
        && forcing.iter().all(|f| pinned(f) || *f == "--force-if-includes")
        && destinations_unprotected;
    if plus || (force && !only_pinned) {
        hits.push(hit(
            Category::GitForce,
            "force_push",
            Action::Block,
            "a force push rewrites the remote branch and can destroy other agents' commits; push without --force (rebase or merge first), or ask for approval",
        ));
    }
    // A release tag pushed (`--tags`, `v1.2.3`, `refs/tags/…`) starts what release
    // workflows do; deleting one withdraws it.
    let tag = |raw: &str| release_tag(raw.trim_start_matches('+').rsplit(':').next().unwrap_or(raw));
    // A refspec only known at run time named for a tag or version (`"$TAG"`).
    let tag_variable = |r: &Arg| {
        r.lit().is_none() && {
            let raw = r.raw().to_ascii_lowercase();
            raw.contains("tag") || raw.contains("version")
        }
    };
    if call.has(&["--tags", "--follow-tags"]) || refspecs.iter().any(|r| r.lit().is_some_and(tag) || tag_variable(r)) {
        hits.push(hit(
            Category::ProductionDeployment,
            "release_tag_push",
            Action::Block,
            "pushing or deleting a release tag starts (or withdraws) a release; ask for approval",
        ));
    }
    // Hosts that build and release whatever is pushed to them.
    if let Some(remote) = call.positional.first().and_then(|r| r.lit())
        && deploy_remote(remote, None)
    {
        hits.push(deploy_push(remote));
    }
    let deleting = call.has(&["--delete", "-d"]);
    for r in refspecs.iter().filter(|r| !r.lit().is_some_and(tag)) {
        let raw = r.raw();
        let target = if deleting {
            Some(raw.trim_start_matches('+'))
        } else if let Some(dst) = raw.strip_prefix(':') {
            Some(dst)
        } else {
            continue;
        };
        let target = r.lit().and(target);
        hits.push(branch_delete(target));
    }
    if deleting && refspecs.is_empty() {
        hits.push(branch_delete(None));
    }
    hits
}

/// A git remote that deploys what it receives: one named `heroku` or `dokku` (the names
/// their tools give it), or whose URL is Heroku's git host or a Dokku host's `dokku@`.
/// The Bash hooks ask it of the remote written on the line (a name or a URL), git's
/// pre-push hook of the remote's name and URL.
/// `git rm -r .`: every tracked file deleted from the work tree (`--cached` only untracks
/// them); `git checkout-index -a -f` writes the index over it. `git lfs migrate import|export` rewrites the commits it converts unless told not
/// to (`--no-rewrite`); `info` only reports.
fn git_rm_or_lfs(call: &GitCall<'_>) -> Vec<Hit> {
    let word = |i: usize| call.positional.get(i).and_then(|a| a.lit());
    if call.sub == "rm" && git_rm_everything(call) {
        return vec![hit(
            Category::MassDeletion,
            "recursive_delete",
            Action::Block,
            "git rm -r of the whole tree deletes every tracked file; name the files, use --cached to untrack, or ask for approval",
        )];
    }
    let lfs_rewrite = call.sub == "lfs"
        && word(0) == Some("migrate")
        && matches!(word(1), Some("import" | "export"))
        && !call.has(&["--no-rewrite"]);
    // `git checkout-index -a -f`: every file of the index written over the work tree.
    let given = |long: &str, short: char| {
        call.flags
            .iter()
            .any(|f| *f == long || (!f.starts_with("--") && f.contains(short)))
    };
    // (`--prefix=DIR/` writes the copy elsewhere.)
    let elsewhere = call.rest.iter().enumerate().any(|(i, a)| {
        let dir = match a.raw().strip_prefix("--prefix=") {
            Some(dir) => Some(dir),
            None if a.raw() == "--prefix" => call.rest.get(i + 1).map(Arg::raw),
            None => None,
        };
        dir.is_some_and(|dir| !normal_parts(dir.trim_start_matches('/')).is_empty() && dir != "./")
    });
    let overwrite_all = call.sub == "checkout-index"
        && (given("--all", 'a') || call.flags.contains(&"--stdin"))
        && given("--force", 'f')
        && !elsewhere;
    if overwrite_all {
        return vec![hit(
            Category::GitForce,
            "discard_changes",
            Action::Block,
            "git checkout-index --all --force overwrites every uncommitted change in the work tree; commit or stash first, or ask for approval",
        )];
    }
    if lfs_rewrite {
        return vec![hit(
            Category::GitForce,
            "rewrite_history",
            Action::Block,
            "git lfs migrate rewrites history, which invalidates every other clone; use --no-rewrite, or ask for approval",
        )];
    }
    Vec::new()
}

/// Whether `git rm` deletes the whole tree from the work tree: recursive, neither
/// `--cached` nor a dry run, over `.`, `*`, `:/` or `/`.
fn git_rm_everything(call: &GitCall<'_>) -> bool {
    let recursive = call
        .flags
        .iter()
        .any(|f| *f == "-r" || (!f.starts_with("--") && f.contains('r')));
    let cached = call
        .flags
        .iter()
        .any(|f| matches!(*f, "--cached" | "--dry-run") || (!f.starts_with("--") && f.contains('n')));
    let everything = call.positional.iter().any(|a| {
        let raw = a.raw().trim_matches(['\'', '"']);
        let top = raw
            .strip_prefix(":/")
            .or_else(|| raw.strip_prefix(":(top)"))
            .or_else(|| raw.strip_prefix(":(glob)"));
        let path = top.unwrap_or(raw);
        matches!(path, "" | "*" | "**" | "./*") || normal_parts(path).is_empty() || a.lit().is_none()
    });
    recursive && !cached && everything
}

pub fn deploy_remote(remote: &str, url: Option<&str>) -> bool {
    let deploys = |u: &str| {
        let u = u.to_ascii_lowercase();
        u.contains("git.heroku.com") || u.starts_with("dokku@") || u.contains("://dokku@")
    };
    matches!(remote, "heroku" | "dokku") || deploys(remote) || url.is_some_and(deploys)
}

/// The finding for a push to a remote that deploys ([`deploy_remote`]).
pub fn deploy_push(remote: &str) -> Hit {
    hit(
        Category::ProductionDeployment,
        "deploy",
        Action::Block,
        format!("a push to {remote} deploys the app (the host builds and releases what it receives); ask for approval"),
    )
}

/// A remote ref that is a release tag: any tag (`refs/tags/…`), or a name spelt like a
/// version (`v1.2.3`). The Bash hooks' push rule and git's pre-push hook both ask this.
pub fn release_tag(remote_ref: &str) -> bool {
    remote_ref.starts_with("refs/tags/") || version_like(remote_ref)
}

/// `v1.2`, `1.2.3`, `v2.0.0-rc.1`: a version tag's name.
fn version_like(name: &str) -> bool {
    let n = name.strip_prefix('v').unwrap_or(name);
    let mut parts = n.split(['.', '-', '+']);
    let (major, minor) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    !major.is_empty()
        && major.chars().all(|c| c.is_ascii_digit())
        && !minor.is_empty()
        && minor.chars().all(|c| c.is_ascii_digit())
}

/// `git clean`: forced (by a flag or by configuration that turns the safety off), and not
/// a dry run. `args` are git's whole arguments; `given` its `-c` configuration.
fn git_clean(call: &GitCall<'_>, args: &[Arg], given: &[&Arg]) -> Vec<Hit> {
    let flags = &call.flags;
    // `-n` wins over `-f`, in a bundle too (`-fdn`); `-e PATTERN` takes a value.
    let real = call.flags_without_values(&["-e", "--exclude"]);
    let dry_run = real
        .iter()
        .any(|f| matches!(*f, "--dry-run" | "-n") || short_flag_has(f, 'n'));
    // Limited to build output (`git clean -xdf dist`): a rebuild brings it back.
    let scoped_paths = !call.positional.is_empty() && call.positional.iter().all(|p| p.lit().is_some_and(scoped));
    // Every spelling git reads as false turns the safety off (`=0`, `=no`, `=off`,
    // `=`), and so may a value taken from the environment (`--config-env`).
    let unsafe_config = given.iter().any(|c| {
        let raw = c.raw();
        let (key, value) = raw.split_once('=').map_or((raw, None), |(k, v)| (k, Some(v)));
        key.trim().eq_ignore_ascii_case("clean.requireforce") && (git_false(value) || c.lit().is_none())
    }) || args
        .windows(2)
        .any(|w| w[0].raw() == "--config-env" && w[1].raw().to_ascii_lowercase().starts_with("clean.requireforce="));
    let forced = call.has(&["--force"]) || flags.iter().any(|f| short_flag_has(f, 'f')) || unsafe_config;
    if forced && !dry_run && !scoped_paths {
        vec![hit(
            Category::GitForce,
            "clean_force",
            Action::Block,
            "git clean -f deletes untracked files for good; run git clean -n to see what it would delete, or ask for approval",
        )]
    } else {
        Vec::new()
    }
}

/// `git checkout`, `git restore`, `git switch`: uncommitted changes discarded, of the
/// whole tree or of the files named.
fn git_discard(call: &GitCall<'_>) -> Vec<Hit> {
    let (sub, positional) = (call.sub, &call.positional);
    let forced = call.has(&["--force", "-f", "--discard-changes"]);
    let whole_tree = positional.iter().any(|p| matches!(p.raw(), "." | ":/" | "*" | "./"));
    let only_staged = sub == "restore" && call.has(&["--staged", "-S"]) && !call.has(&["--worktree", "-W"]);
    if forced || (whole_tree && !only_staged) {
        vec![hit(
            Category::GitForce,
            "discard_changes",
            Action::Block,
            "this discards uncommitted changes in the whole tree; restore single files by name, or ask for approval",
        )]
    } else {
        // Named files: an everyday edit, not worth an agent's attention (another agent's
        // files are guarded by their locks).
        Vec::new()
    }
}

// ---------------------------------------------------------------- coord itself

/// The operations that are a person's decisions (a test in coord-service checks this list
/// against the registry: every administrative operation that changes something).
pub const PERSON_OPERATIONS: &[&str] = &[
    "decide_approval",
    "apply_profiles",
    "assign_profile",
    "unassign_profile",
    "set_guardrail",
    "reset_guardrail",
    "set_network_policy",
    "reset_network_policy",
    "set_verification_policy",
    "delete_verification_policy",
    "create_api_key",
    "revoke_api_key",
    "prune_audit",
    "prune_memories",
    "receive_github_delivery",
    "break_lock",
    "cancel_task",
    "requeue_task",
];

/// `coord` subcommands (as consecutive words) that make a person's decision, in every
/// spelling the grammar accepts (its aliases too: coord-cli's `args` tests hold the two
/// together).
pub const PERSON_COMMANDS: &[&[&str]] = &[
    &["approval", "approve"],
    &["approval", "deny"],
    &["approvals", "approve"],
    &["approvals", "deny"],
    &["profile", "apply"],
    &["profile", "assign"],
    &["profile", "unassign"],
    &["key"],
    &["keys"],
    &["cloud", "env"],
    &["rules", "set"],
    &["rules", "disable"],
    &["rules", "enable"],
    &["rules", "reset"],
    &["network", "set"],
    &["network", "reset"],
    &["verify", "apply"],
    &["verify", "delete"],
    &["audit", "prune"],
    &["memory", "prune"],
    &["ui"],
    &["lock", "break"],
    &["work", "cancel"],
    &["work", "requeue"],
];

fn person(operation: &str, reason: String) -> Hit {
    hit(Category::PersonDecision, operation, Action::Block, reason)
}

/// The options every coord command takes that take a value (`--db URL`): their values
/// are not command words (coord-cli's `args` tests hold the list to the grammar).
pub const COORD_VALUE_OPTIONS: &[&str] = &[
    "--db",
    "--agent-id",
    "--agent-type",
    "--remote",
    "--api-key",
    "--workspace",
    "--file-size-limit",
    "--working-memory-budget",
    "--recall-half-life-days",
    "--coordination-domain",
    "--model-endpoint",
];

/// A coord line's words without its options (and their values), and whether one of its
/// first two words — the command — is only known at run time.
/// The index where the request words of `coord call OPERATION` begin (the end when the
/// line is no `coord call`).
fn call_request_start(args: &[Arg]) -> usize {
    let mut value_next = false;
    let mut seen_call = false;
    for (i, a) in args.iter().enumerate() {
        let raw = a.raw();
        if std::mem::take(&mut value_next) {
            continue;
        }
        if raw == "--" {
            break;
        }
        if raw.starts_with('-') {
            value_next = COORD_VALUE_OPTIONS.contains(&raw);
            continue;
        }
        if seen_call {
            return i + 1;
        }
        if raw != "call" {
            break;
        }
        seen_call = true;
    }
    args.len()
}

fn coord_words(args: &[Arg]) -> (Vec<&str>, bool) {
    let mut words = Vec::new();
    let mut dynamic = false;
    let mut value_next = false;
    for a in args {
        let raw = a.raw();
        if std::mem::take(&mut value_next) {
            continue;
        }
        if raw.starts_with('-') {
            value_next = COORD_VALUE_OPTIONS.contains(&raw);
            continue;
        }
        if words.len() < 2 && a.lit().is_none() {
            dynamic = true;
        }
        words.push(raw);
    }
    (words, dynamic)
}

/// `coord …` run by an agent's tool: a person's decision (approving, changing profiles,
/// policies, rules or keys, pruning, the dashboard's sign-in link), or another agent's
/// identity borrowed with `--agent-id` / `--agent-type`.
pub fn coord(args: &[Arg]) -> Vec<Hit> {
    let mut hits = Vec::new();
    // After `coord call OPERATION` every word is the request's (`--agent-id` is a field of
    // query_audit, `--file-path ui` names a file): coord's grammar reads them so.
    let (full, args) = (args, &args[..call_request_start(args)]);
    if args.iter().any(|a| {
        let flag = a.raw().split('=').next().unwrap_or("");
        matches!(flag, "--agent-id" | "--agent-type")
    }) {
        hits.push(person(
            "borrowed_identity",
            "an agent acts as itself: coord refuses --agent-id and --agent-type from inside an agent's session".into(),
        ));
    }
    let (words, dynamic) = coord_words(args);
    if dynamic {
        hits.push(hit(
            Category::Unverifiable,
            "dynamic_command",
            Action::Block,
            "the coord command this line runs is only known at run time; write it out",
        ));
    }
    if let Some(command) = PERSON_COMMANDS
        .iter()
        .find(|c| words.windows(c.len()).any(|w| w == **c))
    {
        hits.push(person(
            "person_decision",
            format!(
                "`coord {}` is a person's decision: it cannot be made from an agent's session (a person makes it in \
                 the dashboard or in their own terminal); ask for it instead",
                command.join(" ")
            ),
        ));
    }
    if let Some(op) = words
        .windows(2)
        // coord trims the name it is given (`' break_lock'`).
        .find(|w| w[0] == "call" && PERSON_OPERATIONS.contains(&w[1].trim()))
        .map(|w| w[1])
    {
        hits.push(person(
            "person_decision",
            format!("{op} is a person's decision: it cannot be made from an agent's session; ask for it instead"),
        ));
    }
    if !dynamic && full.iter().any(|a| a.lit().is_none()) && words.first() == Some(&"call") {
        hits.push(hit(
            Category::Unverifiable,
            "dynamic_command",
            Action::Block,
            "the operation `coord call` runs is only known at run time; write it out",
        ));
    }
    hits
}

/// Whether `path` is coord's own state: its store, its journals, its directory.
pub fn coord_state(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.split('/').any(|part| part == ".coord") || base.starts_with("coord.db")
}

/// An edit (a runtime's file tool, a task's changed files) of coord's own state: its
/// store, socket and configuration under `.coord/` are changed through coord only.
pub fn coord_state_edit() -> Hit {
    person(
        "coord_state_write",
        "coord's store, socket and settings (.coord/) are changed through coord, not edited (that is how \
         locks, approvals, the audit trail and coord's configuration stay a person's); use coord's commands"
            .into(),
    )
}

/// Writing coord's own state around coord: a SQL client opened on its store, or a file
/// command changing anything under `.coord/`.
pub fn coord_state_write(prog: &str, args: &[Arg]) -> Option<Hit> {
    let touches = |skip_first: bool| {
        args.iter()
            .filter(|a| !a.raw().starts_with('-'))
            .skip(usize::from(skip_first))
            .filter_map(Arg::lit)
            .any(coord_state)
    };
    let writes = match prog {
        "sqlite3" | "sqlite" | "litecli" | "sqlite-utils" => touches(false),
        "rm" | "mv" | "cp" | "shred" | "truncate" | "dd" | "ln" | "install" | "chmod" | "touch" => touches(false),
        _ => false,
    };
    writes.then(|| {
        person(
            "coord_state_write",
            "coord's store, socket and settings are changed through coord, not around it (that is how locks, \
             approvals and the audit trail stay true); use coord's commands"
                .into(),
        )
    })
}

/// The shell command a git configuration given with `-c KEY=VALUE` runs, if any: an
/// alias or a credential helper starting with `!`, `core.sshCommand`, `core.pager`,
/// `core.editor`, `core.fsmonitor`, `sequence.editor`, `diff.external`, `gpg.program`,
/// `*.textconv`, `filter.*.clean|smudge|process`.
pub fn git_config_command(kv: &str) -> Option<&str> {
    let (key, value) = kv.split_once('=')?;
    let key = key.to_ascii_lowercase();
    if key.starts_with("alias.") || key == "credential.helper" || key.starts_with("credential.") {
        return value.strip_prefix('!');
    }
    let runs = matches!(
        key.as_str(),
        "core.sshcommand"
            | "core.pager"
            | "core.editor"
            | "core.fsmonitor"
            | "sequence.editor"
            | "diff.external"
            | "gpg.program"
    ) || key.ends_with(".textconv")
        || (key.starts_with("filter.") && [".clean", ".smudge", ".process"].iter().any(|e| key.ends_with(e)));
    runs.then_some(value)
}

fn branch_delete(branch: Option<&str>) -> Hit {
    if protected(branch) {
        hit(
            Category::BranchDeletion,
            "delete_protected_branch",
            Action::Block,
            format!(
                "deleting {} needs a person's approval",
                branch.map_or("a branch only known at run time".to_string(), |b| format!("branch {b}"))
            ),
        )
    } else {
        hit(
            Category::BranchDeletion,
            "delete_branch",
            Action::Warn,
            format!("deletes branch {}", branch.unwrap_or_default()),
        )
    }
}

// ---------------------------------------------------------------- deletion

/// Directories agents may delete recursively without asking: build outputs and caches
/// that a build regenerates.
const ARTIFACTS: &[&str] = &[
    "node_modules",
    "target",
    "build",
    "dist",
    "out",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "coverage",
    ".coverage",
    "htmlcov",
    ".next",
    ".nuxt",
    ".turbo",
    ".cache",
    ".parcel-cache",
    ".gradle",
    ".tox",
    ".eggs",
    ".svelte-kit",
    "_site",
    "_build",
    ".angular",
    ".docusaurus",
    ".expo",
    ".nyc_output",
    ".nox",
    ".dart_tool",
    ".hypothesis",
    "tmp",
    "cov",
    "cover",
    "obj",
    ".sass-cache",
    "storybook-static",
    ".terraform",
    "elm-stuff",
    ".stack-work",
    "dist-newstyle",
    "zig-cache",
    ".zig-cache",
    "zig-out",
    ".build",
    "DerivedData",
    ".ipynb_checkpoints",
    ".pnpm-store",
    ".serverless",
    ".aws-sam",
    ".vite",
    ".jest-cache",
    ".eslintcache",
    ".stylelintcache",
    "site-packages",
    "_cache",
];

/// Whether a recursive deletion of `path` is scoped: below a temp root (not the root
/// itself, nor all of it), or a relative path through a build-artifact directory, and
/// never climbing out with `..`.
pub fn scoped(path: &str) -> bool {
    // `node_modules/{..,}/.git`: brace expansion makes other paths of it.
    if path.contains(['{', '}']) {
        return false;
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") || parts.is_empty() {
        return false;
    }
    // A named directory of the temporary directory, or of the user's cache (`~/.cache/pip`,
    // macOS's `~/Library/Caches/Homebrew`: what is there is downloaded again).
    for root in [
        "/tmp/",
        "/var/tmp/",
        "~/.cache/",
        "$HOME/.cache/",
        "${HOME}/.cache/",
        "~/Library/Caches/",
        "$HOME/Library/Caches/",
        "${HOME}/Library/Caches/",
    ] {
        if let Some(rest) = path.strip_prefix(root) {
            let first = rest.split('/').next().unwrap_or_default();
            return !first.is_empty() && !first.contains('*') && !first.contains('?');
        }
    }
    if path.starts_with('/') || path.starts_with('~') || path.starts_with('$') {
        return false;
    }
    // A glob of the current directory is everything in it, unless what it must end with
    // makes it an artefact (`*.egg-info`).
    let artefact_glob = |l: &str| {
        l.strip_prefix('*')
            .is_some_and(|rest| rest.ends_with(".egg-info") && !rest.contains(['*', '?', '[']))
            || (l.starts_with('*') && LEFTOVERS.contains(&l))
    };
    // A build's leftover by its name (`e2e.test`, `lib.so`, `*.so`).
    let leftover = |l: &str| {
        artefact_glob(l)
            || (!l.contains(['*', '?', '['])
                && LEFTOVERS.iter().any(|g| {
                    *g == l
                        || g.strip_prefix('*')
                            .is_some_and(|ext| !ext.contains('[') && l.ends_with(ext))
                }))
    };
    let last = parts.last().copied().unwrap_or_default();
    (parts.iter().any(|p| artefact_dir(p)) || leftover(last) || named_file(last))
        && !(last.starts_with('*') && parts.len() == 1 && !artefact_glob(last))
}

/// A file by its name (`prometheus_alerts.yaml`, `go.work.sum`): a data or source file's
/// extension, no glob. `rm -rf` of it deletes that one file.
fn named_file(part: &str) -> bool {
    const FILE_EXTENSIONS: &[&str] = &[
        "yaml",
        "yml",
        "json",
        "toml",
        "txt",
        "md",
        "rst",
        "lock",
        "sum",
        "work",
        "mod",
        "log",
        "out",
        "xml",
        "html",
        "csv",
        "tsv",
        "ini",
        "cfg",
        "conf",
        "properties",
        "py",
        "rb",
        "go",
        "rs",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "o",
        "so",
        "a",
        "zip",
        "tar",
        "gz",
        "tgz",
        "bz2",
        "xz",
        "zst",
        "whl",
        "jar",
        "png",
        "jpg",
        "svg",
        "gif",
        "pdf",
    ];
    !part.starts_with('.')
        && !part.contains(['*', '?', '[', '{'])
        && part
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext))
}

/// A directory a build or a tool makes: one of [`ARTIFACTS`], an `*.egg-info`, or a name
/// ending in what it holds (`appimage-build`, `docs_out`, `webpack-cache`).
fn artefact_dir(part: &str) -> bool {
    const OUTPUT_ENDS: &[&str] = &[
        "-build", "_build", "-cache", "_cache", "-out", "_out", "-output", "_output", "-dist", "_dist",
    ];
    ARTIFACTS.contains(&part)
        || part.ends_with(".egg-info")
        || OUTPUT_ENDS.iter().any(|end| {
            part.strip_suffix(end).is_some_and(|stem| {
                !stem.is_empty()
                    && stem
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            })
        })
}

/// Where a written file changes how the machine runs: its configuration, boot and
/// kernel settings, the programs on its PATH, scheduled jobs.
const MACHINE: &[&str] = &[
    "/etc",
    "/private/etc",
    "/boot",
    "/sys",
    "/proc/sys",
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/lib/systemd",
    "/usr/lib/systemd",
    "/var/spool/cron",
    "/var/lib",
    "/var/log",
];

/// A write that changes the machine rather than the project: its configuration, a
/// program on its PATH, kernel settings, scheduled jobs, or a home directory's
/// configuration (`~/.bashrc`, `~/.kube/config`; not `~/.cache`). A new file elsewhere
/// (`/usr/share/…`, `/tmp`) and the devices a shell writes (`/dev/null`) are not.
pub fn machine_write(path: &str) -> Option<Hit> {
    if !(within(path, MACHINE) || home_config(path)) {
        return None;
    }
    Some(hit(
        Category::SystemModification,
        "system_write",
        Action::Block,
        format!(
            "{path} is the machine's or the user's configuration (or a program on the PATH), not this project's; change it yourself, or ask for approval"
        ),
    ))
}

/// A path into the user's own home written with their name only known at run time
/// (`/home/$USER/.zshrc`, `"/Users/${USER}/.ssh/config"`), as `~/…`.
pub fn user_home(raw: &str) -> Option<String> {
    let raw = raw.trim_matches('"');
    let rest = ["/home/", "/Users/"].iter().find_map(|h| raw.strip_prefix(h))?;
    let rest = [
        "$USER/",
        "${USER}/",
        "$LOGNAME/",
        "${LOGNAME}/",
        "$(whoami)/",
        "$(id -un)/",
    ]
    .iter()
    .find_map(|u| rest.strip_prefix(u))?;
    (!rest.contains(['$', '`', '"', '\''])).then(|| format!("~/{rest}"))
}

/// The file name of a path whose directory is only known at run time, when that name is a
/// credential's (`$APP_HOME/.env`): the write is judged by it.
pub fn credential_name(raw: &str) -> Option<String> {
    let raw = raw.trim_matches('"');
    let name = raw.rsplit_once('/')?.1;
    (!name.is_empty() && !name.contains(['$', '`', '"', '\'', '*', '?']) && credential_path(name))
        .then(|| name.to_string())
}

/// A home directory's configuration (`~/.bashrc`, `$HOME/.ssh/config`, `/root/.profile`,
/// `/home/u/.config/x`), not its cache (`~/.cache/…`).
pub fn home_config(path: &str) -> bool {
    let rest = ["~/", "$HOME/", "${HOME}/", "/root/"]
        .iter()
        .find_map(|home| path.strip_prefix(home))
        .or_else(|| {
            let normal = path.starts_with("/home/").then(|| normal_parts(path))?;
            // `/home/USER/REST`: the rest, from the path as written.
            let user = normal.get(1)?;
            path.strip_prefix(&format!("/home/{user}/"))
        });
    rest.is_some_and(|r| {
        let first = normal_parts(r).first().copied().unwrap_or_default();
        first.starts_with('.') && first != ".cache"
    })
}

/// An absolute path, lexically normal: `//etc`, `/tmp/../etc/x` and `/etc/./x` are under
/// /etc.
fn normal_absolute(path: &str) -> String {
    format!("/{}", normal_parts(path).join("/"))
}

/// A path's parts, lexically normal: no empty part, no `.`, `..` taking the part before.
fn normal_parts(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts
}

/// Files of the operating system and its services (deleting any one of them breaks the
/// machine): outside every project, temp directory and home.
pub fn system_path(path: &str) -> bool {
    const SYSTEM: &[&str] = &[
        "/etc", "/usr", "/bin", "/sbin", "/boot", "/lib", "/lib32", "/lib64", "/libx32", "/var/lib", "/var/log",
        "/dev", "/sys", "/proc", "/root", "/snap",
    ];
    within(path, SYSTEM)
}

/// Whether absolute `path`, once `.` and `..` are resolved, is one of `trees` or inside
/// one. Each rule keeps its own list of trees: deleting, writing and changing a file's
/// owner break the machine in different places (`/dev` is deleted from, not written).
fn within(path: &str, trees: &[&str]) -> bool {
    path.starts_with('/') && {
        let normal = normal_absolute(path);
        trees
            .iter()
            .any(|root| normal == *root || normal.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')))
    }
}

/// A device file that holds data (a disk, a partition): writing it destroys what is on it.
/// The pseudo-devices (`/dev/null`, `/dev/stdout`, a terminal, `/dev/shm/…`) are not.
pub fn device_path(path: &str) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    // `/dev/shm/../sda` is `/dev/sda`.
    let normal = format!("/{}", normal_parts(path).join("/"));
    let Some(rest) = normal.strip_prefix("/dev/") else {
        return false;
    };
    let pseudo = matches!(
        rest,
        "null" | "zero" | "full" | "random" | "urandom" | "stdout" | "stderr" | "stdin" | "tty" | "console" | "ptmx"
    ) || ["fd/", "pts/", "shm/", "mqueue/", "tty"]
        .iter()
        .any(|p| rest.starts_with(p));
    !rest.is_empty() && !pseudo && !network_device(&normal)
}

/// Bash's network pseudo-devices (`/dev/tcp/HOST/PORT`, `/dev/udp/…`): a redirection to
/// one opens a connection, no file. Writing to one sends data; a shell whose input or
/// output is one is a reverse shell ([`reverse_shell_hit`]).
pub fn network_device(path: &str) -> bool {
    let normal = format!("/{}", normal_parts(path).join("/"));
    path.starts_with('/') && (normal.starts_with("/dev/tcp/") || normal.starts_with("/dev/udp/"))
}

/// The connection a redirection to or from `a` opens: a network pseudo-device, also when
/// its address is only known at run time (`/dev/tcp/$H/4444`, `"/dev/tcp/${HOST}/$PORT"`).
pub fn connection(a: &Arg) -> Option<&str> {
    match a {
        Arg::Lit(p) => network_device(p).then_some(p.as_str()),
        // Quotes removed and the path made normal (`"/dev"/./tcp/$H/4444`); the unknown
        // parts are the host and port.
        Arg::Unknown(raw) => network_device(&raw.replace(['"', '\''], "")).then_some(raw.as_str()),
    }
}

pub fn credential_sent_hit(path: &str) -> Hit {
    hit(
        Category::CredentialModification,
        "credential_sent",
        Action::Block,
        format!("this sends {path}, a credential file, over a network connection; ask for approval"),
    )
}

/// `what` multiplies processes: a function that starts itself alongside itself, or inline
/// code that forks in a loop.
pub fn fork_bomb_hit(what: &str) -> Hit {
    hit(
        Category::SystemModification,
        "fork_bomb",
        Action::Block,
        format!("{what} multiplies processes until the machine stops (a fork bomb); ask for approval"),
    )
}

pub fn reverse_shell_hit(what: &str) -> Hit {
    hit(
        Category::SystemModification,
        "reverse_shell",
        Action::Block,
        format!("{what}: whoever is at the other end runs any command here; ask for approval"),
    )
}

/// `kill`, `pkill`, `killall`, `killall5`: refused when they reach every process (`kill
/// -9 -1`, `killall5`, `pkill -u root` without a name) or the init process (`kill 1`,
/// `killall systemd`). Stopping a named program or a PID of one's own is not a finding.
pub fn kill(prog: &str, args: &[Arg]) -> Vec<Hit> {
    let every = |why: &str| {
        vec![hit(
            Category::SystemModification,
            "kill_all",
            Action::Block,
            format!(
                "{why}: the machine stops working; stop the processes you started, by name or PID, or ask for approval"
            ),
        )]
    };
    match prog {
        "killall5" => every("killall5 signals every process"),
        "kill" if kill_builtin(args) => every("kill of PID -1 (every process) or 1 (init)"),
        "pkill" | "killall" => {
            let mut user = false;
            let mut names = Vec::new();
            let mut skip = false;
            for a in args {
                let raw = a.raw();
                if std::mem::take(&mut skip) {
                    continue;
                }
                if matches!(raw, "-v" | "--inverse") {
                    user = true; // every process but the ones named
                } else if matches!(raw, "-u" | "-U" | "--euid" | "--uid" | "--user") {
                    user = true;
                    skip = true;
                } else if raw.starts_with("--euid=") || raw.starts_with("--uid=") || raw.starts_with("--user=") {
                    user = true;
                } else if matches!(
                    raw,
                    "-s" | "--signal"
                        | "-g"
                        | "-G"
                        | "-P"
                        | "-t"
                        | "-F"
                        | "--pidfile"
                        | "-o"
                        | "-y"
                        | "--older-than"
                        | "--younger-than"
                ) {
                    skip = true;
                } else if !raw.starts_with('-') {
                    names.push(raw);
                }
            }
            let init = names.iter().any(|n| {
                let n = n.trim_matches(['^', '$']);
                matches!(n, "init" | "systemd" | "." | ".*" | "")
            });
            let inverse = args.iter().any(|a| matches!(a.raw(), "-v" | "--inverse"));
            if init || inverse || (user && names.is_empty()) {
                return every(&format!("{prog} reaches every process of a user, or init"));
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Whether a process listing that a loop walks (`for pid in $(ps -eo pid,comm | awk …)`)
/// holds the init process (PID 1): every process (`ps -e`, `ps aux`) with nothing
/// filtered out, or every filter picking init (`/systemd/`, `grep init`). Not when a
/// filter names other programs (`grep postgres`: stopping a named program is no
/// finding) or a stage is not one read here. `pipeline`: each stage's words, the
/// listing first (`ps -e`, `pgrep PATTERN`, `pidof systemd`).
pub fn lists_init(pipeline: &[Vec<&str>]) -> bool {
    listed_init(pipeline).unwrap_or(false)
}

/// [`lists_init`], with `None` for a pipeline that is not one (no `ps` first, an empty
/// stage, a filter without a pattern): then it lists nothing known.
fn listed_init(pipeline: &[Vec<&str>]) -> Option<bool> {
    let (ps, stages) = pipeline.split_first()?;
    let (lister, ps_args) = ps.split_first()?;
    let operands: Vec<&str> = ps_args.iter().copied().filter(|a| !a.starts_with('-')).collect();
    let mut filters = Vec::new();
    match *lister {
        "ps" if ps_args.iter().enumerate().any(|(i, a)| every_process(i, a)) => {}
        // `pgrep .`, `pgrep -f ''`: its pattern is a filter; `pidof systemd`: PID 1.
        "pgrep"
            if !ps_args
                .iter()
                .any(|a| matches!(*a, "-u" | "-U" | "-P" | "-g" | "-G" | "-t" | "-s")) =>
        {
            filters.push(*operands.first()?)
        }
        "pidof" if operands.iter().any(|n| matches!(program(n), "systemd" | "init")) => {}
        _ => return Some(false),
    }
    for stage in stages {
        let (prog, args) = stage.split_first()?;
        let operands: Vec<&str> = args.iter().copied().filter(|a| !a.starts_with('-')).collect();
        match *prog {
            // `grep -v grep` leaves the rest.
            "grep" | "egrep"
                if args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('v')) => {}
            "grep" | "egrep" => filters.push(*operands.first()?),
            "awk" | "gawk" | "mawk" => {
                let program = operands.first()?.trim();
                let pattern = program.split('{').next().unwrap_or(program).trim();
                // (`NR>1` only skips the header line.)
                if !pattern.is_empty() && !pattern.starts_with("NR") {
                    filters.push(pattern);
                }
            }
            "head" | "tail" | "cut" | "sort" | "uniq" => {}
            _ => return Some(false),
        }
    }
    // `systemd` or `init` as a word of the pattern (`/systemd/`, `^init$`; not
    // `systemd-resolved`).
    let init = |f: &&str| {
        matches!(f.trim_matches(['^', '$', '/']), "" | "." | ".*" | ".+")
            || f.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .any(|w| matches!(w, "systemd" | "init"))
    };
    Some(filters.iter().all(init))
}

/// Whether `ps`'s argument `arg` (the `i`-th) selects every process: `-e` or `-A` in a
/// bundle before a letter that takes a value (`-Cnode`, `-U alex`: not), or BSD `ax` as
/// the first argument without a dash (`aux`, `axf`).
fn every_process(i: usize, arg: &str) -> bool {
    match arg.strip_prefix('-') {
        Some(bundle) if !bundle.starts_with('-') => bundle
            .chars()
            .take_while(|c| !"oOpuUCGgstq".contains(*c))
            .any(|c| matches!(c, 'e' | 'A')),
        Some(_) => false,
        None => i == 0 && arg.contains('a') && arg.contains('x'),
    }
}

/// Whether bash's `kill` reaches PID -1 (every process) or 1 (init): its options read
/// as bash reads them (the first `-SIG`; `-s SIG`/`-n NUM`, again and again; `--`), a
/// PID as a number however written (`-01`, `+1`, ` -1`); signal 0 only asks whether the
/// process exists, `-l`/`-L` only list signals.
fn kill_builtin(args: &[Arg]) -> bool {
    let mut i = 0;
    let mut signal_zero = false;
    let mut saw_signal = false;
    while let Some(word) = args.get(i).map(Arg::raw) {
        match word {
            "-l" | "-L" => return false,
            "-s" | "-n" => {
                signal_zero = args.get(i + 1).is_some_and(|a| a.raw().trim() == "0");
                saw_signal = true;
                i += 2;
            }
            "--" => {
                i += 1;
                break;
            }
            w if w.starts_with('-') && !saw_signal => {
                signal_zero = w == "-0";
                saw_signal = true;
                i += 1;
            }
            _ => break,
        }
    }
    let pid = |a: &Arg| {
        let text = a.raw().trim();
        text.strip_prefix('+')
            .unwrap_or(text)
            .parse::<i64>()
            .is_ok_and(|n| n == 1 || n == -1)
    };
    !signal_zero && args.get(i..).unwrap_or_default().iter().any(pid)
}

/// `chmod`, `chown`, `chgrp` of a file of the operating system (`chmod 000 /etc/shadow`,
/// `chown nobody /etc/sudoers`): the machine's own permissions changed. Recursive ones
/// of whole trees are patterns (`chmod-system-recursive`); `/usr/local` and home
/// directories, where installs put their files, are not included.
pub fn permissions(prog: &str, args: &[Arg]) -> Vec<Hit> {
    // Trees whose every file is the system's; and directories whose own mode matters.
    const SYSTEM: &[&str] = &[
        "/etc",
        "/boot",
        "/root",
        "/bin",
        "/sbin",
        "/lib",
        "/lib64",
        "/usr/bin",
        "/usr/sbin",
        "/usr/lib",
        "/usr/libexec",
        "/var/lib",
        "/var/log",
        "/var/spool/cron",
    ];
    const ROOTS: &[&str] = &["/", "/usr", "/var", "/home", "/opt", "/tmp"];
    if !matches!(prog, "chmod" | "chown" | "chgrp" | "chattr" | "setfacl") {
        return Vec::new();
    }
    let files = permission_operands(prog, args);
    let system = |f: &&&str| (f.starts_with('/') && ROOTS.contains(&normal_absolute(f).as_str())) || within(f, SYSTEM);
    match files.iter().find(system) {
        Some(f) => vec![hit(
            Category::SystemModification,
            "system_change",
            Action::Block,
            format!("{prog} of {f} changes who may use a file of the operating system; ask for approval"),
        )],
        None => Vec::new(),
    }
}

/// The files of a permission change: chmod's and chattr's mode may look like an option
/// (`chmod -x f`, `chattr -i f`); the first operand of chmod, chown and chgrp is the mode
/// or owner, unless `--reference` gave it; setfacl's `-m`/`-x` take the ACL.
fn permission_operands<'a>(prog: &str, args: &'a [Arg]) -> Vec<&'a str> {
    let mut operands = Vec::new();
    let mut mode_seen = args.iter().any(|a| a.raw().starts_with("--reference")) || prog == "setfacl";
    let mut skip = false;
    for a in args {
        let raw = a.raw();
        if std::mem::take(&mut skip) {
            continue;
        }
        let mode_like = matches!(prog, "chmod" | "chattr")
            && raw.len() > 1
            && raw.starts_with(['-', '+', '='])
            && raw[1..]
                .chars()
                .all(|c| "rwxXstugoaiAcCdDeEjPsStTu=,+-0123456789".contains(c))
            && !matches!(raw, "-R" | "-c" | "-f" | "-v" | "-V");
        if !mode_seen && mode_like {
            mode_seen = true;
        } else if prog == "setfacl"
            && matches!(
                raw,
                "-m" | "-M" | "-x" | "-X" | "--set" | "--set-file" | "--modify" | "--remove"
            )
        {
            skip = true;
        } else if raw.starts_with('-') && raw != "-" {
        } else if !mode_seen {
            mode_seen = true;
        } else {
            operands.push(raw);
        }
    }
    operands
}

pub fn device_hit(path: &str) -> Hit {
    hit(
        Category::MassDeletion,
        "disk_overwrite",
        Action::Block,
        format!("writing {path} overwrites the disk or partition it is, with everything on it; ask for approval"),
    )
}

pub fn rm(args: &[Arg]) -> Vec<Hit> {
    let (mut recursive, mut no_preserve_root) = (false, false);
    let mut operands = Vec::new();
    let mut options_done = false;
    for a in args {
        let raw = a.raw();
        if options_done || !raw.starts_with('-') || raw == "-" {
            operands.push(a);
            continue;
        }
        match raw {
            "--" => options_done = true,
            "--recursive" => recursive = true,
            "--no-preserve-root" => no_preserve_root = true,
            _ if !raw.starts_with("--") => {
                recursive |= raw.contains('r') || raw.contains('R');
            }
            _ => {}
        }
    }
    let mut hits: Vec<Hit> = operands
        .iter()
        .filter_map(|o| o.lit())
        .filter(|p| credential_path(p))
        .map(|p| credential_hit(p, "deletes"))
        .collect();
    let runtime = operands.iter().any(|o| o.lit().is_none() || o.raw() == RUNTIME_OPERAND);
    if let Some(p) = operands.iter().filter_map(|o| o.lit()).find(|p| home_config(p)) {
        hits.push(hit(
            Category::SystemModification,
            "home_config_delete",
            Action::Block,
            format!("{p} is the user's configuration, not this project's; ask for approval"),
        ));
    }
    if let Some(p) = operands
        .iter()
        .filter_map(|o| o.lit())
        .find(|p| system_path(p) || *p == "/")
    {
        hits.push(hit(
            Category::MassDeletion,
            "system_delete",
            Action::Block,
            format!("{p} belongs to the operating system or another program, not to this project; ask for approval"),
        ));
    }
    if recursive || no_preserve_root {
        let unscoped: Vec<&str> = operands
            .iter()
            .filter(|o| o.lit().is_none_or(|p| !scoped(p)))
            .map(|o| o.raw())
            .collect();
        if !unscoped.is_empty() || no_preserve_root {
            hits.push(hit(
                Category::MassDeletion,
                "recursive_delete",
                Action::Block,
                format!(
                    "recursive deletion of {} cannot be undone; delete specific files, or a build directory (target/, node_modules/, dist/), or a directory under /tmp/<name>, or ask for approval",
                    if unscoped.is_empty() { "/".to_string() } else { unscoped.join(" ") }
                ),
            ));
        }
    } else if runtime && operands.iter().any(|o| o.raw() == RUNTIME_OPERAND) {
        hits.push(hit(
            Category::MassDeletion,
            "bulk_delete",
            Action::Block,
            "rm of a file list only known at run time (xargs, find -exec) can delete anything; list the files, or ask for approval",
        ));
    } else if operands.iter().filter_map(|o| o.lit()).any(|p| {
        // `!(keep.txt)` (extglob) is every file but those.
        let name = p.rsplit('/').next().unwrap_or(p);
        let everything = p == "*" || p.ends_with("/*") || p.ends_with("/.*") || name.starts_with("!(");
        let outside = (p.starts_with('/') || p.starts_with('~')) && (p.contains('*') || p.contains('?'));
        (everything || outside) && !scoped(p)
    }) {
        hits.push(hit(
            Category::MassDeletion,
            "glob_delete",
            Action::Block,
            "deleting every file of a directory, or files by a glob outside the repository, cannot be undone; name the files, or ask for approval",
        ));
    }
    hits
}

/// `find ROOTS... EXPR`: the roots, whether it deletes, and the commands `-exec` runs
/// (with `{}` as a run-time operand).
pub struct Find {
    pub roots: Vec<Arg>,
    pub deletes: bool,
    pub execs: Vec<Vec<Arg>>,
    /// The `-name`/`-iname` patterns, when no `-o` makes them alternatives.
    pub names: Vec<Arg>,
    /// Files `-fprint`, `-fprint0`, `-fls` and `-fprintf` write.
    pub writes: Vec<Arg>,
}

pub fn find(args: &[Arg]) -> Find {
    let mut roots = Vec::new();
    // `-H`, `-L`, `-P`, `-D debugopts`, `-Olevel` come before the starting points.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.raw() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            raw if raw.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    while i < args.len() {
        let raw = args[i].raw();
        if raw.starts_with('-') || raw == "(" || raw == "!" {
            break;
        }
        roots.push(args[i].clone());
        i += 1;
    }
    let (mut deletes, mut execs) = (false, Vec::new());
    let (mut names, mut writes, mut alternatives) = (Vec::new(), Vec::new(), false);
    // Branches of `-o`: the names say what is deleted only when every branch that acts
    // tests a name (`-name '*.py[co]' -delete -o -name __pycache__ -exec rm -r {} +`).
    let (mut branch_named, mut unnamed_action) = (false, false);
    while i < args.len() {
        let acts = matches!(args[i].raw(), "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir");
        unnamed_action |= acts && !branch_named;
        match args[i].raw() {
            "-delete" => deletes = true,
            "-o" | "-or" => branch_named = false,
            // Negations and other alternatives: the names no longer say what is deleted.
            // `-regex '.*\.py[co]$'`, `-regex '.*/__pycache__'`: a name test, written so.
            "-regex" | "-iregex" if args.get(i + 1).and_then(Arg::lit).and_then(regex_name).is_some() => {
                names.extend(args.get(i + 1).and_then(Arg::lit).and_then(regex_name).map(Arg::Lit));
                branch_named = true;
                i += 1;
            }
            "," | "!" | "-not" | "-prune" | "-regex" | "-iregex" | "-path" | "-ipath" | "-wholename" => {
                alternatives = true;
                if args[i].raw().starts_with("-") && !matches!(args[i].raw(), "-not" | "-prune") {
                    i += 1; // the test's value
                }
            }
            "-name" | "-iname" => {
                names.extend(args.get(i + 1).cloned());
                branch_named = true;
                i += 1;
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                writes.extend(args.get(i + 1).cloned());
                i += if args[i].raw() == "-fprintf" { 2 } else { 1 };
            }
            // Tests that take a value: the value is no action (`-name -delete`).
            "-iwholename" | "-type" | "-xtype" | "-user" | "-group" | "-uid" | "-gid" | "-perm" | "-size"
            | "-mtime" | "-mmin" | "-atime" | "-amin" | "-ctime" | "-cmin" | "-newer" | "-anewer" | "-cnewer"
            | "-maxdepth" | "-mindepth" | "-links" | "-inum" | "-samefile" | "-fstype" | "-printf" | "-used"
            | "-lname" | "-ilname" | "-context" | "-regextype" | "-newermt" | "-newerct" | "-newerat" => i += 1,
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut cmd = Vec::new();
                i += 1;
                while i < args.len() && !matches!(args[i].raw(), ";" | "+") {
                    cmd.push(if args[i].raw().contains("{}") {
                        Arg::Unknown(RUNTIME_OPERAND.into())
                    } else {
                        args[i].clone()
                    });
                    i += 1;
                }
                execs.push(cmd);
            }
            _ => {}
        }
        i += 1;
    }
    if roots.is_empty() {
        roots.push(Arg::Lit(".".into()));
    }
    if alternatives || unnamed_action {
        names.clear();
    }
    Find {
        roots,
        deletes,
        execs,
        names,
        writes,
    }
}

/// The `-name` glob a `find -regex` stands for, when it only tests the end of the path:
/// `.*\.py[co]$` is `*.py[co]`, `.*/__pycache__` is `__pycache__`.
fn regex_name(re: &str) -> Option<String> {
    let rest = re.strip_prefix(".*")?;
    let rest = rest.strip_suffix('$').unwrap_or(rest);
    // (An unescaped `.` is any character: no name says what it matches.)
    if rest.matches('.').count() != rest.matches("\\.").count() {
        return None;
    }
    let plain = |t: &str| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '[' | ']'))
    };
    if let Some(ext) = rest.strip_prefix("\\.") {
        let ext = ext.replace("\\.", ".");
        return ext.split('.').all(plain).then(|| format!("*.{ext}"));
    }
    let name = rest.strip_prefix('/')?.replace("\\.", ".");
    (name.trim_start_matches('.').split('.').all(plain) && !name.contains(['[', ']'])).then_some(name)
}

/// Names of files a build or a tool leaves behind (`find . -name '*.pyc' -delete`).
const LEFTOVERS: &[&str] = &[
    "*.pyc",
    "*.pyo",
    "__pycache__",
    "*.o",
    "*.obj",
    "*.class",
    ".DS_Store",
    "Thumbs.db",
    "*.orig",
    "*.rej",
    "*~",
    "*.swp",
    "*.swo",
    "*.tmp",
    "*.bak",
    "*.log",
    "*.egg-info",
    ".pytest_cache",
    ".mypy_cache",
    "*.test",
    "*.gcda",
    "*.gcno",
    "*.profraw",
    "node_modules",
    "target",
    "dist",
    "build",
    ".ruff_cache",
    "*.tsbuildinfo",
    "*.py[co]",
    "*.py[cod]",
    "*.out",
    "*.so",
    "*.dylib",
    "*.a",
];

/// Whether `find` only deletes leftovers of a build below the project
/// (`find . -name '*.pyc' -delete`; not under `/`, a home or a variable).
pub fn leftovers_only(f: &Find) -> bool {
    // Leftovers of a build, below the project (not `/`, a home or a variable).
    let in_project = f
        .roots
        .iter()
        .all(|r| r.lit().is_some_and(|r| !r.starts_with(['/', '~']) && !r.contains("..")));
    let leftover = |n: &str| {
        LEFTOVERS.iter().any(|l| {
            *l == n
                || l.strip_prefix('*')
                    .is_some_and(|ext| n.ends_with(ext) && !n.contains(['*', '?']))
        })
    };
    in_project && !f.names.is_empty() && f.names.iter().all(|n| n.lit().is_some_and(leftover))
}

pub fn find_delete(f: &Find) -> Option<Hit> {
    let deleting = f.deletes
        || f.execs.iter().any(|c| {
            c.first()
                .and_then(Arg::lit)
                .is_some_and(|p| matches!(program(p), "rm" | "unlink" | "shred"))
        });
    let all_scoped = f.roots.iter().all(|r| r.lit().is_some_and(scoped));
    let leftovers_only = leftovers_only(f);
    (deleting && !all_scoped && !leftovers_only).then(|| {
        hit(
            Category::MassDeletion,
            "find_delete",
            Action::Block,
            format!(
                "find {} deletes every match below it, and cannot be undone; list the matches first (find ... -print) and delete them by name, or ask for approval",
                f.roots.iter().map(Arg::raw).collect::<Vec<_>>().join(" ")
            ),
        )
    })
}

// ---------------------------------------------------------------- credentials

/// Source and documentation files: a module named `credentials.ts` handles credentials,
/// it does not hold them (the spec's `*credentials*` would flag it; that is a false
/// positive an agent meets on every auth refactor).
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "go", "java", "kt", "rb", "php", "c", "h", "cc", "cpp", "hpp",
    "cs", "swift", "scala", "md", "rst", "html", "css", "scss",
];

/// Whether a path names a credential file: `.env` and `.envrc` files (not their
/// templates), files named `*credentials*` or `*secrets*` (not source code), anything in
/// a `secrets/` or `credentials/` directory, private keys and auth files.
pub fn credential_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut parts = lower.rsplit('/');
    let name = parts.next().unwrap_or(&lower).to_string();
    let templates = [".example", ".sample", ".template", ".dist", ".defaults"];
    if name == ".env" || name == ".envrc" || name.starts_with(".env.") || name.ends_with(".env") {
        // `.env.example`, and copies of one (`.env.example.bak`): a template, no secret.
        return !templates
            .iter()
            .any(|t| name.ends_with(t) || name.contains(&format!("{t}.")));
    }
    if parts.any(|dir| matches!(dir, "secrets" | ".secrets" | "credentials" | ".credentials")) {
        return true;
    }
    let code = name
        .rsplit_once('.')
        .is_some_and(|(_, ext)| CODE_EXTENSIONS.contains(&ext));
    if !code && (name.contains("credentials") || name.contains("secrets")) {
        return true;
    }
    if name == "authorized_keys" {
        return true;
    }
    let keys = ["id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"];
    if keys.iter().any(|k| name.starts_with(k)) && !name.ends_with(".pub") {
        return true;
    }
    [".pem", ".key", ".p12", ".pfx", ".keystore", ".jks"]
        .iter()
        .any(|e| name.ends_with(e))
        || matches!(name.as_str(), ".netrc" | ".pgpass" | ".npmrc" | ".pypirc" | ".htpasswd")
}

pub fn credential_hit(path: &str, verb: &str) -> Hit {
    hit(
        Category::CredentialModification,
        "credential_modify",
        Action::ManualReview,
        format!("this {verb} {path}, a credential file: a person must review it (whatever the agent's trust)"),
    )
}

/// The files `truncate` empties and the sources `mv` moves away, without options or
/// their values.
pub fn emptied_or_moved(prog: &str, args: &[Arg]) -> Vec<Arg> {
    let valued: &[&str] = match prog {
        "truncate" => &["-s", "--size", "-r", "--reference"],
        "mv" => &["-t", "--target-directory", "-S", "--suffix"],
        _ => return Vec::new(),
    };
    let mut operands = Vec::new();
    let mut target_given = false;
    let mut skip = false;
    for a in args {
        let raw = a.raw();
        if std::mem::take(&mut skip) {
            continue;
        }
        if valued.contains(&raw) {
            skip = true;
            target_given |= matches!(raw, "-t" | "--target-directory");
        } else if raw.starts_with('-') && raw != "-" {
            target_given |= raw.starts_with("--target-directory=") || (raw.starts_with("-t") && !raw.starts_with("--"));
        } else {
            operands.push(a.clone());
        }
    }
    if prog == "mv" && !target_given {
        operands.pop(); // the destination
    }
    operands
}

/// Of the files `prog` empties or moves away (as reached from where it runs), those whose
/// loss is judged as deleting them: every file `truncate` empties; a moved file still
/// exists, so only the machine's files and a home's configuration are missed where they
/// were.
pub fn missed(prog: &str, reached: Vec<Arg>) -> Vec<Arg> {
    reached
        .into_iter()
        .filter(|a| prog == "truncate" || a.lit().is_some_and(|p| system_path(p) || home_config(p)))
        .collect()
}

/// Files a writer program writes, from its argv (without the program name).
pub fn written_files(prog: &str, args: &[Arg]) -> Vec<Arg> {
    let operands: Vec<&Arg> = args.iter().filter(|a| !a.raw().starts_with('-')).collect();
    match prog {
        "truncate" => emptied_or_moved(prog, args),
        "tee" | "shred" => operands.into_iter().cloned().collect(),
        // Touching a home's configuration file loses nothing (a new file is empty, an
        // old one keeps its text); the machine's files are judged as written.
        "touch" => operands
            .into_iter()
            .filter(|a| !a.lit().is_some_and(home_config))
            .cloned()
            .collect(),
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
            // `cp -t ~ dotfiles/.bashrc`: into that directory, each source under its name.
            if let Some(i) = args.iter().position(|a| matches!(a.raw(), "-t" | "--target-directory")) {
                let Some(Arg::Lit(dir)) = args.get(i + 1) else {
                    return args.get(i + 1).cloned().into_iter().collect();
                };
                let sources: Vec<&Arg> = operands.iter().copied().filter(|a| a.raw() != dir).collect();
                let mut files = into_dir(dir, &sources);
                files.push(Arg::Lit(dir.trim_end_matches('/').to_string()));
                return files;
            }
            // `cp -r backup/.ssh ~/`: into a directory, each source under its own name.
            if let Some((Arg::Lit(dir), sources)) = operands.split_last().filter(|(_, s)| !s.is_empty())
                && (dir.ends_with('/') || dir == "~")
            {
                return into_dir(dir, sources);
            }
            operands.last().map(|a| (*a).clone()).into_iter().collect()
        }
        // `sort -o FILE` writes its output there (also over one of its inputs).
        "sort" => option_values(args, &["-o", "--output"], 'o'),
        "sed" | "gsed" => {
            let mut files = crate::sed::writes(args);
            if in_place(args) {
                files.extend(operands.into_iter().skip(1).cloned());
            }
            files
        }
        "perl" | "ruby" if in_place(args) => operands.into_iter().skip(1).cloned().collect(),
        "curl" => option_values(args, &["-o", "--output"], 'o'),
        "wget" => option_values(args, &["-O", "--output-document"], 'O'),
        // Generating a key writes it; -l, -y, -e, -i only read one.
        "ssh-keygen"
            if !args.iter().any(|a| {
                let raw = a.raw();
                raw.starts_with('-') && !raw.starts_with("--") && raw.contains(['l', 'y', 'e', 'i'])
            }) =>
        {
            option_values(args, &["-f"], 'f')
        }
        "dd" => args
            .iter()
            .filter_map(|a| a.lit().and_then(|s| s.strip_prefix("of=")).map(|s| Arg::Lit(s.into())))
            .collect(),
        _ => Vec::new(),
    }
}

/// Files a program is told to write by an output option (`--output FILE`,
/// `--out-file=FILE`, `--plaintext-file FILE`, `-o FILE`): `op inject --out-file .env`,
/// `gcloud kms decrypt --plaintext-file=.env`, `age -d -o secrets.env`. The programs whose
/// outputs [`written_files`] reads already are left to it.
pub fn output_files(prog: &str, args: &[Arg]) -> Vec<Arg> {
    const LONG: &[&str] = &[
        "--output",
        "--out",
        "--out-file",
        "--outfile",
        "--output-file",
        "--output-document",
        "--plaintext-file",
        "--target-file",
    ];
    // (`sops -e --output secrets.enc.yaml` writes ciphertext: the safe form sops's patterns
    // suggest.)
    let encrypting = prog == "sops" && args.iter().any(|a| matches!(a.raw(), "-e" | "--encrypt"));
    if encrypting
        || matches!(
            prog,
            "curl" | "wget" | "sort" | "ssh-keygen" | "ssh" | "scp" | "sftp" | "mount" | "tar" | "unzip"
        )
    {
        return Vec::new();
    }
    // Compilers, assemblers, linkers, encrypters and converters name their output with `-o`
    // (attached too: `-o/usr/local/bin/x`); for grep, ls, ps and many more it means
    // something else.
    const DASH_O: &[&str] = &[
        "gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "ld", "lld", "as", "nasm", "go", "tinygo", "zig",
        "age", "gpg", "gpg2", "op", "pandoc", "protoc", "xxd", "base64", "openssl", "shc",
    ];
    let mut out = option_values(args, LONG, '\0');
    if DASH_O.contains(&prog) {
        out.extend(option_values(args, &["-o", "-out"], 'o'));
    }
    out
}

/// The directories a command writes a tree of files into: an archive extracted (`tar -x
/// -C DIR`, `unzip -d DIR`, `7z x -oDIR`), a recursive copy (`cp -r rootfs/. /`, `rsync -a
/// rootfs/ /`).
pub fn trees_into(prog: &str, args: &[Arg]) -> Vec<Arg> {
    let recursive = args.iter().map(Arg::raw).any(|a| {
        matches!(a, "--recursive" | "--archive")
            || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R', 'a']))
    });
    match prog {
        "cp" | "rsync" | "ditto" | "gcp" if recursive || prog == "ditto" => {
            let target = option_values(args, &["-t", "--target-directory"], '\0');
            if !target.is_empty() {
                return target;
            }
            args.iter()
                .filter(|a| !a.raw().starts_with('-'))
                .skip(1)
                .last()
                .cloned()
                .into_iter()
                .collect()
        }
        "tar" | "gtar" | "bsdtar" if extracts(args) => option_values(args, &["-C", "--directory"], 'C'),
        "unzip" => option_values(args, &["-d"], 'd'),
        "7z" | "7za" | "7zz" if args.first().is_some_and(|a| matches!(a.raw(), "x" | "e")) => args
            .iter()
            .filter_map(|a| a.lit()?.strip_prefix("-o"))
            .map(|d| Arg::Lit(d.into()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Files written somewhere under `dir` (an archive extracted there): the machine's when
/// `dir` is one of its trees, inside one, or holds one (`/`, `/usr`).
pub fn machine_write_under(dir: &str) -> Option<Hit> {
    // The home directory itself holds its configuration (`~/.bashrc`, `~/.ssh`).
    if matches!(dir.trim_end_matches('/'), "~" | "$HOME" | "${HOME}" | "/root") || dir == "/root/" {
        return Some(hit(
            Category::SystemModification,
            "system_write",
            Action::Block,
            format!("writing a tree of files into {dir} reaches the home directory's configuration; ask for approval"),
        ));
    }
    let normal = normal_absolute(dir);
    let base = normal.trim_end_matches('/');
    let holds = dir.starts_with('/')
        && MACHINE
            .iter()
            .any(|root| root.strip_prefix(base).is_some_and(|r| r.starts_with('/')));
    if !holds {
        return machine_write(dir);
    }
    Some(hit(
        Category::SystemModification,
        "system_write",
        Action::Block,
        format!(
            "writing a tree of files into {dir} writes the machine's files (its configuration, programs on the PATH), not this project's; ask for approval"
        ),
    ))
}

/// Whether tar extracts: `-x`, `--extract`, `--get`, a bundle with `x` (`-xzf`), or the
/// old style without a dash (`tar xzf a.tgz`).
fn extracts(args: &[Arg]) -> bool {
    let bundle_x = |w: &str| w.chars().all(|c| c.is_ascii_alphabetic()) && w.contains('x');
    args.iter().enumerate().any(|(i, a)| {
        let raw = a.raw();
        matches!(raw, "--extract" | "--get")
            || raw
                .strip_prefix('-')
                .is_some_and(|b| !b.starts_with('-') && bundle_x(b))
            || (i == 0 && bundle_x(raw))
    })
}

/// Where sources copied or moved into `dir` land: each under its own name.
fn into_dir(dir: &str, sources: &[&Arg]) -> Vec<Arg> {
    let dir = dir.trim_end_matches('/');
    sources
        .iter()
        .filter_map(|a| a.lit())
        .map(|src| {
            Arg::Lit(format!(
                "{dir}/{}",
                src.trim_end_matches('/').rsplit('/').next().unwrap_or(src)
            ))
        })
        .collect()
}

/// The files a download writes: `curl -o FILE`/`-O` (the URL's last segment), `wget`
/// (`-O FILE`, else the URL's last segment, under `-P DIR`). What is in them is only
/// known at run time.
pub fn downloaded_files(prog: &str, args: &[Arg]) -> Vec<Arg> {
    let urls = || {
        args.iter()
            .filter_map(Arg::lit)
            .filter(|a| a.contains("://"))
            .filter_map(|u| {
                let path = u.split(['?', '#']).next().unwrap_or(u);
                let name = path.split_once("://")?.1.split_once('/')?.1.rsplit('/').next()?;
                Some(if name.is_empty() {
                    "index.html".to_string()
                } else {
                    name.to_string()
                })
            })
            .collect::<Vec<_>>()
    };
    let mut files = match prog {
        "curl" => {
            let mut files = option_values(args, &["-o", "--output"], 'o');
            let remote_name = args.iter().any(|a| {
                let raw = a.raw();
                matches!(raw, "--remote-name" | "--remote-name-all")
                    || (raw.starts_with('-') && !raw.starts_with("--") && raw.contains('O'))
            });
            if remote_name {
                files.extend(urls().into_iter().map(Arg::Lit));
            }
            files
        }
        "wget" => {
            let named = option_values(args, &["-O", "--output-document"], 'O');
            if named.is_empty() {
                let dir = option_values(args, &["-P", "--directory-prefix"], 'P');
                let dir = dir
                    .first()
                    .and_then(Arg::lit)
                    .map(|d| format!("{}/", d.trim_end_matches('/')))
                    .unwrap_or_default();
                urls().into_iter().map(|n| Arg::Lit(format!("{dir}{n}"))).collect()
            } else {
                named
            }
        }
        _ => Vec::new(),
    };
    files.retain(|f| f.raw() != "/dev/null");
    files
}

/// In place: `-i`, `-i.bak`, and in a bundle (`sed -Ei`, `perl -pi`).
fn in_place(args: &[Arg]) -> bool {
    args.iter().any(|a| {
        let raw = a.raw();
        raw.starts_with("--in-place") || (raw.starts_with('-') && !raw.starts_with("--") && raw.contains('i'))
    })
}

/// The values of an option that names a file: `-o FILE`, `--output=FILE`, `-oFILE`, and
/// at the end of a bundle (`-sLo FILE`).
pub(crate) fn option_values(args: &[Arg], names: &[&str], letter: char) -> Vec<Arg> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let raw = a.raw();
        let next = || args.get(i + 1).cloned();
        if names.contains(&raw) {
            out.extend(next());
        } else if let Some(v) = names
            .iter()
            .filter(|n| n.starts_with("--"))
            .find_map(|n| raw.strip_prefix(&format!("{n}=")))
        {
            out.push(Arg::Lit(v.into()));
        } else if let Some((letters, at)) = raw
            .strip_prefix('-')
            .filter(|l| !l.starts_with('-'))
            .and_then(|l| l.find(letter).map(|at| (l, at)))
        {
            let rest = &letters[at + letter.len_utf8()..];
            if rest.is_empty() {
                out.extend(next());
            } else if at == 0 {
                out.push(Arg::Lit(rest.into()));
            }
        }
    }
    out.retain(|a| a.raw() != "-");
    out
}

// ---------------------------------------------------------------- databases

/// SQL a client runs: `-c`/`--command`, `-e`/`--execute`, a statement operand of
/// `sqlite3`, or its standard input when literal.
pub fn sql_of(prog: &str, args: &[Arg]) -> Vec<Arg> {
    // Attached and bundled too: `-c'DROP …'`, `psql -Atc …`, `mysql -BNe …`.
    let mut out = match prog {
        "psql" => option_values(args, &["-c", "--command"], 'c'),
        "mysql" | "mariadb" => option_values(args, &["-e", "--execute"], 'e'),
        "clickhouse-client" | "cockroach" => {
            let mut v = option_values(args, &["-q", "--query"], 'q');
            v.extend(option_values(args, &["-e", "--execute"], 'e'));
            v
        }
        "usql" => option_values(args, &["-c", "--command"], 'c'),
        "dolt" if args.first().map(Arg::raw) == Some("sql") => option_values(args, &["-q", "--query"], 'q'),
        "sqlite3" => Vec::new(),
        _ => return Vec::new(),
    };
    if prog == "sqlite3" {
        // sqlite3 [OPTIONS] FILE [SQL...]; `-cmd` runs its value first.
        const VALUE_OPTIONS: &[&str] = &[
            "-cmd",
            "-separator",
            "-newline",
            "-nullvalue",
            "-init",
            "-vfs",
            "-maxsize",
            "-lookaside",
            "-pagecache",
            "-mmap",
            "-heap",
            "-escape",
        ];
        let mut positional = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let raw = args[i].raw();
            if VALUE_OPTIONS.contains(&raw) {
                if raw == "-cmd" {
                    out.extend(args.get(i + 1).cloned());
                }
                i += 2;
                continue;
            }
            if !raw.starts_with('-') {
                positional.push(args[i].clone());
            }
            i += 1;
        }
        out.extend(positional.into_iter().skip(1));
    }
    out
}

/// The SQL files `psql` runs: `-f FILE`, `--file FILE`, `--file=FILE`, `-fFILE` (`-`:
/// stdin).
pub fn psql_files(args: &[Arg]) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = false;
    for a in args {
        let raw = a.raw();
        let value = if std::mem::take(&mut take) {
            Some(raw)
        } else if matches!(raw, "-f" | "--file") {
            take = true;
            None
        } else {
            raw.strip_prefix("--file=")
                .or_else(|| raw.strip_prefix("-f").filter(|v| !v.is_empty()))
        };
        if let Some(v) = value.filter(|v| *v != "-" && a.lit().is_some()) {
            out.push(v.to_string());
        }
    }
    out
}

/// A SQL file whose statements were not read, by its name: a dump, backup or restore
/// drops and recreates tables when loaded.
pub fn sql_file_by_name(prog: &str, path: &str) -> Option<Hit> {
    let name = program(path).to_ascii_lowercase();
    let says = ["dump", "backup", "restore", "snapshot", "prod"]
        .iter()
        .find(|w| name.contains(*w))?;
    Some(hit(
        Category::MassDeletion,
        "bulk_delete",
        Action::Block,
        format!(
            "{prog} loads `{path}`, whose statements were not read and whose name says {says} (a dump drops and \
             recreates the tables it holds); check it from the repository (coord guard check reads it) or ask for approval"
        ),
    ))
}

// ---------------------------------------------------------------- scripts by name

/// Words in a script's path that say it ships, withdraws or destroys something
/// (`scripts/deploy.sh`, `hack/release/create.sh`, `tools/update-homebrew.ts`,
/// `scripts/drop-db.ts`).
const SHIPPING_WORDS: &[&str] = &[
    "deploy",
    "deploys",
    "deployment",
    "deployments",
    "release",
    "releases",
    "publish",
    "rollback",
    "promote",
    "homebrew",
    "scoop",
    "winget",
    "chocolatey",
    "destroy",
    "teardown",
    "nuke",
    "wipe",
    "drop",
    "unpublish",
    "cleanup",
    "purge",
];

/// Whether a script's first operand says it ships or destroys (`tasks.py deploy`,
/// `algolia.py upload`, `setup.py upload`): a word of [`SHIPPING_WORDS`] but `release`
/// (`./build.sh release` builds in release mode) and `cleanup` (`./run.sh cleanup` mostly
/// removes local files), or `upload`.
fn shipping_operand(operand: &str) -> bool {
    operand == "upload"
        || (SHIPPING_WORDS.contains(&operand) && !operand.starts_with("release") && operand != "cleanup")
}

/// A script's first operand that says it only looks (`deploy.ts check`, `release.sh
/// status`): fewer than [`LOOKING_WORDS`], since an operand may name what is shipped
/// (`deploy.sh docs`, `deploy.sh test`, `deploy.sh preview` deploy).
const LOOKING_OPERANDS: &[&str] = &[
    "check", "status", "list", "diff", "plan", "help", "verify", "validate", "lint",
];

/// Options that make a script whose name only looks act (`backfill-release-notes.ts
/// --apply`).
const ACTING_OPTIONS: &[&str] = &[
    "--apply",
    "--execute",
    "--commit",
    "--confirm",
    "--yes",
    "-y",
    "--force",
    "--prod",
    "--production",
    "--auto-approve",
    "--no-dry-run",
];

/// Whether `option` is one of [`ACTING_OPTIONS`], also with a value (`--prod=true`).
fn acting_option(option: &str) -> bool {
    let name = option.split_once('=').map_or(option, |(n, _)| n);
    ACTING_OPTIONS.contains(&name)
}

/// Words that say a script with such a name only looks (`release-notes.sh`,
/// `deploy-check.ts`, `publish --dry-run`).
const LOOKING_WORDS: &[&str] = &[
    "notes",
    "note",
    "check",
    "checks",
    "test",
    "tests",
    "lint",
    "changelog",
    "verify",
    "validate",
    "dry",
    "preview",
    "status",
    "list",
    "diff",
    "plan",
    "help",
    "docs",
    "doc",
];

/// The words of a path: its directories and its file name, split at `-`, `_`, `.` and
/// lower-to-upper case changes (`e2eCleanup`), in lower case.
fn path_words(path: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in path.split(['/', '-', '_', '.', ':']) {
        let mut current = String::new();
        let mut last_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && last_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            last_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
    }
    words
}

/// A script run by its path (or by an interpreter), judged by its name when its code is
/// not read: one that says it deploys, releases, publishes or destroys is refused, unless
/// its name or arguments say it only looks.
pub fn shipping_script(path: &str, args: &[Arg]) -> Option<Hit> {
    // The machine's own files are no project's scripts (`. /etc/os-release` reads what
    // system this is).
    if path.starts_with("/etc/") || path == "/usr/lib/os-release" {
        return None;
    }
    // `docs/../scripts/deploy.sh` is `scripts/deploy.sh`.
    let parts = normal_parts(path);
    let name = parts.last().copied().unwrap_or_default();
    // In a build's output (`target/release/app`) the directories are the build's: only
    // the file's own name speaks.
    let built = parts.iter().any(|part| ARTIFACTS.contains(part) || *part == "bin");
    let whole = parts.join("/");
    let words = path_words(if built { name } else { &whole });
    // The first word that is no option (an option's value, perhaps: the side that
    // refuses more) says what the script ships; only a first word says it only looks.
    let operand = args.iter().find(|a| !a.raw().starts_with('-')).and_then(Arg::lit);
    let first = args.first().and_then(Arg::lit).filter(|a| !a.starts_with('-'));
    let shipping = words
        .iter()
        .map(String::as_str)
        .find(|w| SHIPPING_WORDS.contains(w))
        .or(operand.filter(|o| shipping_operand(o)))?;
    // Only the file's own name or first operand, or an option asking for a dry run, says
    // it only looks, unless an option says it acts.
    // (A word only known at run time is taken for a value, `verify-release.sh "$TAG"`,
    // not for an option that acts.)
    let acting = args.iter().filter_map(Arg::lit).any(acting_option);
    let looking_name = !acting
        && (path_words(name).iter().any(|w| LOOKING_WORDS.contains(&w.as_str()))
            || first.is_some_and(|o| LOOKING_OPERANDS.contains(&o)));
    // `--version` prints one (`--version --json` too); followed by a value (`--version
    // 1.2.3`) it sets the version the script ships.
    let version_only = args.iter().enumerate().any(|(i, a)| {
        matches!(a.lit(), Some("--version" | "-V")) && args.get(i + 1).is_none_or(|next| next.raw().starts_with('-'))
    });
    let dry = version_only
        || args
            .iter()
            .filter_map(Arg::lit)
            .any(|a| matches!(a, "--dry-run" | "-n" | "--help" | "-h" | "--local" | "--snapshot"));
    if looking_name || dry {
        return None;
    }
    Some(hit(
        Category::ProductionDeployment,
        "deploy",
        Action::Block,
        format!(
            "{path} is the project's {shipping} script, and its code was not read; run the steps it stands for so each can be judged, or ask for approval"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflog_expiries_that_keep_a_week() {
        let cases = [
            ("never", true),
            ("false", true),
            ("90.days", true),
            ("90 days", true),
            ("2.weeks.ago", true),
            ("3.months", true),
            ("1.year", true),
            ("7.days", true),
            ("6.days", false),
            ("now", false),
            ("all", false),
            ("0", false),
            ("1.hour.ago", false),
            ("2024-01-01", false),
            ("$WHEN", false),
            ("", false),
        ];
        for (value, keeps) in cases {
            assert_eq!(keeps_reflog(value), keeps, "{value}");
        }
    }

    #[test]
    fn remotes_that_deploy() {
        let cases = [
            ("heroku", None, true),
            ("dokku", None, true),
            ("https://git.heroku.com/shop.git", None, true),
            ("dokku@apps.example.com:shop", None, true),
            ("ssh://dokku@apps.example.com/shop", None, true),
            ("production", Some("https://git.heroku.com/shop.git"), true),
            ("origin", Some("git@github.com:acme/shop.git"), false),
            ("origin", None, false),
            ("herokuapp", None, false),
            ("https://github.com/acme/heroku-buildpack.git", None, false),
        ];
        for (remote, url, want) in cases {
            assert_eq!(deploy_remote(remote, url), want, "{remote} {url:?}");
        }
    }

    #[test]
    fn process_listings_that_hold_init() {
        let cases: &[(&[&str], bool)] = &[
            (&["ps -eo pid,comm", "awk {print $1}"], true),
            (&["ps -e -o pid="], true),
            (&["ps aux", "grep -v grep", "awk {print $2}"], true),
            (&["ps -A", "tail -n +2", "cut -c1-5"], true),
            (&["ps -eo pid,comm", "awk /systemd/ {print $1}"], true),
            (&["ps afx", "grep init", "awk {print $1}"], true),
            // A named program: stopping it is no finding.
            (&["ps -eo pid,comm", "awk /cron/ {print $1}"], false),
            (&["ps -eo pid,comm", "grep postgres", "awk {print $1}"], false),
            (&["ps aux", "grep systemd", "grep myapp"], false),
            (&["ps aux", "grep systemd-resolved"], false),
            (&["ps -U alex -o pid="], false),
            (&["ps -Cnode -o pid="], false),
            (&["ps -o pid= -e"], true),
            (&["ps aux", "awk $2 > 1000 {print $2}"], false),
            // Not every process, or a stage not read here.
            (&["ps -o pid="], false),
            (&["ps -u me -o pid="], false),
            (&["ps -e", "xargs echo"], false),
            (&["pgrep -f x"], false),
            (&[], false),
        ];
        for (stages, want) in cases {
            // Each stage split at its first blank, then the program's words at blanks,
            // but an awk program kept whole.
            let pipeline: Vec<Vec<&str>> = stages
                .iter()
                .map(|s| match s.split_once(' ') {
                    Some((p @ "awk", program)) => vec![p, program],
                    _ => s.split(' ').collect(),
                })
                .collect();
            assert_eq!(lists_init(&pipeline), *want, "{stages:?}");
        }
    }
}
