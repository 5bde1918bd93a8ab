package proc

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are the resource limits boxsh-init applies to the commands it
// runs (bash calls and terminals), as rlimits (soft and hard) that every
// process of a command inherits. Zero values are no limit.
type Limits struct {
	// Data caps each process's data: heap and private mappings
	// (RLIMIT_DATA), in bytes.
	Data int64
	// Procs caps the tasks of the user (RLIMIT_NPROC): in a sandbox, the
	// kernel counts the tasks of the sandbox's own user namespace.
	Procs int
}

// LimitsFlag is the option of boxsh-init that runs a command under
// limits: boxsh-init --limits SPEC -- COMMAND ARGS...
const LimitsFlag = "--limits"

// IsZero tells whether l limits nothing.
func (l Limits) IsZero() bool { return l.Data <= 0 && l.Procs <= 0 }

// String is l as LimitsFlag's value: "data=N,nproc=M".
func (l Limits) String() string {
	var parts []string
	if l.Data > 0 {
		parts = append(parts, "data="+strconv.FormatInt(l.Data, 10))
	}
	if l.Procs > 0 {
		parts = append(parts, "nproc="+strconv.Itoa(l.Procs))
	}
	return strings.Join(parts, ",")
}

// ParseLimits parses a LimitsFlag value.
func ParseLimits(s string) (Limits, error) {
	var l Limits
	for part := range strings.SplitSeq(s, ",") {
		name, value, _ := strings.Cut(part, "=")
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("limits %q: %q: expected a positive number", s, part)
		}
		switch name {
		case "data":
			l.Data = n
		case "nproc":
			l.Procs = int(n)
		default:
			return l, fmt.Errorf("limits %q: unknown limit %q (data, nproc)", s, name)
		}
	}
	return l, nil
}

// Wrap returns argv to be run under l by the boxsh-init executable self.
//
// That process sets the limits on itself and executes argv, so the limits hold
// before the command's first instruction. Setting them from outside after the
// start would race with the command's first forks.
func (l Limits) Wrap(self string, argv []string) []string {
	if l.IsZero() {
		return argv
	}
	return append([]string{self, LimitsFlag, l.String(), "--"}, argv...)
}
