package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The copy of a layer never leaves it.
//
// While the copy runs, a directory of the layer is renamed away again and
// again, and a symbolic link put in its place. The link leads to a directory
// outside, the user's own, holding a secret. No copy ever holds a byte or a
// name of the outside directory, whether it succeeds or fails.
func TestCopyLayerStaysInsideDuringSymlinkSwap(t *testing.T) {
	const secret = "SECRET-OUTSIDE-THE-LAYER"
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	src := filepath.Join(base, "upper")
	// The outside directory has the names of the layer's: a path looked
	// up again through the link finds it.
	inner, mirror := tree{}, tree{"secret.txt": secret + "\n"}
	for _, d := range []string{"", "e/"} {
		for _, f := range []string{"a", "b", "c", "f", "g"} {
			inner["d/"+d+f+".txt"] = "inside\n"
			mirror[d+f+".txt"] = secret + "\n"
		}
	}
	mkTree(t, src, inner)
	mkTree(t, outside, mirror)
	require.NoError(t, os.Chmod(filepath.Join(src, "d", "a.txt"), 0))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		swapDirWithLink(t, stop, filepath.Join(src, "d"), outside)
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})

	copies, torn, failed := 0, 0, 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); copies++ {
		dst := filepath.Join(base, "copy")
		err := copyTree(src, dst, false)
		if errors.Is(err, ErrLayerChanged) {
			torn++
		} else if err != nil {
			failed++
			t.Logf("copy %d: %v", copies, err)
		}
		leaked := leakedFrom(t, dst, secret)
		require.Empty(t, leaked, "copy %d holds the outside directory's entries (copy error: %v)", copies, err)
		require.NoError(t, removeAll(dst))
	}
	t.Logf("%d copies: %d refused as changed during the copy, %d failed otherwise", copies, torn, failed)
}

// swapDirWithLink exchanges dir with a symbolic link to target, again
// and again until stop is closed: dir is the link half of the time.
func swapDirWithLink(t *testing.T, stop <-chan struct{}, dir, target string) {
	link := dir + ".link"
	require.NoError(t, os.Symlink(target, link))
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
			t.Errorf("exchange %s with a link: %v", dir, err)
			return
		}
	}
}

// leakedFrom lists the entries of the copy dst whose name or content
// comes from outside the layer.
func leakedFrom(t *testing.T, dst, secret string) []string {
	var leaked []string
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, "secret") {
			leaked = append(leaked, p)
			return nil
		}
		if d.Type().IsRegular() {
			_ = os.Chmod(p, 0o600)
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				leaked = append(leaked, p)
			}
		}
		return nil
	})
	return leaked
}

// A copy of a file that is written meanwhile fails as changed, rather than
// mixing writes.
//
// For each copy, a writer rewrites the file in place, a chunk at a time, in a
// pass of one letter: the next letter after the pass before. The pass begins
// once the copy has taken the file's state, and runs while the copy reads it.
// A copy that succeeds holds the file as it was at one instant: a prefix of
// whole chunks of one pass's letter, and the rest of the pass before's.
//
// A write already under way when the copy takes the file's state moves no time
// the copy compares. A pause that holds (see host.Freeze) lets none be under
// way, and this test starts none so.
func TestCopyLayerRefusesATornFile(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "upper")
	const size, chunk = 1 << 20, 64 << 10
	mkTree(t, src, tree{"f": strings.Repeat("a", size)})
	f, err := os.OpenFile(filepath.Join(src, "f"), os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })

	pass := 0
	passDone := make(chan error, 1)
	testHookCopying = func(rel string) {
		if rel != "f" {
			return
		}
		pass++
		buf := bytes.Repeat([]byte{byte('a' + pass%26)}, chunk)
		go func() {
			for off := int64(0); off < size; off += chunk {
				if _, err := f.WriteAt(buf, off); err != nil {
					passDone <- err
					return
				}
			}
			passDone <- nil
		}()
	}
	t.Cleanup(func() { testHookCopying = nil })

	copies, torn := 0, 0
	for ; copies < 300; copies++ {
		dst := filepath.Join(base, "copy")
		err := copyTree(src, dst, false)
		require.NoError(t, <-passDone, "the pass of copy %d", copies)
		if errors.Is(err, ErrLayerChanged) {
			torn++
		} else {
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(dst, "f"))
			require.NoError(t, err)
			require.Len(t, b, size)
			require.True(t, anInstant(b, chunk), "copy %d holds no state the file had: %q", copies, letters(b))
		}
		require.NoError(t, removeAll(dst))
	}
	t.Logf("%d copies, %d refused as changed during the copy", copies, torn)
	require.Positive(t, torn, "some copies overlapped their pass")
}

// anInstant tells whether b is a state of TestCopyLayerRefusesATornFile's
// file: whole chunks of one letter, then the letter before.
func anInstant(b []byte, chunk int) bool {
	x := b[0]
	n := len(b) - len(bytes.TrimLeft(b, string(x)))
	if n == len(b) {
		return true
	}
	y := b[n]
	return n%chunk == 0 && (y-'a'+1)%26 == x-'a' && bytes.Count(b[n:], b[n:n+1]) == len(b)-n
}

// letters is b's runs of one letter, as letter and length.
func letters(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		n := len(b) - len(bytes.TrimLeft(b, string(b[0])))
		fmt.Fprintf(&s, "%c%d ", b[0], n)
		b = b[n:]
	}
	return s.String()
}

// Changes and Diff never leave DST either.
//
// While they run, a directory of DST is exchanged again and again with a
// symbolic link to a directory outside. No change names an entry of the
// outside directory, and no diff shows its bytes or its link's target.
func TestChangesStayInsideDuringSymlinkSwap(t *testing.T) {
	const secret = "SECRET-OUTSIDE-THE-LAYER"
	s, _, dst := synthSession(t)
	outside := filepath.Join(t.TempDir(), "outside")
	inner, mirror := tree{}, tree{"secret.txt": secret + "\n", "secretlink@": secret}
	for _, f := range []string{"a", "b", "c", "f", "g"} {
		inner["d/e/"+f+".txt"] = "inside\n"
		mirror["e/"+f+".txt"] = secret + "\n"
		mirror["e/secret-"+f+"@"] = secret
		inner["d/e/l-"+f+"@"] = "inside"
		mirror["e/l-"+f+"@"] = secret
	}
	mkTree(t, dst, inner)
	mkTree(t, outside, mirror)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		swapDirWithLink(t, stop, filepath.Join(dst, "d"), outside)
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})

	runs := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); runs++ {
		cs, _ := s.Changes()
		for _, c := range cs {
			require.NotContains(t, c.Path, "secret", "run %d lists an outside entry", runs)
			require.NotContains(t, c.Target, secret, "run %d shows an outside link", runs)
		}
		d, _ := s.Diff("d")
		require.NotContains(t, d, secret, "run %d shows outside bytes or links", runs)
	}
	t.Logf("%d runs of Changes and Diff", runs)
}

// removeAll never changes what is outside its tree.
//
// The tree holds a directory the sandbox closed, so that the first removal
// fails and the directories are opened to their owner. While it is removed, a
// directory is exchanged with a link to a directory outside. The outside
// directories keep their modes.
func TestRemoveAllStaysInsideDuringSymlinkSwap(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	mkTree(t, outside, tree{"x/f": "f\n", "y/f": "f\n"})
	for _, d := range []string{"x", "y", ""} {
		require.NoError(t, os.Chmod(filepath.Join(outside, d), 0o555))
	}
	t.Cleanup(func() {
		for _, d := range []string{"", "x", "y"} {
			_ = os.Chmod(filepath.Join(outside, d), 0o755)
		}
	})
	for round := 0; round < 200; round++ {
		root := filepath.Join(base, "tree")
		mkTree(t, root, tree{"d/x/f": "f\n", "d/y/locked/f": "f\n"})
		require.NoError(t, os.Chmod(filepath.Join(root, "d", "y", "locked"), 0o500))
		require.NoError(t, os.Symlink(outside, filepath.Join(root, "d.link")))
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "d"), unix.AT_FDCWD, filepath.Join(root, "d.link"), unix.RENAME_EXCHANGE) != nil {
					return // removed
				}
			}
		}()
		_ = removeAll(root)
		close(stop)
		<-done
		for _, d := range []string{"x", "y", ""} {
			fi, err := os.Stat(filepath.Join(outside, d))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o555), fi.Mode().Perm(), "round %d: %s/%s", round, outside, d)
		}
		require.NoError(t, removeAll(root))
	}
}

// A copy holds its layer as it was at one moment, across files too.
//
// A writer counts up in two files, the first then the second. So at any moment
// the first holds the second's count or one more. A copy that succeeds holds
// such a pair, however the writes fall during it.
func TestCopyLayerHoldsOneMoment(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "upper")
	mkTree(t, src, tree{"a": fmt.Sprintf("%020d", 0), "b": fmt.Sprintf("%020d", 0), "m/big": strings.Repeat("m", 1<<20)})
	var files [2]*os.File
	for i, name := range []string{"a", "b"} {
		f, err := os.OpenFile(filepath.Join(src, name), os.O_WRONLY, 0)
		require.NoError(t, err)
		files[i] = f
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			for _, f := range files {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := f.WriteAt(fmt.Appendf(nil, "%020d", n), 0); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		for _, f := range files {
			f.Close()
		}
	})

	copies, torn := 0, 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); copies++ {
		dst := filepath.Join(base, "copy")
		err := copyTree(src, dst, false)
		if errors.Is(err, ErrLayerChanged) {
			torn++
		} else {
			require.NoError(t, err)
			var n [2]int
			for i, name := range []string{"a", "b"} {
				b, err := os.ReadFile(filepath.Join(dst, name))
				require.NoError(t, err)
				_, err = fmt.Sscanf(string(b), "%d", &n[i])
				require.NoError(t, err)
			}
			require.Contains(t, []int{n[1], n[1] + 1}, n[0], "copy %d holds a=%d b=%d, which never were together", copies, n[0], n[1])
		}
		require.NoError(t, removeAll(dst))
	}
	t.Logf("%d copies, %d refused as changed during the copy", copies, torn)
}
