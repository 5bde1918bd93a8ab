#!/usr/bin/env bash
# Sets up boxsh from this checkout: installs prerequisites, builds bin/boxsh,
# bin/boxsh-init and bin/boxsh-launch, installs them into $PREFIX/bin
# (default /usr/local) and
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
if [ -f bin/boxsh-launch ]; then
  # The sandbox's launcher, where boxsh looks for it (beside itself).
  install -m 0755 bin/boxsh-launch "$PREFIX/bin/"
  echo "installed: $PREFIX/bin/boxsh-launch"
fi
if [ -f bin/boxsh-zygote.so ]; then
  # The shell fork server, where boxsh-init looks for it (see docs/architecture.md).
  install -d "$PREFIX/lib/boxsh"
  install -m 0644 bin/boxsh-zygote.so "$PREFIX/lib/boxsh/"
  echo "installed: $PREFIX/lib/boxsh/boxsh-zygote.so"
fi

# Where AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and
# later), a profile lets the installed boxsh make them.
if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apparmor_parser >/dev/null; then
    sh scripts/apparmor-profile.sh "$(realpath "$PREFIX/bin/boxsh")" > /etc/apparmor.d/boxsh
    apparmor_parser -r /etc/apparmor.d/boxsh
    echo "installed: /etc/apparmor.d/boxsh (AppArmor restricts user namespaces; the profile allows them to boxsh)"
  else
    echo "install.sh: AppArmor restricts user namespaces: as root, install the profile: sh scripts/apparmor-profile.sh $PREFIX/bin/boxsh > /etc/apparmor.d/boxsh && apparmor_parser -r /etc/apparmor.d/boxsh" >&2
  fi
fi

"$PREFIX/bin/boxsh" --version
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo boxsh works"}}}' \
  | "$PREFIX/bin/boxsh" --rpc --workers 1
