//go:build !cgo || !seccomp

package host

// libseccompKnows is nil without libseccomp (see checkSeccompCovered).
var libseccompKnows func(string) bool
