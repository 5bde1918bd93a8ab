// Package host prepares the host for a sandbox and starts it.
//
// A start takes these steps, as libcontainer's does:
//
//   - Gather reads the facts a plan is made of: the system paths, the
//     protected paths, the file rules and the mapped groups.
//   - plan.Build makes the plan from them.
//   - Prepare makes on the host what the plan names: the root directory and
//     its files, the placeholders of protected paths, the cow directories.
//   - StartContainer (Linux only) starts the planned sandbox through
//     boxsh-launch (see internal/launch), which runs libcontainer and stays
//     the sandbox's parent. It serves the network proxy of an allowlist
//     sandbox and watches the protected paths and cow directories while the
//     sandbox runs.
//
// boxsh spec takes the same steps except the last.
package host
