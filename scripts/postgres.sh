#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the registry tests, from Debian packages.
# Usage: scripts/postgres.sh start|stop|status|url
#   start  installs postgresql (apt) if missing, initialises a cluster once, starts it on
#          127.0.0.1:$PORT and creates the database codeask_test; safe to run again.
#   url    prints the SQLAlchemy URL the tests read from CODEASK_TEST_DATABASE_URL.
# Env: CODEASK_POSTGRES_HOME (default /var/tmp/codeask-postgres), CODEASK_POSTGRES_PORT (5433).
set -euo pipefail

BASE=${CODEASK_POSTGRES_HOME:-/var/tmp/codeask-postgres}
PORT=${CODEASK_POSTGRES_PORT:-5433}
DATA=$BASE/data
LOGFILE=$BASE/postgres.log
DB=codeask_test
PG_USER=postgres

log() { echo "[postgres.sh] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [[ -n $d && -x $d/pg_ctl ]] && { echo "$d"; return; }
  return 1
}

install_server() {
  bindir >/dev/null && return 0
  [[ $EUID -eq 0 ]] || die "postgresql is not installed; run as root once or: apt-get install -y postgresql"
  log "installing postgresql from Debian packages (first run only)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }
  bindir >/dev/null || die "postgresql installed but pg_ctl not found"
}

# PostgreSQL refuses to run as root, so root runs it as the postgres user; anyone else as self.
as_pg() {
  if [[ $EUID -eq 0 ]]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

psql_cmd() {
  as_pg "$(bindir)/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt "$@"
}

running() {
  [[ -f $DATA/postmaster.pid ]] && as_pg "$(bindir)/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
  install_server
  local bin; bin=$(bindir)
  mkdir -p "$BASE"
  [[ $EUID -eq 0 ]] && chown "$PG_USER" "$BASE"
  if [[ ! -f $DATA/PG_VERSION ]]; then
    log "initialising a cluster in $DATA"
    as_pg "$bin/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --no-instructions >/dev/null
  fi
  if ! running; then
    # The socket goes to the cluster folder: /var/run/postgresql may not exist or be writable.
    as_pg "$bin/pg_ctl" -D "$DATA" -l "$LOGFILE" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DATA -c fsync=off" start >/dev/null \
      || { tail -n 20 "$LOGFILE" >&2; die "PostgreSQL did not start"; }
  fi
  if [[ $(psql_cmd -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") != 1 ]]; then
    psql_cmd -c "CREATE DATABASE $DB" >/dev/null
  fi
  log "ready: $(url)"
}

stop() {
  local bin
  bin=$(bindir) || return 0
  if running; then
    as_pg "$bin/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    log "stopped"
  fi
}

url() { echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/$DB"; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "running: $(url)"; else echo "stopped"; exit 1; fi ;;
  url) url ;;
  *) die "usage: $0 start|stop|status|url" ;;
esac
