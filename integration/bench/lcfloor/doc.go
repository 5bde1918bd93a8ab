// Command lcfloor starts the least sandbox that libcontainer starts through
// boxsh-launch, and runs true (or the command after its flags) in it: the
// floor of a sandbox's start under boxsh's design, for the bench's start
// comparison (-start with -floor).
//
// The sandbox has boxsh's namespaces (user, mount, pid, ipc, uts) and, as
// bubblewrap's in the comparison, a read-only /usr, /proc, a /dev of
// libcontainer's devices and a /tmp; no masked paths, no seccomp filter, no
// policy, no protect walk and no boxsh-init. The program links the
// launcher's client and libcontainer, not the front. With -direct it starts
// the sandbox with libcontainer in its own process, as the front did before
// boxsh-launch: libcontainer then copies this program for the container's
// init.
//
//	lcfloor -launcher bin/boxsh-launch -version "$(bin/boxsh --version | awk '{print $3}')" [-- COMMAND...]
//	lcfloor -direct [-- COMMAND...]
package main
