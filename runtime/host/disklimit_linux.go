package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/front/usage"
)

// DiskLimit bounds the space that a sandbox's writable layer takes on the
// host, without quotas.
//
// The writable layer is the upper directory of the sandbox's copy-on-write
// bind. A rootless sandbox cannot have quotas. So DiskLimit accounts the layer
// by walking it: the blocks of every entry, a file of several links once, and
// the files the sandbox's processes hold open with no name left. It walks
// again at each inotify event of any directory in the layer, and every few
// seconds besides. It acts on the sandbox's processes from outside:
//
//   - Every process of the sandbox runs with RLIMIT_FSIZE at most the limit
//     (soft and hard), inherited from its first process (see FileSize). So no
//     one file grows past the limit.
//   - Once the layer holds more than the limit, the sandbox is full. The
//     RLIMIT_FSIZE of every process is set to 0, soft and hard. Writes that
//     grow a regular file then fail with EFBIG (or SIGXFSZ for a program that
//     does not ignore it), and no process can raise its limit again. While
//     full, the processes are gone over again at each walk and before each
//     call, so one whose fork was under way during a sweep is set by the next.
//   - Once the layer is under the limit again, the next call goes to a new
//     boxsh-init, which gets the limit back (see Stale). A boxsh-init started
//     while full is full from its start.
//   - A sandbox whose layer still grows past the limit and Slack while full is
//     killed: its boxsh-init, with its PID namespace. It grows by means that
//     no file size limit bounds, such as directories and extended attributes.
//
// The kernel does not refuse the write that crosses the limit. The overshoot
// is what the sandbox writes before the walk sees it (see docs/security.md for
// the bound).
type DiskLimit struct {
	dir          string
	limit, slack int64
	log          hclog.Logger

	in   *inotifyWatcher
	kick chan struct{} // an event: walk again
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	pidfd  int // the running boxsh-init's, or -1
	pid    int
	used   int64
	full   bool
	capped bool // the running boxsh-init was full: hard limit 0
	// settled tells that used was measured by a walk begun after the
	// sweep that made the sandbox full had ended.
	settled bool
	killing bool // the running boxsh-init was sent SIGKILL
	killed  int
}

// DiskSlack returns how far past its limit a sandbox's layer may grow before
// the sandbox is killed.
//
// That is an eighth of the limit, at least 8 MiB and at most 256 MiB.
func DiskSlack(limit int64) int64 {
	return min(max(limit/8, 8<<20), 256<<20)
}

// Timing of the walks. They are at least diskGap apart, or twice the last
// walk's time. They come at least every diskPeriod, or 20 times the last
// walk's time.
const (
	diskGap = 20 * time.Millisecond
	// diskFastGap is the least time between walks while the layer grows
	// within a slack of the limit.
	diskFastGap = time.Millisecond
	diskPeriod  = 2 * time.Second
	// diskMaxDepth bounds the directories walked into; a deeper tree
	// counts as over the limit.
	diskMaxDepth = 512
)

// NewDiskLimit starts accounting dir against limit bytes. Started hands it
// each boxsh-init of the sandbox.
func NewDiskLimit(dir string, limit int64, log hclog.Logger) (*DiskLimit, error) {
	if limit <= 0 {
		return nil, errors.New("disk limit: expected a positive size")
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	in, err := newInotifyWatcher()
	if err != nil {
		return nil, err
	}
	d := &DiskLimit{dir: dir, limit: limit, slack: DiskSlack(limit), log: log, in: in,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), pidfd: -1}
	if err := in.start(func(inotifyEvent) { d.poke() }); err != nil {
		in.close()
		return nil, err
	}
	d.update(d.walk())
	go d.loop()
	return d, nil
}

// poke asks for a walk.
func (d *DiskLimit) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// loop walks the layer at each event, at most every diskGap (sooner
// near the limit, see gap), and every diskPeriod without one.
func (d *DiskLimit) loop() {
	defer close(d.done)
	period := diskPeriod
	t := time.NewTimer(period)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-d.stop:
			return
		case <-d.kick:
		case <-t.C:
		}
		t0 := time.Now()
		used := d.walk()
		d.update(used)
		took := time.Since(t0)
		gap := d.gap(took, used-last)
		last = used
		period = max(diskPeriod, 20*took)
		t.Reset(period)
		select {
		case <-d.stop:
			return
		case <-time.After(gap):
		}
	}
}

// gap returns how long to wait before the next walk, after one that took took
// and found the layer grown by grew bytes.
//
//   - Normally it is diskGap, or twice the walk's time for a large layer.
//   - While the layer grows within a slack of the limit (below it, or past it
//     while full), it is twice the walk's time, and at least diskFastGap.
//
// So what is written between the crossing and the reaction stays small, and
// walking costs at most a third of a core.
func (d *DiskLimit) gap(took time.Duration, grew int64) time.Duration {
	d.mu.Lock()
	near := d.used >= d.limit-d.slack && d.used <= d.limit+d.slack
	d.mu.Unlock()
	if grew > 0 && near {
		return max(diskFastGap, 2*took)
	}
	return max(diskGap, 2*took)
}

// Limit is the limit in bytes; Slack how far past it the sandbox is
// killed.
func (d *DiskLimit) Limit() int64 { return d.limit }

// Slack is DiskSlack of the limit.
func (d *DiskLimit) Slack() int64 { return d.slack }

// Used is the space the layer took at the last walk, and whether it is
// past the limit.
func (d *DiskLimit) Used() (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used, d.full
}

// Killed counts the sandbox's kills for growing past the limit and slack.
func (d *DiskLimit) Killed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.killed
}

// Started hands the limit a new boxsh-init of the sandbox, by its host PID,
// before any call reaches it.
//
// The boxsh-init's processes get the file size limits of the layer's state.
// One started while the layer is past the limit is full from its start, so a
// restart grants no fresh allowance.
func (d *DiskLimit) Started(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("disk limit: pidfd of %d: %w", pid, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pidfd >= 0 {
		unix.Close(d.pidfd)
	}
	d.pidfd, d.pid = fd, pid
	d.capped, d.killing = false, false
	return d.sweepLocked()
}

// FileSize returns the file size limit a new boxsh-init of the sandbox starts
// with.
//
// It is the limit, or 0 while the layer is past it.
func (d *DiskLimit) FileSize() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		return 0
	}
	return uint64(d.limit)
}

// Stale tells, before a call goes to the boxsh-init of host PID pid, why it
// must be replaced by a new one. It returns "" otherwise.
//
// A boxsh-init is stale when it was full and the layer is under the limit
// again. Its hard file size limit is 0, which only a new boxsh-init lifts.
func (d *DiskLimit) Stale(pid int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if pid == d.pid && d.capped && !d.full {
		return "the sandbox is back under its disk limit: a new boxsh-init lifts the file size limit"
	}
	if pid == d.pid && d.full {
		// A process whose fork was under way while the last sweep ran
		// was not yet in the tree, and kept the limit: the process the
		// call runs in is set before the call.
		_ = d.sweepLocked()
	}
	return ""
}

// update takes a walk's figure and acts on it.
func (d *DiskLimit) update(used int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// Growth past the limit and slack while full (the processes were
	// already held at 0) is growth no file size limit bounds: the sandbox
	// is killed. Growth before the sweep reached them is the reaction's
	// delay (up to the end of that sweep), which killing would not undo.
	evading := d.full && d.settled && used > d.used
	d.used, d.settled = used, d.full
	switch {
	case used > d.limit && !d.full:
		d.full, d.settled = true, false
		d.log.Warn("disk limit reached: files can no longer grow", "dir", d.dir, "used", used, "limit", d.limit)
		_ = d.sweepLocked()
	case used <= d.limit && d.full:
		d.full = false
		d.log.Info("back under the disk limit", "dir", d.dir, "used", used, "limit", d.limit)
		_ = d.sweepLocked()
	case d.full:
		// Again at each walk while full: a process forked while the
		// last sweep ran, not yet in the tree, kept the limit.
		_ = d.sweepLocked()
	}
	if used > d.limit+d.slack && evading && d.pidfd >= 0 && !d.killing {
		d.killed++
		d.killing = true
		d.log.Warn("disk limit and its slack exceeded: stopping the sandbox", "dir", d.dir, "used", used, "limit", d.limit, "slack", d.slack)
		_ = unix.PidfdSendSignal(d.pidfd, unix.SIGKILL, nil, 0)
	}
}

// sweepLocked sets RLIMIT_FSIZE of every process of the sandbox.
//
// Soft and hard are at most the limit, and both 0 when full. The hard one then
// stays 0 for the rest of this boxsh-init's life, since no process can raise
// it again. sweepLocked goes over the process tree until a pass changes
// nothing, so that a process forked during a pass is set in the next.
func (d *DiskLimit) sweepLocked() error {
	if d.pidfd < 0 {
		return nil
	}
	if d.full {
		d.capped = true
	}
	soft, hard := uint64(d.limit), uint64(d.limit)
	if d.full {
		soft = 0
	}
	if d.capped {
		hard = 0
	}
	var err error
	for range 20 {
		changed := 0
		for _, pid := range descendants(d.pid) {
			var old unix.Rlimit
			if unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old) != nil {
				continue // gone
			}
			want := unix.Rlimit{Max: min(old.Max, hard)}
			want.Cur = min(soft, want.Max)
			if old == want {
				continue
			}
			if e := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &want, nil); e != nil && !errors.Is(e, unix.ESRCH) {
				err = fmt.Errorf("disk limit: RLIMIT_FSIZE of %d: %w", pid, e)
				continue
			}
			changed++
		}
		if changed == 0 {
			return err
		}
	}
	// Processes are forked faster than they are set: stop the sandbox.
	d.killed++
	d.log.Warn("disk limit: cannot set the file size limit of every process: stopping the sandbox", "dir", d.dir)
	_ = unix.PidfdSendSignal(d.pidfd, unix.SIGKILL, nil, 0)
	return errors.New("disk limit: the sandbox forks faster than its limits can be set")
}

// descendants are pid and the processes below it (all of a sandbox's,
// whose init is pid: orphans are reparented to it).
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(out[i]) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(out[i]) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// walk sums the blocks of the layer, and watches each of its directories.
//
// Each directory is watched before it is read, so a change after the read is
// an event. walk adds the files that the sandbox's processes hold open and
// that no directory names any more (see heldDeleted). A tree deeper than
// diskMaxDepth, or one with a directory it could not walk, counts as past the
// limit and slack.
func (d *DiskLimit) walk() int64 {
	w := usage.DiskWalk{MaxDepth: diskMaxDepth, Visit: func(fd int) {
		_, _ = d.in.add("/proc/self/fd/"+strconv.Itoa(fd), unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_ATTRIB|unix.IN_ONLYDIR)
	}}
	bytes, truncated, err := w.Size(d.dir)
	if err != nil {
		return 0 // gone: nothing on the disk
	}
	d.mu.Lock()
	pid := d.pid
	running := d.pidfd >= 0
	d.mu.Unlock()
	if running {
		bytes += d.heldDeleted(descendants(pid))
	}
	if truncated {
		return max(bytes, d.limit+d.slack+1)
	}
	return bytes
}

// heldDeleted returns the space of the regular files that processes pids hold
// open and that have no name left, each once.
//
// Such files were unlinked while open, or made with O_TMPFILE. Those of file
// systems in memory (tmpfs, memfd) are left out, since they take memory rather
// than disk. Each file is watched, since no directory's watch sees it grow.
func (d *DiskLimit) heldDeleted(pids []int) int64 {
	var bytes int64
	seen := map[[2]uint64]bool{}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		for _, fd := range fds {
			var st unix.Stat_t
			if unix.Stat(dir+fd.Name(), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 {
				continue
			}
			key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
			if seen[key] {
				continue
			}
			seen[key] = true
			var fs unix.Statfs_t
			if unix.Statfs(dir+fd.Name(), &fs) == nil && inMemory(fs.Type) {
				continue
			}
			_, _ = d.in.add(dir+fd.Name(), unix.IN_MODIFY)
			bytes += int64(st.Blocks) * 512
		}
	}
	return bytes
}

// inMemory tells whether a file system of type typ keeps its files in
// memory.
func inMemory(typ int64) bool {
	switch typ {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC, unix.HUGETLBFS_MAGIC:
		return true
	}
	return false
}

// Close stops the accounting.
func (d *DiskLimit) Close() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		close(d.stop)
		<-d.done
		d.in.close()
		d.mu.Lock()
		if d.pidfd >= 0 {
			unix.Close(d.pidfd)
			d.pidfd = -1
		}
		d.mu.Unlock()
	})
}

// Pid is the host PID of the sandbox's first process (0 before it runs).
func (ct *Container) Pid() int {
	return ct.pid
}
