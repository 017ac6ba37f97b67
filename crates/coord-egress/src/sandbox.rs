//! `coord sandbox run`: a command tree in bubblewrap with the network namespace
//! unshared (its only interface is loopback), the proxy's Unix socket bound in and
//! relayed to `127.0.0.1:RELAY_PORT` inside, the proxy variables pointing there with the
//! agent's own credential; no capabilities (even when coord runs as root), a new session
//! (no typing into the terminal), an environment of only what is allowed; the workspace
//! writable, everything else read-only, the host's sockets (`/run`) and credential stores
//! hidden, coord's own state and every git directory read-only. The argv is built by
//! a pure function ([`bwrap_args`], table-tested) from a [`Plan`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// The loopback port the relay listens on inside the namespace for the proxy.
pub const RELAY_PORT: u16 = 3128;
/// ... for the coordinator's API (agents coord launches: their MCP server and hooks).
pub const API_PORT: u16 = 3129;
/// ... for a model endpoint on the host's loopback (`coord agent run --model-url`).
pub const MODEL_PORT: u16 = 3130;

/// Credential stores under the home directory that a sandboxed command never sees:
/// directories are replaced by an empty tmpfs, files by an empty read-only file.
pub const HIDDEN_DIRS: &[&str] = &[
    ".ssh",
    ".config/coord",
    ".aws",
    ".azure",
    ".gnupg",
    ".kube",
    ".docker",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
];
pub const HIDDEN_FILES: &[&str] = &[
    // Agent runtimes' own logins and keys (a launched agent has a HOME of its own).
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".aider.conf.yml",
    ".env",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
];

/// What a sandboxed run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Read-only, at the same path inside, bound before everything else: what the
    /// command needs from under `/tmp` (which the sandbox replaces) — the workspace, a
    /// runtime's install directory.
    pub visible: Vec<PathBuf>,
    /// Writable, at the same path inside: the workspace, a part of it (`docs/`), or
    /// nothing (a read-only run).
    pub writable: Vec<PathBuf>,
    /// Holds the proxy socket; writable (and the command's TMPDIR). Bound after the
    /// read-only paths, so it may lie inside one (`.coord/runs/<agent>`).
    pub run_dir: PathBuf,
    /// Where the command starts.
    pub cwd: PathBuf,
    /// Existing directories to hide (tmpfs over them): credential stores, and where the
    /// host's Unix sockets live (`/run`: a read-only mount does not stop `connect()`).
    pub hide_dirs: Vec<PathBuf>,
    /// Existing files to hide (`empty` over them).
    pub hide_files: Vec<PathBuf>,
    /// An empty file (`/dev/null` would be a device on a `nodev` mount: unreadable,
    /// and a command should see an empty file rather than an error).
    pub empty: PathBuf,
    /// Paths inside the workspace that stay read-only: every git directory and `.git`
    /// file, and what git's configuration points at (see `git_guard`). A read-only bind
    /// is a mount point: it cannot be renamed away or removed either.
    pub read_only: Vec<PathBuf>,
    /// Inside the run directory (or other writable paths), read-only and pinned (a mount
    /// point cannot be removed or renamed): generated files and sockets the command must
    /// use but not change or delete. Also paths in the workspace that tools outside the
    /// sandbox run later (`.claude/`, `.mcp.json`, ...), each bound from `source`.
    pub protected: Vec<(PathBuf, PathBuf)>,
    /// The whole environment of the command (nothing else is inherited). Not part of the
    /// argv (a command line is readable by every local user): the caller gives it to
    /// bubblewrap's own environment, which bubblewrap passes on.
    pub env: Vec<(String, String)>,
    /// The relay and, after it, the command (`coord sandbox relay … -- cmd …`); its
    /// first element, the coord binary, is bound in read-only (it may live under `/tmp`,
    /// which the sandbox replaces).
    pub inner: Vec<OsString>,
}

fn push(out: &mut Vec<OsString>, args: &[&dyn AsRef<std::ffi::OsStr>]) {
    out.extend(args.iter().map(|a| a.as_ref().to_os_string()));
}

/// bubblewrap's arguments for `plan`. Order matters: later mounts go over earlier ones,
/// so the writable binds come after the read-only root and the hiding after those.
pub fn bwrap_args(plan: &Plan) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    push(
        &mut a,
        &[
            &"--unshare-net",
            &"--unshare-pid",
            &"--unshare-ipc",
            &"--unshare-uts",
            &"--die-with-parent",
            &"--new-session",
            &"--cap-drop",
            &"ALL",
            &"--ro-bind",
            &"/",
            &"/",
            &"--dev",
            &"/dev",
            &"--proc",
            &"/proc",
            &"--tmpfs",
            &"/tmp",
        ],
    );
    for dir in &plan.visible {
        push(&mut a, &[&"--ro-bind", dir, dir]);
    }
    for dir in &plan.writable {
        push(&mut a, &[&"--bind", dir, dir]);
    }
    for p in &plan.read_only {
        push(&mut a, &[&"--ro-bind", p, p]);
    }
    for d in &plan.hide_dirs {
        push(&mut a, &[&"--tmpfs", d]);
    }
    for f in &plan.hide_files {
        push(&mut a, &[&"--ro-bind", &plan.empty, f]);
    }
    // After the hiding: the run directory may lie in a hidden one (`.coord/runs/<agent>`).
    push(&mut a, &[&"--bind", &plan.run_dir, &plan.run_dir]);
    for (source, p) in &plan.protected {
        push(&mut a, &[&"--ro-bind", source, p]);
    }
    if let Some(exe) = plan.inner.first() {
        push(&mut a, &[&"--ro-bind", exe, exe]);
    }
    push(&mut a, &[&"--chdir", &plan.cwd]);
    a.push("--".into());
    a.extend(plan.inner.iter().cloned());
    a
}

/// Variables passed through to the command when set (everything else is dropped: the
/// launcher's keys, tokens and socket addresses stay outside). `--env NAME` adds more.
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
];

/// Whether `name` can be an environment variable's name (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn valid_env_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The command's environment: the variables of `from` that [`PASSED_ENV`] names, every
/// `LC_*`, and the `extra` names (`NAME` passes the launcher's value, `NAME=VALUE` sets it).
pub fn passed_env(from: &[(String, String)], extra: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = from
        .iter()
        .filter(|(k, _)| PASSED_ENV.contains(&k.as_str()) || k.starts_with("LC_"))
        .cloned()
        .collect();
    for e in extra {
        match e.split_once('=') {
            Some((k, v)) => out.push((k.to_string(), v.to_string())),
            None => out.extend(from.iter().filter(|(k, _)| k == e).cloned()),
        }
    }
    out
}

/// The credential stores under `home` that exist (only those can be mounted over).
pub fn credential_paths(home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    // coord's own user configuration wherever XDG_CONFIG_HOME puts it (it may hold keys).
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("coord"));
    let mut dirs: Vec<PathBuf> = HIDDEN_DIRS
        .iter()
        .map(|d| home.join(d))
        .chain(xdg)
        .filter(|p| p.is_dir())
        .collect();
    dirs.dedup();
    let files = HIDDEN_FILES
        .iter()
        .map(|f| home.join(f))
        .filter(|p| p.is_file())
        .collect();
    (dirs, files)
}

/// The proxy variables for a command whose proxy is `url`: every spelling tools read;
/// the namespace's own loopback stays direct (it cannot leave the namespace).
pub fn proxy_env(url: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
        .iter()
        .flat_map(|k| [(k.to_string(), url.to_string()), (k.to_lowercase(), url.to_string())])
        .collect();
    for k in ["NO_PROXY", "no_proxy"] {
        env.push((k.into(), "localhost,127.0.0.1,::1".into()));
    }
    env
}

/// Why the sandbox cannot start, or `None` when `bwrap` works here (it is run once:
/// a container without user namespaces or mount rights fails at this point, clearly).
pub async fn unavailable(bwrap: &Path) -> Option<String> {
    let probe = tokio::process::Command::new(bwrap)
        .args(["--unshare-net", "--ro-bind", "/", "/", "--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .await;
    match probe {
        Err(e) => Some(format!(
            "{} cannot run: {e} (install bubblewrap: apt-get install bubblewrap)",
            bwrap.display()
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "{} cannot create namespaces here: {}",
            bwrap.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// `bwrap` on the PATH.
pub fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
}

/// The socket families a sandboxed command may open: IPv4 and IPv6 (the namespace's
/// loopback, where the relay to the proxy listens), and routing netlink, which C
/// libraries read the interface list through (`getaddrinfo` with `AI_ADDRCONFIG`,
/// `getifaddrs`) and which in the namespace shows only its own loopback (changing
/// anything needs a capability the command lacks).
pub const SOCKET_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// The seccomp program the sandboxed command runs under: `socket()` only for
/// [`SOCKET_FAMILIES`] — no Unix sockets (a host socket the hidden directories do not
/// cover stays out of reach; `socketpair` still works), no vsock (a network namespace
/// does not isolate it), no packet or other netlink sockets (only `NETLINK_ROUTE`) —
/// and no io_uring (it can open sockets without the `socket` system call). Refused calls
/// fail with EPERM; everything else is allowed.
pub fn command_filter() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule};
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let cond = |arg: u8, op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value as u64).map_err(|e| e.to_string())
    };
    // A rule matches (and refuses) when all its conditions hold; any matching rule refuses.
    let other_family = SOCKET_FAMILIES
        .iter()
        .map(|f| cond(0, SeccompCmpOp::Ne, *f))
        .collect::<Result<Vec<_>, _>>()?;
    let other_netlink = vec![
        cond(0, SeccompCmpOp::Eq, libc::AF_NETLINK)?,
        cond(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE)?,
    ];
    let rules = std::collections::BTreeMap::from([
        (
            libc::SYS_socket,
            vec![
                SeccompRule::new(other_family).map_err(|e| e.to_string())?,
                SeccompRule::new(other_netlink).map_err(|e| e.to_string())?,
            ],
        ),
        (libc::SYS_io_uring_setup, vec![]),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())
}

/// Inside the namespace: listens on loopback ports, relays each to its Unix socket
/// (before any filter: the relay itself needs them), runs `argv` under
/// [`command_filter`] and answers its exit code (128 + the signal when killed by one).
pub async fn relay_and_run(forwards: Vec<(u16, PathBuf)>, argv: Vec<OsString>) -> std::io::Result<i32> {
    for (port, socket) in forwards {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        tokio::spawn(crate::relay::relay(listener, socket));
    }
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command to run"))?;
    let filter = command_filter().map_err(std::io::Error::other)?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    // SAFETY: between fork and exec only prctl(NO_NEW_PRIVS) and seccomp(SET_MODE_FILTER)
    // run, over a program compiled before the fork; the error is built without allocating.
    unsafe {
        command.pre_exec(move || {
            seccompiler::apply_filter(&filter).map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))
        });
    }
    run_like_a_shell(command, &program.to_string_lossy()).await
}

/// Runs `command` to its end and answers its exit code as a shell would: 127 when the
/// program is not found, 126 when it cannot be executed (said on stderr, as a shell says it).
pub async fn run_like_a_shell(mut command: tokio::process::Command, name: &str) -> std::io::Result<i32> {
    match command.status().await {
        Ok(status) => Ok(exit_code(status)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("coord sandbox: {name}: command not found");
            Ok(127)
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("coord sandbox: {name}: permission denied (not executable?)");
            Ok(126)
        }
        Err(e) => Err(e),
    }
}

pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(a: &[OsString]) -> String {
        a.iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_argv_binds_in_order() {
        let plan = Plan {
            visible: vec!["/w".into()],
            writable: vec!["/w/docs".into()],
            run_dir: "/tmp/run".into(),
            cwd: "/w/src".into(),
            hide_dirs: vec!["/root/.ssh".into(), "/w/.coord".into()],
            hide_files: vec!["/root/.netrc".into()],
            empty: "/tmp/run/empty".into(),
            read_only: vec!["/w/.git".into()],
            protected: vec![("/tmp/run/api.sock".into(), "/tmp/run/api.sock".into())],
            env: vec![("HTTP_PROXY".into(), "http://a:t@127.0.0.1:3128".into())],
            inner: vec![
                "/x/coord".into(),
                "sandbox".into(),
                "relay".into(),
                "--".into(),
                "curl".into(),
            ],
        };
        // No environment on the command line: it would be readable by every local user.
        assert!(!text(&bwrap_args(&plan)).contains("3128"));
        assert_eq!(
            text(&bwrap_args(&plan)),
            "--unshare-net --unshare-pid --unshare-ipc --unshare-uts --die-with-parent --new-session --cap-drop ALL \
             --ro-bind / / --dev /dev \
             --proc /proc --tmpfs /tmp --ro-bind /w /w --bind /w/docs /w/docs \
             --ro-bind /w/.git /w/.git --tmpfs /root/.ssh --tmpfs /w/.coord \
             --ro-bind /tmp/run/empty /root/.netrc --bind /tmp/run /tmp/run --ro-bind /tmp/run/api.sock /tmp/run/api.sock \
             --ro-bind /x/coord /x/coord --chdir /w/src -- /x/coord sandbox relay -- curl"
        );
    }

    #[test]
    fn only_allowed_variables_pass() {
        let from: Vec<(String, String)> = [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("COORDINATION_API_KEY", "secret"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("SSH_AUTH_SOCK", "/run/user/0/ssh"),
            ("CARGO_HOME", "/c"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        let env = passed_env(&from, &["CARGO_HOME".into(), "MODE=test".into(), "ABSENT".into()]);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "LC_ALL", "CARGO_HOME", "MODE"]);
    }

    #[test]
    fn proxy_variables_in_every_spelling() {
        let env = proxy_env("http://a:t@127.0.0.1:3128");
        for k in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            assert!(env.iter().any(|(n, v)| n == k && v.ends_with(":3128")), "{k}");
        }
        assert!(
            env.iter()
                .any(|(n, v)| n == "NO_PROXY" && v == "localhost,127.0.0.1,::1")
        );
    }

    #[test]
    fn only_existing_credential_stores_are_hidden() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x").unwrap();
        let (dirs, files) = credential_paths(home.path());
        assert_eq!(dirs, [home.path().join(".ssh")]);
        assert_eq!(files, [home.path().join(".netrc")]);
    }
}
