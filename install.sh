#!/usr/bin/env bash
# Sets up boxsh from this checkout: installs prerequisites, builds bin/boxsh
# and bin/boxsh-init, installs both into $PREFIX/bin (default /usr/local) and
# the shell fork server into $PREFIX/lib/boxsh, and runs boxsh once to show
# it works.
set -euo pipefail
cd "$(dirname "$0")"
PREFIX=${PREFIX:-/usr/local}

bash scripts/deps.sh
just build
install -d "$PREFIX/bin"
install -m 0755 bin/boxsh bin/boxsh-init "$PREFIX/bin/"
echo "installed: $PREFIX/bin/boxsh, $PREFIX/bin/boxsh-init"
if [ -f bin/boxsh-zygote.so ]; then
  # The shell fork server, where boxsh-init looks for it (see docs/architecture.md).
  install -d "$PREFIX/lib/boxsh"
  install -m 0644 bin/boxsh-zygote.so "$PREFIX/lib/boxsh/"
  echo "installed: $PREFIX/lib/boxsh/boxsh-zygote.so"
fi

"$PREFIX/bin/boxsh" --version
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo boxsh works"}}}' \
  | "$PREFIX/bin/boxsh" --rpc --workers 1
