#!/usr/bin/env bash
# Sets up, as root, the Podman engines the Podman tests
# (integration/podman_test.go) run boxsh in: installs Debian's podman (and
# uidmap) when missing; starts a rootful Podman API service by hand,
# its storage under /var/lib/boxsh-podman-test, its socket
# /run/boxsh-podman/podman.sock, usable by the group of the user the tests
# run as ($BOXSH_TEST_USER, default boxsh-test, created if missing, as
# scripts/test.sh does), which the tests reach with podman --remote; and
# gives that user subordinate ids, so that it runs rootless Podman itself.
# The test containers run with --network none: no network is set up. The
# tests import their image from a root file system they make, so no image
# registry is needed.
#
#   scripts/podman-engine.sh [start]   start it (nothing to do if it runs)
#   scripts/podman-engine.sh stop      stop it
#
# A machine that cannot run Podman is not an error: the script says why and
# exits 0, and the Podman tests skip, naming the reason.
set -euo pipefail

dir=/run/boxsh-podman
sock=$dir/podman.sock
pidfile=$dir/podman.pid
log=$dir/podman.log
data=/var/lib/boxsh-podman-test
user=${BOXSH_TEST_USER:-boxsh-test}
# PODMAN_VERSION is the Debian 12 release the tests are written for.
PODMAN_VERSION=4.3.1

say() { echo "podman-engine: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "run as root (the rootful service needs it)"; exit 1; }

store=(--root "$data/storage" --runroot "$dir/run")
running() { [ -S "$sock" ] && podman --remote --url "unix://$sock" version >/dev/null 2>&1; }

case "${1:-start}" in
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  exit 0
  ;;
start) ;;
*) say "usage: $0 [start|stop]"; exit 2 ;;
esac

if ! command -v podman >/dev/null || ! command -v newuidmap >/dev/null; then
  out=$(mktemp)
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman uidmap; } >"$out" 2>&1; then
    tail -5 "$out" >&2; rm -f "$out"
    say "apt-get install podman uidmap failed (above): the Podman tests will skip"
    exit 0
  fi
  rm -f "$out"
fi
have=$(podman --version | awk '{print $3}')
[ "$have" = "$PODMAN_VERSION" ] || say "podman $have, not $PODMAN_VERSION: the tests may name other flags"

id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
# Rootless Podman maps the user's subordinate ids into its containers.
grep -q "^$user:[0-9]*:65536\$" /etc/subuid 2>/dev/null || usermod --add-subuids 200000-265535 "$user"
grep -q "^$user:[0-9]*:65536\$" /etc/subgid 2>/dev/null || usermod --add-subgids 200000-265535 "$user"

if running; then
  say "the rootful service runs already ($sock)"
  exit 0
fi
mkdir -p "$dir" "$data"
serve() {
  rm -f "$sock"
  setsid podman "${store[@]}" system service --time=0 "unix://$sock" </dev/null >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 60); do
    [ -S "$sock" ] && break
    kill -0 $! 2>/dev/null || break
    sleep 0.5
  done
}
serve
# Rootful Podman raises a container's open files and processes past the
# service's own hard limits, which a root without CAP_SYS_RESOURCE (itself
# in a container) may not: the service's limits are the containers' then.
if [ -S "$sock" ] && [ $(( 0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24 & 1 )) = 0 ]; then
  pid=$(cat "$pidfile")
  files=$(awk '/^Max open files/ {print $5}' "/proc/$pid/limits")
  procs=$(awk '/^Max processes/ {print $4}' "/proc/$pid/limits")
  printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$files" "$files" "$procs" "$procs" >"$dir/containers.conf"
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  export CONTAINERS_CONF=$dir/containers.conf
  serve
fi
if [ ! -S "$sock" ]; then
  tail -5 "$log" >&2
  say "podman system service did not start (its log is above, all of it in $log): the rootful Podman tests will skip"
  exit 0
fi
chgrp "$(id -gn "$user")" "$sock" && chmod 0660 "$sock"
chmod 0711 "$dir"
if ! running; then
  tail -5 "$log" >&2
  say "the rootful service does not answer (its log is above): the rootful Podman tests will skip"
  exit 0
fi
say "Podman $have: rootful service on $sock for the group of $user; $user runs rootless Podman with the subordinate ids of /etc/subuid"
