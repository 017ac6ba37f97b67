#!/usr/bin/env bash
# Checks against a running coordinator. Every address comes from the environment:
# AGENT_COORDINATOR_REST_PORT (default 3000) and COORDINATION_API_KEY.
set -euo pipefail

COORD="${COORD:-coord}"
BASE_URL="http://localhost:${AGENT_COORDINATOR_REST_PORT:-3000}"
export COORDINATION_API_URL="$BASE_URL"
: "${COORDINATION_API_KEY:?COORDINATION_API_KEY must hold an operator key of the coordinator under test}"

fail() { echo "check failed: $*" >&2; exit 1; }
pass() { echo "  ok  $*"; }

health="$(curl -fsS "$BASE_URL/health")"
echo "$health" | grep -q '"status":"ok"' || fail "health: $health"
pass "health at $BASE_URL"

curl -fsS "$BASE_URL/openapi.json" | grep -q '"openapi":"3.1.0"' || fail "openapi.json"
pass "OpenAPI document"

status="$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE_URL/locks/acquire" -d '{"file_path":"x"}')"
[ "$status" = 401 ] || fail "a write without a key answered $status, not 401"
pass "writes need a key"

"$COORD" --agent-id validate-a lock acquire src/feature.rs --reason validate >/dev/null || fail "agent a could not lock"
if "$COORD" --agent-id validate-b lock acquire src/feature.rs >/dev/null; then fail "agent b got a held lock"; fi
"$COORD" --agent-id validate-a lock release src/feature.rs >/dev/null || fail "release"
"$COORD" --agent-id validate-b lock acquire src/feature.rs >/dev/null || fail "agent b after release"
pass "locks: acquire, block, release, acquire"

task="$("$COORD" --json --agent-id validate-a work submit check "validate the queue" | sed -n 's/.*"task_id":"\([^"]*\)".*/\1/p')"
[ -n "$task" ] || fail "submit"
"$COORD" --agent-id validate-b work claim >/dev/null || fail "claim"
"$COORD" --agent-id validate-b work complete "$task" --success >/dev/null || fail "complete"
"$COORD" --json work show "$task" | grep -q '"status":"completed"' || fail "task not completed"
pass "work queue: submit, claim, complete"
