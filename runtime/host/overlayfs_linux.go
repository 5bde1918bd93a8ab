package host

import "golang.org/x/sys/unix"

// onOverlayFS tells whether path is on overlayfs, as the root file system
// of a Docker or Podman container is.
func onOverlayFS(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == unix.OVERLAYFS_SUPER_MAGIC
}
