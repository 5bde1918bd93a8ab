// Package ownfile checks that a file holding a secret or a record was not
// planted by another user, and cannot be read or written by one.
//
// boxsh uses it for existing files it is given: the HTTP bearer token and the
// audit log.
package ownfile

import (
	"fmt"
	"syscall"
)

// Check tells why the user me must not use the existing file path, of the
// kernel's mode and owner uid.
//
// what says what the file is for, such as "token file". The file must not be
// used when it is:
//
//   - not a regular file;
//   - owned by another user, who could have written it;
//   - open to the group or others, who could have written or could read it.
//
// Each error is one line that says how to fix it. Open the file with
// O_NOFOLLOW and check what fstat says of the descriptor, not of the path: a
// symbolic link is refused by the open (see SymlinkError).
func Check(what, path string, mode, uid, me uint32) error {
	if mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("%s %s is not a regular file: give the path of a regular file, or of none to have it made", what, path)
	}
	if uid != me {
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d): another user may have planted it; remove it, or use a path of your own", what, path, uid, me)
	}
	if perm := mode & 0o7777; perm&0o077 != 0 {
		return fmt.Errorf("%s %s has mode %04o, open to other users: chmod 600 %s", what, path, perm, path)
	}
	return nil
}

// SymlinkError is the error for a path that an O_NOFOLLOW open found to be
// a symbolic link (ELOOP).
func SymlinkError(what, path string) error {
	return fmt.Errorf("%s %s is a symbolic link, which boxsh does not follow: remove it (rm %s) or give the path of the file itself", what, path, path)
}
