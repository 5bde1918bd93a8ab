package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// gatherHostFacts looks at the host's SystemPaths and EtcPaths, and at
// the limit of open files boxsh was started with.
func gatherHostFacts() plan.HostFacts {
	h := plan.HostFacts{NoFile: startNoFile()}
	for _, p := range plan.SystemPaths {
		if hp, ok := lookupHostPath(p); ok {
			h.System = append(h.System, hp)
		}
	}
	for _, p := range plan.EtcPaths {
		if hp, ok := lookupHostPath(p); ok {
			h.Etc = append(h.Etc, hp)
		}
	}
	for _, p := range plan.HostSystemPaths {
		if hp, ok := lookupHostPath(p); ok && hp.Dir && hp.Link == "" {
			h.Whole = append(h.Whole, hp)
		}
	}
	return h
}

// lookupHostPath describes the host's path p, if it exists.
func lookupHostPath(p string) (plan.HostPath, bool) {
	lfi, err := os.Lstat(p)
	if err != nil {
		return plan.HostPath{}, false
	}
	hp := plan.HostPath{Path: p, Dir: lfi.IsDir()}
	if lfi.Mode()&os.ModeSymlink != 0 {
		if hp.Link, err = os.Readlink(p); err != nil {
			return plan.HostPath{}, false
		}
		fi, err := os.Stat(p)
		if err != nil {
			return plan.HostPath{}, false
		}
		hp.Dir = fi.IsDir()
	}
	return hp, true
}

// prepareCowDirs makes the host directories of the cow binds (CowDirs): DST
// and its work directory, as boxsh v3 does before mounting.
//
// Like v3, it first removes the work directories under the same parents whose
// DST no longer exists, and then .boxsh when it is left empty. In a directory
// other users may write to (policy.SharedDir: /tmp), the directory of the work
// directories is the caller's own .boxsh-UID. There it and DST must be
// directories of the caller, not symbolic links (privateDir, checkOwnDir):
// what another user left there is refused rather than used.
func prepareCowDirs(binds []policy.Bind) error {
	parents := map[string]bool{}
	for _, b := range binds {
		if b.Mode == policy.CopyOnWrite {
			parents[filepath.Dir(b.Dst)] = true
		}
	}
	for parent := range parents {
		removeStaleWorkDirs(parent)
	}
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		upper, work := plan.CowDirs(b)
		if err := prepareCowDir(upper, work); err != nil {
			return fmt.Errorf("--bind %s: %w", b, err)
		}
	}
	return nil
}

// prepareCowDir makes a cow bind's DST, upper, and work directory, work.
func prepareCowDir(upper, work string) error {
	if !policy.SharedDir(filepath.Dir(upper)) {
		for _, d := range []string{upper, work} {
			if err := mkdirPrivate(d); err != nil {
				return err
			}
		}
		return nil
	}
	// Another user may have made DST or the work directories' directory
	// first, or a symbolic link there: refuse them, before and after
	// making them (the sticky bit keeps others from replacing ours).
	if err := checkOwnDir(upper); err != nil {
		return err
	}
	if err := mkdirPrivate(upper); err != nil {
		return err
	}
	if err := checkOwnDir(upper); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Dir(work), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := privateDir(filepath.Dir(work), 0o022); err != nil {
		return err
	}
	return mkdirPrivate(work)
}

// privateDir checks that dir is a directory of the caller, not a symbolic
// link, as opened without following a link.
//
// Its permission bits must have none of mask; 0o022 means no one else may
// write to it.
func privateDir(dir string, mask os.FileMode) error {
	return privateDirOf(dir, os.Getuid(), mask)
}

// privateDirOf is privateDir for the user uid.
func privateDirOf(dir string, uid int, mask os.FileMode) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w (a symbolic link or not a directory: if you did not make it, another user did; remove it)", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if int(st.Uid) != uid || os.FileMode(st.Mode)&mask != 0 {
		return fmt.Errorf("%s is not a private directory of uid %d (owner %d, mode %04o): if you did not make it, another user did; remove it", dir, uid, st.Uid, st.Mode&0o7777)
	}
	return nil
}

// mkdirPrivate makes directory d, and its parents as MkdirAll does, and takes
// the group and other permission bits off d.
//
// The host's other users must not enter a cow bind's DST (see cowGuard), nor
// its work directory.
func mkdirPrivate(d string) error {
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(d, fi.Mode()&^0o077)
	}
	return nil
}

// removeStaleWorkDirs removes parent/.boxsh/NAME when parent/NAME is gone,
// and parent/.boxsh when nothing is left in it (policy.CowWorkParent).
// Failures are ignored: a stale work directory only takes space.
//
// In a directory other users may write to, only the caller's own
// .boxsh-UID is looked into, and only when it is a private directory of
// the caller (privateDir).
func removeStaleWorkDirs(parent string) {
	dotBoxsh := policy.CowWorkParent(parent)
	if policy.SharedDir(parent) && privateDir(dotBoxsh, 0o022) != nil {
		return
	}
	entries, err := os.ReadDir(dotBoxsh)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := os.Stat(filepath.Join(parent, e.Name())); !os.IsNotExist(err) {
			continue
		}
		removeWorkDir(filepath.Join(dotBoxsh, e.Name()))
	}
	os.Remove(dotBoxsh)
}

// removeWorkDir removes an overlay work directory, which holds the
// kernel's own "work" directory (mode 0, empty once unmounted).
func removeWorkDir(work string) {
	os.Remove(filepath.Join(work, "work"))
	os.Remove(work)
}

// checkCowUpperFS refuses a cow bind whose changes directory, its DST (made by
// prepareCowDirs), is on overlayfs.
//
// The kernel refuses an overlay whose upper layer is on overlayfs, with
// EINVAL, which the runtime reports without a word about why. A container's
// root file system is on overlayfs.
func checkCowUpperFS(binds []policy.Bind) error {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		if upper, _ := plan.CowDirs(b); onOverlayFS(upper) {
			return fmt.Errorf("--bind %s: %s is on overlayfs (a container's root file system), where the kernel cannot keep the changes of a copy-on-write bind: "+
				"put it on a volume or a tmpfs (Docker and Podman: -v or --tmpfs; Kubernetes: an emptyDir volume)", b, upper)
		}
	}
	return nil
}

// RemoveCowWorkDirs removes the work directories of the cow binds once no
// sandbox uses them, with their .boxsh directories when left empty.
//
// --try does so, as its directory is the user's only to read the changes in.
// The work directory of a --bind cow stays for the next run, as in boxsh v3.
func RemoveCowWorkDirs(binds []policy.Bind) {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		_, work := plan.CowDirs(b)
		removeWorkDir(work)
		os.Remove(filepath.Dir(work))
	}
}

// prepareRootfs fills dir, the sandbox's root directory, with the entries
// of the plan (plan.Plan.Root): mount points and symlinks. dir is made if
// missing; running it again on the same dir is harmless. It never writes
// through a symlink in dir (a reused bundle's root may hold links an
// earlier sandbox left): it refuses dir or a directory in it that is one.
func prepareRootfs(dir string, entries []plan.RootEntry) error {
	if err := checkOwnDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		made := filepath.Dir(e.Path)
		if e.Dir {
			made = e.Path
		}
		if err := mkdirBeneath(dir, made); err != nil {
			return err
		}
		at := filepath.Join(dir, e.Path)
		switch {
		case e.Link != "":
			if old, err := os.Readlink(at); err == nil && old == e.Link {
				continue
			}
			if err := os.Symlink(e.Link, at); err != nil {
				return err
			}
		case !e.Dir:
			f, err := os.OpenFile(at, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
			if err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// makePlaceholderDirs makes the missing directories above the missing
// protected paths (from their MissingFrom), so that they can be pinned.
func makePlaceholderDirs(protect []plan.HostPath) error {
	for _, hp := range protect {
		if hp.Missing && hp.MissingFrom != hp.Path {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
		}
		// A placeholder with content is made with it here, so that the
		// host's git, which reads the mount point, never sees it empty.
		if hp.Missing && hp.Content != "" && !hp.Dir {
			f, err := os.OpenFile(hp.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o444)
			if err == nil {
				_, err = f.WriteString(hp.Content)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil && !os.IsExist(err) {
				return err
			}
		}
	}
	return nil
}

// shareHeldPlaceholders marks as missing the protected paths that are
// placeholders another running sandbox holds: they are placeholders here
// too, and whichever sandbox ends last removes them.
func shareHeldPlaceholders(protect []plan.HostPath) {
	for i, hp := range protect {
		if hp.Missing || !isPlaceholder(hp.Path) {
			continue
		}
		if f, held := heldPlaceholder(hp.Path); held {
			protect[i].Missing, protect[i].MissingFrom = true, hp.Path
		} else if f != nil {
			f.Close()
		}
	}
}

// holdPlaceholders takes a shared lock on each placeholder of protect, present
// once the sandbox has started.
//
// The lock tells other sandboxes that the placeholder is in use. Closing the
// files releases it.
func holdPlaceholders(protect []plan.HostPath) []*os.File {
	var held []*os.File
	for _, hp := range protect {
		if !hp.Missing {
			continue
		}
		f, err := os.OpenFile(hp.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
			f.Close()
			continue
		}
		held = append(held, f)
	}
	return held
}

// heldPlaceholder tells whether a running sandbox holds the placeholder p.
//
// If none does, it returns p open and locked, so that none takes it before the
// caller has removed it.
func heldPlaceholder(p string) (*os.File, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.Is(err, unix.EWOULDBLOCK)
	}
	return f, false
}

// isPlaceholder tells whether p looks like a placeholder mount point: a
// regular file of its placeholder content or an empty directory (see
// placeholderAt), not a link.
func isPlaceholder(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && placeholderAt(f, fi)
}

// preparePlaceholders makes the placeholders of SpecConfig.Placeholders in
// dir.
//
// They are the empty read-only file and directory, those with content
// (plan.PlaceholderFiles), and the empty file and directory of mode 0 that
// cover what denyRead rules name. dir is made afresh each time (removing what
// is there, see resetDir). So no placeholder is a symlink an earlier sandbox
// left in a reused bundle: the spec binds them over the protected paths.
func preparePlaceholders(dir string) error {
	if err := resetDir(dir); err != nil {
		return err
	}
	files := []struct {
		name    string
		content string
		perm    os.FileMode
	}{
		{"file", "", 0o444},
		{plan.DeniedName, "", 0},
	}
	for name, content := range plan.PlaceholderFiles() {
		files = append(files, struct {
			name    string
			content string
			perm    os.FileMode
		}{name, content, 0o444})
	}
	for _, f := range files {
		if err := createFile(filepath.Join(dir, f.name), []byte(f.content), f.perm); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		name string
		perm os.FileMode
	}{{"dir", 0o555}, {plan.DeniedDirName, 0}} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		// Mkdir's mode is under the umask; the placeholders' are exact.
		if err := os.Chmod(p, d.perm); err != nil {
			return err
		}
	}
	return nil
}

// removePlaceholders removes the mount points that a sandbox left on the host
// for the missing protected paths of protect, and the directories made for
// them.
//
// It removes each only while it is still empty (a file the user has since
// written stays) and no running sandbox holds it (see holdPlaceholders). Each
// is reached through descriptors, beneath its parent, without following a link
// (see dirChain). So another sandbox that writes the bind, and swaps a
// directory on the way for a link to elsewhere, makes this one stay rather
// than removing what the link names.
func removePlaceholders(protect []plan.HostPath) {
	for _, hp := range protect {
		if hp.Missing {
			removePlaceholder(hp)
		}
	}
}

// removePlaceholder removes the placeholder of the missing protected path
// hp, and the directories above it up to hp.MissingFrom once empty.
func removePlaceholder(hp plan.HostPath) {
	chain, err := openDirChain(filepath.Dir(hp.Path))
	if err != nil {
		return // gone, or reached through a link
	}
	defer chain.close()
	name := filepath.Base(hp.Path)
	fd, err := unix.Openat(chain.last(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), hp.Path)
	defer f.Close()
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another sandbox uses it (or it cannot be locked)
	}
	fi, err := f.Stat()
	if err != nil || !placeholderAt(f, fi) {
		return
	}
	flags := 0
	if fi.IsDir() {
		flags = unix.AT_REMOVEDIR
	}
	if unix.Unlinkat(chain.last(), name, flags) != nil {
		return
	}
	// The directories made for it, from the deepest, while empty.
	for i := len(chain.paths) - 1; i > 0 && pathtree.Within(chain.paths[i], hp.MissingFrom); i-- {
		if unix.Unlinkat(chain.fds[i-1], filepath.Base(chain.paths[i]), unix.AT_REMOVEDIR) != nil {
			break
		}
	}
}

// placeholderAt tells whether f, open, with fi its Stat, is a
// placeholder: a regular file of its placeholder content, or an empty
// directory.
func placeholderAt(f *os.File, fi os.FileInfo) bool {
	switch {
	case fi.Mode().IsRegular():
		want := plan.PlaceholderContent(filepath.Base(f.Name()))
		if fi.Size() != int64(len(want)) {
			return false
		}
		b := make([]byte, len(want)+1)
		n, _ := io.ReadFull(f, b)
		return n == len(want) && string(b[:n]) == want
	case fi.IsDir():
		names, err := f.Readdirnames(1)
		return len(names) == 0 && errors.Is(err, io.EOF)
	}
	return false
}
