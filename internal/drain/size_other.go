//go:build !linux

package drain

// pipeSize bounds what pipe fd can hold: macOS pipes grow to 64 KiB.
func pipeSize(fd uintptr) int { return 64 << 10 }
