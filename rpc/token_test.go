package rpc

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenFile writes a token file of mode perm in a directory of the test.
func tokenFile(t *testing.T, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(path, []byte("planted\n"), perm))
	require.NoError(t, os.Chmod(path, perm)) // whatever the umask
	return path
}

// TestLoadTokenRefusesOpenFiles checks that a token file another user could
// have planted or can read is refused, and its token not used. The refusal
// is one line that says how to fix it.
func TestLoadTokenRefusesOpenFiles(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602, 0o660} {
		path := tokenFile(t, perm)
		tok, _, err := LoadOrCreateToken(path)
		require.Error(t, err, "mode %04o", perm)
		assert.Empty(t, tok)
		assert.Contains(t, err.Error(), "chmod 600 "+path)
		assert.Contains(t, err.Error(), "open to other users")
		assert.NotContains(t, err.Error(), "\n")
	}
	// Fixed as told, it is used.
	path := tokenFile(t, 0o644)
	require.NoError(t, os.Chmod(path, 0o600))
	tok, created, err := LoadOrCreateToken(path)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, "planted", tok)
	require.NoError(t, os.Chmod(path, 0o400))
	_, _, err = LoadOrCreateToken(path)
	assert.NoError(t, err, "read-only for the user is fine")
}

func TestLoadTokenRefusesSymlink(t *testing.T) {
	target := tokenFile(t, 0o600) // even one the user owns, mode 0600
	link := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.Symlink(target, link))
	_, _, err := LoadOrCreateToken(link)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symbolic link")
	assert.Contains(t, err.Error(), "rm "+link)
	assert.NotContains(t, err.Error(), "\n")

	// A dangling link is not written through either.
	dangling := filepath.Join(t.TempDir(), "tok")
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	require.NoError(t, os.Symlink(nowhere, dangling))
	_, _, err = LoadOrCreateToken(dangling)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symbolic link")
	_, err = os.Lstat(nowhere)
	assert.True(t, os.IsNotExist(err), "the link's target was made")
}

func TestLoadTokenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	_, _, err := LoadOrCreateToken(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a regular file")
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, _, err = LoadOrCreateToken(fifo) // and does not block on it
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a regular file")
}

// TestLoadTokenRefusesOtherOwner checks that a token file of another user
// is refused, even with mode 0600. As root, the test gives the file to
// boxsh-test, or nobody. Unprivileged, it uses a file of root's the user
// can read.
func TestLoadTokenRefusesOtherOwner(t *testing.T) {
	var path string
	var owner int
	if os.Geteuid() == 0 {
		u, err := user.Lookup("boxsh-test")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		require.NoError(t, err)
		owner, _ = strconv.Atoi(u.Uid)
		path = tokenFile(t, 0o600)
		require.NoError(t, os.Chown(path, owner, -1))
	} else {
		// Any readable file of root's: its mode is refused too, but
		// the owner is checked first.
		path, owner = "/etc/passwd", 0
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid)
	}
	_, _, err := LoadOrCreateToken(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "owned by uid "+strconv.Itoa(owner)+", not by you")
	assert.NotContains(t, err.Error(), "\n")
}

func TestCheckTokenFile(t *testing.T) {
	for _, c := range []struct {
		mode, uid uint32
		want      string
	}{
		{syscall.S_IFREG | 0o600, 1000, ""},
		{syscall.S_IFREG | 0o400, 1000, ""},
		{syscall.S_IFREG | 0o700, 1000, ""},
		{syscall.S_IFREG | 0o600, 1001, "owned by uid 1001, not by you (uid 1000)"},
		{syscall.S_IFREG | 0o600, 0, "owned by uid 0"},
		{syscall.S_IFREG | 0o644, 1000, "has mode 0644"},
		{syscall.S_IFREG | 0o640, 1000, "has mode 0640"},
		{syscall.S_IFREG | 0o601, 1000, "has mode 0601"},
		{syscall.S_IFREG | 0o610, 1000, "has mode 0610"},
		{syscall.S_IFDIR | 0o700, 1000, "not a regular file"},
		{syscall.S_IFIFO | 0o600, 1000, "not a regular file"},
	} {
		err := checkTokenFile("/t", c.mode, c.uid, 1000)
		if c.want == "" {
			assert.NoError(t, err, "%o", c.mode)
			continue
		}
		require.Error(t, err, "%o uid %d", c.mode, c.uid)
		assert.Contains(t, err.Error(), c.want)
	}
}

// TestLoadOrCreateTokenMakes checks that boxsh makes a token file where
// nothing is, with mode 0600 whatever the umask.
func TestLoadOrCreateTokenMakes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "tok")
	tok, created, err := LoadOrCreateToken(path)
	require.NoError(t, err)
	assert.True(t, created)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, _, err := LoadOrCreateToken(path)
	require.NoError(t, err)
	assert.Equal(t, tok, again)
}
