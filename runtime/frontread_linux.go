package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fstype"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

// frontRoot is the front's way into a sandbox's file system for the reads
// it serves itself (Supervisor.frontRead): a descriptor of the root that
// the sandbox's boxsh-init sees, taken at the first read from
// /proc/PID/root of boxsh-init.
//
// That descriptor is taken race-free: through a directory descriptor of
// /proc/PID, which stays bound to the process it was opened for, checked to
// be the sandbox's root directory (the host rootfs, by device and inode),
// and, after it, the pidfd that the front opened when the launcher named the
// PID shows the process still there, so the PID was not reused meanwhile.
// boxsh-init's credentials are compared with the front's then (credsCover):
// the front serves only when it can read nothing that boxsh-init could not.
//
// In plain mode boxsh-init is the front's child, with the front's root,
// mount namespace and credentials: the root is the front's own "/", taken
// once boxsh-init's credentials are found to be the front's.
type frontRoot struct {
	plain bool
	pid   int
	pidfd int
	// dev and ino are the host rootfs directory's, which is the sandbox's
	// root.
	dev, ino uint64

	mu      sync.Mutex
	inUse   bool // a read runs: one at a time
	closed  bool
	failed  bool // never again: not the sandbox's root, or credentials
	tries   int
	root    int // -1 until taken
	mounts  int // boxsh-init's /proc/PID/mountinfo, polled for changes
	checked bool
	bounded bool // every mount of the sandbox is of a bounded type
}

// maxRootTries bounds the attempts at taking the root, which are made
// once boxsh-init has answered a call (Instance.answered).
const maxRootTries = 8

// newFrontRoot prepares the front's reads of the sandbox ct, whose binds
// are binds. It returns nil when the front must not serve any: a cow bind
// whose layers lie on a file system that may block (a network one, FUSE),
// or no pidfd.
func newFrontRoot(ct *host.Container, binds []policy.Bind) *frontRoot {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		upper, _ := plan.CowDirs(b)
		for _, d := range []string{b.Src, upper} {
			var sfs unix.Statfs_t
			if unix.Statfs(d, &sfs) != nil || !fstype.SameForEveryReader(sfs.Type) {
				return nil
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(ct.Rootfs(), &st); err != nil {
		return nil
	}
	pidfd, err := unix.PidfdOpen(ct.Pid(), unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	unix.CloseOnExec(pidfd)
	return &frontRoot{pid: ct.Pid(), pidfd: pidfd, dev: st.Dev, ino: st.Ino, root: -1, mounts: -1}
}

// newPlainFrontRoot prepares the front's reads for the boxsh-init of plain
// mode, its child pid, not yet waited for.
func newPlainFrontRoot(pid int) *frontRoot {
	pidfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	unix.CloseOnExec(pidfd)
	return &frontRoot{plain: true, pid: pid, pidfd: pidfd, root: -1, mounts: -1}
}

// read serves args through the sandbox's root with readQuick, and tells
// whether it did (ok false: boxsh-init's). One read runs at a time; another
// meanwhile gives up.
func (fr *frontRoot) read(ctx context.Context, args tool.ReadArgs, readQuick ReadQuickFunc) (tool.Result, bool) {
	if noOpenat2.Load() {
		return tool.Result{}, false
	}
	fr.mu.Lock()
	if fr.closed || fr.failed || fr.inUse {
		fr.mu.Unlock()
		return tool.Result{}, false
	}
	fr.inUse = true
	fr.mu.Unlock()
	defer func() {
		fr.mu.Lock()
		fr.inUse = false
		if fr.closed {
			fr.closeFDs()
		}
		fr.mu.Unlock()
	}()
	if fr.root < 0 {
		if fr.tries >= maxRootTries {
			return tool.Result{}, false
		}
		fr.tries++
		if err := fr.take(); err != nil {
			if errors.Is(err, errNeverFrontRead) {
				fr.failed = true
			}
			return tool.Result{}, false
		}
	}
	if !fr.mountsBounded() {
		return tool.Result{}, false
	}
	fd, size, ok := openInRoot(fr.root, args.Path)
	if !ok {
		return tool.Result{}, false
	}
	defer unix.Close(fd)
	return readQuick(ctx, fd, size, args)
}

// close releases the descriptors, at once or when the running read ends.
func (fr *frontRoot) close() {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.closed = true
	if !fr.inUse {
		fr.closeFDs()
	}
}

// closeFDs closes what fr holds. fr.mu is held.
func (fr *frontRoot) closeFDs() {
	for _, fd := range []*int{&fr.root, &fr.mounts, &fr.pidfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// errNeverFrontRead marks a finding that holds for the sandbox's life: its
// reads are never the front's.
var errNeverFrontRead = errors.New("no reads served by the front")

// take opens boxsh-init's root and its mount table, and checks that they
// are the sandbox's and that the front's credentials give no more than
// boxsh-init's.
func (fr *frontRoot) take() error {
	if fr.plain {
		return fr.takePlain()
	}
	dir, err := unix.Open("/proc/"+strconv.Itoa(fr.pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	root, err := unix.Openat(dir, "root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(root)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		return err
	}
	if st.Dev != fr.dev || st.Ino != fr.ino {
		return fmt.Errorf("%w: the root of PID %d is not the sandbox's", errNeverFrontRead, fr.pid)
	}
	theirs, err := readAt(dir, "status")
	if err != nil {
		return err
	}
	ours, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	if err := credsCover(parseStatus(theirs), parseStatus(ours)); err != nil {
		return fmt.Errorf("%w: %v", errNeverFrontRead, err)
	}
	theirLabel, err1 := readAt(dir, "attr/current")
	ourLabel, err2 := os.ReadFile("/proc/self/attr/current")
	if (err1 == nil) != (err2 == nil) || !bytes.Equal(theirLabel, ourLabel) {
		return fmt.Errorf("%w: another security label", errNeverFrontRead)
	}
	mounts, err := unix.Openat(dir, "mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	// The process the descriptors were opened for is still the pidfd's:
	// its PID was not reused since the launcher named it.
	if err := unix.PidfdSendSignal(fr.pidfd, 0, nil, 0); err != nil {
		unix.Close(mounts)
		return fmt.Errorf("%w: boxsh-init is gone: %v", errNeverFrontRead, err)
	}
	ok = true
	fr.root, fr.mounts = root, mounts
	return nil
}

// takePlain takes the front's own root and mount table for a boxsh-init of
// plain mode, once its credentials are found to be the front's.
func (fr *frontRoot) takePlain() error {
	theirs, err := os.ReadFile("/proc/" + strconv.Itoa(fr.pid) + "/status")
	if err != nil {
		return err
	}
	ours, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	if t, o := parseStatus(theirs), parseStatus(ours); t != o || o.uid == "" {
		return fmt.Errorf("%w: boxsh-init's credentials are not the front's", errNeverFrontRead)
	}
	if err := unix.PidfdSendSignal(fr.pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("%w: boxsh-init is gone: %v", errNeverFrontRead, err)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	mounts, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(root)
		return err
	}
	fr.root, fr.mounts = root, mounts
	return nil
}

// readAt reads the file name of directory dir.
func readAt(dir int, name string) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(f)
}

// status holds the credentials of a /proc/PID/status.
type status struct {
	uid, gid, groups, capEff string
}

// parseStatus reads the credentials of a /proc/PID/status.
func parseStatus(b []byte) status {
	var s status
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Join(strings.Fields(v), " ")
		switch k {
		case "Uid":
			s.uid = v
		case "Gid":
			s.gid = v
		case "Groups":
			s.groups = v
		case "CapEff":
			s.capEff = v
		}
	}
	return s
}

// credsCover tells (nil) whether a process of credentials sandbox can read
// every file the front, of credentials front, can: the front has no
// capability, the same user and group ids, real, effective, saved and file
// system, and the same supplementary groups. The sandbox's capabilities only
// add to what it reads, but a group does not: a member of a file's group
// gets the group's bits, not the others' (mode 0604 denies the group).
func credsCover(sandbox, front status) error {
	switch {
	case front.uid == "" || front.gid == "" || front.capEff == "":
		return errors.New("the front's credentials are unknown")
	case strings.Trim(front.capEff, "0") != "":
		return errors.New("the front has capabilities")
	case strings.HasPrefix(front.uid, "0 ") || front.uid == "0":
		return errors.New("the front is root")
	case sandbox.uid != front.uid:
		return fmt.Errorf("user ids %q, the front's %q", sandbox.uid, front.uid)
	case sandbox.gid != front.gid:
		return fmt.Errorf("group ids %q, the front's %q", sandbox.gid, front.gid)
	}
	theirs, ours := strings.Fields(sandbox.groups), strings.Fields(front.groups)
	for _, g := range ours {
		if !slices.Contains(theirs, g) {
			return fmt.Errorf("the front's group %s is not the sandbox's", g)
		}
	}
	for _, g := range theirs {
		if !slices.Contains(ours, g) {
			return fmt.Errorf("the sandbox's group %s is not the front's", g)
		}
	}
	return nil
}

// mountsBounded tells whether every mount of the sandbox is of a file
// system whose lookups and reads cannot wait for a server (fstype.Bounded),
// reading the mount table again when the kernel says it changed.
func (fr *frontRoot) mountsBounded() bool {
	pfd := []unix.PollFd{{Fd: int32(fr.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(pfd, 0)
	if err != nil {
		return false
	}
	if fr.checked && n == 0 {
		return fr.bounded
	}
	b, err := preadAll(fr.mounts)
	if err != nil {
		fr.checked = false
		return false
	}
	fr.checked, fr.bounded = true, fstype.MountsBounded(b)
	return fr.bounded
}

// preadAll reads the whole of fd from its start, leaving it open.
func preadAll(fd int) ([]byte, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 16<<10)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// openInRoot opens path, resolved within root as boxsh-init resolves it,
// for reading if it is an unencrypted regular file of a file system the
// front reads (fstype.SameForEveryReader), and returns the descriptor and the file's size.
//
// The name is resolved once, to an O_PATH descriptor, which opens nothing:
// a device, a FIFO or a socket is never opened by the front. Only a regular
// file is then opened for reading, through that descriptor, with the
// front's credentials.
func openInRoot(root int, path string) (fd int, size int64, ok bool) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	p, err := openat2Retry(root, path, &how)
	if errors.Is(err, unix.ENOSYS) {
		noOpenat2.Store(true)
	}
	if err != nil {
		return -1, 0, false
	}
	defer unix.Close(p)
	var stx unix.Statx_t
	if err := unix.Statx(p, "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE, &stx); err != nil {
		return -1, 0, false
	}
	if stx.Mode&unix.S_IFMT != unix.S_IFREG || stx.Attributes&unix.STATX_ATTR_ENCRYPTED != 0 {
		return -1, 0, false
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(p, &sfs); err != nil || !fstype.SameForEveryReader(sfs.Type) {
		return -1, 0, false
	}
	// O_NONBLOCK: a lease on the file must not make the open wait.
	fd, err = openRetry("/proc/self/fd/"+strconv.Itoa(p), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return -1, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != stx.Ino ||
		st.Dev != unix.Mkdev(stx.Dev_major, stx.Dev_minor) {
		unix.Close(fd)
		return -1, 0, false
	}
	return fd, st.Size, true
}

// noOpenat2 is set once openat2 is found missing (Linux before 5.6): no
// read is then served by the front.
var noOpenat2 atomic.Bool

// openat2Retry is openat2, retried when a signal interrupts it.
func openat2Retry(dir int, path string, how *unix.OpenHow) (int, error) {
	for {
		fd, err := unix.Openat2(dir, path, how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openRetry opens path, retrying when a signal interrupts the call.
func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
