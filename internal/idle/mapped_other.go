//go:build !linux

package idle

// ReleaseExecutable does nothing outside Linux (see mapped_linux.go).
func ReleaseExecutable() (Released, error) { return nil, nil }

// Released are the mappings ReleaseExecutable released: none here.
type Released []struct{}

// Bytes is the size of the mappings.
func (r Released) Bytes() int { return 0 }

// Populate does nothing.
func (r Released) Populate() {}
