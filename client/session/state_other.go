//go:build !linux && !darwin

package session

import "io/fs"

// inodeCtime are fi's inode number and change time (ns): unknown here.
func inodeCtime(fi fs.FileInfo) (uint64, int64) { return 0, fi.ModTime().UnixNano() }

// ownerRdev are fi's owner and device number: unknown here.
func ownerRdev(fs.FileInfo) (uid uint32, rdev uint64) { return 0, 1 }
