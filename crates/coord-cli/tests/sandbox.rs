//! `coord sandbox run` for real: bubblewrap, the proxy, curl over HTTP and HTTPS
//! (CONNECT) to loopback servers standing in for allowed and refused hosts (names pinned
//! with --resolve; no DNS, no internet), a direct connection that bypasses the proxy,
//! writes outside the workspace, hidden credential files — all asserted from the
//! command's output and coord's network access log and audit trail.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_coord");

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Whether the tools the sandbox tests drive are here (required under CI).
fn tools() -> bool {
    let missing: Vec<&str> = ["bwrap", "curl", "openssl", "python3"]
        .into_iter()
        .filter(|p| !on_path(p))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !under_ci(),
        "the sandbox tests need {missing:?} under CI (.ci/run installs them)"
    );
    eprintln!("\n*** SKIPPING the sandbox tests: {missing:?} not installed (apt-get install bubblewrap curl).\n");
    false
}

/// An HTTP server on `ip` answering every request with where it runs.
fn http_server(ip: &str) -> u16 {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    let ip = ip.to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = format!("hello from {ip}");
            let _ = write!(
                r.get_mut(),
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// An HTTPS server (python's, with a throw-away certificate) on 127.0.0.2.
struct Tls {
    child: std::process::Child,
    port: u16,
}

impl Drop for Tls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tls_server(dir: &Path) -> Tls {
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=tls.test",
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "openssl req");
    let script = "import http.server, ssl, sys\n\
        class H(http.server.BaseHTTPRequestHandler):\n\
        \x20   def do_GET(self):\n\
        \x20       b = b'hello over tls'\n\
        \x20       self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)\n\
        \x20   def log_message(self, *a): pass\n\
        s = http.server.HTTPServer(('127.0.0.2', 0), H)\n\
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])\n\
        s.socket = c.wrap_socket(s.socket, server_side=True)\n\
        print(s.server_address[1], flush=True)\n\
        s.serve_forever()\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(dir.join("cert.pem"))
        .arg(dir.join("key.pem"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    Tls {
        port: line.trim().parse().expect("the TLS server's port"),
        child,
    }
}

struct Project {
    repo: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join(".git/hooks")).unwrap();
        std::fs::write(repo.path().join(".git/config"), "[core]\n").unwrap();
        // Not under /tmp (a CI checkout's target directory is): the sandbox has a private
        // /tmp, which would hide it and make the checks below pass for the wrong reason.
        let home = tempfile::tempdir_in("/var/tmp").unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x password hunter2").unwrap();
        Project { repo, home }
    }

    fn coord(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.repo.path())
            .env("HOME", self.home.path())
            .env_remove("COORD_DATABASE_URL")
            .env_remove("COORDINATION_API_URL")
            .env_remove("COORD_AGENT_ID")
            .env_remove("COORD_AGENT_TYPE");
        c
    }

    fn ok(&self, args: &[&str]) -> Value {
        let out = self.coord(args).output().unwrap();
        assert!(
            out.status.success(),
            "coord {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    fn sandbox(&self, args: &[&str], script: &str) -> Output {
        let mut all = vec!["sandbox", "run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--", "sh", "-c", script]);
        self.coord(&all).output().unwrap()
    }

    /// A network policy for agents of the test profile, assigned to `agent`.
    fn policy(&self, agent: &str) {
        self.ok(&[
            "call",
            "set_network_policy",
            r#"{"name":"sandbox-test","default":"deny","allow":["allowed.test:*","tls.test:*","127.0.0.2:*"]}"#,
        ]);
        std::fs::write(
            self.repo.path().join("profile.yaml"),
            "profiles:\n  - name: sandbox-test\n    agent_type: sandbox\n    trust_level: 2\n    network_policy: sandbox-test\n    allowed_operations: [read]\n",
        )
        .unwrap();
        self.ok(&["profile", "apply", "profile.yaml"]);
        self.ok(&[
            "call",
            "assign_profile",
            &format!(r#"{{"profile":"sandbox-test","target_agent_id":"{agent}"}}"#),
        ]);
    }

    fn log(&self, agent: &str) -> Vec<(String, u64, bool, String)> {
        let v = self.ok(&[
            "call",
            "network_access_log",
            &format!(r#"{{"agent_id":"{agent}","limit":1000}}"#),
        ]);
        let mut rows: Vec<_> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["host"].as_str().unwrap().to_string(),
                    e["port"].as_u64().unwrap(),
                    e["allowed"].as_bool().unwrap(),
                    e["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        rows.reverse();
        rows
    }

    fn sandbox_runs(&self, agent: &str) -> Vec<Value> {
        let v = self.ok(&[
            "call",
            "query_audit",
            &format!(r#"{{"agent_id":"{agent}","operation":"record_sandbox_run"}}"#),
        ]);
        v["entries"].as_array().unwrap().clone()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn only_the_policy_gets_out_of_the_sandbox() {
    if !tools() {
        return;
    }
    let p = Project::new();
    p.policy("bot");
    let web = http_server("127.0.0.2");
    let other = http_server("127.0.0.3");
    let certs = tempfile::tempdir().unwrap();
    let tls = tls_server(certs.path());
    let script = format!(
        "curl -sS -m 10 http://allowed.test:{web}/; echo \" http=$?\"\n\
         curl -sS -m 10 -k https://tls.test:{tls}/; echo \" https=$?\"\n\
         curl -sS -m 10 -o /dev/null -w 'denied=%{{http_code}}' http://denied.test:{other}/; echo\n\
         curl -sS -m 10 -o /dev/null -k https://denied.test:{other}/ 2>/dev/null; echo \"tunnel=$?\"\n\
         curl -sS -m 5 --noproxy '*' http://127.0.0.2:{web}/ 2>/dev/null; echo \"direct=$?\"\n\
         curl -sS -m 5 --noproxy '*' http://127.0.0.3:{other}/ 2>/dev/null; echo \"direct3=$?\"\n\
         echo x > /etc/coord-sandbox-test 2>/dev/null; echo \"etc=$?\"\n\
         echo x > \"$HOME/written\" 2>/dev/null; echo \"home=$?\"\n\
         echo x > .coord/written 2>/dev/null; echo \"state=$(ls -A .coord | grep -c coord.db)\"\n\
         echo x > in-workspace.txt; echo \"workspace=$?\"\n\
         echo \"ssh=$(ls -A \"$HOME/.ssh\" | wc -l) netrc=$(wc -c < \"$HOME/.netrc\")\"\n\
         echo \"agent=$COORD_AGENT_ID\"\n\
         grep CapEff /proc/self/status\n\
         echo \"run=$(ls -A /run | wc -l)\"\n\
         echo \"secret=${{COORD_TEST_SECRET:-none}} key=${{COORDINATION_API_KEY:-none}} kept=${{KEEP_ME:-none}}\"\n\
         echo x > .git/hooks/pre-commit 2>/dev/null; echo \"hooks=$?\"\n\
         echo x >> .git/config 2>/dev/null; echo \"gitconfig=$?\"\n\
         echo x > .git/other; echo \"git=$?\"\n\
         mv .git .git_moved 2>/dev/null; echo \"gitmv=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>/dev/null; echo \"unix=$?\"\n\
         python3 -c 'import socket; socket.socketpair()'; echo \"pair=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)' 2>/dev/null; echo \"vsock=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15)' 2>/dev/null; echo \"uevent=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>/dev/null; echo \"packet=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)'; echo \"route=$?\"\n\
         python3 -c 'import socket; socket.socket(socket.AF_INET6); socket.socket()'; echo \"inet=$?\"\n\
         rm -rf .git/hooks 2>/dev/null; echo \"hooksrm=$?\"\n\
         exit 7",
        tls = tls.port
    );
    let mut all = vec!["sandbox", "run", "--agent", "bot", "--env", "KEEP_ME"];
    for pin in ["allowed.test=127.0.0.2", "tls.test=127.0.0.2", "denied.test=127.0.0.3"] {
        all.extend(["--resolve", pin]);
    }
    all.extend(["--", "sh", "-c", &script]);
    // Secrets in the launcher's environment stay outside; --env passes one in.
    let out = p
        .coord(&all)
        .env("COORD_TEST_SECRET", "hunter2")
        .env("COORDINATION_API_KEY", "operator-key")
        .env("KEEP_ME", "yes")
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(7), "the command's exit code: {t}");
    for want in [
        "hello from 127.0.0.2 http=0",
        "hello over tls https=0",
        "denied=403",
        "workspace=0",
        "ssh=0 netrc=0",
        "agent=bot",
        "runs under network policy sandbox-test (enforced",
        "CapEff:\t0000000000000000",
        "run=0",
        "secret=none key=none kept=yes",
        "pair=0",
        "route=0",
        "inet=0",
        // coord's state is not there (an empty tmpfs over `.coord`): no database.
        "state=0",
    ] {
        assert!(t.contains(want), "{want:?} in:\n{t}");
    }
    for refused in [
        "tunnel=0",
        "direct=0",
        "direct3=0",
        "etc=0",
        "home=0",
        "hooks=0",
        "gitconfig=0",
        "git=0",
        "gitmv=0",
        "hooksrm=0",
        "unix=0",
        "vsock=0",
        "uevent=0",
        "packet=0",
    ] {
        assert!(!t.contains(refused), "{refused:?} must fail:\n{t}");
    }
    assert!(p.repo.path().join("in-workspace.txt").exists());
    assert!(!p.home.path().join("written").exists());
    assert!(!p.repo.path().join(".coord/written").exists());

    // Every attempt through the proxy is in the log; the direct ones never reached it.
    assert_eq!(
        p.log("bot"),
        [
            (
                "allowed.test".to_string(),
                u64::from(web),
                true,
                "allowlisted".to_string()
            ),
            (
                "tls.test".to_string(),
                u64::from(tls.port),
                true,
                "allowlisted".to_string()
            ),
            (
                "denied.test".to_string(),
                u64::from(other),
                false,
                "not_allowlisted".to_string()
            ),
            (
                "denied.test".to_string(),
                u64::from(other),
                false,
                "not_allowlisted".to_string()
            ),
        ]
    );
    let runs = p.sandbox_runs("bot");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["result"]["enforcement"], "namespace", "{:?}", runs[0]);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The attack of the security review (issue 57, finding 1): a sandboxed command plants a
/// git directory whose config runs a command (`core.fsmonitor`) and points `.git/commondir`
/// at it, so that the next `git status` on the host would run it. Every file git reads as
/// configuration or code — in `.git`, in a nested repository, and what the config points
/// at inside the workspace — is read-only inside; a real `git status` afterwards runs
/// nothing the command wrote.
#[test]
fn nothing_git_reads_or_runs_can_be_planted_from_inside() {
    if !tools() {
        return;
    }
    let p = Project::new();
    let w = p.repo.path();
    std::fs::remove_dir_all(w.join(".git")).unwrap();
    git(w, &["init", "-q", "-b", "main", "."]);
    for d in ["tools", "vendor/dep", "scripts"] {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    std::fs::write(w.join("tools/fsmon"), "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::write(w.join("shared.gitconfig"), "[alias]\n\tst = status\n").unwrap();
    git(&w.join("vendor/dep"), &["init", "-q", "."]);
    git(w, &["config", "core.fsmonitor", "tools/fsmon"]);
    git(w, &["config", "include.path", "../shared.gitconfig"]);
    git(
        w,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    );
    let marker = p.home.path().join("pwned");
    let script = format!(
        "for f in .git/commondir .git/config.worktree .git/info/attributes .git/objects/info/alternates \
                  .git/worktrees/x/gitdir .git/modules/m/config .git/hooks/post-checkout .git/config .git/HEAD \
                  vendor/dep/.git/config tools/fsmon shared.gitconfig; do\n\
           mkdir -p \"$(dirname \"$f\")\" 2>/dev/null; (echo x >> \"$f\") 2>/dev/null && echo \"wrote $f\"\n\
         done\n\
         mkdir -p evil && cp -r .git/objects .git/refs evil/ && echo 'ref: refs/heads/main' > evil/HEAD\n\
         printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n' > evil/config\n\
         (echo \"$PWD/evil\" > .git/commondir) 2>/dev/null && echo 'wrote commondir'\n\
         mv .git moved 2>/dev/null && echo 'moved .git'\n\
         mkdir -p src/.git && echo nested=$?\n\
         echo done",
        marker = marker.display()
    );
    let out = p.sandbox(&[], &script);
    let t = text(&out);
    assert!(t.contains("done") && t.contains("nested=0"), "{t}");
    assert!(
        !t.contains("wrote ") && !t.contains("moved"),
        "nothing git reads is writable:\n{t}"
    );
    // What no mount can stop is named after the run.
    assert!(t.contains("created") && t.contains("src/.git"), "{t}");
    // The host's git runs nothing the command planted.
    let status = git(w, &["status", "--porcelain"]);
    assert!(status.contains("evil/"), "{status}");
    assert!(!marker.exists(), "git status on the host ran the planted command");
    assert!(!w.join(".git/commondir").exists());

    // A setting naming a path inside the workspace that does not exist could be created
    // from inside: the run is refused, naming it.
    git(w, &["config", "core.hooksPath", ".husky"]);
    let out = p.sandbox(&[], "echo ran");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert!(
        t.contains("core.hookspath") && t.contains(".husky") && !t.contains("ran\n"),
        "{t}"
    );
}

#[test]
fn an_agent_without_a_profile_gets_no_network() {
    if !tools() {
        return;
    }
    let p = Project::new();
    let web = http_server("127.0.0.2");
    let out = p.sandbox(
        &["--resolve", "allowed.test=127.0.0.2"],
        &format!("curl -sS -o /dev/null -w '%{{http_code}}' http://allowed.test:{web}/"),
    );
    let t = text(&out);
    assert!(t.contains("403"), "{t}");
    assert!(t.contains("network policy deny_all"), "{t}");
}

#[test]
fn without_the_sandbox_the_run_is_advisory_and_audited() {
    if !tools() {
        return;
    }
    let p = Project::new();
    p.policy("loose");
    let web = http_server("127.0.0.2");
    // The proxy variables are set, but nothing stops a program that ignores them.
    // The environment is the sandbox's: a secret of the caller's does not pass.
    let script = format!(
        "env | grep -c '^HTTPS_PROXY=http://loose:'; echo \"secret=[${{AWS_SECRET_ACCESS_KEY:-}}]\"; curl -sS --noproxy '*' http://127.0.0.2:{web}/"
    );
    let out = p
        .coord(&[
            "sandbox",
            "run",
            "--agent",
            "loose",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .env("AWS_SECRET_ACCESS_KEY", "leaked")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("hello from 127.0.0.2") && t.contains("advisory"), "{t}");
    assert!(t.contains("secret=[]"), "{t}");
    let runs = p.sandbox_runs("loose");
    assert_eq!(runs[0]["result"]["enforcement"], "advisory", "{:?}", runs[0]);

    // Without bubblewrap, the sandbox refuses to start (unless --no-sandbox).
    let mut c = p.coord(&["sandbox", "run", "--agent", "loose", "--", "true"]);
    c.env("PATH", "/nonexistent");
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("bubblewrap"), "{}", text(&out));
    let mut c = p.coord(&["--json", "sandbox", "run", "--agent", "loose", "--", "true"]);
    c.env("PATH", "/nonexistent");
    let v: Value = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
    assert_eq!(v["error"], "sandbox_unavailable");
    // Outside a git repository the sandbox does not start (it would make the directory writable).
    let bare = tempfile::tempdir().unwrap();
    let out = p
        .coord(&["sandbox", "run", "--", "true"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("git repository"), "{}", text(&out));
    // Bad input is refused before anything runs.
    let out = p
        .coord(&["sandbox", "run", "--resolve", "nonsense", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// A child process killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `coord serve --proxy-port`: agents authenticate with their managed API key.
#[test]
fn serve_runs_the_proxy_for_agents_with_a_managed_key() {
    if !tools() {
        return;
    }
    let p = Project::new();
    p.policy("keyed");
    let created = p.ok(&[
        "--json",
        "--agent-id",
        "keyed",
        "--agent-type",
        "sandbox",
        "keys",
        "create",
    ]);
    let key = created["api_key"].as_str().unwrap().to_string();
    let web = http_server("127.0.0.2");
    let other = http_server("127.0.0.3");
    let server = p
        .coord(&["serve", "--port", "0", "--proxy-port", "0"])
        .env("COORDINATION_API_KEYS", "serve-proxy-test")
        .env_remove("API_PORT")
        .env_remove("COORD_PROXY_PORT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = Killed(server);
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("listening on http://"), "{first}");
    let second = lines.next().unwrap().unwrap();
    let proxy = second
        .split_whitespace()
        .nth(5)
        .unwrap_or_else(|| panic!("no proxy address in {second:?}"))
        .to_string();
    let curl = |user: &str, secret: &str, url: &str| {
        let out = Command::new("curl")
            .args(["-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-x"])
            .arg(format!("http://{user}:{secret}@{proxy}"))
            .arg(url)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(curl("keyed", &key, &format!("http://127.0.0.2:{web}/")), "200");
    assert_eq!(curl("keyed", &key, &format!("http://127.0.0.3:{other}/")), "403");
    assert_eq!(curl("keyed", "wrong", &format!("http://127.0.0.2:{web}/")), "407");
    assert_eq!(
        curl("someone", &key, &format!("http://127.0.0.2:{web}/")),
        "407",
        "the key's own agent only"
    );
    drop(server);
    assert_eq!(
        p.log("keyed"),
        [
            ("127.0.0.2".to_string(), u64::from(web), true, "allowlisted".to_string()),
            (
                "127.0.0.3".to_string(),
                u64::from(other),
                false,
                "not_allowlisted".to_string()
            ),
        ]
    );
}

/// The coord binary may live under /tmp (a CI checkout does), which the sandbox replaces
/// with its own; a command that does not exist is reported as a shell would.
#[test]
fn the_binary_may_live_under_tmp_and_missing_commands_say_so() {
    if !tools() {
        return;
    }
    let p = Project::new();
    let bin_dir = tempfile::tempdir().unwrap();
    let copy = bin_dir.path().join("coord");
    std::fs::copy(BIN, &copy).unwrap();
    let run = |args: &[&str]| {
        Command::new(&copy)
            .args(args)
            .current_dir(p.repo.path())
            .env("HOME", p.home.path())
            .env_remove("COORD_DATABASE_URL")
            .output()
            .unwrap()
    };
    let out = run(&["sandbox", "run", "--", "sh", "-c", "echo inside"]);
    assert!(out.status.success() && text(&out).contains("inside"), "{}", text(&out));
    let out = run(&["sandbox", "run", "--", "no-such-command-here"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    assert!(
        text(&out).contains("no-such-command-here: command not found"),
        "{}",
        text(&out)
    );
    let out = run(&["sandbox", "run", "--no-sandbox", "--", "no-such-command-here"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    let out = run(&["sandbox", "run", "--env", "=x", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
