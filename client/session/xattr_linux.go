package session

import (
	"errors"

	"golang.org/x/sys/unix"
)

// hasXattr tells whether path (not followed) has the attribute name.
func hasXattr(path, name string) bool {
	_, err := unix.Lgetxattr(path, name, nil)
	return err == nil || errors.Is(err, unix.ERANGE)
}

// xattrValue is the value of path's attribute name ("" if none).
func xattrValue(path, name string) string {
	var buf [16]byte
	n, err := unix.Lgetxattr(path, name, buf[:])
	if err != nil {
		return ""
	}
	return string(buf[:n])
}
