// Package fstype tells file systems apart by whether a path lookup or a read
// on them can wait for a server or another process.
//
// The front serves a sandbox's small reads itself only where none can
// (runtime's frontread): a hung NFS or FUSE server must not hold its
// threads.
package fstype

// bounded are the file system types, as mountinfo names them, whose path
// lookups never wait for a server or another process: local disks and
// memory, and the kernel's own.
var bounded = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "f2fs": true,
	"tmpfs": true, "overlay": true, "ramfs": true, "devtmpfs": true, "squashfs": true, "erofs": true,
	"proc": true, "sysfs": true, "devpts": true, "mqueue": true, "cgroup": true, "cgroup2": true,
	"nsfs": true, "bpf": true, "tracefs": true, "debugfs": true, "securityfs": true, "pstore": true,
	"configfs": true, "hugetlbfs": true, "binfmt_misc": true, "fusectl": true, "efivarfs": true,
}

// Bounded tells whether lookups on a file system of type name, as mountinfo
// names it, never wait for a server or another process. Any other (nfs,
// cifs, fuse, 9p, autofs...) may.
func Bounded(name string) bool { return bounded[name] }
