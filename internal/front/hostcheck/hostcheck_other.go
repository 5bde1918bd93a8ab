//go:build !linux

package hostcheck

// All is the checks of the host: none outside Linux.
func All() []Check { return nil }

// Diagnose names why a sandbox failed to start with err: nothing is known
// outside Linux.
func Diagnose(err error) string { return "" }

// Summary is the failed needed checks of checks in one line.
func Summary(checks []Check) string { return Problem(checks) }
