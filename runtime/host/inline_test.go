package host

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxsh/boxsh/runtime/plan"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inlineFixture is a fake host tree (under a temporary "host" directory),
// a root made for it as prepareRootfs makes one, the read-only binds
// BuildSpec would list for its entries, and the plan's list of them
// (plan.Plan.Inline).
type inlineFixture struct {
	host, rootfs string
	inline       []string
	mounts       []specs.Mount
}

func newInlineFixture(t *testing.T) *inlineFixture {
	t.Helper()
	base := t.TempDir()
	f := &inlineFixture{host: filepath.Join(base, "host"), rootfs: filepath.Join(base, "rootfs")}
	require.NoError(t, os.MkdirAll(f.host, 0o755))
	require.NoError(t, os.MkdirAll(f.rootfs, 0o755))
	return f
}

// add makes the host entry name with make, the matching empty mount point
// in the root, and its bind.
func (f *inlineFixture) add(t *testing.T, name string, make func(p string)) string {
	t.Helper()
	p := filepath.Join(f.host, name)
	make(p)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	dst := filepath.Join(f.rootfs, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	if fi.IsDir() {
		require.NoError(t, os.Mkdir(dst, 0o755))
	} else {
		require.NoError(t, os.WriteFile(dst, nil, 0o644))
	}
	f.inline = append(f.inline, p)
	f.mounts = append(f.mounts, specs.Mount{Destination: p, Type: "bind", Source: p, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	return p
}

func writeFile(t *testing.T, content string, mode os.FileMode) func(string) {
	return func(p string) {
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
}

func TestInlineEtcCopiesSmallFilesAndTrees(t *testing.T) {
	f := newInlineFixture(t)
	passwd := f.add(t, "passwd", writeFile(t, "root:x:0:0::/root:/bin/sh\n", 0o644))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(passwd, old, old))
	secretish := f.add(t, "private.conf", writeFile(t, "x", 0o600))
	tree := f.add(t, "ld.so.conf.d", func(p string) {
		require.NoError(t, os.MkdirAll(filepath.Join(p, "sub"), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(p, "libc.conf"), []byte("/usr/local/lib\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(p, "sub", "x.conf"), []byte("x\n"), 0o640))
		require.NoError(t, os.Symlink("libc.conf", filepath.Join(p, "link.conf")))
	})
	other := specs.Mount{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}}
	kept, copyEtc := inlineEtc(append([]specs.Mount{other}, f.mounts...), f.rootfs, f.inline)
	require.NoError(t, copyEtc())

	assert.Equal(t, []string{"/usr"}, destinations(kept), "only mounts that are not /etc entries are left")
	in := func(p string) string { return filepath.Join(f.rootfs, p) }
	b, err := os.ReadFile(in(passwd))
	require.NoError(t, err)
	assert.Equal(t, "root:x:0:0::/root:/bin/sh\n", string(b))
	fi, err := os.Stat(in(passwd))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.True(t, fi.ModTime().Equal(old), "mtime kept: %v", fi.ModTime())
	fi, err = os.Stat(in(secretish))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	b, err = os.ReadFile(filepath.Join(in(tree), "sub", "x.conf"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
	fi, err = os.Stat(filepath.Join(in(tree), "sub"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	link, err := os.Readlink(filepath.Join(in(tree), "link.conf"))
	require.NoError(t, err)
	assert.Equal(t, "libc.conf", link, "symlinks are copied as symlinks")
}

func TestInlineEtcKeepsBindsItCannotCopy(t *testing.T) {
	f := newInlineFixture(t)
	big := f.add(t, "mime.types", writeFile(t, strings.Repeat("x", inlineMaxBytes+1), 0o644))
	many := f.add(t, "alternatives", func(p string) {
		require.NoError(t, os.Mkdir(p, 0o755))
		for i := range inlineMaxEntries + 1 {
			require.NoError(t, os.Symlink("/usr/bin/true", filepath.Join(p, "alt"+strings.Repeat("x", i))))
		}
	})
	deep := f.add(t, "ssl", func(p string) {
		require.NoError(t, os.MkdirAll(filepath.Join(p, "certs"), 0o755))
		for i := range inlineMaxEntries {
			require.NoError(t, os.WriteFile(filepath.Join(p, "certs", "c"+strings.Repeat("x", i)), nil, 0o644))
		}
	})
	fifo := f.add(t, "pipes", func(p string) {
		require.NoError(t, os.Mkdir(p, 0o755))
		require.NoError(t, syscall.Mkfifo(filepath.Join(p, "fifo"), 0o644))
	})
	unreadable := f.add(t, "shadow", writeFile(t, "secret", 0o000))
	writable := specs.Mount{Destination: big, Type: "bind", Source: big, Options: []string{"bind", "rw"}}

	want := []string{big, many, deep, fifo}
	if os.Geteuid() != 0 { // root reads a mode-0 file anyway
		want = append(want, unreadable)
	}
	kept, copyEtc := inlineEtc(f.mounts, f.rootfs, f.inline)
	require.NoError(t, copyEtc())
	assert.Equal(t, want, destinations(kept))
	for _, p := range []string{many, deep, fifo} {
		entries, err := os.ReadDir(filepath.Join(f.rootfs, p))
		require.NoError(t, err)
		assert.Empty(t, entries, "%s: the mount point is left empty", p)
	}
	fi, err := os.Stat(filepath.Join(f.rootfs, big))
	require.NoError(t, err)
	assert.Zero(t, fi.Size())

	kept, _ = inlineEtc([]specs.Mount{writable}, f.rootfs, f.inline)
	assert.Equal(t, []string{big}, destinations(kept), "a writable bind is never copied")
}

// A symlink where the root should have the mount point is never written
// through: it could lead to a host file.
func TestInlineEtcNeverWritesThroughSymlinks(t *testing.T) {
	f := newInlineFixture(t)
	p := f.add(t, "hosts", writeFile(t, "127.0.0.1 localhost\n", 0o644))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("unchanged"), 0o644))
	dst := filepath.Join(f.rootfs, p)
	require.NoError(t, os.Remove(dst))
	require.NoError(t, os.Symlink(victim, dst))

	kept, copyEtc := inlineEtc(f.mounts, f.rootfs, f.inline)
	require.NoError(t, copyEtc())
	assert.Equal(t, []string{p}, destinations(kept))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "unchanged", string(b))
}

// An entry that goes away between the plan and the copy is reported, and
// its mount point is left empty.
func TestInlineEtcReportsFailedCopies(t *testing.T) {
	f := newInlineFixture(t)
	p := f.add(t, "group", writeFile(t, "root:x:0:\n", 0o644))
	tree := f.add(t, "profile.d", func(p string) {
		require.NoError(t, os.Mkdir(p, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(p, "a.sh"), []byte("x"), 0o644))
	})
	kept, copyEtc := inlineEtc(f.mounts, f.rootfs, f.inline)
	assert.Empty(t, kept)
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Chmod(filepath.Join(tree, "a.sh"), 0o000))
	err := copyEtc()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "copy "+p+" into the sandbox's root")
	if os.Geteuid() != 0 {
		assert.Contains(t, err.Error(), "copy "+tree+" into the sandbox's root")
		entries, err := os.ReadDir(filepath.Join(f.rootfs, tree))
		require.NoError(t, err)
		assert.Empty(t, entries)
	}
}

// BenchmarkInlineEtc copies this host's /etc entries as a sandbox start
// does (into a temporary root; the host's files are only read).
func BenchmarkInlineEtc(b *testing.B) {
	host := gatherHostFacts()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		pl, err := plan.Build(plan.Config{Mode: plan.ModeExec, Target: plan.TargetBundle, Command: []string{"true"}, Rootfs: dir, Host: host})
		require.NoError(b, err)
		require.NoError(b, prepareRootfs(dir, pl.Root))
		b.StartTimer()
		_, copyEtc := inlineEtc(pl.Spec.Mounts, dir, pl.Inline)
		require.NoError(b, copyEtc())
	}
}

// Only the read-only bind of an entry the plan lists onto itself is
// copied: an entry it does not list, or another bind at a listed entry's
// place, stays a mount.
func TestInlineEtcCopiesOnlyListedBinds(t *testing.T) {
	f := newInlineFixture(t)
	hosts := f.add(t, "hosts", writeFile(t, "127.0.0.1 localhost\n", 0o644))
	group := f.add(t, "group", writeFile(t, "root:x:0:\n", 0o644))
	other := specs.Mount{Destination: hosts, Type: "bind", Source: group, Options: []string{"bind", "ro"}}
	kept, copyEtc := inlineEtc(append(f.mounts, other), f.rootfs, []string{hosts})
	require.NoError(t, copyEtc())
	assert.Equal(t, []string{group, hosts}, destinations(kept))
	b, err := os.ReadFile(filepath.Join(f.rootfs, hosts))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1 localhost\n", string(b), "the listed bind is copied")
}
