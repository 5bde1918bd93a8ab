package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/client"
)

// swapScript exchanges the directory d with the link d.link, again and
// again.
const swapScript = `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
open("ready", "w").close()
while True:
    libc.renameat2(-100, b"d", -100, b"d.link", 2)
`

// TestSnapshotStaysInsideItsLayer checks that a snapshot never holds a byte
// from outside the sandbox's layer.
//
// While snapshots are taken, one after another, the sandbox exchanges a
// directory of its own with a link to a directory of the server's user.
// That directory holds a secret, with the names of the sandbox's files. The
// test itself continues that process (SIGCONT) once it has been stopped for
// a moment, so that it runs during the pause. No snapshot, nor a sandbox
// made from one, may hold the secret. A snapshot during which the sandbox
// ran is made again or refused, as is one whose pause did not stand still.
func TestSnapshotStaysInsideItsLayer(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-OF-THE-SERVERS-USER"
	ctx := testContext(t)
	m := startMany(t, ctx)
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "e"), 0o755))
	for _, f := range []string{"a", "b", "c", "f", "g"} {
		for _, p := range []string{f + ".txt", "e/" + f + ".txt"} {
			require.NoError(t, os.WriteFile(filepath.Join(outside, p), []byte(secret+"\n"), 0o644))
		}
	}
	srv := client.NewServer(m.base, m.token, nil)
	ai, err := srv.Create(ctx, "a", client.FromEmpty)
	require.NoError(t, err)
	a := srv.Sandbox("a", ai.Token)
	// bulk makes each copy long enough for the timer to fire during it.
	res, err := a.Run(ctx, fmt.Sprintf(`mkdir -p bulk d/e && for i in $(seq 300); do echo $i > bulk/$i; done && for f in a b c f g; do echo inside > d/$f.txt; echo inside > d/e/$f.txt; done && ln -s %s d.link && cat > /tmp/swap.py <<'EOF'
%s
EOF`, outside, swapScript))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	_, err = a.StartBackground(ctx, client.ExecRequest{Command: "exec python3 /tmp/swap.py"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := a.Run(ctx, "test -e ready")
		return err == nil && res.ExitCode == 0
	}, 10*time.Second, 20*time.Millisecond, "the swap loop starts")

	pid := hostPID(t, "python3\x00/tmp/swap.py\x00")
	escape := time.NewTicker(time.Millisecond)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer escape.Stop()
		stopped := 0
		for {
			select {
			case <-stop:
				return
			case <-escape.C:
			}
			if processState(pid) == 'T' {
				stopped++
			} else {
				stopped = 0
			}
			if stopped >= 50 {
				_ = unix.Kill(pid, unix.SIGCONT)
				stopped = 0
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()

	snaps := filepath.Join(m.state, "boxsh", "snapshots")
	taken, refused, last := 0, 0, ""
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); {
		name := fmt.Sprintf("s%d", taken+refused)
		began := time.Now()
		snap, err := srv.Snapshot(ctx, "a", name)
		t.Logf("snapshot %s: %v (%v)", name, time.Since(began), err)
		if err != nil {
			var he *client.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode, "a snapshot refused for a change during it says to retry: %s", he.Detail)
			assert.Contains(t, he.Detail, "(retry)")
			refused++
			continue
		}
		taken++
		t.Logf("snapshot %s: %d bytes, paused %v", name, snap.Bytes, snap.Paused)
		require.Empty(t, secretsIn(t, snaps, secret), "snapshot %s holds the outside directory", name)
		if last != "" {
			require.NoError(t, srv.DeleteSnapshot(ctx, last))
		}
		last = name
	}
	t.Logf("%d snapshots taken, %d refused", taken, refused)
	if last == "" {
		return
	}
	bi, err := srv.Create(ctx, "b", client.FromSnapshot(last))
	require.NoError(t, err)
	res, err = srv.Sandbox("b", bi.Token).Run(ctx, "grep -rl "+secret+" . 2>/dev/null; true")
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(res.Stdout), "a sandbox from the snapshot holds the secret")
}

// processState is the state letter of process pid (0: gone).
func processState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// hostPID is the process id, on the host, of the one process whose
// command line is cmdline.
func hostPID(t *testing.T, cmdline string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && string(b) == cmdline {
				pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "a process %q", cmdline)
	return pid
}

// secretsIn lists the files below dir that hold secret.
func secretsIn(t *testing.T, dir, secret string) []string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				found = append(found, p)
			}
		}
		return nil
	})
	return found
}
