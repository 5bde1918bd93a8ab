//go:build !linux

package idle

// ReleaseExecutable does nothing outside Linux (see mapped_linux.go).
func ReleaseExecutable() (int, error) { return 0, nil }
