package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Buffer sizes for the server's stdout. One answer carrying 8 MB of stdout is
// about 17 MB of JSON (the text is there twice), so lines may be long.
const (
	initialLineBuffer = 1 << 20
	maxLineBytes      = 256 << 20
)

// server is one running `boxsh --rpc` process and its stdio pipes.
type server struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	stdout *os.File // read end of the stdout pipe; closed once it exited
	lines  *lineReader
	stderr *os.File // an unlinked temporary file holding its stderr
	nextID int

	// timeout bounds every wait for an answer; the watchdog kills the
	// process group when it passes, which unblocks the pending read.
	timeout  time.Duration
	watchdog *time.Timer
	timedOut atomic.Bool

	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // cmd.Wait's result, valid after exited closed

	// arrived is when readLine last got a complete line; timings end here
	// so that decoding the answer is not counted.
	arrived time.Time
	// info is the initialize result's serverInfo, "name version".
	info string
	// strays collects messages that answered nothing we asked.
	strays []string
}

// startServer spawns `bin --rpc --workers N` in its own process group. It
// does not talk to it yet.
//
// Stdout and stderr are plain files for the child: a pipe and a temporary
// file. So cmd.Wait returns as soon as the server process itself exits,
// whatever its descendants still hold open. And it never closes the pipe
// while answers are unread.
func startServer(bin string, args []string, timeout time.Duration) (*server, error) {
	stderr, err := os.CreateTemp("", "boxsh-bench-stderr-")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(stderr.Name()) // kept open, gone when closed
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		stderr.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = stdoutW, stderr
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	stdoutW.Close() // the child has its copy
	if err != nil {
		stdout.Close()
		stderr.Close()
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr, timeout: timeout, nextID: 1}
	s.w = bufio.NewWriterSize(stdin, 64<<10)
	s.lines = newLineReader(stdout)
	s.watchdog = time.AfterFunc(time.Hour, s.expire)
	s.watchdog.Stop()
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// expire is the watchdog's action: give up on the process group.
func (s *server) expire() {
	s.timedOut.Store(true)
	s.killGroup()
}

// killGroup sends SIGKILL to the server's whole process group.
func (s *server) killGroup() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// id hands out the next request id.
func (s *server) id() int {
	id := s.nextID
	s.nextID++
	return id
}

// send writes raw, newline-terminated requests and flushes them.
func (s *server) send(raw []byte) error {
	if _, err := s.w.Write(raw); err != nil {
		return s.explain(err)
	}
	return s.explain(s.w.Flush())
}

// readLine returns the next line the server wrote. The slice is only valid
// until the next call. It fails once the timeout passes without a line.
func (s *server) readLine() ([]byte, error) {
	s.watchdog.Reset(s.timeout)
	line, err := s.lines.next()
	s.arrived = time.Now()
	s.watchdog.Stop()
	if err == nil {
		return line, nil
	}
	if s.timedOut.Load() {
		err = fmt.Errorf("no answer within %v", s.timeout)
	}
	return nil, s.explain(err)
}

// next returns the next message that is not a notification, and its id
// when it has a numeric one. The line is valid until the next read.
func (s *server) next() (line []byte, id int, hasID bool, err error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, 0, false, err
		}
		if id, ok := answerID(line); ok {
			return line, id, true, nil
		}
		if !isNotification(line) {
			return line, 0, false, nil
		}
	}
}

// await reads until the answer to id arrives and returns its raw line (valid
// until the next read). Answers to other ids are noted as strays.
func (s *server) await(id int) ([]byte, error) {
	for {
		line, got, hasID, err := s.next()
		if err != nil {
			return nil, err
		}
		if hasID && got == id {
			return line, nil
		}
		s.stray(line)
	}
}

// stray records a message that was not the awaited answer.
func (s *server) stray(line []byte) {
	s.strays = append(s.strays, "unexpected message: "+clip(string(line), 200))
}

// initialize performs the MCP handshake: initialize, then the initialized
// notification. It records serverInfo.
func (s *server) initialize() error {
	if err := s.send(initRequests(0)); err != nil {
		return err
	}
	line, err := s.await(0)
	if err != nil {
		return err
	}
	return s.noteInfo(line)
}

// noteInfo stores the serverInfo of an initialize answer.
func (s *server) noteInfo(line []byte) error {
	var a struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
		Error *rpcError `json:"error"`
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("initialize answer: %v", err)
	}
	if a.Error != nil {
		return fmt.Errorf("initialize failed: %v", a.Error)
	}
	s.info = strings.TrimSpace(a.Result.ServerInfo.Name + " " + a.Result.ServerInfo.Version)
	return nil
}

// call sends one tools/call and waits for its answer, returning the raw
// answer line (valid until the next read).
func (s *server) call(tool string, args any) ([]byte, error) {
	id := s.id()
	if err := s.send(toolCall(id, tool, args)); err != nil {
		return nil, err
	}
	return s.await(id)
}

// shutdown closes stdin and waits up to limit for the process to exit. It
// returns how long the exit took. A non-zero exit status, a missed deadline
// (the group is then killed) or processes of the server's tree or group left
// alive are errors.
func (s *server) shutdown(limit time.Duration) (time.Duration, error) {
	tree, _ := processTree(s.pid()) // before exiting reparents the tree
	start := time.Now()
	_ = s.w.Flush()
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(limit):
		s.killGroup()
		<-s.exited
		s.release()
		return time.Since(start), fmt.Errorf("did not exit within %v of stdin closing", limit)
	}
	took := time.Since(start)
	defer s.release()
	var exitErr *exec.ExitError
	if errors.As(s.waitErr, &exitErr) {
		return took, fmt.Errorf("exit after stdin closed: %v%s", exitErr, s.stderrNote())
	}
	if left := s.leftovers(tree, time.Second); len(left) > 0 {
		s.killGroup()
		return took, fmt.Errorf("%d of its processes still alive 1s after it exited: %s", len(left), describe(left))
	}
	return took, nil
}

// leftovers waits up to grace for the processes of tree and of the server's
// process group to end, and returns those still alive (zombies have ended).
func (s *server) leftovers(tree []int, grace time.Duration) []procStat {
	deadline := time.Now().Add(grace)
	for {
		left, err := liveProcs(tree, s.pid())
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// describe lists processes as "pid (command)".
func describe(procs []procStat) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%d (%s)", p.PID, p.Comm)
	}
	return strings.Join(parts, ", ")
}

// abort kills the process group and reaps the server; for error paths.
func (s *server) abort() {
	s.killGroup()
	<-s.exited
	s.release()
}

// release closes the bench's ends of stdout and stderr once the server has
// exited.
func (s *server) release() {
	s.watchdog.Stop()
	s.stdout.Close()
	s.stderr.Close()
}

// explain adds the server's state to an I/O error. A broken pipe or EOF
// usually means the server is exiting. So if it exits within a second,
// explain adds its exit status and the tail of its stderr.
func (s *server) explain(err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-s.exited:
		return fmt.Errorf("%v (server exited: %v)%s", err, orOK(s.waitErr), s.stderrNote())
	case <-time.After(time.Second):
		return err
	}
}

// orOK describes a Wait result, nil meaning a zero exit status.
func orOK(err error) any {
	if err == nil {
		return "exit status 0"
	}
	return err
}

// stderrNote is the end of the server's stderr, or "" when it wrote none.
func (s *server) stderrNote() string {
	const tail = 500
	size, err := s.stderr.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	buf := make([]byte, tail)
	n, _ := s.stderr.ReadAt(buf, max(0, size-tail))
	t := strings.ReplaceAll(strings.TrimSpace(string(buf[:n])), "\n", " | ")
	if t == "" {
		return ""
	}
	if size > tail {
		t = "…" + t
	}
	return "; stderr: " + t
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// lineReader splits a stream into lines, looking at each byte once. A long
// answer arrives in many reads. Rescanning what was buffered at each read,
// as bufio.Scanner does, would make the bench's own cost grow with the
// square of the answer's size, and be counted against the server.
type lineReader struct {
	r    *bufio.Reader
	line []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, initialLineBuffer), line: make([]byte, 0, initialLineBuffer)}
}

// next returns the next line without its end (\n or \r\n), valid until
// the following call. A last line without a newline is returned too; then
// io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.line = lr.line[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(lr.line)+len(chunk) > maxLineBytes {
			return nil, fmt.Errorf("answer line longer than %d bytes", maxLineBytes)
		}
		lr.line = append(lr.line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(lr.line, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(lr.line) > 0:
			return lr.line, nil
		default:
			return nil, err
		}
	}
}
