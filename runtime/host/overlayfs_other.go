//go:build !linux

package host

// onOverlayFS tells whether path is on overlayfs, which only Linux has.
func onOverlayFS(string) bool { return false }
