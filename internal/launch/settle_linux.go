package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/exeseal"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// DiskFD is the launcher's descriptor of the executable its sealed copy was
// made from, given by whoever made the copy (the front, or RunSealed).
const DiskFD = 4

// settleAfter is how long the sandbox's first process runs, with no message
// from the front, before the launcher settles (see settle).
var settleAfter = time.Second

// settledEnv carries a settled launcher's sandbox (a settledState as JSON)
// across its execve.
const settledEnv = "_BOXSH_LAUNCH_SETTLED"

// settledState is what a launcher executed again needs of its sandbox.
type settledState struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Root     string `json:"root"`
	ID       string `json:"id"`
	Pid      int    `json:"pid"`
	Debug    bool   `json:"debug,omitempty"`
}

// settle executes the launcher again from its binary on disk (DiskFD), keeping
// its socket and its child, the sandbox's init, so that the sealed copy it
// ran from is freed (6 MB of memory held for the sandbox's life). It returns
// only if it does not: the launcher runs from no sealed copy, the sandbox has
// exited, or the execve failed.
//
// The copy is needed only until the init has executed boxsh-init: then no
// process of the sandbox runs the launcher's binary, and the launcher's own
// process is out of the sandbox's reach.
//
// Call it on the main thread, between two messages. The init's parent-death
// signal is sent when the thread that started it ends, and an execve ends
// every thread but the caller's; the launcher's main goroutine, locked to the
// main thread, started it. The waiter (watch) reaps the init only while it
// holds s.reap, so that the init's exit is neither lost nor told twice.
func (s *server) settle() {
	if s.proc == nil || s.pid <= 0 || !exeseal.IsSelfExeCloned() {
		return
	}
	debug := logrus.IsLevelEnabled(logrus.DebugLevel)
	// The file copied, unchanged since: an executable replaced by another
	// build, or written to, is not executed (the launcher stays on its
	// copy).
	if stamp, ok := stampOf(DiskFD); !ok || stamp != os.Getenv(sealedEnv) {
		logrus.Debugf("boxsh-launch stays on its sealed copy: the executable it was copied from changed or is not known (%q, copied as %q)", stamp, os.Getenv(sealedEnv))
		return
	}
	state, err := json.Marshal(settledState{Protocol: ProtocolVersion, Version: s.version, Root: s.root, ID: s.id, Pid: s.pid, Debug: debug})
	if err != nil {
		return
	}
	env := []string{settledEnv + "=" + string(state)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, sealedEnv+"=") && !strings.HasPrefix(kv, settledEnv+"=") {
			env = append(env, kv)
		}
	}
	s.reap.Lock()
	defer s.reap.Unlock()
	select {
	case <-s.exited:
		return
	default:
	}
	s.conn.mu.Lock() // no message half written
	defer s.conn.mu.Unlock()
	if _, err := unix.FcntlInt(ConnFD, unix.F_SETFD, 0); err != nil {
		return
	}
	err = unix.Exec("/proc/self/fd/"+strconv.Itoa(DiskFD), os.Args, env)
	logrus.Debugf("boxsh-launch stays on its sealed copy: execute its executable again: %v", err)
}

// resume takes the sandbox over in a launcher executed again by settle, from
// the state in its environment. It reports false if the launcher was not.
func (s *server) resume() (bool, error) {
	v, ok := os.LookupEnv(settledEnv)
	if !ok {
		return false, nil
	}
	os.Unsetenv(settledEnv)
	unix.Close(DiskFD)
	var st settledState
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return true, fmt.Errorf("executed again without its sandbox's state: %w", err)
	}
	if st.Protocol != ProtocolVersion || st.Version != s.version {
		return true, fmt.Errorf("executed again from %s, now build %s of protocol %d, not %s of protocol %d: its binary changed while the sandbox ran", os.Args[0], s.version, ProtocolVersion, st.Version, st.Protocol)
	}
	p, err := os.FindProcess(st.Pid)
	if err != nil {
		return true, fmt.Errorf("executed again: the sandbox's init %d: %w", st.Pid, err)
	}
	c, err := libcontainer.Load(st.Root, st.ID)
	if err != nil {
		_ = p.Kill()
		return true, fmt.Errorf("executed again: load the sandbox: %w", err)
	}
	s.root, s.id, s.pid, s.c, s.proc = st.Root, st.ID, st.Pid, c, p
	s.watch()
	if st.Debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	logrus.Debugf("boxsh-launch settled: executed again from its executable, off its sealed copy, sandbox init %d", st.Pid)
	n, err := unmapProgram()
	logrus.Debugf("boxsh-launch unmapped %d bytes of its program (%v)", n, err)
	return true, nil
}

// unmapProgram drops the launcher's mappings of its program's read-only
// pages (code and constants), which its start faulted in and which a
// settled launcher, idle until the sandbox ends, scarcely needs: they stay
// in the page cache, reclaimable, and are mapped again as they are used. It
// returns the size of the mappings it dropped.
func unmapProgram() (int, error) {
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &self); err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(self.Dev), unix.Minor(self.Dev))
	ino := strconv.FormatUint(self.Ino, 10)
	size := 0
	for _, line := range strings.Split(string(maps), "\n") {
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || f[3] != dev || f[4] != ino || strings.ContainsRune(f[1], 'w') {
			continue
		}
		start, end, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(start, 16, 64)
		hi, err2 := strconv.ParseUint(end, 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		// A private mapping of a file that is never written: MADV_DONTNEED
		// only unmaps, and a later access reads the page cache again.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), unix.MADV_DONTNEED); e != 0 {
			return size, fmt.Errorf("madvise %s: %w", f[0], e)
		}
		size += int(hi - lo)
	}
	return size, nil
}
