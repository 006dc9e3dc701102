#!/usr/bin/env bash
# stack.sh — run snapq's api and worker (and the sample-page server) in the background.
#
#   scripts/stack.sh up      start api, worker and fixtures from bin/ (build first: make build)
#   scripts/stack.sh down    stop them
#   scripts/stack.sh status  show what runs
#
# Configuration comes from SNAPQ_* variables; unset ones default to the local
# stack of scripts/services.sh. Logs: .data/logs/{api,worker,fixtures}.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="$ROOT/.data/run"
LOGS="$ROOT/.data/logs"
mkdir -p "$RUN" "$LOGS"

# Defaults for the local stack; anything already exported wins.
while IFS= read -r line; do
  name=${line#export }; name=${name%%=*}
  [[ -n ${!name:-} ]] || eval "$line"
done < <("$ROOT/scripts/services.sh" env)
export SNAPQ_HTTP_ADDR=${SNAPQ_HTTP_ADDR:-127.0.0.1:8080}
# The local stack listens on loopback only, so it runs without API keys unless asked
# (SNAPQ_AUTH=on; create keys with bin/api keys create --name NAME).
export SNAPQ_AUTH=${SNAPQ_AUTH:-off}
FIXTURES_ADDR=${SNAPQ_FIXTURES_ADDR:-127.0.0.2:8090}
# The worker's egress guard denies loopback and private addresses. The sample site lives
# on 127.0.0.2 (not where Postgres, Redis and MinIO listen), and only that address is
# allowed; export SNAPQ_EGRESS_ALLOW_CIDRS= (empty) to deny it too.
export SNAPQ_EGRESS_ALLOW_CIDRS=${SNAPQ_EGRESS_ALLOW_CIDRS-${FIXTURES_ADDR%:*}/32}

say() { printf 'stack: %s\n' "$*" >&2; }
running() { [[ -f $RUN/$1.pid ]] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start() { # start NAME ARGS...
  local name=$1; shift
  if running "$name"; then return 0; fi
  [[ -x $ROOT/bin/$name ]] || { say "bin/$name is missing: run make build"; exit 1; }
  nohup "$ROOT/bin/$name" "$@" >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

stop() {
  local name=$1
  if running "$name"; then
    local pid; pid=$(cat "$RUN/$name.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid"
}

cmd_up() {
  start fixtures -addr "$FIXTURES_ADDR"
  start api serve
  start worker
  local url="http://$SNAPQ_HTTP_ADDR/readyz"
  for _ in $(seq 1 60); do
    if curl -sf -o /dev/null --max-time 2 "$url"; then
      running worker || { say "worker exited; last log lines:"; tail -n 20 "$LOGS/worker.log" >&2; exit 1; }
      say "api ready on http://$SNAPQ_HTTP_ADDR (logs in .data/logs/)"
      return 0
    fi
    running api || { say "api exited; last log lines:"; tail -n 20 "$LOGS/api.log" >&2; exit 1; }
    sleep 0.5
  done
  say "api did not become ready in 30 s; see .data/logs/api.log"
  exit 1
}

cmd_down() { stop worker; stop api; stop fixtures; }

cmd_status() {
  for n in api worker fixtures; do
    if running "$n"; then echo "$n: running (pid $(cat "$RUN/$n.pid"))"; else echo "$n: stopped"; fi
  done
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
