//go:build linux

package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A pod's containers share the namespaces its sandbox ("pause") container
// holds: its network namespace, and with `hostUsers: false` its user
// namespace. podSidecar is that stand-in: a process of the test binary in
// a user and network namespace of its own (uid 0 mapped to the test's
// user, the loopback up) that opens listening sockets there and hands them
// to the test, which serves on them in the pod's network namespace. A
// bundle joins its namespaces by path (/proc/PID/ns/user and .../net).

// sidecarMode is the subprocess mode of the test binary that runs the
// sidecar (TestMain).
const sidecarMode = "pod-sidecar"

func init() { subprocessModes[sidecarMode] = runSidecar }

// podSidecar is a running sidecar and the listeners it made.
type podSidecar struct {
	pid       int
	listeners []net.Listener
}

// startPodSidecar starts a sidecar with n listeners on 127.0.0.1 of its
// network namespace; it ends with the test.
func startPodSidecar(t *testing.T, n int) *podSidecar {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	ours := os.NewFile(uintptr(fds[0]), "sidecar")
	theirs := os.NewFile(uintptr(fds[1]), "sidecar")
	defer theirs.Close()
	t.Cleanup(func() { ours.Close() })

	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), subprocessVar+"="+sidecarMode, "BOXSH_SIDECAR_LISTENERS="+strconv.Itoa(n))
	cmd.ExtraFiles = []*os.File{theirs}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	require.NoError(t, cmd.Start(), "start the pod sidecar")
	t.Cleanup(func() {
		stdin.Close() // the sidecar ends at EOF
		_ = cmd.Wait()
	})
	theirs.Close()

	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*n))
	nb, noob, _, _, err := unix.Recvmsg(int(ours.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	require.NoError(t, err, "the sidecar's sockets")
	if string(buf[:nb]) != "ok" {
		_ = cmd.Wait()
		t.Fatalf("the pod sidecar failed: %s", stderr.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:noob])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	got, err := unix.ParseUnixRights(&msgs[0])
	require.NoError(t, err)
	require.Len(t, got, n)
	s := &podSidecar{pid: cmd.Process.Pid}
	for _, fd := range got {
		f := os.NewFile(uintptr(fd), "listener")
		l, err := net.FileListener(f)
		f.Close()
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		s.listeners = append(s.listeners, l)
	}
	return s
}

// nsPath is the path of the sidecar's namespace of kind ("user", "net").
func (s *podSidecar) nsPath(kind string) string {
	return fmt.Sprintf("/proc/%d/ns/%s", s.pid, kind)
}

// runSidecar is the sidecar's side: it brings the loopback up, listens,
// sends the sockets over descriptor 3 and waits for stdin to close.
func runSidecar() int {
	conn := 3
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "sidecar: %v\n", err)
		_, _ = unix.Write(conn, []byte("failed"))
		return 1
	}
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	n, err := strconv.Atoi(os.Getenv("BOXSH_SIDECAR_LISTENERS"))
	if err != nil {
		return fail(err)
	}
	var fds []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			return fail(err)
		}
		fds = append(fds, int(f.Fd()))
	}
	if err := unix.Sendmsg(conn, []byte("ok"), unix.UnixRights(fds...), nil, 0); err != nil {
		return fail(err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// loopbackUp sets the flag IFF_UP of lo, as `ip link set lo up`.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
