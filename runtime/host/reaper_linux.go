package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/runtime/plan"
)

// ReaperEnv marks the front re-executed as its reaper (see StartReaper),
// with the value "1"; cmd/boxsh's reaper_linux.c reads it.
const ReaperEnv = "_BOXSH_REAPER"

// The reaper cleans up after the sandboxes of a front that died without
// doing so.
//
// Such a front was killed (SIGKILL), alone or with its whole process tree.
//
// It removes the placeholders of the protected paths that the front made on
// the host (the empty .claude, .gitmodules, ... mount points). It kills what
// is left of each sandbox and removes its state directory. It does so at once,
// rather than at the next start of a sandbox (sweepStale).
//
// The reaper is the front's binary again. It is detached from the front
// before any placeholder is made:
//
//   - It runs in a session of its own, so a kill of the front's process group
//     misses it.
//   - It is the child of a first stage that exits at once. So the system's
//     init adopts it, and it is no longer in the front's process tree.
//     (StartReaper must run before the front becomes a child subreaper, which
//     would adopt it instead.)
//   - Both stages are one exec of the front. A C constructor forks before the
//     Go runtime starts (cmd/boxsh's reaper_linux.c), and the Go runtime
//     starts only if there is something to clean up.
//
// The reaper holds the read end of a pipe whose write end only the front has,
// and reads from it the state directory of each sandbox the front starts. The
// kernel closes the pipe when the front dies, however it dies. The reaper then
// takes each directory's lock, free once the front is gone, and cleans up what
// the directory still lists. A front that ended normally has removed its
// directories, and the reaper has nothing to do.
//
// It removes only the placeholders recorded in a state directory (those its
// front made), and only while they are still empty and no other sandbox holds
// them (removePlaceholders). Nothing else of the host is touched. It costs one
// idle process for the front's life.
var reaper struct {
	once     sync.Once
	lifeline *os.File      // the pipe's write end, held until the front exits
	ready    chan struct{} // closed once the first stage has exited
	err      error         // valid once ready is closed
}

// StartReaper starts the front's reaper, once, and waits until it runs
// detached. Call it before the front becomes a child subreaper.
func StartReaper() error {
	launchReaper()
	<-reaper.ready
	return reaper.err
}

// launchReaper starts the reaper's first stage, once, without waiting.
func launchReaper() {
	reaper.once.Do(func() {
		reaper.ready = make(chan struct{})
		r, w, err := os.Pipe()
		if err != nil {
			reaper.err = fmt.Errorf("reaper: %w", err)
			close(reaper.ready)
			return
		}
		defer r.Close()
		cmd := &exec.Cmd{
			Path:        "/proc/self/exe",
			Args:        []string{"boxsh-reaper"},
			Env:         []string{ReaperEnv + "=1"},
			Dir:         "/",
			ExtraFiles:  []*os.File{r},
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
		if err := cmd.Start(); err != nil {
			w.Close()
			reaper.err = fmt.Errorf("reaper: %w", err)
			close(reaper.ready)
			return
		}
		reaper.lifeline = w
		go func() {
			if err := cmd.Wait(); err != nil {
				reaper.err = fmt.Errorf("reaper: %w", err)
			}
			close(reaper.ready)
		}()
	})
}

// reapAfter tells the reaper (starting it if need be) to clean up after
// the sandbox whose state directory is dir if the front dies. The reaper
// need not run yet: the pipe keeps what it was told.
func reapAfter(dir string) error {
	launchReaper()
	if reaper.lifeline == nil {
		<-reaper.ready
		return reaper.err
	}
	// One write of less than PIPE_BUF bytes: whole, or not at all.
	if _, err := reaper.lifeline.WriteString(dir + "\n"); err != nil {
		return fmt.Errorf("reaper: %w", err)
	}
	return nil
}

// reaperReady waits until the reaper runs detached (a kill of the
// front's process tree no longer reaches it).
func reaperReady() error {
	launchReaper()
	<-reaper.ready
	return reaper.err
}

// RunReaper is the reaper's Go stage. It does not return.
//
// The reaper's C stage (cmd/boxsh's reaper_linux.c) starts it once the front
// has gone, if a state directory the front named is still there. Descriptor 3
// then lists those directories, one a line.
func RunReaper() {
	var dirs []string
	sc := bufio.NewScanner(os.NewFile(3, "dirs"))
	for sc.Scan() {
		if d := sc.Text(); filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		reapDir(d)
	}
	os.Exit(0)
}

// reapDir cleans up after the sandbox of state directory dir once its
// front has released the directory's lock, unless the front removed the
// directory itself.
func reapDir(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return // removed: the front cleaned up
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, lockName)); err != nil {
		return // removed while we waited: the front cleaned up
	}
	cleanDeadSandbox(dir, hclog.NewNullLogger())
}

// cleanDeadSandbox cleans up after the sandbox of state directory dir, whose
// lock the caller holds.
//
// It kills what still runs of the sandbox, and removes its placeholders and
// the directory.
func cleanDeadSandbox(dir string, log hclog.Logger) {
	log.Debug("removing the state of a dead sandbox", "dir", dir)
	// Its processes should have died with its front; make sure before its
	// placeholders go, which would unprotect them.
	killSandbox(dir)
	var protect []plan.HostPath
	if b, err := os.ReadFile(filepath.Join(dir, protectName)); err == nil && json.Unmarshal(b, &protect) == nil {
		removePlaceholders(protect)
	}
	os.RemoveAll(dir)
}
