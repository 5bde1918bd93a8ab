#!/usr/bin/env bash
# Writes the output of `boxsh --help` (of BOXSH, default bin/boxsh) into
# docs/cli.md between its BEGIN and END markers, so that the CLI reference
# is the help itself: integration's TestCLIReference fails when they
# differ. `just cli-doc` runs it after a build.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BOXSH:-bin/boxsh}
doc=docs/cli.md
help=$("$bin" --help | tail -n +3)
awk -v help="$help" '
  /^<!-- BEGIN boxsh --help/ { print; print "```text"; print help; print "```"; skip = 1; next }
  /^<!-- END boxsh --help/ { skip = 0 }
  !skip { print }
' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
