//! Programs that run another command: runners named after a subcommand word (`uv run
//! pytest`, `bundle exec rake`, `aws-vault exec PROFILE -- cmd`) and wrappers that run the
//! rest of their arguments after their options (`nsenter -t 1 -m cmd`, `strace -f cmd`,
//! `taskset -c 0 cmd`, `script -qc CODE`). One table: the analyzer judges the command they
//! run, and the connection and file-write checks find the program behind them.

use crate::walk::Arg;

/// A program that runs a command given on its command line.
struct Runner {
    program: &'static str,
    /// Subcommand words that run a command (none: the command follows the options).
    subs: &'static [&'static str],
    /// Options that take the next word as their value.
    values: &'static [&'static str],
    /// Options known to take none: the word after one is no value of it (`uv run -m
    /// pytest "${args[@]}"` runs pytest).
    flags: &'static [&'static str],
    /// Operands between the options and the command (`aws-vault exec PROFILE -- cmd`,
    /// `taskset MASK cmd`).
    before: usize,
    /// Options whose value is shell code (`npm exec -c 'CMD'`, `script -c CODE`,
    /// `entr -s CODE`), attached (`--command=CODE`) or last in a bundle (`-qc CODE`).
    code: &'static [&'static str],
    /// Whether it runs a command given as its arguments (`script FILE` only names its
    /// log: it runs shell code given with `-c`, or none).
    argv: bool,
}

/// The package managers' and env loaders' shell-string options.
const SHELL_STRING: &[&str] = &["-c", "--call", "--command", "--shell-mode"];

const fn runner(
    program: &'static str,
    subs: &'static [&'static str],
    values: &'static [&'static str],
    before: usize,
) -> Runner {
    Runner {
        program,
        subs,
        values,
        flags: &[],
        before,
        code: SHELL_STRING,
        argv: true,
    }
}

const fn wrapper(program: &'static str, values: &'static [&'static str], before: usize) -> Runner {
    Runner {
        program,
        subs: &[],
        values,
        flags: &[],
        before,
        code: &[],
        argv: true,
    }
}

const UV_VALUES: &[&str] = &[
    "--with",
    "--python",
    "-p",
    "--directory",
    "--project",
    "--env-file",
    "--package",
    "--group",
    "--extra",
    "--index",
    "--from",
    "--with-requirements",
    "--with-editable",
];

/// `uv run`'s options without a value (`-m`: the command is a module's name).
const UV_FLAGS: &[&str] = &[
    "-m",
    "--module",
    "-s",
    "--script",
    "--no-project",
    "--frozen",
    "--locked",
    "--isolated",
    "--no-sync",
    "--all-extras",
    "--all-packages",
    "--no-dev",
    "--dev",
    "--exact",
    "--active",
    "--offline",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
];

const SETPRIV_VALUES: &[&str] = &[
    "--ruid",
    "--euid",
    "--reuid",
    "--rgid",
    "--egid",
    "--regid",
    "--groups",
    "--inh-caps",
    "--ambient-caps",
    "--bounding-set",
    "--securebits",
    "--pdeathsig",
    "--selinux-label",
    "--apparmor-profile",
    "--landlock-access",
    "--landlock-rule",
    "--seccomp-filter",
];

const RUNNERS: &[Runner] = &[
    Runner {
        flags: UV_FLAGS,
        ..runner("uv", &["run"], UV_VALUES, 0)
    },
    runner("uvx", &[], &["--with", "--python", "-p", "--from"], 0),
    runner("poetry", &["run"], &["-C", "--directory", "-P", "--project"], 0),
    runner("pipenv", &["run"], &[], 0),
    runner("pdm", &["run"], &["-p", "--project"], 0),
    runner("hatch", &["run"], &["-e", "--env"], 0),
    runner("rye", &["run"], &[], 0),
    runner("pixi", &["run"], &["-e", "--environment", "--manifest-path"], 0),
    runner("conda", &["run"], &["-n", "--name", "-p", "--prefix"], 0),
    runner("bundle", &["exec"], &[], 0),
    runner("pipx", &["run"], &["--spec", "--python"], 0),
    runner("npm", &["exec", "x"], &["-p", "--package", "-w", "--workspace"], 0),
    runner("pnpm", &["exec", "dlx"], &["-C", "--dir", "--filter", "-F"], 0),
    runner("yarn", &["exec", "dlx"], &["-p", "--package"], 0),
    runner("bun", &["x"], &[], 0),
    // (`lerna exec -- npm publish`: in every package.)
    runner(
        "lerna",
        &["exec"],
        &["--scope", "--ignore", "--concurrency", "--since"],
        0,
    ),
    runner("mise", &["exec", "x"], &["-C", "--cd"], 0),
    runner("asdf", &["exec"], &[], 0),
    runner("aws-vault", &["exec"], &["-d", "--duration", "-t", "--mfa-token"], 1),
    runner("op", &["run"], &["--env-file"], 0),
    runner("dotenvx", &["run"], &["-f", "--env-file", "-fk", "--env-keys-file"], 0),
    // (`doppler run -c CONFIG`: a config's name, not code.)
    Runner {
        code: &["--command"],
        ..runner("doppler", &["run"], &["-p", "--project", "-c", "--config"], 0)
    },
    runner("infisical", &["run"], &["--env", "--path", "--projectId"], 0),
    runner("dotenv", &[], &["-e", "-f", "-v"], 0),
    runner("direnv", &["exec"], &[], 1),
    // Namespaces, identities, limits and schedulers.
    // (`ip netns exec NS cmd`, `ip vrf exec NAME cmd`; `ip netns delete NS` runs nothing.)
    Runner {
        subs: &["netns", "vrf"],
        ..wrapper("ip", &["-n", "-netns", "-b", "-batch", "-rc", "-f", "-family"], 2)
    },
    wrapper("nsenter", &["-t", "--target", "-S", "--setuid", "-G", "--setgid"], 0),
    wrapper(
        "unshare",
        &[
            "-S",
            "--setuid",
            "-G",
            "--setgid",
            "-R",
            "--root",
            "-w",
            "--wd",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--propagation",
            "--setgroups",
        ],
        0,
    ),
    wrapper("firejail", &[], 0),
    wrapper("setpriv", SETPRIV_VALUES, 0),
    wrapper("taskset", &[], 1),
    wrapper(
        "chrt",
        &[
            "-T",
            "-P",
            "-D",
            "--sched-runtime",
            "--sched-period",
            "--sched-deadline",
        ],
        1,
    ),
    wrapper(
        "numactl",
        &[
            "-N",
            "-m",
            "-C",
            "-i",
            "-p",
            "-P",
            "-w",
            "--cpunodebind",
            "--membind",
            "--physcpubind",
            "--interleave",
            "--preferred",
            "--preferred-many",
            "--weighted-interleave",
        ],
        0,
    ),
    wrapper("prlimit", &["-p", "--pid", "-o", "--output"], 0),
    wrapper("cgexec", &["-g"], 0),
    wrapper("cpulimit", &["-l", "--limit", "-p", "--pid", "-e", "--exe"], 0),
    wrapper("trickle", &["-d", "-u", "-w", "-t", "-l", "-n"], 0),
    wrapper("systemd-inhibit", &["--what", "--who", "--why", "--mode"], 0),
    wrapper("gosu", &[], 1),
    wrapper("su-exec", &[], 1),
    wrapper("setuidgid", &[], 1),
    wrapper("s6-setuidgid", &[], 1),
    wrapper(
        "chpst",
        &[
            "-u", "-U", "-b", "-e", "-/", "-C", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-r", "-t",
        ],
        0,
    ),
    wrapper("pkexec", &["-u", "--user"], 0),
    wrapper("fakeroot", &["-l", "--lib", "-f", "--faked", "-s", "-i"], 0),
    wrapper("eatmydata", &[], 0),
    wrapper("faketime", &["-f"], 1),
    // Tracers, debuggers, displays and inits.
    wrapper(
        "strace",
        &[
            "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-X", "-P", "-U", "--output",
        ],
        0,
    ),
    wrapper(
        "ltrace",
        &["-o", "-e", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-F", "-l", "-x"],
        0,
    ),
    wrapper("valgrind", &[], 0),
    wrapper(
        "xvfb-run",
        &[
            "-n",
            "--server-num",
            "-f",
            "--auth-file",
            "-e",
            "--error-file",
            "-p",
            "--xauth-protocol",
            "-s",
            "--server-args",
            "-w",
            "--wait",
        ],
        0,
    ),
    wrapper("dbus-run-session", &["--config-file", "--dbus-daemon"], 0),
    wrapper("dumb-init", &["-r", "--rewrite"], 0),
    wrapper("tini", &["-p", "-e"], 0),
    wrapper("catatonit", &[], 0),
    // Network wrappers.
    wrapper("proxychains", &["-f"], 0),
    wrapper("proxychains4", &["-f"], 0),
    wrapper(
        "torsocks",
        &["-u", "-p", "-a", "-P", "--user", "--pass", "--address", "--port"],
        0,
    ),
    wrapper("sshpass", &["-p", "-f", "-d", "-P"], 0),
    // Terminals and watchers whose shell-code option runs the command.
    Runner {
        code: &["-c", "--command"],
        argv: false,
        ..wrapper(
            "script",
            &["-t", "--timing", "-T", "-I", "-O", "-B", "-m", "-E", "--echo"],
            0,
        )
    },
    Runner {
        code: &["-s"],
        ..wrapper("entr", &[], 0)
    },
    wrapper("rlwrap", &["-f", "-H", "-a", "-S", "-P"], 0),
    wrapper("tsp", &["-L", "-D", "-E"], 0),
    wrapper("nq", &[], 0),
    wrapper("gtimeout", &["-s", "--signal", "-k", "--kill-after"], 1),
];

/// What a runner runs: a shell string (`npm exec -c 'CMD'`), or a command.
pub enum Runs<'a> {
    Code(Option<Arg>),
    /// The command from each place it may start: an option this table does not know may
    /// take the word after it as its value (`uv run --index-url URL cmd`), so the next
    /// start is judged too.
    Commands(Vec<&'a [Arg]>),
}

/// What a runner runs (`uv run mike deploy` → `mike deploy`), if `prog` is one.
pub fn runs<'a>(prog: &str, args: &'a [Arg]) -> Option<Runs<'a>> {
    let r = RUNNERS.iter().find(|r| r.program == prog)?;
    let start = match command_start(r, args)? {
        Start::Code(code) => return Some(Runs::Code(code)),
        Start::At(_) if !r.argv => return None,
        Start::At(i) => i,
    };
    let mut starts = vec![&args[start..]];
    // The first word after an option this table does not know may be that option's value
    // (`uv run --index-url URL cmd`): the command may start after it. One with its value
    // attached (`--only-group=lint`) takes no other.
    let before = start.checked_sub(1).and_then(|i| args.get(i)).map(Arg::raw);
    if before.is_some_and(|o| {
        o.starts_with('-') && o != "--" && !(o.starts_with("--") && o.contains('=')) && !r.flags.contains(&o)
    }) && start + 1 < args.len()
    {
        starts.push(&args[start + 1..]);
    }
    Some(Runs::Commands(starts))
}

/// The command a runner or wrapper runs (`uv run mike deploy` → `mike deploy`), if
/// `prog` is one and runs a command, not shell code.
pub fn command<'a>(prog: &str, args: &'a [Arg]) -> Option<&'a [Arg]> {
    match runs(prog, args)? {
        Runs::Commands(starts) => starts.first().copied(),
        Runs::Code(_) => None,
    }
}

enum Start {
    Code(Option<Arg>),
    At(usize),
}

/// Where the command starts in `args` (options, the subcommand word and the operands
/// before it skipped), or the shell code an option gives; `None` when nothing runs.
fn command_start(r: &Runner, args: &[Arg]) -> Option<Start> {
    let mut need_sub = !r.subs.is_empty();
    let mut before = r.before;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let raw = a.raw();
        if raw == "--" {
            if need_sub {
                return None;
            }
            i += 1 + before;
            break;
        }
        if raw.starts_with('-') && raw.len() > 1 {
            if let Some(code) = code_value(r.code, args, i) {
                return Some(Start::Code(code));
            }
            i += if r.values.contains(&raw) { 2 } else { 1 };
        } else if need_sub {
            if !r.subs.contains(&raw) {
                return None;
            }
            need_sub = false;
            i += 1;
        } else if before > 0 {
            before -= 1;
            i += 1;
        } else {
            break;
        }
    }
    (i < args.len() && !need_sub).then_some(Start::At(i))
}

/// The shell code the option at `i` gives, if it is one of `code`: `-c CODE`,
/// `--command=CODE`, `-qc CODE` (the last flag of a bundle takes the next word).
fn code_value(code: &[&str], args: &[Arg], i: usize) -> Option<Option<Arg>> {
    let raw = args[i].raw();
    if code.contains(&raw) {
        return Some(args.get(i + 1).cloned());
    }
    if let Some((name, value)) = raw.split_once('=')
        && name.starts_with("--")
        && code.contains(&name)
    {
        return Some(Some(match &args[i] {
            Arg::Lit(_) => Arg::Lit(value.to_string()),
            Arg::Unknown(_) => Arg::Unknown(value.to_string()),
        }));
    }
    let bundle = raw.len() > 2 && !raw.starts_with("--") && raw[1..].chars().all(|c| c.is_ascii_alphabetic());
    let last = raw.chars().last().map(|c| format!("-{c}"));
    (bundle && last.is_some_and(|l| code.contains(&l.as_str()))).then(|| args.get(i + 1).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Arg> {
        line.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect()
    }

    /// What runs, for a table of cases: the command's first start, `code:` with the shell
    /// code, or nothing.
    #[test]
    fn what_runners_and_wrappers_run() {
        let cases = [
            ("uv run pytest -x", "pytest -x"),
            ("uv run --python 3.12 pytest", "pytest"),
            ("uv pip install x", ""),
            ("npm exec -c deploy", "code:deploy"),
            ("doppler run -c prd -- rm -rf /", "rm -rf /"),
            ("doppler run --command=make", "code:make"),
            ("aws-vault exec prod -- terraform destroy", "terraform destroy"),
            ("direnv exec . make", "make"),
            ("nsenter -t 1 -m -u -n -p rm -rf /", "rm -rf /"),
            ("nsenter --target 1 --mount -- sh", "sh"),
            ("unshare -r -n rm -rf x", "rm -rf x"),
            ("unshare -c rm -rf x", "rm -rf x"),
            ("taskset -c 0,1 make", "make"),
            ("taskset 0x3 make", "make"),
            ("chrt -f 99 make", "make"),
            ("strace -c -f -o out rm x", "rm x"),
            ("numactl --cpunodebind=0 -m 0 make", "make"),
            ("gosu app rm -rf /data", "rm -rf /data"),
            ("script -qc make /dev/null", "code:make"),
            ("script -q -e --command=make", "code:make"),
            ("script release.log", ""),
            ("entr -rs make", "code:make"),
            ("entr -r make", "make"),
            ("tini -- make", "make"),
            ("ip netns exec blue rm -rf /", "rm -rf /"),
            ("ip vrf exec red make", "make"),
            ("ip netns delete blue", ""),
            ("ip link delete eth0", ""),
            ("taskset -p 03", ""),
            ("strace -p 42", ""),
        ];
        for (line, want) in cases {
            let argv = words(line);
            let got = match runs(crate::rules::program(argv[0].raw()), &argv[1..]) {
                None => String::new(),
                Some(Runs::Code(code)) => format!("code:{}", code.map(|c| c.raw().to_string()).unwrap_or_default()),
                Some(Runs::Commands(starts)) => starts[0].iter().map(Arg::raw).collect::<Vec<_>>().join(" "),
            };
            assert_eq!(got, want, "{line}");
        }
    }

    #[test]
    fn where_a_command_may_start_after_an_option_not_known() {
        let cases = [
            ("uv run --index-url https://x pytest", 2),
            ("uv run --only-group=lint black src", 1),
            ("uv run pytest -x", 1),
            ("uv run --locked -- pytest", 1),
        ];
        for (line, want) in cases {
            let argv = words(line);
            let Some(Runs::Commands(starts)) = runs(argv[0].raw(), &argv[1..]) else {
                panic!("{line} runs a command")
            };
            assert_eq!(starts.len(), want, "{line}");
        }
    }
}
