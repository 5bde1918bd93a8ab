package darwin

// systemReadPaths are the directories of the system every sandbox may
// read (resolved paths: /etc is /private/etc). /usr covers /usr/local.
var systemReadPaths = []string{
	"/Library",
	"/System",
	"/bin",
	"/opt/homebrew",
	"/private/etc",
	"/private/var/db/timezone", // /etc/localtime points here
	"/private/var/select",      // /bin/sh runs the shell /private/var/select/sh names
	"/sbin",
	"/usr",
}

// hostSystemReadPaths are added for policy.Sandbox.HostSystem (--try):
// the host's whole /var, as the Linux sandbox shows /etc, /var and /run.
var hostSystemReadPaths = []string{"/private/var"}

// systemLinks are the top-level symbolic links into /private, readable
// so that paths through them resolve.
var systemLinks = []string{"/etc", "/tmp", "/var"}

// readDevices are the devices every sandbox may read; /dev/std* are links
// into /dev/fd.
var readDevices = []string{
	"/dev/random",
	"/dev/stderr",
	"/dev/stdin",
	"/dev/stdout",
	"/dev/urandom",
	"/dev/zero",
}

// writeDevices are the devices every sandbox may read and write (and
// /dev/fd, a directory).
var writeDevices = []string{"/dev/null", "/dev/tty"}

// ioctlDevices take ioctls (terminal settings, isatty).
var ioctlDevices = []string{"/dev/null", "/dev/tty"}

// ttyRegex matches the pseudo-terminal devices.
const ttyRegex = `^/dev/ttys[0-9]+$`

// machServices are the system services a shell and common tools need:
// user and group look-ups (getpwuid, id), logging, notifications and the
// per-user temporary directories (confstr).
var machServices = []string{
	"com.apple.bsd.dirhelper",
	"com.apple.logd",
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.opendirectoryd.membership",
}

// networkMachServices are the services the network needs besides
// sockets: DNS and network configuration, and certificate trust (TLS
// verification goes through trustd on macOS, also for Go programs).
var networkMachServices = []string{
	"com.apple.SecurityServer",
	"com.apple.SystemConfiguration.DNSConfiguration",
	"com.apple.SystemConfiguration.configd",
	"com.apple.dnssd.service",
	"com.apple.networkd",
	"com.apple.ocspd",
	"com.apple.trustd",
	"com.apple.trustd.agent",
}

// resolvConf is read by resolvers that do not ask mDNSResponder.
const resolvConf = "/private/var/run/resolv.conf"
