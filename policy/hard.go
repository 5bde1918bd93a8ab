package policy

// HardDeniedWrites are the paths no setting makes writable, in every
// writable or copy-on-write area and at any depth: names or relative paths
// (".bashrc", ".git/config"), and directories with everything below them
// when they end in "/". They stop a prompt-injected agent from planting
// code that runs later outside the sandbox: shell start-up files, git
// configuration and hooks, and the configuration of editors and agents.
var HardDeniedWrites = []string{
	".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile",
	".gitconfig", ".gitmodules", ".git/config", ".git/hooks/",
	".mcp.json", ".ripgreprc",
	".vscode/", ".idea/", ".claude/commands/", ".claude/agents/",
}
