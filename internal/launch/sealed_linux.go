package launch

import (
	"os"
	"strconv"

	"github.com/opencontainers/runc/libcontainer/exeseal"
	"golang.org/x/sys/unix"
)

// LauncherComm is the launcher's process name.
const LauncherComm = "boxsh-launch"

// sealedEnv marks the launcher executed again from its sealed copy, so that
// it does not try twice.
const sealedEnv = "_BOXSH_LAUNCH_SEALED"

// RunSealed executes the launcher again from a sealed memfd copy of itself,
// unless it already runs from one; it returns only if it does, or if the copy
// cannot be made or run (libcontainer then copies the launcher itself).
//
// libcontainer runs the container's init from a sealed copy of its own
// executable, so that the sandbox cannot reach the host's binary through
// /proc (CVE-2019-5736), and makes no copy when the executable already is
// one. Made here, at the launcher's start, the copy is made while the front
// still reads the policy and walks the binds, rather than after the front has
// handed the sandbox over.
func RunSealed() {
	if os.Getenv(sealedEnv) != "" {
		// Executed as /proc/self/fd/N: the name is the launcher's again,
		// for ps and for the tests that look for it.
		_ = os.WriteFile("/proc/self/comm", []byte(LauncherComm), 0)
		return
	}
	if exeseal.IsSelfExeCloned() {
		return
	}
	sealed := sealedCopy("/proc/self/exe")
	if sealed == nil {
		return
	}
	env := append(os.Environ(), sealedEnv+"=1")
	_ = unix.Exec("/proc/self/fd/"+strconv.Itoa(int(sealed.Fd())), os.Args, env)
	sealed.Close()
}

// sealedCopy returns a sealed memfd copy of the executable at path, or nil if
// none can be made (libcontainer trusts no other kind of copy).
func sealedCopy(path string) *os.File {
	src, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil
	}
	sealed, err := exeseal.CloneBinary(src, fi.Size(), path, os.TempDir())
	if err != nil {
		return nil
	}
	if !exeseal.IsCloned(sealed) {
		sealed.Close() // a temporary file
		return nil
	}
	return sealed
}
