package launch

import (
	"fmt"
	"os"
	"strconv"

	"github.com/opencontainers/runc/libcontainer/exeseal"
	"golang.org/x/sys/unix"
)

// LauncherComm is the launcher's process name.
const LauncherComm = "boxsh-launch"

// sealedEnv marks the launcher executed again from its sealed copy, so that
// it does not try twice. Its value is the stamp (stampOf) of the executable
// copied, which DiskFD is.
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
	if os.Getenv(sealedEnv) != "" || os.Getenv(settledEnv) != "" {
		// Executed as /proc/self/fd/N (from its copy, or from DiskFD
		// by settle): the name is the launcher's again, for ps and for
		// the tests that look for it.
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
	defer sealed.Close()
	if unix.Dup2(int(sealed.src.Fd()), DiskFD) != nil {
		return
	}
	env := append(os.Environ(), sealedEnv+"="+sealed.stamp)
	_ = unix.Exec("/proc/self/fd/"+strconv.Itoa(int(sealed.copy.Fd())), os.Args, env)
	unix.Close(DiskFD)
}

// sealedExe is a sealed memfd copy of an executable, and the executable.
type sealedExe struct {
	copy *os.File
	// src is the executable copied, kept open so that a launcher that
	// runs from the copy may settle on it (DiskFD).
	src *os.File
	// stamp is src's stampOf once copied.
	stamp string
}

// Close closes the copy and the executable.
func (e *sealedExe) Close() {
	e.copy.Close()
	e.src.Close()
}

// sealedCopy returns a sealed memfd copy of the executable at path, or nil if
// none can be made (libcontainer trusts no other kind of copy).
func sealedCopy(path string) *sealedExe {
	src, err := os.Open(path)
	if err != nil {
		return nil
	}
	before, ok := stampOf(int(src.Fd()))
	fi, err := src.Stat()
	if !ok || err != nil {
		src.Close()
		return nil
	}
	sealed, err := exeseal.CloneBinary(src, fi.Size(), path, os.TempDir())
	if err != nil {
		src.Close()
		return nil
	}
	if after, _ := stampOf(int(src.Fd())); after != before || !exeseal.IsCloned(sealed) {
		// An executable that changed while it was copied, or a
		// temporary file.
		sealed.Close()
		src.Close()
		return nil
	}
	return &sealedExe{copy: sealed, src: src, stamp: before}
}

// stampOf identifies the file open at fd and its last change: its device,
// inode, size and change time, which any write to it moves. A launcher
// settles on its executable only if the stamp is the one of its copy.
func stampOf(fd int) (string, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d:%d.%09d", st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec), true
}
