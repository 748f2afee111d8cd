#!/bin/sh
# The image's entrypoint: the server always runs as the plain user 10001.
#
# Started as that user (the default), it checks that the data folder is writable and runs the
# command. Started as root (`docker run --user 0`, the RUN_AS=root build argument, Railway's
# RAILWAY_RUN_UID=0), as a host whose volumes mount owned by root needs, it first hands the data
# and config folders to 10001, then drops to 10001 before running the command.
set -eu
uid=10001
data=${BENCHWARMERS_HOME:-/data}
config=${BENCHWARMERS_CONFIG:-/config}

if [ "$(id -u)" = 0 ]; then
  for dir in "$data" "$config"; do
    mkdir -p "$dir"
    if [ "$(stat -c %u "$dir")" != "$uid" ]; then
      chown -R "$uid:$uid" "$dir"
      chmod 700 "$dir"
    fi
  done
  export HOME=/home/bench
  exec python -c 'import os, sys
os.setgroups([]); os.setgid(10001); os.setuid(10001)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
fi

if [ ! -w "$data" ]; then
  echo "benchwarmers: refusing to start: the data folder $data is not writable by uid $(id -u): chown it to $uid, or start the container as root (--user 0) once and it hands the folder over" >&2
  exit 2
fi
exec "$@"
