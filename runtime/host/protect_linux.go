package host

import (
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// protectionWatch notices host changes that undo the protection of
// protected paths. They are read-only binds over the host's directory
// entries (placeholders for missing ones); when the host renames another
// file over such an entry or removes it (an editor saving, a cleanup), the
// kernel detaches the mount in the sandbox, and the path there becomes the
// writable file of the wr bind. The sandbox itself cannot do this (a mount
// point cannot be renamed or removed, and the directories above it up to
// the writable bind are pinned, see HostPath.Pins), so the runtime
// watches, with inotify, the directories that hold the protected entries
// and the pinned ones, for a rename, removal or creation of those names.
type protectionWatch struct {
	mu    sync.Mutex
	fd    int
	names map[int32]map[string]string // watch → entry name → protected path
	dirs  map[int32]string            // watch → directory
	// expected are the placeholders the runtime is yet to make: their
	// creation is no change.
	expected map[string]bool
	lost     string
}

// watchMask are the events that can undo a protection.
const watchMask = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CREATE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watchProtection starts watching the entries of protect. It returns nil
// when there is nothing to watch.
func watchProtection(protect []HostPath) (*protectionWatch, error) {
	if len(protect) == 0 {
		return nil, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &protectionWatch{fd: fd, names: map[int32]map[string]string{}, dirs: map[int32]string{}, expected: map[string]bool{}}
	add := func(dir, name, path string) error {
		wd, err := unix.InotifyAddWatch(fd, dir, watchMask)
		if err != nil {
			return err
		}
		if w.names[int32(wd)] == nil {
			w.names[int32(wd)] = map[string]string{}
		}
		w.names[int32(wd)][name] = path
		w.dirs[int32(wd)] = dir
		return nil
	}
	for _, hp := range protect {
		if hp.Missing {
			w.expected[hp.Path] = true
		}
		// The entry itself and the pinned directories above it.
		for _, p := range append([]string{hp.Path}, hp.Pins...) {
			if err := add(filepath.Dir(p), filepath.Base(p), hp.Path); err != nil {
				w.close()
				return nil, err
			}
		}
	}
	return w, nil
}

// check reads the pending events and returns the protected path whose
// protection a change may have undone, or "" while none has.
func (w *protectionWatch) check() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var buf [4096]byte
	for w.lost == "" {
		n, err := unix.Read(w.fd, buf[:])
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(nameBytes)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			switch {
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_Q_OVERFLOW) != 0:
				w.lost = w.dirs[ev.Wd]
				if w.lost == "" {
					w.lost = "(inotify queue overflow)"
				}
			case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_CREATE) != 0:
				p, ok := w.names[ev.Wd][name]
				if !ok || w.lost != "" {
					break
				}
				if ev.Mask&unix.IN_CREATE != 0 && w.expected[p] && filepath.Join(w.dirs[ev.Wd], name) == p {
					delete(w.expected, p) // the runtime making the placeholder
					break
				}
				w.lost = p
			}
		}
	}
	return w.lost
}

// close stops watching.
func (w *protectionWatch) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}
