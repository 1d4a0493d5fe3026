#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on loopback for the store tests, or stop it.
#
#   eval "$(bash tools/pg_throwaway.sh)"      # start; exports BENCHMARK_TEST_PG_URL (+ _PG_DIR)
#   bash tools/pg_throwaway.sh stop [DIR]     # stop it and delete its files
#
# Uses the newest server found under /usr/lib/postgresql/*/bin (Debian's `postgresql` package) or on
# PATH. The cluster lives in a fresh temporary directory, listens on 127.0.0.1 on a free port and
# requires a random password (scram-sha-256), so the tests exercise a real password in the URL.
# Run as root, the server runs as the `postgres` user. Only the `export` lines go to stdout.
set -euo pipefail

STATE_FILE="${TMPDIR:-/tmp}/benchmark-pg-throwaway.last"

log() { echo "pg_throwaway: $*" >&2; }
die() { log "$*"; exit 1; }

find_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$dir" && -x "$dir/initdb" ]]; then echo "$dir"; return; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  die "no PostgreSQL server found (install Debian's 'postgresql' package)"
}

# Run a command as the cluster owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local bindir base port password
  bindir=$(find_bindir)
  base=$(mktemp -d "${TMPDIR:-/tmp}/benchmark-pg.XXXXXX")
  chmod 755 "$base"
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  printf '%s\n' "$password" >"$base/pwfile"
  [[ $(id -u) -eq 0 ]] && chown -R postgres: "$base"

  as_owner "$bindir/initdb" -D "$base/data" -U postgres --pwfile="$base/pwfile" \
    --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --no-instructions >"$base/initdb.log" 2>&1 \
    || { cat "$base/initdb.log" >&2; die "initdb failed"; }
  rm -f "$base/pwfile"

  port=$(free_port)
  as_owner "$bindir/pg_ctl" -D "$base/data" -l "$base/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=on" start >/dev/null \
    || { cat "$base/server.log" >&2; die "the server did not start"; }

  echo "$base" >"$STATE_FILE"
  log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $base"
  echo "export BENCHMARK_TEST_PG_URL=postgresql+psycopg://postgres:${password}@127.0.0.1:${port}/postgres"
  echo "export BENCHMARK_TEST_PG_DIR=$base"
}

stop() {
  local base="${1:-${BENCHMARK_TEST_PG_DIR:-}}" bindir
  if [[ -z "$base" && -f "$STATE_FILE" ]]; then base=$(cat "$STATE_FILE"); fi
  [[ -n "$base" && -d "$base/data" ]] || die "no throwaway cluster to stop (give its directory)"
  bindir=$(find_bindir)
  as_owner "$bindir/pg_ctl" -D "$base/data" -m fast -w stop >/dev/null || log "pg_ctl stop failed"
  rm -rf "$base"
  if [[ -f "$STATE_FILE" && $(cat "$STATE_FILE") == "$base" ]]; then rm -f "$STATE_FILE"; fi
  log "stopped and removed $base"
}

case "${1:-start}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  *) die "usage: $0 [start|stop [DIR]]" ;;
esac
