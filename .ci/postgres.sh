#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (issue 19): Debian's packages, a temp folder, a free port.
#
#   .ci/postgres.sh up     install `postgresql` if missing (apt-get, non-interactive), initdb a cluster in
#                          a new temp folder, start it on a free loopback port with pg_ctl (as the user
#                          `postgres` when run as root), and print the `export ...` lines that point the
#                          tests at it (eval them); the log goes to stderr.
#   .ci/postgres.sh down   pg_ctl stop that cluster and remove its folder (BENCHWARMERS_PG_RUN names it)
#
# The exported BENCHWARMERS_TEST_DATABASE_URL is a superuser URL of the cluster's `postgres` database;
# the tests make one database per test in it. BENCHWARMERS_TEST_POSTGRES=required makes a test that
# needs PostgreSQL fail, never skip, when it cannot reach it.
set -euo pipefail

say() { printf '[postgres.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

bindir() {
  local found
  for found in /usr/lib/postgresql/*/bin; do
    [ -x "$found/initdb" ] && { echo "$found"; return 0; }
  done
  return 1
}

install_server() {
  if bindir >/dev/null; then return; fi
  [ "$(id -u)" = 0 ] || die "postgresql is not installed and this is not root: apt-get install postgresql"
  say "installing postgresql (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
  # policy-rc.d 101: the package's own cluster is not started (no service runs in CI)
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; made_policy=1; fi
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql >&2 || { [ $made_policy = 1 ] && rm -f "$policy"; die "apt-get install postgresql"; }
  [ $made_policy = 1 ] && rm -f "$policy"
  bindir >/dev/null || die "postgresql installed no initdb"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

as_owner() {  # run a server binary as the cluster's owner: never as root
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

up() {
  install_server
  local bin run port
  bin=$(bindir)
  run=$(mktemp -d /tmp/benchwarmers-pg.XXXXXX)
  chmod 755 "$run"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    chown postgres "$run"
  fi
  port=$(free_port)
  say "cluster: $run on 127.0.0.1:$port ($("$bin/postgres" --version))"
  as_owner "$bin/initdb" -D "$run/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$run/initdb.log" 2>&1 \
    || as_owner "$bin/initdb" -D "$run/data" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$run/initdb.log" 2>&1 \
    || { cat "$run/initdb.log" >&2; die "initdb"; }
  # loopback only, a socket folder of its own, enough connections for three replicas' pools and the
  # tests' own, and no fsync: the cluster is thrown away after the run
  as_owner "$bin/pg_ctl" -D "$run/data" -l "$run/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $run -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    >&2 || { cat "$run/server.log" >&2; die "pg_ctl start"; }
  echo "export BENCHWARMERS_PG_RUN=$run BENCHWARMERS_PG_BIN=$bin BENCHWARMERS_TEST_POSTGRES=required BENCHWARMERS_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:$port/postgres"
}

down() {
  local run=${BENCHWARMERS_PG_RUN:-} bin
  [ -n "$run" ] && [ -d "$run" ] || return 0
  bin=${BENCHWARMERS_PG_BIN:-$(bindir)}
  as_owner "$bin/pg_ctl" -D "$run/data" -m fast -w stop >&2 || say "pg_ctl stop failed (log: $run/server.log)"
  rm -rf "$run"
  say "cluster $run stopped and removed"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) die "usage: .ci/postgres.sh up|down" ;;
esac
