#!/usr/bin/env bash
# The README's test command, `just test [PACKAGES] [GO TEST FLAGS]` (default
# ./...): builds bin/, then runs the unit and end-to-end tests against it, and
# ends with a count of passed, failed and skipped tests and why each skip
# happened (scripts/testreport).
#
# The sandbox, session and escape tests never run as real root: a broken
# sandbox tested as root overwrites the host's /etc/passwd. So, run as root,
# this script runs the tests as an unprivileged user instead, rootless, as
# users run boxsh: it creates the user $BOXSH_TEST_USER (default boxsh-test)
# if missing, copies the checkout to a scratch directory the user owns, and
# runs itself there as that user with a fresh HOME. Go's module and build
# caches are the user's own (in its home), kept across runs for speed; with
# CI=true or BOXSH_TEST_FRESH=1 they are fresh too, as on a new machine.
# Run as any other user, it runs the tests directly.
#
# GOFLAGS=-v (or -v among the flags) prints every test's output. A test
# binary may run 30 minutes (go test's default is 10): the integration
# package alone takes several on a loaded 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then
  user=${BOXSH_TEST_USER:-boxsh-test}
  if ! id "$user" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$user"
    echo "test: created the unprivileged user $user to run the sandbox tests as"
  fi
  home=$(getent passwd "$user" | cut -d: -f6)
  scratch=$(mktemp -d /tmp/boxsh-test.XXXXXX)
  # The module cache is read-only on disk: make it writable to remove it.
  trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
  mkdir "$scratch/home"
  cp -a . "$scratch/boxsh"
  rm -rf "$scratch/boxsh/bin"
  if [ "${CI:-}" = true ] || [ "${BOXSH_TEST_FRESH:-}" = 1 ]; then
    gopath=$scratch/gopath gocache=$scratch/home/.cache/go-build
  else
    gopath=$home/go gocache=$home/.cache/go-build
  fi
  chown -R "$user:" "$scratch"
  chmod 0755 "$scratch"
  echo "test: running as the unprivileged user $user in $scratch/boxsh (HOME=$scratch/home)"
  cd "$scratch/boxsh"
  # A root shell's XDG and TMPDIR settings name root's directories.
  set +e
  setpriv --reuid="$user" --regid="$user" --init-groups \
    env -u XDG_RUNTIME_DIR -u XDG_CONFIG_HOME -u XDG_CACHE_HOME -u XDG_DATA_HOME -u TMPDIR -u GOENV \
    HOME="$scratch/home" USER="$user" LOGNAME="$user" \
    GOPATH="$gopath" GOMODCACHE="$gopath/pkg/mod" GOCACHE="$gocache" \
    PATH="$(dirname "$(command -v go)"):$(dirname "$(command -v just)"):/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    bash scripts/test.sh "$@"
  rc=$?
  set -e
  cd /
  exit $rc
fi

just build
[ $# -gt 0 ] || set -- ./...
verbose=
case " ${GOFLAGS:-} $* " in *" -v "*|*" -test.v "*|*" -v=true "*) verbose=-v ;; esac
go build -o bin/testreport ./scripts/testreport
BOXSH_BIN_DIR="$(pwd)/bin" go test -json -count=1 -timeout 30m -tags seccomp "$@" | bin/testreport $verbose
