//go:build linux

// Package outside is a stand-in for the internet that an end-to-end test
// makes for itself, rootless, so that the released boxsh resolves real names
// to real servers with no test-only code path.
//
// Start makes, as the unprivileged user that runs the tests, a user
// namespace that maps that user to itself, with a network and a mount
// namespace of its own. A holder process lives there (the test binary run
// again, which calls Holder). It makes two network namespaces joined by a
// veth pair:
//
//   - the outside's, the holder's own, with one address of 198.18.77.0/24
//     (RFC 2544's benchmarking range: neither loopback, nor private, nor
//     link-local) for each of the stand-in's names, where the servers listen,
//     and ResolverAddr, where the holder answers DNS for those names;
//   - the front's, where boxsh runs (Command, Wrapper), with FrontAddr on its
//     end of the link and the loopback, and no route anywhere else.
//
// In the mount namespace a resolv.conf naming ResolverAddr is bound over
// /etc/resolv.conf, so the front's own resolver asks the stand-in, by DNS,
// as it asks a real one. The names are not in /etc/hosts, which the sandbox
// also reads: a program in the sandbox asks boxsh's name service, as on a
// real machine. The host's files are untouched.
//
// The test process listens in the outside's namespace through the holder: it
// makes the listening socket there and passes it back over a Unix socket
// (Listen), so that the test's servers are ordinary in-process servers whose
// handlers the test reads directly.
//
// boxsh runs as the test's user: nsenter enters the namespaces keeping the
// user's uid and gid (mapped to themselves), and the exec of boxsh drops the
// capabilities that entering the user namespace gave, so the front runs with
// none, as a user runs it.
package outside

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// FrontAddr is the front's address on the link to the outside.
const FrontAddr = "198.18.77.1"

// ResolverAddr is the address of the stand-in's DNS server.
const ResolverAddr = "198.18.77.2"

// firstServerAddr is the address of the first of the stand-in's names; the
// next names get the next addresses.
var firstServerAddr = netip.MustParseAddr("198.18.77.10")

// Config is what a stand-in serves.
type Config struct {
	// Names are the stand-in's host names, each with an address of its own
	// in the outside's namespace, in the order given.
	Names []string
	// Fixed maps more names to addresses as given, in the stand-in's DNS
	// only (such as 127.0.0.1, which the proxy must refuse).
	Fixed map[string]string
	// Extra are more addresses of the outside, with a route to each from
	// the front's namespace (such as a private network's, which the proxy
	// reaches).
	Extra []string
}

// Net is a running stand-in.
type Net struct {
	holder *exec.Cmd
	ctl    *net.UnixConn
	addrs  map[string]string
	// frontPID is the process that holds the front's network namespace.
	frontPID int

	mu     sync.Mutex // serializes requests to the holder
	closed bool
	done   chan struct{}
}

// namesEnv names the variable that tells the holder the names it answers
// for: NAME=ADDRESS, comma-separated.
const namesEnv = "BOXSH_OUTSIDE_NAMES"

// resolvEnv names the variable that tells the holder the resolv.conf to
// bind.
const resolvEnv = "BOXSH_OUTSIDE_RESOLV"

// extraEnv names the variable that lists the holder's extra addresses.
const extraEnv = "BOXSH_OUTSIDE_EXTRA"

// Tools are the programs a stand-in needs, found on PATH.
var Tools = []string{"unshare", "nsenter", "ip"}

// Start starts a stand-in. self runs the holder: a program that calls
// Holder (with env added to its environment), such as the test binary in a
// mode of its own. dir is a directory of the test's for the stand-in's
// files.
func Start(ctx context.Context, cfg Config, dir string, self []string, env ...string) (*Net, error) {
	for _, tool := range Tools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("outside: %s is needed (util-linux, iproute2): %w", tool, err)
		}
	}
	n := &Net{addrs: map[string]string{}, done: make(chan struct{})}
	var names, servers []string
	addr := firstServerAddr
	for _, name := range cfg.Names {
		if _, dup := n.addrs[name]; dup {
			return nil, fmt.Errorf("outside: name %s given twice", name)
		}
		n.addrs[name] = addr.String()
		servers = append(servers, addr.String())
		names = append(names, name+"="+addr.String())
		addr = addr.Next()
	}
	for name, a := range cfg.Fixed {
		names = append(names, name+"="+a)
	}
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+ResolverAddr+"\noptions timeout:2 attempts:2\n"), 0o644); err != nil {
		return nil, fmt.Errorf("outside: %w", err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("outside: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "outside-ctl"), os.NewFile(uintptr(fds[1]), "outside-ctl-holder")
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("outside: %w", err)
	}
	n.ctl = c.(*net.UnixConn)
	argv := append([]string{"unshare", "--user", "--map-current-user", "--net", "--mount",
		"--propagation", "private", "--keep-caps", "--"}, self...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), env...), resolvEnv+"="+resolv, namesEnv+"="+strings.Join(names, ","),
		extraEnv+"="+strings.Join(append(append(servers, ResolverAddr), cfg.Extra...), ","))
	cmd.ExtraFiles = []*os.File{theirs}
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	err = cmd.Start()
	theirs.Close() // the holder's now: its exit ends our reads
	if err != nil {
		n.ctl.Close()
		return nil, fmt.Errorf("outside: %w", err)
	}
	n.holder = cmd
	go func() { _ = cmd.Wait(); close(n.done) }()
	stop := context.AfterFunc(ctx, func() { n.ctl.Close() })
	reply, _, err := n.read()
	stop()
	if err != nil || !strings.HasPrefix(reply, "ready ") {
		n.Close()
		<-n.done
		return nil, fmt.Errorf("outside: the holder did not start (%q, %v): %s", reply, err, stderr.String())
	}
	n.frontPID, err = strconv.Atoi(strings.TrimPrefix(reply, "ready "))
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("outside: the holder's answer %q: %w", reply, err)
	}
	return n, nil
}

// Addr is the address of one of the stand-in's names.
func (n *Net) Addr(name string) string {
	a, ok := n.addrs[name]
	if !ok {
		panic("outside: no name " + name)
	}
	return a
}

// Listen listens on TCP port port (0: one the system picks) of name's
// address in the outside's namespace; name may also be an address of it.
func (n *Net) Listen(name string, port int) (net.Listener, error) {
	host, ok := n.addrs[name]
	if !ok {
		host = name
	}
	f, err := n.request("listen " + net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("outside: listen on %s: %w", name, err)
	}
	return l, nil
}

// DialFront connects to addr in the front's namespace (such as a boxsh
// server on its loopback) and returns the connection.
func (n *Net) DialFront(addr string) (net.Conn, error) {
	f, err := n.request("dialfront " + addr)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("outside: dial %s in the front's namespace: %w", addr, err)
	}
	return c, nil
}

// Command is argv run in the front's namespaces as the test's user.
func (n *Net) Command(argv ...string) []string {
	return append(n.enter(), argv...)
}

// CommandIn is Command run in directory dir (nsenter's own working
// directory is the old mount namespace's: see Wrapper).
func (n *Net) CommandIn(dir string, argv ...string) []string {
	return append(append(n.enter(), "/bin/sh", "-c", `cd "$0" && exec "$@"`, dir), argv...)
}

// enter is the nsenter command that enters the front's namespaces.
func (n *Net) enter() []string {
	h := strconv.Itoa(n.holder.Process.Pid)
	return []string{"nsenter", "--user=/proc/" + h + "/ns/user", "--mount=/proc/" + h + "/ns/mnt",
		"--net=/proc/" + strconv.Itoa(n.frontPID) + "/ns/net", "--preserve-credentials", "--"}
}

// Wrapper writes an executable script into dir that runs prog in the
// front's namespaces, in the caller's working directory, with the
// script's arguments, and returns its path.
func (n *Net) Wrapper(dir, prog string) (string, error) {
	// The working directory is set again once in the mount namespace:
	// the one nsenter keeps is the old namespace's, which getcwd cannot
	// name. Each exec keeps the process: the script's is prog's.
	script := "#!/bin/sh\nexec " + strings.Join(n.enter(), " ") +
		` /bin/sh -c 'cd "$0" && exec "$@"' "$PWD" ` + shellQuote(prog) + ` "$@"` + "\n"
	path := filepath.Join(dir, filepath.Base(prog))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("outside: %w", err)
	}
	return path, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Close stops the stand-in: the holder exits when its control socket
// closes, and the front's namespace with it.
func (n *Net) Close() error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		n.ctl.Close()
	}
	n.mu.Unlock()
	return nil
}

// Wait waits for the holder to exit after Close.
func (n *Net) Wait(ctx context.Context) error {
	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		_ = n.holder.Process.Kill()
		return ctx.Err()
	}
}

// request sends a request to the holder and returns the descriptor of its
// answer.
func (n *Net) request(req string) (*os.File, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("outside: closed")
	}
	if _, err := n.ctl.Write([]byte(req)); err != nil {
		return nil, fmt.Errorf("outside: %s: %w", req, err)
	}
	reply, f, err := n.read()
	if err != nil {
		return nil, fmt.Errorf("outside: %s: %w", req, err)
	}
	if f == nil {
		return nil, fmt.Errorf("outside: %s: %s", req, reply)
	}
	return f, nil
}

// read reads one message of the holder, with the descriptor it carries.
func (n *Net) read() (string, *os.File, error) {
	buf, oob := make([]byte, 4096), make([]byte, syscall.CmsgSpace(4))
	m, oobn, _, _, err := n.ctl.ReadMsgUnix(buf, oob)
	if err != nil {
		return "", nil, err
	}
	if m == 0 {
		return "", nil, errors.New("the holder exited")
	}
	var f *os.File
	if oobn > 0 {
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return "", nil, err
		}
		for _, msg := range msgs {
			fds, err := syscall.ParseUnixRights(&msg)
			if err != nil {
				return "", nil, err
			}
			for _, fd := range fds {
				if f == nil {
					f = os.NewFile(uintptr(fd), "outside-socket")
				} else {
					syscall.Close(fd)
				}
			}
		}
	}
	return string(buf[:m]), f, nil
}

// lockedBuffer is a strings.Builder safe for a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Holder is the holder's main function: run by Start's self, in the new
// namespaces, with the control socket as descriptor 3. It returns the exit
// status.
func Holder() int {
	if err := holder(); err != nil {
		fmt.Fprintf(os.Stderr, "outside holder: %v\n", err)
		return 1
	}
	return 0
}

func holder() error {
	ctlFile := os.NewFile(3, "outside-ctl")
	c, err := net.FileConn(ctlFile)
	ctlFile.Close()
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	ctl := c.(*net.UnixConn)
	defer ctl.Close()

	// The front's network namespace: held by a child that lives until
	// its stdin (ours) closes, that is, until the holder exits.
	front := exec.Command("unshare", "--net", "--", "sh", "-c", "echo; exec cat >/dev/null")
	front.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := front.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := front.StdoutPipe()
	if err != nil {
		return err
	}
	front.Stderr = os.Stderr
	if err := front.Start(); err != nil {
		return fmt.Errorf("the front's namespace: %w", err)
	}
	defer func() { stdin.Close(); _ = front.Wait() }()
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		return fmt.Errorf("the front's namespace: %w", err)
	}
	pid := strconv.Itoa(front.Process.Pid)

	var outside, inside strings.Builder
	fmt.Fprintf(&outside, "link add bxo type veth peer name bxf netns %s\n", pid)
	for a := range strings.SplitSeq(os.Getenv(extraEnv), ",") {
		if a == "" {
			continue
		}
		fmt.Fprintf(&outside, "addr add %s/32 dev bxo\n", a)
		if !netip.MustParsePrefix("198.18.77.0/24").Contains(netip.MustParseAddr(a)) {
			fmt.Fprintf(&inside, "route add %s/32 dev bxf\n", a)
		}
	}
	outside.WriteString("link set bxo up\nlink set lo up\nroute add " + FrontAddr + "/32 dev bxo\n")
	if err := run(outside.String(), "ip", "-batch", "-"); err != nil {
		return err
	}
	in := "addr add " + FrontAddr + "/24 dev bxf\nlink set bxf up\nlink set lo up\n" + inside.String()
	if err := run(in, "nsenter", "--net=/proc/"+pid+"/ns/net", "--", "ip", "-batch", "-"); err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", net.JoinHostPort(ResolverAddr, "53"))
	if err != nil {
		return fmt.Errorf("the stand-in's DNS server: %w", err)
	}
	defer pc.Close()
	go serveDNS(pc, parseNames(os.Getenv(namesEnv)))
	if err := syscall.Mount(os.Getenv(resolvEnv), "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the stand-in's resolv.conf over /etc/resolv.conf: %w", err)
	}
	if _, err := ctl.Write([]byte("ready " + pid)); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		m, err := ctl.Read(buf)
		if err != nil || m == 0 {
			return nil // the test process closed its end
		}
		f, err := serve(string(buf[:m]), "/proc/"+pid+"/ns/net")
		if err != nil {
			if _, err := ctl.Write([]byte(err.Error())); err != nil {
				return nil
			}
			continue
		}
		_, _, err = ctl.WriteMsgUnix([]byte("ok"), syscall.UnixRights(int(f.Fd())), nil)
		f.Close()
		if err != nil {
			return nil
		}
	}
}

// serve makes the socket a request asks for; frontNS is the front's
// network namespace.
func serve(req, frontNS string) (*os.File, error) {
	verb, addr, _ := strings.Cut(req, " ")
	switch verb {
	case "dialfront":
		return dialIn(frontNS, addr)
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		return l.(*net.TCPListener).File()
	}
	return nil, fmt.Errorf("unknown request %q", req)
}

// dialIn connects to addr from the network namespace at path ns.
func dialIn(ns, addr string) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, in ns, ends with the goroutine.
		runtime.LockOSThread()
		fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{nil, err}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			done <- result{nil, fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer c.Close()
		f, err := c.(*net.TCPConn).File()
		done <- result{f, err}
	}()
	r := <-done
	return r.f, r.err
}

// run runs a command with stdin, and says what it wrote if it fails.
func run(stdin string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s (input:\n%s)", strings.Join(argv, " "), err, out, stdin)
	}
	return nil
}
