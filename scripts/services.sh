#!/usr/bin/env bash
# services.sh — the local snapq stack on loopback: Chromium, Postgres, Redis, MinIO.
#
#   scripts/services.sh up       install what is missing, start what is down (idempotent, quiet)
#   scripts/services.sh down     stop what this script started (never a system service it found running)
#   scripts/services.sh status   one line per service; exit 1 if any is down
#   scripts/services.sh env      print `export SNAPQ_...=...` lines: eval "$(scripts/services.sh env)"
#
# Made for a fresh Debian machine as root (installs use apt-get; `up` also creates the
# unprivileged user snapq-chrome, or $SNAPQ_CHROME_USER, that a root worker runs Chromium
# as). Without root it starts what is installed and prints the apt-get command for what is not.
# Data, logs and pid files live in <repo>/.data/ (git-ignored).
#
# Overrides: SNAPQ_CHROME_BIN (an existing browser binary: skips the chromium package),
# SNAPQ_MINIO_BIN (a MinIO server binary: skips the build), SNAPQ_CHROME_USER.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="$ROOT/.data"
RUN="$DATA/run"
LOGS="$DATA/logs"

PG_HOST=127.0.0.1 PG_PORT=5432
REDIS_HOST=127.0.0.1 REDIS_PORT=6379
MINIO_HOST=127.0.0.1 MINIO_PORT=9000 MINIO_CONSOLE_PORT=9001
MINIO_USER=snapq MINIO_PASSWORD=snapqsecret
MINIO_MODULE=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_HEALTH="http://$MINIO_HOST:$MINIO_PORT/minio/health/live"
WAIT_SECONDS=30

say() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }

# wait_for SECONDS COMMAND... — polls COMMAND every 0.5 s.
wait_for() {
  local secs=$1; shift
  local i
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  return 1
}

APT_UPDATED=0
apt_install() {
  if [[ $EUID -ne 0 ]]; then
    die "missing packages; as root run: apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $*"
  fi
  command -v apt-get >/dev/null || die "apt-get not found: install $* with your package manager"
  mkdir -p "$LOGS"
  local log="$LOGS/apt.log"
  say "installing $* (apt-get, log in ${log#"$ROOT"/})"
  if ((APT_UPDATED == 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get update >>"$log" 2>&1 ||
      { tail -n 20 "$log" >&2; die "apt-get update failed"; }
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >>"$log" 2>&1 ||
    { tail -n 20 "$log" >&2; die "apt-get install $* failed"; }
}

# ---------------------------------------------------------------- Chromium

chrome_bin() {
  if [[ -n ${SNAPQ_CHROME_BIN:-} && -f $SNAPQ_CHROME_BIN ]]; then
    printf '%s\n' "$SNAPQ_CHROME_BIN"
  else
    printf '%s\n' /usr/bin/chromium
  fi
}

chromium_up() {
  [[ -x $(chrome_bin) ]] && return 0
  # Debian's package only: nothing here downloads a browser any other way.
  apt_install chromium $CHROME_FONTS
  [[ -x /usr/bin/chromium ]] || die "chromium installed but /usr/bin/chromium is missing"
}

# The fonts pages are rendered with: Latin (Liberation, Noto), CJK (Noto CJK) and
# emoji (Noto Color Emoji), so no text is drawn with a last-resort font (tofu boxes).
# capture's TestPlatformFonts asks Chromium which font rendered CJK and emoji text.
CHROME_FONTS="fonts-liberation fonts-noto-core fonts-noto-color-emoji fonts-noto-cjk"

# fonts_up installs the fonts a machine whose Chromium predates a font's addition lacks.
fonts_up() {
  [[ $(chrome_bin) == /usr/bin/chromium ]] || return 0 # a custom browser brings its own
  command -v dpkg-query >/dev/null || return 0
  local missing=() p
  for p in $CHROME_FONTS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) || apt_install "${missing[@]}"
}

# poppler_up installs poppler-utils: the worker reads PDF targets' pages, title and text
# with its pdfinfo and pdftotext (capture/internal/pdftext; without them a Go reader that
# loops on some valid PDFs is used).
poppler_up() {
  command -v pdftotext >/dev/null && command -v pdfinfo >/dev/null && return 0
  apt_install poppler-utils
}

# clients_up installs what the e2e tests run a real Browserless client with: DeerFlow's
# client (tests/e2e/testdata/deerflow) needs Debian's python3 with httpx.
clients_up() {
  /usr/bin/python3 -c 'import httpx' 2>/dev/null && return 0
  apt_install python3 python3-httpx
}

# As root the worker starts Chromium as this unprivileged user, so Chromium can
# sandbox its renderers (it refuses to as root). SNAPQ_CHROME_USER overrides it.
chrome_user() { printf '%s\n' "${SNAPQ_CHROME_USER:-snapq-chrome}"; }

chrome_user_up() {
  [[ $(id -u) == 0 ]] || return 0 # a worker that is not root runs Chromium as itself
  id -u "$(chrome_user)" >/dev/null 2>&1 && return 0
  useradd --system --no-create-home --shell /usr/sbin/nologin "$(chrome_user)" ||
    id -u "$(chrome_user)" >/dev/null 2>&1 || # a concurrent `up` made it
    die "could not create the user $(chrome_user) Chromium runs as"
  say "created user $(chrome_user) (Chromium runs as it when the worker is root)"
}

# ---------------------------------------------------------------- Postgres

pg_ready() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; }
psql_admin() { psql -X -q -w -h "$PG_HOST" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 "$@"; }

pg_cluster_version() {
  # The newest version that has a "main" cluster, e.g. "15" for /etc/postgresql/15/main.
  local d v=
  for d in /etc/postgresql/*/main; do
    [[ -d $d ]] && v+="$(basename "$(dirname "$d")")"$'\n'
  done
  [[ -n $v ]] || return 1
  printf '%s' "$v" | sort -V | tail -n 1
}

# Trust for loopback TCP, as the contract's URL has no password. Only done to a
# cluster this script started, and only when password auth refuses us.
pg_trust_loopback() {
  local ver=$1 hba="/etc/postgresql/$1/main/pg_hba.conf"
  [[ -w $hba ]] || return 1
  say "allowing passwordless loopback connections in $hba (snapq local stack)"
  local tmp
  tmp=$(mktemp)
  {
    echo "# added by snapq scripts/services.sh: loopback only"
    echo "host all all 127.0.0.1/32 trust"
    echo "host all all ::1/128 trust"
    cat "$hba"
  } >"$tmp"
  cat "$tmp" >"$hba" && rm -f "$tmp"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main reload >/dev/null
}

postgres_up() {
  if ! pg_ready; then
    if ! command -v pg_ctlcluster >/dev/null || ! pg_cluster_version >/dev/null; then
      apt_install postgresql
    fi
    local ver
    ver=$(pg_cluster_version) || die "postgresql is installed but no cluster exists in /etc/postgresql"
    # The package may have started it already (with systemd); start only if still down.
    if ! pg_ready; then
      [[ $EUID -eq 0 ]] || die "Postgres is down; as root run: pg_ctlcluster --skip-systemctl-redirect $ver main start"
      pg_ctlcluster --skip-systemctl-redirect "$ver" main start >/dev/null 2>&1 8>&- 9>&- ||
        die "pg_ctlcluster $ver main start failed; see /var/log/postgresql/postgresql-$ver-main.log"
      mkdir -p "$RUN" && printf '%s\n' "$ver" >"$RUN/postgres.started"
    fi
    wait_for "$WAIT_SECONDS" pg_ready || die "Postgres did not accept connections on $PG_HOST:$PG_PORT within ${WAIT_SECONDS}s"
  fi

  if ! psql_admin -Atc 'select 1' >/dev/null 2>&1; then
    local ver
    if [[ -f $RUN/postgres.started ]] && ver=$(<"$RUN/postgres.started") && pg_trust_loopback "$ver"; then
      :
    else
      die "cannot connect as postgres to $PG_HOST:$PG_PORT without a password; allow it in pg_hba.conf: host all all 127.0.0.1/32 trust"
    fi
    psql_admin -Atc 'select 1' >/dev/null 2>&1 || die "still cannot connect as postgres to $PG_HOST:$PG_PORT"
  fi

  local db
  for db in snapq snapq_test; do
    if [[ -z $(psql_admin -Atc "select 1 from pg_database where datname = '$db'") ]]; then
      # A concurrent run may create it first; that is fine.
      psql_admin -c "create database $db" >/dev/null 2>&1 ||
        [[ -n $(psql_admin -Atc "select 1 from pg_database where datname = '$db'") ]] ||
        die "could not create database $db"
    fi
  done
}

# ---------------------------------------------------------------- Redis

redis_ready() { [[ $(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; }

redis_up() {
  command -v redis-cli >/dev/null && redis_ready && return 0
  command -v redis-server >/dev/null || apt_install redis-server
  redis_ready && return 0 # the package may start it itself
  local dir=/var/lib/redis logfile=/var/log/redis/ci.log
  if [[ $EUID -ne 0 ]]; then
    dir="$DATA/redis" logfile="$LOGS/redis.log"
  fi
  mkdir -p "$dir" "$(dirname "$logfile")" "$RUN"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" \
    --save "" --appendonly no --dir "$dir" --logfile "$logfile" \
    --pidfile "$RUN/redis.pid" >/dev/null 8>&- 9>&- ||
    die "redis-server failed to start; see $logfile"
  touch "$RUN/redis.started"
  wait_for "$WAIT_SECONDS" redis_ready ||
    die "Redis did not answer PING on $REDIS_HOST:$REDIS_PORT within ${WAIT_SECONDS}s; see $logfile"
}

# ---------------------------------------------------------------- MinIO

minio_healthy() { curl -sf -o /dev/null --max-time 2 "$MINIO_HEALTH"; }

# Something (MinIO or not) listens on the MinIO port.
minio_port_busy() { (exec 3<>"/dev/tcp/$MINIO_HOST/$MINIO_PORT") 2>/dev/null; }

gopath_bin() {
  command -v go >/dev/null || return 1
  local gobin gopath
  gobin=$(go env GOBIN)
  if [[ -n $gobin ]]; then printf '%s\n' "$gobin"; return; fi
  gopath=$(go env GOPATH)
  printf '%s/bin\n' "${gopath%%:*}"
}

find_minio() {
  if [[ -n ${SNAPQ_MINIO_BIN:-} ]]; then
    [[ -x $SNAPQ_MINIO_BIN ]] || die "SNAPQ_MINIO_BIN=$SNAPQ_MINIO_BIN is not an executable file"
    printf '%s\n' "$SNAPQ_MINIO_BIN"
    return 0
  fi
  local dir
  if dir=$(gopath_bin) && [[ -x $dir/minio ]]; then
    printf '%s\n' "$dir/minio"
    return 0
  fi
  if [[ -x $DATA/bin/minio ]]; then
    printf '%s\n' "$DATA/bin/minio"
    return 0
  fi
  return 1
}

build_minio() {
  command -v go >/dev/null || die "MinIO not found and no Go toolchain to build it; install Go or set SNAPQ_MINIO_BIN"
  mkdir -p "$RUN" "$LOGS"
  # One build at a time across concurrent runs of this script.
  exec 8>"$RUN/minio-build.lock"
  flock 8
  if find_minio >/dev/null; then exec 8>&-; return 0; fi
  # A build of the same module started outside this script: wait for it instead of racing it.
  local waited=0
  while pgrep -f "go install $MINIO_MODULE" >/dev/null 2>&1; do
    ((waited == 0)) && say "waiting for a MinIO build already running on this machine"
    waited=1
    sleep 5
  done
  if find_minio >/dev/null; then exec 8>&-; return 0; fi
  local log="$LOGS/minio-build.log"
  say "building MinIO from source ($MINIO_MODULE); the first build takes about 7 minutes, log in ${log#"$ROOT"/}"
  if ! GOFLAGS=-buildvcs=false go install "$MINIO_MODULE" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "building MinIO failed"
  fi
  exec 8>&-
  find_minio >/dev/null || die "MinIO build finished but the binary is not in $(gopath_bin)"
}

minio_pid() {
  local pid
  [[ -f $RUN/minio.pid ]] || return 1
  pid=$(<"$RUN/minio.pid")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  printf '%s\n' "$pid"
}

# A MinIO serving a data folder that no longer exists (an earlier checkout's,
# deleted) answers health checks but cannot store anything: print its pid.
orphan_minio_pid() {
  local pid args dir
  for pid in $(pgrep -f "minio server" 2>/dev/null); do
    [[ -r /proc/$pid/cmdline ]] || continue
    mapfile -d '' args <"/proc/$pid/cmdline"
    for ((i = 0; i < ${#args[@]} - 1; i++)); do
      if [[ ${args[i]} == server ]]; then
        dir=${args[i + 1]}
        [[ $dir == /* && ! -d $dir ]] && { printf '%s\n' "$pid"; return 0; }
      fi
    done
  done
  return 1
}

minio_up() {
  local orphan
  if orphan=$(orphan_minio_pid); then
    say "stopping MinIO pid $orphan: its data folder was deleted, it cannot store objects"
    kill "$orphan" 2>/dev/null || true
    wait_for 15 bash -c "! kill -0 $orphan 2>/dev/null"
  fi
  minio_healthy && return 0 # ours or someone else's: reuse it
  if minio_pid >/dev/null; then
    # Started by an earlier run and still coming up.
    wait_for "$WAIT_SECONDS" minio_healthy && return 0
    die "MinIO (pid $(minio_pid)) is running but not healthy; see ${LOGS#"$ROOT"/}/minio.log or run: $0 down"
  fi
  rm -f "$RUN/minio.pid"
  minio_port_busy && die "$MINIO_HOST:$MINIO_PORT is taken by something that is not a healthy MinIO"

  local bin
  bin=$(find_minio) || { build_minio; bin=$(find_minio); }
  mkdir -p "$DATA/minio" "$LOGS" "$RUN"
  # setsid: MinIO must outlive this shell and its process group.
  MINIO_ROOT_USER=$MINIO_USER MINIO_ROOT_PASSWORD=$MINIO_PASSWORD \
    MINIO_BROWSER=off MINIO_UPDATE=off \
    setsid "$bin" server "$DATA/minio" \
    --address "$MINIO_HOST:$MINIO_PORT" --console-address "$MINIO_HOST:$MINIO_CONSOLE_PORT" \
    </dev/null >>"$LOGS/minio.log" 2>&1 8>&- 9>&- &
  echo $! >"$RUN/minio.pid"
  if ! wait_for "$WAIT_SECONDS" minio_healthy; then
    tail -n 20 "$LOGS/minio.log" >&2
    die "MinIO did not become healthy on $MINIO_HOST:$MINIO_PORT within ${WAIT_SECONDS}s (log: ${LOGS#"$ROOT"/}/minio.log)"
  fi
}

# The stack's S3 credentials work (signed ListBuckets answers 200).
minio_creds_ok() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$MINIO_USER:$MINIO_PASSWORD" \
    "http://$MINIO_HOST:$MINIO_PORT/") == 200 ]]
}

# ---------------------------------------------------------------- commands
#
# Lock file descriptors 8 and 9 are closed for every daemon started above
# (`8>&- 9>&-`): a daemon that inherited them would hold the lock forever.

cmd_up() {
  mkdir -p "$RUN" "$LOGS"
  exec 9>"$RUN/up.lock"
  flock 9 # concurrent `up`s run one after another
  chromium_up
  fonts_up
  poppler_up
  clients_up
  chrome_user_up
  postgres_up
  redis_up
  minio_up
  minio_creds_ok || die "MinIO on $MINIO_HOST:$MINIO_PORT refuses the credentials $MINIO_USER/… (was it started with others?)"
}

stop_pid() { # stop_pid PID NAME
  local pid=$1 name=$2 i
  kill "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  say "$name (pid $pid) ignored SIGTERM for 10s; sending SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
}

cmd_down() {
  local pid
  if pid=$(minio_pid); then stop_pid "$pid" minio; fi
  rm -f "$RUN/minio.pid"

  if [[ -f $RUN/redis.started ]]; then
    if [[ -f $RUN/redis.pid ]] && pid=$(<"$RUN/redis.pid") && [[ $pid =~ ^[0-9]+$ ]]; then
      stop_pid "$pid" redis
    fi
    rm -f "$RUN/redis.started" "$RUN/redis.pid"
  fi

  if [[ -f $RUN/postgres.started ]]; then
    local ver
    ver=$(<"$RUN/postgres.started")
    pg_ctlcluster --skip-systemctl-redirect "$ver" main stop >/dev/null 2>&1 || say "could not stop Postgres $ver/main"
    rm -f "$RUN/postgres.started"
  fi
}

cmd_status() {
  local bad=0 line who
  if [[ -x $(chrome_bin) ]]; then
    line="ok    $(chrome_bin) ($("$(chrome_bin)" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
  else
    line="MISSING $(chrome_bin)"; bad=1
  fi
  printf '%-9s %s\n' chromium "$line"
  if [[ $(id -u) == 0 ]] && ! id -u "$(chrome_user)" >/dev/null 2>&1; then
    printf '%-9s %s\n' chromium "MISSING user $(chrome_user) (the worker runs Chromium as it when root)"; bad=1
  fi

  who=system; [[ -f $RUN/postgres.started ]] && who="started by services.sh"
  if pg_ready; then
    local dbs
    dbs=$(psql_admin -Atc "select string_agg(datname, ', ' order by datname) from pg_database where datname in ('snapq', 'snapq_test')" 2>/dev/null || echo '?')
    line="up    $PG_HOST:$PG_PORT ($who; databases: ${dbs:-none})"
  else
    line="DOWN  $PG_HOST:$PG_PORT"; bad=1
  fi
  printf '%-9s %s\n' postgres "$line"

  who=system; [[ -f $RUN/redis.started ]] && who="started by services.sh"
  if command -v redis-cli >/dev/null && redis_ready; then
    line="up    $REDIS_HOST:$REDIS_PORT ($who)"
  else
    line="DOWN  $REDIS_HOST:$REDIS_PORT"; bad=1
  fi
  printf '%-9s %s\n' redis "$line"

  local pid
  if pid=$(minio_pid); then who="pid $pid, started by services.sh, data ${DATA#"$ROOT"/}/minio"; else who="not started by services.sh"; fi
  if minio_healthy; then
    if minio_creds_ok; then line="up    $MINIO_HOST:$MINIO_PORT ($who)"; else line="up    $MINIO_HOST:$MINIO_PORT ($who) but REFUSES $MINIO_USER credentials"; bad=1; fi
  else
    line="DOWN  $MINIO_HOST:$MINIO_PORT"; bad=1
  fi
  printf '%-9s %s\n' minio "$line"
  return "$bad"
}

cmd_env() {
  cat <<EOF
export SNAPQ_DATABASE_URL=postgres://postgres@$PG_HOST:$PG_PORT/snapq?sslmode=disable
export SNAPQ_REDIS_URL=redis://$REDIS_HOST:$REDIS_PORT/0
export SNAPQ_S3_ENDPOINT=$MINIO_HOST:$MINIO_PORT
export SNAPQ_S3_ACCESS_KEY=$MINIO_USER
export SNAPQ_S3_SECRET_KEY=$MINIO_PASSWORD
export SNAPQ_S3_BUCKET=snapq
export SNAPQ_S3_USE_SSL=false
export SNAPQ_CHROME_BIN=$(chrome_bin)
EOF
}

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *) usage ;;
esac
