//go:build !cgo || !seccomp

package runtime

// libseccompKnows is nil without libseccomp (see checkSeccompCovered).
var libseccompKnows func(string) bool
