package darwin

// systemReadPaths are the directories of the system every sandbox may
// read (resolved paths: /etc is /private/etc). /usr covers /usr/local.
// /System/Volumes is denied after them (see writeSystemFiles).
var systemReadPaths = []string{
	// Applications: Xcode.app is the developer directory that the /usr/bin
	// shims (git, clang, make, xcrun) run from when it is selected, and it
	// may be installed under any name (Xcode-15.4.app); the original reads
	// all of /Applications (sandbox_darwin.cpp:221). Bundles of programs,
	// not the user's data (that is in ~/Library).
	"/Applications",
	"/Library", // includes /Library/Developer/CommandLineTools (the CLT)
	"/System",
	"/bin",
	"/opt/homebrew",
	// MacPorts' prefix; the original reads all of /opt (sandbox_darwin.cpp:222).
	"/opt/local",
	"/private/etc",
	// The Security framework's module directory (mdsObject.db): trust
	// evaluation reads it in-process, and without it Go's crypto/x509
	// fails with "OSStatus -26276" (the original's open issue on TLS).
	"/private/var/db/mds",
	"/private/var/db/timezone", // /etc/localtime points here
	// The developer directory xcode-select chose (a symbolic link the
	// /usr/bin shims read to find Xcode.app or the CLT).
	"/private/var/db/xcode_select_link",
	"/private/var/select", // /bin/sh runs the shell /private/var/select/sh names
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
	// Power-management queries (IOPMCopyAssertionsStatus and the like, as
	// runtimes make for battery and sleep state): the original's
	// sandbox_darwin.cpp:265, with the RootDomainUserClient iokit rule.
	"com.apple.PowerManagement.control",
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

// trustMachServices are the services of certificate trust, which the
// allowlist mode needs for TLS through the proxy (the client verifies the
// server's certificate itself). trustd may fetch what a certificate names
// (intermediates, OCSP, CRLs) from outside the allowlist: see
// docs/macos.md.
var trustMachServices = []string{
	"com.apple.SecurityServer",
	"com.apple.ocspd",
	"com.apple.trustd",
	"com.apple.trustd.agent",
}

// sysctlNames and sysctlPrefixes are the sysctl names a sandbox may read.
//
// They are the original's list (sandbox_darwin.cpp:290-333) of what
// programs ask about the machine and the system: CPU counts and features,
// memory, page size, OS version, host name, limits. The original's
// kern.proc.pid. prefix is left out, so nothing about other processes can
// be read (kern.proc.*, kern.procargs2, which holds every process's
// arguments and environment).
var (
	sysctlNames = []string{
		"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cacheconfig",
		"hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency", "hw.cpufrequency_compat",
		"hw.cputype", "hw.l1dcachesize_compat", "hw.l1icachesize_compat", "hw.l2cachesize_compat",
		"hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize",
		"hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize", "hw.pagesize_compat",
		"hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat", "hw.vectorunit",
		"kern.argmax", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc", "kern.maxproc",
		"kern.ngroups", "kern.osproductversion", "kern.osrelease", "kern.ostype", "kern.osversion",
		"kern.version",
	}
	sysctlPrefixes = []string{"hw.optional.", "hw.perflevel", "machdep.cpu.", "sysctl."}
)

// resolvConf is read by resolvers that do not ask mDNSResponder.
const resolvConf = "/private/var/run/resolv.conf"
