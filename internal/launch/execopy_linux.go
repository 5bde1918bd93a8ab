package launch

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// Polling of holdExeCopy: how often, and for how long at most.
const (
	exeCopyPoll    = 500 * time.Microsecond
	exeCopyPollFor = 2 * time.Second
)

// holdExeCopy takes a reference to the executable of the sandbox's init
// process pid, and returns a function that drops it once the init has executed
// boxsh-init.
//
// That executable is libcontainer's sealed copy of the launcher's binary, held
// in memory. Without the reference, the last one goes with the init's execve,
// and boxsh-init pays for freeing the copy at its start. With it, the launcher
// frees the copy, alongside boxsh-init's start.
//
// Call holdExeCopy after libcontainer.Container.Start, before its Exec. The function
// it returns must be called, and returns at once.
func holdExeCopy(pid int) func() {
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	f, err := os.Open(exe)
	if err != nil {
		return func() {}
	}
	copyID, ok := fileID(f.Stat())
	if !ok {
		f.Close()
		return func() {}
	}
	return func() {
		go func() {
			defer f.Close()
			for deadline := time.Now().Add(exeCopyPollFor); time.Now().Before(deadline); time.Sleep(exeCopyPoll) {
				// Gone, or now another executable.
				if id, ok := fileID(os.Stat(exe)); !ok || id != copyID {
					return
				}
			}
		}()
	}
}

// fileID is the device and inode of a file's FileInfo.
func fileID(fi os.FileInfo, err error) ([2]uint64, bool) {
	if err != nil {
		return [2]uint64{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}
