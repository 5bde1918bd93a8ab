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

	"github.com/boxsh/boxsh/internal/usage"
)

// DiskLimit bounds the space a sandbox's writable layer (the upper
// directory of its copy-on-write bind, on the host) takes, without quotas,
// which a rootless sandbox cannot have. It accounts the layer by walking
// it (the blocks of every entry, a file of several links once), again at
// each inotify event of any directory in it and every few seconds
// besides, and acts on the sandbox's processes from outside:
//
//   - every process of the sandbox runs with RLIMIT_FSIZE at most the
//     limit (soft and hard): no one file grows past it;
//   - once the layer holds more than the limit, the soft RLIMIT_FSIZE of
//     every process is set to 0 (writes that grow a regular file fail with
//     EFBIG, or SIGXFSZ for a program that does not ignore it), and back
//     to the limit once the layer is under it again;
//   - a sandbox whose layer still grows past the limit and Slack (a
//     program that raised its soft limit back, or grew the layer by other
//     means: directories, fallocate, shared mappings) is killed: its
//     boxsh-init, with its PID namespace.
//
// The kernel does not refuse the write that crosses the limit: the
// overshoot is what the sandbox writes before the walk sees it.
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
	walked bool
	full   bool
	killed int
}

// DiskSlack is how far past its limit a sandbox's layer may grow before
// the sandbox is killed: an eighth of the limit, at least 8 MiB and at
// most 256 MiB.
func DiskSlack(limit int64) int64 {
	return min(max(limit/8, 8<<20), 256<<20)
}

// Timing of the walks: at least diskGap apart (or twice the last walk's
// time), and at least every diskPeriod (or 20 times the last walk's time).
const (
	diskGap    = 20 * time.Millisecond
	diskPeriod = 2 * time.Second
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

// loop walks the layer at each event, at most every diskGap, and every
// diskPeriod without one.
func (d *DiskLimit) loop() {
	defer close(d.done)
	gap, period := diskGap, diskPeriod
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-d.kick:
		case <-t.C:
		}
		t0 := time.Now()
		d.update(d.walk())
		took := time.Since(t0)
		gap, period = max(diskGap, 2*took), max(diskPeriod, 20*took)
		t.Reset(period)
		select {
		case <-d.stop:
			return
		case <-time.After(gap):
		}
	}
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

// Started hands the limit a new boxsh-init of the sandbox (its host PID),
// before any call reaches it: its processes get the file size limits of
// the layer's state.
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
	return d.sweepLocked()
}

// update takes a walk's figure and acts on it.
func (d *DiskLimit) update(used int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	grew := !d.walked || used > d.used
	d.used, d.walked = used, true
	switch {
	case used > d.limit && !d.full:
		d.full = true
		d.log.Warn("disk limit reached: files can no longer grow", "dir", d.dir, "used", used, "limit", d.limit)
		_ = d.sweepLocked()
	case used <= d.limit && d.full:
		d.full = false
		d.log.Info("back under the disk limit", "dir", d.dir, "used", used, "limit", d.limit)
		_ = d.sweepLocked()
	}
	if used > d.limit+d.slack && grew && d.pidfd >= 0 {
		d.killed++
		d.log.Warn("disk limit and its slack exceeded: stopping the sandbox", "dir", d.dir, "used", used, "limit", d.limit, "slack", d.slack)
		_ = unix.PidfdSendSignal(d.pidfd, unix.SIGKILL, nil, 0)
	}
}

// sweepLocked sets RLIMIT_FSIZE of every process of the sandbox: hard
// at most the limit, soft the limit (0 when full). It goes over the
// process tree until a pass changes nothing, so that a process forked
// during a pass is set in the next.
func (d *DiskLimit) sweepLocked() error {
	if d.pidfd < 0 {
		return nil
	}
	soft := uint64(d.limit)
	if d.full {
		soft = 0
	}
	var err error
	for range 20 {
		changed := 0
		for _, pid := range descendants(d.pid) {
			var old unix.Rlimit
			if unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old) != nil {
				continue // gone
			}
			want := unix.Rlimit{Max: min(old.Max, uint64(d.limit))}
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

// walk sums the blocks of the layer and watches each of its directories
// (each watched before it is read: a change after the read is an event).
// A tree deeper than diskMaxDepth counts as past the limit and slack.
func (d *DiskLimit) walk() int64 {
	w := usage.DiskWalk{MaxDepth: diskMaxDepth, Visit: func(fd int) {
		_, _ = d.in.add("/proc/self/fd/"+strconv.Itoa(fd), unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_ATTRIB|unix.IN_ONLYDIR)
	}}
	bytes, deep, err := w.Size(d.dir)
	if err != nil {
		return 0 // gone: nothing on the disk
	}
	if deep {
		return max(bytes, d.limit+d.slack+1)
	}
	return bytes
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
	if ct.proc == nil {
		return 0
	}
	pid, _ := ct.proc.Pid()
	return pid
}
