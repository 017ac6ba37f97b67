#!/usr/bin/env python3
"""The one split of the independent corpus into its tuning and held-out parts.

Run once, on the cases gathered from the sources in SOURCES.md (JSON lines, labelled by
../LABELS.md before coord judged any of them):

    python3 split.py gathered/*.jsonl

A case goes to the held-out part when the first byte of the SHA-256 of its command is
below 128 (about half), else to the tuning part. Commands already in the development
corpus (../commands.jsonl) and repeats are dropped. Cases written later go into
tuning.jsonl by hand, never into heldout.jsonl (../LABELS.md).
"""

import hashlib
import json
import pathlib
import sys

here = pathlib.Path(__file__).parent
known = {json.loads(l)["command"] for l in (here.parent / "commands.jsonl").read_text().splitlines() if l.strip()}
tuning, held_out, seen = [], [], set()
for path in sys.argv[1:]:
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        command = case["command"]
        if command in known or command in seen:
            continue
        seen.add(command)
        part = held_out if hashlib.sha256(command.encode()).digest()[0] < 128 else tuning
        part.append({k: case[k] for k in ("command", "label", "operation", "source", "note") if case.get(k)})
for name, part in (("tuning.jsonl", tuning), ("heldout.jsonl", held_out)):
    (here / name).write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in part))
    print(f"{name}: {len(part)} cases")
