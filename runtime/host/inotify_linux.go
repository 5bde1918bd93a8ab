package host

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyEvent is one event of an inotify descriptor.
type inotifyEvent struct {
	Wd   int32
	Mask uint32
	Name string // the entry in the watched directory; "" for itself
}

// inotifyWatcher is an inotify descriptor whose events a goroutine reads
// through the Go runtime's poller.
//
// The goroutine sleeps until the kernel delivers an event, and hands it on at
// once. So a watch costs no wake-up while nothing changes, and reacts within
// the kernel's delivery. Both guards of a running sandbox use it
// (protectionWatch, cowGuard).
type inotifyWatcher struct {
	// mu serialises the reading of events and their handling, between
	// the goroutine and drain, and guards fd.
	mu     sync.Mutex
	fd     int      // -1 once closed
	file   *os.File // fd, in the poller
	handle func(inotifyEvent)
	done   chan struct{} // closed when the goroutine returns
	once   sync.Once
	// wakeups counts the goroutine's reads: one at the start, then one per
	// delivery of events, and none while nothing changes.
	wakeups atomic.Int64
}

// newInotifyWatcher makes an inotify descriptor; add watches, then start.
func newInotifyWatcher() (*inotifyWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// A non-blocking descriptor goes into the runtime's poller.
	return &inotifyWatcher{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{})}, nil
}

// add watches path for the events of mask and returns the watch.
func (w *inotifyWatcher) add(path string, mask uint32) (int32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, err := unix.InotifyAddWatch(w.fd, path, mask)
	return int32(wd), err
}

// start hands every event, from now until close, to handle, which runs
// with the watcher locked (it must not call the watcher).
func (w *inotifyWatcher) start(handle func(inotifyEvent)) error {
	rc, err := w.file.SyscallConn()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.handle = handle
	w.mu.Unlock()
	go func() {
		defer close(w.done)
		// The callback reads what is queued; returning false parks the
		// goroutine in the poller until the descriptor is readable again.
		// The read ends with an error once close has closed the file.
		_ = rc.Read(func(uintptr) bool {
			w.wakeups.Add(1)
			return w.drain()
		})
	}()
	return nil
}

// drain reads and handles the events queued now, without waiting, and
// reports whether the watcher is closed. A caller that must see every
// change made before it asks (ProtectionLost) calls it itself.
func (w *inotifyWatcher) drain() (closed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var buf [64 * (unix.SizeofInotifyEvent + unix.NAME_MAX + 1)]byte
	for w.fd >= 0 {
		n, err := unix.Read(w.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return false // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			if w.handle != nil {
				w.handle(inotifyEvent{Wd: ev.Wd, Mask: ev.Mask, Name: string(name)})
			}
		}
	}
	return true
}

// close stops the watcher: no event is handled once it returns.
func (w *inotifyWatcher) close() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		w.mu.Lock()
		w.fd = -1
		started := w.handle != nil
		w.mu.Unlock()
		w.file.Close() // wakes the goroutine, whose read then fails
		if started {
			<-w.done
		}
	})
}
