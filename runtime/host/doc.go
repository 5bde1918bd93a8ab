// Package host prepares the host for a sandbox and starts it. A start
// takes three steps, as libcontainer's does: Gather reads the facts a
// plan is made of (the system paths, the protected paths, the file rules,
// the mapped groups), plan.Build makes the plan, and Prepare makes on the
// host what the plan names (the root directory and its files, the
// placeholders of protected paths, the cow directories); StartContainer
// (Linux only) takes them and starts the planned sandbox with
// libcontainer, serves the network proxy of an allowlist sandbox, and
// watches its protected paths and cow directories while it runs. boxsh
// spec takes the same steps but the start.
package host
