package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

// runSandboxedShell runs the shell, or the command after --, in a new
// sandbox with boxsh-init as its PID 1. Stdio is passed through. When
// stdin and stdout are a terminal, the sandbox gets a terminal of its own
// that boxsh relays. It returns the shell's exit status (128+N after a
// death by signal N).
func runSandboxedShell(opts options, log hclog.Logger) int {
	// The sandbox's launcher starts at once: its exec and Go start overlap
	// with the preparation of the sandbox below.
	launcherPath, err := host.FindLauncher("")
	if err != nil {
		return fail(err)
	}
	launcher := host.StartLauncher(launcherPath, log)
	defer launcher.Close()
	sb := opts.sandbox
	sb.Enabled = true
	sb, cwd, home, run, err := prepareSandboxHere(sb)
	if err != nil {
		return fail(err)
	}
	defer run.Done()
	record, err := openShellAudit(opts, sb, log)
	if err != nil {
		return fail(err)
	}
	defer record.close()
	initPath, err := runtime.FindInit()
	if err != nil {
		return fail(err)
	}

	tty := term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	argv, env := sandboxedCommand(opts, tty)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH)
	defer signal.Stop(sigs)

	// The sandbox ends when this process does, however it ends: boxsh-init
	// watches a pipe whose write end only this process holds.
	lifeline, keep, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	defer keep.Close()
	files := map[string]*os.File{plan.LifelineDescriptor: lifeline}
	if len(opts.publish) > 0 {
		ports, fwd, err := publishShell(opts, log)
		if err != nil {
			lifeline.Close()
			return fail(err)
		}
		defer ports.Close()
		files[plan.ForwardDescriptor] = fwd
	}
	record.started()
	ct, err := host.StartContainer(ctx, host.ContainerConfig{
		Mode:     plan.ModeExec,
		Sandbox:  sb,
		Policy:   opts.policy,
		Command:  argv,
		Files:    files,
		Env:      env,
		Cwd:      cwd,
		Home:     home,
		InitPath: initPath,
		Terminal: tty,

		LauncherPath: launcherPath,
		Launcher:     launcher,
		Stdin:        os.Stdin,
		Stdout:       os.Stdout,
		Stderr:       os.Stderr,
		Version:      version,
		Log:          log,
		Started:      run.Started,
		Proxy:        record.proxy(),
	})
	for _, f := range files {
		f.Close() // the sandbox's now
	}
	if err != nil {
		return fail(err)
	}
	defer starttrace.Mark("front.destroyed")
	// Once the command's status is known, the launcher finishes the
	// destroy on its own while this process exits; --try's review reads
	// the sandbox's changes after its destroy, which it waits for.
	destroy := ct.Destroy
	defer func() { destroy() }()

	var relayed chan struct{}
	if tty {
		restore, done, err := relayTerminal(ct.Console())
		if err != nil {
			log.Warn("terminal", "error", err)
		}
		defer restore()
		relayed = done
	}
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				if tty {
					_ = pty.InheritSize(os.Stdin, ct.Console())
				}
				continue
			}
			_ = ct.Signal(sig)
		case <-ct.Exited():
			code, err := ct.Wait()
			starttrace.Mark("front.reaped")
			if !sb.Try {
				destroy = ct.DestroyExited
			}
			record.ended(argv, code)
			if err != nil {
				// The launcher ended without the command's status.
				fmt.Fprintln(os.Stderr, "boxsh:", err)
			}
			if relayed != nil {
				// The rest of the output, until the terminal closes.
				select {
				case <-relayed:
				case <-time.After(time.Second):
				}
			}
			return code
		}
	}
}

// relayTerminal puts boxsh's terminal in raw mode, gives the sandbox's
// terminal (console, its master side) the same size, and copies between
// them. restore puts the terminal back; done is closed when the sandbox's
// terminal has closed.
func relayTerminal(console *os.File) (restore func(), done chan struct{}, err error) {
	done = make(chan struct{})
	_ = pty.InheritSize(os.Stdin, console)
	state, err := term.MakeRaw(int(os.Stdin.Fd()))
	restore = func() {
		if state != nil {
			_ = term.Restore(int(os.Stdin.Fd()), state)
		}
	}
	go func() { _, _ = io.Copy(console, os.Stdin) }()
	go func() {
		_, _ = io.Copy(os.Stdout, console)
		close(done)
	}()
	return restore, done, err
}

// publishShell listens for the --publish ports of shell mode before the
// sandbox starts, so that a port the host cannot give fails at once. It
// returns the ports and the forwarding socket's end to hand boxsh-init.
// The caller closes that end once the sandbox has it.
func publishShell(opts options, log hclog.Logger) (*runtime.Ports, *os.File, error) {
	front, back, err := host.SocketPair()
	if err != nil {
		return nil, nil, err
	}
	ports, err := runtime.NewPorts(front, log)
	if err != nil {
		back.Close()
		return nil, nil, err
	}
	if err := publishAll(opts.publish, ports.Expose, sharesHostNetwork(opts), os.Stderr); err != nil {
		ports.Close()
		back.Close()
		return nil, nil, err
	}
	return ports, back, nil
}
