// Package host prepares the host for a sandbox and starts it: it gathers
// the facts a plan is made of (GatherHostFacts, GatherProtection,
// ResolveFileRules, SandboxCgroup), prepares the root directory, the
// placeholders of protected paths, the cow directories and the files of
// the plan, serves the network proxy of an allowlist sandbox, and starts
// the planned sandbox with libcontainer (StartContainer, Linux only),
// watching its protected paths and cow directories while it runs.
package host
