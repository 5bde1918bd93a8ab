#!/usr/bin/env bash
# Installs what building and testing boxsh needs on a Debian machine with Go:
# Debian packages and the `just` command runner (from npm), each pinned and
# checked after installing. Go tools (staticcheck) are tool dependencies in
# go.mod, run as `go tool NAME`: go.sum locks them and nothing is installed
# into GOPATH. Safe to run again; does only what is missing. Needs root for
# apt and npm -g.
set -euo pipefail
cd "$(dirname "$0")/.."

# JUST_VERSION is the just release the Justfile is written for (npm package
# rust-just, which ships the binary).
JUST_VERSION=1.43.0
GO_MIN=1.26

fail() { echo "deps: $*" >&2; exit 1; }

command -v go >/dev/null || fail "go is not on PATH: install Go $GO_MIN or later (https://go.dev/doc/install) and add its bin directory to PATH"
go_have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$GO_MIN" "$go_have" | sort -V | head -1)" != "$GO_MIN" ]; then
  fail "go $go_have is too old: boxsh needs Go $GO_MIN or later"
fi

need_apt=()
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v script >/dev/null || need_apt+=(bsdutils)
command -v gcc >/dev/null || need_apt+=(gcc)
# libcontainer's seccomp support links libseccomp (cgo, found by pkg-config);
# the front is linked statically, with libseccomp.a and glibc's libc.a.
dpkg -s libseccomp-dev >/dev/null 2>&1 || need_apt+=(libseccomp-dev)
dpkg -s libc6-dev >/dev/null 2>&1 || need_apt+=(libc6-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
# runc runs the OCI bundles `boxsh spec` writes, in the tests.
[ -x /usr/sbin/runc ] || command -v runc >/dev/null || need_apt+=(runc)
# curl goes through the network proxy in the network tests.
command -v curl >/dev/null || need_apt+=(curl)
# ip makes the network tests' stand-in internet (integration/internal/outside).
[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || command -v ip >/dev/null || need_apt+=(iproute2)
# nginx (the light build) is the router in front of many servers in
# TestDeploy, run unprivileged with deploy/nginx/nginx.conf.
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || need_apt+=(nginx-light)
# busybox-static is the shell of the container root file systems the
# container tests run boxsh in.
[ -x /bin/busybox ] || need_apt+=(busybox-static)
# bubblewrap is what integration/bench -start compares the sandbox's start
# with.
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "run as root to install these Debian packages, or install them by hand: apt-get install ${need_apt[*]}"
  log=$(mktemp)
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_apt[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"
    fail "apt-get install ${need_apt[*]} failed (its output is above)"
  fi
  rm -f "$log"
fi
for cmd in node npm script gcc pkg-config curl; do
  command -v "$cmd" >/dev/null || fail "$cmd is missing after installing Debian packages: install it by hand (apt-get install ${need_apt[*]})"
done
dpkg -s libseccomp-dev >/dev/null 2>&1 || fail "libseccomp-dev is missing after installing it: apt-get install libseccomp-dev"
dpkg -s libc6-dev >/dev/null 2>&1 || fail "libc6-dev is missing after installing it: apt-get install libc6-dev"
[ -x /usr/sbin/runc ] || command -v runc >/dev/null || fail "runc is missing after installing it: apt-get install runc"
[ -x /bin/busybox ] || fail "busybox is missing after installing it: apt-get install busybox-static"
command -v bwrap >/dev/null || fail "bwrap is missing after installing it: apt-get install bubblewrap"
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || fail "nginx is missing after installing it: apt-get install nginx-light"

# npm takes its global prefix from $PREFIX when that is set (install.sh's
# PREFIX is where boxsh goes, not npm's packages): leave it out.
npm_g() { env -u PREFIX npm "$@"; }
just_ok() { command -v just >/dev/null && [ "$(just --version 2>/dev/null)" = "just $JUST_VERSION" ]; }
if ! just_ok; then
  # just is not packaged for Debian 12; its npm package ships the binary.
  [ "$(id -u)" = 0 ] || [ -w "$(npm_g prefix -g)" ] || fail "just $JUST_VERSION is missing: run as root, or install it by hand: npm install -g rust-just@$JUST_VERSION"
  log=$(mktemp)
  if ! npm_g install -g "rust-just@$JUST_VERSION" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"
    fail "npm install -g rust-just@$JUST_VERSION failed (its output is above)"
  fi
  rm -f "$log"
  hash -r
  just_ok || fail "just $JUST_VERSION is not on PATH after npm install -g rust-just@$JUST_VERSION (found: $(command -v just || echo none), $(just --version 2>/dev/null || true)); put $(npm_g prefix -g)/bin on PATH or install it by hand"
fi

# The Go tool dependencies of go.mod: fetched and built once here, so that a
# broken module proxy shows now, with its message, not in the middle of lint.
go tool staticcheck -version >/dev/null || fail "go tool staticcheck does not run (see above): check that the Go module proxy is reachable (go env GOPROXY)"
echo "deps: $(go version | cut -d' ' -f3), just $JUST_VERSION, staticcheck $(go tool staticcheck -version | cut -d' ' -f2-), libseccomp $(pkg-config --modversion libseccomp), $(runc --version | head -1), $(bwrap --version)"
