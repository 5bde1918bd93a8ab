// Package seccompload hands a compiled seccomp program from the front to
// boxsh-init, which loads it as its first act.
//
// The front compiles the sandbox's filter once (see runtime/host), instead of
// libcontainer's init compiling it with libseccomp at every start. Linux only.
package seccompload
