package host

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// walkGuard tells whether the directories a walk looked through changed
// meanwhile in a way that could hide an entry from it.
//
// Such a change is a directory (or a .git, file or directory) made, removed or
// renamed in one of them, or one of them moved away. Each directory is watched
// before it is read, so a change after the read is an event.
type walkGuard struct {
	w       *inotifyWatcher
	changed atomic.Bool
}

// newWalkGuard starts a guard; nil when inotify is not to be had (the
// walk is then unguarded, as it is on macOS).
func newWalkGuard() *walkGuard {
	w, err := newInotifyWatcher()
	if err != nil {
		return nil
	}
	g := &walkGuard{w: w}
	if err := w.start(g.event); err != nil {
		w.close()
		return nil
	}
	return g
}

// event takes one event of the watched directories.
func (g *walkGuard) event(ev inotifyEvent) {
	switch {
	case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_Q_OVERFLOW) != 0:
		g.changed.Store(true)
	case ev.Mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 &&
		(ev.Mask&unix.IN_ISDIR != 0 || ev.Name == ".git"):
		g.changed.Store(true)
	}
}

// watch watches dir, before the walk reads it (a directory past the
// user's inotify watches is read unwatched).
func (g *walkGuard) watch(dir string) {
	if g == nil {
		return
	}
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW
	_, _ = g.w.add(dir, mask)
}

// moved reports whether a watched directory changed since it was
// watched (every event queued until now taken), and ends the guard.
func (g *walkGuard) moved() bool {
	if g == nil {
		return false
	}
	g.w.drain()
	g.w.close()
	return g.changed.Load()
}
