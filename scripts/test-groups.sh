#!/usr/bin/env bash
# Sets up, as root, the supplementary groups TestCowSupplementaryGroup
# (integration/groups_test.go) needs: the test user ($BOXSH_TEST_USER,
# default boxsh-test, created if missing, as scripts/test.sh does) joins the
# groups boxsh-team and boxsh-team-unmapped, and /etc/subgid lets it map
# boxsh-team (with newgidmap, from Debian's uidmap, installed if missing),
# not the other. Safe to run again. Without it, the test skips, saying so.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "test-groups: run as root" >&2; exit 1; }
user=${BOXSH_TEST_USER:-boxsh-test}

if ! command -v newgidmap >/dev/null; then
  out=$(mktemp)
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends uidmap; } >"$out" 2>&1; then
    cat "$out" >&2; rm -f "$out"
    echo "test-groups: apt-get install uidmap failed (above)" >&2
    exit 1
  fi
  rm -f "$out"
fi
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
for g in boxsh-team boxsh-team-unmapped; do
  getent group "$g" >/dev/null || groupadd "$g"
  usermod -aG "$g" "$user"
done
gid=$(getent group boxsh-team | cut -d: -f3)
grep -qx "$user:$gid:1" /etc/subgid 2>/dev/null || echo "$user:$gid:1" >> /etc/subgid
echo "test-groups: $user is in boxsh-team (gid $gid, mappable: /etc/subgid) and boxsh-team-unmapped (gid $(getent group boxsh-team-unmapped | cut -d: -f3))"
