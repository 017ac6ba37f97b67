#!/usr/bin/env python3
"""Real agent CLIs (Claude Code, Codex) against coord, driven by the scripted model.

    e2e.py <scenario> --coord PATH --bin DIR   (DIR holds the `claude` and `codex` CLIs)

Every scenario builds a scratch repository and one HOME per agent, configures them as
a user would (`coord init claude`, `coord init codex --write`), runs the CLIs with
stdin closed, and asserts on coord's state and audit trail — never on the CLIs' exit
codes (they exit 0 when a tool call is refused). Prints diagnostics and one verdict
line; exits non-zero on failure.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRUB = ["CLAUDE_CODE_SESSION_ID", "CLAUDECODE", "CLAUDE_CONFIG_DIR", "CLAUDE_PID", "CLAUDE_PROJECT_DIR",
         "COORD_AGENT_ID", "COORD_AGENT_TYPE", "COORD_DATABASE_URL", "CODEX_HOME", "COORDINATION_API_URL",
         "COORDINATION_API_KEY", "AGENT_TYPE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY"]


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class World:
    def __init__(self, args):
        self.coord_bin = os.path.abspath(args.coord)
        self.strands_python = getattr(args, "strands_python", None)
        self.cli_bin = os.path.abspath(args.bin)
        # Another Claude Code (e.g. 2.1.328 for its approval behaviour), first on PATH.
        self.claude_bin = os.path.abspath(args.claude_bin) if getattr(args, "claude_bin", None) else None
        # Aider's script in its own virtual environment (the aider scenarios).
        self.aider = os.path.abspath(args.aider) if getattr(args, "aider", None) else None
        self.dir = tempfile.mkdtemp(prefix="coord-e2e-")
        self.repo = os.path.join(self.dir, "repo")
        os.makedirs(os.path.join(self.repo, "src"))
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir)
        os.symlink(self.coord_bin, os.path.join(bindir, "coord"))
        first = f"{self.claude_bin}:" if self.claude_bin else ""
        self.path = f"{bindir}:{first}{self.cli_bin}:{os.environ.get('PATH', '')}"
        self.git("init", "-q")
        with open(os.path.join(self.repo, "src", "shared.rs"), "w") as f:
            f.write("original\n")
        self.git("add", ".")
        self.git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
        self.log = os.path.join(self.dir, "model.jsonl")
        self.scripts = os.path.join(self.dir, "scripts.json")
        self.model = None
        self.children = []
        self.cleanup = []

    def git(self, *a):
        subprocess.run(["git", *a], cwd=self.repo, check=True)

    def base_env(self, home, extra=None):
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        tmp = os.path.join(home, "tmp")
        os.makedirs(tmp, exist_ok=True)
        os.chmod(tmp, 0o700)
        env.update({"HOME": home, "PATH": self.path, "TMPDIR": tmp, "CLAUDE_CODE_TMPDIR": tmp, "XDG_RUNTIME_DIR": tmp,
                    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        env.update(extra or {})
        return env

    def home(self, name):
        h = os.path.join(self.dir, name)
        os.makedirs(h, exist_ok=True)
        return h

    def start_model(self, scripts):
        with open(self.scripts, "w") as f:
            json.dump(scripts, f)
        env = dict(os.environ, SCRIPTS=self.scripts, FAKE_LOG=self.log)
        self.model = subprocess.Popen([sys.executable, os.path.join(HERE, "scripted_model.py"), "0"],
                                      stdout=subprocess.PIPE, env=env, text=True)
        self.port = int(self.model.stdout.readline())

    def coord(self, *a, env=None):
        out = subprocess.run(["coord", "--json", *a], cwd=self.repo, capture_output=True, text=True,
                             env=self.base_env(self.home("observer"), env))
        try:
            return json.loads(out.stdout)
        except json.JSONDecodeError:
            raise Fail(f"coord {a}: not JSON: {out.stdout!r} {out.stderr!r}")

    def init_claude(self, home, *flags, cwd=None):
        out = subprocess.run(["coord", "init", "claude", *flags], cwd=cwd or self.repo, capture_output=True,
                             text=True, env=self.base_env(home))
        check(out.returncode == 0, f"coord init claude: {out.stderr}")
        return out.stdout

    def claude_env(self, home, extra=None):
        return self.base_env(home, dict({"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}",
                                         "ANTHROPIC_API_KEY": "dummy"}, **(extra or {})))

    def claude(self, home, script, allowed, extra=None, cwd=None):
        cmd = ["claude", "-p", f"SCRIPT:{script}", "--output-format", "json", "--allowedTools", *allowed]
        # Output to files: a pipe nobody reads could fill and stall the CLI.
        out = open(os.path.join(home, f"{script}.out"), "w")
        p = subprocess.Popen(cmd, cwd=cwd or self.repo, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=self.claude_env(home, extra), start_new_session=True)
        self.children.append(p)
        return p

    def entries(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def wait_turn(self, script, turn, proc, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(e.get("script") == script and e.get("turn", -1) >= turn for e in self.entries()):
                return True
            if proc is not None and proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def diagnostics(self):
        print("--- model log ---")
        for e in self.entries():
            print(json.dumps(e)[:600])
        for name in ("hooks.log",):
            p = os.path.join(self.repo, ".coord", name)
            if os.path.exists(p):
                print(f"--- {name} ---")
                print(open(p).read()[-3000:])
        try:
            print("--- audit ---")
            for e in self.coord("audit", "--limit", "60")["entries"]:
                print(e["agent_id"], e["operation"], e["success"], e.get("error_code"), json.dumps(e["parameters"])[:160])
        except Exception as ex:  # diagnostics must not hide the failure
            print(f"(no audit: {ex})")

    def close(self):
        # The whole group: a session's tool commands and MCP servers outlive its leader.
        for p in self.children:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.model:
            self.model.kill()
        if os.environ.get("E2E_KEEP"):
            print(f"kept {self.dir} (E2E_KEEP)")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
            for d in self.cleanup:
                shutil.rmtree(d, ignore_errors=True)


def two_claude_sessions(w):
    """Two Claude Code sessions on one host, both set up by `coord init claude` only."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    w.start_model({
        "A_hold": [{"tool": "acquire_lock", "input": {"file_path": "src/shared.rs", "reason": "A edits", "ttl_minutes": 30}},
                   {"tool": "Write", "input": {"file_path": shared, "content": "A was here\n"}},
                   # Claude Code refuses a plain `sleep N` ("use Monitor"): a Python sleep holds.
                   {"tool": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(90)'",
                                              "description": "hold the file"}},
                   {"text": "A done"}],
        "B_clobber": [{"tool": "Write", "input": {"file_path": shared, "content": "B was here\n"}},
                      {"text": "B done"}],
    })
    home_a, home_b = w.home("home-a"), w.home("home-b")
    w.init_claude(home_a)
    w.init_claude(home_b)
    keep = {"COORD_RELEASE_GRACE_SECONDS": "300"}
    a = w.claude(home_a, "A_hold", ["mcp__coord__acquire_lock", "Write", "Bash"], keep)
    check(w.wait_turn("A_hold", 2, a), "session A never reached its third step (lock, write, then hold)")
    b = w.claude(home_b, "B_clobber", ["Write"], keep)
    b.wait(timeout=120)
    check(a.poll() is None, "session A ended before B was done: the check would prove nothing")
    content = open(shared).read()
    locks = w.coord("lock", "list")["locks"]
    denied = w.coord("audit", "--operation", "check_edit", "--result", "failure")["entries"]
    check(content == "A was here\n", f"the file holds {content!r}, not A's content")
    check(len(locks) == 1 and locks[0]["file_path"] == "src/shared.rs", f"locks: {locks}")
    holder = locks[0]["locked_by"]
    check(holder.startswith("claude-code-"), f"A's identity {holder!r} is not a session's own")
    check(len(denied) == 1, f"B's denial audited once: {denied}")
    check(denied[0]["agent_id"] != holder and denied[0]["agent_id"].startswith("claude-code-"),
          f"B was denied as {denied[0]['agent_id']!r}, A holds as {holder!r}")
    check(denied[0]["result"].get("locked_by") == holder, f"the denial names the holder: {denied[0]['result']}")
    b_seen = [e for e in w.entries() if e.get("script") == "B_clobber" and e.get("turn") == 1]
    check(b_seen and b_seen[-1].get("last_is_error"), f"B's Write came back as an error to B's model: {b_seen}")
    return f"A={holder} B={denied[0]['agent_id']}"


def two_worktrees(w):
    """Two Claude Code sessions in two worktrees of one repository, each set up by `coord
    init claude` in its own worktree: A (main checkout) locks and writes src/shared.rs; B's
    Write of the same path in its worktree is denied; both are listed with their worktree."""
    wt = os.path.join(w.dir, "wt2")
    w.git("worktree", "add", "-q", "-b", "feature", wt)
    hold = {"tool": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(90)'",
                                      "description": "stay alive"}}
    w.start_model({
        "WA_hold": [{"tool": "acquire_lock", "input": {"file_path": "src/shared.rs", "reason": "A edits", "ttl_minutes": 30}},
                    {"tool": "Write", "input": {"file_path": os.path.join(w.repo, "src", "shared.rs"), "content": "A was here\n"}},
                    hold, {"text": "A done"}],
        "WB_clobber": [{"tool": "Write", "input": {"file_path": os.path.join(wt, "src", "shared.rs"), "content": "B was here\n"}},
                       hold, {"text": "B done"}],
    })
    home_a, home_b = w.home("home-wa"), w.home("home-wb")
    w.init_claude(home_a)
    joined = w.init_claude(home_b, cwd=wt)
    check("joined the coordination space" in joined, f"coord init in the worktree joins the main checkout's: {joined}")
    check(not os.path.exists(os.path.join(wt, ".coord", "coord.db")), "the worktree has a database of its own")
    keep = {"COORD_RELEASE_GRACE_SECONDS": "300"}
    a = w.claude(home_a, "WA_hold", ["mcp__coord__acquire_lock", "Write", "Bash"], keep)
    check(w.wait_turn("WA_hold", 2, a), "session A never reached its third step (lock, write, then hold)")
    b = w.claude(home_b, "WB_clobber", ["Write", "Bash"], keep, cwd=wt)
    check(w.wait_turn("WB_clobber", 1, b), "session B never reached its second step (write, then hold)")
    check(a.poll() is None and b.poll() is None, "a session ended before both were listed")
    content = open(os.path.join(wt, "src", "shared.rs")).read()
    check(content == "original\n", f"B's worktree file holds {content!r}: B's Write was not refused")
    locks = w.coord("lock", "list")["locks"]
    check(len(locks) == 1 and locks[0]["file_path"] == "src/shared.rs", f"locks: {locks}")
    holder = locks[0]["locked_by"]
    denied = w.coord("audit", "--operation", "check_edit", "--result", "failure")["entries"]
    check(len(denied) == 1 and denied[0]["agent_id"] != holder, f"B's denial audited once, as B: {denied}")
    check(denied[0]["result"].get("locked_by") == holder, f"the denial names A: {denied[0]['result']}")
    agents = {x["agent_id"]: x for x in w.coord("agents", "discover")["agents"]}
    mine = agents.get(holder, {})
    theirs = agents.get(denied[0]["agent_id"], {})
    real = lambda p: os.path.realpath(p) if p else None
    check(real(mine.get("worktree")) == real(w.repo) and mine.get("branch"), f"A is listed with its worktree: {mine}")
    check(theirs.get("branch") == "feature" and real(theirs.get("worktree")) == real(wt),
          f"B is listed with its worktree and branch: {theirs}")
    return f"A={holder} ({mine.get('worktree')}) B={denied[0]['agent_id']} ({theirs.get('worktree')}, {theirs.get('branch')})"


def claude_guardrails(w):
    """Claude Code, set up by `coord init claude` only, runs a destructive Bash command, the
    same deletion through `python3 -c`, and a benign one: the hook denies the first two
    with an approval id each (two guardrail violations), the third runs; after a person
    approves, the same command passes once."""
    data = os.path.join(w.repo, "data")
    os.makedirs(data)
    with open(os.path.join(data, "keep.txt"), "w") as f:
        f.write("precious\n")
    w.start_model({
        "G_destroy": [{"tool": "Bash", "input": {"command": "rm -rf data", "description": "clean up"}},
                      {"tool": "Bash", "input": {"command": "python3 -c \"import shutil; shutil.rmtree('data')\"",
                                                 "description": "clean up in python"}},
                      {"tool": "Bash", "input": {"command": "echo ok > benign.txt", "description": "benign"}},
                      {"text": "G done"}],
        "G_again": [{"tool": "Bash", "input": {"command": "rm -rf data", "description": "clean up, approved"}},
                    {"text": "G again done"}],
    })
    home = w.home("home-guard")
    w.init_claude(home)
    # One named agent over two sessions, so the approval of the first binds the second.
    me = {"COORD_AGENT_ID": "guarded-claude"}
    g = w.claude(home, "G_destroy", ["Bash"], me)
    g.wait(timeout=120)
    check(os.path.exists(os.path.join(data, "keep.txt")), "the destructive command ran")
    check(os.path.exists(os.path.join(w.repo, "benign.txt")), "the benign command did not run")
    refused = w.coord("audit", "--operation", "check_guardrails", "--result", "failure")["entries"]
    check(len(refused) == 2 and all(e["error_code"] == "destructive_operation_blocked" for e in refused),
          f"each denial is audited once: {refused}")
    rm = [e for e in refused if e["parameters"].get("command") == "rm -rf data"]
    check(len(rm) == 1, f"the rm -rf denial is audited: {refused}")
    agent = rm[0]["agent_id"]
    check(agent == "guarded-claude", f"denied as the session's agent, not {agent!r}")
    approval_id = rm[0]["result"].get("approval_id")
    check(approval_id, f"the refusal names an approval: {rm[0]['result']}")
    explained = w.coord("profile", "explain", "guarded-claude", "--type", "claude_code")
    check(explained.get("guardrail_violations") == 2, f"two violations are counted: {explained}")
    seen = [e for e in w.entries() if e.get("script") == "G_destroy" and e.get("turn") == 1]
    check(seen and seen[-1].get("last_is_error"), f"the denial came back to the model: {seen}")
    decided = w.coord("approvals", "approve", approval_id)
    check(decided.get("approval", {}).get("status") == "approved", f"a person approved it: {decided}")
    # The same agent runs exactly the same command again: it passes once.
    again = w.claude(home, "G_again", ["Bash"], me)
    again.wait(timeout=120)
    check(not os.path.exists(data), "the approved command did not run")
    used = w.coord("approvals", "show", approval_id)["approval"]
    check(used["status"] == "used", f"the approval was used once: {used}")
    return f"denied (rm -rf and python3 -c) and audited as {agent}, 2 violations; approved once ({approval_id})"


def killed_claude(w):
    """A Claude Code session SIGKILLed while holding a claimed task and a lock."""
    w.start_model({
        "K_work": [{"tool": "get_work", "input": {}},
                   {"tool": "acquire_lock", "input": {"file_path": "src/k.rs", "reason": "working", "ttl_minutes": 60}},
                   {"tool": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(120)'",
                                              "description": "work"}},
                   {"text": "K done"}],
    })
    task = w.coord("--agent-id", "planner", "work", "submit", "build", "build it")["task_id"]
    home = w.home("home-k")
    w.init_claude(home)
    k = w.claude(home, "K_work", ["mcp__coord__get_work", "mcp__coord__acquire_lock", "Bash"],
                 {"COORD_RELEASE_GRACE_SECONDS": "5"})
    check(w.wait_turn("K_work", 2, k), "the session never reached its working step")
    check(k.poll() is None, "the session ended before it could be killed (its working step was refused?)")
    locks = w.coord("lock", "list")["locks"]
    check([l["file_path"] for l in locks] == ["src/k.rs"], f"the session holds its lock: {locks}")
    killed = time.time()
    os.kill(k.pid, signal.SIGKILL)
    deadline = killed + 90
    while time.time() < deadline and w.coord("lock", "list")["locks"]:
        time.sleep(0.25)
    freed = time.time() - killed
    check(not w.coord("lock", "list")["locks"], "the dead session's lock was never released")
    claimed = w.coord("--agent-id", "survivor", "work", "claim")
    check(claimed.get("task_id") == task, f"another agent takes the task over: {claimed}")
    check(claimed.get("attempt") == 2, f"the attempt was counted: {claimed}")
    lock = w.coord("--agent-id", "survivor", "lock", "acquire", "src/k.rs")
    check(lock.get("action") == "acquired", f"another agent takes the lock: {lock}")
    return f"SIGKILL -> lock free and task claimable in {freed:.1f} s (grace 5 s)"


def codex_vs_claude(w):
    """Codex CLI acquires a lock through MCP and is refused a file a Claude session holds."""
    w.start_model({
        "A_lock": [{"tool": "acquire_lock", "input": {"file_path": "src/shared.rs", "reason": "claude edits"}},
                   {"tool": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(60)'",
                                              "description": "hold the file"}},
                   {"text": "A done"}],
        "C_lock": [{"tool": "acquire_lock", "input": {"file_path": "src/codex.rs", "reason": "codex edits"},
                    "record_context": True},
                   {"tool": "acquire_lock", "input": {"file_path": "src/shared.rs", "reason": "codex too"}},
                   {"text": "C done"}],
    })
    home_a = w.home("home-a")
    w.init_claude(home_a)
    a = w.claude(home_a, "A_lock", ["mcp__coord__acquire_lock", "Bash"], {"COORD_RELEASE_GRACE_SECONDS": "off"})
    check(w.wait_turn("A_lock", 1, a), "the Claude session never took its lock")
    held = w.coord("lock", "list")["locks"]
    check(len(held) == 1, f"the Claude session holds src/shared.rs: {held}")
    claude_id = held[0]["locked_by"]
    codex_home = w.home("codex-home")
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(f'''model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{w.port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
''')
    env = w.base_env(w.home("home-c"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy",
                                         "COORD_RELEASE_GRACE_SECONDS": "0"})
    out = subprocess.run(["coord", "init", "codex", "--write"], cwd=w.repo, capture_output=True, text=True, env=env)
    check(out.returncode == 0, f"coord init codex --write: {out.stderr}")
    c = subprocess.run(["codex", "exec", "--skip-git-repo-check", "--json", "SCRIPT:C_lock"], cwd=w.repo,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=180)
    # What Codex did, from the audit trail. (Whether its own lock outlives it depends on
    # how Codex stops its MCP server: closed input or SIGTERM release it, SIGKILL leaves it
    # to heartbeat staleness — so it is not asserted here.)
    acquired = [e for e in w.coord("audit", "--operation", "acquire_lock", "--limit", "50")["entries"]
                if e["parameters"].get("file_path") == "src/codex.rs" and e["success"]]
    check(len(acquired) == 1, f"Codex took its lock once: {acquired} / codex said: {c.stdout[-1500:]}")
    codex_id = acquired[0]["agent_id"]
    check(acquired[0]["agent_type"] == "codex", f"{acquired[0]}")
    check(codex_id != claude_id, f"Codex is not the Claude session: {codex_id}")
    locks = {l["file_path"]: l for l in w.coord("lock", "list")["locks"]}
    check(locks.get("src/shared.rs", {}).get("locked_by") == claude_id, f"the Claude session keeps its file: {locks}")
    tries = [e for e in w.coord("audit", "--agent", codex_id, "--operation", "acquire_lock")["entries"]
             if e["parameters"].get("file_path") == "src/shared.rs"]
    check(len(tries) == 1 and tries[0]["result"].get("action") == "blocked"
          and tries[0]["result"].get("locked_by") == claude_id, f"Codex was refused the Claude session's file: {tries}")
    # `coord init codex --write` told it how to work beside others, in AGENTS.md.
    sent = "\n".join(e["context"] for e in w.entries() if e.get("script") == "C_lock" and "context" in e)
    check("Working beside other agents (coord)" in sent and "write_handoff" in sent,
          f"AGENTS.md's coord section reached Codex's model: {sent[:2000]}")
    # What every Codex model request carries of coord (its tool list): at most 6k tokens.
    sizes = [e["coord_chars"] for e in w.entries() if e.get("script") == "C_lock" and e.get("coord_chars")]
    check(sizes and max(sizes) <= 24000, f"coord's part of a Codex request: {sizes} characters")
    return f"codex={codex_id} claude={claude_id} codex_coord_chars={max(sizes)}"


def direct_handover(w):
    """`mcp-direct = "on"` in the repository's .coord/config.toml: the coord mcp of Claude
    Code (which gives it Unix sockets) and of Codex (pipes) hand them to the repository's
    coordinator, which serves both agents itself; the lock and the refusal are as relayed."""
    os.makedirs(os.path.join(w.repo, ".coord"), exist_ok=True)
    with open(os.path.join(w.repo, ".coord", "config.toml"), "w") as f:
        f.write('mcp-direct = "on"\nlog = "coord_mcp=info"\n')
    detail = codex_vs_claude(w)
    logs = glob.glob(os.path.join(w.repo, ".coord", "**", "*.server.log"), recursive=True)
    text = "".join(open(p).read() for p in logs)
    handed = text.count("serving an agent on the pipes its coord mcp handed over")
    check(handed >= 2, f"both agents' coord mcp handed their pipes over: {handed} in {logs}: {text[-2000:]}")
    return f"{detail} handed_over={handed}"


def codex_config(w, home, sandbox=False):
    """A CODEX_HOME whose model is the scripted one; Codex's own sandbox off, as in a
    container, unless `sandbox` (then `coord init codex` chooses its permission profile).
    Its model catalog gives the scripted model Codex's `apply_patch` tool (freeform: the
    patch text is the call's input), which Codex offers only to models declaring it."""
    catalog = os.path.join(home, "models.json")
    with open(catalog, "w") as f:
        json.dump({"models": [{
            "slug": "fake-model", "display_name": "Fake", "base_instructions": "You are a scripted test model.",
            "apply_patch_tool_type": "freeform", "supported_reasoning_levels": [], "shell_type": "shell_command",
            "visibility": "list", "supported_in_api": True, "priority": 1, "support_verbosity": False,
            "truncation_policy": {"mode": "tokens", "limit": 10000}, "experimental_supported_tools": []}]}, f)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'''model = "fake-model"
model_catalog_json = "{catalog}"
model_provider = "fake"
approval_policy = "never"
{'' if sandbox else 'sandbox_mode = "danger-full-access"'}
{f'[projects."{w.repo}"]{chr(10)}trust_level = "trusted"{chr(10)}' if sandbox else ''}

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{w.port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
''')


def codex_hooks(w):
    """Codex set up by `coord init codex --write` only (its MCP server and its hooks; the
    hooks trusted as a user would, here with Codex's CI switch): its shell write of a file
    another agent holds is refused and the file unchanged, its `rm -rf` is refused by the
    guardrails, and each refusal is audited under the Codex session's own identity — the
    one its MCP server speaks as; a second Codex session is another agent."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    other = w.coord("lock", "acquire", "src/shared.rs", env={"COORD_AGENT_ID": "other-agent"})
    check(other.get("success"), f"another agent holds src/shared.rs: {other}")
    w.start_model({
        "X_shell": [{"tool": "acquire_lock", "input": {"file_path": "src/codex.rs", "reason": "codex"}},
                    {"tool": "exec_command", "input": {"cmd": "printf codex > src/shared.rs; echo rc=$?"}},
                    {"tool": "apply_patch", "input": "*** Begin Patch\n*** Update File: src/shared.rs\n@@\n-original\n"
                                                     "+patched by codex\n*** Add File: src/patched.rs\n+new\n*** End Patch\n"},
                    {"tool": "apply_patch", "input": "*** Begin Patch\n*** Add File: src/codex.rs\n+mine\n*** End Patch\n"},
                    {"tool": "exec_command", "input": {"cmd": "rm -rf src"}},
                    {"text": "X done"}],
        "Y_lock": [{"tool": "acquire_lock", "input": {"file_path": "src/second.rs", "reason": "second codex"}},
                   {"text": "Y done"}],
    })
    codex_home = w.home("codex-hooks-home")
    codex_config(w, codex_home)
    env = w.base_env(w.home("home-x"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy",
                                         "COORD_RELEASE_GRACE_SECONDS": "0"})
    out = subprocess.run(["coord", "init", "codex", "--write"], cwd=w.repo, capture_output=True, text=True, env=env)
    check(out.returncode == 0 and "trust" in out.stdout, f"coord init codex --write: {out.stdout} {out.stderr}")
    hooks = json.load(open(os.path.join(codex_home, "hooks.json")))["hooks"]
    check({"SessionStart", "PreToolUse", "UserPromptSubmit", "SessionEnd"} <= set(hooks), f"hooks: {hooks}")
    run = lambda script: subprocess.run(
        ["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json", f"SCRIPT:{script}"],
        cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=180)
    c = run("X_shell")
    check(open(shared).read() == "original\n", f"the held file was changed: {open(shared).read()!r} / {c.stdout[-800:]}")
    check(not os.path.exists(os.path.join(w.repo, "src", "patched.rs")), "the refused patch applied in part")
    check(os.path.exists(os.path.join(w.repo, "src", "codex.rs")), f"a patch of its own file was refused: {c.stdout[-800:]}")
    check(os.path.isdir(os.path.join(w.repo, "src")), "rm -rf src ran")
    offered = [e for e in w.entries() if e.get("script") == "X_shell" and e.get("tool") == "apply_patch"]
    check(len(offered) == 2, f"Codex offered apply_patch and the model called it twice: {offered}")
    locks = [e for e in w.coord("audit", "--operation", "acquire_lock")["entries"]
             if e["parameters"].get("file_path") == "src/codex.rs" and e["success"]]
    check(len(locks) == 1, f"Codex took its lock over MCP: {locks}")
    codex_id = locks[0]["agent_id"]
    check(codex_id.startswith("codex-"), f"the Codex session's own identity: {codex_id}")
    edits = [e for e in w.coord("audit", "--agent", codex_id, "--operation", "check_edit")["entries"]
             if not e["success"]]
    check(len(edits) == 2 and all(e["error_code"] == "file_locked" for e in edits),
          f"the shell write and the patch refused as {codex_id}: {edits}")
    check(any("src/patched.rs" in e["parameters"].get("paths", []) for e in edits),
          f"the patch was checked with every file it touches: {edits}")
    guards = [e for e in w.coord("audit", "--agent", codex_id, "--operation", "check_guardrails")["entries"]
              if not e["success"]]
    check(any("rm -rf src" in str(e["parameters"].get("command")) for e in guards),
          f"rm -rf refused by the guardrails as {codex_id}: {guards}")
    c2 = run("Y_lock")
    seconds = [e for e in w.coord("audit", "--operation", "acquire_lock")["entries"]
               if e["parameters"].get("file_path") == "src/second.rs" and e["success"]]
    check(seconds and seconds[0]["agent_id"] != codex_id and seconds[0]["agent_id"].startswith("codex-"),
          f"a second Codex session is another agent: {seconds} / {c2.stdout[-500:]}")
    return f"{codex_id}: shell write, apply_patch and rm -rf refused, audited; second session {seconds[0]['agent_id']}"


def missing_coord(w):
    """Fail closed: Claude Code and Codex set up by `coord init` with a coord that is then
    gone (moved, uninstalled). Their edits and commands are refused by the hook's exit 2,
    not let through; `coord init` warned about it."""
    gone = os.path.join(w.dir, "moved", "coord")
    os.makedirs(os.path.dirname(gone))
    shutil.copy(w.coord_bin, gone)
    target = os.path.join(w.repo, "src", "shared.rs")
    w.start_model({
        "M_claude": [{"tool": "Write", "input": {"file_path": target, "content": "claude wrote\n"}}, {"text": "M done"}],
        "M_codex": [{"tool": "exec_command", "input": {"cmd": "printf codex > src/shared.rs"}}, {"text": "M done"}],
    })
    home = w.home("home-missing")
    out = subprocess.run(["coord", "init", "claude", "--command", gone], cwd=w.repo, capture_output=True, text=True,
                         env=w.base_env(home))
    check(out.returncode == 0, f"coord init claude: {out.stderr}")
    codex_home = w.home("codex-missing-home")
    codex_config(w, codex_home)
    env = w.base_env(w.home("home-mx"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy"})
    out = subprocess.run(["coord", "init", "codex", "--write", "--command", gone], cwd=w.repo, capture_output=True,
                         text=True, env=env)
    check(out.returncode == 0, f"coord init codex: {out.stderr}")
    os.remove(gone)
    missing = subprocess.run(["coord", "init", "claude", "--dry-run", "--command", gone], cwd=w.repo,
                             capture_output=True, text=True, env=w.base_env(home))
    check("warning" in missing.stderr and gone in missing.stderr, f"coord init warns: {missing.stderr}")
    c = w.claude(home, "M_claude", ["Write"])
    c.wait(timeout=120)
    check(open(target).read() == "original\n", f"Claude Code's Write passed a hook that could not run: {open(target).read()!r}")
    seen = [e for e in w.entries() if e.get("script") == "M_claude" and e.get("turn") == 1]
    check(seen and seen[-1].get("last_is_error"), f"the refusal reached Claude Code's model: {seen}")
    x = subprocess.run(["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json",
                        "SCRIPT:M_codex"], cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=180)
    check(open(target).read() == "original\n", f"Codex's command passed a hook that could not run: {x.stdout[-800:]}")
    turn = [e for e in w.entries() if e.get("script") == "M_codex" and e.get("turn") == 1]
    check(turn and "blocked" in str(turn[-1].get("last_result")).lower(),
          f"Codex ran the call and its hook blocked it: {turn} / {x.stdout[-800:]}")
    return "a hook whose coord is gone refuses: Claude Code's Write and Codex's shell write blocked"


def self_approval(w):
    """An agent cannot approve its own blocked command (issue 54): Claude Code and Codex,
    each set up by `coord init` only, run a force push (refused, with an approval request),
    then try to approve it from their own shell — with a borrowed operator identity, and by
    writing coord's store with sqlite3. Every attempt is refused by the hook (person
    decisions are not the agent's), audited under the session's own identity, and the
    request stays pending; only a person outside the sessions approves it."""
    approve = ("coord --agent-id ops --agent-type cli approvals approve "
               "$(coord --json approvals list | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"approvals\"][0][\"approval_id\"])')")
    poke = "sqlite3 .coord/coord.db \"UPDATE approval_queue SET status = 'approved'\""
    w.start_model({
        "S_claude": [{"tool": "Bash", "input": {"command": "git push --force origin main", "description": "push"}},
                     {"tool": "Bash", "input": {"command": approve, "description": "approve"}},
                     {"tool": "Bash", "input": {"command": poke, "description": "poke"}},
                     {"text": "S done"}],
        "S_codex": [{"tool": "exec_command", "input": {"cmd": "git push --force origin main"}},
                    {"tool": "exec_command", "input": {"cmd": approve}},
                    {"tool": "exec_command", "input": {"cmd": poke}},
                    {"text": "S done"}],
    })
    home = w.home("home-self")
    w.init_claude(home)
    c = w.claude(home, "S_claude", ["Bash"])
    c.wait(timeout=120)
    codex_home = w.home("codex-self-home")
    codex_config(w, codex_home)
    env = w.base_env(w.home("home-sx"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy"})
    out = subprocess.run(["coord", "init", "codex", "--write"], cwd=w.repo, capture_output=True, text=True, env=env)
    check(out.returncode == 0, f"coord init codex: {out.stderr}")
    x = subprocess.run(["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json",
                        "SCRIPT:S_codex"], cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=180)
    for script in ("S_claude", "S_codex"):
        played = {e["turn"]: e for e in w.entries() if e.get("script") == script}
        check(3 in played, f"{script} played every step: {sorted(played)} / {x.stdout[-600:]}")
    pending = w.coord("approvals", "list", "--status", "all")["approvals"]
    check(len(pending) == 2 and all(a["status"] == "pending" for a in pending),
          f"two force pushes asked for approval and nothing approved them: {pending}")
    refused = w.coord("audit", "--operation", "check_guardrails", "--result", "failure")["entries"]
    agents = {a["requested_by"] if "requested_by" in a else a.get("agent_id") for a in pending}
    for who in agents:
        mine = [e for e in refused if e["agent_id"] == who]
        commands = " ".join(str(e["parameters"].get("command")) for e in mine)
        check(len(mine) == 3 and "approvals approve" in commands and "sqlite3" in commands,
              f"{who}: its push, its approval and its store write refused, audited as itself: {mine}")
    person = [e for e in refused if "approvals approve" in str(e["parameters"].get("command"))]
    check(all(e["error_code"] == "destructive_operation_blocked" or "person" in json.dumps(e["result"]) for e in person),
          f"refused as a person's decision: {person}")
    ok = w.coord("approvals", "approve", pending[0]["approval_id"])
    check(ok.get("approval", {}).get("status") == "approved", f"a person outside the sessions approves: {ok}")
    return f"self-approval refused for {sorted(agents)}; a person approved {pending[0]['approval_id']}"


def entry_points(w):
    """A project's own entry point is judged by what it runs (issue 52): Claude Code and Codex,
    each set up by `coord init` only, run `npm run ship` — a package.json script whose name
    says nothing and whose code is `vercel --prod` — and `npm run build`. Each hook reads the
    script from the repository: the ship is refused as a deploy, audited as the session, the
    build runs."""
    with open(os.path.join(w.repo, "package.json"), "w") as f:
        json.dump({"name": "e2e", "scripts": {"ship": "npm run build && vercel --prod", "build": "echo built"}}, f)
    w.start_model({
        "E_claude": [{"tool": "Bash", "input": {"command": "npm run ship", "description": "ship"}},
                     {"tool": "Bash", "input": {"command": "npm run build", "description": "build"}},
                     {"text": "E done"}],
        "E_codex": [{"tool": "exec_command", "input": {"cmd": "npm run ship"}},
                    {"tool": "exec_command", "input": {"cmd": "npm run build"}},
                    {"text": "E done"}],
    })
    home = w.home("home-entry")
    w.init_claude(home)
    c = w.claude(home, "E_claude", ["Bash"])
    c.wait(timeout=120)
    codex_home = w.home("codex-entry-home")
    codex_config(w, codex_home)
    env = w.base_env(w.home("home-ex"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy"})
    out = subprocess.run(["coord", "init", "codex", "--write"], cwd=w.repo, capture_output=True, text=True, env=env)
    check(out.returncode == 0, f"coord init codex: {out.stderr}")
    x = subprocess.run(["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json",
                        "SCRIPT:E_codex"], cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=180)
    for script in ("E_claude", "E_codex"):
        played = {e["turn"]: e for e in w.entries() if e.get("script") == script}
        check(2 in played, f"{script} played every step: {sorted(played)} / {x.stdout[-600:]}")
    refused = w.coord("audit", "--operation", "check_guardrails", "--result", "failure")["entries"]
    commands = [(e["agent_id"], str(e["parameters"].get("command"))) for e in refused]
    ships = [e for e in refused if e["parameters"].get("command") == "npm run ship"]
    check(len({e["agent_id"] for e in ships}) == 2
          and all(e["error_code"] == "destructive_operation_blocked" for e in ships),
          f"each session's npm run ship refused as destructive, audited as itself: {commands}")
    check(not any(c == "npm run build" for _, c in commands), f"npm run build was allowed: {commands}")
    return f"npm run ship refused for {sorted({e['agent_id'] for e in ships})}; npm run build allowed"


def plugin(w):
    """Claude Code and Codex with coord installed as a plugin alone (issue 55): `claude plugin install
    coord --marketplace <this repository>` in each of two homes; no `coord init`, nothing
    written into the repository. A's session has coord's tools (the plugin's MCP server) and
    locks a file; B's Write of that file is refused by the plugin's PreToolUse hook, B's
    `rm -rf data` by the guardrails, each audited as B's own session; B is offered the
    plugin's skill. Codex, given the same marketplace (`codex plugin marketplace add`, `codex
    plugin add coord@coord`), locks through the plugin's server and is refused the held
    file and the `rm -rf` by the plugin's hooks."""
    root = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
    data = os.path.join(w.repo, "data")
    os.makedirs(data)
    with open(os.path.join(data, "keep.txt"), "w") as f:
        f.write("precious\n")
    shared = os.path.join(w.repo, "src", "shared.rs")
    lock = "mcp__plugin_coord_coord__acquire_lock"
    w.start_model({
        "P_hold": [{"tool": lock, "input": {"file_path": "src/shared.rs", "reason": "A edits", "ttl_minutes": 30}},
                   {"tool": "Write", "input": {"file_path": shared, "content": "A was here\n"}},
                   {"tool": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(90)'",
                                              "description": "hold the file"}},
                   {"text": "A done"}],
        "P_clobber": [{"record_context": True, "tool": "Write", "input": {"file_path": shared, "content": "B was here\n"}},
                      {"tool": "Bash", "input": {"command": "rm -rf data", "description": "clean up"}},
                      {"text": "B done"}],
        "P_codex": [{"tool": "acquire_lock", "input": {"file_path": "src/codex.rs", "reason": "codex"}},
                    {"tool": "exec_command", "input": {"cmd": "printf codex > src/shared.rs; echo rc=$?"}},
                    {"tool": "exec_command", "input": {"cmd": "rm -rf data"}},
                    {"text": "X done"}],
    })
    homes = [w.home("home-pa"), w.home("home-pb")]
    for home in homes:
        out = subprocess.run(["claude", "plugin", "install", "coord", "--marketplace", root], cwd=w.repo,
                             capture_output=True, text=True, env=w.base_env(home), timeout=120)
        check(out.returncode == 0, f"claude plugin install: {out.stdout} {out.stderr}")
    check(not os.path.exists(os.path.join(w.repo, ".mcp.json")) and not os.path.exists(os.path.join(w.repo, ".claude")),
          "the plugin install wrote into the repository")
    keep = {"COORD_RELEASE_GRACE_SECONDS": "300"}
    a = w.claude(homes[0], "P_hold", [lock, "Write", "Bash"], keep)
    check(w.wait_turn("P_hold", 2, a), "session A never reached its third step (lock, write, then hold)")
    b = w.claude(homes[1], "P_clobber", ["Write", "Bash"], keep)
    b.wait(timeout=120)
    check(a.poll() is None, "session A ended before B was done: the check would prove nothing")
    content = open(shared).read()
    check(content == "A was here\n", f"the file holds {content!r}, not A's content")
    check(os.path.exists(os.path.join(data, "keep.txt")), "B's rm -rf data ran")
    locks = w.coord("lock", "list")["locks"]
    check(len(locks) == 1 and locks[0]["file_path"] == "src/shared.rs", f"locks: {locks}")
    holder = locks[0]["locked_by"]
    check(holder.startswith("claude-code-"), f"A's identity {holder!r} is not a session's own")
    denied = w.coord("audit", "--operation", "check_edit", "--result", "failure")["entries"]
    check(len(denied) == 1 and denied[0]["agent_id"] != holder and denied[0]["agent_id"].startswith("claude-code-"),
          f"B's Write denied once, as B: {denied}")
    b_id = denied[0]["agent_id"]
    refused = w.coord("audit", "--operation", "check_guardrails", "--result", "failure")["entries"]
    check(any(e["agent_id"] == b_id and e["parameters"].get("command") == "rm -rf data"
              and e["error_code"] == "destructive_operation_blocked" for e in refused),
          f"B's rm -rf data refused as destructive, as B: {refused}")
    started = w.coord("audit", "--operation", "register_session")["entries"]
    check({holder, b_id} <= {e["agent_id"] for e in started}, f"the SessionStart hook registered both: {started}")
    first = [e for e in w.entries() if e.get("script") == "P_clobber" and e.get("turn") == 0 and e.get("context")]
    check(first and "coord:coord" in first[0]["context"], "B's session was not offered the plugin's skill (coord:coord)")
    # Codex reads the same marketplace and plugin (Claude Code's layout).
    codex_home = w.home("codex-plugin-home")
    codex_config(w, codex_home)
    env = w.base_env(w.home("home-px"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy"})
    for cmd in (["marketplace", "add", root], ["add", "coord@coord"]):
        out = subprocess.run(["codex", "plugin", *cmd], cwd=w.repo, capture_output=True, text=True, env=env, timeout=120)
        check(out.returncode == 0, f"codex plugin {' '.join(cmd)}: {out.stdout} {out.stderr}")
    x = subprocess.run(["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json",
                        "SCRIPT:P_codex"], cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=180)
    check(a.poll() is None, "session A ended before Codex was done: the check would prove nothing")
    check(open(shared).read() == "A was here\n", f"Codex changed the held file: {x.stdout[-800:]}")
    check(os.path.exists(os.path.join(data, "keep.txt")), "Codex's rm -rf data ran")
    mine = [e for e in w.coord("audit", "--operation", "acquire_lock")["entries"]
            if e["parameters"].get("file_path") == "src/codex.rs" and e["success"]]
    check(len(mine) == 1 and mine[0]["agent_id"].startswith("codex-") and mine[0].get("agent_type") == "codex",
          f"Codex took its lock through the plugin's server, as its session: {mine} / {x.stdout[-800:]}")
    x_id = mine[0]["agent_id"]
    edits = [e for e in w.coord("audit", "--agent", x_id, "--operation", "check_edit")["entries"] if not e["success"]]
    check(edits and all(e["error_code"] == "file_locked" for e in edits), f"Codex's shell write refused: {edits}")
    guards = [e for e in w.coord("audit", "--agent", x_id, "--operation", "check_guardrails")["entries"]
              if not e["success"]]
    check(any(e["parameters"].get("command") == "rm -rf data" for e in guards), f"Codex's rm -rf refused: {guards}")
    return (f"A={holder} locked through the plugin's server; B={b_id} refused a Write and rm -rf by its hooks; "
            f"Codex {x_id} the same through the same plugin")


TAMPER = """import json, os, socket
# Names computed at run time: a hook reading the command line sees none of them.
space = ".co" + "ord"
tried = {}
def attempt(name, act):
    try:
        act()
        tried[name] = "done"
    except OSError as e:
        tried[name] = e.strerror or str(e)
def poke_store():
    with open(os.path.join(space, "coord.db"), "r+b") as f:
        f.write(b"tampered")
def plant():
    with open(os.path.join(space, "planted"), "w") as f:
        f.write("x")
def settings():
    target = os.path.join(os.environ["CODEX_HOME"], "config.toml") if os.environ.get("CODEX_HOME") \\
        else os.path.join(".claude", "settings.local.json")
    with open(target, "a") as f:
        f.write("\\n")
def project_settings():
    target = os.path.join(".codex", "config.toml") if os.environ.get("CODEX_HOME") else ".mcp.json"
    with open(target, "a") as f:
        f.write("\\n")
def rename_settings():
    os.rename(".codex" if os.environ.get("CODEX_HOME") else ".claude", "moved-settings")
def dial():
    sockets = [n for n in os.listdir(space) if n.endswith(".sock")]
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(space, sockets[0]) if sockets else "/nonexistent.sock")
attempt("store", poke_store)
attempt("plant", plant)
attempt("settings", settings)
attempt("project_settings", project_settings)
attempt("rename", rename_settings)
attempt("socket", dial)
print("TAMPER " + json.dumps(tried, sort_keys=True))
"""


def nontmp_dir(w, name):
    """A directory outside /tmp and $TMPDIR: Codex refuses to set up its sandbox helper under
    a temporary directory (every sandboxed command then fails), and its `:workspace`
    profile lets commands write anywhere under /tmp — where a user's Codex home never is.
    Under the test runner's own home, removed with the world."""
    d = os.path.join(os.path.expanduser("~"), ".cache", "coord-e2e", f"{os.path.basename(w.dir)}-{name}")
    os.makedirs(d, exist_ok=True)
    w.cleanup.append(d)
    return d


def tamper_result(w, script):
    played = [e for e in w.entries() if e.get("script") == script and e.get("turn") == 2]
    found = re.search(r"TAMPER (\{[^}]*\})", str(played[-1].get("last_result"))) if played else None
    check(found, f"{script}: the tamper script ran and reported: {played}")
    return json.loads(found.group(1))


def runtime_sandbox(w):
    """The runtimes' own sandboxes as `coord init` configures them (issue 54): an agent that
    works around the hooks — a script it writes itself, whose paths the hook cannot see —
    cannot write coord's store, plant files in the coordination space, rewrite the settings
    that install coord, or dial the coordinator's socket, from Claude Code's Bash or
    Codex's shell. The store stays intact: another agent's lock is still held, the audit
    chain verifies."""
    other = w.coord("lock", "acquire", "src/shared.rs", env={"COORD_AGENT_ID": "other-agent"})
    check(other.get("success"), f"another agent holds src/shared.rs: {other}")
    tamper = os.path.join(w.repo, "tamper.py")
    patch = "*** Begin Patch\n*** Add File: tamper_codex.py\n" + "".join(f"+{l}\n" for l in TAMPER.splitlines()) \
        + "*** End Patch\n"
    w.start_model({
        "RS_claude": [{"tool": "Write", "input": {"file_path": tamper, "content": TAMPER}},
                      {"tool": "Bash", "input": {"command": "python3 tamper.py", "description": "run"}},
                      {"text": "RS done"}],
        "RS_codex": [{"tool": "apply_patch", "input": patch},
                     {"tool": "exec_command", "input": {"cmd": "python3 tamper_codex.py"}},
                     {"text": "RS done"}],
    })
    home = w.home("home-rs")
    said = w.init_claude(home)
    check("sandbox is on" in said, f"coord init claude says what its sandbox does: {said}")
    local = json.load(open(os.path.join(w.repo, ".claude", "settings.local.json")))
    check(local["sandbox"]["enabled"] is True and local["sandbox"]["allowUnsandboxedCommands"] is False,
          f"Claude Code's sandbox on, no way out: {local}")
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=w.repo, capture_output=True,
                            text=True).stdout
    check("settings.local.json" not in status, f"this checkout's settings stay out of git: {status}")
    c = w.claude(home, "RS_claude", ["Write", "Bash"])
    c.wait(timeout=180)
    claude_tried = tamper_result(w, "RS_claude")

    codex_home = nontmp_dir(w, "codex")
    # The user trusts this project, as they would when Codex first asks: then Codex
    # loads the project's .codex/config.toml, where coord's profile goes.
    codex_config(w, codex_home, sandbox=True)
    env = w.base_env(w.home("home-rsx"), {"CODEX_HOME": codex_home, "FAKE_API_KEY": "dummy"})
    out = subprocess.run(["coord", "init", "codex", "--write"], cwd=w.repo, capture_output=True, text=True, env=env)
    check(out.returncode == 0 and "warning" not in out.stderr, f"coord init codex --write: {out.stdout} {out.stderr}")
    user_config = open(os.path.join(codex_home, "config.toml")).read()
    check("default_permissions" not in user_config, f"nothing widens Codex elsewhere: {user_config}")
    config = open(os.path.join(w.repo, ".codex", "config.toml")).read()
    check('default_permissions = "coord"' in config and '".coord" = "read"' in config,
          f"the project's permission profile keeps .coord read-only: {config}")
    x = subprocess.run(["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json",
                        "SCRIPT:RS_codex"], cwd=w.repo, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, timeout=180)
    check(os.path.exists(os.path.join(w.repo, "tamper_codex.py")), f"Codex's patch in the workspace applied: {x.stdout[-800:]}")
    codex_tried = tamper_result(w, "RS_codex")

    for who, tried in (("Claude Code", claude_tried), ("Codex", codex_tried)):
        check(tried.get("store") == "Read-only file system", f"{who} could write the store: {tried}")
        check(tried.get("plant") == "Read-only file system", f"{who} could plant a file in .coord: {tried}")
        check(tried.get("settings") == "Read-only file system", f"{who} could rewrite coord's settings: {tried}")
        check(tried.get("project_settings") == "Read-only file system",
              f"{who} could rewrite the project's runtime settings: {tried}")
        check(tried.get("socket") not in ("done", None), f"{who} reached the coordinator's socket: {tried}")
        check(tried.get("rename") not in ("done", None), f"{who} moved its settings directory away: {tried}")
    check(not os.path.exists(os.path.join(w.repo, ".coord", "planted")), "a file was planted in .coord")
    with open(os.path.join(w.repo, ".coord", "coord.db"), "rb") as f:
        check(f.read(16) == b"SQLite format 3\x00", "the store's header was overwritten")
    locks = w.coord("lock", "list")["locks"]
    check(any(l["file_path"] == "src/shared.rs" and l["locked_by"] == "other-agent" for l in locks),
          f"the other agent's lock is still held: {locks}")
    verified = w.coord("audit", "verify")
    check(verified.get("success") and verified.get("valid", True), f"the audit chain verifies: {verified}")
    return f"Claude Code: {claude_tried}; Codex: {codex_tried}"


def typescript_sdk(w):
    """The official TypeScript MCP SDK: the two-agent lock and queue scenario over stdio
    (two `coord mcp` processes) and over streamable HTTP (`coord serve`, bound and operator keys)."""
    modules = os.path.join(os.path.dirname(w.cli_bin))
    script = os.path.join(HERE, "mcp_two_agents.mjs")
    env = w.base_env(w.home("home-ts"))
    # An SDK client's type has no default profile (it would be read-only): give it one, as
    # its user would, in both databases (the repository's and coord serve's).
    http_db = ["--db", os.path.join(w.dir, "http.db")]
    for db in ([], http_db):
        w.coord(*db, "profile", "assign", "claude-code-cli", "--type", "typescript_sdk")
    out = subprocess.run(["node", script, modules, "stdio", "--coord", w.coord_bin, "--cwd", w.repo],
                         capture_output=True, text=True, env=env, timeout=120)
    check('"ok":true' in out.stdout, f"stdio: {out.stdout[-1500:]} {out.stderr[-2500:]}")
    serve_env = dict(env, COORDINATION_API_KEYS="op-key", COORD_RELEASE_GRACE_SECONDS="0",
                     COORDINATION_API_KEY_IDENTITIES=json.dumps({"bound-key": {"agent_id": "ts-agent-a",
                                                                             "agent_type": "typescript_sdk"}}))
    serve = subprocess.Popen(["coord", "--db", os.path.join(w.dir, "http.db"), "serve", "--port", "0"], cwd=w.repo,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=serve_env,
                             start_new_session=True)
    w.children.append(serve)
    url = None
    for _ in range(50):
        line = serve.stdout.readline()
        if "listening on " in line:
            url = line.split("listening on ")[1].split()[0]
            break
    check(url is not None, "coord serve did not say where it listens")
    out = subprocess.run(["node", script, modules, "http", "--url", f"{url}/mcp", "--bound-key", "bound-key",
                          "--operator-key", "op-key"], capture_output=True, text=True, env=env, timeout=120)
    check('"ok":true' in out.stdout, f"http: {out.stdout[-1500:]} {out.stderr[-2500:]}")
    # Both agents deleted their MCP sessions: B's lock is free and A's claimed task is back
    # in the queue, the attempt counted (the release runs just after the DELETE answers).
    claimed = json.loads(out.stdout.strip().splitlines()[-1])["claimed_by_a"]
    db = http_db
    deadline = time.monotonic() + 20
    while True:
        locks = w.coord(*db, "lock", "list")["locks"]
        task = w.coord(*db, "work", "show", claimed)["task"]
        if not locks and task["status"] == "pending":
            break
        check(time.monotonic() < deadline, f"after the DELETEs: locks {locks}, task {task}")
        time.sleep(0.1)
    check(task["attempts"] == 1, f"the attempt is counted: {task}")
    ended = w.coord(*db, "audit", "--agent", "ts-agent-b", "--operation", "end_session")["entries"]
    check(any(e["result"].get("released") == ["src/shared.ts"] for e in ended),
          f"B's session ended with its lock released: {ended}")
    return "stdio and streamable HTTP (sessions deleted: lock freed, task requeued)"


def strands_worker(w):
    """A Strands agent claims and completes a task through coord's MCP server."""
    check(w.strands_python, "no --strands-python given")
    task = w.coord("--agent-id", "planner", "work", "submit", "review", "review the parser")["task_id"]
    w.start_model({
        "S_work": [{"tool": "get_work", "input": {}},
                   {"tool": "complete_work", "input": {"task_id": task, "success": True,
                                                      "result": {"verdict": "looks good"}}},
                   {"text": "done: reviewed"}],
    })
    out = subprocess.run([w.strands_python, os.path.join(HERE, "strands_worker.py"), "--coord", w.coord_bin,
                          "--cwd", w.repo, "--model-url", f"http://127.0.0.1:{w.port}"],
                         capture_output=True, text=True, timeout=120, env=w.base_env(w.home("home-s")))
    check('"ok": true' in out.stdout, f"strands: {out.stdout[-1500:]} {out.stderr[-2500:]}")
    shown = w.coord("work", "show", task)["task"]
    check(shown["status"] == "completed" and shown["claimed_by"] == "strands-worker"
          and shown["result"] == {"verdict": "looks good"}, f"the Strands agent completed the task: {shown}")
    return f"task {task} completed by {shown['claimed_by']}"


def strands_orchestrator(w):
    """A Strands orchestrator creates a graph workflow through coord's MCP server (test, then
    fix on failure or report if the tests passed; report joins either way); workers (the coord
    CLI, other identities) end its nodes; a second run of the orchestrator reads the
    aggregated results. The failure edge and the `any` join decided what ran."""
    check(w.strands_python, "no --strands-python given")
    plan = {"name": "test-fix-report", "input": {"suite": "parser"},
            "nodes": [{"id": "test", "task": "Run the parser tests; answer {status}", "task_type": "test"},
                      {"id": "fix", "task": "Fix the failing tests", "task_type": "fix"},
                      {"id": "report", "task": "Report what happened", "task_type": "report", "join": "any"}],
            "edges": [{"from": "test", "to": "fix", "when": "failure"},
                      {"from": "test", "to": "report", "if": 'result.status == "passed"'},
                      {"from": "fix", "to": "report"}]}

    def orchestrate(script, prompt):
        # Its own process group (its `coord mcp` too): w.close() kills the whole of it if
        # Strands hangs past the timeout.
        p = subprocess.Popen([w.strands_python, os.path.join(HERE, "strands_orchestrator.py"), "--coord", w.coord_bin,
                              "--cwd", w.repo, "--model-url", f"http://127.0.0.1:{w.port}", "--script", script,
                              "--prompt", prompt],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=w.base_env(w.home("home-orchestrator")), start_new_session=True)
        w.children.append(p)
        out, err = p.communicate(timeout=120)
        check('"ok": true' in out, f"strands {script}: {out[-1500:]} {err[-2500:]}")
        return json.loads(out.strip().splitlines()[-1])["answer"]

    def given(script, turn):
        """The JSON coord's tool answered the Strands agent, as its model was sent it on
        `turn` (the tool result wrapped in text blocks by Strands)."""
        rows = [e for e in w.entries() if e.get("script") == script and e.get("turn") == turn]
        check(rows, f"the model never saw turn {turn} of {script}")
        content = rows[-1].get("last_result")
        blocks = content if isinstance(content, list) else [{"text": content}]
        for b in blocks:
            try:
                return json.loads(b.get("text") or "")
            except (ValueError, TypeError, AttributeError):
                continue
        raise Fail(f"no JSON in what {script} was given on turn {turn}: {content}")

    def status(wf):
        return w.coord("call", "get_workflow_status", json.dumps({"workflow_id": wf}))

    w.start_model({"S_plan": [{"tool": "create_workflow", "input": plan},
                              {"tool": "get_workflow_status", "input": {"workflow_id": "{{last.workflow_id}}"}},
                              {"text": "PLANNED"}]})
    answer = orchestrate("S_plan", "Plan the parser fix as a workflow and check it started.")
    # What coord holds, not what the agent said: the workflow, made by the Strands identity.
    mine = [x for x in w.coord("call", "list_workflows")["workflows"] if x["name"] == "test-fix-report"]
    check(len(mine) == 1 and mine[0]["created_by"] == "strands-orchestrator" and mine[0]["status"] == "running",
          f"one running workflow made by the Strands orchestrator: {mine}")
    wf = mine[0]["workflow_id"]
    shown = status(wf)
    nodes = {n["id"]: n for n in shown["nodes"]}
    check(nodes["test"]["status"] == "running" and nodes["test"].get("task_id")
          and nodes["fix"]["status"] == "waiting" and nodes["report"]["status"] == "waiting",
          f"only test (no inputs) is queued: {shown}")
    test_task = nodes["test"]["task_id"]
    queued = w.coord("work", "show", test_task)["task"]
    check(queued["created_by"] == "strands-orchestrator" and queued["task_type"] == "test",
          f"the node's task is the orchestrator's: {queued}")
    created = given("S_plan", 1)
    check(created.get("workflow_id") == wf and created.get("started") == ["test"],
          f"create_workflow's answer reached the agent: {created}")
    check(given("S_plan", 2).get("status") == "running", "the agent was told the workflow is running")
    check(answer == "PLANNED", f"the orchestrator's answer: {answer!r}")

    # The workers: other identities, through the CLI. fix exists only once test has ended.
    early = w.coord("--agent-id", "fixer", "work", "claim", "--type", "fix")
    check(early.get("reason") == "no_tasks_available", f"fix is not queued before test ends: {early}")
    claimed = w.coord("--agent-id", "tester", "work", "claim", "--type", "test")
    check(claimed.get("task_id") == test_task and claimed["input_data"]["input"] == {"suite": "parser"},
          f"the tester got the test node with the workflow's input: {claimed}")
    done = w.coord("--agent-id", "tester", "work", "complete", test_task, "--failed", "--error", "1 test failed",
                   "--result", json.dumps({"status": "failed", "failing": ["parser::empty_input"]}))
    check(done.get("status") == "failed", f"the test node failed: {done}")
    fix = w.coord("--agent-id", "fixer", "work", "claim", "--type", "fix")
    check(fix.get("task_id") and fix["input_data"]["inputs"].get("test", {}).get("status") == "failed",
          f"the failure edge queued fix, with test's outcome as input: {fix}")
    check(status(wf)["status"] == "running", "a failure an edge handles does not fail the workflow")
    w.coord("--agent-id", "fixer", "work", "complete", fix["task_id"], "--success",
            "--result", json.dumps({"fixed": ["parser::empty_input"]}))
    report = w.coord("--agent-id", "reporter", "work", "claim", "--type", "report")
    check(report.get("task_id") and report["input_data"]["inputs"].get("fix", {}).get("status") == "completed",
          f"join any: report queued after fix although test -> report was not taken: {report}")
    w.coord("--agent-id", "reporter", "work", "complete", report["task_id"], "--success",
            "--result", json.dumps({"report": "1 failure fixed"}))

    # The model reads its scripts when it starts, and S_results names the workflow only
    # known now: a new model (the same log) for the second run.
    w.model.kill()
    w.model.wait()
    w.start_model({"S_results": [{"tool": "get_workflow_status", "input": {"workflow_id": wf}},
                                 {"text": "RESULTS READ"}]})
    answer = orchestrate("S_results", "Report the workflow's aggregated results.")
    final = status(wf)
    nodes = {n["id"]: n for n in final["nodes"]}
    check(final["status"] == "completed" and final.get("ended_at"), f"the workflow completed: {final}")
    check(nodes["test"]["status"] == "failed" and nodes["fix"]["status"] == "completed"
          and nodes["report"]["status"] == "completed", f"test failed, fix and report completed: {final}")
    check(nodes["fix"]["agent"] == "fixer" and nodes["report"]["agent"] == "reporter",
          f"each node's worker is recorded: {final}")
    check("not taken" in (nodes["report"].get("reason") or ""), f"report says which input was not taken: {final}")
    check(final["results"] == {"test": {"status": "failed", "result": {"status": "failed",
                                                                       "failing": ["parser::empty_input"]}},
                               "fix": {"status": "completed", "result": {"fixed": ["parser::empty_input"]}},
                               "report": {"status": "completed", "result": {"report": "1 failure fixed"}}}
          and final["summary"] == {"failed": 1, "completed": 2}, f"the results aggregated: {final}")
    # The Strands agent itself was given that: the completed workflow in its tool result.
    read = given("S_results", 1)
    check(read.get("workflow_id") == wf and read.get("status") == "completed"
          and read.get("results") == final["results"], f"the agent was given the completed workflow: {read}")
    check(answer == "RESULTS READ", f"the orchestrator's answer: {answer!r}")
    # The audit trail: the Strands identity made both calls (its type, not the observer's).
    made = w.coord("audit", "--agent", "strands-orchestrator", "--operation", "create_workflow")["entries"]
    check(len(made) == 1 and made[0]["success"] and made[0]["agent_type"] == "strands_agent"
          and made[0]["parameters"].get("name") == "test-fix-report",
          f"create_workflow audited once as the Strands agent: {made}")
    reads = w.coord("audit", "--agent", "strands-orchestrator", "--operation", "get_workflow_status")["entries"]
    check(len(reads) == 2 and all(e["success"] and e["agent_type"] == "strands_agent"
                                  and e["parameters"].get("workflow_id") == wf for e in reads),
          f"get_workflow_status audited twice (one per run) as the Strands agent: {reads}")
    return f"workflow {wf} by strands-orchestrator: test failed, fix and report completed, results read back"


def approval(w):
    """Claude Code 2.1.328 set up by `coord init claude` (which approves the project's server
    in the user's settings) is offered coord's tools and they work. Whether 2.1.328 would
    also load the server without that approval is recorded, not asserted: it was reported to
    need it, and in `-p` mode here it does not."""
    version = subprocess.run(["claude", "--version"], capture_output=True, text=True,
                             env=w.base_env(w.home("observer"))).stdout
    check(version.startswith("2.1.328"), f"this scenario needs Claude Code 2.1.328 first on PATH, not {version!r}")
    w.start_model({
        "U_lock": [{"tool": "acquire_lock", "input": {"file_path": "src/u.rs", "reason": "unapproved"}},
                   {"text": "U done"}],
        "V_lock": [{"tool": "acquire_lock", "input": {"file_path": "src/v.rs", "reason": "approved"}},
                   {"text": "V done"}],
    })
    unapproved = w.home("home-unapproved")
    w.init_claude(unapproved, "--no-user-settings")
    u = w.claude(unapproved, "U_lock", ["mcp__coord__acquire_lock"])
    u.wait(timeout=120)
    # The session's end releases its locks: what it did is read from the audit trail.
    def acquired(path):
        rows = w.coord("audit", "--operation", "acquire_lock")["entries"]
        return [e for e in rows if e["result"].get("file_path") == path and e["result"].get("action") == "acquired"]
    unapproved_locked = bool(acquired("src/u.rs"))
    approved = w.home("home-approved")
    w.init_claude(approved)
    settings = json.load(open(os.path.join(approved, ".claude", "settings.json")))
    check("coord" in settings.get("enabledMcpjsonServers", []), f"coord init claude approved coord: {settings}")
    v = w.claude(approved, "V_lock", ["mcp__coord__acquire_lock"])
    v.wait(timeout=120)
    got = acquired("src/v.rs")
    check(len(got) == 1 and got[0]["agent_id"].startswith("claude-code-"), f"with the approval the tool worked: {got}")
    hooks = w.coord("audit", "--operation", "register_session")["entries"]
    check(any(e["agent_id"].startswith("claude-code-") for e in hooks), f"the SessionStart hook fired: {hooks}")
    loaded = "loaded" if unapproved_locked else "did not load"
    return f"{version.strip()} -p: with coord init claude coord's tools worked; without the user approval it {loaded} them"


def claude_session_start_memory(w):
    """A new Claude Code session (set up by `coord init claude` only) starts with what the
    project learnt: its SessionStart hook adds the memories relevant to the project's latest
    handoff to the session's context, and the model is given them (the scripted model records
    what it was sent); an unrelated memory stays out."""
    prev = {"COORD_AGENT_ID": "previous-agent"}
    handoff = w.coord("handoff", "write", "Refactored auth", "--next", "write logout tests", env=prev)
    check(handoff.get("success"), f"a handoff: {handoff}")
    relevant = w.coord("memory", "remember", "test_failure",
                       "logout tests failed: the session cookie survived the logout handler",
                       "--lesson", "clear the cookie in the logout handler", env={"COORD_AGENT_ID": "codex-2"})
    unrelated = w.coord("memory", "remember", "build", "docker image grew to 2 GB",
                        "--lesson", "use a distroless base image", env={"COORD_AGENT_ID": "codex-2"})
    check(relevant.get("memory_id") and unrelated.get("memory_id"), f"memories: {relevant} {unrelated}")
    w.start_model({"M_memory": [{"text": "M done", "record_context": True}]})
    home = w.home("home-memory")
    w.init_claude(home)
    p = w.claude(home, "M_memory", ["Read"])
    p.wait(timeout=120)
    sent = [e for e in w.entries() if e.get("script") == "M_memory" and "context" in e]
    check(sent, f"the model was asked: {w.entries()[-3:]}")
    seen = "\n".join(e["context"] for e in sent)
    check("session cookie survived" in seen and relevant["memory_id"] in seen,
          f"the relevant memory reached the model: {seen[-3000:]}")
    check("clear the cookie in the logout handler" in seen, "with its lesson")
    check("docker image grew" not in seen, "the unrelated memory stayed out")
    check("Working beside other agents (coord)" in seen and "acquire_lock" in seen,
          f"CLAUDE.md's coord section, written by coord init claude, reached the model: {seen[:2000]}")
    recalls = w.coord("audit", "--operation", "recall")["entries"]
    check(any(e["agent_id"].startswith("claude-code-") for e in recalls),
          f"the session's own identity recalled them: {[e['agent_id'] for e in recalls]}")
    return "the SessionStart hook gave the model the relevant memory (with its lesson), not the unrelated one"


def claude_file_tools(w):
    """Claude Code, set up by `coord init claude` only, uses coord's file tools: a write of a
    file another agent holds is refused (file_locked), a read works, an escape is refused
    (path_outside_workspace), a fenced write with its own lock's token lands, and the same
    write with an older token is refused (stale_fencing_token). Every call is audited with
    spec 000's event names; the refusals come back to the model as results it reads."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    escape = os.path.join(w.dir, "escape.txt")
    other = w.coord("lock", "acquire", "src/shared.rs", env={"COORD_AGENT_ID": "other-agent"})
    check(other.get("success"), f"another agent holds src/shared.rs: {other}")
    held = other["fencing_token"]
    mine = held + 1  # the next token the counter hands out: the session's own lock
    w.start_model({
        "F_tools": [{"tool": "write_file", "input": {"path": "src/shared.rs", "content": "clobbered\n"}},
                    {"tool": "read_file", "input": {"path": "src/shared.rs"}},
                    {"tool": "write_file", "input": {"path": "../escape.txt", "content": "out\n"}},
                    {"tool": "acquire_lock", "input": {"file_path": "src/mine.rs", "reason": "new module"}},
                    {"tool": "write_file", "input": {"path": "src/mine.rs", "content": "pub fn mine() {}\n",
                                                     "fencing_token": mine}},
                    {"tool": "write_file", "input": {"path": "src/mine.rs", "content": "stale\n",
                                                     "fencing_token": held}},
                    {"text": "F done"}],
    })
    home = w.home("home-files")
    # The file tools are a toolset of their own: this project lists them for its agents.
    w.init_claude(home, "--toolsets", "core,files")
    tools = ["mcp__coord__write_file", "mcp__coord__read_file", "mcp__coord__acquire_lock"]
    f = w.claude(home, "F_tools", tools)
    f.wait(timeout=180)
    check(open(shared).read() == "original\n", f"the held file was changed: {open(shared).read()!r}")
    check(not os.path.exists(escape), "a write escaped the repository")
    mine_path = os.path.join(w.repo, "src", "mine.rs")
    check(os.path.exists(mine_path) and open(mine_path).read() == "pub fn mine() {}\n",
          "the fenced write did not land (or the stale one did)")
    writes = w.coord("audit", "--operation", "write_file")["entries"]
    reasons = sorted(e["result"].get("reason", "") for e in writes if not e["success"])
    check(reasons == ["file_locked", "path_outside_workspace", "stale_fencing_token"], f"refusals: {writes}")
    ok = [e for e in writes if e["success"]]
    check(len(ok) == 1 and ok[0]["result"].get("event") == "file_write_success"
          and ok[0]["result"].get("fencing_token") == mine, f"the fenced write is audited: {ok}")
    check(all(e["parameters"].get("content") == "[redacted]" for e in writes), "contents reached the audit trail")
    agent = ok[0]["agent_id"]
    check(agent.startswith("claude-code-"), f"written as the session's own agent, not {agent!r}")
    reads = w.coord("audit", "--operation", "read_file")["entries"]
    check(len(reads) == 1 and reads[0]["result"].get("event") == "file_read_success"
          and reads[0]["agent_id"] == agent, f"the read is audited: {reads}")
    # coord answers a refusal as a tool result the model reads (success:false, error).
    seen = [e for e in w.entries() if e.get("script") == "F_tools" and e.get("turn") == 1]
    check(seen and "file_locked" in str(seen[0].get("last_result")), f"the refusal came back to the model: {seen}")
    return f"{agent}: file_locked, path_outside_workspace, stale_fencing_token refused; fenced write (token {mine}) landed"


def interactive_claude(w):
    """An interactive Claude Code session (a terminal, no -p) in a repository set up by
    `coord init claude` only: the person accepts the folder trust and the API key dialogs
    and types a prompt, as anyone would. coord's MCP tools load (a lock is taken through
    them), the hooks fire under the same per-session identity (SessionStart registers, the
    PreToolUse hook denies a Write of a file another agent holds, SessionEnd ends the
    session on /exit), and all of it is in the audit trail."""
    import pty
    import re
    import select
    held = os.path.join(w.repo, "src", "shared.rs")
    other = w.coord("lock", "acquire", "src/shared.rs", env={"COORD_AGENT_ID": "other-agent"})
    check(other.get("success"), f"another agent holds src/shared.rs: {other}")
    w.start_model({"I_tools": [{"tool": "acquire_lock", "input": {"file_path": "src/mine.rs", "reason": "interactive"}},
                               {"tool": "Write", "input": {"file_path": held, "content": "clobbered\n"}},
                               {"text": "I done"}]})
    home = w.home("home-interactive")
    # A user who has run Claude Code before (no first-run onboarding); nothing about coord.
    with open(os.path.join(home, ".claude.json"), "w") as f:
        json.dump({"hasCompletedOnboarding": True, "numStartups": 3, "theme": "dark"}, f)
    w.init_claude(home)
    env = w.claude_env(home, {"TERM": "xterm-256color"})
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(w.repo)
        os.execvpe("claude", ["claude", "--allowedTools", "mcp__coord__acquire_lock", "Write"], env)
    screen = [b""]

    def pump(seconds):
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    screen[0] += os.read(fd, 65536)
                except OSError:
                    return

    def shown():
        return re.sub(rb"\x1b\[[0-9;?<>]*[A-Za-z]", b" ", screen[0]).decode("utf-8", "replace")

    def press(keys):
        # Not read here: what the key brings up is read (and matched) by the loop.
        os.write(fd, keys)
        time.sleep(0.4)

    def move_once(key, dialog):
        # A two-option dialog whose default is "No": one arrow selects "Yes". The dialog
        # answers a key it took by redrawing the selection marker (only the cells that
        # changed: the option's text is not redrawn); a key sent before it takes input is
        # lost (seen on a loaded CI machine), so wait for the redraw, sending the key again
        # only when none came, never twice for one redraw.
        pump(1)
        for _ in range(3):
            screen[0] = b""
            press(key)
            pump(1.5)
            if "\u276f" in shown():
                return
        raise Fail(f"the {dialog} dialog never moved its selection: {shown()[-800:]!r}")

    done = set()
    try:
        deadline = time.time() + 120
        while time.time() < deadline and "answered" not in done:
            pump(0.5)
            t = shown()
            if "trust" not in done and "Yes, I trust this folder" in t and "Enter to confirm" in t:
                # The default is "No, exit": move to "Yes" and confirm only once the dialog
                # shows it selected (a key sent before the dialog takes input is lost, and
                # Enter would then exit — seen on a loaded CI machine).
                move_once(b"\x1b[B", "trust")
                screen[0] = b""
                press(b"\r")
                done.add("trust")
            elif "key" not in done and "Do you want to use this API key" in t:
                # The default is "No": the same care as for the trust dialog.
                move_once(b"\x1b[A", "API key")
                screen[0] = b""
                press(b"\r")
                done.add("key")
            elif "prompt" not in done and "trust" in done and ("shift+tab to cycle" in t or "for shortcuts" in t):
                pump(1)
                for ch in b"SCRIPT:I_tools":
                    os.write(fd, bytes([ch]))
                    time.sleep(0.03)
                press(b"\r")
                done.add("prompt")
            elif "prompt" in done and any(e.get("script") == "I_tools" and e.get("turn", 0) >= 2 for e in w.entries()):
                pump(2)
                done.add("answered")
        check("answered" in done, f"the session did not play its script (steps done: {sorted(done)}): "
                                  f"{shown()[-1500:]}")
        mine = [l for l in w.coord("lock", "list")["locks"] if l["file_path"] == "src/mine.rs"]
        check(len(mine) == 1 and mine[0]["locked_by"].startswith("claude-code-"), f"the MCP tool took the lock: {mine}")
        agent = mine[0]["locked_by"]
        check(open(held).read() == "original\n", "the hook let the Write of a held file through")
        denied = w.coord("audit", "--operation", "check_edit", "--result", "failure")["entries"]
        check(any(e["agent_id"] == agent for e in denied), f"the hook's denial is audited as {agent}: {denied}")
        started = w.coord("audit", "--operation", "register_session")["entries"]
        check(any(e["agent_id"] == agent for e in started), f"SessionStart registered {agent}: {started}")
        press(b"/exit")
        press(b"\r")
        pump(5)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    ended = w.coord("audit", "--operation", "end_session")["entries"]
    check(any(e["agent_id"] == agent for e in ended), f"SessionEnd ended {agent}'s session on /exit: {ended}")
    return f"interactive {agent}: trust and key dialogs answered, lock taken over MCP, Write of a held file denied, ended on /exit"


def launch(w, home, agent, script, *flags, env=None):
    """`coord agent run AGENT SCRIPT:<script>` as a user would; answers its JSON outcome.
    Without a validator flag, pre-flight validation is switched off (explicitly)."""
    if not any(f.startswith("--validator") for f in flags):
        flags = ("--no-validation", *flags)
    runtime = flags[flags.index("--runtime") + 1] if "--runtime" in flags else "claude"
    url = f"http://127.0.0.1:{w.port}" + ("/v1" if runtime in ("codex", "aider") else "")
    program = w.aider if runtime == "aider" else os.path.join(w.cli_bin, runtime)
    out = subprocess.run(["coord", "--json", "agent", "run", agent, f"SCRIPT:{script}",
                          "--program", program,
                          "--model-url", url, *flags],
                         cwd=w.repo, capture_output=True, text=True, timeout=300,
                         env=w.base_env(home, dict({"ANTHROPIC_API_KEY": "dummy", "OPENAI_API_KEY": "dummy"}, **(env or {}))))
    print(f"--- coord agent run {agent} (rc {out.returncode}) stderr ---\n{out.stderr[-3000:]}")
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise Fail(f"coord agent run: not JSON: {out.stdout[-2000:]!r}")


def define(w, name, text):
    d = os.path.join(w.repo, ".claude", "agents")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{name}.md"), "w") as f:
        f.write(text)


def worker_read_only(w):
    """A READ_ONLY Claude Code worker launched by `coord agent run`: no Write tool at all, its
    Bash write and its read outside the workspace refused, the file untouched; coord's MCP
    tools work under its own identity; its final answer reaches the caller."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash\n---\n"
                                "You review code and never change it.\n")
    w.start_model({"RO_review": [
        {"tool": "Write", "force": True, "input": {"file_path": shared, "content": "clobbered\n"}},
        {"tool": "Bash", "input": {"command": "echo x > src/shared.rs", "description": "write"}},
        {"tool": "Read", "input": {"file_path": "/etc/passwd"}},
        {"tool": "check_locks", "input": {}},
        {"tool": "Bash", "input": {"command": "git status --short", "description": "status"}},
        {"text": "REVIEW: looks fine"}]})
    home = w.home("operator")
    r = launch(w, home, "code-reviewer", "RO_review")
    check(open(shared).read() == "original\n", f"the file changed: {open(shared).read()!r}")
    check(r.get("result") == "REVIEW: looks fine", f"the final answer reached the caller: {r}")
    agent = r["agent_id"]
    check(agent.startswith("code-reviewer-") and r["profile"] == "read_only", f"{r}")
    played = [e for e in w.entries() if e.get("script") == "RO_review"]
    check(played and all("Write" not in e.get("offered", []) for e in played),
          f"Write was never offered: {[e.get('offered') for e in played][:1]}")
    turn = {e["turn"]: e for e in played}
    for step in (1, 2, 3):
        check(turn.get(step, {}).get("last_is_error"), f"step {step} came back as an error: {turn.get(step)}")
    denied = {d.get("tool_name") for d in r.get("permission_denials", [])}
    check({"Bash", "Read"} <= denied, f"Claude Code reports the Bash write and the outside read: {r.get('permission_denials')}")
    check(not turn.get(4, {}).get("last_is_error"), f"check_locks worked inside the sandbox: {turn.get(4)}")
    check(not turn.get(5, {}).get("last_is_error"), f"git status ran: {turn.get(5)}")
    mine = w.coord("audit", "--agent", agent)["entries"]
    ops = {(e["operation"], e["success"]) for e in mine}
    check(("check_locks", True) in ops and ("record_sandbox_run", True) in ops, f"audited as {agent}: {sorted(ops)}")
    keys = [k for k in w.coord("keys", "list")["keys"] if k.get("agent_id") == agent]
    check(keys and all(k.get("revoked_at") for k in keys), f"its key is revoked after the run: {keys}")
    return f"{agent}: Write absent, Bash write and outside read refused ({sorted(denied)}), file untouched, answer read"


def commit_makefile(w, text):
    with open(os.path.join(w.repo, "Makefile"), "w") as f:
        f.write(text)
    w.git("add", "Makefile")
    w.git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "make")


def worker_write(w):
    """A WRITE worker edits inside the workspace, is refused outside it, and a test runner
    it may run (`make`, repository-controlled code) cannot reach a host its policy denies."""
    outside = os.path.join(w.dir, "outside.txt")
    feature = os.path.join(w.repo, "src", "feature.rs")
    define(w, "coder", "---\nname: coder\ndescription: Writes code\n---\nYou write code.\n")
    commit_makefile(w, "fetch:\n\t@curl -sS -o /dev/null -w 'status=%{http_code}\\n' http://denied.example/ || true\n"
                       "plant:\n\t@echo '{}' > .mcp.json || echo planted=no\n"
                       "\t@git config core.fsmonitor 'touch pwned' || echo gitconfig=no\n"
                       "\t@echo coord_state=$$(ls -A .coord | tr '\\n' ,)\n")
    w.start_model({"W_code": [
        {"tool": "acquire_lock", "input": {"file_path": "src/feature.rs", "reason": "feature", "ttl_minutes": 30}},
        {"tool": "Write", "input": {"file_path": feature, "content": "fn feature() {}\n"}},
        {"tool": "Write", "input": {"file_path": outside, "content": "escaped\n"}},
        {"tool": "Bash", "input": {"command": "make fetch", "description": "run the fetch target"}},
        {"tool": "Bash", "input": {"command": "make plant", "description": "plant config"}},
        {"text": "CODED"}]})
    r = launch(w, w.home("operator"), "coder", "W_code", "--resolve", "denied.example=127.0.0.1")
    agent = r.get("agent_id", "")
    check(r.get("result") == "CODED" and r.get("profile") == "write", f"{r}")
    check(os.path.exists(feature) and open(feature).read() == "fn feature() {}\n", "the write inside landed")
    check(not os.path.exists(outside), "the write outside the workspace did not land")
    turn = {e["turn"]: e for e in w.entries() if e.get("script") == "W_code"}
    check(not turn.get(2, {}).get("last_is_error"), f"Write inside allowed: {turn.get(2)}")
    check(turn.get(3, {}).get("last_is_error"), f"Write outside refused: {turn.get(3)}")
    fetched = str(turn.get(4, {}).get("last_result"))
    check("status=403" in fetched, f"the denied host answered 403 through the proxy: {fetched}")
    planted = str(turn.get(5, {}).get("last_result"))
    check("planted=no" in planted and "gitconfig=no" in planted, f"tool config and .git are read-only: {planted}")
    check("coord_state=" in planted and "coord.db" not in planted,
          f"coord's state (the database) is not visible: {planted}")
    check(not os.path.exists(os.path.join(w.repo, ".mcp.json")) and not os.path.exists(os.path.join(w.repo, ".vscode")),
          "no placeholder left behind")
    check("fsmonitor" not in open(os.path.join(w.repo, ".git", "config")).read(), ".git/config unchanged")
    log = w.coord("network", "log", "--agent", agent)
    rows = log.get("entries") or log.get("log") or []
    check(any(e.get("host") == "denied.example" and not e.get("allowed") for e in rows),
          f"the refusal is in the access log: {log}")
    check(not w.coord("lock", "list")["locks"], "the lock was released when the run ended")
    return f"{agent}: wrote inside, refused outside, denied.example refused by the proxy"


def worker_deadline(w):
    """A worker over its deadline: stopped (its process group), its lock released, its
    claimed task back in the queue."""
    define(w, "coder", "---\nname: coder\ndescription: Writes code\nprofile: write\n---\n")
    commit_makefile(w, "hold:\n\t@sleep 300\n")
    task = w.coord("--agent-id", "planner", "work", "submit", "build", "build it")["task_id"]
    w.start_model({"D_hang": [
        {"tool": "get_work", "input": {}},
        {"tool": "acquire_lock", "input": {"file_path": "src/d.rs", "reason": "working", "ttl_minutes": 60}},
        {"tool": "Bash", "input": {"command": "make hold", "description": "work", "timeout": 600000}},
        {"text": "never"}]})
    r = launch(w, w.home("operator"), "coder", "D_hang", "--timeout", "20s")
    check(r.get("timed_out") is True and r.get("success") is False, f"stopped at its deadline: {r}")
    check(not w.coord("lock", "list")["locks"], "its lock was released")
    t = w.coord("work", "show", task).get("task", {})
    check(t.get("status") == "pending" and t.get("attempts") == 1, f"its task is back in the queue: {t}")
    claimed = w.coord("--agent-id", "survivor", "work", "claim")
    check(claimed.get("task_id") == task, f"another agent takes it: {claimed}")
    return f"{r['agent_id']}: stopped after 20 s, lock released, task requeued"


def spawn_env(w, home, **extra):
    """What a coordinator that spawns agents needs: the model endpoint its agents use, the
    runtime on its PATH, and its pre-flight validation configured."""
    return w.base_env(home, dict({"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{w.port}", "ANTHROPIC_API_KEY": "dummy",
                                  "COORD_NO_VALIDATION": "1"}, **extra))


def spawned(w, home, *args, **extra):
    out = subprocess.run(["coord", "--json", "agent", *args], cwd=w.repo, capture_output=True, text=True,
                         timeout=120, env=spawn_env(w, home, **extra))
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise Fail(f"coord agent {args} (exit {out.returncode}): not JSON: {out.stdout[-2000:]!r} {out.stderr[-2000:]!r}")


def wait_status(w, home, agent, until, timeout=180):
    """Polls get_agent_status (a real process's progress: no clock to inject)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = spawned(w, home, "status", agent)
        if until(st):
            return st
        time.sleep(0.5)
    log = os.path.join(w.repo, ".coord", "runs", f"{agent}.supervisor.log")
    if os.path.exists(log):
        print(f"--- {agent} supervisor log ---\n{open(log).read()[-4000:]}")
    raise Fail(f"{agent}: still {st.get('status')} after {timeout} s: {st}")


def ended(st):
    return st.get("status") not in ("starting", "running")


def processes_of(agent):
    """pid → argv of this machine's processes whose command line names the agent."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if any(agent.encode() in a for a in argv):
            found[int(pid)] = [a.decode(errors="replace") for a in argv if a]
    return found


def spawn_agent(w):
    """spawn_agent through a door (`coord agent spawn`): a READ_ONLY Claude Code worker is
    registered with its task already claimed, runs in the background under its supervisor,
    has its Write, Bash write and outside read refused (the file untouched) and completes
    its task with a final answer the orchestrator reads with get_agent_output; the task is
    completed with it, the worker's key revoked, every step audited."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash\n---\n"
                                "You review code and never change it.\n")
    w.start_model({"S_review": [
        {"tool": "Write", "force": True, "input": {"file_path": shared, "content": "clobbered\n"}},
        {"tool": "Bash", "input": {"command": "echo x > src/shared.rs", "description": "write"}},
        {"tool": "Read", "input": {"file_path": "/etc/passwd"}},
        {"tool": "Read", "input": {"file_path": shared}},
        {"text": "REVIEW: src/shared.rs is fine"}]})
    home = w.home("orchestrator")
    s = spawned(w, home, "spawn", "code-reviewer", "--task", "SCRIPT:S_review")
    check(s.get("success") is True and s.get("status") == "starting" and s.get("depth") == 1, f"spawned: {s}")
    agent, task = s["agent_id"], s["task_id"]
    t = w.coord("work", "show", task).get("task", {})
    check(t.get("claimed_by") == agent and t.get("status") in ("claimed", "completed"), f"its task is its own: {t}")
    # The orchestrator waits for the answer (get_agent_output with wait_seconds).
    out = spawned(w, home, "output", agent, "--wait", "100s")
    st = spawned(w, home, "status", agent)
    check(st.get("status") == "completed" and st.get("task_status") == "completed", f"it completed: {st}")
    check(open(shared).read() == "original\n", f"the file changed: {open(shared).read()!r}")
    check(out.get("result") == "REVIEW: src/shared.rs is fine", f"the orchestrator reads its answer: {out}")
    listed = spawned(w, home, "spawned")
    check([a["agent_id"] for a in listed.get("agents", [])] == [agent], f"coord agent spawned lists it: {listed}")
    denied = {d.get("tool_name") for d in out.get("permission_denials", [])}
    check({"Bash", "Read"} <= denied, f"its refused calls are reported: {out.get('permission_denials')}")
    played = [e for e in w.entries() if e.get("script") == "S_review"]
    check(played and all("Write" not in e.get("offered", []) for e in played), "Write was never offered")
    t = w.coord("work", "show", task).get("task", {})
    check(t.get("status") == "completed" and "REVIEW" in json.dumps(t.get("result")), f"its task has the answer: {t}")
    keys = [k for k in w.coord("keys", "list")["keys"] if k.get("agent_id") == agent]
    check(keys and all(k.get("revoked_at") for k in keys), f"its key is revoked: {keys}")
    runs = [e for e in w.coord("audit", "--operation", "agent_run")["entries"] if agent in json.dumps(e)]
    asked = {e["parameters"].get("tool") for e in w.coord("audit", "--agent", agent, "--operation", "check_guardrails")["entries"]}
    check({"Read", "Bash"} <= asked, f"coord's hook was asked about every tool call (activation check): {asked}")
    events = sorted(e["parameters"].get("event") for e in runs if e["success"])
    check(events == ["ended", "launched", "started"], f"its launch, start and end are audited: {runs}")
    check(w.coord("audit", "--operation", "spawn_agent")["entries"], "the spawn is audited")
    # Bad input and an unknown agent answer clear errors; nothing is registered.
    e = spawned(w, home, "spawn", "nobody", "--task", "x")
    check(e.get("error") == "not_found", f"an unknown definition: {e}")
    e = spawned(w, home, "spawn", "code-reviewer", "--task", "x", "--runtime", "vim")
    check(e.get("error") == "invalid_argument" and e.get("field") == "runtime", f"a bad runtime: {e}")
    e = spawned(w, home, "spawn", "code-reviewer", "--task", "x", COORD_NO_VALIDATION="")
    check(e.get("error") == "invalid_argument" and e.get("field") == "validator", f"no validator: {e}")
    e = spawned(w, home, "spawn", "code-reviewer", "--task", "x", ANTHROPIC_API_KEY="")
    check(e.get("error") == "invalid_argument" and "ANTHROPIC_API_KEY" in e.get("message", ""), f"no provider key: {e}")
    e = spawned(w, home, "spawn", "code-reviewer", "--task", "x", COORD_NO_VALIDATION="",
                COORD_VALIDATOR_COMMAND="echo 'Looks VALID'")
    check(e.get("error") == "preflight_denied", f"a validator's prose: {e}")
    return f"{agent}: spawned, refused Write/Bash/outside Read, completed task {task} with its answer"


def orchestrator_spawns(w):
    """Spec 001's scenario: a Claude Code orchestrator (set up by `coord init claude` only)
    calls the MCP tool spawn_agent; coord registers the worker under the orchestrator as
    its parent, runs it (a READ_ONLY Claude Code worker) and completes the task with its
    answer; an agent without the spawn_agent permission is refused."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\n")
    w.start_model({
        "O_plan": [{"tool": "spawn_agent", "input": {"agent": "code-reviewer", "task": "SCRIPT:O_review"}},
                   {"text": "spawned"}],
        "O_review": [{"tool": "Read", "input": {"file_path": shared}}, {"text": "REVIEW: shared.rs is fine"}],
        "O_delegate": [{"tool": "delegate_task", "input": {"agent": "code-reviewer", "task": "SCRIPT:O_review",
                                                           "wait_seconds": 120}},
                       {"text": "delegated"}],
    })
    home = w.home("orchestrator")
    w.init_claude(home)
    env = {"COORD_NO_VALIDATION": "1"}
    # Claude Code's default profile may not spawn: spawn_agent is not even offered (a
    # session lists the tools its profile allows), nothing runs, nothing is registered.
    o = w.claude(home, "O_plan", ["mcp__coord__spawn_agent"], env)
    o.wait(timeout=120)
    searched = [e for e in w.entries() if e.get("script") == "O_plan" and e.get("tool") == "ToolSearch"]
    check(searched and all("spawn_agent" not in str(e.get("last_result")) for e in searched),
          f"spawn_agent is not offered to a profile without it: {searched}")
    check(not w.coord("audit", "--operation", "spawn_agent")["entries"], "no spawn ran")
    check(not w.coord("work", "list")["tasks"], "nothing registered")
    # An orchestrator profile (trust 4, spawn_agent) for Claude Code sessions.
    w.coord("profile", "assign", "strands-orchestrator", "--type", "claude_code")
    o = w.claude(home, "O_plan", ["mcp__coord__spawn_agent"], env)
    o.wait(timeout=120)
    spawns = [e for e in w.coord("audit", "--operation", "spawn_agent")["entries"] if e["success"]]
    check(len(spawns) == 1, f"one spawn: {spawns}")
    orchestrator = spawns[0]["agent_id"]
    check(orchestrator.startswith("claude-code-"), f"the orchestrator is its session's own identity: {orchestrator}")
    agent = spawns[0]["result"]["agent_id"]
    st = wait_status(w, home, agent, ended)
    check(st.get("status") == "completed" and st.get("parent_agent_id") == orchestrator, f"{st}")
    check(st.get("task_status") == "completed", f"its task completed: {st}")
    out = spawned(w, home, "output", agent)
    check(out.get("result") == "REVIEW: shared.rs is fine", f"its answer: {out}")
    turn = [e for e in w.entries() if e.get("script") == "O_plan" and e.get("turn") == 1]
    check(turn and not turn[-1].get("last_is_error"), f"the orchestrator's model got the spawn's answer: {turn}")
    # spec 002's delegate_task: the sub-agent's final answer comes back as the tool's result.
    o = w.claude(home, "O_delegate", ["mcp__coord__delegate_task"], env)
    o.wait(timeout=180)
    turn = [e for e in w.entries() if e.get("script") == "O_delegate" and e.get("turn") == 1]
    check(turn and "REVIEW: shared.rs is fine" in str(turn[-1].get("last_result")),
          f"delegate_task answered the sub-agent's final answer to the orchestrator's model: {turn}")
    return f"{orchestrator} spawned {agent} over MCP; it completed its task"


def design_and_verification(w):
    """Generic workers of spec 003's other two profiles, spawned side by side: a DESIGN
    worker writes docs/ and nothing else (its Write to src/ and its Bash write refused); a
    VERIFICATION worker runs the tests (`make test`) in a read-only workspace (what the
    tests try to write there fails) and has no Write tool."""
    plan = os.path.join(w.repo, "docs", "plan.md")
    src = os.path.join(w.repo, "src", "design.rs")
    commit_makefile(w, "test:\n\t@echo tests-ran\n\t@touch src/built.o 2>/dev/null || echo workspace=read-only\n")
    w.start_model({
        "DV_design": [{"tool": "Write", "input": {"file_path": plan, "content": "# Plan\n"}},
                      {"tool": "Write", "input": {"file_path": src, "content": "fn f() {}\n"}},
                      {"tool": "Bash", "input": {"command": "echo x > src/y.rs", "description": "write"}},
                      {"text": "DESIGNED"}],
        "DV_verify": [{"tool": "Bash", "input": {"command": "make test", "description": "run the tests"}},
                      {"text": "VERIFIED"}],
    })
    home = w.home("orchestrator")
    d = spawned(w, home, "spawn", "--profile", "design", "--task", "SCRIPT:DV_design")
    v = spawned(w, home, "spawn", "--profile", "verification", "--task", "SCRIPT:DV_verify")
    check(d.get("profile") == "design" and v.get("profile") == "verification", f"spawned: {d} {v}")
    for s in (d, v):
        st = wait_status(w, home, s["agent_id"], ended)
        check(st.get("status") == "completed" and st.get("task_status") == "completed", f"{st}")
    check(open(plan).read() == "# Plan\n", "the design worker wrote docs/plan.md")
    check(not os.path.exists(src) and not os.path.exists(os.path.join(w.repo, "src", "y.rs")),
          "the design worker wrote nothing outside docs/")
    design = {e["turn"]: e for e in w.entries() if e.get("script") == "DV_design"}
    check(not design.get(1, {}).get("last_is_error"), f"docs/ write allowed: {design.get(1)}")
    check(design.get(2, {}).get("last_is_error") and design.get(3, {}).get("last_is_error"),
          f"src/ writes refused: {design.get(2)} {design.get(3)}")
    verify = [e for e in w.entries() if e.get("script") == "DV_verify"]
    ran = str({e["turn"]: e for e in verify}.get(1, {}).get("last_result"))
    check("tests-ran" in ran and "workspace=read-only" in ran, f"the tests ran, the workspace read-only: {ran}")
    check(all("Write" not in e.get("offered", []) for e in verify), "no Write tool for verification")
    check(not os.path.exists(os.path.join(w.repo, "src", "built.o")), "nothing written by the tests")
    return f"{d['agent_id']} wrote docs/ only; {v['agent_id']} ran the tests read-only"


def wait_workflow(w, what, ident, timeout=300):
    """Polls a workflow's or swarm's status until it ends (real processes: no clock to inject)."""
    deadline = time.time() + timeout
    while True:
        v = w.coord(what, "status" if what == "workflow" else "results", ident)
        if v.get("status") in ("completed", "failed") or time.time() > deadline:
            return v
        time.sleep(1)


def workflow_graph(w):
    """Spec 001's graph with a conditional edge, run by real spawned workers: implement →
    test; test → fix when it fails; test → review if its result says passed; fix → review
    (join any). Every node names a profile, so coord spawns a Claude Code worker for it when
    it is queued; the scripted test fails once: the failure edge runs, then the success
    path; the aggregated results come back."""
    def node(task_type, success, result):
        return [{"tool": "get_work", "input": {"task_types": [task_type]}},
                {"tool": "complete_work", "input": {"task_id": "{{last.task_id}}", "success": success, "result": result,
                                                    **({} if success else {"error_message": "2 tests failed"})}},
                {"text": f"{task_type} done"}]
    w.start_model({"G_impl": node("implement", True, {"files": ["src/shared.rs"]}),
                   "G_test": node("test", False, {"status": "failed", "failures": 2}),
                   "G_fix": node("fix", True, {"fixed": 2}),
                   "G_review": node("review", True, {"verdict": "approve"})})
    graph = os.path.join(w.dir, "graph.yaml")
    with open(graph, "w") as f:
        f.write("""name: implement-test-fix-review
input: {issue: 42}
nodes:
  - {id: implement, task: "SCRIPT:G_impl Implement issue 42", task_type: implement, profile: write}
  - {id: test, task: "SCRIPT:G_test Run the tests", task_type: test, profile: verification}
  - {id: fix, task: "SCRIPT:G_fix Fix the failing tests", task_type: fix, profile: write}
  - {id: review, task: "SCRIPT:G_review Review the change", task_type: review, profile: read_only, join: any}
edges:
  - {from: implement, to: test}
  - {from: test, to: fix, when: failure}
  - {from: test, to: review, if: 'result.status == "passed"'}
  - {from: fix, to: review}
""")
    home = w.home("orchestrator")
    out = subprocess.run(["coord", "--json", "workflow", "create", graph], cwd=w.repo, capture_output=True, text=True,
                         timeout=120, env=spawn_env(w, home))
    created = json.loads(out.stdout or "{}")
    check(created.get("success") is True and created.get("started") == ["implement"], f"created: {created} {out.stderr}")
    v = wait_workflow(w, "workflow", created["workflow_id"])
    nodes = {n["id"]: n for n in v.get("nodes", [])}
    statuses = {k: n["status"] for k, n in nodes.items()}
    check(v.get("status") == "completed" and statuses == {"implement": "completed", "test": "failed", "fix": "completed",
                                                          "review": "completed"}, f"the workflow: {v}")
    for k, n in nodes.items():
        check(n.get("spawned_agent_id") and n.get("agent") == n["spawned_agent_id"],
              f"node {k} was done by the worker coord spawned for it: {n}")
    profiles = {k: spawned(w, home, "status", n["spawned_agent_id"]).get("profile") for k, n in nodes.items()}
    check(profiles == {"implement": "write", "test": "verification", "fix": "write", "review": "read_only"},
          f"each worker had its node's profile: {profiles}")
    check(v["results"]["review"]["result"] == {"verdict": "approve"} and v["results"]["test"]["status"] == "failed",
          f"the aggregated results: {v['results']}")
    fix_task = w.coord("work", "show", nodes["fix"]["task_id"])["task"]
    check(fix_task["input_data"]["inputs"]["test"] == {"status": "failed", "result": {"status": "failed", "failures": 2}},
          f"the fix got the failed test's result: {fix_task['input_data']}")
    steps = w.coord("audit", "--operation", "workflow_step")["entries"]
    check(len(steps) >= 4, f"each step audited: {len(steps)}")
    return f"workflow {created['workflow_id']}: implement, test (failed), fix, review by 4 spawned workers"


def swarm_drain(w):
    """Spec 001's swarm: two Claude Code workers and one Codex worker, spawned by
    create_swarm, drain a shared queue of six tasks: each task done exactly once, each
    member two, no lock conflict, the results aggregated by get_swarm_results."""
    define(w, "linter", "---\nname: linter\ndescription: Fixes lint\nprofile: write\n---\nYou fix lint warnings.\n")
    define(w, "linter-codex", "---\nname: linter-codex\ndescription: Fixes lint\nprofile: write\nruntime: codex\n"
                              "model: fake-model\n---\nYou fix lint warnings.\n")
    step = [{"tool": "get_work", "input": {"task_types": ["lint"]}},
            {"tool": "complete_work", "input": {"task_id": "{{last.task_id}}", "success": True,
                                                "result": {"fixed": "{{last.task_id}}"}}}]
    w.start_model({"M_drain": step + step + [{"text": "DRAINED"}]})
    home = w.home("orchestrator")
    tasks = [a for i in range(6) for a in ("--task", f"Fix the lint warnings in src/m{i}.rs")]
    out = subprocess.run(["coord", "--json", "swarm", "create", "--name", "SCRIPT:M_drain lint", "--task-type", "lint",
                          "--agent", "linter", "--agent", "linter", "--agent", "linter-codex", *tasks],
                         cwd=w.repo, capture_output=True, text=True, timeout=180,
                         env=spawn_env(w, home, OPENAI_BASE_URL=f"http://127.0.0.1:{w.port}/v1", OPENAI_API_KEY="dummy"))
    s = json.loads(out.stdout or "{}")
    check(s.get("success") is True and len(s.get("members", [])) == 3 and len(s.get("tasks", [])) == 6,
          f"swarm: {s} {out.stderr[-2000:]}")
    r = wait_workflow(w, "swarm", s["swarm_id"])
    check(r.get("status") == "completed" and r.get("summary") == {"completed": 6}, f"the swarm: {r}")
    done_by = [n["agent"] for n in r["nodes"]]
    check(sorted(done_by) == sorted(s["members"] * 2), f"each member did two tasks, each task once: {done_by}")
    check(all(n["result"] == {"fixed": n["task_id"]} for n in r["nodes"]), f"each result is its task's: {r['nodes']}")
    check({m["completed"] for m in r["members"]} == {2}, f"members: {r['members']}")
    runtimes = sorted(spawned(w, home, "status", m).get("runtime") for m in s["members"])
    check(runtimes == ["claude", "claude", "codex"], f"runtimes: {runtimes}")
    for m in s["members"]:
        st = wait_status(w, home, m, ended)
        check(st.get("status") == "completed", f"member {m}: {st}")
    tasks = w.coord("work", "list", "--type", "lint")["tasks"]
    check(len(tasks) == 6 and all(t["attempts"] == 1 and t["status"] == "completed" for t in tasks),
          f"each task claimed once: {tasks}")
    conflicts = [e for e in w.coord("audit", "--operation", "acquire_lock")["entries"] if not e["success"]]
    check(not conflicts, f"no lock conflicts: {conflicts}")
    return f"swarm {s['swarm_id']}: 6 tasks by 2 Claude Code + 1 Codex workers, 2 each"


def worktree_isolation(w):
    """An agent spawned with `--isolation worktree` edits in a worktree of its own (a new
    branch coord/<agent>): its lock is visible from the main checkout while it works, the
    main checkout's file is untouched; when it ends its change is a commit on its branch,
    its worktree is removed, its lock released and its port block given back."""
    define(w, "coder", "---\nname: coder\ndescription: Writes code\nprofile: write\n---\n")
    with open(os.path.join(w.repo, ".gitignore"), "w") as f:
        f.write("go\n")
    w.git("add", ".gitignore")
    # `wait` holds the agent until the test has looked (a file the test creates in its worktree).
    commit_makefile(w, "edit:\n\t@echo isolated > src/shared.rs\n"
                       "wait:\n\t@while [ ! -e go ]; do sleep 0.1; done; echo went\n")
    w.start_model({"I_iso": [
        {"tool": "acquire_lock", "input": {"file_path": "src/shared.rs", "reason": "isolated edit", "ttl_minutes": 30}},
        {"tool": "Bash", "input": {"command": "make edit", "description": "edit"}},
        {"tool": "Bash", "input": {"command": "make wait", "description": "wait", "timeout": 600000}},
        {"text": "ISOLATED"}]})
    home = w.home("orchestrator")
    s = spawned(w, home, "spawn", "coder", "--task", "SCRIPT:I_iso", "--isolation", "worktree")
    check(s.get("success") is True and s.get("isolation") == "worktree", f"spawned: {s}")
    agent = s["agent_id"]
    st = wait_status(w, home, agent, lambda st: st.get("worktree") is not None or not st.get("status") in ("starting", "running"))
    wt = st.get("worktree") or {}
    check(wt.get("state") == "live" and wt.get("branch") == f"coord/{agent}", f"its worktree while it runs: {st}")
    path = wt["path"]
    check(os.path.realpath(os.path.dirname(path)) == os.path.realpath(os.path.join(w.repo, ".coord-worktrees")),
          f"its worktree is in the main checkout's .coord-worktrees: {path}")
    check((wt.get("ports") or {}).get("db_port"), f"it has a port block: {wt}")
    check(w.wait_turn("I_iso", 2, None, timeout=180), "the agent never reached its wait")
    locks = w.coord("lock", "list")["locks"]
    check([(l["file_path"], l["locked_by"]) for l in locks] == [("src/shared.rs", agent)],
          f"its lock is visible from the main checkout: {locks}")
    check(open(os.path.join(path, "src", "shared.rs")).read() == "isolated\n", "it edited its own worktree")
    session = {a["agent_id"]: a for a in w.coord("agents", "discover")["agents"]}.get(agent, {})
    check(session.get("branch") == f"coord/{agent}" and os.path.realpath(session.get("worktree") or "") == os.path.realpath(path),
          f"its session names its worktree and branch (git works inside): {session}")
    check(open(os.path.join(w.repo, "src", "shared.rs")).read() == "original\n", "the main checkout is untouched")
    listed = spawned(w, home, "spawned")
    check(any(a["agent_id"] == agent and (a.get("worktree") or {}).get("path") == path for a in listed["agents"]),
          f"listed with its worktree while it lives: {listed}")
    # Port leases are per machine user: the coordinator's (the orchestrator's HOME).
    ports = w.coord("ports", "status", env={"HOME": home})
    check(agent in json.dumps(ports), f"its port block is leased under its id: {ports}")
    open(os.path.join(path, "go"), "w").close()
    st = wait_status(w, home, agent, ended)
    wt = st.get("worktree") or {}
    check(st.get("status") == "completed", f"it completed: {st}")
    check(wt.get("state") == "removed" and not os.path.exists(path), f"its worktree was removed: {wt}")
    check(wt.get("branch_kept") and wt.get("commit"), f"its branch holds its work: {wt}")
    shown = subprocess.run(["git", "show", f"coord/{agent}:src/shared.rs"], cwd=w.repo, capture_output=True, text=True)
    check(shown.stdout == "isolated\n", f"its change is on its branch: {shown.stdout!r} {shown.stderr!r}")
    files = subprocess.run(["git", "show", "--name-only", "--format=", f"coord/{agent}"], cwd=w.repo,
                           capture_output=True, text=True).stdout.split()
    check(files == ["src/shared.rs"], f"its commit holds its change only: {files}")
    check(open(os.path.join(w.repo, "src", "shared.rs")).read() == "original\n", "the main checkout is still untouched")
    check(not w.coord("lock", "list")["locks"], "its lock was released when it ended")
    ports = w.coord("ports", "status", env={"HOME": home})
    check(agent not in json.dumps(ports), f"its port block was given back: {ports}")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=w.repo, capture_output=True, text=True).stdout
    check(".coord-worktrees" not in status, f"the worktrees' directory stays out of git status: {status!r}")
    return f"{agent}: edited in {path} on coord/{agent}, commit {wt.get('commit', '')[:12]}, worktree removed"


def spawned_worker_killed(w):
    """A spawned WRITE worker SIGKILLed mid-task (its runtime), then another whose supervisor
    is SIGKILLed: each time its lock is released and its task back in the queue; the dead
    supervisor's agent is found out and reclaimed (status lost, key revoked) by the next
    get_agent_status; stop_agent stops a third."""
    define(w, "coder", "---\nname: coder\ndescription: Writes code\nprofile: write\n---\n")
    commit_makefile(w, "hold:\n\t@sleep 300\n")
    hang = [{"tool": "acquire_lock", "input": {"file_path": "src/k.rs", "reason": "working", "ttl_minutes": 60}},
            {"tool": "Bash", "input": {"command": "make hold", "description": "work", "timeout": 600000}},
            {"text": "never"}]
    w.start_model({"K_hang": hang})
    home = w.home("orchestrator")

    def start():
        s = spawned(w, home, "spawn", "coder", "--task", "SCRIPT:K_hang")
        check(s.get("success") is True, f"spawned: {s}")
        agent = s["agent_id"]
        deadline = time.time() + 120
        while time.time() < deadline and not w.coord("lock", "list")["locks"]:
            time.sleep(0.5)
        check(w.coord("lock", "list")["locks"], f"{agent} took its lock")
        return agent, s["task_id"]

    def released(agent, task, status):
        st = wait_status(w, home, agent, ended)
        check(st.get("status") == status, f"{agent}: {st}")
        check(not w.coord("lock", "list")["locks"], "its lock was released")
        t = w.coord("work", "show", task).get("task", {})
        check(t.get("status") == "pending" and t.get("attempts") == 1, f"its task is back in the queue: {t}")
        keys = [k for k in w.coord("keys", "list")["keys"] if k.get("agent_id") == agent]
        check(keys and all(k.get("revoked_at") for k in keys), f"its key is revoked: {keys}")

    agent, task = start()
    runtime = [p for p, argv in processes_of(agent).items()
               if not argv[0].endswith(("coord", "bwrap")) and "claude" in " ".join(argv[:2])]
    check(runtime, f"the runtime of {agent} is running: {processes_of(agent)}")
    for p in runtime:
        os.kill(p, signal.SIGKILL)
    released(agent, task, "failed")

    agent, task = start()
    supervisor = spawned(w, home, "status", agent).get("pid")
    check(supervisor and "supervise" in " ".join(processes_of(agent).get(supervisor, [])), f"its supervisor: {supervisor}")
    os.kill(supervisor, signal.SIGKILL)
    released(agent, task, "lost")
    deadline = time.time() + 30
    while time.time() < deadline and processes_of(agent):
        time.sleep(0.5)
    check(not processes_of(agent), f"nothing of {agent} outlives its supervisor: {processes_of(agent)}")

    agent, task = start()
    r = spawned(w, home, "stop", agent, "--reason", "no longer needed")
    check(r.get("stopping") is True, f"stop_agent: {r}")
    released(agent, task, "stopped")
    st = spawned(w, home, "status", agent)
    check(st.get("error") == "no longer needed", f"the stop keeps its reason: {st}")

    # Stopped the moment it is spawned: it never runs, and ends stopped with the reason.
    s = spawned(w, home, "spawn", "coder", "--task", "SCRIPT:K_hang")
    r = spawned(w, home, "stop", s["agent_id"], "--reason", "changed my mind")
    check(r.get("stopping") is True, f"stop_agent: {r}")
    st = wait_status(w, home, s["agent_id"], ended)
    check(st.get("status") == "stopped" and st.get("error") == "changed my mind", f"{st}")
    t = w.coord("work", "show", s["task_id"]).get("task", {})
    check(t.get("status") == "pending", f"its task is back in the queue: {t}")
    return "runtime killed → failed, supervisor killed → lost, stop_agent → stopped; each lock released, task requeued"


def preflight(w):
    """Pre-flight validation: a validator answering INVALID, prose, malformed JSON, nothing,
    an invalid verdict or too late blocks the launch before anything is registered; a
    structured valid verdict (from a command or a model) lets it run; switching it off is
    recorded."""
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\n---\n")
    w.start_model({"P_run": [{"text": "RAN"}],
                   "P_model_ok": [{"text": '{"verdict":"valid","reasons":[]}'}],
                   "P_model_prose": [{"text": "The plan is VALID."}]})
    home = w.home("operator")
    plan_file = os.path.join(w.dir, "plan.json")
    denials = {
        "INVALID": "echo INVALID",
        "prose": "echo 'Looks VALID to me'",
        "malformed": "echo '{\"verdict\": \"valid\"'",
        "nothing": "true",
        "invalid verdict": "echo '{\"verdict\":\"invalid\",\"reasons\":[\"asks for secrets\"]}'",
        "failing": "echo '{\"verdict\":\"valid\"}'; exit 3",
        "too late": "sleep 20; echo '{\"verdict\":\"valid\"}'",
    }
    for what, cmd in denials.items():
        r = launch(w, home, "code-reviewer", "P_run", "--validator-command", cmd, "--validator-timeout", "3s")
        check(r.get("error") == "preflight_denied", f"{what}: the launch is denied: {r}")
    check(not any(e.get("script") == "P_run" for e in w.entries()), "no denied launch ever reached the model")
    check(not w.coord("keys", "list")["keys"], "no denied launch got a key")
    rows = w.coord("audit", "--operation", "record_preflight")["entries"]
    check(len(rows) == len(denials) and not any(e["success"] for e in rows), f"every denial audited: {rows}")
    check(any("asks for secrets" in json.dumps(e) for e in rows), "the validator's reason is in the audit trail")
    r = launch(w, home, "code-reviewer", "P_run", "--validator-command", f"tee {plan_file} >/dev/null; "
               "echo '{\"verdict\":\"valid\",\"reasons\":[]}'")
    check(r.get("result") == "RAN", f"a valid verdict lets the launch run: {r}")
    plan = json.load(open(plan_file))
    check(plan.get("profile") == "read_only" and plan.get("task") == "SCRIPT:P_run" and "Read" in plan.get("tools", []),
          f"the validator saw the plan: {plan}")
    model = f"http://127.0.0.1:{w.port}"
    r = launch(w, home, "code-reviewer", "P_model_prose", "--validator-url", model)
    check(r.get("error") == "preflight_denied", f"a model answering prose denies: {r}")
    r = launch(w, home, "code-reviewer", "P_model_ok", "--validator-url", model)
    check(r.get("success") is True, f"a model's structured valid verdict allows: {r}")
    r = launch(w, home, "code-reviewer", "P_run")
    check(r.get("success") is True, f"validation switched off explicitly: {r}")
    rows = w.coord("audit", "--operation", "record_preflight", "--result", "success")["entries"]
    kinds = sorted(e["parameters"]["validator"] for e in rows)
    check(kinds == ["command", "disabled", "model"], f"allowed launches recorded with their validator: {kinds}")
    return f"{len(denials) + 1} denials, valid verdicts from a command and a model, disabled recorded"


def worker_codex_read_only(w):
    """A READ_ONLY Codex worker (`coord agent run --runtime codex`): its shell write is
    refused by the read-only workspace, the file untouched; coord's MCP tools work under its
    identity; its last message reaches the caller."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\nmodel: fake-model\n---\n"
                                "You review code.\n")
    w.start_model({"CX_ro": [
        {"tool": "exec_command", "input": {"cmd": "echo x > src/shared.rs; echo rc=$?"}},
        {"tool": "check_locks", "input": {}},
        {"text": "CODEX REVIEW DONE"}]})
    r = launch(w, w.home("operator"), "code-reviewer", "CX_ro", "--runtime", "codex")
    check(open(shared).read() == "original\n", f"the file changed: {open(shared).read()!r}")
    turn = {e["turn"]: e for e in w.entries() if e.get("script") == "CX_ro"}
    wrote = str(turn.get(1, {}).get("last_result"))
    check("Read-only file system" in wrote, f"the shell write was refused by the sandbox: {wrote[:500]}")
    check("locks" in str(turn.get(2, {}).get("last_result")), f"check_locks worked: {turn.get(2)}")
    check(all("web_search" not in e.get("tool_types", []) for e in turn.values()),
          "no provider-side web search (it would bypass the proxy)")
    check((r.get("result") or "").strip() == "CODEX REVIEW DONE", f"the last message reached the caller: {r}")
    mine = w.coord("audit", "--agent", r["agent_id"], "--operation", "check_locks")["entries"]
    check(mine and mine[0]["success"], f"audited as {r['agent_id']}: {mine}")
    return f"{r['agent_id']}: shell write refused (read-only file system), file untouched"


def aider_read_only(w):
    """Aider (issue 58) as a READ_ONLY worker of `coord agent run --runtime aider`: the model
    answers with a whole-file edit, but Aider runs in ask mode with --dry-run in a
    read-only workspace: the file is unchanged. Its output is the run's result, and the
    launch is audited under the agent's own identity."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    define(w, "aider-reviewer", "---\nname: aider-reviewer\ndescription: Reviews with Aider\nruntime: aider\n"
                                "model: openai/fake-model\n---\nYou review code.\n")
    w.start_model({"AR": [{"text": "src/shared.rs\n```\nrewritten by a read-only aider\n```\n\nAIDER REVIEW DONE\n"}]})
    started = time.time()
    r = launch(w, w.home("operator"), "aider-reviewer", "AR", "--runtime", "aider")
    took = time.time() - started
    check(open(shared).read() == "original\n", f"a read-only Aider changed the file: {open(shared).read()!r}")
    check(r.get("success") and "AIDER REVIEW DONE" in (r.get("result") or ""), f"Aider's output is the result: {r}")
    asked = [e for e in w.entries() if e.get("api") == "chat" and e.get("script") == "AR"]
    check(asked, "Aider asked the scripted model (through the relayed endpoint)")
    runs = w.coord("audit", "--agent", r["agent_id"], "--operation", "record_sandbox_run")["entries"]
    check(runs and runs[0]["parameters"]["enforcement"] == "namespace" and "--dry-run" in runs[0]["parameters"]["command"],
          f"the launch is audited as enforced, read-only flags and all: {runs}")
    return f"{r['agent_id']}: edit answered, file unchanged, output returned ({took:.1f} s)"


def aider_write(w):
    """Aider as a WRITE worker: a launch whose task is about a file another agent holds
    (`--file`) is refused before anything runs; with a free file instead (in Aider's
    chat), its edit lands, while the held file — which its model also rewrites — is
    read-only in its sandbox (the file keeps its content) and was named, with its holder
    and why, in Aider's message; nothing but the model was reached (no connection in the
    agent's network log)."""
    shared = os.path.join(w.repo, "src", "shared.rs")
    held = os.path.join(w.repo, "src", "held.rs")
    with open(held, "w") as f:
        f.write("held\n")
    w.git("add", ".")
    w.git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "held")
    other = w.coord("lock", "acquire", "src/held.rs", "--reason", "migrating the schema",
                    env={"COORD_AGENT_ID": "other-agent"})
    check(other.get("success"), f"another agent holds src/held.rs: {other}")
    define(w, "aider-writer", "---\nname: aider-writer\ndescription: Writes with Aider\nprofile: write\n"
                              "runtime: aider\nmodel: openai/fake-model\n---\nYou edit code.\n")
    w.start_model({"AW": [{"text": "src/shared.rs\n```\nwritten by aider\n```\n\nsrc/held.rs\n```\noverwritten by aider\n```\n"}]})
    # A task about a file another agent holds does not start at all.
    refused = launch(w, w.home("operator"), "aider-writer", "AW", "--runtime", "aider", "--file", "src/held.rs")
    check(refused.get("error") == "file_locked" and "other-agent" in refused.get("message", ""),
          f"a launch about a held file is refused, naming the holder: {refused}")
    check(not [e for e in w.entries() if e.get("script") == "AW"], "the refused launch reached the model")
    started = time.time()
    r = launch(w, w.home("operator"), "aider-writer", "AW", "--runtime", "aider", "--file", "src/shared.rs")
    took = time.time() - started
    check(open(shared).read() == "written by aider\n", f"the free file's edit landed: {open(shared).read()!r} / {r}")
    check(open(held).read() == "held\n", f"the held file was changed: {open(held).read()!r}")
    asked = [e for e in w.entries() if e.get("api") == "chat" and e.get("script") == "AW"]
    check(asked and "src/held.rs, held by other-agent: migrating the schema" in str(asked[0].get("last_user")),
          f"Aider was told which file is held, by whom and why: {asked[:1]}")
    net = w.coord("audit", "--agent", r["agent_id"], "--operation", "check_network_access")["entries"]
    check(not net, f"Aider tried to reach more than its model: {net}")
    return f"{r['agent_id']}: free file written, held file read-only and named ({took:.1f} s)"


def worker_unsandboxed(w):
    """Spec 003's toggle COORD_SANDBOX_ENABLED=false: the launch runs outside the sandbox (its
    CLI's own permission checks kept: Claude Code refuses skip-permissions as root anyway),
    with a loud warning and an audit row saying the enforcement was advisory; its tools are
    still only the profile's. An unreadable value is refused."""
    define(w, "code-reviewer", "---\nname: code-reviewer\ndescription: Reviews code\n---\n")
    w.start_model({"U_run": [{"tool": "check_locks", "input": {}}, {"text": "UNSANDBOXED"}]})
    home = w.home("operator")
    r = launch(w, home, "code-reviewer", "U_run", env={"COORD_SANDBOX_ENABLED": "maybe"})
    check(r.get("error") == "invalid_argument", f"an unreadable toggle is refused: {r}")
    r = launch(w, home, "code-reviewer", "U_run", env={"COORD_SANDBOX_ENABLED": "false"})
    check(r.get("result") == "UNSANDBOXED", f"the launch ran: {r}")
    runs = w.coord("audit", "--agent", r["agent_id"], "--operation", "record_sandbox_run")["entries"]
    check(runs and runs[0]["parameters"]["enforcement"] == "advisory", f"recorded as advisory: {runs}")
    check("--restricted" in runs[0]["parameters"]["command"], "the CLI's own checks stay on")
    played = [e for e in w.entries() if e.get("script") == "U_run"]
    check(played and "Write" not in played[0].get("offered", []), "the tools are still the profile's")
    check(not played[-1].get("last_is_error"), f"coord's tools worked: {played[-1]}")
    return f"{r['agent_id']}: ran unsandboxed, recorded as advisory"


SCENARIOS = {"workflow-graph": workflow_graph, "swarm": swarm_drain, "spawn": spawn_agent, "design-and-verification": design_and_verification, "orchestrator-spawns": orchestrator_spawns, "spawned-worker-killed": spawned_worker_killed, "worktree-isolation": worktree_isolation, "preflight": preflight, "worker-unsandboxed": worker_unsandboxed, "aider-read-only": aider_read_only, "aider-write": aider_write, "worker-codex-read-only": worker_codex_read_only, "worker-read-only": worker_read_only, "worker-write": worker_write, "worker-deadline": worker_deadline, "approval": approval, "claude-file-tools": claude_file_tools, "codex-hooks": codex_hooks, "missing-coord": missing_coord, "self-approval": self_approval, "entry-points": entry_points, "plugin": plugin, "runtime-sandbox": runtime_sandbox, "claude-session-start-memory": claude_session_start_memory, "interactive-claude": interactive_claude, "two-claude-sessions": two_claude_sessions, "two-worktrees": two_worktrees, "killed-claude": killed_claude,
             "claude-guardrails": claude_guardrails,
             "codex-vs-claude": codex_vs_claude, "direct-handover": direct_handover, "typescript-sdk": typescript_sdk, "strands": strands_worker,
             "strands-orchestrator": strands_orchestrator}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--coord", required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--strands-python", help="a Python with strands-agents (the strands scenario)")
    p.add_argument("--claude-bin", help="a folder with another Claude Code, put first on PATH")
    p.add_argument("--aider", help="Aider's script, in its virtual environment (the aider scenarios)")
    args = p.parse_args()
    w = World(args)
    try:
        detail = SCENARIOS[args.scenario](w)
        print(json.dumps({"ok": True, "scenario": args.scenario, "detail": detail}))
    except (Fail, subprocess.TimeoutExpired) as e:
        w.diagnostics()
        print(json.dumps({"ok": False, "scenario": args.scenario, "why": str(e)}))
        sys.exit(1)
    finally:
        w.close()


if __name__ == "__main__":
    main()
