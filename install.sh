#!/usr/bin/env bash
# Sets up boxsh from this checkout: installs prerequisites, builds bin/boxsh
# and bin/boxsh-init, installs both into $PREFIX/bin (default /usr/local),
# and runs boxsh once to show it works.
set -euo pipefail
cd "$(dirname "$0")"
PREFIX=${PREFIX:-/usr/local}

bash scripts/deps.sh
just build
install -d "$PREFIX/bin"
install -m 0755 bin/boxsh bin/boxsh-init "$PREFIX/bin/"
echo "installed: $PREFIX/bin/boxsh, $PREFIX/bin/boxsh-init"

"$PREFIX/bin/boxsh" --version
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo boxsh works"}}}' \
  | "$PREFIX/bin/boxsh" --rpc --workers 1
