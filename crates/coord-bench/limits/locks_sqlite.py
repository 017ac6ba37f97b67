#!/usr/bin/env python3
"""The independent limit for `coord bench locks` on SQLite.

A client of SQLite that is not coord: Python's sqlite3 module running the leanest
statements we know that give the guarantees coord gives a lock pair, so coord's figure
can be read against what SQLite itself allows on this machine, in the same run:

- durability as coord's: WAL, synchronous=NORMAL, one transaction per operation
  (BEGIN IMMEDIATE ... COMMIT), so an acquire or a release is durable before it answers;
- an atomic acquire that respects a live holder (an upsert whose update only happens
  when the row expired or is the caller's own) and a check against live pattern locks;
- a fencing token from a counter, drawn inside the acquiring transaction;
- one audit row per operation with the parameters and the result as JSON, hash-chained
  (SHA-256 over the previous row's hash and the row's content), indexed by time, agent
  and operation as the audit queries need.

N processes (one connection each, as N agents), for S seconds; prints one JSON line.
"""
import argparse, hashlib, json, multiprocessing as mp, os, random, sqlite3, time

SCHEMA = """
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS locks (
    path TEXT PRIMARY KEY, agent TEXT NOT NULL, expires_at INTEGER NOT NULL, token INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pattern_locks (
    pattern TEXT PRIMARY KEY, agent TEXT NOT NULL, expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO counters VALUES ('fencing_token', 0);
-- The row id is the chain position: no second unique index.
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, agent TEXT NOT NULL, operation TEXT NOT NULL,
    parameters TEXT NOT NULL, result TEXT NOT NULL, success INTEGER NOT NULL,
    prev_hash TEXT NOT NULL, row_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent, seq);
CREATE INDEX IF NOT EXISTS audit_operation ON audit (operation, seq);
"""

GENESIS = "0" * 64


def micros():
    return time.time_ns() // 1000


def audit(c, now, agent, operation, parameters, result, success):
    head = c.execute("SELECT seq, row_hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS)
    params, res = json.dumps(parameters), json.dumps(result)
    content = "\n".join([prev, str(seq), str(now), agent, operation, params, res, str(int(success))])
    row_hash = hashlib.sha256(content.encode()).hexdigest()
    c.execute(
        "INSERT INTO audit (seq, ts, agent, operation, parameters, result, success, prev_hash, row_hash)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (seq, now, agent, operation, params, res, int(success), prev, row_hash),
    )


def acquire(c, agent, path):
    c.execute("BEGIN IMMEDIATE")
    now = micros()
    covered = c.execute(
        "SELECT 1 FROM pattern_locks WHERE expires_at > ? AND agent <> ? AND ? GLOB pattern LIMIT 1",
        (now, agent, path),
    ).fetchone()
    token = None
    if not covered:
        token = c.execute(
            "UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' RETURNING value"
        ).fetchone()[0]
        row = c.execute(
            "INSERT INTO locks (path, agent, expires_at, token) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (path) DO UPDATE SET agent = excluded.agent, expires_at = excluded.expires_at,"
            " token = excluded.token WHERE locks.expires_at <= ? OR locks.agent = excluded.agent"
            " RETURNING token",
            (path, agent, now + 7_200_000_000, token, now),
        ).fetchone()
        token = row[0] if row else None
    result = {"success": token is not None, "action": "acquired" if token else "blocked",
              "fencing_token": token, "file_path": path}
    audit(c, now, agent, "acquire_lock", {"file_path": path}, result, token is not None)
    c.execute("COMMIT")
    return token


def release(c, agent, path):
    c.execute("BEGIN IMMEDIATE")
    now = micros()
    row = c.execute(
        "DELETE FROM locks WHERE path = ? AND agent = ? AND expires_at > ? RETURNING token",
        (path, agent, now),
    ).fetchone()
    audit(c, now, agent, "release_lock", {"file_path": path}, {"success": row is not None}, row is not None)
    c.execute("COMMIT")
    return row is not None


def client(db, index, paths, start, seconds, out):
    # A worker that fails still answers (with its error), so the parent never waits forever.
    try:
        run_client(db, index, paths, start, seconds, out)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        out.put((0, 0, 0, [], f"client {index}: {e}"))


def run_client(db, index, paths, start, seconds, out):
    c = sqlite3.connect(db, isolation_level=None, timeout=60)
    c.execute("PRAGMA synchronous = NORMAL")
    agent = f"limit-{index}"
    rng = random.Random(index + 1)
    pairs = blocked = errors = 0
    last_token = 0
    latencies = []
    start.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        path = f"src/bench/file-{rng.randrange(paths)}.rs"
        t0 = time.perf_counter_ns()
        token = acquire(c, agent, path)
        if token is None:
            blocked += 1
            continue
        if token <= last_token:
            errors += 1  # fencing tokens must grow
        last_token = token
        if not release(c, agent, path):
            errors += 1
        latencies.append((time.perf_counter_ns() - t0) // 1000)
        pairs += 1
    out.put((pairs, blocked, errors, latencies, None))
    c.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--paths", type=int, default=1000)
    a = p.parse_args()
    setup = sqlite3.connect(a.db, isolation_level=None)
    setup.executescript(SCHEMA)
    setup.close()
    start, out = mp.Event(), mp.Queue()
    procs = [mp.Process(target=client, args=(a.db, i, a.paths, start, a.seconds, out)) for i in range(a.clients)]
    for proc in procs:
        proc.start()
    time.sleep(0.2)  # every process connected before the clock starts
    t0 = time.monotonic()
    start.set()
    results = [out.get(timeout=a.seconds + 120) for _ in procs]
    failures = [r[4] for r in results if r[4]]
    if failures:
        raise SystemExit("; ".join(failures))
    elapsed = time.monotonic() - t0
    for proc in procs:
        proc.join()
    lat = sorted(l for r in results for l in r[3])
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0
    pairs = sum(r[0] for r in results)
    print(json.dumps({
        "tool": "python-sqlite3", "sqlite_version": sqlite3.sqlite_version, "clients": a.clients,
        "seconds": round(elapsed, 3), "ops": pairs, "ops_per_sec": round(pairs / elapsed, 1),
        "p50_us": pct(0.5), "p99_us": pct(0.99), "blocked": sum(r[1] for r in results),
        "errors": sum(r[2] for r in results),
    }))


if __name__ == "__main__":
    main()
