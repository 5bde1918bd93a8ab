package fstype

import (
	"bytes"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MountsBounded tells whether every mount of table, the content of a
// /proc/PID/mountinfo, is of a Bounded type; a table it cannot read is not.
func MountsBounded(table []byte) bool {
	mounts, err := mountinfo.GetMountsFromReader(bytes.NewReader(table), nil)
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if !Bounded(m.FSType) {
			return false
		}
	}
	return true
}

// SameForEveryReader tells whether the files of a file system of type t
// (statfs's f_type) hold the same content whoever reads them, on a local
// disk or in memory: not procfs, sysfs, FUSE, NFS or anything unknown.
func SameForEveryReader(t int64) bool {
	switch uint32(t) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}
