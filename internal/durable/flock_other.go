//go:build !unix

package durable

import "os"

// lockDir does nothing: there is no flock(2) here.
func lockDir(*os.File) error { return nil }

// lockedDir is false: there is no flock(2) here.
func lockedDir(*os.File) bool { return false }
