package host

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	"github.com/boxsh/boxsh/runtime/plan"
	"golang.org/x/sys/unix"
)

// newSyscalls are the numbers of the filter's system calls that an older
// libseccomp may not know.
//
// They come from the numbering all architectures share since Linux 4.20. Each
// has arguments that make the kernel fail at once (a bad descriptor, a null
// pointer, size 0) if it has the call at all.
var newSyscalls = map[string]struct {
	nr   uintptr
	args [4]uintptr
}{
	"io_uring_setup":    {425, [4]uintptr{0, 0}},
	"io_uring_enter":    {426, [4]uintptr{^uintptr(0)}},
	"io_uring_register": {427, [4]uintptr{^uintptr(0)}},
	"clone3":            {435, [4]uintptr{0, 0}},
	"openat2":           {437, [4]uintptr{^uintptr(0), 0, 0, 0}},
	"pidfd_getfd":       {438, [4]uintptr{^uintptr(0), ^uintptr(0), 0}},
	"fchmodat2":         {452, [4]uintptr{^uintptr(0), 0, 0, ^uintptr(0)}},
}

// seccompGaps returns the system calls of sc that libseccomp does not know
// (known reports whether it does) but the kernel runs (kernelHas).
//
// runc leaves the rules of unknown names out of the filter, so the sandbox
// would run those calls unfiltered.
func seccompGaps(names []string, known func(string) bool, kernelHas func(name string) bool) []string {
	var gaps []string
	for _, name := range names {
		if !known(name) && kernelHas(name) && !slices.Contains(gaps, name) {
			gaps = append(gaps, name)
		}
	}
	return gaps
}

// kernelHasSyscall reports whether the kernel runs the system call name of
// newSyscalls (any answer but ENOSYS). Names not there are old enough
// that every libseccomp knows them.
func kernelHasSyscall(name string) bool {
	c, ok := newSyscalls[name]
	if !ok || strings.HasPrefix(goruntime.GOARCH, "mips") { // MIPS numbers differ
		return false
	}
	_, _, errno := unix.Syscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], 0, 0)
	return errno != unix.ENOSYS
}

var seccompCheck struct {
	once sync.Once
	err  error
}

// checkSeccompCovered fails when the installed libseccomp cannot express the
// sandbox's filter on this kernel (see seccompGaps).
//
// known is nil in a build without libseccomp, which cannot start sandboxes
// anyway. The answer is computed once per process.
func checkSeccompCovered(known func(string) bool) error {
	if known == nil {
		return nil
	}
	seccompCheck.once.Do(func() {
		var names []string
		for _, r := range plan.DefaultSeccomp().Syscalls {
			names = append(names, r.Names...)
		}
		if gaps := seccompGaps(names, known, kernelHasSyscall); len(gaps) > 0 {
			seccompCheck.err = fmt.Errorf("--sandbox: the installed libseccomp does not know %s, which this kernel has, so the sandbox could not filter it; install libseccomp 2.5.5 or later (Debian 12: 2.5.4-1+deb12u1)", strings.Join(gaps, ", "))
		}
	})
	return seccompCheck.err
}
