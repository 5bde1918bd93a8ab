package session

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tree describes files for mkTree: "path" -> content, "path/" -> a
// directory, "path@" -> a symbolic link to the value.
type tree map[string]string

// mkTree makes t under root.
func mkTree(t *testing.T, root string, tr tree) {
	t.Helper()
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := tr[k]
		switch {
		case strings.HasSuffix(k, "/"):
			require.NoError(t, os.MkdirAll(filepath.Join(root, k), 0o755))
		case strings.HasSuffix(k, "@"):
			p := filepath.Join(root, strings.TrimSuffix(k, "@"))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.Symlink(v, p))
		default:
			p := filepath.Join(root, k)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(v), 0o644))
		}
	}
}

// readTree is the inverse of mkTree (directories as "path/").
func readTree(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		switch {
		case d.IsDir():
			out[rel+"/"] = ""
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel+"@"] = target
		default:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = string(b)
		}
		return nil
	}))
	return out
}

// whiteout makes an xattr-form whiteout at root/rel.
func whiteout(t *testing.T, root, rel string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.NoError(t, unix.Lsetxattr(p, "user.overlay.whiteout", []byte{}, 0))
}

// opaque marks root/rel (a directory) opaque.
func opaque(t *testing.T, root, rel string) {
	t.Helper()
	require.NoError(t, unix.Lsetxattr(filepath.Join(root, rel), "user.overlay.opaque", []byte("y"), 0))
}

// synthSession makes SRC and a session on it whose DST (an upper
// directory made by hand, as overlayfs would) holds one change of each
// kind.
func synthSession(t *testing.T) (*Session, string, string) {
	t.Helper()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "sess", "dst")
	mkTree(t, src, tree{
		"a.txt": "a\n", "b.txt": "b\n", "mode.sh": "#!/bin/sh\n", "same.txt": "s\n",
		"link@": "a.txt", "dir/x": "x\n", "dir/y": "y\n", "repl/old": "o\n", "gone/z": "z\n",
		"typechg": "file\n", "todir/": "",
	})
	s, err := CreateMeta(context.Background(), src, dst)
	require.NoError(t, err)
	mkTree(t, dst, tree{
		"a.txt": "A\n", "new.txt": "new\n", "mode.sh": "#!/bin/sh\n", "same.txt": "s\n",
		"link@": "b.txt", "dir/x": "X\n", "repl/new": "n\n", "typechg/inner": "i\n",
		"todir@": "a.txt", "newdir/f": "f\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(dst, "mode.sh"), 0o755))
	whiteout(t, dst, "b.txt")
	whiteout(t, dst, "gone")
	opaque(t, dst, "repl")
	return s, src, dst
}

// summary is each change as "kind path".
func summary(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Kind)+" "+c.Path)
	}
	return out
}

func TestChangesEveryKind(t *testing.T) {
	s, _, _ := synthSession(t)
	cs, err := s.Changes()
	require.NoError(t, err)
	require.Equal(t, []string{
		"modified a.txt", "deleted b.txt", "modified dir/x", "deleted gone",
		"symlink_changed link", "mode_changed mode.sh", "added new.txt",
		"added newdir", "added newdir/f", "dir_replaced repl", "added repl/new", "deleted repl/old",
		"type_changed todir", "type_changed typechg", "added typechg/inner",
	}, summary(cs))
	byPath := map[string]Change{}
	for _, c := range cs {
		byPath[c.Path] = c
	}
	require.Equal(t, TypeDir, byPath["gone"].Type)
	require.Equal(t, "b.txt", byPath["link"].Target)
	require.Equal(t, "a.txt", byPath["link"].OldTarget)
	require.Equal(t, fs.FileMode(0o755), byPath["mode.sh"].Mode)
	require.Equal(t, fs.FileMode(0o644), byPath["mode.sh"].OldMode)
	require.Equal(t, TypeSymlink, byPath["todir"].Type)
	require.Equal(t, TypeDir, byPath["todir"].OldType)
}

func TestApplyMakesSrcTheMergedView(t *testing.T) {
	s, src, _ := synthSession(t)
	dry, err := s.Apply(ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Len(t, dry.Applied, 15)
	require.Equal(t, "a\n", readTree(t, src)["a.txt"], "a dry run changes nothing")

	res, err := s.Apply(ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	require.Empty(t, res.Skipped)
	require.Empty(t, res.Failed)
	require.Equal(t, tree{
		"a.txt": "A\n", "new.txt": "new\n", "mode.sh": "#!/bin/sh\n", "same.txt": "s\n",
		"link@": "b.txt", "dir/": "", "dir/x": "X\n", "dir/y": "y\n", "repl/": "", "repl/new": "n\n",
		"typechg/": "", "typechg/inner": "i\n", "todir@": "a.txt", "newdir/": "", "newdir/f": "f\n",
	}, readTree(t, src))
	fi, err := os.Stat(filepath.Join(src, "mode.sh"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o755), fi.Mode().Perm())

	cs, err := s.Changes()
	require.NoError(t, err)
	require.Empty(t, cs, "once applied, nothing differs")
	again, err := s.Apply(ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, again.Conflicts, "the applied paths are SRC's new state, not the host's changes")
}

func TestApplyRefusesHostChanges(t *testing.T) {
	s, src, _ := synthSession(t)
	// The host edits a file the session modified, adds a file inside a
	// directory the session deletes, and creates a path the session adds.
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("host\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "gone", "host-file"), []byte("h\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "new.txt"), []byte("host new\n"), 0o644))
	res, err := s.Apply(ApplyOptions{})
	require.NoError(t, err)
	var conflicts []string
	for _, r := range res.Conflicts {
		conflicts = append(conflicts, r.Change.Path)
	}
	require.ElementsMatch(t, []string{"a.txt", "gone", "new.txt"}, conflicts)
	got := readTree(t, src)
	require.Equal(t, "host\n", got["a.txt"])
	require.Equal(t, "h\n", got["gone/host-file"])
	require.Equal(t, "host new\n", got["new.txt"])
	require.Equal(t, "X\n", got["dir/x"], "the rest is applied")
}

func TestApplySkipsProtectedAndUnsafe(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "s", "dst")
	mkTree(t, src, tree{".git/HEAD": "ref\n", "sub/.bashrc": "ok\n", "keep/.vscode/settings.json": "{}", "plain": "p\n"})
	s, err := CreateMeta(context.Background(), src, dst)
	require.NoError(t, err)
	mkTree(t, dst, tree{
		".git/hooks/pre-commit": "evil\n", ".git/config": "evil\n", "sub/.bashrc": "evil\n",
		"x/.claude/settings.json": "{}", "wt/.git": "gitdir: /elsewhere\n", "suid": "s\n", "plain": "P\n",
		"newrepo/.git/objects/ab": "obj\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(dst, "suid"), fs.ModeSetuid|0o755))
	whiteout(t, dst, "keep")
	res, err := s.Apply(ApplyOptions{})
	require.NoError(t, err)
	skipped := map[string]string{}
	for _, r := range res.Skipped {
		skipped[r.Change.Path] = r.Reason
	}
	for _, p := range []string{".git/hooks", ".git/config", "sub/.bashrc", "x/.claude/settings.json", "wt/.git", "suid", "keep"} {
		require.Contains(t, skipped, p)
	}
	require.Contains(t, skipped["keep"], ".vscode")
	require.Contains(t, skipped["suid"], "setuid")
	got := readTree(t, src)
	require.Equal(t, "ok\n", got["sub/.bashrc"])
	require.NotContains(t, got, ".git/config")
	require.NotContains(t, got, "wt/.git")
	require.Equal(t, "P\n", got["plain"])
	require.NotContains(t, got, "newrepo/.git/objects/ab", "a new repository is not applied")
	require.Contains(t, skipped["newrepo/.git/objects"], "inside newrepo/.git")
	require.Equal(t, "{}", got["keep/.vscode/settings.json"])
}

// A symbolic link where a directory was, in SRC or planted by the sandbox
// in DST, must never lead Apply to write outside SRC.
func TestApplyNeverFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	src, dst, outside := filepath.Join(dir, "src"), filepath.Join(dir, "s", "dst"), filepath.Join(dir, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	mkTree(t, src, tree{"link@": outside, "f": "f\n"})
	s, err := CreateMeta(context.Background(), src, dst)
	require.NoError(t, err)
	// DST has a plain directory where SRC has the link.
	mkTree(t, dst, tree{"link/evil": "pwned\n"})

	// Only link/evil asked for: its parent in SRC is the link.
	res, err := s.Apply(ApplyOptions{Paths: []string{"link/evil"}})
	require.NoError(t, err)
	require.Empty(t, res.Applied)
	require.Len(t, res.Failed, 1)
	require.Contains(t, res.Failed[0].Reason, "symbolic link")
	require.NoFileExists(t, filepath.Join(outside, "evil"))

	// A change list where a link in DST comes first and a file below it
	// next (as a sandbox swapping a directory for a link mid-apply gives).
	m, err := loadManifest(filepath.Join(s.Dir(), ManifestFile))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(dst, "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dst, "planted")))
	changes := []Change{
		{Path: "planted", Kind: Added, Type: TypeSymlink, Target: outside},
		{Path: "planted/evil", Kind: Added, Type: TypeFile},
	}
	res, err = applyChanges(src, dst, m, changes, ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, res.Applied, 1, "the link itself is content")
	require.Equal(t, 1, len(res.Skipped)+len(res.Failed)+len(res.Conflicts), "what is below it is not")
	require.NoFileExists(t, filepath.Join(outside, "evil"))
	require.Empty(t, readTree(t, outside))

	// Apply of the whole session replaces SRC's link by a directory.
	require.NoError(t, os.Remove(filepath.Join(dst, "planted")))
	mkTree(t, dst, tree{"link/evil": "pwned\n"})
	res, err = s.Apply(ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Failed)
	require.Empty(t, readTree(t, outside))
	fi, err := os.Lstat(filepath.Join(src, "link"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())
}

func TestDiff(t *testing.T) {
	s, _, _ := synthSession(t)
	d, err := s.Diff("a.txt")
	require.NoError(t, err)
	require.Equal(t, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n", d)
	d, err = s.Diff("")
	require.NoError(t, err)
	require.Contains(t, d, "+++ b/new.txt")
	require.Contains(t, d, "old mode 0644\nnew mode 0755")
	_, err = s.Diff("nothing-here")
	require.Error(t, err)
}

func TestRecoverAndDiscard(t *testing.T) {
	base := t.TempDir()
	src := t.TempDir()
	mkTree(t, src, tree{"f": "f\n"})
	s, err := New(context.Background(), Options{Src: src, BaseDir: base})
	require.NoError(t, err)
	fi, err := os.Stat(s.Dir())
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm())
	rec, err := Recover(base)
	require.NoError(t, err)
	require.Empty(t, rec, "its owner (this test) runs")

	// A dead owner: PID of a process that has exited.
	s.info.OwnerPID, s.info.OwnerStart = 0x3fffffff, 1
	require.NoError(t, s.saveInfo())
	rec, err = Recover(base)
	require.NoError(t, err)
	require.Len(t, rec, 1)
	require.Equal(t, s.ID(), rec[0].ID())
	// The audit log a sandbox on the session kept goes with it.
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), AuditFile), []byte("{}\n"), 0o600))
	require.NoError(t, rec[0].Discard())
	_, err = os.Stat(s.Dir())
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// Apply never gives SRC write for the group or others, set-ID or sticky
// bits SRC had not; bits SRC had are kept, and new entries are held to
// their parent directory.
func TestApplyNeverOpensModes(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "s", "dst")
	mkTree(t, src, tree{"pub/f a.txt": "f\n", "a.txt": "a\n", "sub/": "", "open.txt": "o\n",
		"shared/": "", "tmpish/": "", "sgid/": "", "s": "s\n", "run.sh": "r\n"})
	chmod := func(root, rel string, mode uint32) {
		t.Helper()
		require.NoError(t, unix.Chmod(filepath.Join(root, rel), mode))
	}
	chmod(src, "open.txt", 0o666)
	chmod(src, "shared", 0o775)
	chmod(src, "tmpish", 0o1777)
	chmod(src, "sgid", 0o2775)
	s, err := CreateMeta(context.Background(), src, dst)
	require.NoError(t, err)
	// What the sandbox did: chmod 777 pub; chmod 666 pub/f a.txt a.txt;
	// chmod 1777 sub; chmod 4755 s; and new entries.
	mkTree(t, dst, tree{"pub/f a.txt": "f\n", "a.txt": "A\n", "sub/": "", "open.txt": "O\n", "s": "s\n",
		"run.sh": "r\n", "new/n": "n\n", "shared/g": "g\n", "tmpish/t": "t\n", "sgid/d/x": "x\n"})
	chmod(dst, "pub", 0o777)
	chmod(dst, "pub/f a.txt", 0o666)
	chmod(dst, "a.txt", 0o666)
	chmod(dst, "sub", 0o1777)
	chmod(dst, "open.txt", 0o666)
	chmod(dst, "s", 0o4755)
	chmod(dst, "run.sh", 0o755)
	chmod(dst, "new", 0o777)
	chmod(dst, "new/n", 0o666)
	chmod(dst, "shared", 0o775)
	chmod(dst, "shared/g", 0o666)
	chmod(dst, "tmpish", 0o1777)
	chmod(dst, "tmpish/t", 0o666)
	chmod(dst, "sgid", 0o2775)
	chmod(dst, "sgid/d", 0o2777)

	// The listing shows every new entry's mode, and flags the open ones.
	cs, err := s.Changes()
	require.NoError(t, err)
	var listed []string
	for _, c := range cs {
		listed = append(listed, c.String())
	}
	require.Contains(t, listed, "A new/ (0777, group-writable, world-writable)")
	require.Contains(t, listed, "A new/n (0666, group-writable, world-writable)")
	require.Contains(t, listed, "P pub/ (0755 -> 0777, group-writable, world-writable)")
	require.Contains(t, listed, "P pub/f a.txt (0644 -> 0666, group-writable, world-writable)")
	require.Contains(t, listed, "P sub/ (0755 -> 01777, group-writable, world-writable)")
	require.Contains(t, listed, "P s (0644 -> 04755, setuid)")
	require.Contains(t, listed, "M open.txt")
	require.Contains(t, listed, "A sgid/d/ (02777, group-writable, world-writable, setgid)")

	res, err := s.Apply(ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Failed)
	mode := func(rel string) uint32 {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(src, rel), &st))
		return st.Mode & 0o7777
	}
	for rel, want := range map[string]uint32{
		"pub":         0o755,  // chmod 777: group and other write dropped
		"pub/f a.txt": 0o644,  // chmod 666
		"a.txt":       0o644,  // modified and chmod 666
		"sub":         0o755,  // chmod 1777: sticky and write dropped
		"s":           0o644,  // chmod 4755: skipped
		"open.txt":    0o666,  // SRC had it open: kept
		"run.sh":      0o755,  // execute bits are the sandbox's to set
		"new":         0o755,  // new, in a 0755 SRC
		"new/n":       0o644,  // new, in a new 0755 directory
		"shared/g":    0o664,  // new, in a 0775 directory: group write kept
		"tmpish/t":    0o644,  // new, in a sticky directory: no write for others
		"sgid/d":      0o2775, // new, in a setgid 02775 directory
		"sgid/d/x":    0o644,  // its own mode, within what its directory allows
	} {
		assert.Equal(t, fmt.Sprintf("%04o", want), fmt.Sprintf("%04o", mode(rel)), rel)
	}
	var skipped, narrowed []string
	for _, r := range res.Skipped {
		skipped = append(skipped, r.Change.Path)
	}
	for _, r := range res.Narrowed {
		narrowed = append(narrowed, r.Change.Path)
	}
	assert.Equal(t, []string{"s"}, skipped)
	assert.ElementsMatch(t, []string{"a.txt", "new", "new/n", "pub", "pub/f a.txt", "shared/g", "sgid/d", "sub", "tmpish/t"}, narrowed)
	for _, r := range res.Narrowed {
		if r.Change.Path == "sub" {
			assert.Equal(t, "mode 01777 applied as 0755: apply adds no write for the group or others, set-ID or sticky bit SRC had not", r.Reason)
		}
	}
}
