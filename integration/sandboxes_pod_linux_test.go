package integration

import (
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// podManyScript runs in the pod: a server of many sandboxes on the pod's
// loopback, two sandboxes made through its REST API, a call in each, and
// the list. busybox's wget is the client.
const podManyScript = `
boxsh --rpc --listen 127.0.0.1:8080 --no-auth --sandboxes --workers 1 2>/tmp/log &
i=0
until grep -q 'MCP on' /tmp/log; do
	i=$((i+1)); [ $i -gt 300 ] && { cat /tmp/log; exit 1; }; sleep 0.1
done
post() { wget -q -O- --header 'Content-Type: application/json' --post-data "$2" "http://127.0.0.1:8080$1" || echo "POST $1 failed"; }
post /v1/sandboxes '{"name":"a","from":"empty"}' >/dev/null
post /v1/sandboxes '{"name":"b","from":"workspace"}' >/dev/null
echo "a: $(post /s/a/v1/tools/bash '{"command":"echo in-a > f; cat f"}')"
echo "b: $(post /s/b/v1/tools/bash '{"command":"cat seed.txt; cat f || echo no-f"}')"
echo "list: $(wget -q -O- http://127.0.0.1:8080/v1/sandboxes)"
echo "workspace: $(cat /work/f 2>/dev/null || echo untouched)"
`

// TestSandboxesInPod runs a server of many sandboxes in a pod with a user
// namespace. The pod is the stand-in of TestContainerPod: rootless runc,
// its own network namespace, the default capabilities. The server makes two
// sandboxes, each answers its calls on its own files, and the pod's
// workspace is untouched.
func TestSandboxesInPod(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	bundle := podBundle(t, false, func(root string, s *specs.Spec) {
		for _, applet := range []string{"wget", "grep", "sleep"} {
			require.NoError(t, os.Symlink("busybox", filepath.Join(root, "bin", applet)))
		}
		require.NoError(t, os.WriteFile(filepath.Join(root, "work", "seed.txt"), []byte("seed\n"), 0o644))
	}, "-c", podManyScript)
	// boxsh is the pod's process: its shell runs the script unsandboxed,
	// as a pod's entry point would.
	r := runPod(t, runc, bundle)
	require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, `a: {`)
	assert.Contains(t, r.stdout, `"stdout":"in-a\n"`, "a's call: %s", r.stdout)
	assert.Contains(t, r.stdout, `"stdout":"seed\nno-f\n"`, "b sees the workspace, not a's file: %s", r.stdout)
	assert.Regexp(t, `list: .*"name":"a".*"name":"b"`, r.stdout)
	assert.Contains(t, r.stdout, "workspace: untouched")
}
