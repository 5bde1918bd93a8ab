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
	// ready is closed once the launcher is started, or failed to.
	ready chan struct{}
	l     *launch.Launcher
	err   error
	once  sync.Once
}

// PrepareLauncher starts making the sealed copy that the next StartLauncher
// runs the launcher from (see launch.Prepare), for a front that starts one
// sandbox and knows it is wanted. It does nothing if no launcher is found:
// StartLauncher then fails.
func PrepareLauncher() {
	if path, err := FindLauncher(""); err == nil {
		launch.Prepare(path)
	}
}

// StartLauncher starts the launcher at path (see FindLauncher), for a sandbox
// that StartContainer starts later. An error to start it is StartContainer's
// to return.
//
// It returns at once: the launcher is started on the side, once the copy
// PrepareLauncher makes is ready.
func StartLauncher(path string, log hclog.Logger) *Launcher {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	lr := &Launcher{ready: make(chan struct{})}
	if path == "" {
		lr.err = fmt.Errorf("start sandbox: no %s: ContainerConfig.LauncherPath is empty", LauncherName)
		close(lr.ready)
		return lr
	}
	go func() {
		defer close(lr.ready)
		l, err := launch.Start(path, &launcherLog{log: log})
		if err != nil {
			err = fmt.Errorf("start sandbox: %w (%s is installed beside boxsh and boxsh-init)", err, LauncherName)
		}
		lr.l, lr.err = l, err
	}()
	return lr
}

// ShareLauncherCopies has the launchers at path this process starts run from
// one sealed copy of the launcher, made now on the side (see
// launch.ShareCopies): for servers, which start many sandboxes.
func ShareLauncherCopies(path string) { launch.ShareCopies(path) }

// wait hands the launcher over to its sandbox, once.
func (lr *Launcher) wait() (*launch.Launcher, error) {
	l, err := (*launch.Launcher)(nil), fmt.Errorf("start sandbox: the launcher was used or closed")
	lr.once.Do(func() {
		<-lr.ready
		l, err = lr.l, lr.err
	})
	return l, err
}

// Close stops the launcher if no sandbox took it.
func (lr *Launcher) Close() {
	if lr == nil {
		return
	}
	lr.once.Do(func() {
		<-lr.ready
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
