package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/session"
)

func TestSessionArgs(t *testing.T) {
	flags, rest, err := sessionArgs([]string{"dst", "--dry-run", "a", "--base", "/b"}, "--dry-run", "--base=")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"--dry-run": "", "--base": "/b"}, flags)
	require.Equal(t, []string{"dst", "a"}, rest)
	_, _, err = sessionArgs([]string{"--nope"}, "--json")
	require.ErrorContains(t, err, "unknown option --nope")
	_, _, err = sessionArgs([]string{"--base"}, "--base=")
	require.ErrorContains(t, err, "needs a value")
}

func TestAge(t *testing.T) {
	require.Equal(t, "42s", age(42*time.Second))
	require.Equal(t, "5m", age(5*time.Minute))
	require.Equal(t, "3h", age(3*time.Hour))
	require.Equal(t, "3d", age(72*time.Hour))
}

// TestSessionCommands checks apply, changes and discard on a session whose
// DST is written by hand.
func TestSessionCommands(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "try", "work")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a"), []byte("a\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, ".boxsh"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, ".boxsh", "policy.json"), []byte(`{"filesystem":{"protect":["Makefile"]}}`), 0o644))
	_, err := session.CreateMeta(context.Background(), src, dst)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a"), []byte("A\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dst, ".git", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "Makefile"), []byte("all:\n"), 0o644))
	t.Setenv("HOME", dir)

	var out, errb bytes.Buffer
	require.Equal(t, 0, runChanges([]string{dst, "--json"}, &out, &errb), errb.String())
	var cs []session.Change
	require.NoError(t, json.Unmarshal(out.Bytes(), &cs))
	require.Len(t, cs, 4)

	out.Reset()
	require.Equal(t, 3, runApply([]string{dst}, &out, &errb), "a protected path was left out")
	require.Contains(t, out.String(), "applied M a\n")
	require.Contains(t, out.String(), "skipped A .git/ (0755): protected path .git")
	require.Contains(t, out.String(), "skipped A Makefile (0644): protected path Makefile: protected by the policy")
	require.NoFileExists(t, filepath.Join(src, "Makefile"))
	b, _ := os.ReadFile(filepath.Join(src, "a"))
	require.Equal(t, "A\n", string(b))

	require.Equal(t, 2, runChanges([]string{dst, "--bogus"}, &out, &errb))
	require.Equal(t, 1, runChanges([]string{filepath.Join(dir, "none")}, &out, &errb))
	require.Equal(t, 0, runDiscard([]string{dst}, &out, &errb), errb.String())
	require.NoDirExists(t, filepath.Dir(dst))
}
