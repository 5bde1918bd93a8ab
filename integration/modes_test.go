//go:build linux

package integration

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	boxshhost "github.com/boxsh/boxsh/runtime/host"
)

// setIDScript tries every common way to make a set-user-ID or set-group-ID
// file in the current directory:
//   - chmod, numeric and symbolic;
//   - install -m, and cp -p of a setuid program;
//   - tar -xp of an archive holding such entries;
//   - creat, open and mknod with the bits in the mode (python3);
//   - mkdir -m;
//   - appending to a setuid file that already exists.
//
// None must leave such a file on the host.
const setIDScript = `
echo x > a; chmod 4755 a
echo x > b; chmod g+s b
echo x > c; chmod u+s,g+s c
echo x > d; chmod 6777 d
install -m 4755 a installed
install -m 2755 a installed-g
cp -p /usr/bin/su copied-su
cp -a /usr/bin/passwd copied-passwd
tar -xpf setid.tar
python3 -c 'import os; os.close(os.open("py-open", os.O_CREAT|os.O_WRONLY, 0o4755))'
python3 -c 'import os; os.close(os.open(".", os.O_TMPFILE|os.O_WRONLY, 0o4700))'
python3 -c 'import os; os.mknod("py-mknod", 0o100000|0o6755)'
python3 -c 'import os; open("py-chmod","w").close(); os.chmod("py-chmod", 0o4755)'
python3 -c 'import os; fd=os.open("py-fchmod", os.O_CREAT|os.O_WRONLY, 0o755); os.fchmod(fd, 0o2755)'
mkdir -m 2775 mkdir-g; mkdir -m 4775 mkdir-u
echo more >> pre-setuid
ls -l
true
`

// setIDTar is a tar archive with a set-user-ID file, a set-group-ID file
// and a set-group-ID directory.
func setIDTar(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "tar-suid", Mode: 0o4755, Size: 2, Typeflag: tar.TypeReg},
		{Name: "tar-sgid", Mode: 0o2755, Size: 2, Typeflag: tar.TypeReg},
		{Name: "tar-dir/", Mode: 0o2755, Typeflag: tar.TypeDir},
	} {
		require.NoError(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte("x\n"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// requireNoSetID requires that no file under dir has the set-user-ID or
// set-group-ID bit, and reports which do.
func requireNoSetID(t *testing.T, dir string, minFiles int) {
	t.Helper()
	var seen, bad []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		seen = append(seen, p)
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			bad = append(bad, fi.Mode().String()+" "+p)
		}
		return nil
	}))
	assert.Empty(t, bad, "set-ID files on the host")
	assert.GreaterOrEqual(t, len(seen), minFiles, "the script made files")
}

// TestEscapeSetIDFiles checks that a command cannot leave a set-user-ID or
// set-group-ID file in a wr: bind or in the DST of a cow: bind (issue 14,
// finding 8). Such a file would run as the user when another user of the
// host executes it. The seccomp filter refuses the modes with those bits.
func TestEscapeSetIDFiles(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	wr, src, dst := filepath.Join(base, "wr"), filepath.Join(base, "src"), filepath.Join(base, "dst")
	archive := setIDTar(t)
	for _, d := range []string{wr, src} {
		writeHostFile(t, filepath.Join(d, "setid.tar"), string(archive), 0o644)
		writeHostFile(t, filepath.Join(d, "pre-setuid"), "#!/bin/sh\n", 0o755)
		// The user's own setuid file, made on the host before the session.
		require.NoError(t, os.Chmod(filepath.Join(d, "pre-setuid"), 0o4755))
	}

	r := sandboxShell(t, wr, []string{"--bind", "wr:" + wr}, setIDScript)
	assert.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "installed", "the script ran: %s", r.stdout)
	require.NoError(t, os.Chmod(filepath.Join(wr, "pre-setuid"), 0o755))
	requireNoSetID(t, wr, 15)

	r = sandboxShell(t, src, []string{"--bind", "cow:" + src + ":" + dst}, "cd "+shq(dst)+"\n"+setIDScript)
	assert.Equal(t, 0, r.code(), r.stderr)
	require.NoError(t, os.Chmod(filepath.Join(src, "pre-setuid"), 0o755))
	requireNoSetID(t, dst, 15)
	requireNoSetID(t, src, 3)
}

// TestEscapeCowDstOpenToOthers checks that a command's chmod at the root of
// its cow mount cannot open DST to the host's other users (issue 14,
// finding 8). DST is the overlay's upper layer, so `chmod 777 .` there
// changes DST on the host. Other users could then plant files in any
// directory the command opened up, for a later apply to carry into SRC. DST
// stays without group and other bits during the session, since the front
// takes them off again at once, and after it.
func TestEscapeCowDstOpenToOthers(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	writeHostFile(t, filepath.Join(src, "f"), "src\n", 0o644)
	r := sandboxShell(t, src, []string{"--bind", "cow:" + src + ":" + dst}, "cd "+shq(dst)+`
		chmod 777 . && mkdir sub && chmod 777 sub && echo opened
		sleep 0.3; stat -c 'root=%a' .
		chmod a+rwx . ; chmod 755 .`)
	assert.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "opened\nroot=700\n", "the front closed DST again while the command ran: %s", r.stderr)
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	assert.Zero(t, fi.Mode().Perm()&0o077, "DST on the host: %v", fi.Mode())
	foreign, err := boxshhost.CowForeignFiles(dst)
	require.NoError(t, err)
	assert.Empty(t, foreign, "everything in DST is the user's")
}
