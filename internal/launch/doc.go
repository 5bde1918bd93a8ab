// Package launch is the contract between the front and boxsh-launch, the
// small program that starts a sandbox with libcontainer and stays its parent.
//
// libcontainer runs its own executable again as the container's init, after
// copying it into a sealed memfd. With boxsh-launch that executable is a
// program linking libcontainer and little else, not the front: the copy and
// the init's Go start are of the small binary. The front keeps the flags, the
// policy, the protect walk, the plan and the spec. It starts boxsh-launch as
// soon as a sandbox is asked for (Start), and hands it, over a socket pair,
// libcontainer's configs.Config as JSON, the process to run and its
// descriptors (SCM_RIGHTS). boxsh-launch (Serve) creates and starts the
// container, and answers the front's exec, signal and destroy; it reports the
// process's exit.
//
// Messages are a 4-byte big-endian length and a JSON Message, the
// descriptors attached to the message's first byte and named, in order, by
// Message.Files.
//
// boxsh-launch runs from a sealed memfd copy of itself, which libcontainer
// trusts and does not copy again (CVE-2019-5736 is what the copy guards
// against): the front makes the copy on the side while it still works
// (Prepare), or a server's front makes one for all its launchers
// (ShareCopies); else the launcher makes it at its start (RunSealed).
// Whoever makes the copy also passes the binary it was made from (DiskFD)
// and that binary's device, inode, size and change time. Once the sandbox's
// command runs and the front has been quiet for a while, the launcher
// executes that binary again, if it is unchanged, keeping its socket and its
// child, the sandbox's init, and resumes from state in its environment
// (settle): the copy's memory is freed for the rest of the sandbox's life.
// It then unmaps its program's code and constants, which its start faulted
// in and an idle launcher mostly leaves alone.
// A binary that changed is never executed; the launcher stays on its copy.
//
// boxsh-launch dies with the front: by its parent-death signal, and when the
// socket reaches its end it destroys the sandbox and exits. The sandbox dies
// with boxsh-launch by its own parent-death signal. A front whose launcher
// died sees its sandbox's process exited with an error naming the launcher.
// Only once the sandbox's first process has exited may the front detach
// (Launcher.Detach): the launcher then outlives it, destroys the sandbox,
// removes the state directory and exits.
package launch
