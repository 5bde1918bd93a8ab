package host

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/policy"
)

// onOverlayFS tells whether path is on overlayfs, as the root file system
// of a Docker or Podman container is.
func onOverlayFS(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == unix.OVERLAYFS_SUPER_MAGIC
}

// checkCowUpperFS refuses a cow bind whose changes directory (its DST,
// made by PrepareCowDirs) is on overlayfs: the kernel refuses an overlay
// whose upper layer is on overlayfs (EINVAL, which the runtime reports
// without a word about why), and a container's root file system is one.
func checkCowUpperFS(binds []policy.Bind) error {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		if upper, _ := CowDirs(b); onOverlayFS(upper) {
			return fmt.Errorf("--bind %s: %s is on overlayfs (a container's root file system), where the kernel cannot keep the changes of a copy-on-write bind: "+
				"put it on a volume or a tmpfs (Docker and Podman: -v or --tmpfs; Kubernetes: an emptyDir volume)", b, upper)
		}
	}
	return nil
}
