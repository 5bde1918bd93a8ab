//go:build !unix

package session

import "os"

// lockSession does not lock here: there is no flock.
func lockSession(dir string) (*os.File, error) { return nil, nil }

// sessionLocked is false here: there is no lock to test.
func sessionLocked(dir string) bool { return false }
