package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

func TestOpenMakesPrivateFile(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	require.NoError(t, err)
	defer l.Close()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "made 0600 whatever the umask")
}

func TestOpenRefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, nil, 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nothing"), dangling))
	open := filepath.Join(dir, "open")
	require.NoError(t, os.WriteFile(open, nil, 0o600))
	require.NoError(t, os.Chmod(open, 0o644))
	linked := filepath.Join(dir, "linked")
	require.NoError(t, os.WriteFile(linked, nil, 0o600))
	require.NoError(t, os.Link(linked, filepath.Join(dir, "second-name")))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for path, want := range map[string]string{
		link:     "is a symbolic link, which boxsh does not follow",
		dangling: "is a symbolic link, which boxsh does not follow",
		open:     "has mode 0644, open to other users: chmod 600 " + open,
		linked:   "has 2 links",
		fifo:     "is not a regular file",
		dir:      "audit log " + dir,
	} {
		l, err := Open(path)
		if !assert.Error(t, err, path) {
			l.Close()
			continue
		}
		assert.Contains(t, err.Error(), want, path)
		assert.NotContains(t, err.Error(), "\n")
	}
	_, err := os.Stat(filepath.Join(dir, "nothing"))
	assert.True(t, os.IsNotExist(err), "nothing made through the dangling link")
}

func TestRecordAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	require.NoError(t, err)
	defer l.Close()
	// Enough entries that Tail reads several chunks back.
	const n = 3000
	for i := range n {
		require.NoError(t, l.Record(Entry{Kind: tool.AuditCall, Tool: tool.Bash, Args: map[string]any{"command": fmt.Sprintf("echo %d", i)}}))
	}
	entries, skipped, err := l.Tail(5)
	require.NoError(t, err)
	assert.Zero(t, skipped)
	require.Len(t, entries, 5)
	for i, e := range entries {
		assert.Equal(t, fmt.Sprintf("echo %d", n-5+i), e.Args["command"])
		_, err := time.Parse(time.RFC3339Nano, e.Time)
		assert.NoError(t, err, "time set")
	}
	entries, _, err = l.Tail(tool.AuditMaxLast)
	require.NoError(t, err)
	require.Len(t, entries, tool.AuditMaxLast)
	assert.Equal(t, fmt.Sprintf("echo %d", n-tool.AuditMaxLast), entries[0].Args["command"])

	f, err := ReadFile(path)
	require.NoError(t, err)
	defer f.Close()
	count := 0
	require.NoError(t, Read(f, func(e Entry) error {
		assert.Equal(t, fmt.Sprintf("echo %d", count), e.Args["command"])
		count++
		return nil
	}, func(le *LineError) { t.Errorf("bad line: %v", le) }))
	assert.Equal(t, n, count)
}

// TestOpenDropsTornLine checks that a line a dead writer left torn is
// dropped by the next Open, which then appends whole lines after the last
// whole one.
func TestOpenDropsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	good := `{"time":"2026-01-01T00:00:00Z","kind":"call","tool":"bash","duration_ms":1,"output_bytes":2}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(good+`{"time":"2026-01-01T00:00:01Z","kind":"ca`), 0o600))
	l, err := Open(path)
	require.NoError(t, err)
	assert.EqualValues(t, len(`{"time":"2026-01-01T00:00:01Z","kind":"ca`), l.Repaired)
	require.NoError(t, l.Record(Entry{Kind: tool.AuditCall, Tool: tool.Read}))
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	require.Len(t, lines, 2)
	for _, line := range lines {
		var e Entry
		require.NoError(t, json.Unmarshal(line, &e), "%s", line)
	}

	// While another writer has the log open, the tail is left alone (it
	// may be that writer's line in progress).
	require.NoError(t, os.WriteFile(path, []byte(good+`{"partial`), 0o600))
	first, err := Open(path)
	require.NoError(t, err)
	defer first.Close()
	require.NoError(t, os.Truncate(path, int64(len(good)+len(`{"partial`))))
	second, err := Open(path)
	require.NoError(t, err)
	defer second.Close()
	assert.Zero(t, second.Repaired)
}

// writerEnv makes the test binary a writer that logs as fast as it can
// from several goroutines until killed (see TestKillDuringHeavyLogging).
const writerEnv = "BOXSH_AUDIT_TEST_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		l, err := Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Entries of different sizes, so that some cross pages.
				pad := bytes.Repeat([]byte("x"), 100+g*1500)
				for i := 0; ; i++ {
					_ = l.Record(Entry{Kind: tool.AuditCall, Tool: tool.Bash, Args: map[string]any{"command": strconv.Itoa(i) + string(pad)}})
				}
			}()
		}
		wg.Wait()
	}
	os.Exit(m.Run())
}

// TestKillDuringHeavyLogging kills a writer with SIGKILL while several
// goroutines log at full speed. The file must hold whole entries, after
// the next Open drops the one line the kill may have cut in its write.
// Nothing of an entry may ever be mixed with another's.
func TestKillDuringHeavyLogging(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 5 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		require.NoError(t, cmd.Start())
		// Until it has written a good deal (this round's share).
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if fi, err := os.Stat(path); err == nil && fi.Size() > int64(round+1)<<20 {
				break
			}
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		l, err := Open(path)
		require.NoError(t, err)
		t.Logf("round %d: %d bytes of a torn line dropped", round, l.Repaired)
		require.NoError(t, l.Close())
	}
	f, err := ReadFile(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	require.NoError(t, Read(f, func(e Entry) error {
		n++
		assert.Equal(t, tool.Bash, e.Tool)
		return nil
	}, func(le *LineError) { t.Errorf("torn or mixed line: %v", le) }))
	assert.Greater(t, n, 1000, "entries written")
}

// TestTailOf checks that TailOf keeps the entries keep selects, reading
// back across chunks past those it drops. A last line still being written
// is left out.
func TestTailOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	require.NoError(t, err)
	defer l.Close()
	for i := range 3000 {
		sb := "b"
		if i%1000 == 0 {
			sb = "a"
		}
		require.NoError(t, l.Record(Entry{Kind: tool.AuditCall, Tool: tool.Bash, Sandbox: sb, Args: map[string]any{"command": fmt.Sprintf("echo %d", i)}}))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"kind":"call","sandbox":"a","tool":"torn`)
	require.NoError(t, err)
	f.Close()
	onlyA := func(e Entry) bool { return e.Sandbox == "a" }
	entries, skipped, err := l.TailOf(10, onlyA)
	require.NoError(t, err)
	assert.Zero(t, skipped)
	var got []any
	for _, e := range entries {
		got = append(got, e.Args["command"])
	}
	assert.Equal(t, []any{"echo 0", "echo 1000", "echo 2000"}, got, "oldest first, across chunks")
	entries, _, err = l.TailOf(2, onlyA)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, "echo 1000", entries[0].Args["command"])
	entries, _, err = l.TailOf(5, func(Entry) bool { return false })
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.NotNil(t, entries, "an empty list, not null")
}
