package session

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// statFields are the fields of /proc/PID/stat after the command (the
// state first), nil when the command's end is not found.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, nil
	}
	return strings.Fields(s[i+1:]), nil
}

// startTime is the start time in f (statFields), 0 when unknown.
func startTime(f []string) uint64 {
	// After the command: state is field 3, starttime field 22.
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// processStart is the start time of process pid in clock ticks after
// boot (field 22 of /proc/PID/stat), 0 when unknown.
func processStart(pid int) uint64 {
	f, _ := statFields(pid)
	return startTime(f)
}

// processAlive tells whether process pid runs and is the one started at
// start (when known); a zombie is dead.
func processAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	f, err := statFields(pid)
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.EPERM && start == 0
	}
	if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
		return false
	}
	return start == 0 || startTime(f) == start
}
