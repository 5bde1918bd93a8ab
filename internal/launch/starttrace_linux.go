package launch

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/boxsh/boxsh/internal/starttrace"
)

// libcontainerStages are the messages of libcontainer's debug log that mark a
// stage of a sandbox's start, and the stage each marks.
//
// The messages are libcontainer's own and its init's. The init's are forwarded
// over the log pipe as they are written, so the launcher sees each mark at once.
var libcontainerStages = []struct{ msg, stage string }{
	{"runc exeseal: using /proc/self/exe clone", "lc.cloned"},
	{"skipping binary cloning", "lc.cloned"},
	{"=> nsexec container setup", "lc.nsexec"},
	{"booting up go runtime", "lc.namespaces"},
	{"child process in init()", "lc.init-go"},
	{"read sync type:procHooks", "lc.mounts"},
	{"read sync type:procReady", "lc.rootfs-done"},
	{"init: closing the pipe to signal completion", "lc.seccomp"},
	{"sync pipe closed", "lc.init-done"},
}

// stageHook is a logrus hook that marks the stages of libcontainerStages
// (each once per hook).
type stageHook struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *stageHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *stageHook) Fire(e *logrus.Entry) error {
	for _, s := range libcontainerStages {
		if !strings.Contains(e.Message, s.msg) {
			continue
		}
		h.mu.Lock()
		first := !h.seen[s.stage]
		h.seen[s.stage] = true
		h.mu.Unlock()
		if first {
			starttrace.Mark(s.stage)
		}
		return nil
	}
	return nil
}

var traceHookOnce sync.Once

// traceLibcontainer returns the log level to give libcontainer's init process,
// with BOXSH_TRACE_START set; else it returns "".
//
// It turns libcontainer's debug log on, to mark the stages of the start from
// it. The log is discarded unless debug is set (the front logs at debug
// level).
func traceLibcontainer(debug bool) string {
	if !starttrace.Enabled() {
		return ""
	}
	traceHookOnce.Do(func() {
		logrus.AddHook(&stageHook{seen: map[string]bool{}})
	})
	if !debug {
		logrus.SetOutput(io.Discard)
	}
	logrus.SetLevel(logrus.DebugLevel)
	return strconv.Itoa(int(logrus.DebugLevel))
}
