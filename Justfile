# boxsh build, test and benchmark recipes. `just --list` shows them.

bin := "bin"
version := `git describe --tags --always --dirty 2>/dev/null || echo dev`
ldflags := "-s -w -X main.version=" + version
# On Linux the front and the sandbox's launcher are linked statically
# (glibc's libc.a, libseccomp.a), with Go's own user and DNS lookups, which a
# static glibc cannot load: each starts ~0.4 ms sooner without the dynamic
# loader, and so does libcontainer's re-execution of the launcher as a
# sandbox's init.
front_tags := if os() == "linux" { "seccomp,osusergo,netgo" } else { "seccomp" }
front_ldflags := ldflags + if os() == "linux" { " -linkmode external -extldflags -static" } else { "" }

# Build bin/boxsh (cgo: libseccomp; static on Linux), bin/boxsh-init
# (static) and, on Linux, bin/boxsh-launch, the sandbox's launcher
# (libcontainer, its nsenter and libseccomp; linked as the front is), and
# bin/boxsh-zygote.so, the shell fork server boxsh-init clones warm shells
# from (without it, shells start by exec).
build:
    CGO_ENABLED=1 go build -trimpath -tags {{front_tags}} -ldflags '{{front_ldflags}}' -o {{bin}}/ ./cmd/boxsh
    CGO_ENABLED=0 go build -trimpath -ldflags '{{ldflags}}' -o {{bin}}/ ./cmd/boxsh-init
    if [ "$(uname -s)" = Linux ]; then CGO_ENABLED=1 go build -trimpath -tags {{front_tags}} -ldflags '{{front_ldflags}}' -o {{bin}}/ ./cmd/boxsh-launch; fi
    if [ "$(uname -s)" = Linux ]; then cc -O2 -Wall -Wextra -Werror -shared -fPIC -o {{bin}}/boxsh-zygote.so internal/toolhost/bash/zygote/zygote.c; fi

# Unit tests, then end-to-end tests against the built binaries (with the
# seccomp tag, as the front is built, so that the tests of the seccomp
# program run), ending with a count of skipped tests and why. Run as root, it
# runs them as an unprivileged user (created if missing), rootless: sandbox
# tests never run as real root. Takes packages and go test flags:
# `just test ./integration -run TestX`. See scripts/test.sh.
[positional-arguments]
test *ARGS:
    bash scripts/test.sh "$@"

# Unit tests only (fast), as `just test` runs them.
unit:
    bash scripts/test.sh $(go list ./... | grep -v /integration)

# Write `boxsh --help` into docs/cli.md's reference (TestCLIReference
# checks that they agree).
cli-doc: build
    bash scripts/cli-doc.sh

# gofmt, go vet, staticcheck (a tool dependency in go.mod), the macOS build,
# and no build output tracked by git.
lint:
    test -z "$(gofmt -l $(git ls-files '*.go'))" || { gofmt -l $(git ls-files '*.go'); exit 1; }
    go vet ./...
    go tool staticcheck ./...
    GOOS=darwin go build ./...
    GOOS=darwin go vet ./...
    bash scripts/check-tracked.sh

# Go benchmarks, then the protocol-level bench of bin/boxsh (BIN=... to measure another binary).
bench BIN=(bin + "/boxsh"): build
    go test -run '^$' -bench . -benchtime 2s ./internal/toolhost/bash/ ./internal/toolhost/files/ ./internal/tool/ ./internal/initproto/
    go run ./integration/bench -bin {{BIN}}

# The boxsh v3.0.0 conformance suite, run as an unprivileged user.
conformance GIT_DIR ONLY="": build
    ../shared/conformance/run.sh --suite-git {{GIT_DIR}} --bin {{bin}}/boxsh {{ if ONLY != "" { "--only '" + ONLY + "'" } else { "" } }}

# Everything CI checks.
ci: lint test
