//go:build !linux

package durable

import "os"

// SyncFS syncs the directory f (there is no syncfs(2) here): the files
// in it are synced by their writers.
func SyncFS(f *os.File) error { return f.Sync() }
