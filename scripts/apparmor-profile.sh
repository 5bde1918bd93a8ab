#!/bin/sh
# Prints the AppArmor profile that lets the boxsh at $1, and the
# boxsh-launch beside it (which starts the sandboxes), make user
# namespaces where AppArmor restricts them
# (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later),
# as distributions ship for bubblewrap: unconfined, with userns allowed.
# install.sh writes it to /etc/apparmor.d/boxsh.
set -eu
[ $# -eq 1 ] && [ "${1#/}" != "$1" ] || { echo "usage: $0 /absolute/path/to/boxsh" >&2; exit 2; }
cat <<PROFILE
# AppArmor profile for boxsh: lets it make the user namespaces its
# sandboxes start in. Written by boxsh's install.sh.
abi <abi/4.0>,
include <tunables/global>

profile boxsh $1 flags=(unconfined) {
  userns,

  include if exists <local/boxsh>
}

profile boxsh-launch ${1%/*}/boxsh-launch flags=(unconfined) {
  userns,

  include if exists <local/boxsh>
}
PROFILE
