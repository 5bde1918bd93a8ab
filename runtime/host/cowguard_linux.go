package host

import (
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/policy"
)

// cowGuard keeps the DST of each cow bind closed to the host's other users
// while a sandbox runs.
//
// DST is the overlay's upper layer, so a command's chmod of the root of its
// cow mount (`chmod 777 .`) changes DST's own mode on the host. Once others
// may enter DST, any directory the command opened up inside lets them plant
// files there, which a later apply would carry into SRC.
//
// prepareCowDirs makes DST 0700-like, with no group or other bits. The guard
// watches DST with inotify. It takes those bits away again at once when they
// come back, and once more when the sandbox ends.
//
// This is a repair, not a kernel rule: between the command's chmod and the
// guard's, another user can enter DST. CowForeignFiles finds what such a user
// could have left, for apply to refuse.
type cowGuard struct {
	in   *inotifyWatcher
	dsts map[int32]*os.File // watch -> DST (a directory opened to read)
	log  hclog.Logger
	once sync.Once
}

// guardCowDsts starts a cowGuard for the cow binds among binds; nil when
// there are none.
func guardCowDsts(binds []policy.Bind, log hclog.Logger) (*cowGuard, error) {
	var dsts []string
	for _, b := range binds {
		if b.Mode == policy.CopyOnWrite {
			dsts = append(dsts, b.Dst)
		}
	}
	if len(dsts) == 0 {
		return nil, nil
	}
	in, err := newInotifyWatcher()
	if err != nil {
		return nil, err
	}
	g := &cowGuard{in: in, dsts: map[int32]*os.File{}, log: log}
	fail := func(err error) (*cowGuard, error) {
		g.close()
		return nil, err
	}
	for _, dst := range dsts {
		f, err := os.OpenFile(dst, os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return fail(fmt.Errorf("cow DST %s: %w", dst, err))
		}
		wd, err := in.add(dst, unix.IN_ATTRIB|unix.IN_ONLYDIR)
		if err != nil {
			f.Close()
			return fail(fmt.Errorf("cow DST %s: watch: %w", dst, err))
		}
		if g.dsts[wd] != nil { // the same directory as another DST
			f.Close()
			continue
		}
		g.dsts[wd] = f
		if err := closeToOthers(f); err != nil {
			return fail(fmt.Errorf("cow DST %s: %w", dst, err))
		}
	}
	if err := in.start(g.handle); err != nil {
		return fail(fmt.Errorf("cow DST watch: %w", err))
	}
	return g, nil
}

// handle restores the mode of a DST at each change of its attributes.
func (g *cowGuard) handle(ev inotifyEvent) {
	f := g.dsts[ev.Wd]
	if f == nil || ev.Name != "" { // an entry inside DST, not DST itself
		return
	}
	if err := closeToOthers(f); err != nil {
		g.log.Warn("cannot close the cow DST to other users", "dst", f.Name(), "error", err)
	}
}

// close stops the guard, closes every DST to others one last time and
// releases the descriptors.
func (g *cowGuard) close() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		g.in.close()
		for _, f := range g.dsts {
			_ = closeToOthers(f)
			f.Close()
		}
	})
}

// closeToOthers takes the group and other permission bits off directory f.
func closeToOthers(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&0o077 == 0 {
		return nil
	}
	if err := unix.Fchmod(int(f.Fd()), st.Mode&0o7700); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}
