//go:build !linux

package host

// MappedGroups are the caller's supplementary groups a sandbox's user
// namespace maps: only Linux has user namespaces.
func MappedGroups() []uint32 { return nil }
