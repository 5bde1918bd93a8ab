#!/usr/bin/env bash
# Starts the Docker engine the Docker tests (integration/docker_test.go) run
# boxsh in, as root: installs Debian's docker.io (dockerd, containerd, runc)
# when dockerd is missing, and starts dockerd by hand, apart from any other
# engine of the machine and touching none of its networking: no bridge, no
# iptables rules, no IP forwarding (the test containers run with --network
# none); its data under /var/lib/docker-boxsh-test, its socket
# /run/boxsh-docker/docker.sock, usable by the group of the user the tests
# run as ($BOXSH_TEST_USER, default boxsh-test, created if missing, as
# scripts/test.sh does). The tests import their image from a root file
# system they make, so no image registry is needed.
#
#   scripts/docker-engine.sh [start]   start it (nothing to do if it runs)
#   scripts/docker-engine.sh stop      stop it
#
# A machine that cannot run the engine is not an error: the script says why
# and exits 0, and the Docker tests skip, naming the reason.
set -euo pipefail

dir=/run/boxsh-docker
sock=$dir/docker.sock
pidfile=$dir/dockerd.pid
log=$dir/dockerd.log
data=/var/lib/docker-boxsh-test
user=${BOXSH_TEST_USER:-boxsh-test}

say() { echo "docker-engine: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "run as root (dockerd needs it)"; exit 1; }

running() { [ -S "$sock" ] && DOCKER_HOST=unix://$sock docker version >/dev/null 2>&1; }

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

if running; then
  say "the engine runs already ($sock)"
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  out=$(mktemp)
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io; } >"$out" 2>&1; then
    tail -5 "$out" >&2; rm -f "$out"
    say "apt-get install docker.io failed (above): the Docker tests will skip"
    exit 0
  fi
  rm -f "$out"
fi
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
mkdir -p "$dir" "$data"
setsid dockerd --data-root "$data" --exec-root "$dir/exec" --pidfile "$pidfile" \
  -H "unix://$sock" --group "$(id -gn "$user")" \
  --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
  </dev/null >"$log" 2>&1 &
for _ in $(seq 60); do
  running && break
  kill -0 $! 2>/dev/null || break
  sleep 0.5
done
if ! running; then
  tail -5 "$log" >&2
  say "dockerd did not start (its log is above, all of it in $log): the Docker tests will skip"
  kill $! 2>/dev/null || true
  exit 0
fi
say "Docker $(DOCKER_HOST=unix://$sock docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}' 2>/dev/null), listening on $sock for the group of $user"
