#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MiB, an executable
# binary or object (ELF, Mach-O, PE, an ar archive), or a file with NUL bytes
# (binary data) outside testdata/ folders. Build outputs belong in .gitignore.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MiB: $f ($size bytes)" >&2; bad=1; continue
  fi
  magic=$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46*) kind="ELF binary" ;;
    cffaedfe*|cefaedfe*|feedface*|feedfacf*|cafebabe*) kind="Mach-O binary" ;;
    4d5a*) kind="PE (Windows) binary" ;;
    213c617263683e0a) kind="ar archive (static library)" ;;
    *) kind= ;;
  esac
  if [ -z "$kind" ] && [[ "$f" != */testdata/* && "$f" != testdata/* ]] && [ "$size" -gt 0 ] && LC_ALL=C grep -qaP '\x00' "$f"; then
    kind="binary data"
  fi
  if [ -n "$kind" ]; then
    echo "tracked $kind: $f" >&2; bad=1
  fi
done < <(git ls-files -z)
if [ "$bad" != 0 ]; then
  echo "check-tracked: remove these from git (git rm --cached) and ignore them in .gitignore" >&2
  exit 1
fi
echo "check-tracked: $(git ls-files | wc -l) tracked files, none binary or over 1 MiB"
