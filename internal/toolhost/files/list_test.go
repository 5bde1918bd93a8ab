package files

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// tree makes a directory holding a.txt (12 bytes, 0644), b/ (0750, with
// c (0600) and d/e), link -> a.txt, dangling -> nowhere, and a FIFO.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello world\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "b", "d"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "b"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "c"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "d", "e"), []byte("e"), 0o644))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o640))
	return dir
}

func listOut(t *testing.T, args tool.ListArgs, deniedBy DeniedBy) tool.ListOutput {
	t.Helper()
	r := List(ctx, args, deniedBy)
	require.False(t, r.IsError, "list failed: %+v", r.Content)
	var out tool.ListOutput
	require.NoError(t, json.Unmarshal([]byte(r.Content[0].Text), &out))
	assert.JSONEq(t, r.Content[0].Text, string(r.StructuredContent.(json.RawMessage)))
	return out
}

func entryNames(out tool.ListOutput) []string {
	var n []string
	for _, e := range out.Entries {
		n = append(n, e.Name)
	}
	return n
}

func TestList(t *testing.T) {
	dir := tree(t)
	out := listOut(t, tool.ListArgs{Path: dir}, nil)
	assert.Equal(t, dir, out.Path)
	assert.False(t, out.Truncated)
	assert.Equal(t, []string{"a.txt", "b", "dangling", "fifo", "link"}, entryNames(out))
	byName := map[string]tool.ListEntry{}
	for _, e := range out.Entries {
		byName[e.Name] = e
	}
	a := byName["a.txt"]
	assert.Equal(t, tool.FileInfo{Type: "file", Size: 12, Mode: "0644", Mtime: a.Mtime}, a.FileInfo)
	fi, err := os.Lstat(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	mt, err := time.Parse(time.RFC3339Nano, a.Mtime)
	require.NoError(t, err)
	assert.True(t, mt.Equal(fi.ModTime()), "mtime %s is the file's %s", a.Mtime, fi.ModTime())
	assert.Equal(t, "dir", byName["b"].Type)
	assert.Equal(t, "0750", byName["b"].Mode)
	assert.Equal(t, tool.FileInfo{Type: "symlink", Size: 5, Mode: "0777", Mtime: byName["link"].Mtime, Target: "a.txt"}, byName["link"].FileInfo)
	assert.Equal(t, "nowhere", byName["dangling"].Target)
	assert.Equal(t, "fifo", byName["fifo"].Type)
	assert.Equal(t, "0640", byName["fifo"].Mode)
}

func TestListDepth(t *testing.T) {
	dir := tree(t)
	assert.Equal(t, []string{"a.txt", "b", "b/c", "b/d", "dangling", "fifo", "link"},
		entryNames(listOut(t, tool.ListArgs{Path: dir, Depth: 2}, nil)))
	assert.Equal(t, []string{"a.txt", "b", "b/c", "b/d", "b/d/e", "dangling", "fifo", "link"},
		entryNames(listOut(t, tool.ListArgs{Path: dir, Depth: 1 << 40}, nil)))
	// A symbolic link to a directory is not followed.
	require.NoError(t, os.Symlink("b", filepath.Join(dir, "tob")))
	out := listOut(t, tool.ListArgs{Path: dir, Depth: 5}, nil)
	assert.NotContains(t, entryNames(out), "tob/c")
	// Listing through a link to a directory lists the directory.
	assert.Equal(t, []string{"c", "d"}, entryNames(listOut(t, tool.ListArgs{Path: filepath.Join(dir, "tob")}, nil)))
}

func TestListLimit(t *testing.T) {
	dir := tree(t)
	out := listOut(t, tool.ListArgs{Path: dir, Depth: 3, Limit: 3}, nil)
	assert.Equal(t, []string{"a.txt", "b", "b/c"}, entryNames(out))
	assert.True(t, out.Truncated)
	out = listOut(t, tool.ListArgs{Path: dir, Depth: 3, Limit: 8}, nil)
	assert.Len(t, out.Entries, 8)
	assert.False(t, out.Truncated, "exactly limit entries is not truncated")

	big := t.TempDir()
	for i := range MaxListLimit + 5 {
		require.NoError(t, os.WriteFile(filepath.Join(big, fmt.Sprintf("f%05d", i)), nil, 0o644))
	}
	out = listOut(t, tool.ListArgs{Path: big}, nil)
	assert.Len(t, out.Entries, DefaultListLimit)
	assert.True(t, out.Truncated)
	out = listOut(t, tool.ListArgs{Path: big, Limit: 1 << 50}, nil)
	assert.Len(t, out.Entries, MaxListLimit, "a huge limit is lowered to the maximum")
	assert.True(t, out.Truncated)
}

func TestListErrors(t *testing.T) {
	dir := tree(t)
	for path, want := range map[string]string{
		filepath.Join(dir, "none"):  "list: cannot open directory: " + filepath.Join(dir, "none") + ": no such file or directory",
		filepath.Join(dir, "a.txt"): "list: cannot open directory: " + filepath.Join(dir, "a.txt") + ": not a directory",
		filepath.Join(dir, "link"):  "list: cannot open directory: " + filepath.Join(dir, "link") + ": not a directory",
	} {
		r := List(ctx, tool.ListArgs{Path: path}, nil)
		require.True(t, r.IsError, path)
		assert.Equal(t, want, r.Content[0].Text)
	}
	r := List(ctx, tool.ListArgs{Path: dir, Depth: -1}, nil)
	assert.True(t, r.IsError, "negative depth")
	r = List(ctx, tool.ListArgs{Path: dir, Limit: -1}, nil)
	assert.True(t, r.IsError, "negative limit")
}

func TestListUnreadableSubdirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads mode 0 directories")
	}
	dir := tree(t)
	require.NoError(t, os.Chmod(filepath.Join(dir, "b", "d"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "b", "d"), 0o755) })
	out := listOut(t, tool.ListArgs{Path: dir, Depth: 3}, nil)
	assert.Equal(t, []string{"a.txt", "b", "b/c", "b/d", "dangling", "fifo", "link"}, entryNames(out))
	assert.Equal(t, "permission denied", out.Entries[3].Error)
	r := List(ctx, tool.ListArgs{Path: filepath.Join(dir, "b", "d")}, nil)
	require.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "permission denied")
}

func TestListMarksDenied(t *testing.T) {
	dir := tree(t)
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	deny := func(p string) string {
		if p == filepath.Join(real, "b", "c") {
			return "denyRead c (test)"
		}
		return ""
	}
	out := listOut(t, tool.ListArgs{Path: dir, Depth: 2}, deny)
	for _, e := range out.Entries {
		if e.Name == "b/c" {
			assert.Equal(t, "denyRead c (test)", e.DeniedBy)
		} else {
			assert.Empty(t, e.DeniedBy, e.Name)
		}
	}
	st := statOut(t, filepath.Join(dir, "b", "c"), deny)
	assert.Equal(t, "denyRead c (test)", st.DeniedBy)
}

func statOut(t *testing.T, path string, deniedBy DeniedBy) tool.StatOutput {
	t.Helper()
	r := Stat(ctx, tool.StatArgs{Path: path}, deniedBy)
	require.False(t, r.IsError, "stat failed: %+v", r.Content)
	var out tool.StatOutput
	require.NoError(t, json.Unmarshal([]byte(r.Content[0].Text), &out))
	return out
}

func TestStat(t *testing.T) {
	dir := tree(t)
	a := statOut(t, filepath.Join(dir, "a.txt"), nil)
	require.NotNil(t, a.Size)
	assert.Equal(t, tool.StatOutput{Path: filepath.Join(dir, "a.txt"), Exists: true, Type: "file", Size: a.Size, Mode: "0644", Mtime: a.Mtime}, a)
	assert.EqualValues(t, 12, *a.Size)

	c := statOut(t, filepath.Join(dir, "b", "c"), nil)
	require.NotNil(t, c.Size, "an empty file has size 0, not none")
	assert.EqualValues(t, 0, *c.Size)

	l := statOut(t, filepath.Join(dir, "dangling"), nil)
	assert.True(t, l.Exists, "a dangling link exists")
	assert.Equal(t, "symlink", l.Type)
	assert.Equal(t, "nowhere", l.Target)

	assert.Equal(t, "dir", statOut(t, filepath.Join(dir, "b"), nil).Type)

	for _, missing := range []string{"none", "a.txt/x", "none/x"} {
		p := filepath.Join(dir, missing)
		r := Stat(ctx, tool.StatArgs{Path: p}, nil)
		require.False(t, r.IsError, missing)
		assert.JSONEq(t, fmt.Sprintf(`{"path":%q,"exists":false}`, p), r.Content[0].Text, missing)
	}

	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { os.Chdir(wd) })
	assert.Equal(t, filepath.Join(dir, "a.txt"), statOut(t, "a.txt", nil).Path, "relative paths")
}

func TestStatLookAlike(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "it\u2019s.txt")
	require.NoError(t, os.WriteFile(name, []byte("x"), 0o644))
	st := statOut(t, filepath.Join(dir, "it's.txt"), nil)
	assert.True(t, st.Exists)
	assert.Equal(t, name, st.Path, "the path found is reported")
}
