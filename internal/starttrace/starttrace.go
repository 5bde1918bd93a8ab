// Package starttrace marks the stages of a cold start when BOXSH_TRACE_START
// is set.
//
// It serves integration/bench -cold-stages. Each mark is one line on stderr,
// "boxsh-start STAGE UNIXNANO". The time is wall-clock time, the same clock in
// and out of a sandbox, and the bench subtracts its spawn time from it. When
// the variable is unset, a mark costs one boolean test.
package starttrace

import (
	"os"
	"strconv"
	"time"
)

// EnvVar turns the marks on when set to a non-empty value.
const EnvVar = "BOXSH_TRACE_START"

// Prefix begins every mark's line.
const Prefix = "boxsh-start "

var enabled = os.Getenv(EnvVar) != ""

// Enabled tells whether marks are written.
func Enabled() bool { return enabled }

// Mark writes the mark of stage, now, when marks are on.
func Mark(stage string) {
	if enabled {
		MarkAt(stage, time.Now())
	}
}

// MarkAt writes the mark of stage at t, when marks are on.
func MarkAt(stage string, t time.Time) {
	if !enabled {
		return
	}
	line := Prefix + stage + " " + strconv.FormatInt(t.UnixNano(), 10) + "\n"
	_, _ = os.Stderr.WriteString(line)
}

// Env is env with EnvVar set when marks are on, so that a process started
// with it (boxsh-init) marks its stages too; else env itself.
func Env(env []string) []string {
	if !enabled {
		return env
	}
	return append(env[:len(env):len(env)], EnvVar+"=1")
}
