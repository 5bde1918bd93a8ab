package background

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/drain"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
)

// process is one background command.
type process struct {
	id      string
	seq     uint64
	command string
	started time.Time
	pid     int           // set before the process is shared
	done    chan struct{} // closed once it has exited and its output is in

	mu       sync.Mutex
	out      *ring
	changed  chan struct{} // closed, and replaced, on new output and on exit
	exited   bool
	exitCode int
	sig      string
}

// read copies r, one of p's streams, into its buffer until r ends.
func (p *process) read(r *os.File, stream byte) {
	buf := make([]byte, 32<<10)
	d := drain.Reader(r)
	for {
		n, err := d.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.out.write(stream, buf[:n])
			p.notifyLocked()
			p.mu.Unlock()
		}
		if err != nil {
			// io.EOF, or where a read would wait once the deadline set at
			// the process's exit has passed.
			return
		}
	}
}

// exit records p's end.
func (p *process) exit(ws syscall.WaitStatus, waited bool) {
	p.mu.Lock()
	p.exited = true
	p.exitCode = -1
	if waited {
		p.exitCode = proc.WaitStatus(ws)
		if ws.Signaled() {
			p.sig = strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
		}
	}
	p.notifyLocked()
	p.mu.Unlock()
	close(p.done)
}

func (p *process) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *process) hasExited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// signal sends sig to p's process group, unless p has exited (its pid,
// and so its group's id, may have been reused since).
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		// Processes it left in its group: the group id stays theirs
		// while any of them lives.
		if syscall.Kill(-p.pid, 0) != nil {
			return nil
		}
	}
	return syscall.Kill(-p.pid, sig)
}

// stateLocked is p's state; p.mu must be held.
func (p *process) stateLocked() tool.ProcessState {
	if !p.exited {
		return tool.ProcessState{State: tool.ProcessRunning}
	}
	code := p.exitCode
	return tool.ProcessState{State: tool.ProcessExited, ExitCode: &code, Signal: p.sig}
}

func (p *process) info() tool.ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return tool.ProcessInfo{ID: p.id, PID: p.pid, Command: p.command,
		Started: p.started.UTC().Format(time.RFC3339Nano), OutputBytes: p.out.end, Dropped: p.out.start,
		ProcessState: p.stateLocked()}
}

// Streams of a chunk.
const (
	streamStdout byte = iota
	streamStderr
)

// chunk is output of one stream.
type chunk struct {
	stream byte
	data   []byte
}

// ring keeps the last max bytes of a process's output, both streams in
// the order written. Positions count every byte written.
type ring struct {
	max        int
	chunks     []chunk
	start, end int64 // positions of the first byte kept and after the last
}

func newRing(max int) *ring { return &ring{max: max} }

func (r *ring) write(stream byte, b []byte) {
	r.end += int64(len(b))
	if n := len(r.chunks); n > 0 && r.chunks[n-1].stream == stream && len(r.chunks[n-1].data) < 64<<10 {
		r.chunks[n-1].data = append(r.chunks[n-1].data, b...)
	} else {
		r.chunks = append(r.chunks, chunk{stream, append([]byte(nil), b...)})
	}
	for r.end-r.start > int64(r.max) {
		over := r.end - r.start - int64(r.max)
		c := &r.chunks[0]
		if int64(len(c.data)) <= over {
			r.start += int64(len(c.data))
			r.chunks[0] = chunk{}
			r.chunks = r.chunks[1:]
			continue
		}
		c.data = c.data[over:]
		r.start += over
	}
}

// since returns the output kept from position off on, by stream, the
// position after it, and how many bytes from off on were dropped.
func (r *ring) since(off int64) (stdout, stderr string, next, dropped int64) {
	if off >= r.end {
		return "", "", max(off, r.end), 0
	}
	if off < r.start {
		dropped = r.start - off
		off = r.start
	}
	var out, errs strings.Builder
	pos := r.start
	for _, c := range r.chunks {
		n := int64(len(c.data))
		if pos+n > off {
			from := max(off-pos, 0)
			if c.stream == streamStdout {
				out.Write(c.data[from:])
			} else {
				errs.Write(c.data[from:])
			}
		}
		pos += n
	}
	return out.String(), errs.String(), r.end, dropped
}
