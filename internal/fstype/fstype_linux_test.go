package fstype

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMountsBounded(t *testing.T) {
	local := "22 1 0:21 / / ro,relatime - tmpfs tmpfs rw\n23 22 8:1 /home/u/p /home/u/p rw - ext4 /dev/sda1 rw\n24 22 0:5 / /proc rw - proc proc rw\n"
	assert.True(t, MountsBounded([]byte(local)))
	for _, fs := range []string{"nfs4", "fuse.sshfs", "cifs", "9p", "autofs", "fuse"} {
		assert.False(t, MountsBounded([]byte(local+"25 22 0:40 / /mnt rw - "+fs+" server:/x rw\n")), fs)
	}
	assert.False(t, MountsBounded([]byte("a line without its separator\n")))
}
