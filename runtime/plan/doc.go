// Package plan builds the plan of a sandbox: the one place that says what
// a sandbox is. Build makes it; shell mode, --try and -- CMD (ModeExec),
// boxsh --rpc --sandbox (ModeServe) and boxsh spec (TargetPrint or
// TargetBundle) all describe what they want in a Config and run, or
// print, the Plan it gives. The plan is made of the host facts its caller
// gathered (host.Gather) and reads nothing itself: what it names on the
// host is made by host.Prepare, the one step that changes the host; every
// function of this package is free of host side effects, and its tests
// never touch the host.
//
// Build's steps, in order:
//
//  1. planProcess: the first process: boxsh-init serving calls on its
//     frame socket (ModeServe), or boxsh-init --exec running the command
//     (ModeExec), with boxsh-init's options (frame.InitOptions) and the
//     descriptors it finds open; the policy's limits (as boxsh-init
//     options for ModeServe, as rlimits of every process for ModeExec)
//     and the limit of open files boxsh was started with (an rlimit of
//     every process: HostFacts.NoFile);
//     the proxy's descriptor and variables under an allowlist network
//     policy.
//  2. BuildSpec: the OCI runtime spec of the sandbox and that process
//     (see spec.go for its layout).
//  3. The run-time adjustments, which boxsh makes when it starts the
//     sandbox itself and which a spec file either carries or (where
//     runtime-spec cannot say it, or the printed spec must run under any
//     runtime) names in an annotation (annotationPrefix): adjustCgroup,
//     adjustSeccomp, adjustParentDeath, adjustDevices, adjustInlineEtc,
//     adjustPlaceholders, adjustFiles, adjustCowDirs, adjustPrepare.
package plan
