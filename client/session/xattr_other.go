//go:build !linux

package session

// hasXattr: overlay attributes exist on Linux only.
func hasXattr(path, name string) bool { return false }

// xattrValue: overlay attributes exist on Linux only.
func xattrValue(path, name string) string { return "" }
