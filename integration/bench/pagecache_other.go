//go:build !linux

package main

// evictPageCache does nothing outside Linux (see pagecache_linux.go).
func evictPageCache(string) {}
