//go:build unix

package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandleStopSignals checks that once the set-up is done, the first
// stop signal reaches stop.
func TestHandleStopSignals(t *testing.T) {
	defer signal.Reset(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	got := make(chan os.Signal, 2)
	<-HandleStopSignals(func(sig os.Signal) { got <- sig })
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	select {
	case sig := <-got:
		assert.Equal(t, syscall.SIGHUP, sig)
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reach stop")
	}
}

// TestHandleStopSignalsButHUP checks that SIGHUP goes to hup, and stops
// nothing, while SIGINT reaches stop.
func TestHandleStopSignalsButHUP(t *testing.T) {
	defer signal.Reset(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	got := make(chan os.Signal, 2)
	hup := make(chan os.Signal, 2)
	<-HandleStopSignalsButHUP(func(sig os.Signal) { got <- sig }, hup)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	select {
	case sig := <-hup:
		assert.Equal(t, syscall.SIGHUP, sig)
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reach hup")
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case sig := <-got:
		assert.Equal(t, syscall.SIGINT, sig, "SIGHUP stopped")
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not reach stop")
	}
}

// TestHandleStopSignalsSIGPIPE checks that a process that set up its
// signals gets EPIPE when it writes to a stdout nobody reads, rather than
// being killed by SIGPIPE (run in a child process: the test binary again).
func TestHandleStopSignalsSIGPIPE(t *testing.T) {
	if os.Getenv("PROC_TEST_SIGPIPE") == "1" {
		<-HandleStopSignals(func(os.Signal) {})
		_, err := os.Stdout.Write([]byte("x"))
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(0)
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandleStopSignalsSIGPIPE$")
	cmd.Env = append(os.Environ(), "PROC_TEST_SIGPIPE=1")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	_ = w.Close()
	require.NoError(t, err, "the child was killed: %s", stderr.String())
	assert.Contains(t, stderr.String(), "write: write /dev/stdout: broken pipe")
}
