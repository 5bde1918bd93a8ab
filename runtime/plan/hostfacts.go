package plan

// SystemPaths are the top-level system directories the sandbox gets from the
// host. They are bound read-only when they are directories, and recreated when
// they are symlinks.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// EtcPaths are the /etc entries the sandbox gets from the host, read-only,
// when they exist.
//
// They cover users and groups, name resolution, the dynamic linker's
// configuration, certificates, time zone, the Debian alternatives (which many
// /usr/bin commands are symlinks into), locale and shell defaults.
var EtcPaths = []string{
	"/etc/alternatives",
	"/etc/bash.bashrc",
	"/etc/ca-certificates",
	"/etc/ca-certificates.conf",
	"/etc/crypto-policies",
	"/etc/debian_version",
	"/etc/gai.conf",
	"/etc/gitconfig",
	"/etc/group",
	"/etc/host.conf",
	"/etc/hosts",
	"/etc/inputrc",
	"/etc/ld.so.cache",
	"/etc/ld.so.conf",
	"/etc/ld.so.conf.d",
	"/etc/locale.alias",
	"/etc/localtime",
	"/etc/lsb-release",
	"/etc/mime.types",
	"/etc/mtab",
	"/etc/networks",
	"/etc/nsswitch.conf",
	"/etc/os-release",
	"/etc/passwd",
	"/etc/pki",
	"/etc/profile",
	"/etc/profile.d",
	"/etc/protocols",
	"/etc/resolv.conf",
	"/etc/services",
	"/etc/ssl",
	"/etc/terminfo",
	"/etc/timezone",
}

// HostPath is what the host has at Path.
type HostPath struct {
	Path string
	// Dir tells whether Path, symlinks followed, is a directory.
	Dir bool
	// Link is the target of Path when Path is a symlink.
	Link string
	// Missing tells that Path does not exist on the host: a protected path
	// that must not be created either. Dir then tells what it would be.
	// MissingFrom is its first ancestor, or Path itself, that does not
	// exist. The runtime creates the mount point from there, and the
	// starter removes it again.
	Missing     bool
	MissingFrom string
	// Pins are the directories between the writable bind that holds a
	// protected path and the path itself. They are bound onto themselves
	// (writable, as before) so that the sandbox cannot rename or remove
	// them: a directory that holds a mount point can be renamed, and with
	// it the protection would go (mv ~/proj x; mkdir -p ~/proj/.git/hooks).
	Pins []string `json:",omitempty"`
	// Content is what the placeholder of a Missing file holds (a
	// missing .git/commondir gets ".", which git reads as none).
	Content string `json:",omitempty"`
	// Reason is why the path is protected, for messages.
	Reason string `json:",omitempty"`
	// Tree marks a directory bound read-only over itself, in depth order
	// with the binds, such as a writable home (see host.GatherProtection).
	// So the binds inside it and Rebind come after it.
	Tree bool `json:",omitempty"`
	// Rebind are the directories in a Tree path that stay writable. Like
	// Pins, they are bound writable onto themselves, but not watched: a
	// change on the host there only makes them read-only.
	Rebind []string `json:",omitempty"`
}

// HostFacts are the facts about the host that the spec depends on, so that
// BuildSpec itself reads nothing (see host.Gather).
type HostFacts struct {
	// System are the SystemPaths that exist on the host.
	System []HostPath
	// Etc are the EtcPaths that exist on the host (symlinks whose target
	// does not exist are left out).
	Etc []HostPath
	// Whole are the HostSystemPaths that are directories on the host.
	Whole []HostPath
	// NoFile is the limit of open files boxsh was started with, or nil
	// when unknown. Every process of the sandbox gets it (RLIMIT_NOFILE),
	// as every command boxsh runs outside a sandbox does.
	NoFile *Rlimit
}

// HostSystemPaths are the directories a sandbox with
// policy.Sandbox.HostSystem (--try) shows whole, read-only, instead of
// the EtcPaths.
var HostSystemPaths = []string{"/etc", "/var", "/run"}
