// Package toolhost is the core of boxsh-init, the process that runs the
// tools inside the sandbox.
//
// It reads calls from the front as frames, runs each tool, and answers with
// frames. Bash calls take a slot of the worker pool. File and terminal
// tools run beside the pool and never block the frame loop.
package toolhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/background"
	"github.com/boxsh/boxsh/internal/toolhost/bash"
	"github.com/boxsh/boxsh/internal/toolhost/files"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
	"github.com/boxsh/boxsh/internal/toolhost/terminal"
)

// Config configures a Host.
type Config struct {
	// Build is boxsh-init's version string, which the front's must match
	// (see initproto.Hello).
	Build string
	// Shell runs bash calls and terminals (default /bin/sh).
	Shell string
	// Workers bounds the bash calls that run at once (default 4).
	Workers int
	// MaxOtherCalls bounds the file and terminal calls that run (or wait
	// for their reply to be taken) at once (default
	// initproto.OtherSlots); more wait for a slot.
	MaxOtherCalls int
	// Env is the environment of commands (default os.Environ()).
	Env []string
	// TimeoutDefault is the timeout, in seconds, of bash calls that give
	// none (0: none).
	TimeoutDefault float64
	// MaxOutput caps each output stream of a bash call (default
	// bash.MaxStream).
	MaxOutput int
	// Limits are applied to each command (bash calls, terminals) by
	// running its shell through LimitsExe, boxsh-init itself (see
	// proc.Limits.Wrap).
	Limits    proc.Limits
	LimitsExe string
	// ForkServer is the fork-server library that bash calls' shells are
	// cloned from (see bash.Options.ForkServer; "": started by exec).
	ForkServer string
	// Rules are the paths the sandbox's policy covers, for the file
	// tools' messages.
	Rules []initproto.PolicyRule
	// Log receives diagnostics.
	Log hclog.Logger
	// Reaper, when boxsh-init is PID 1, starts every child process, so
	// that it can reap the orphans without taking their exit status.
	Reaper *reap.Reaper
	// Activity, if not nil, is told when each call begins and ends.
	// boxsh-init gives its memory trimmer, an idle.Trimmer.
	Activity Activity
	// Setup, when set, is given what the front's hello carries besides
	// the hello itself: the forwarding socket. Serve calls it once it has
	// found the hello to be its own, before it reads a call.
	Setup func(initproto.Setup)
}

// Activity is told when calls begin and end, on any goroutine. A call's
// End follows its Begin.
type Activity interface {
	Begin()
	End()
}

// noActivity is the Activity of a Host whose Config gives none.
type noActivity struct{}

func (noActivity) Begin() {}
func (noActivity) End()   {}

// Host runs tools for the front.
type Host struct {
	cfg   Config
	pool  *bash.Pool
	terms *terminal.Manager
	procs *background.Manager
	log   hclog.Logger
	other chan struct{}
	// readQuick is files.ReadQuick (tests stand in a slow one).
	readQuick func(context.Context, tool.ReadArgs) (tool.Result, bool)
}

// New starts the worker pool.
func New(cfg Config) (*Host, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.MaxOtherCalls <= 0 {
		cfg.MaxOtherCalls = initproto.OtherSlots
	}
	if cfg.Activity == nil {
		cfg.Activity = noActivity{}
	}
	pool, err := bash.NewPool(bash.Options{Shell: cfg.Shell, Workers: cfg.Workers, Env: cfg.Env, MaxStream: cfg.MaxOutput, Limits: cfg.Limits, LimitsExe: cfg.LimitsExe, Log: cfg.Log.Named("bash"), Reaper: cfg.Reaper, ForkServer: cfg.ForkServer})
	if err != nil {
		return nil, fmt.Errorf("start worker pool: %w", err)
	}
	terms := terminal.NewManager(terminal.Options{Shell: cfg.Shell, Env: cfg.Env, Log: cfg.Log.Named("terminal"), Reaper: cfg.Reaper, Limits: cfg.Limits, LimitsExe: cfg.LimitsExe})
	procs := background.NewManager(background.Options{Shell: cfg.Shell, Env: cfg.Env, Log: cfg.Log.Named("background"), Reaper: cfg.Reaper, Limits: cfg.Limits, LimitsExe: cfg.LimitsExe})
	return &Host{cfg: cfg, pool: pool, terms: terms, procs: procs, log: cfg.Log, other: make(chan struct{}, cfg.MaxOtherCalls), readQuick: files.ReadQuick}, nil
}

// Close kills every running command, background process and terminal
// session, and waits for them to end.
func (a *Host) Close() {
	a.pool.Close()
	a.terms.Close()
	a.procs.Close(StopWait)
}

// StopWait bounds how long Serve waits, once the channel has ended, for the
// commands it killed to be reaped.
const StopWait = 500 * time.Millisecond

// Serve answers the calls read from conn until conn ends or fails.
//
// Serve first sends boxsh-init's hello, then checks the front's, the first
// frame it reads. A front of another build gets an error, as the reply to
// its call when it sent one first, and Serve returns that error. A front's
// hello that checks is given to Config.Setup.
//
// When conn ends, Serve stops everything (see Stop) and returns without
// waiting for the calls still running. The front closes the channel only
// when it expects no more answers: it has had those it waits for, or it is
// dead. So a call still running has no one to answer, and a call waiting
// for a worker must never start. The caller exits next, which ends calls
// blocked in the kernel (a FIFO's open, say) that no kill reaches.
//
// The goroutine that reads a call runs it, after handing the reader on to
// a new goroutine. So a call goes from the channel to its tool, and its
// reply back, without a hand-over between goroutines. A call certain to be
// quick (the read of a small file) is run without handing the reader on:
// the next frame is read once it is answered.
func (a *Host) Serve(ctx context.Context, conn io.ReadWriter) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	s := &serving{a: a, w: initproto.NewWriter(conn),
		running: make(map[uint64]context.CancelFunc), ended: make(chan error, 1)}
	rd := &reader{initproto.NewReader(conn)}
	if err := s.hello(rd); err != nil {
		a.Stop(StopWait)
		return err
	}
	s.watch = newQuickWatch(func(rd *reader) { go s.read(ctx, rd) })
	defer s.watch.stop()
	go s.read(ctx, rd)
	err := <-s.ended
	// The pool is closed before the calls are cancelled: a cancelled call
	// hands its worker on, and only a closed pool keeps it from the next
	// call in line.
	a.Stop(StopWait)
	return err
}

// Stop kills every command, the queued calls' included (none starts
// after Stop), and every terminal session at once, and waits up to wait
// for them to be reaped. What the host's calls do besides commands is not
// waited for. Every process descended from this one is killed too, those
// that left their command's process group included.
func (a *Host) Stop(wait time.Duration) {
	frozen := freezeDescendants()
	defer killAll(frozen)
	var wg sync.WaitGroup
	// Concurrently: each kills at once, then waits for what it killed.
	wg.Go(a.pool.Close)
	wg.Go(a.terms.Close)
	wg.Go(func() { a.procs.Close(wait) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		a.log.Debug("commands not reaped in time; exiting anyway", "wait", wait)
	}
}

// reader reads the front's frames. Exactly one goroutine holds it: the one
// that reads. That is first Serve's goroutine, then each read's. A reading
// goroutine hands the reader on when it has read a call to run, as an
// argument of the goroutine it starts. It lends the reader to the quick
// watch while it runs a quick read (see quickWatch).
type reader struct{ fr *initproto.Reader }

// serving is the state of one Serve.
type serving struct {
	a     *Host
	w     *initproto.Writer
	ended chan error // receives how reading ended

	mu      sync.Mutex
	running map[uint64]context.CancelFunc
	// watch hands the reader on when a quick read hangs.
	watch *quickWatch
}

// hello sends boxsh-init's hello and checks the front's, read with rd.
func (s *serving) hello(rd *reader) error {
	local := initproto.NewHello(s.a.cfg.Build)
	if err := s.w.Write(initproto.EncodeHello(local)); err != nil {
		return fmt.Errorf("send hello: %w", err)
	}
	payload, err := rd.fr.Read()
	if err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	if _, err := initproto.CheckHello(payload, local, "the boxsh that started this boxsh-init", "this boxsh-init"); err != nil {
		var c initproto.Call
		if json.Unmarshal(payload, &c) == nil && c.ID != 0 {
			_ = s.w.Write(s.a.errorReply(c.ID, err))
		}
		return err
	}
	if s.a.cfg.Setup != nil {
		setup, err := initproto.DecodeSetup(payload)
		if err != nil {
			return fmt.Errorf("read hello: %w", err)
		}
		s.a.cfg.Setup(setup)
	}
	return nil
}

// read reads frames with rd until one is a call to run, then hands rd on to
// a new goroutine, which reads on, and runs the call.
func (s *serving) read(ctx context.Context, rd *reader) {
	for {
		if rd.fr.Buffered() == 0 {
			// About to wait for the front: the notices of the calls read
			// so far go now, in one write.
			if err := s.w.Flush(); err != nil {
				s.a.log.Debug("write notices failed", "error", err)
			}
		}
		payload, err := rd.fr.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			} else {
				err = fmt.Errorf("read call: %w", err)
			}
			s.ended <- err
			return
		}
		c, err := largecall.DecodeCall(payload)
		if err != nil {
			s.ended <- fmt.Errorf("decode call: %w", err)
			return
		}
		if c.Cancel {
			s.mu.Lock()
			if cancel, ok := s.running[c.ID]; ok {
				cancel()
			}
			s.mu.Unlock()
			continue
		}
		if tool.IsQuick(c.Tool) && c.Progress <= 0 {
			var done bool
			// rd is nil if the quick read took so long that another
			// goroutine has the reader now (see quickOrHandOn).
			done, rd = s.quickOrHandOn(ctx, rd, c)
			if done && rd == nil {
				return
			} else if done {
				continue
			}
		}
		s.a.cfg.Activity.Begin() // Activity.End when run ends
		var ticket *bash.Ticket
		queued := false
		if tool.IsCommand(c.Tool) && !isBackground(c.Args) {
			ticket = s.a.pool.Reserve() // in arrival order
			// A call that waits for a worker says so, and says when it
			// starts, before its command runs: if boxsh-init dies
			// meanwhile, the front knows it may send it to the next one.
			// The queued notice waits for the next frame written, or for
			// the reading to wait (see above): a burst of calls that
			// wait has its notices written at once.
			id := c.ID
			if s.a.pool.OnStart(ticket, func() { s.notify(id, initproto.StateStarted) }) {
				s.w.Defer(initproto.EncodeState(id, initproto.StateQueued))
				queued = true
			}
		}
		callCtx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.running[c.ID] = cancel
		s.mu.Unlock()
		if rd != nil {
			go s.read(ctx, rd)
		}
		if !queued || !s.park(callCtx, cancel, ticket, c) {
			s.run(callCtx, cancel, ticket, c, nil)
		}
		return
	}
}

// quickOrHandOn runs quick under the watch, and tells whether it ran c
// (done). rd, the caller's reader, is lent to the watch meanwhile and
// given back. If the read takes longer than quickHandOn, the watch hands
// rd on to a new goroutine, which reads the frames from then on, and back
// is nil.
func (s *serving) quickOrHandOn(ctx context.Context, rd *reader, c initproto.Call) (done bool, back *reader) {
	l := s.watch.begin(rd)
	done = s.quick(ctx, c)
	return done, s.watch.end(l)
}

// quick runs read call c here, on the reading goroutine, and writes its
// reply, and tells whether it did. It does so only if the read is certain
// to be quick (see files.ReadQuick) and a slot is free. A call run here
// costs no hand-over of the reading to a new goroutine, which for a small
// file costs more than the tool itself (see docs/perf.md).
func (s *serving) quick(ctx context.Context, c initproto.Call) bool {
	args, err := decode[tool.ReadArgs](c.Tool, c.Args)
	if err != nil {
		return false
	}
	select {
	case s.a.other <- struct{}{}:
	default:
		return false // calls wait for a slot: this one waits its turn
	}
	defer func() { <-s.a.other }()
	s.a.cfg.Activity.Begin()
	defer s.a.cfg.Activity.End()
	r, ok := s.a.readQuick(ctx, args)
	if !ok {
		return false
	}
	s.reply(c, s.a.encodeResult(c.ID, c.Tool, s.a.explain(r, args.Path, false)))
	return true
}

// notify writes a notice of call id's state.
func (s *serving) notify(id uint64, state string) {
	if err := s.w.Write(initproto.EncodeState(id, state)); err != nil {
		s.a.log.Debug("write notice failed", "id", id, "error", err)
	}
}

// park leaves bash call c, whose ticket waits in line for a worker, to be
// run once the ticket has its worker, and tells whether it did. The call
// then runs on a goroutine started at that moment. So a call waiting in
// line holds no goroutine, and no stack, of its own: a burst of queued
// calls would otherwise leave boxsh-init with their stacks for good.
//
// If ctx is cancelled first, the call is answered as run would, its ticket
// given up, on a goroutine started then. park leaves out:
//   - calls that run checks before they wait (a directory to check, argv,
//     arguments that do not decode);
//   - calls with progress, whose notices go out while they wait.
func (s *serving) park(ctx context.Context, cancel context.CancelFunc, ticket *bash.Ticket, c initproto.Call) bool {
	if c.Progress > 0 {
		return false
	}
	args, err := decode[tool.BashArgs](c.Tool, c.Args)
	if err != nil || args.Cwd != "" || args.Args != nil {
		return false
	}
	c.Args = nil // decoded: the frame's bytes are not kept while it waits
	var claimed atomic.Bool
	finish := func() { s.run(ctx, cancel, ticket, c, &args) }
	stop := context.AfterFunc(ctx, func() {
		if claimed.CompareAndSwap(false, true) {
			finish()
		}
	})
	granted := func() {
		if claimed.CompareAndSwap(false, true) {
			stop()
			finish()
		}
	}
	if !s.a.pool.OnGranted(ticket, func() { go granted() }) {
		granted() // granted meanwhile: run it here
	}
	return true
}

// run runs one call and writes its reply; bashArgs, if not nil, are the
// arguments of a bash call, already decoded.
func (s *serving) run(ctx context.Context, cancel context.CancelFunc, ticket *bash.Ticket, c initproto.Call, bashArgs *tool.BashArgs) {
	defer func() {
		s.mu.Lock()
		delete(s.running, c.ID)
		s.mu.Unlock()
		cancel()
		s.a.cfg.Activity.End()
	}()
	ctx, stopProgress := s.startProgress(ctx, c.ID, c.Progress)
	var reply []byte
	var release func()
	if bashArgs != nil {
		reply, release = s.a.bashReply(ctx, ticket, c.ID, *bashArgs)
	} else {
		reply, release = s.a.call(ctx, ticket, c.ID, c.Tool, c.Args, s.notify)
	}
	stopProgress()
	// The call's worker or slot is held until its reply is written: a
	// client that stops reading stops the tools too, instead of their
	// results piling up in memory.
	defer release()
	s.reply(c, reply)
}

// reply writes the reply frame of call c.
func (s *serving) reply(c initproto.Call, reply []byte) {
	err := s.w.Write(reply)
	if errors.Is(err, initproto.ErrTooLarge) {
		// Never leave a call unanswered.
		b, _ := json.Marshal(tool.Errorf("%s: the result (%d bytes) exceeds the %d-byte limit", c.Tool, len(reply), initproto.MaxSize))
		err = s.w.Write(initproto.EncodeReply(c.ID, b))
	}
	if err != nil {
		s.a.log.Debug("write reply failed", "id", c.ID, "error", err)
	}
}

// call runs one tool and returns the encoded reply frame, and the function
// that frees the worker or slot the call holds. A call other than bash
// that has to wait for a slot says so through notify, and says when it
// gets one, as a bash call waiting for a worker does. If boxsh-init dies
// meanwhile, the front then sends the call to the next one.
func (a *Host) call(ctx context.Context, ticket *bash.Ticket, id uint64, name string, args json.RawMessage, notify func(uint64, string)) ([]byte, func()) {
	if ticket != nil { // a command on the pool (tool.IsCommand)
		bashArgs, err := decode[tool.BashArgs](tool.Bash, args)
		if err == nil && bashArgs.Args != nil {
			err = checkArgv(bashArgs)
		}
		if err != nil {
			a.pool.Abandon(ticket)
			return a.errorReply(id, err), func() {}
		}
		return a.bashReply(ctx, ticket, id, bashArgs)
	}
	select {
	case a.other <- struct{}{}:
	default:
		notify(id, initproto.StateQueued)
		select {
		case a.other <- struct{}{}:
			notify(id, initproto.StateStarted)
		case <-ctx.Done():
			return a.errorReply(id, ctx.Err()), func() {}
		}
	}
	release := func() { <-a.other }
	r, err := a.run(ctx, name, args)
	if err != nil {
		return a.errorReply(id, err), release
	}
	return a.encodeResult(id, name, r), release
}

// encodeResult encodes the reply frame of call id of tool name, whose
// result is r.
func (a *Host) encodeResult(id uint64, name string, r tool.Result) []byte {
	result, err := r.AppendJSON(nil)
	if err != nil {
		result, _ = json.Marshal(tool.Errorf("%s: encode result: %v", name, err))
	}
	return initproto.EncodeReply(id, result)
}

// errorReply encodes a protocol error reply.
func (a *Host) errorReply(id uint64, err error) []byte {
	var fe *initproto.Error
	if !errors.As(err, &fe) {
		fe = &initproto.Error{Code: initproto.CodeInternalError, Message: err.Error()}
	}
	b, _ := json.Marshal(initproto.Reply{ID: id, Error: fe})
	return b
}

// bashReply runs a bash call with decoded, checked arguments and returns
// its reply frame, and the function that frees its worker.
func (a *Host) bashReply(ctx context.Context, ticket *bash.Ticket, id uint64, args tool.BashArgs) ([]byte, func()) {
	result, release, err := a.bash(ctx, ticket, args)
	if err != nil {
		return a.errorReply(id, err), release
	}
	return initproto.EncodeReply(id, result), release
}

// bash runs a bash call and encodes its result directly: outputs can be
// megabytes, and this is the one hot path of large results.
func (a *Host) bash(ctx context.Context, ticket *bash.Ticket, args tool.BashArgs) ([]byte, func(), error) {
	if args.Timeout <= 0 && a.cfg.TimeoutDefault > 0 {
		args.Timeout = a.cfg.TimeoutDefault
	}
	out, release, err := a.pool.RunHold(ctx, ticket, args)
	if err != nil {
		if ctx.Err() != nil {
			return nil, release, err
		}
		b, err := json.Marshal(tool.Errorf("bash: %v", err))
		return b, release, err
	}
	return encodeBash(out, maxBashResult), release, nil
}

// maxBashResult bounds the encoded result of a bash call. Output that is
// mostly escapes (binary data) grows up to six times when encoded, and it
// is encoded twice (text block and structured content). Such output is cut
// further, and marked truncated, until the result fits.
const maxBashResult = initproto.MaxSize - 64<<10

func encodeBash(out tool.BashOutput, limit int) []byte {
	for {
		sc := out.AppendJSON(make([]byte, 0, len(out.Stdout)+len(out.Stderr)+256))
		b := tool.EncodeStructured(sc, out.ExitCode != 0)
		if len(b) <= limit || len(out.Stdout)+len(out.Stderr) == 0 {
			return b
		}
		if len(out.Stdout) >= len(out.Stderr) {
			out.Stdout, out.StdoutTruncated = cutUTF8(out.Stdout, len(out.Stdout)/2), true
		} else {
			out.Stderr, out.StderrTruncated = cutUTF8(out.Stderr, len(out.Stderr)/2), true
		}
	}
}

// cutUTF8 shortens s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// checkArgv refuses, as invalid parameters, a bash call's args that cannot
// be run. That command and args are exclusive is the schema's to check, in
// the front (tool.Spec.Validate), before any call becomes a frame.
func checkArgv(args tool.BashArgs) error {
	if err := bash.CheckArgv(args.Args); err != nil {
		return &initproto.Error{Code: initproto.CodeInvalidParams, Message: "bash tool: " + err.Error()}
	}
	return nil
}

// decode unmarshals a tool's arguments, as an invalid-params error.
func decode[T any](name string, args json.RawMessage) (T, error) {
	var v T
	if err := largecall.UnmarshalArgs(args, &v); err != nil {
		return v, &initproto.Error{Code: initproto.CodeInvalidParams, Message: fmt.Sprintf("%s tool: invalid arguments: %v", name, err)}
	}
	return v, nil
}

// tools are the handlers of the tools boxsh-init runs. Each is
// registered by the file that implements it, or defined with its tool
// (tool.Def.Runs).
var tools = tool.NewMux[*Host, tool.Result](tool.SandboxSet, tool.Init, func(name string, args json.RawMessage, v any) error {
	if err := largecall.UnmarshalArgs(args, v); err != nil {
		return &initproto.Error{Code: initproto.CodeInvalidParams, Message: fmt.Sprintf("%s tool: invalid arguments: %v", name, err)}
	}
	return nil
})

// init registers the handlers defined with their tools.
func init() { tool.HandleDefined(tools) }

// run runs every tool but bash in the foreground, which the pool runs.
func (a *Host) run(ctx context.Context, name string, raw json.RawMessage) (tool.Result, error) {
	h, ok := tools.Lookup(name)
	if !ok {
		return tool.Result{}, &initproto.Error{Code: initproto.CodeInvalidParams, Message: "unknown tool: " + name}
	}
	return h(ctx, a, raw)
}

// snapshot turns a terminal answer into a tool result; session errors are
// tool failures.
func snapshot(s terminal.Snapshot, err error) (tool.Result, error) {
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	return tool.StructuredResult(s), nil
}
