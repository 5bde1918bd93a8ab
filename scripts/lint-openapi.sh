#!/usr/bin/env bash
# Lints the OpenAPI documents boxsh serves (a single sandbox's REST twin, and
# a server of many sandboxes' management API) with Redocly's CLI, pinned,
# from npm: errors fail it, warnings are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
REDOCLY_VERSION=2.77.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go test ./rpc -run '^TestOpenAPIPerMode$' -count=1 -openapi-out "$out" >/dev/null
npx --yes "@redocly/cli@$REDOCLY_VERSION" lint --format=summary "$out/single.json" "$out/many.json"
