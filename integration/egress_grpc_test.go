//go:build linux

package integration

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// grpcStandIn serves gRPC's health service (serving) for each name in the
// stand-in internet (standIn), on one port the system picks, and returns
// the port.
func grpcStandIn(t *testing.T, names ...string) string {
	t.Helper()
	n := standIn(t, outside.Config{Names: names})
	port := 0
	for _, name := range names {
		l, err := n.Listen(name, port)
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(srv.Stop)
	}
	return strconv.Itoa(port)
}

// buildGRPCProbe builds integration/internal/grpcprobe into a directory of
// its own (for the sandbox to bind read-only).
func buildGRPCProbe(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dir+string(filepath.Separator), "./integration/internal/grpcprobe")
	cmd.Dir = root
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the gRPC probe:\n%s", out)
	return filepath.Join(dir, "grpcprobe")
}

// TestEgressGRPC checks a gRPC client in allowlist mode: through the proxy
// the environment names (gRPC's default, CONNECT) and ignoring it
// (captured by name), it reaches an allowed host and is refused for
// another.
func TestEgressGRPC(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	probe := buildGRPCProbe(t)
	port := grpcStandIn(t, "grpc.example.com", "evil.example.org")
	cmds := []string{
		probe + " proxy grpc.example.com:" + port,
		probe + " noproxy grpc.example.com:" + port,
		probe + " proxy evil.example.org:" + port + "; echo rc=$?",
		probe + " noproxy evil.example.org:" + port + "; echo rc=$?",
	}
	r := runBoxsh(t, ctx, "", "--sandbox", "--bind", "ro:"+filepath.Dir(probe),
		"--allow-domain", "grpc.example.com:"+port, "-c", sections(cmds))
	out := splitSections(t, r.stdout, len(cmds))
	assert.Equal(t, "status: SERVING", out[0], "through the proxy: %s", r.stderr)
	assert.Equal(t, "status: SERVING", out[1], "captured by name: %s", r.stderr)
	for i, way := range []string{"through the proxy", "captured by name"} {
		assert.Contains(t, out[2+i], "error: Unavailable", "refused, %s", way)
		assert.Contains(t, out[2+i], "rc=1", way)
	}
	assert.Contains(t, r.stderr, "evil.example.org is not allowed", "the refusal says how to allow it")
}
