#!/usr/bin/env bash
# Installs what building and testing boxsh needs on a Debian machine with Go:
# Debian packages, the `just` command runner (from npm) and Go tools.
# Safe to run again; does only what is missing. Needs root for apt and npm -g.
set -euo pipefail

need_apt=()
command -v node >/dev/null || need_apt+=(nodejs npm)
command -v script >/dev/null || need_apt+=(bsdutils)
command -v gcc >/dev/null || need_apt+=(gcc)
# libcontainer's seccomp support links libseccomp (cgo, found by pkg-config).
dpkg -s libseccomp-dev >/dev/null 2>&1 || need_apt+=(libseccomp-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
# runc runs the OCI bundles `boxsh spec` writes, in the tests.
[ -x /usr/sbin/runc ] || command -v runc >/dev/null || need_apt+=(runc)
# curl goes through the network proxy in the network tests.
command -v curl >/dev/null || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "deps: run as root to install: ${need_apt[*]}" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v just >/dev/null; then
  # just is not packaged for Debian 12; its npm package ships the binary.
  npm install -g --silent rust-just >/dev/null 2>&1 || npm install -g rust-just
fi

GOBIN=$(go env GOPATH)/bin
if [ ! -x "$GOBIN/staticcheck" ]; then
  go install honnef.co/go/tools/cmd/staticcheck@2025.1.1
fi
