#!/usr/bin/env bash
# Validate a feature against an isolated coordinator on leased ports (see SKILL.md).
set -euo pipefail

COORD="${COORD:-coord}"
# The ports and the server under test are this machine's, even when the caller is in
# remote mode (a cloud agent with COORDINATION_API_URL set): run coord locally here.
local_coord() { env -u COORDINATION_API_URL -u COORDINATION_API_KEY "$COORD" "$@"; }
HERE="$(cd "$(dirname "$0")" && pwd)"
SESSION="${VALIDATE_SESSION:-validate-$(basename "$PWD")-$$}"
WORK="$(mktemp -d)"
SERVER_PID=""

cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -f "$WORK/compose-started" ]; then
    docker compose -p "$COMPOSE_PROJECT_NAME" down >/dev/null 2>&1 || true
  fi
  local_coord ports release "$SESSION" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# A failed allocation must stop here, not leave stale port variables from the environment.
snippet="$(local_coord ports allocate "$SESSION" --env)" || { echo "validate-feature: no ports for $SESSION" >&2; exit 1; }
eval "$snippet"
echo "validate-feature: session $SESSION on ports db=$AGENT_COORDINATOR_DB_PORT rest=$AGENT_COORDINATOR_REST_PORT realtime=$AGENT_COORDINATOR_REALTIME_PORT api=$API_PORT ($COMPOSE_PROJECT_NAME)"

if [ -f docker-compose.yml ] && command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  AGENT_COORDINATOR_DB_PORT="$AGENT_COORDINATOR_DB_PORT" \
  AGENT_COORDINATOR_REST_PORT="$AGENT_COORDINATOR_REST_PORT" \
  AGENT_COORDINATOR_REALTIME_PORT="$AGENT_COORDINATOR_REALTIME_PORT" \
    docker compose -p "$COMPOSE_PROJECT_NAME" up -d && touch "$WORK/compose-started"
fi

KEY="validate-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
COORDINATION_API_KEYS="$KEY" COORD_PORTS_STATE="$WORK/inner-ports.json" \
  local_coord serve --host 127.0.0.1 --port "${AGENT_COORDINATOR_REST_PORT:-3000}" --db "$WORK/coord.db" \
  >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!

ready=""
for _ in $(seq 1 100); do
  if curl -fsS "http://localhost:${AGENT_COORDINATOR_REST_PORT:-3000}/health" >/dev/null 2>&1; then
    ready=yes
    break
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "validate-feature: the coordinator did not become healthy on port ${AGENT_COORDINATOR_REST_PORT:-3000}" >&2
  cat "$WORK/serve.log" >&2
  exit 1
fi

COORD="$COORD" COORDINATION_API_KEY="$KEY" "$HERE/checks.sh"
echo "validate-feature: all checks passed"
