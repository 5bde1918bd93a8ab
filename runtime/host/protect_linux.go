package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/runtime/plan"
)

// protectionWatch notices host changes that undo the protection of protected
// paths.
//
// The protections are read-only binds over the host's directory entries, or
// placeholders for missing ones. When the host renames another file over such
// an entry or removes it (an editor saving, a cleanup), the kernel detaches
// the mount in the sandbox. The path there then becomes the writable file of
// the wr bind.
//
// The sandbox itself cannot do this: a mount point cannot be renamed or
// removed, and the directories above it up to the writable bind are pinned
// (see plan.HostPath.Pins). So the runtime watches, with inotify, the
// directories that hold the protected entries and the pinned ones, for a
// rename, removal or creation of those names. The events are read as the
// kernel delivers them (inotifyWatcher), and the first that undoes a
// protection is handed to onLost at once.
type protectionWatch struct {
	in *inotifyWatcher
	// names, dirs and expected are used by the handler alone.
	names map[int32]map[string]string // watch → entry name → protected path
	dirs  map[int32]string            // watch → directory
	// expected are the placeholders the runtime is yet to make: their
	// creation is no change.
	expected map[string]bool
	onLost   func(path string)

	mu   sync.Mutex
	lost string
}

// watchMask are the events that can undo a protection.
const watchMask = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CREATE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watchProtection starts watching the entries of protect; onLost (if not
// nil) is called once, from the watcher's goroutine, with the protected
// path whose protection a change undid. It returns nil when there is
// nothing to watch.
func watchProtection(protect []plan.HostPath, onLost func(path string)) (*protectionWatch, error) {
	if len(protect) == 0 {
		return nil, nil
	}
	in, err := newInotifyWatcher()
	if err != nil {
		return nil, err
	}
	w := &protectionWatch{in: in, names: map[int32]map[string]string{}, dirs: map[int32]string{},
		expected: map[string]bool{}, onLost: onLost}
	add := func(dir, name, path string) error {
		wd, err := in.add(dir, watchMask)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%s (above protected %s) changed on the host while the sandbox started, start again: %w", dir, path, err)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if w.names[wd] == nil {
			w.names[wd] = map[string]string{}
		}
		w.names[wd][name] = path
		w.dirs[wd] = dir
		return nil
	}
	for _, hp := range protect {
		if hp.Missing {
			w.expected[hp.Path] = true
		}
		// The entry itself and the pinned directories above it.
		for _, p := range append([]string{hp.Path}, hp.Pins...) {
			if err := add(filepath.Dir(p), filepath.Base(p), hp.Path); err != nil {
				in.close()
				return nil, err
			}
		}
	}
	if err := in.start(w.handle); err != nil {
		in.close()
		return nil, err
	}
	return w, nil
}

// handle notes an event that undoes a protection.
func (w *protectionWatch) handle(ev inotifyEvent) {
	var lost string
	switch {
	case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_Q_OVERFLOW) != 0:
		lost = w.dirs[ev.Wd]
		if lost == "" {
			lost = "(inotify queue overflow)"
		}
	case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_CREATE) != 0:
		p, ok := w.names[ev.Wd][ev.Name]
		if !ok {
			return
		}
		if ev.Mask&unix.IN_CREATE != 0 && w.expected[p] && filepath.Join(w.dirs[ev.Wd], ev.Name) == p {
			delete(w.expected, p) // the runtime making the placeholder
			return
		}
		lost = p
	default:
		return
	}
	w.mu.Lock()
	first := w.lost == ""
	if first {
		w.lost = lost
	}
	w.mu.Unlock()
	if first && w.onLost != nil {
		w.onLost(lost)
	}
}

// check handles the events queued now and returns the protected path
// whose protection a change may have undone, or "" while none has.
func (w *protectionWatch) check() string {
	if w == nil {
		return ""
	}
	w.in.drain()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// close stops watching.
func (w *protectionWatch) close() {
	if w != nil {
		w.in.close()
	}
}
