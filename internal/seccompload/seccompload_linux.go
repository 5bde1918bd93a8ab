package seccompload

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Path is where the front puts the program in the sandbox's root (which
// is read-only in the sandbox), and EnvVar the variable, set to Path in
// boxsh-init's environment, that tells boxsh-init to load it.
const (
	Path   = "/.boxsh/seccomp.bpf"
	EnvVar = "BOXSH_SECCOMP_PROGRAM"
)

// Flags are those boxsh-init loads the program with: libcontainer's
// (SPEC_ALLOW, see runtime.startContainer), and TSYNC, as boxsh-init
// already runs several threads, which must all be filtered (libcontainer
// loads the filter before the execve that leaves one thread).
const Flags = unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW

// maxInstructions is the kernel's BPF_MAXINSNS.
const maxInstructions = 4096

// Valid tells whether prog has the shape of a BPF program: whole
// instructions of 8 bytes, at least one, at most the kernel's limit.
func Valid(prog []byte) bool {
	return len(prog) > 0 && len(prog)%8 == 0 && len(prog)/8 <= maxInstructions
}

// LoadFromEnv loads the program the environment names (EnvVar), if it
// names one, and takes the variable out of the environment, so that the
// processes started afterwards do not see it. It fails when the program
// cannot be read or loaded: the caller must then not go on, unfiltered.
func LoadFromEnv() error {
	p, ok := os.LookupEnv(EnvVar)
	if !ok {
		return nil
	}
	if err := os.Unsetenv(EnvVar); err != nil {
		return err
	}
	prog, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("load seccomp program: %w", err)
	}
	return Load(prog)
}

// Load sets no_new_privs (as libcontainer has already done for the
// sandbox's process) and loads prog into every thread of the process with
// Flags. A process started afterwards inherits the filter.
func Load(prog []byte) error {
	if !Valid(prog) {
		return fmt.Errorf("load seccomp program: %d bytes is no BPF program", len(prog))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("load seccomp program: no_new_privs: %w", err)
	}
	filter := unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(&prog[0])), len(prog)/8)
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, Flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	runtime.KeepAlive(&fprog)
	if errno != 0 {
		return fmt.Errorf("load seccomp program: %w", errno)
	}
	if r != 0 {
		// TSYNC: thread r could not be synchronised.
		return errors.New("load seccomp program: a thread could not take the filter")
	}
	return nil
}
