// Package hostcheck tells whether this host can start boxsh's sandbox, and if
// not, why and what to change.
//
// It checks user namespaces, AppArmor's restriction of them, a container's
// seccomp profile or masked /proc, overlayfs and cgroups. boxsh doctor prints
// every check, and client.Supported returns the first that fails. A sandbox
// that fails to start names the first failing check as the cause (Diagnose).
package hostcheck

import "strings"

// A Check is one thing the sandbox needs of the host, or is told about it.
type Check struct {
	// Name is what is checked ("user namespaces").
	Name string
	// OK is false when the check failed.
	OK bool
	// Needed is false for a check that only informs: the sandbox starts
	// whatever it finds.
	Needed bool
	// Detail is what was found.
	Detail string
	// Fix is what to change when the check failed.
	Fix string
}

// Line is the check in one line: its name, what was found and, when it
// failed, the fix.
func (c Check) Line() string {
	s := c.Name + ": " + c.Detail
	if !c.OK && c.Fix != "" {
		s += ": " + c.Fix
	}
	return s
}

// Problem is the one line of the first needed check of checks that
// failed, "" when all passed.
func Problem(checks []Check) string {
	for _, c := range checks {
		if c.Needed && !c.OK {
			return c.Line()
		}
	}
	return ""
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
