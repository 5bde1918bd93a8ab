package host

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/launch"
	"github.com/boxsh/boxsh/internal/starttrace"
)

// Launcher is a boxsh-launch started ahead of its sandbox (see
// ContainerConfig.Launcher).
type Launcher struct {
	l    *launch.Launcher
	err  error
	once sync.Once
}

// StartLauncher starts the launcher at path (see FindLauncher), for a sandbox
// that StartContainer starts later. An error to start it is StartContainer's
// to return.
func StartLauncher(path string, log hclog.Logger) *Launcher {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if path == "" {
		return &Launcher{err: fmt.Errorf("start sandbox: no %s: ContainerConfig.LauncherPath is empty", LauncherName)}
	}
	l, err := launch.Start(path, &launcherLog{log: log})
	if err != nil {
		err = fmt.Errorf("start sandbox: %w (%s is installed beside boxsh and boxsh-init)", err, LauncherName)
	}
	return &Launcher{l: l, err: err}
}

// ShareLauncherCopies has the launchers this process starts run from one
// sealed copy of the launcher (see launch.ShareCopies): for servers, which
// start many sandboxes.
func ShareLauncherCopies() { launch.ShareCopies() }

// wait hands the launcher over to its sandbox, once.
func (lr *Launcher) wait() (*launch.Launcher, error) {
	l, err := (*launch.Launcher)(nil), fmt.Errorf("start sandbox: the launcher was used or closed")
	lr.once.Do(func() { l, err = lr.l, lr.err })
	return l, err
}

// Close stops the launcher if no sandbox took it.
func (lr *Launcher) Close() {
	if lr == nil {
		return
	}
	lr.once.Do(func() {
		if lr.l != nil {
			lr.l.Destroy()
		}
	})
}

// launcherLog takes the launcher's stderr: the marks of a traced start go to
// the front's stderr as they are, the rest (libcontainer's log, the
// launcher's errors) to the front's log.
type launcherLog struct {
	log  hclog.Logger
	mu   sync.Mutex
	line []byte
}

func (w *launcherLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := string(w.line[:i])
		w.line = w.line[i+1:]
		switch {
		case strings.HasPrefix(line, starttrace.Prefix):
			_, _ = os.Stderr.WriteString(line + "\n")
		case strings.Contains(line, "level=debug"):
			w.log.Debug("libcontainer", "log", line)
		case line != "":
			w.log.Warn("sandbox launcher", "log", line)
		}
	}
	return len(p), nil
}
